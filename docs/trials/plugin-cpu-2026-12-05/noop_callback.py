"""Proxy CPU per request of three proxies sent the same requests at the same moments: no callback, a no-op
``CustomLogger`` with every hook the plugin implements, and the plugin. Answers whether the plugin's extra proxy CPU
is LiteLLM's cost of dispatching a callback at all, or the plugin's own work.

The throughput benchmark's traffic and emulators (``litellm_kvwarm.lab.bench.throughput``: ShareGPT chat bodies of
~1k and ~4k tokens, below the warm threshold, zero-latency emulators, master key); each round sends ``N`` requests to
every proxy interleaved, 4 at a time per proxy, and reads each proxy's process-tree CPU over that same interval.

    .venv/bin/python docs/trials/plugin-cpu-2026-12-05/noop_callback.py [ROUNDS] [N]    # default 8 120
"""

from __future__ import annotations

import shutil
import statistics
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path

import httpx

from litellm_kvwarm.lab import demo
from litellm_kvwarm.lab.bench.proc_cpu import tree_cpu_s
from litellm_kvwarm.lab.bench.throughput import request_bodies
from litellm_kvwarm.lab.bench.throughput_phases import send
from litellm_kvwarm.lab.processes import BackendSpec, proxy_config, start_emulator, start_proxy

NOOP_MODULE = '''
from litellm.integrations.custom_logger import CustomLogger


class Noop(CustomLogger):
    async def async_pre_call_hook(self, user_api_key_dict, cache, data, call_type):
        return data

    async def async_pre_call_deployment_hook(self, kwargs, call_type):
        return kwargs

    async def async_post_call_failure_hook(self, request_data, original_exception, user_api_key_dict, traceback_str=None):
        return None

    async def async_filter_deployments(self, model, healthy_deployments, messages, request_kwargs=None, parent_otel_span=None):
        return healthy_deployments

    async def async_log_success_event(self, kwargs, response_obj, start_time, end_time):
        return None

    def async_post_call_streaming_iterator_hook(self, user_api_key_dict, response, request_data):
        return response


handler = Noop()
'''
ARMS = {"without": False, "noop": ["noop_cb.handler"], "plugin": True}


def main(rounds: int = 8, n: int = 120) -> None:
    work = Path(tempfile.mkdtemp(prefix="kvwarm-noop-"))
    bodies = request_bodies()
    with ExitStack() as stack:
        stack.callback(shutil.rmtree, work, True)
        emulators = []
        for model, window in ((demo.FAST_MODEL, demo.FAST_WINDOW), (demo.SLOW_MODEL, demo.SLOW_WINDOW)):
            process = start_emulator(model, window, time_scale=0, workdir=work)
            stack.callback(process.stop)
            emulators.append(BackendSpec.of(process, model))
        groups = {demo.FAST_GROUP: [emulators[0]], demo.SLOW_GROUP: [emulators[1]]}
        proxies = {}
        for arm, callbacks in ARMS.items():
            directory = work / f"proxy-{arm}"
            directory.mkdir()
            (directory / "noop_cb.py").write_text(NOOP_MODULE)  # LiteLLM finds a callback module beside its config
            proxies[arm] = start_proxy(proxy_config(groups, callbacks=callbacks, router_settings={"num_retries": 0}),
                                       workdir=directory)
            stack.callback(proxies[arm].stop)
        per_request: dict[str, list[float]] = {arm: [] for arm in ARMS}
        with httpx.Client(timeout=60, trust_env=False, limits=httpx.Limits(max_connections=16)) as client, \
                ThreadPoolExecutor(4 * len(ARMS)) as pool:
            for proxy in proxies.values():  # window discovery, connection pools
                for body in bodies:
                    send(client, proxy, body)
            for round_no in range(rounds):
                before = {arm: tree_cpu_s(p.proc.pid) for arm, p in proxies.items()}
                jobs = [(arm, i) for i in range(n) for arm in ARMS]
                list(pool.map(lambda job: send(client, proxies[job[0]], bodies[job[1] % len(bodies)]), jobs))
                after = {arm: tree_cpu_s(p.proc.pid) for arm, p in proxies.items()}
                for arm in ARMS:
                    per_request[arm].append(1000 * (after[arm] - before[arm]) / n)
                print(f"round {round_no + 1}/{rounds}: " + ", ".join(f"{arm} {per_request[arm][-1]:.2f} CPU ms/req"
                                                                     for arm in ARMS), flush=True)
    base = per_request["without"]
    for arm, values in per_request.items():
        print(f"{arm}: {statistics.mean(values):.2f} CPU ms/request; ÷ without pooled {sum(values) / sum(base):.3f}, "
              f"median of rounds {statistics.median(a / b for a, b in zip(values, base)):.3f}")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))

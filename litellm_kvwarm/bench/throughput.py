"""End-to-end proxy latency and throughput with the plugin against without it (I/O).

Two ``litellm --config`` proxies, identical but for the plugin callback, in front of the same two
emulators running at ``--time-scale 0`` (a zero-latency backend: no prefill or decode waits, only
its HTTP and tokenizer work). Rounds alternate the order (plugin first, then without; then the
reverse), each arm sending the same bounded batch at a fixed concurrency, so both see the same
machine state. Requests are ShareGPT prefixes well under the warm threshold (no warms fire),
non-streamed, ``max_tokens`` 16. Reported per arm: client latency, LiteLLM's own
``x-litellm-overhead-duration-ms``, and throughput (requests ÷ batch wall time).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

import httpx

from .. import demo
from ..conversations import longest_sharegpt
from ..processes import Deployment, ManagedProcess, proxy_config, start_emulator, start_proxy
from ..tokens import estimate_request
from .stats import distribution, percentile, ratio

__all__ = ["ThroughputOptions", "request_bodies", "round_ratios", "run_throughput", "summarize"]

PLUGIN, WITHOUT = "plugin", "without"
PROMPT_SIZES = (1_000, 4_000)  # routing-estimate tokens; < 60% of a 16k window
MAX_TOKENS = 16
OVERHEAD_HEADER = "x-litellm-overhead-duration-ms"


@dataclass(frozen=True)
class ThroughputOptions:
    rounds: int = 6
    requests_per_round: int = 40
    concurrency: int = 4
    warmup: int = 8


def request_bodies() -> list[dict[str, Any]]:
    """Chat bodies of each ShareGPT conversation cut at the first request past each prompt size."""
    bodies = []
    for conversation in longest_sharegpt(4):
        for size in PROMPT_SIZES:
            for point in conversation.requests():
                body = {"model": demo.FAST_GROUP, "messages": point.messages, "max_tokens": MAX_TOKENS}
                if estimate_request(body, call_kind="chat").routing >= size:
                    bodies.append(body)
                    break
    return bodies


def _send(client: httpx.Client, proxy: ManagedProcess, body: dict[str, Any]) -> tuple[int, float, float | None]:
    began = time.perf_counter()
    response = client.post(proxy.base_url + "/v1/chat/completions", json=body,
                           headers={"Authorization": f"Bearer {proxy.master_key}"})
    elapsed = time.perf_counter() - began
    overhead = response.headers.get(OVERHEAD_HEADER)
    return response.status_code, elapsed, float(overhead) if overhead else None


def _batch(pool: ThreadPoolExecutor, client: httpx.Client, proxy: ManagedProcess,
           bodies: list[dict[str, Any]], n: int) -> dict[str, Any]:
    began = time.perf_counter()
    results = list(pool.map(lambda i: _send(client, proxy, bodies[i % len(bodies)]), range(n)))
    wall = time.perf_counter() - began
    return {"wall_s": wall, "status": [r[0] for r in results], "latency_s": [r[1] for r in results],
            "overhead_ms": [r[2] for r in results]}


def round_ratios(arms: dict[str, Any]) -> list[float]:
    """Plugin ÷ without throughput of each round (the two batches of a round ran back to back)."""
    plugin = arms.get(PLUGIN, {}).get("round_throughput_rps", [])
    without = arms.get(WITHOUT, {}).get("round_throughput_rps", [])
    return [p / w for p, w in zip(plugin, without) if w]


def summarize(batches: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Per arm: latency and overhead distributions, throughput; and plugin ÷ without (pure)."""
    arms = {}
    for arm, runs in batches.items():
        latencies = [v * 1000 for b in runs for v in b["latency_s"]]
        requests = sum(len(b["status"]) for b in runs)
        wall = sum(b["wall_s"] for b in runs)
        arms[arm] = {
            "requests": requests,
            "errors": sum(1 for b in runs for s in b["status"] if s != 200),
            "latency_ms": distribution(latencies).as_dict(),
            "overhead_ms": distribution([v for b in runs for v in b["overhead_ms"]]).as_dict(),
            "throughput_rps": requests / wall if wall else None,
            "round_throughput_rps": [len(b["status"]) / b["wall_s"] for b in runs],
        }
    plugin, without = arms.get(PLUGIN, {}), arms.get(WITHOUT, {})
    per_round = round_ratios(arms)
    return {
        "arms": arms,
        "throughput_ratio": ratio(plugin.get("throughput_rps"), without.get("throughput_rps")),
        "round_ratios": per_round,
        "round_ratio_median": percentile(per_round, 50),
        "latency_p50_delta_ms": (plugin["latency_ms"]["p50"] - without["latency_ms"]["p50"])
        if plugin and without and plugin["latency_ms"]["p50"] is not None and without["latency_ms"]["p50"] is not None
        else None,
    }


def run_throughput(options: ThroughputOptions, workdir: Path, say: Callable[[str], None]) -> dict[str, Any]:
    bodies = request_bodies()
    with ExitStack() as stack:
        emulators = []
        for model, window in ((demo.FAST_MODEL, demo.FAST_WINDOW), (demo.SLOW_MODEL, demo.SLOW_WINDOW)):
            process = start_emulator(model, window, time_scale=0, workdir=workdir)
            stack.callback(process.stop)
            emulators.append(Deployment.of(process, model))
        groups = {demo.FAST_GROUP: [emulators[0]], demo.SLOW_GROUP: [emulators[1]]}
        say("  throughput: starting two proxies (plugin / without) on zero-latency emulators")
        with ThreadPoolExecutor(2) as starter:
            futures = {
                arm: starter.submit(start_proxy, proxy_config(groups, callbacks=plugin, router_settings={"num_retries": 0}),
                                    workdir=workdir / f"proxy-throughput-{arm}")
                for arm, plugin in ((PLUGIN, True), (WITHOUT, False))
            }
            proxies = {}
            for arm, future in futures.items():
                proxies[arm] = future.result()
                stack.callback(proxies[arm].stop)
        batches: dict[str, list[dict[str, Any]]] = {PLUGIN: [], WITHOUT: []}
        limits = httpx.Limits(max_connections=options.concurrency * 2)
        with httpx.Client(timeout=60.0, trust_env=False, limits=limits) as client, \
                ThreadPoolExecutor(options.concurrency) as pool:
            for proxy in proxies.values():
                _batch(pool, client, proxy, bodies, options.warmup)  # window discovery, connection pools
            for round_no in range(options.rounds):
                order = (PLUGIN, WITHOUT) if round_no % 2 == 0 else (WITHOUT, PLUGIN)
                for arm in order:
                    batches[arm].append(_batch(pool, client, proxies[arm], bodies, options.requests_per_round))
                last = {arm: batches[arm][-1] for arm in order}
                say(f"  throughput round {round_no + 1}/{options.rounds}: " + ", ".join(
                    f"{arm} {len(b['status']) / b['wall_s']:.1f} req/s" for arm, b in last.items()))
    result = summarize(batches)
    result["options"] = dict(asdict(options), prompt_sizes=list(PROMPT_SIZES), max_tokens=MAX_TOKENS,
                             bodies=len(bodies))
    return result

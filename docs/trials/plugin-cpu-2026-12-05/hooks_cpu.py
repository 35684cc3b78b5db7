"""CPU per request of the plugin's three request-path hooks, in process (no proxy, no network).

Drives ``KVWarmHandler`` the way LiteLLM's proxy calls it for the throughput benchmark's traffic
(``litellm_kvwarm.lab.bench.throughput.request_bodies``: ShareGPT chat bodies of ~1k and ~4k tokens,
below the warm threshold), on a real LiteLLM ``Router`` (groups fast → slow, the demo's windows
answered by a mocked ``/v1/models``) and LiteLLM's real access check with a proxy-admin key:

  pre-call (``async_pre_call_hook``) → deployment (``async_pre_call_deployment_hook``) →
  success (``async_log_success_event``, a ``ModelResponse`` with usage)

CPU seconds (``time.process_time``) over ``--requests`` requests, repeated ``--runs`` times; prints
the median µs per request (and per hook with ``--per-hook``). ``--profile N`` prints cProfile's top
N functions by tottime instead; ``--check`` prints a digest of every output (bodies, metadata,
metrics) for comparing two versions of the code.

    LITELLM_LOCAL_MODEL_COST_MAP=True .venv/bin/python docs/trials/plugin-cpu-2026-12-05/hooks_cpu.py
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import cProfile
import hashlib
import importlib
import json
import logging
import os
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # this checkout's package, not an installed one
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import httpx  # noqa: E402
import litellm  # noqa: E402
from litellm.proxy._types import LitellmUserRoles, UserAPIKeyAuth  # noqa: E402
from prometheus_client import CollectorRegistry  # noqa: E402

from litellm_kvwarm.hook import KVWarmHandler  # noqa: E402
from litellm_kvwarm.lab.bench.throughput import request_bodies  # noqa: E402
from litellm_kvwarm.lab.demo.settings import FAST_MODEL, FAST_WINDOW, SLOW_MODEL, SLOW_WINDOW  # noqa: E402

BASES = {"fast": ("http://fast.test", FAST_MODEL, FAST_WINDOW), "slow": ("http://slow.test", SLOW_MODEL, SLOW_WINDOW)}


def models(request: httpx.Request) -> httpx.Response:
    for base, model, window in BASES.values():
        if str(request.url).startswith(base) and request.url.path.endswith("/models"):
            return httpx.Response(200, json={"object": "list", "data": [{"id": model, "object": "model", "max_model_len": window}]})
    return httpx.Response(404, json={"error": "not found"})


def build(package: str = "litellm_kvwarm") -> tuple[KVWarmHandler, CollectorRegistry, object]:
    model_list = [{"model_name": g, "litellm_params": {"model": f"hosted_vllm/{m}", "api_base": f"{b}/v1", "api_key": "none"},
                   "model_info": {"id": f"{g}-0"}} for g, (b, m, _) in BASES.items()]
    router = litellm.Router(model_list=model_list, context_window_fallbacks=[{"fast": ["slow"]}], num_retries=0)
    registry = CollectorRegistry()
    settings, hook, metrics = (importlib.import_module(f"{package}.{m}") for m in ("config", "hook", "metrics"))
    h = hook.KVWarmHandler(settings.Settings(hash_secret="s" * 32), router_getter=lambda: router,
                           metrics_=metrics.Metrics.create(registry),
                           http_client=httpx.AsyncClient(transport=httpx.MockTransport(models)))
    return h, registry, router


KEY = UserAPIKeyAuth(api_key="sk-master", token="hashed-master", user_role=LitellmUserRoles.PROXY_ADMIN)


def deployment_kwargs(data: dict, router) -> dict:
    """The kwargs LiteLLM hands the deployment hook: the routed body plus the chosen deployment."""
    dep = router.get_model_list(data["model"])[0]
    return {**data, **dep["litellm_params"], "model_info": dep["model_info"],
            "metadata": {**data["metadata"], "model_group": data["model"], "deployment": dep["litellm_params"]["model"]}}


def response(prompt: int) -> litellm.ModelResponse:
    return litellm.ModelResponse(choices=[{"message": {"role": "assistant", "content": "Sure, here is a short reply."},
                                           "finish_reason": "length", "index": 0}],
                                 usage={"prompt_tokens": prompt, "completion_tokens": 16, "total_tokens": prompt + 16})


async def one(h: KVWarmHandler, router, body: dict, i: int, times: list[float] | None = None, out: list | None = None) -> None:
    data = copy.deepcopy(body)  # done outside the measured hooks when timing per hook
    data["litellm_call_id"] = f"call-{i}"
    t0 = time.process_time()
    data = await h.async_pre_call_hook(KEY, None, data, "acompletion")
    t1 = time.process_time()
    kwargs = deployment_kwargs(data, router)
    t2 = time.process_time()
    kwargs = await h.async_pre_call_deployment_hook(kwargs, "acompletion")
    t3 = time.process_time()
    success = {"model": kwargs["model"], "messages": kwargs["messages"], "litellm_call_id": data["litellm_call_id"],
               "model_group": data["model"], "litellm_params": {"metadata": kwargs["metadata"], "model_info": kwargs["model_info"]}}
    resp = response(1000 + 7 * (i % 50))
    t4 = time.process_time()
    await h.async_log_success_event(success, resp, None, None)
    t5 = time.process_time()
    if times is not None:
        times[0] += t1 - t0
        times[1] += t3 - t2
        times[2] += t5 - t4
    if out is not None:
        out.append((data, kwargs))


def digest(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=repr).encode()).hexdigest()[:16]


async def main(args) -> None:
    logging.getLogger("litellm_kvwarm").setLevel(logging.INFO)
    logging.getLogger("LiteLLM").setLevel(logging.WARNING)
    bodies = request_bodies()
    h, registry, router = build()
    for i in range(40):  # window discovery, memos
        await one(h, router, bodies[i % len(bodies)], i)
    if args.check:
        out: list = []
        for i in range(200):
            await one(h, router, bodies[i % len(bodies)], 1000 + i, out=out)
        samples = sorted((s.name, tuple(sorted(s.labels.items())), s.value) for m in registry.collect() for s in m.samples
                         if "plugin_seconds" not in s.name and "created" not in s.name)
        print("outputs", digest(out))
        print("metrics", digest(samples))
        for d, k in out[:8]:
            print(d["model"], {k2: v for k2, v in d["metadata"].items() if k2.startswith("kvwarm")}, k.get("max_tokens"))
        return
    if args.ab:
        await ab(args, bodies, (h, router))
        return
    if args.profile:
        prof = cProfile.Profile()
        prof.enable()
        for i in range(args.requests):
            await one(h, router, bodies[i % len(bodies)], 10_000 + i)
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(args.profile)
        return
    totals, hooks = [], []
    n = 0
    for run in range(args.runs):
        times = [0.0, 0.0, 0.0]
        for i in range(args.requests):
            n += 1
            await one(h, router, bodies[i % len(bodies)], 100_000 * (run + 1) + i, times=times)
        totals.append(sum(times) / args.requests * 1e6)
        hooks.append([t / args.requests * 1e6 for t in times])
    med = statistics.median(totals)
    print(f"µs/request (3 hooks, CPU): median {med:.1f} over {args.runs} runs of {args.requests} "
          f"(min {min(totals):.1f}, max {max(totals):.1f})")
    if args.per_hook:
        for name, k in (("pre_call", 0), ("deployment", 1), ("success", 2)):
            print(f"  {name}: {statistics.median(h_[k] for h_ in hooks):.1f}")
    await h.aclose()


async def ab(args, bodies: list, new: tuple) -> None:
    """This checkout against another (``--ab DIR``: its ``litellm_kvwarm`` imported as ``kvwarm_base``) in one
    process, blocks of ``--requests`` requests alternating, so both see the same machine moments."""
    link = Path(tempfile.mkdtemp()) / "kvwarm_base"
    link.symlink_to(Path(args.ab).resolve() / "litellm_kvwarm")
    sys.path.insert(0, str(link.parent))
    base = build("kvwarm_base")[::2]
    for i in range(40):
        await one(*base, bodies[i % len(bodies)], i)
    arms: dict[str, list[list[float]]] = {"base": [], "new": []}
    for run in range(args.runs):
        for name, (h, router) in (("base", base), ("new", new)) if run % 2 == 0 else (("new", new), ("base", base)):
            times = [0.0, 0.0, 0.0]
            for i in range(args.requests):
                await one(h, router, bodies[i % len(bodies)], 100_000 * (run + 1) + i, times=times)
            arms[name].append([t / args.requests * 1e6 for t in times])
    for name, rows in arms.items():
        print(f"{name}: µs/request total median {statistics.median(sum(r) for r in rows):.1f} min {min(sum(r) for r in rows):.1f}  "
              + "  ".join(f"{hook} {statistics.median(r[k] for r in rows):.1f}" for k, hook in enumerate(("pre_call", "deployment", "success"))))
    ratios = [sum(n) / sum(b) for n, b in zip(arms["new"], arms["base"])]
    print(f"new ÷ base per block pair: median {statistics.median(ratios):.4f} over {len(ratios)} pairs")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--per-hook", action="store_true")
    parser.add_argument("--profile", type=int, default=0)
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--ab", metavar="DIR", help="another checkout to compare with, in the same process")
    asyncio.run(main(parser.parse_args()))

"""End-to-end proxy latency and throughput with the plugin against without it (I/O).

Two ``litellm --config`` proxies, identical but for the plugin callback, in front of the same two
emulators running at ``--time-scale 0`` (a zero-latency backend: no prefill or decode waits, only
its HTTP and tokenizer work). Rounds alternate the order (plugin first, then without; then the
reverse), each arm sending the same bounded batch at a fixed concurrency, so both see the same
machine state. Requests are ShareGPT prefixes well under the warm threshold (no warms fire),
non-streamed, ``max_tokens`` 16. Reported per arm: client latency, LiteLLM's own
``x-litellm-overhead-duration-ms``, throughput (requests ÷ batch wall time), and the proxy's CPU
seconds per request (its process tree's ``utime + stime`` read from ``/proc`` right before and
after each batch, :mod:`.proc_cpu`, ÷ the batch's requests). Compared: plugin − without latency
(p50, p99), plugin ÷ without CPU per request, and plugin ÷ without throughput both pooled over all
rounds and as the median of the per-round ratios. CPU per request moves less than wall time when
other processes share the cores, but it still moves (shared caches and cores: 15-28 CPU ms per
request for the same proxy from round to round on 2 shared cores), so the arms are compared on the
same rounds, never across runs.

Two more phases after the alternating rounds, on the same proxies:

* **paired** (:func:`summarize_paired`): each round sends ``requests_per_round`` requests to *both*
  proxies in one batch, interleaved, at twice the concurrency, and reads both proxies' CPU over
  that same interval. Sequential batches see the machine at different moments (CPU per request
  drifts by several ms between back-to-back batches of the same proxy here); paired batches share
  every moment, so this is the CPU ratio the targets read.
* **hooks** (:func:`summarize_hook_times`): ``hook_requests`` requests one at a time to a third proxy, the
  plugin plus LiteLLM's ``prometheus`` callback (its ``/metrics``; kept off the two measured proxies so
  both run the same LiteLLM), and the plugin's own ``kvwarm_plugin_seconds{hook}`` over them: where the
  plugin's time per request goes, hook by hook, without the machine's noise between two processes.
* **unloaded** (:func:`summarize_unloaded`): ``unloaded_requests`` per proxy, one request at a time,
  alternating proxies: the latency a request pays for the plugin when the proxy has a core to
  itself. At concurrency 4 on 2 shared cores every extra CPU millisecond also queues the requests
  behind it, so the loaded p50 difference is the CPU difference amplified by queueing (reported too).

Both proxies run with the :mod:`gc_probe <litellm_kvwarm.lab.bench.gc_probe>` ``sitecustomize`` on
their ``PYTHONPATH``, which logs every full (generation-2) garbage collection. Measured here:
LiteLLM's heap makes each one a 0.2–0.9 s stop-the-world pause, every few seconds under load, in
both proxies; a pause that lands in a short batch halves that batch's throughput. The pauses
inside the measured batches are reported per arm (:func:`gc_pauses`) so the ratio can be read
against them; batches are long (``requests_per_round``) so several pauses average out.
"""

from __future__ import annotations

import json
import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

import httpx

from .. import demo
from ..datasets import longest_sharegpt
from ..processes import BackendSpec, ManagedProcess, proxy_config, start_emulator, start_proxy
from ...tokens import estimate_request
from .proc_cpu import tree_cpu_s
from .throughput_phases import (PLUGIN, WITHOUT, hook_times, latency_delta, paired_batch, send, summarize_hook_times,
                                summarize_paired, summarize_unloaded, unloaded_samples)
from .stats import distribution, percentile, ratio

__all__ = ["GC_PROBE_DIR", "ThroughputOptions", "gc_pauses", "request_bodies", "round_ratios", "run_throughput",
           "summarize", "summarize_paired", "summarize_unloaded"]

PROMPT_SIZES = (1_000, 4_000)  # routing-estimate tokens; < 60% of a 16k window
MAX_TOKENS = 16
GC_PROBE_DIR = Path(__file__).resolve().parent / "gc_probe"
GC_LOG_ENV = "KVWARM_BENCH_GC_LOG"
PROFILE_ENV = "KVWARM_BENCH_PROFILE"


@dataclass(frozen=True)
class ThroughputOptions:
    rounds: int = 8
    requests_per_round: int = 120
    concurrency: int = 4
    warmup: int = 8
    #: requests per arm sent one at a time, alternating proxies (the unloaded latency phase)
    unloaded_requests: int = 200
    #: requests one at a time to the third proxy whose ``/metrics`` gives the plugin's own time per hook (0: none)
    hook_requests: int = 200
    #: a directory: profile each proxy over the measured rounds (cProfile, main thread; see
    #: ``gc_probe``), written as ``<dir>/<arm>/prof-<pid>.pstats``. Profiling slows both proxies.
    profile_dir: str | None = None


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


def _batch(pool: ThreadPoolExecutor, client: httpx.Client, proxy: ManagedProcess,
           bodies: list[dict[str, Any]], n: int) -> dict[str, Any]:
    pid = proxy.proc.pid if proxy.proc is not None else None
    cpu_before = tree_cpu_s(pid) if pid is not None else None
    began, began_unix = time.perf_counter(), time.time()
    results = list(pool.map(lambda i: send(client, proxy, bodies[i % len(bodies)]), range(n)))
    wall = time.perf_counter() - began
    cpu_after = tree_cpu_s(pid) if pid is not None else None
    return {"wall_s": wall, "began_unix": began_unix, "ended_unix": began_unix + wall,
            "status": [r[0] for r in results], "latency_s": [r[1] for r in results],
            "overhead_ms": [r[2] for r in results],
            "cpu_s": cpu_after - cpu_before if cpu_before is not None and cpu_after is not None else None}


def round_ratios(arms: dict[str, Any]) -> list[float]:
    """Plugin ÷ without throughput of each round (the two batches of a round ran back to back)."""
    plugin = arms.get(PLUGIN, {}).get("round_throughput_rps", [])
    without = arms.get(WITHOUT, {}).get("round_throughput_rps", [])
    return [p / w for p, w in zip(plugin, without) if w]


def gc_pauses(entries: list[dict[str, Any]], batches: list[dict[str, Any]]) -> dict[str, Any]:
    """Generation-2 collections (probe log ``entries``) that ended inside one of ``batches``:
    how many, their total and longest pause (seconds), and the share of batch wall time they took."""
    inside = [e["pause_s"] for e in entries
              if any(b["began_unix"] <= e["t"] <= b["ended_unix"] for b in batches)]
    wall = sum(b["wall_s"] for b in batches)
    return {"count": len(inside), "total_s": sum(inside), "max_s": max(inside, default=0.0),
            "share_of_wall": sum(inside) / wall if wall else None}


def _read_gc_log(directory: Path) -> list[dict[str, Any]]:
    entries = []
    for path in sorted(directory.glob("gc-*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                entries.append(json.loads(line))
            except ValueError:
                continue
    return entries


def _probe_env(log_dir: Path, profile_dir: Path | None = None) -> dict[str, str]:
    log_dir.mkdir(parents=True, exist_ok=True)
    path = os.pathsep.join(p for p in (str(GC_PROBE_DIR), os.environ.get("PYTHONPATH", "")) if p)
    env = {"PYTHONPATH": path, GC_LOG_ENV: str(log_dir)}
    if profile_dir is not None:
        profile_dir.mkdir(parents=True, exist_ok=True)
        env[PROFILE_ENV] = str(profile_dir)
    return env


def _signal(proxies: dict[str, ManagedProcess], signum: int) -> None:
    for proxy in proxies.values():
        if proxy.proc is not None:
            proxy.proc.send_signal(signum)
    time.sleep(0.5)  # the handler runs between two bytecodes of the proxy's main thread


def summarize(batches: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Per arm: latency and overhead distributions (ms), throughput (req/s), proxy CPU per request
    (seconds; ``None`` where a batch's CPU could not be read); and plugin against without: latency
    p50 and p99 differences (ms), CPU-per-request ratio, throughput ratio pooled over all rounds
    (``throughput_ratio``) and per round with its median (pure)."""
    arms = {}
    for arm, runs in batches.items():
        latencies = [v * 1000 for b in runs for v in b["latency_s"]]
        requests = sum(len(b["status"]) for b in runs)
        wall = sum(b["wall_s"] for b in runs)
        cpu = [b.get("cpu_s") for b in runs]
        cpu_known = bool(runs) and all(c is not None for c in cpu)
        arms[arm] = {
            "requests": requests,
            "errors": sum(1 for b in runs for s in b["status"] if s != 200),
            "latency_ms": distribution(latencies).as_dict(),
            "overhead_ms": distribution([v for b in runs for v in b["overhead_ms"]]).as_dict(),
            "throughput_rps": requests / wall if wall else None,
            "round_throughput_rps": [len(b["status"]) / b["wall_s"] for b in runs],
            "cpu_s": sum(cpu) if cpu_known else None,
            "cpu_s_per_request": sum(cpu) / requests if cpu_known and requests else None,
            "round_cpu_s_per_request": [c / len(b["status"]) if c is not None and b["status"] else None
                                        for c, b in zip(cpu, runs)],
        }
    plugin, without = arms.get(PLUGIN, {}), arms.get(WITHOUT, {})
    per_round = round_ratios(arms)
    return {
        "arms": arms,
        "throughput_ratio": ratio(plugin.get("throughput_rps"), without.get("throughput_rps")),
        "round_ratios": per_round,
        "round_ratio_median": percentile(per_round, 50),
        "latency_p50_delta_ms": latency_delta(plugin, without, "p50"),
        "latency_p99_delta_ms": latency_delta(plugin, without, "p99"),
        "cpu_per_request_ratio": ratio(plugin.get("cpu_s_per_request"), without.get("cpu_s_per_request")),
    }


def run_throughput(options: ThroughputOptions, workdir: Path, say: Callable[[str], None]) -> dict[str, Any]:
    bodies = request_bodies()
    with ExitStack() as stack:
        emulators = []
        for model, window in ((demo.FAST_MODEL, demo.FAST_WINDOW), (demo.SLOW_MODEL, demo.SLOW_WINDOW)):
            process = start_emulator(model, window, time_scale=0, workdir=workdir)
            stack.callback(process.stop)
            emulators.append(BackendSpec.of(process, model))
        groups = {demo.FAST_GROUP: [emulators[0]], demo.SLOW_GROUP: [emulators[1]]}
        profile = options.profile_dir
        say("  throughput: starting two proxies (plugin / without) on zero-latency emulators")
        with ThreadPoolExecutor(3) as starter:
            futures = {
                arm: starter.submit(start_proxy, proxy_config(groups, callbacks=plugin, router_settings={"num_retries": 0}),
                                    workdir=workdir / f"proxy-throughput-{arm}",
                                    env=_probe_env(workdir / f"gc-{arm}", Path(profile) / arm if profile else None))
                for arm, plugin in ((PLUGIN, True), (WITHOUT, False))
            }
            hooks_future = starter.submit(
                start_proxy, proxy_config(groups, callbacks=["litellm_kvwarm.proxy_handler_instance", "prometheus"],
                                          router_settings={"num_retries": 0}),
                workdir=workdir / "proxy-throughput-hooks") if options.hook_requests > 0 else None
            proxies = {}
            for arm, future in futures.items():
                proxies[arm] = future.result()
                stack.callback(proxies[arm].stop)
            hooks_proxy = hooks_future.result() if hooks_future is not None else None
            if hooks_proxy is not None:
                stack.callback(hooks_proxy.stop)
        batches: dict[str, list[dict[str, Any]]] = {PLUGIN: [], WITHOUT: []}
        limits = httpx.Limits(max_connections=options.concurrency * 2)
        with httpx.Client(timeout=60.0, trust_env=False, limits=limits) as client, \
                ThreadPoolExecutor(options.concurrency) as pool:
            for proxy in proxies.values():
                _batch(pool, client, proxy, bodies, options.warmup)  # window discovery, connection pools
            if profile:
                _signal(proxies, signal.SIGUSR1)
            for round_no in range(options.rounds):
                order = (PLUGIN, WITHOUT) if round_no % 2 == 0 else (WITHOUT, PLUGIN)
                for arm in order:
                    batches[arm].append(_batch(pool, client, proxies[arm], bodies, options.requests_per_round))
                last = {arm: batches[arm][-1] for arm in order}
                say(f"  throughput round {round_no + 1}/{options.rounds}: " + ", ".join(
                    f"{arm} {len(b['status']) / b['wall_s']:.1f} req/s"
                    + (f" {1000 * b['cpu_s'] / len(b['status']):.2f} CPU ms/req" if b["cpu_s"] is not None else "")
                    for arm, b in last.items()))
            paired = []
            with ThreadPoolExecutor(2 * options.concurrency) as both:
                for round_no in range(options.rounds):
                    paired.append(paired_batch(both, client, proxies, bodies, options.requests_per_round))
                    say(f"  paired round {round_no + 1}/{options.rounds} (both proxies at once): " + ", ".join(
                        f"{arm} {1000 * b['cpu_s'] / b['requests']:.2f} CPU ms/req" for arm, b in paired[-1].items()
                        if b["cpu_s"] is not None))
            say(f"  unloaded latency: {options.unloaded_requests} requests per proxy, one at a time")
            unloaded = unloaded_samples(client, proxies, bodies, options.unloaded_requests)
            if profile:
                _signal(proxies, signal.SIGUSR2)
            hooks = None
            if hooks_proxy is not None:
                say(f"  plugin time per hook: {options.hook_requests} requests, one at a time, to a third proxy with /metrics")
                _batch(pool, client, hooks_proxy, bodies, options.warmup)
                hooks = hook_times(client, hooks_proxy, bodies, options.hook_requests)
    result = summarize(batches)
    result["paired"] = summarize_paired(paired)
    result["unloaded"] = summarize_unloaded(unloaded)
    if hooks is not None:
        result["hooks"] = summarize_hook_times(hooks)
    for arm, runs in batches.items():
        result["arms"][arm]["gc_gen2"] = gc_pauses(_read_gc_log(workdir / f"gc-{arm}"), runs)
    result["options"] = dict(asdict(options), prompt_sizes=list(PROMPT_SIZES), max_tokens=MAX_TOKENS,
                             bodies=len(bodies))
    return result

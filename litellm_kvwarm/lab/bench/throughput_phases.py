"""Two proxies measured at the same moments: paired CPU batches and one-at-a-time latency (I/O, and
the pure summaries of both). Used by :mod:`.throughput` after its alternating rounds, on the same
proxies and bodies; see its docstring for why each phase exists.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from ..processes import ManagedProcess
from .proc_cpu import tree_cpu_s
from .stats import distribution, percentile, ratio

__all__ = ["HOOKS", "OVERHEAD_HEADER", "PLUGIN", "WITHOUT", "hook_seconds", "hook_times", "latency_delta", "paired_batch",
           "send", "summarize_hook_times", "summarize_paired", "summarize_unloaded", "unloaded_samples"]

PLUGIN, WITHOUT = "plugin", "without"
OVERHEAD_HEADER = "x-litellm-overhead-duration-ms"
#: the hooks ``kvwarm_plugin_seconds{hook}`` times on a request's path (``failure`` only runs on errors)
HOOKS = ("pre_call", "deployment", "success")


def send(client: httpx.Client, proxy: ManagedProcess, body: dict[str, Any]) -> tuple[int, float, float | None]:
    began = time.perf_counter()
    response = client.post(proxy.base_url + "/v1/chat/completions", json=body,
                           headers={"Authorization": f"Bearer {proxy.master_key}"})
    elapsed = time.perf_counter() - began
    overhead = response.headers.get(OVERHEAD_HEADER)
    return response.status_code, elapsed, float(overhead) if overhead else None


def latency_delta(plugin: dict[str, Any], without: dict[str, Any], q: str) -> float | None:
    a, b = (arm.get("latency_ms", {}).get(q) for arm in (plugin, without))
    return a - b if a is not None and b is not None else None


def paired_batch(pool: ThreadPoolExecutor, client: httpx.Client, proxies: dict[str, ManagedProcess],
                  bodies: list[dict[str, Any]], n: int) -> dict[str, dict[str, Any]]:
    """``n`` requests to each proxy in one batch, interleaved (plugin, without, plugin, ...), and each
    proxy's CPU over that same interval: both proxies share the cores, the client and the emulators
    at the same moments, so machine noise falls on both alike."""
    pids = {arm: p.proc.pid if p.proc is not None else None for arm, p in proxies.items()}
    before = {arm: tree_cpu_s(pid) if pid is not None else None for arm, pid in pids.items()}
    jobs = [(arm, i) for i in range(n) for arm in (PLUGIN, WITHOUT)]
    results = list(pool.map(lambda job: (job[0], send(client, proxies[job[0]], bodies[job[1] % len(bodies)])), jobs))
    after = {arm: tree_cpu_s(pid) if pid is not None else None for arm, pid in pids.items()}
    return {arm: {"requests": n, "errors": sum(1 for a, r in results if a == arm and r[0] != 200),
                  "cpu_s": after[arm] - before[arm] if before[arm] is not None and after[arm] is not None else None}
            for arm in (PLUGIN, WITHOUT)}


def summarize_paired(rounds: list[dict[str, dict[str, Any]]]) -> dict[str, Any]:
    """Proxy CPU per request (seconds) of each arm pooled over the paired batches, plugin ÷ without
    pooled and per batch with its median; ``None`` where a batch's CPU could not be read (pure)."""
    known = [r for r in rounds if all(r[arm]["cpu_s"] is not None for arm in (PLUGIN, WITHOUT))]
    per_request = {arm: (sum(r[arm]["cpu_s"] for r in known) / sum(r[arm]["requests"] for r in known)
                         if known and len(known) == len(rounds) else None) for arm in (PLUGIN, WITHOUT)}
    per_round = [ratio(r[PLUGIN]["cpu_s"] / r[PLUGIN]["requests"], r[WITHOUT]["cpu_s"] / r[WITHOUT]["requests"])
                 for r in known]
    per_round = [v for v in per_round if v is not None]
    return {"rounds": len(rounds), "errors": sum(r[arm]["errors"] for r in rounds for arm in (PLUGIN, WITHOUT)),
            "cpu_s_per_request": per_request, "cpu_ratio": ratio(per_request[PLUGIN], per_request[WITHOUT]),
            "round_cpu_ratios": per_round, "round_cpu_ratio_median": percentile(per_round, 50)}


def unloaded_samples(client: httpx.Client, proxies: dict[str, ManagedProcess], bodies: list[dict[str, Any]],
              n: int) -> dict[str, list[tuple[int, float]]]:
    """``n`` requests per proxy, one at a time, alternating proxies: ``(status, seconds)`` of each."""
    out: dict[str, list[tuple[int, float]]] = {PLUGIN: [], WITHOUT: []}
    for i in range(n):
        for arm in ((PLUGIN, WITHOUT) if i % 2 == 0 else (WITHOUT, PLUGIN)):
            status, elapsed, _ = send(client, proxies[arm], bodies[i % len(bodies)])
            out[arm].append((status, elapsed))
    return out


def summarize_unloaded(samples: dict[str, list[tuple[int, float]]]) -> dict[str, Any]:
    """Client latency (ms) per arm of the one-at-a-time phase and the plugin's added p50 and p99 (pure)."""
    arms = {arm: {"requests": len(rows), "errors": sum(1 for status, _ in rows if status != 200),
                  "latency_ms": distribution([1000 * t for _, t in rows]).as_dict()} for arm, rows in samples.items()}
    return {"arms": arms, "latency_p50_delta_ms": latency_delta(arms.get(PLUGIN, {}), arms.get(WITHOUT, {}), "p50"),
            "latency_p99_delta_ms": latency_delta(arms.get(PLUGIN, {}), arms.get(WITHOUT, {}), "p99")}


def hook_seconds(metrics_text: str) -> dict[str, tuple[float, float]]:
    """``{hook: (seconds, calls)}`` of ``kvwarm_plugin_seconds`` in a Prometheus text exposition (pure)."""
    from prometheus_client.parser import text_string_to_metric_families

    out: dict[str, list[float]] = {}
    for family in text_string_to_metric_families(metrics_text):
        if family.name != "kvwarm_plugin_seconds":
            continue
        for sample in family.samples:
            hook = sample.labels.get("hook")
            if hook is None or sample.name not in ("kvwarm_plugin_seconds_sum", "kvwarm_plugin_seconds_count"):
                continue
            slot = out.setdefault(hook, [0.0, 0.0])
            slot[0 if sample.name.endswith("_sum") else 1] += sample.value
    return {hook: (v[0], v[1]) for hook, v in out.items()}


def hook_times(client: httpx.Client, proxy: ManagedProcess, bodies: list[dict[str, Any]], n: int) -> dict[str, Any]:
    """``n`` requests one at a time to ``proxy`` (the plugin with LiteLLM's ``prometheus`` callback, for ``/metrics``)
    and the plugin's own ``kvwarm_plugin_seconds`` over them: ``{"requests", "errors", "before", "after"}``, the
    last two ``{hook: (seconds, calls)}`` read right before and after."""
    def read() -> dict[str, tuple[float, float]]:
        response = client.get(proxy.base_url + "/metrics", headers={"Authorization": f"Bearer {proxy.master_key}"},
                              follow_redirects=True)
        response.raise_for_status()
        return hook_seconds(response.text)

    before = read()
    statuses = [send(client, proxy, bodies[i % len(bodies)])[0] for i in range(n)]
    return {"requests": n, "errors": sum(1 for s in statuses if s != 200), "before": before, "after": read()}


def summarize_hook_times(raw: dict[str, Any]) -> dict[str, Any]:
    """Per hook of :data:`HOOKS`: calls and mean milliseconds per call over the phase; and the plugin's
    milliseconds per request, all hooks together (pure)."""
    before, after, requests = raw.get("before") or {}, raw.get("after") or {}, raw.get("requests") or 0
    none = (0.0, 0.0)
    spent = {hook: [a - b for a, b in zip(after.get(hook, none), before.get(hook, none))] for hook in HOOKS}  # seconds, calls
    hooks = {hook: {"calls": calls, "ms_per_call": 1000 * seconds / calls if calls else None} for hook, (seconds, calls) in spent.items()}
    total = sum(seconds for seconds, _ in spent.values())
    return {"requests": requests, "errors": raw.get("errors", 0), "hooks": hooks,
            "ms_per_request": 1000 * total / requests if requests else None}

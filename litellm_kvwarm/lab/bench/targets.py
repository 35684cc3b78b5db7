"""The issue's targets, evaluated on a results document (pure). A benchmark reports; it never fails.

* (d) ≤ 1.25 × (e): escalated-turn TTFT with warm-ahead against the floor (median, both clocks);
* (c)/(d) ≥ 5 "at 30k tokens": warm-ahead's gain over proactive routing alone (median, both clocks;
  the note says at what prompt sizes the escalated turns actually were);
* plugin CPU p99 < 1 ms at 100k tokens (with and without tool schemas: the worse of the two);
* plugin ≥ 50× cheaper than ``litellm.token_counter`` at 100k tokens (CPU p50; smaller sizes are
  shown in the report's table);
* (f) ≤ 1.5 × its floor (ef): closed-loop warm-ahead + reply-warm against the same request fully
  cached, the ratio of the medians over the ShareGPT sessions on the emulated clock (paired median
  and client in the note);
* (c)/(f) ≥ 5: proactive routing alone (open loop) against arm (f) (medians, both clocks);
* arm (f)'s warm prefill that its escalated turns never read ≤ 10% of its warm prefill;
* interference: the low-priority warm arm's live TTFT p99 on slow ≤ 1.05 × the no-warm arm's
  (emulated clock, vLLM V1's prefill order, the plugin's defaults: warms in pieces; the FCFS arm's
  ratio, the same warms sent whole and the emulator's chunk-yielding order's in the note);
* the plugin's cost end to end, two proxies identical but for it on the same traffic: p50 latency
  added ≤ 1 ms, one request at a time (the unloaded phase; the p99 difference and the loaded p50
  difference in the note); the proxy's CPU seconds per request (process tree ``utime + stime`` ÷
  requests) ≤ 1.03 × without, both proxies loaded in the same batches (the paired phase; the
  alternating batches' ratio in the note); throughput ≥ 0.97 × without, pooled over all rounds
  (the median of the paired per-round ratios in the note). Results without the paired and
  unloaded phases (older runs) are read from the alternating batches.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...config_defaults import DEFAULT_WARM_MAX_PIECES

__all__ = ["evaluate_targets"]

FLOOR_FACTOR = 1.25
WARM_GAIN = 5.0
PLUGIN_P99_US = 1000.0
CHEAPER_FACTOR = 50.0
THROUGHPUT_RATIO = 0.97
ADDED_P50_MS = 1.0
CPU_RATIO = 1.03
COST_SIZE = 100_000
#: the plugin's cost does not depend on the backend: the emulator-scale run measures it
_NOT_HERE = "not measured in this run (backend-independent: see the emulator-scale report, docs/benchmarks.md)"


def _target(name: str, wanted: str, value: float | None, met: bool | None, note: str = "") -> dict[str, Any]:
    return {"target": name, "wanted": wanted, "value": value, "met": met, "note": note}


def _ratio_row(results: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    return next((r for r in (results.get("ttft") or {}).get("ratios", []) if r["ratio"] == name), None)


def _both(row: Mapping[str, Any] | None, ok) -> tuple[float | None, float | None, bool | None]:
    if row is None:
        return None, None, None
    client, emulated = row.get("client_of_medians"), row.get("emulated_of_medians")
    checks = [ok(v) for v in (client, emulated) if v is not None]
    return client, emulated, (all(checks) if checks else None)


CLOSED_FLOOR_FACTOR = 1.5
UNPAID_SHARE = 0.10
INTERFERENCE_FACTOR = 1.05


def _closed_loop_targets(results: Mapping[str, Any], clock: str) -> list[dict[str, Any]]:
    closed = results.get("closed_loop") or {}
    fr, frc = closed.get("floor_ratio_sharegpt") or {}, closed.get("floor_ratio_sharegpt_client") or {}
    value = fr.get("of_medians")
    out = [_target("(f) ≤ 1.5 × floor (median over ShareGPT sessions, emulated)", f"≤ {CLOSED_FLOOR_FACTOR}", value,
                   None if value is None else value <= CLOSED_FLOOR_FACTOR,
                   (f"{fr['sessions']} sessions; paired median {fr['paired_median']:.2f}x; client "
                    f"{frc.get('of_medians') or 0:.2f}x" if value is not None and fr.get("paired_median") is not None
                    else "not measured"))]
    cf = _ratio_row(results, "(c)/(f)")
    client, emulated, met = _both(cf, lambda v: v >= WARM_GAIN)
    out.append(_target("(c)/(f) ≥ 5", f"≥ {WARM_GAIN:g}", emulated, met,
                       f"client {client:.2f}x, {clock} {emulated:.2f}x" if client and emulated else "not measured"))
    totals = (closed.get("f") or {}).get("totals") or {}
    share = totals.get("unpaid_share_all", totals.get("unpaid_share"))
    idle, unpaid = totals.get("never_escalated_warm_prefill_tokens", 0), totals.get("unpaid_tokens", 0)
    note = (f"{unpaid + idle:,} of {totals.get('warm_prefill_tokens', 0) + idle:,} tokens: {unpaid:,} not read by "
            f"{totals.get('turns', 0)} escalated turns, {idle:,} warmed for "
            f"{totals.get('never_escalated_conversations', 0)} session(s) that never escalated")
    sweep = [p for p in (results.get("threshold_sweep") or {}).get("points") or [] if p.get("unpaid_share_all") is not None]
    if sweep:
        note += "; by KVWARM_WARM_THRESHOLD (section 6): " + ", ".join(
            f"{p['threshold']:g}{_lead_label(p)} {p['unpaid_share_all']:.1%}"
            for p in sweep)
    out.append(_target("(f) warm prefill that never paid off ≤ 10% of all warm prefill", f"≤ {UNPAID_SHARE:.0%}", share,
                       None if share is None else share <= UNPAID_SHARE, note if share is not None else "not measured"))
    return out


def _interference_target(results: Mapping[str, Any]) -> dict[str, Any]:
    ratios = (results.get("interference") or {}).get("p99_ratio") or {}
    low = (ratios.get("low-priority") or {}).get("server_ttft_s")
    fcfs = (ratios.get("fcfs") or {}).get("server_ttft_s")
    chunks = (ratios.get("low-priority-between-chunks") or {}).get("server_ttft_s")
    whole = (ratios.get("low-priority-whole") or {}).get("server_ttft_s")
    fixed = (ratios.get("low-priority-fixed") or {}).get("server_ttft_s")
    note = (f"defaults: pieces of 5% of the median live prompt (KVWARM_WARM_PIECE_SHARE); FCFS warms {fcfs:.2f}x; "
            f"client clock: low-priority {(ratios.get('low-priority') or {}).get('client_ttft_s') or 0:.2f}x, FCFS "
            f"{(ratios.get('fcfs') or {}).get('client_ttft_s') or 0:.2f}x"
            + (f"; fixed 512-token pieces, at most 16 a warm (the earlier defaults) {fixed:.2f}x" if fixed is not None else "")
            + (f"; low priority, whole warms {whole:.2f}x" if whole is not None else "")
            + (f"; low priority if a running prefill yielded at chunk boundaries (not vLLM V1) {chunks:.2f}x"
               if chunks is not None else "") if low is not None and fcfs is not None
            else "not measured")
    return _target("live TTFT p99 with low-priority warms ≤ 1.05 × without warms", f"≤ {INTERFERENCE_FACTOR}", low,
                   None if low is None else low <= INTERFERENCE_FACTOR, note)


def evaluate_targets(results: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The targets on both clocks: client, and the slow backend's own (emulated seconds, or the server's
    TTFT at the recording tap on a real engine: ``meta.scale.slow_prefill_tps`` is ``None``)."""
    out = []
    scale = (results.get("meta") or {}).get("scale") or {}
    clock = "server" if scale and scale.get("slow_prefill_tps") is None else "emulated"
    de = _ratio_row(results, "(d)/(e)")
    client, emulated, met = _both(de, lambda v: v <= FLOOR_FACTOR)
    out.append(_target("(d) ≤ 1.25 × (e)", f"≤ {FLOOR_FACTOR}", emulated, met,
                       f"client {client:.2f}x, {clock} {emulated:.2f}x" if client and emulated else "not measured"))
    cd = _ratio_row(results, "(c)/(d)")
    client, emulated, met = _both(cd, lambda v: v >= WARM_GAIN)
    sizes = [s["prompt_tokens"] for s in ((results.get("ttft") or {}).get("arms", {}).get("d", {}) or {}).get("samples", [])
             if s.get("prompt_tokens")]
    size_note = f"; escalated prompts {min(sizes):,}-{max(sizes):,} tokens, none at 30k" if sizes and max(sizes) < 29_000 else ""
    out.append(_target("(c)/(d) ≥ 5 at 30k tokens", f"≥ {WARM_GAIN:g}", emulated, met,
                       (f"client {client:.2f}x, {clock} {emulated:.2f}x" if client and emulated else "not measured")
                       + size_note))
    cases = [c for c in (results.get("cost") or {}).get("cases", []) if c["target_tokens"] == COST_SIZE]
    if cases:
        worst = max(c["plugin"]["cpu_us"]["p99"] for c in cases)
        out.append(_target("plugin CPU p99 < 1 ms at 100k tokens", "< 1000 µs", worst, worst < PLUGIN_P99_US,
                           "worst of with/without tool schemas, µs"))
        cheapest = min(c["cpu_p50_speedup"] for c in cases)
        out.append(_target("plugin ≥ 50× cheaper than litellm.token_counter (100k)", f"≥ {CHEAPER_FACTOR:g}×",
                           cheapest, cheapest >= CHEAPER_FACTOR, "CPU p50 ratio, worst of with/without tools"))
    else:
        out.append(_target("plugin CPU p99 < 1 ms at 100k tokens", "< 1000 µs", None, None, _NOT_HERE))
        out.append(_target("plugin ≥ 50× cheaper than litellm.token_counter (100k)", f"≥ {CHEAPER_FACTOR:g}×",
                           None, None, _NOT_HERE))
    out += _closed_loop_targets(results, clock)
    out.append(_interference_target(results))
    out += _throughput_targets(results.get("throughput") or {})
    return out


def _throughput_targets(throughput: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Plugin against without on the same traffic: added p50 latency, proxy CPU per request, pooled throughput."""
    loaded_p50, loaded_p99 = throughput.get("latency_p50_delta_ms"), throughput.get("latency_p99_delta_ms")
    unloaded, paired = throughput.get("unloaded") or {}, throughput.get("paired") or {}
    if unloaded:
        added, p99 = unloaded.get("latency_p50_delta_ms"), unloaded.get("latency_p99_delta_ms")
        latency_note = (f"one request at a time; p99 added {p99:+.1f} ms; at concurrency "
                        f"{(throughput.get('options') or {}).get('concurrency', '?')} on the shared cores p50 "
                        f"{loaded_p50:+.1f} ms" if p99 is not None and loaded_p50 is not None else _NOT_HERE)
    else:
        added, p99 = loaded_p50, loaded_p99
        latency_note = f"p99 added {p99:+.1f} ms" if p99 is not None else _NOT_HERE
    sequential = throughput.get("cpu_per_request_ratio")
    arms = throughput.get("arms") or {}
    if paired:
        cpu, per_request = paired.get("cpu_ratio"), [(paired.get("cpu_s_per_request") or {}).get(a) for a in ("plugin", "without")]
        cpu_note = (f"{1000 * per_request[0]:.2f} vs {1000 * per_request[1]:.2f} CPU ms per request, both proxies in "
                    f"the same {paired.get('rounds')} batches (median batch {paired.get('round_cpu_ratio_median'):.3f}); "
                    f"alternating batches {sequential:.3f}"
                    if None not in per_request and paired.get("round_cpu_ratio_median") is not None and sequential is not None
                    else _NOT_HERE)
    else:
        cpu, per_request = sequential, [(arms.get(a) or {}).get("cpu_s_per_request") for a in ("plugin", "without")]
        cpu_note = (f"{1000 * per_request[0]:.2f} vs {1000 * per_request[1]:.2f} CPU ms per request"
                    if None not in per_request else _NOT_HERE)
    own = (throughput.get("hooks") or {}).get("ms_per_request")
    if own is not None and cpu_note != _NOT_HERE:
        cpu_note += f"; the plugin's hooks' own time {own:.2f} ms per request (kvwarm_plugin_seconds)"
    pooled, median = throughput.get("throughput_ratio"), throughput.get("round_ratio_median")
    return [
        _target("plugin p50 latency added ≤ 1 ms", f"≤ {ADDED_P50_MS:g} ms", added,
                None if added is None else added <= ADDED_P50_MS, latency_note),
        _target("proxy CPU per request with plugin ≤ 1.03 × without", f"≤ {CPU_RATIO}", cpu,
                None if cpu is None else cpu <= CPU_RATIO, cpu_note),
        _target("throughput ≥ 0.97 × without (pooled)", f"≥ {THROUGHPUT_RATIO}", pooled,
                None if pooled is None else pooled >= THROUGHPUT_RATIO,
                f"all rounds pooled; median of the {len(throughput.get('round_ratios') or [])} paired rounds {median:.3f}"
                if median is not None else _NOT_HERE),
    ]


def _lead_label(point: Mapping[str, Any]) -> str:
    """`` lead N`` for a sweep point replayed with ``KVWARM_WARM_LEAD_STEPS`` = N > 0, else ``""``."""
    lead = point.get("lead_steps")
    return f" lead {lead}" if lead else ""

"""The issue's targets, evaluated on a results document (pure). A benchmark reports; it never fails.

* (d) ≤ 1.25 × (e): escalated-turn TTFT with warm-ahead against the floor (median, both clocks);
* (c)/(d) ≥ 5 "at 30k tokens": warm-ahead's gain over proactive routing alone (median, both clocks;
  the note says at what prompt sizes the escalated turns actually were);
* plugin CPU p99 < 1 ms at 100k tokens (with and without tool schemas: the worse of the two);
* plugin ≥ 50× cheaper than ``litellm.token_counter`` at 100k tokens (CPU p50; smaller sizes are
  shown in the report's table);
* throughput with the plugin ≥ 0.97 × without: the median of the per-round ratios (each round runs
  both proxies back to back, order alternating), which one round hit by a 0.4–0.9 s garbage
  collection in one proxy cannot swing the way it swings the pooled ratio (also reported).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["evaluate_targets"]

FLOOR_FACTOR = 1.25
WARM_GAIN = 5.0
PLUGIN_P99_US = 1000.0
CHEAPER_FACTOR = 50.0
THROUGHPUT_RATIO = 0.97
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
    throughput = results.get("throughput") or {}
    tp, overall = throughput.get("round_ratio_median"), throughput.get("throughput_ratio")
    note = (f"median of the {len(throughput.get('round_ratios') or [])} paired rounds; all rounds pooled {overall:.3f}"
            if tp is not None and overall is not None else _NOT_HERE)
    out.append(_target("throughput with plugin ≥ 0.97 × without", f"≥ {THROUGHPUT_RATIO}", tp,
                       None if tp is None else tp >= THROUGHPUT_RATIO, note))
    return out

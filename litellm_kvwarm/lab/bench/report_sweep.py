"""The warm threshold sweep's report section and chart (pure section; the chart draws with matplotlib):
``results["threshold_sweep"]`` (:func:`~litellm_kvwarm.lab.bench.sweep.summarize_sweep`) in, lines or a PNG out;
``[]`` / ``None`` where the run has no sweep."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .report_cells import num, table

__all__ = ["threshold_chart", "threshold_section"]


def threshold_section(results: Mapping[str, Any]) -> list[str]:
    sweep = results.get("threshold_sweep")
    if not sweep or not sweep.get("points"):
        return []
    default, default_lead = sweep.get("default"), sweep.get("default_lead")
    rows = []
    for p in sweep["points"]:
        lead = p.get("lead_steps")
        mark = " (default)" if p["threshold"] == default and lead == default_lead else ""
        lead_cell = "" if lead is None else f", lead {lead} steps" if lead else ""
        rows.append([f"{p['threshold']:g}{lead_cell}{mark}", f"{p['escalated']} of {p['sessions']}", f"{p['warms']:,}",
                     f"{p['warm_prefill_tokens']:,}", f"{p['never_escalated_warm_prefill_tokens']:,}",
                     num(p["unpaid_share_all"], ".1%"), num(p["cached_fraction"], ".0%"), f"{p['prefilled_tokens']:,}",
                     num(p["median_prefilled_tokens"], ",.0f"), num(p["median_prefill_model_s"], ".2f"),
                     num(p["median_emulated_ttft_sharegpt_s"], ".2f")])
    return [
        "## 6. The warm threshold: what warms cost and save", "",
        f"Arm (f) (closed loop, warm-ahead + reply-warm) replayed again on the same sessions with `{sweep['env']}` "
        "at each value, fresh processes each; the default's row is arm (f) itself. A session that crosses the "
        "threshold and ends below the window pays warms that never pay off; a higher threshold warms fewer of those, "
        "and leaves the sessions that escalate one bulk warm later instead of incremental ones. Sessions that jump "
        "and a session's head are warmed below any threshold (left on, as by default). The row with a lead sets "
        f"`{sweep.get('lead_env', 'KVWARM_WARM_LEAD_STEPS')}` (off by default): past the threshold a session whose "
        "steps are known is warmed only once that many of its largest steps would overflow the window. *Never paid off* = warm "
        "prefill the escalated turns did not read + all warm prefill of sessions that never escalated, ÷ all warm "
        "prefill (the issue's ≤ 10% target); *still prefilled* = the escalated turns' prompt − cached tokens; "
        "*prefill model* = its median ÷ the slow prefill rate (no fixed cost); *emulated* = the ShareGPT escalated "
        "turns' median TTFT on arm (f)'s clock (it includes the emulator's own work × 1 ÷ time scale, see section 1).",
        "",
        *table(["threshold", "escalated sessions", "warm requests", "warm prefill tokens",
                "of which sessions that never escalated", "never paid off", "escalated turns cached",
                "still prefilled tokens", "median still prefilled", "median prefill model s", "median emulated s (ShareGPT)"],
               rows),
        "",
    ]


def threshold_chart(results: Mapping[str, Any], path: Path, plt: Any, save: Any) -> Path | None:
    """Warm prefill that never paid off and what the escalated turns still prefilled, per threshold (``plt()``:
    matplotlib's pyplot, imported only when there is something to draw; ``save(fig, results, path)``)."""
    sweep = results.get("threshold_sweep")
    points = (sweep or {}).get("points") or []
    if len(points) < 2:
        return None
    default_lead = (sweep or {}).get("default_lead")
    off = [p for p in points if p.get("lead_steps", default_lead) != default_lead]  # the lead-off point, drawn apart
    points = [p for p in points if p not in off]
    xs = [p["threshold"] for p in points]
    fig, left = plt().subplots(figsize=(7.5, 4.2))
    warmed = [p for p in points if p["unpaid_share_all"] is not None]  # a threshold with no warm has no share
    for p in (q for q in off if q["unpaid_share_all"] is not None):
        left.plot([p["threshold"]], [100 * p["unpaid_share_all"]], "x", color="tab:red", markersize=9,
                  label=f"never paid off, KVWARM_WARM_LEAD_STEPS={p.get('lead_steps')} (%)")
    left.plot([p["threshold"] for p in warmed], [100 * p["unpaid_share_all"] for p in warmed], "o-", color="tab:red",
              label="warm prefill never paid off (%)")
    left.axhline(10, color="tab:red", linestyle=":", linewidth=1, label="target ≤ 10%")
    left.set_xlabel("KVWARM_WARM_THRESHOLD (fraction of the fast window)")
    left.set_ylabel("never paid off, % of warm prefill")
    right = left.twinx()
    right.plot(xs, [p["prefilled_tokens"] for p in points], "s--", color="tab:blue",
               label="escalated turns: still prefilled tokens (sum)")
    right.set_ylabel("still prefilled tokens, all escalated turns")
    right.set_ylim(0, 1.15 * max(max(p["prefilled_tokens"] for p in points), 1))
    left.set_ylim(0, max(15.0, 110 * max((p["unpaid_share_all"] for p in warmed), default=0)))
    handles = left.get_legend_handles_labels()[0] + right.get_legend_handles_labels()[0]
    labels = left.get_legend_handles_labels()[1] + right.get_legend_handles_labels()[1]
    left.legend(handles, labels, loc="upper center", fontsize=8)
    default = (sweep or {}).get("default")
    if default in xs:
        left.axvline(default, color="grey", linewidth=0.8)
    left.set_title("Warm threshold: waste against what the escalated turn still prefills (arm f)")
    return save(fig, results, path)

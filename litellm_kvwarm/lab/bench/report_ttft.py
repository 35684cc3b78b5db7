"""Section 1 of the benchmark report: escalated-turn TTFT across the arms (pure: dict in, lines out).

Every number comes from ``results["ttft"]`` and ``results["meta"]`` of the results document.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .report_cells import is_real, num, table

__all__ = ["ttft_section"]


def ttft_section(results: Mapping[str, Any]) -> list[str]:
    ttft = results.get("ttft")
    if not ttft:
        return []
    scale = results["meta"]["scale"]
    arms = ttft["arms"]
    real = is_real(results)
    lines = [
        "## 1. Escalated-turn TTFT", "",
        "The escalated turn is the first request of a session served by `slow`. The same sessions go through "
        "every arm, each on fresh processes (nothing cached when its replay starts).",
        "",
    ]
    if real:
        overhead = results["meta"].get("tap_overhead") or {}
        lines += [
            "Real engines, real time (no scaling). *Client* = measured at the benchmark's client through the "
            "LiteLLM proxy; *server* = the slow server's own TTFT as its recording tap saw it: from the request's "
            "arrival at the tap to the first streamed event with content, i.e. queueing + prefill + the first "
            "decode step, without the proxy (and, in arm (a), without the rejected attempt on fast). The tap "
            f"adds one local hop: {num(overhead.get('overhead_median_s') and overhead['overhead_median_s'] * 1e3, '.1f')} "
            "ms on a tiny request in this run (median, "
            f"{num(overhead.get('direct_median_s') and overhead['direct_median_s'] * 1e3, '.1f')} ms direct vs "
            f"{num(overhead.get('tap_median_s') and overhead['tap_median_s'] * 1e3, '.1f')} ms through the tap).",
            "",
        ]
    else:
        lines += [
            f"Time scaling compresses the backends' time (× {scale['time_scale']}) but **not the proxy's own "
            "~10–50 ms per request**, so client-measured TTFTs of short waits are mostly proxy time. The *emulated* "
            "columns are the slow backend's own TTFT ÷ time scale: what the calibrated engine "
            f"({num(scale.get('slow_prefill_tps'), ',.0f')} tok/s prefill; a 30,000-token cold prompt ≈ "
            f"{num(30000 / scale['slow_prefill_tps'] if scale.get('slow_prefill_tps') else None, '.0f')} s) would take; "
            "they leave out the proxy and, in arm (a), the rejected attempt on fast, but they include the emulator's "
            "own real work on the request (tokenizing a 17–27k-token prompt takes tens of ms) magnified by 1 ÷ time "
            "scale, which is most of what the floor (e) shows. *Prefill model* = uncached prompt tokens ÷ the slow "
            "prefill rate: the calibrated prefill alone, no fixed cost.",
            "",
        ]
    clock = "server" if real else "emulated"
    rows = []
    for k, a in arms.items():
        row = [f"({k}) {a['label']}", str(a["escalated"]), num(a["median_s"]), num(a["p90_s"]),
               num(a["median_emulated_s"], ".3f" if real else ".2f"), num(a["p90_emulated_s"], ".3f" if real else ".2f")]
        if not real:
            row.append(num(a.get("median_prefill_model_s"), ".2f"))
        row += [str(a["failed_attempts_escalated"]), str(a["failed_attempts_total"]) if k != "e" else "–",
                str(a["client_errors"])]
        rows.append(row)
    header = ["arm", "escalated sessions", "median s (client)", "p90 s (client)", f"median s ({clock})",
              f"p90 s ({clock})"]
    if not real:
        header.append("median s (prefill model)")
    header += ["failed attempts, escalated turns", "failed attempts, all requests", "client errors"]
    lines += table(header, rows)
    lines += ["", "Ratios (of the medians; in brackets the median of per-session ratios):", ""]
    ratio_header = ["ratio", "client", clock] + ([] if real else ["prefill model"])
    lines += table(ratio_header, [
        [r["ratio"], f"{num(r['client_of_medians'], '.2f')}× ({num(r['client_paired_median'], '.2f')}×)",
         f"{num(r['emulated_of_medians'], '.2f')}× ({num(r['emulated_paired_median'], '.2f')}×)"]
        + ([] if real else [f"{num(r.get('prefill_model_of_medians'), '.1f')}×"])
        for r in ttft["ratios"]])
    sessions = sorted({s["conversation"] for a in arms.values() for s in a["samples"]})
    header = ["session", *(f"({k}) request / prompt / cached / client s / {clock} s" for k in arms)]
    body = []
    for conv in sessions:
        cells = [conv]
        for a in arms.values():
            s = next((x for x in a["samples"] if x["conversation"] == conv), None)
            cells.append("–" if s is None else f"{s['request']} / {num(s['prompt_tokens'], ',')} / "
                         f"{num(s['cached_tokens'], ',')} / {num(s['ttft_s'])} / "
                         f"{num(s['emulated_ttft_s'], '.3f' if real else '.2f')}")
        body.append(cells)
    lines += ["", "Per session:", "", *table(header, body)]
    d = arms.get("d")
    if d and d["samples"]:
        lines += ["", "What arm (d) still prefilled on its escalated turn: tokens new in that request (the last "
                  "reply and the new message, which no warm could know) against tokens a warm could have held:", ""]
        rows = []
        for s in d["samples"]:
            prompt, cached, new = s["prompt_tokens"] or 0, s["cached_tokens"] or 0, s["unwarmable_tokens"]
            uncached = prompt - cached
            rows.append([s["conversation"], f"{prompt:,}", f"{cached:,}", f"{uncached:,}", num(new, ","),
                         num(None if new is None else max(uncached - new, 0), ","), str(s["warms_landed"])])
        lines += table(["session", "prompt", "cached", "prefilled", "new in this request",
                         "warmable but not cached", "warms before"], rows)
        warmed = [s for s in d["samples"] if s["warms_landed"] and s["unwarmable_tokens"] is not None]
        if warmed:
            new = sum(s["unwarmable_tokens"] for s in warmed)
            prefilled = sum((s["prompt_tokens"] or 0) - (s["cached_tokens"] or 0) for s in warmed)
            lines += ["", f"On the {len(warmed)} escalated turn(s) that had a warm, {new:,} of the {prefilled:,} tokens "
                      f"still prefilled ({num(new / prefilled if prefilled else None, '.0%')}) were new in that request. "
                      "The floor (e) has those cached too, which no warm sent before the request can do: that "
                      "residual, not the warm, is what separates (d) from (e). A session whose history jumps past "
                      "the window in one request (a large tool result) has no earlier request to warm from."]
    return lines + [""]

"""The Markdown report of a results document (pure: dict in, text out).

Sections follow the issues: targets, escalated-turn TTFT across the arms, the closed-loop arm's
escalated turns, plugin cost and throughput, estimator accuracy in the replay, warm economics,
warms against live traffic on the slow group, then method and caveats. Every
number comes from the results document, so the report can be redrawn from
``bench-results.json`` alone (:func:`render`).

This module assembles the page (title, targets, figures, method); the result sections are in
``report_ttft`` and ``report_sections``, the Markdown cells in ``report_cells``.
"""

from __future__ import annotations

import re

from collections.abc import Mapping, Sequence
from typing import Any

from .report_cells import is_real, met, num, table
from .report_closed import closed_loop_section, interference_section
from .report_sections import accuracy_section, cost_section, economics_section
from .report_sweep import threshold_section
from .report_ttft import ttft_section

__all__ = ["render"]


def _targets(results: Mapping[str, Any]) -> list[str]:
    rows = []
    for t in results.get("targets", []):
        value = t["value"]
        shown = "–" if value is None else (f"{value:,.0f}" if abs(value) >= 100 else _digits(value, t["wanted"]))
        rows.append([t["target"], t["wanted"], shown, met(t["met"]), t.get("note", "")])
    return ["## Targets", "", *table(["target", "wanted", "value", "status", "note"], rows), ""]


def _digits(value: float, wanted: str) -> str:
    """``value`` to 3 significant digits, or as many more (up to 6) as it takes not to print the
    threshold in ``wanted`` itself (1.0347 against ``≤ 1.03`` shows ``1.035``, not ``1.03``)."""
    found = re.search(r"(\d+(?:\.\d+)?)\s*(%?)", wanted)
    limit = None if found is None else float(found.group(1)) / (100 if found.group(2) else 1)
    shown = f"{value:.3g}"
    for digits in range(3, 7):
        shown = f"{value:.{digits}g}"
        if limit is None or float(shown) != limit or value == limit:
            break
    return shown


def _think(meta: Mapping[str, Any]) -> str:
    """The replay's pause between a response and the next request, in words."""
    think = float(meta.get("replay", {}).get("think_time_s") or 0.0)
    if think <= 0:
        return "each request sent as soon as the one before returned (no think time)"
    return f"{think:g} s of think time (emulated) between a response and the next request"


def _method(results: Mapping[str, Any]) -> list[str]:
    meta = results["meta"]
    scale = meta["scale"]
    lines = ["## Method", ""]
    if meta.get("sessions"):
        replay = meta.get("replay", {})
        lines += [f"Sessions (replayed from the last request estimated below {replay.get('start_fraction', 0.5):.0%} "
                  "of the fast window, earlier turns sent as history in that first request, until "
                  f"{replay.get('turns_after_escalation', 1)} request(s) after the escalated one):", ""]
        lines += table(["session", "source", "api", "turns", "characters", "tools", "replay starts at request"],
                        [[s["id"], s["source"], s.get("api", "chat"), str(s["turns"]), f"{s['chars']:,}", str(s["tools"]),
                          str(s["replay_start"])] for s in meta["sessions"]])
        lines.append("")
    rates = ("real engines at their own speed, no time scaling" if is_real(results) else
             f"prefill fast {num(scale.get('fast_prefill_tps'), ',.0f')} / slow {num(scale.get('slow_prefill_tps'), ',.0f')} "
             f"tok/s, decode {num(scale.get('decode_tps'), ',.0f')} tok/s; time scale {scale['time_scale']}")
    lines += [
        f"- Scale `{scale['name']}`: fast window {scale['fast_window']:,}, slow {scale['slow_window']:,}; {rates}.",
        "- Every arm: groups `fast`/`slow`, `context_window_fallbacks: [{fast: [slow]}]`, `num_retries: 0`, "
        f"streamed requests with `max_tokens` {meta.get('replay', {}).get('max_tokens', 256)}, {_think(meta)}, "
        "session header `x-litellm-session-id`. Plugin arms: warm cooldown "
        "300 s × time scale (real seconds) and warm rate 120 per tenant per emulated minute (120 ÷ time scale a real minute), "
        "other settings default; (c) adds `KVWARM_WARM_AHEAD=0`; (c) and (d) add "
        "`KVWARM_REPLY_WARM=0` (open loop: a reply-warm of the backend's filler would warm nothing the next request "
        "sends); (f) keeps reply-warm on and is replayed closed-loop (section 1b). "
        "(b) adds `enable_pre_call_checks: true` and `model_info.max_input_tokens` = each window.",
        "- (e) is measured inside arm (d)'s run: each session's escalated request of arm (d), sent twice to "
        "`slow` through the same proxy; the second send is reported. (ef) likewise inside (f)'s run, on the "
        "escalated request (f)'s client sent.",
        *(_backend_lines(results) if is_real(results) else [
            "- Emulated vLLM 0.32 behaviour: a prompt over the window is rejected (HTTP 400, \"maximum context "
            "length\"), prompt + `max_tokens` over it is clamped silently.",
            "- The same benchmark on two real vLLM CPU servers (fast 4,096 / slow 16,384, a tiny model): "
            "`python -m litellm_kvwarm.lab.bench --scale vllm`, report in `docs/vllm/benchmarks.md`.",
        ]),
        f"- Run: `{meta['command']}`, {meta.get('wall_s', 0):.0f} s wall, started {meta.get('started_utc')}.",
    ]
    return lines + [""]


def _backend_lines(results: Mapping[str, Any]) -> list[str]:
    meta = results["meta"]
    b = meta.get("backends") or {}
    fast, slow = b.get("fast") or {}, b.get("slow") or {}
    env = " ".join(f"`{k}={v}`" for k, v in (b.get("plugin_env") or {}).items())
    return [
        f"- Backends: two real {b.get('engine', 'vLLM')} servers (`{fast.get('served')}`, window "
        f"{num(fast.get('window'), ',')}, core {fast.get('core')}; `{slow.get('served')}`, window "
        f"{num(slow.get('window'), ',')}, core {slow.get('core')}) serving the {b.get('model', 'tiny model')}, "
        "`--enable-prefix-caching --enable-prompt-tokens-details --enforce-eager`, started once for the run "
        f"({num(b.get('startup_s'), '.0f')} s). Before each arm both engines are waited idle and their prefix caches "
        "emptied (`POST /reset_prefix_cache`); each arm gets fresh recording taps "
        "(`litellm_kvwarm/lab/bench/tap.py`: a pass-through that logs status, usage and TTFT of every completion "
        "in the emulator's request-log shape) and a fresh proxy. vLLM 0.32 rejects a prompt that alone exceeds "
        "the window (HTTP 400) and clamps prompt + `max_tokens` over it silently.",
        f"- Plugin arms add {env} (as the real-vLLM tier's proxies: vLLM answers `/v1/models` and `/tokenize` "
        "from the same busy core as its engine). Time scale 1: the warm cooldown is the default 300 s.",
        "- Sessions whose requests to `slow` would not fit its 16,384-token window are skipped "
        "(`litellm_kvwarm/lab/bench/sessions.py`). The model's weights are random: output is noise, decode is fast, "
        "and prefill of a few thousand tokens takes tenths of a second on one core, so absolute times are small; "
        "the ratios and the cached fractions are what this scale shows about real vLLM.",
        "- Read the *server* columns: the client, the proxy, the taps and both engines share the machine's cores, "
        "so the proxy's share of a client-measured TTFT (tens of ms to about a second here) is of the same size as "
        "the prefill itself, and sub-second client ratios mostly compare proxy noise.",
    ]


def render(results: Mapping[str, Any], figures: Sequence[str] = ()) -> str:
    """The whole Markdown page for ``results`` (a ``bench-results.json`` document), with one image
    line per name in ``figures`` (files beside the page) after the targets.

    Raises:
        KeyError: ``results`` lacks ``meta`` or a field a present section needs.
    """
    meta = results["meta"]
    m = meta["machine"]
    lines = [
        "# Benchmarks", "",
        "What warm-ahead saves on the turn that escalates, and what the plugin costs, against what an operator "
        "would configure in LiteLLM instead, measured side by side in one run on real conversations "
        f"({meta['data']}).", "",
        f"Regenerate everything on this page (results, charts, this file): `{meta['command']}` "
        f"({meta.get('wall_s', 0) / 60:.1f} min here). Machine: {m['cpu']}, {m['cores']} cores, {m['memory_gib']} GiB, "
        f"{m['os']}, Python {m['python']}, LiteLLM {meta['versions'].get('litellm')}"
        + (f", backends {meta['backends']['engine']} (a tiny model, dummy weights)" if meta.get("backends") else "")
        + ". Machine-readable results: [bench-results.json](bench-results.json). A benchmark reports; nothing here "
        "fails CI.", "",
    ]
    if is_real(results):
        lines[0] = "# Benchmarks on real vLLM (`--scale vllm`)"
    lines += _targets(results)
    for name in figures:
        lines += [f"![{name}]({name})", ""]
    for section in (ttft_section, closed_loop_section, cost_section, accuracy_section, economics_section,
                    interference_section, threshold_section, _method):
        lines += section(results)
    return "\n".join(lines).rstrip() + "\n"

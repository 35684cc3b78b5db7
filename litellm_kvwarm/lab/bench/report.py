"""The Markdown report of a results document (pure: dict in, text out).

Sections follow the issue: targets, escalated-turn TTFT across the five arms, plugin cost and
throughput, estimator accuracy in the replay, warm economics, then method and caveats. Every
number comes from the results document, so the report can be redrawn from
``bench-results.json`` alone (:func:`render`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["render"]


def _f(value: Any, spec: str = ".3f", suffix: str = "") -> str:
    if value is None:
        return "–"
    return f"{format(value, spec)}{suffix}"


def _met(flag: bool | None) -> str:
    return {True: "**met**", False: "**not met**", None: "not measured"}[flag]


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|",
            *("| " + " | ".join(r) + " |" for r in rows)]


def _real(results: Mapping[str, Any]) -> bool:
    """A real engine (``--scale vllm``): no calibrated prefill rate, no time scaling, server-side clocks."""
    return results["meta"]["scale"].get("slow_prefill_tps") is None


def _targets(results: Mapping[str, Any]) -> list[str]:
    rows = []
    for t in results.get("targets", []):
        value = t["value"]
        shown = "–" if value is None else (f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}")
        rows.append([t["target"], t["wanted"], shown, _met(t["met"]), t.get("note", "")])
    return ["## Targets", "", *_table(["target", "wanted", "value", "status", "note"], rows), ""]


def _ttft(results: Mapping[str, Any]) -> list[str]:
    ttft = results.get("ttft")
    if not ttft:
        return []
    scale = results["meta"]["scale"]
    arms = ttft["arms"]
    real = _real(results)
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
            f"adds one local hop: {_f(overhead.get('overhead_median_s') and overhead['overhead_median_s'] * 1e3, '.1f')} "
            "ms on a tiny request in this run (median, "
            f"{_f(overhead.get('direct_median_s') and overhead['direct_median_s'] * 1e3, '.1f')} ms direct vs "
            f"{_f(overhead.get('tap_median_s') and overhead['tap_median_s'] * 1e3, '.1f')} ms through the tap).",
            "",
        ]
    else:
        lines += [
            f"Time scaling compresses the backends' time (× {scale['time_scale']}) but **not the proxy's own "
            "~10–50 ms per request**, so client-measured TTFTs of short waits are mostly proxy time. The *emulated* "
            "columns are the slow backend's own TTFT ÷ time scale: what the calibrated engine "
            f"({_f(scale.get('slow_prefill_tps'), ',.0f')} tok/s prefill; a 30,000-token cold prompt ≈ "
            f"{_f(30000 / scale['slow_prefill_tps'] if scale.get('slow_prefill_tps') else None, '.0f')} s) would take; "
            "they leave out the proxy and, in arm (a), the rejected attempt on fast, but they include the emulator's "
            "own real work on the request (tokenizing a 17–27k-token prompt takes tens of ms) magnified by 1 ÷ time "
            "scale, which is most of what the floor (e) shows. *Prefill model* = uncached prompt tokens ÷ the slow "
            "prefill rate: the calibrated prefill alone, no fixed cost.",
            "",
        ]
    clock = "server" if real else "emulated"
    rows = []
    for k, a in arms.items():
        row = [f"({k}) {a['label']}", str(a["escalated"]), _f(a["median_s"]), _f(a["p90_s"]),
               _f(a["median_emulated_s"], ".3f" if real else ".2f"), _f(a["p90_emulated_s"], ".3f" if real else ".2f")]
        if not real:
            row.append(_f(a.get("median_prefill_model_s"), ".2f"))
        row += [str(a["failed_attempts_escalated"]), str(a["failed_attempts_total"]) if k != "e" else "–",
                str(a["client_errors"])]
        rows.append(row)
    header = ["arm", "escalated sessions", "median s (client)", "p90 s (client)", f"median s ({clock})",
              f"p90 s ({clock})"]
    if not real:
        header.append("median s (prefill model)")
    header += ["failed attempts, escalated turns", "failed attempts, all requests", "client errors"]
    lines += _table(header, rows)
    lines += ["", "Ratios (of the medians; in brackets the median of per-session ratios):", ""]
    ratio_header = ["ratio", "client", clock] + ([] if real else ["prefill model"])
    lines += _table(ratio_header, [
        [r["ratio"], f"{_f(r['client_of_medians'], '.2f')}× ({_f(r['client_paired_median'], '.2f')}×)",
         f"{_f(r['emulated_of_medians'], '.2f')}× ({_f(r['emulated_paired_median'], '.2f')}×)"]
        + ([] if real else [f"{_f(r.get('prefill_model_of_medians'), '.1f')}×"])
        for r in ttft["ratios"]])
    sessions = sorted({s["conversation"] for a in arms.values() for s in a["samples"]})
    header = ["session", *(f"({k}) request / prompt / cached / client s / {clock} s" for k in arms)]
    body = []
    for conv in sessions:
        cells = [conv]
        for a in arms.values():
            s = next((x for x in a["samples"] if x["conversation"] == conv), None)
            cells.append("–" if s is None else f"{s['request']} / {_f(s['prompt_tokens'], ',')} / "
                         f"{_f(s['cached_tokens'], ',')} / {_f(s['ttft_s'])} / "
                         f"{_f(s['emulated_ttft_s'], '.3f' if real else '.2f')}")
        body.append(cells)
    lines += ["", "Per session:", "", *_table(header, body)]
    d = arms.get("d")
    if d and d["samples"]:
        lines += ["", "What arm (d) still prefilled on its escalated turn: tokens new in that request (the last "
                  "reply and the new message, which no warm could know) against tokens a warm could have held:", ""]
        rows = []
        for s in d["samples"]:
            prompt, cached, new = s["prompt_tokens"] or 0, s["cached_tokens"] or 0, s["unwarmable_tokens"]
            uncached = prompt - cached
            rows.append([s["conversation"], f"{prompt:,}", f"{cached:,}", f"{uncached:,}", _f(new, ","),
                         _f(None if new is None else max(uncached - new, 0), ","), str(s["warms_landed"])])
        lines += _table(["session", "prompt", "cached", "prefilled", "new in this request",
                         "warmable but not cached", "warms before"], rows)
        warmed = [s for s in d["samples"] if s["warms_landed"] and s["unwarmable_tokens"] is not None]
        if warmed:
            new = sum(s["unwarmable_tokens"] for s in warmed)
            prefilled = sum((s["prompt_tokens"] or 0) - (s["cached_tokens"] or 0) for s in warmed)
            lines += ["", f"On the {len(warmed)} escalated turn(s) that had a warm, {new:,} of the {prefilled:,} tokens "
                      f"still prefilled ({_f(new / prefilled if prefilled else None, '.0%')}) were new in that request. "
                      "The floor (e) has those cached too, which no warm sent before the request can do: that "
                      "residual, not the warm, is what separates (d) from (e). A session whose history jumps past "
                      "the window in one request (a large tool result) has no earlier request to warm from."]
    return lines + [""]


def _cost(results: Mapping[str, Any]) -> list[str]:
    cost, tp = results.get("cost"), results.get("throughput")
    if not cost and not tp:
        if _real(results):
            return ["## 2. Plugin cost", "", "Not measured at this scale: the plugin's CPU per request and the proxy's "
                    "throughput with and without it do not depend on the backend (the throughput benchmark runs "
                    "against zero-latency emulators at either scale). See the emulator scale's report, "
                    "`docs/benchmarks.md`.", ""]
        return []
    lines = ["## 2. Plugin cost", ""]
    if cost:
        lines += ["Per-request CPU of the plugin's pure path (estimate → route → clamp; the clamp hook reuses the "
                  "pre-call estimate, as `hook.py` does), in-process, against `litellm.token_counter` on the same bodies "
                  "(ShareGPT text; `+tools` adds the 30 BFCL tool schemas of the largest long-context session). "
                  "CPU = `time.process_time_ns`, one call per sample.", ""]
        rows = [[c["case"], f"{c['token_counter_tokens']:,}", _f(c["plugin"]["cpu_us"]["p50"], ".1f"),
                 _f(c["plugin"]["cpu_us"]["p99"], ".1f"), _f(c["plugin"]["wall_us"]["p99"], ".1f"),
                 _f(c["token_counter"]["cpu_us"]["p50"], ",.0f"), _f(c["token_counter"]["cpu_us"]["p99"], ",.0f"),
                 f"{_f(c['cpu_p50_speedup'], ',.0f')}×", f"{c['plugin_repeats']} / {c['token_counter_repeats']}"]
                for c in cost["cases"]]
        lines += _table(["request", "tokens (token_counter)", "plugin CPU p50 µs", "plugin CPU p99 µs",
                         "plugin wall p99 µs", "token_counter CPU p50 µs", "token_counter CPU p99 µs",
                         "cheaper (p50)", "samples plugin / token_counter"], rows)
        lines.append("")
    if tp:
        o = tp["options"]
        lines += [f"End to end: two proxies, identical but for the plugin, in front of the same zero-latency "
                  f"emulators (`--time-scale 0`); {o['rounds']} rounds × {o['requests_per_round']} requests per arm at "
                  f"concurrency {o['concurrency']}, the order alternating each round; ShareGPT prefixes of about "
                  f"{', '.join(f'{s:,}' for s in o['prompt_sizes'])} tokens (below the warm threshold), "
                  f"`max_tokens` {o['max_tokens']}, not streamed. Client, proxies and emulators share the machine's "
                  "cores.", ""]
        rows = [[arm, str(a["requests"]), str(a["errors"]), _f(a["throughput_rps"], ".1f"),
                 _f(a["latency_ms"]["p50"], ".1f"), _f(a["latency_ms"]["p99"], ".1f"),
                 _f(a["overhead_ms"]["p50"], ".1f")] for arm, a in tp["arms"].items()]
        lines += _table(["proxy", "requests", "errors", "throughput req/s", "latency p50 ms", "latency p99 ms",
                         "LiteLLM overhead header p50 ms"], rows)
        lines += ["", f"Throughput with the plugin ÷ without: **{_f(tp['throughput_ratio'], '.3f')}** (all rounds); "
                  f"per round {', '.join(_f(r, '.2f') for r in tp.get('round_ratios', []))}, median "
                  f"{_f(tp.get('round_ratio_median'), '.2f')}; latency p50 difference "
                  f"{_f(tp['latency_p50_delta_ms'], '+.1f')} ms. On 2 shared cores single rounds swing by 2× either "
                  "way, so a ratio a few percent from 1 is within this machine's noise.", ""]
        gc_rows = [[arm, str(g["count"]), _f(g["total_s"], ".2f"), _f(g["max_s"], ".2f"),
                    _f(100 * g["share_of_wall"] if g.get("share_of_wall") is not None else None, ".0f", "%")]
                   for arm, a in tp["arms"].items() if (g := a.get("gc_gen2"))]
        if gc_rows:
            lines += ["Full (generation-2) garbage collections inside the measured batches, logged in each proxy by "
                      "the benchmark's `gc_probe` (`sitecustomize`, both proxies alike). LiteLLM's heap makes each a "
                      "stop-the-world pause for every request in flight; where one lands decides a batch's throughput "
                      "more than the plugin does. LiteLLM's own `PYTHON_GC_THRESHOLD` tunes how often they run.", ""]
            lines += _table(["proxy", "gen-2 collections", "paused s", "longest s", "share of batch wall"], gc_rows)
            lines.append("")
    return lines


def _accuracy(results: Mapping[str, Any]) -> list[str]:
    acc = results.get("accuracy")
    if not acc:
        return []
    truth = ("the tiny model's own BPE tokenizer (vocabulary 8,192, trained on ShareGPT text) under its ChatML "
             "template: no family the estimator was fitted on, and the plugin (served names `fast-tiny`/`slow-tiny`) "
             "uses its generic weights; the calibration study is `docs/estimator.md`'s" if _real(results) else
             "the emulator: tiktoken cl100k under a Qwen2.5-style template, not a production tokenizer; the "
             "calibration study is [estimator.md](estimator.md)'s")
    lines = ["## 3. Estimator accuracy in the replay", "",
             "Both estimates of `litellm_kvwarm.tokens.estimate_request` (as installed when the run was made) for "
             f"every replayed request, counted once, against the backend's own `usage.prompt_tokens` ({truth}).", ""]
    rows = []
    for name, a in acc.items():
        s, r = a["safe_over_truth"], a["routing_over_truth"]
        rows.append([name, str(a["requests"]), f"{_f(s['min'], '.2f')} / {_f(s['p50'], '.2f')} / {_f(s['max'], '.2f')}",
                     _f(a["safe_below_truth_share"], ".1%"),
                     f"{_f(r['min'], '.2f')} / {_f(r['p50'], '.2f')} / {_f(r['max'], '.2f')}",
                     _f(a["routing_above_truth_share"], ".1%")])
    lines += _table(["requests", "n", "safe ÷ truth min / p50 / max", "safe below truth",
                     "routing ÷ truth min / p50 / max", "routing above truth"], rows)
    lowest = acc["all"]["lowest_safe"]
    if lowest and lowest[0]["safe"] < lowest[0]["truth"]:
        lines += ["", "Lowest safe estimates: " + "; ".join(
            f"{x['conversation']} request {x['request']}: safe {x['safe']:,}, routing {x['routing']:,}, "
            f"backend {x['truth']:,}" for x in lowest) + "."]
    return lines + [""]


def _economics(results: Mapping[str, Any]) -> list[str]:
    eco = results.get("economics")
    if not eco:
        return []
    t = eco["totals"]
    lines = ["## 4. Warm economics (arm d)", "",
             f"{t['warms_fired']} warms fired over {t['sessions']} sessions ({t['warms_failed']} failed); "
             f"{t['escalations_that_found_a_warm']} of {t['escalated_sessions']} escalations found a warm. Warms "
             f"prefilled {t['warm_prefilled_tokens']:,} tokens on slow; the escalated prompts reused "
             f"{t['reused_tokens']:,}; **{t['unpaid_tokens']:,} never paid off** ({_f(t['unpaid_share'], '.0%')}), "
             f"{t['unpaid_in_sessions_that_never_escalated']:,} of them in sessions that never escalated.", ""]
    rows = [[s["conversation"], s["source"], "yes" if s["escalated"] else "no", str(s["warms"]),
             f"{s['warm_prefilled_tokens']:,}", f"{s['reused_tokens']:,}", "yes" if s["found_warm"] else "no",
             f"{s['unpaid_tokens']:,}"] for s in eco["sessions"]]
    lines += _table(["session", "source", "escalated", "warms", "warm prefill tokens", "reused by escalated turn",
                     "found a warm", "never paid off"], rows)
    return lines + [""]


def _method(results: Mapping[str, Any]) -> list[str]:
    meta = results["meta"]
    scale = meta["scale"]
    lines = ["## Method", ""]
    if meta.get("sessions"):
        replay = meta.get("replay", {})
        lines += [f"Sessions (replayed from the last request estimated below {replay.get('start_fraction', 0.5):.0%} "
                  "of the fast window, earlier turns sent as history in that first request, until "
                  f"{replay.get('turns_after_escalation', 1)} request(s) after the escalated one):", ""]
        lines += _table(["session", "source", "turns", "characters", "tools", "replay starts at request"],
                        [[s["id"], s["source"], str(s["turns"]), f"{s['chars']:,}", str(s["tools"]),
                          str(s["replay_start"])] for s in meta["sessions"]])
        lines.append("")
    rates = ("real engines at their own speed, no time scaling" if _real(results) else
             f"prefill fast {_f(scale.get('fast_prefill_tps'), ',.0f')} / slow {_f(scale.get('slow_prefill_tps'), ',.0f')} "
             f"tok/s, decode {_f(scale.get('decode_tps'), ',.0f')} tok/s; time scale {scale['time_scale']}")
    lines += [
        f"- Scale `{scale['name']}`: fast window {scale['fast_window']:,}, slow {scale['slow_window']:,}; {rates}.",
        "- Every arm: groups `fast`/`slow`, `context_window_fallbacks: [{fast: [slow]}]`, `num_retries: 0`, "
        f"streamed requests with `max_tokens` {meta.get('replay', {}).get('max_tokens', 256)}, session header `x-litellm-session-id`. Plugin arms: warm cooldown "
        "300 s × time scale (real seconds), other settings default; (c) adds `KVWARM_WARM_AHEAD=0`. "
        "(b) adds `enable_pre_call_checks: true` and `model_info.max_input_tokens` = each window.",
        "- (e) is measured inside arm (d)'s run: each session's escalated request of arm (d), sent twice to "
        "`slow` through the same proxy; the second send is reported.",
        *(_backend_lines(results) if _real(results) else [
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
        f"{_f(fast.get('window'), ',')}, core {fast.get('core')}; `{slow.get('served')}`, window "
        f"{_f(slow.get('window'), ',')}, core {slow.get('core')}) serving the {b.get('model', 'tiny model')}, "
        "`--enable-prefix-caching --enable-prompt-tokens-details --enforce-eager`, started once for the run "
        f"({_f(b.get('startup_s'), '.0f')} s). Before each arm both engines are waited idle and their prefix caches "
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
    if _real(results):
        lines[0] = "# Benchmarks on real vLLM (`--scale vllm`)"
    lines += _targets(results)
    for name in figures:
        lines += [f"![{name}]({name})", ""]
    for section in (_ttft, _cost, _accuracy, _economics, _method):
        lines += section(results)
    return "\n".join(lines).rstrip() + "\n"

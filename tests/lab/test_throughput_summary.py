"""The throughput benchmark's pure summary and its targets: CPU per request, added p50/p99
latency, pooled and per-round throughput ratios, from hand-made batches."""

from __future__ import annotations

import pytest

from litellm_kvwarm.lab.bench.report_sections import cost_section
from litellm_kvwarm.lab.bench.targets import evaluate_targets
from litellm_kvwarm.lab.bench.throughput import summarize


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

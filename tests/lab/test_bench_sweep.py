"""The warm threshold sweep (bench/sweep.py, report_sweep.py): arm f with the threshold set, the per-threshold
summary of what warms cost and saved, its report section, chart and command-line option. Pure; the replay itself
runs in the full benchmark (``python -m litellm_kvwarm.lab.bench``)."""

from __future__ import annotations

import pytest

from litellm_kvwarm.lab.bench.__main__ import bench_options, build_parser
from litellm_kvwarm.lab.bench.arms import ARMS, arm_config
from litellm_kvwarm.lab.bench.report_sweep import threshold_chart, threshold_section
from litellm_kvwarm.lab.bench.scales import SCALES
from litellm_kvwarm.lab.bench.sweep import DEFAULT_THRESHOLDS, summarize_sweep, sweep_arm
from litellm_kvwarm.lab.demo import TurnRow
from litellm_kvwarm.lab.processes import BackendSpec

SCALE = SCALES["emulator"]


def _row(conv, request, group, prompt, cached, warms=(), source="sharegpt", server_ttft_s=None):
    row = TurnRow(arm="plugin-reply-warm", conversation=conv, source=source, request=request, turn=str(request),
                  messages=2 * request, estimate_routing=prompt, estimate_safe=prompt, max_tokens_requested=256,
                  group=group, prompt_tokens=prompt, cached_tokens=cached, server_ttft_s=server_ttft_s)
    row.warms = [{"status": 200, "prompt_tokens": p, "cached_tokens": c} for p, c in warms]
    return row


def test_the_sweep_arm_is_arm_f_with_the_threshold_in_the_plugin_env():
    assert dict(sweep_arm(0.6, 0).extra_env) == {"KVWARM_WARM_THRESHOLD": "0.6", "KVWARM_WARM_LEAD_STEPS": "0"}
    arm = sweep_arm(0.8)
    assert (arm.key, arm.closed_loop, arm.reply_warm, arm.warm_ahead) == ("f", True, True, True)
    env = arm.env(SCALE.time_scale)
    assert env["KVWARM_WARM_THRESHOLD"] == "0.8"
    assert {k: v for k, v in env.items() if k != "KVWARM_WARM_THRESHOLD"} == ARMS["f"].env(SCALE.time_scale)
    config = arm_config(arm, BackendSpec("fast-8b", "http://f/v1"), BackendSpec("slow-27b", "http://s/v1"),
                        fast_window=16_384, slow_window=131_072, time_scale=SCALE.time_scale)
    assert config["environment_variables"]["KVWARM_WARM_THRESHOLD"] == "0.8"
    assert "KVWARM_WARM_THRESHOLD" not in ARMS["f"].env(SCALE.time_scale)  # arm f itself runs the default
    with pytest.raises(ValueError):
        sweep_arm(1.5)


def test_a_higher_threshold_that_skips_a_session_which_never_escalates_counts_less_waste():
    low = [  # warmed at 0.6: a session that escalates, and one that ends at 84% of the window
        _row("esc", 1, "fast", 10_000, 0, warms=[(10_000, 0)]),
        _row("esc", 2, "fast", 13_000, 0, warms=[(13_000, 10_000)]),
        _row("esc", 3, "slow", 16_500, 12_992, server_ttft_s=0.02),
        _row("idle", 1, "fast", 10_500, 0, warms=[(10_500, 0)]),
        _row("idle", 2, "fast", 13_800, 0, warms=[(13_800, 10_496)]),
    ]
    high = [  # at 0.8 only the escalating session is warmed, once, later
        _row("esc", 1, "fast", 10_000, 0),
        _row("esc", 2, "fast", 13_000, 0, warms=[(13_000, 0)]),
        _row("esc", 3, "slow", 16_500, 12_992, server_ttft_s=0.03),
        _row("idle", 1, "fast", 10_500, 0),
        _row("idle", 2, "fast", 13_800, 0),
    ]
    out = summarize_sweep({(0.8, 0): high, (0.6, 0): low, (0.6, 3): high}, SCALE, default=0.6, default_lead=0)
    assert [(p["threshold"], p["lead_steps"]) for p in out["points"]] == [(0.6, 3), (0.6, 0), (0.8, 0)]
    assert out["default"] == 0.6 and out["default_lead"] == 0
    lead, at_low, at_high = out["points"]
    assert lead["unpaid_share_all"] == at_high["unpaid_share_all"]
    assert (at_low["warms"], at_low["warm_prefill_tokens"], at_low["never_escalated_warm_prefill_tokens"]) == (4, 26_804, 13_804)
    assert at_low["unpaid_tokens"] == 13_804 + 8 and at_low["unpaid_share_all"] == pytest.approx(13_812 / 26_804)
    assert (at_high["warms"], at_high["warm_prefill_tokens"], at_high["unpaid_share_all"]) == (1, 13_000, pytest.approx(8 / 13_000))
    assert at_high["escalated"] == 1 and at_high["sessions"] == 2 and at_high["prefilled_tokens"] == 16_500 - 12_992
    assert at_high["median_prefill_model_s"] == pytest.approx(3_508 / SCALE.slow_prefill_tps)
    assert at_low["median_emulated_ttft_sharegpt_s"] == pytest.approx(0.02 / SCALE.time_scale)
    text = "\n".join(threshold_section({"threshold_sweep": out}))
    assert "## 6. The warm threshold" in text and "`KVWARM_WARM_THRESHOLD`" in text
    assert "| 0.6 (default) | 1 of 2 | 4 | 26,804 | 13,804 | 51.5% |" in text
    assert "| 0.6, lead 3 steps | 1 of 2 | 1 | 13,000 | 0 | 0.1% |" in text
    assert "| 0.8 | 1 of 2 | 1 | 13,000 | 0 | 0.1% |" in text
    assert threshold_section({}) == [] and threshold_section({"threshold_sweep": {"points": []}}) == []


def test_the_chart_draws_one_point_per_threshold(tmp_path):
    pytest.importorskip("matplotlib")
    from litellm_kvwarm.lab.bench.figures import _plt, _save

    points = [{"threshold": t, "unpaid_share_all": u, "prefilled_tokens": p}
              for t, u, p in ((0.6, 0.135, 52_591), (0.8, 0.05, 60_000), (0.9, 0.02, 90_000))]
    results = {"meta": {}, "threshold_sweep": {"default": 0.6, "points": points}}
    path = threshold_chart(results, tmp_path / "bench-threshold-old.png", _plt, _save)  # results without lead steps
    assert path is not None and path.stat().st_size > 10_000
    points = [dict(p, lead_steps=0) for p in points] + [{"threshold": 0.6, "lead_steps": 3, "unpaid_share_all": 0.133,
                                                         "prefilled_tokens": 52_000}]
    results = {"meta": {}, "threshold_sweep": {"default": 0.6, "default_lead": 0, "points": points}}
    path = threshold_chart(results, tmp_path / "bench-threshold.png", _plt, _save)
    assert path is not None and path.stat().st_size > 10_000
    assert threshold_chart({"meta": {}}, tmp_path / "none.png", _plt, _save) is None


def _options(*argv: str):
    parser = build_parser()
    return bench_options(parser, parser.parse_args(list(argv)), list(argv))


def test_the_full_emulator_run_sweeps_and_the_quick_the_vllm_and_the_interference_runs_do_not(capsys):
    assert DEFAULT_THRESHOLDS == (0.7, 0.8, 0.9) and _options().threshold_sweep == DEFAULT_THRESHOLDS
    assert _options("--thresholds", "0.75,0.95").threshold_sweep == (0.75, 0.95)
    assert _options("--thresholds", "").threshold_sweep == ()
    assert _options("--thresholds", "0.9, 0.8,0.9,").threshold_sweep == (0.8, 0.9)  # spaces, repeats, a trailing comma
    for argv in (("--quick",), ("--scale", "vllm"), ("--interference-only",)):
        assert _options(*argv).threshold_sweep == (), argv
    for bad, says in (("0.7,x", "takes fractions separated by commas, got '0.7,x'"),
                      ("0,0.8", "must be fractions of the window in (0, 1], got '0,0.8'"),
                      ("1.2", "must be fractions of the window in (0, 1], got '1.2'"),
                      ("nan", "must be fractions of the window in (0, 1], got 'nan'")):
        with pytest.raises(SystemExit):
            _options("--thresholds", bad)
        assert says in capsys.readouterr().err, bad


def test_the_waste_target_names_each_threshold_s_share():
    from litellm_kvwarm.lab.bench.targets import evaluate_targets

    results = {"meta": {"scale": {"slow_prefill_tps": 750.0}},
               "closed_loop": {"f": {"totals": {"unpaid_share_all": 0.136, "unpaid_tokens": 4_740, "warm_prefill_tokens": 124_081,
                                                "turns": 9, "never_escalated_warm_prefill_tokens": 14_114,
                                                "never_escalated_conversations": 1}}},
               "threshold_sweep": {"default": 0.6, "points": [{"threshold": 0.6, "unpaid_share_all": 0.136},
                                                              {"threshold": 0.9, "unpaid_share_all": 0.021}]}}
    target = {t["target"]: t for t in evaluate_targets(results)}["(f) warm prefill that never paid off ≤ 10% of all warm prefill"]
    assert target["value"] == 0.136 and target["met"] is False
    assert target["note"].endswith("by KVWARM_WARM_THRESHOLD (section 6): 0.6 13.6%, 0.9 2.1%")

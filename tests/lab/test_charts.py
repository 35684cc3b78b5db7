import json
from pathlib import Path

from litellm_kvwarm.lab.charts import draw, main

DEMO = Path(__file__).resolve().parents[2] / "docs" / "demo-run.json"


def test_chart_of_committed_demo_run_is_a_png(tmp_path):
    out = draw(json.loads(DEMO.read_text()), tmp_path / "chart.png")
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000


def test_chart_of_a_run_where_one_conversation_never_escalated_in_one_arm(tmp_path):
    """Every ``kvwarm demo`` run draws its chart, so a conversation without an escalated turn in an arm
    (no marker, no bar there) or a failed request (no usage) must not stop it."""
    demo = json.loads(DEMO.read_text())
    item = demo["comparison"]["rows"][0]
    item.update(warm_off=None, ratio=None, server_ratio=None, below_target_because="no request was served by slow")
    demo["arms"][0]["rows"][0]["prompt_tokens"] = demo["arms"][0]["rows"][0]["cached_tokens"] = None
    demo["comparison"]["rows"][1]["warm_on"] = None
    data = draw(demo, tmp_path / "deep" / "chart.png").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000


def test_committed_demo_run_meets_the_target_where_a_warm_could_fire():
    demo = json.loads(DEMO.read_text())
    rows = {r["conversation"]: r for r in demo["comparison"]["rows"]}
    sharegpt = [r for r in rows.values() if r["source"] == "sharegpt"]
    # issue 14's bar for an escalated turn: >= 80% of its prompt cached (the Messages replay's last warm
    # landed at 12.6k of a 16.1k-token escalated turn: 89%)
    assert sharegpt and all(r["server_ratio"] >= 5 and r["warm_on"]["cached_fraction"] >= 0.8 for r in sharegpt)
    assert all(r["warm_off"]["cached_fraction"] < 0.01 for r in rows.values())


def test_cli_usage_error():
    assert main([]) == 2

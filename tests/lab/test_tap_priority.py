"""The tap logs each request's top-level ``priority`` as the emulator does (0 when absent), and
``start_emulator`` passes the emulator's scheduling and template flags (``scheduling_policy=``,
``max_num_batched_tokens=``, ``chat_template_mode=``). Real processes: an emulator behind a tap.

Regression: the tap logged ``priority: 0`` for every request, and ``start_emulator`` refused the
three flags as unknown."""

from __future__ import annotations

import httpx
import pytest

from litellm_kvwarm.lab.processes import start_emulator, start_tap

pytestmark = pytest.mark.e2e

MODEL = "tap-priority"
WINDOW = 4_096


@pytest.mark.parametrize("policy, statuses", [
    pytest.param("priority", [200, 200, 200], id="priority-policy-serves-all"),
    pytest.param("fcfs", [200, 400, 200], id="fcfs-refuses-nonzero-priority"),
])
def test_tap_logs_the_request_priority_as_the_emulator(tmp_path, policy, statuses):
    emulator = start_emulator(MODEL, WINDOW, workdir=tmp_path, time_scale=0, block_size=16,
                              scheduling_policy=policy, max_num_batched_tokens=256, chat_template_mode="qwen3")
    try:
        tap = start_tap(emulator, "prio", workdir=tmp_path)
        try:
            with httpx.Client(timeout=60, trust_env=False) as client:
                for extra in ({}, {"priority": 7}, {"priority": 0}):
                    client.post(tap.base_url + "/v1/chat/completions", json={
                        "model": MODEL, "messages": [{"role": "user", "content": "hello there"}],
                        "max_tokens": 4, **extra})
                tapped = client.get(tap.base_url + "/emulator/requests").json()["requests"]
                own = client.get(emulator.base_url + "/emulator/requests").json()["requests"]
                reply = client.post(emulator.base_url + "/v1/chat/completions", json={
                    "model": MODEL, "messages": [{"role": "user", "content": "think"}], "max_tokens": 40}).json()
        finally:
            tap.stop()
    finally:
        emulator.stop()
    assert [e["priority"] for e in tapped] == [0, 7, 0]
    assert [e["priority"] for e in own] == [0, 7, 0]
    assert [e["status"] for e in tapped] == [e["status"] for e in own] == statuses
    # --chat-template-mode qwen3 reached the emulator: its replies carry reasoning
    assert reply["choices"][0]["message"].get("reasoning_content")

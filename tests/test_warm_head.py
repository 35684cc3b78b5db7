"""A session's head (:mod:`litellm_kvwarm.warm_head`) and its warm on first sight (the warm gate):
an agent session that jumps past the window in one step still finds its head cached."""

from __future__ import annotations

from dataclasses import replace

import pytest

from litellm_kvwarm import identity
from test_warm_gate import Captured  # the runner stand-in that keeps what the gate submits
from litellm_kvwarm.config import Settings
from litellm_kvwarm.tokens import estimate_request
from litellm_kvwarm.warm import WarmOutcome
from litellm_kvwarm.warm_gate import WarmCandidate, WarmGate
from litellm_kvwarm.warm_head import head_items, head_request

SECRET = b"h" * 32
TOOLS = [{"type": "function", "function": {"name": f"tool_{i}", "description": "Reads a file of the repository. " * 12,
                                            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}
         for i in range(24)]
SYSTEM = "You are a coding agent working in a large repository. " * 40


def agent_chat(tool_result_chars: int = 40) -> dict:
    return {
        "model": "fast", "max_tokens": 256, "tools": TOOLS,
        "messages": [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": "Fix the failing test."},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "tool_0", "arguments": "{\"path\": \"a.py\"}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "x = 1\n" * (tool_result_chars // 6)},
        ],
    }


@pytest.mark.parametrize(("kind", "items", "expected"), [
    ("chat", [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}, {"role": "assistant", "content": "a"},
              {"role": "user", "content": "u2"}], 2),
    ("chat", [{"role": "developer", "content": "d"}, {"role": "system", "content": "s"}, {"role": "user", "content": "u"},
              {"role": "assistant", "content": "a"}], 3),
    ("chat", [{"role": "system", "content": "s"}, {"role": "user", "content": "only turn"}], None),  # its own head
    ("chat", [{"role": "system", "content": "s"}, {"role": "assistant", "content": "a"}], None),  # no user item
    ("messages", [{"role": "user", "content": [{"type": "text", "text": "u"}]}, {"role": "assistant", "content": "a"},
                  {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "r"}]}], 1),
    ("responses", [{"type": "function_call_output", "call_id": "c", "output": "o"}, {"role": "user", "content": "u"},
                   {"type": "function_call", "call_id": "d", "name": "f", "arguments": "{}"}], 2),
    ("responses", "a plain string input", None),
    ("chat", "not a list", None),
])
def test_the_head_ends_with_the_first_user_item_and_is_a_strict_prefix(kind, items, expected):
    assert head_items(kind, items) == expected


def test_head_request_keeps_every_other_field_and_cuts_only_the_items():
    body = agent_chat()
    head = head_request("chat", body)
    assert head is not None and head["messages"] == body["messages"][:2]
    assert head["tools"] is TOOLS and head["max_tokens"] == 256 and body["messages"][3]["role"] == "tool"
    anthropic = {"model": "fast", "system": SYSTEM, "tools": [{"name": "t", "input_schema": {}}], "max_tokens": 9,
                 "messages": [{"role": "user", "content": "u"}, {"role": "assistant", "content": "a"}, {"role": "user", "content": "v"}]}
    assert head_request("messages", anthropic) == {**anthropic, "messages": anthropic["messages"][:1]}
    assert head_request("completion", {"prompt": "p"}) is None and head_request(None, body) is None


def gate(settings: Settings) -> tuple[WarmGate, Captured, list]:
    runner, counted = Captured(), []
    return WarmGate(settings, runner=lambda: runner, count=lambda o, t, g: counted.append((o, g)), secret=SECRET), runner, counted


def candidate(tokens: int, sid: str = "agent-1", tenant: str = "team:a") -> WarmCandidate:
    return WarmCandidate("slow", True, 131_072, tokens, 16_384, identity.Session(tenant=tenant, session_id=sid, source="litellm"))


async def test_a_large_head_warms_once_on_first_sight_below_the_threshold():
    body = agent_chat()
    head_tokens = estimate_request(head_request("chat", body), call_kind="chat").routing
    total = estimate_request(body, call_kind="chat").routing
    assert 2_048 <= head_tokens < total < 9_830  # a head worth a warm, the request below 60% of 16,384
    g, runner, counted = gate(Settings())
    assert await g.consider(candidate(total), body, kind="chat") is WarmOutcome.QUEUED
    job = runner.jobs[-1]
    assert job.trigger == "head" and job.body["model"] == "slow" and job.body["max_tokens"] == 1
    assert job.body["messages"] == body["messages"][:2] and job.body["tools"] == TOOLS
    # the next request of the same session: no second head warm (seen), still below the threshold
    assert await g.consider(candidate(total + 40), agent_chat(280), kind="chat") is WarmOutcome.SKIPPED_BELOW_THRESHOLD
    assert len(runner.jobs) == 1 and counted == [(WarmOutcome.QUEUED, "head"), (WarmOutcome.SKIPPED_BELOW_THRESHOLD, "ahead")]
    # another tenant's session of the same id is its own session: its own head warm, its own cooldown key
    assert await g.consider(candidate(total, tenant="team:b"), body, kind="chat") is WarmOutcome.QUEUED
    assert runner.jobs[-1].cooldown_key != job.cooldown_key and runner.jobs[-1].key != job.key


@pytest.mark.parametrize("settings", [Settings(warm_head_tokens=0), Settings(warm_head_tokens=100_000),
                                      Settings(warm_ahead=False)], ids=["off", "head-too-small", "warm-ahead-off"])
async def test_no_head_warm_when_off_or_under_the_size(settings):
    body = agent_chat()
    g, runner, _ = gate(settings)
    outcome = await g.consider(candidate(estimate_request(body, call_kind="chat").routing), body, kind="chat")
    assert outcome in (WarmOutcome.SKIPPED_BELOW_THRESHOLD, WarmOutcome.SKIPPED_DISABLED) and runner.jobs == []


async def test_a_head_warm_keeps_every_other_guard():
    body = agent_chat()
    total = estimate_request(body, call_kind="chat").routing

    async def denied():
        return False

    g, runner, _ = gate(Settings())
    assert await g.consider(candidate(total), body, denied, kind="chat") is WarmOutcome.SKIPPED_FORBIDDEN
    g, runner, _ = gate(Settings())
    assert await g.consider(replace(candidate(total), target_known=False), body, kind="chat") is WarmOutcome.SKIPPED_UNKNOWN_MODEL
    g, runner, _ = gate(Settings())
    one_turn = {**body, "messages": body["messages"][:2]}  # the request is its own head: nothing to warm ahead of it
    assert await g.consider(candidate(total), one_turn, kind="chat") is WarmOutcome.SKIPPED_BELOW_THRESHOLD
    assert runner.jobs == []


async def test_past_the_threshold_the_whole_request_warms_not_the_head():
    body = agent_chat(40_000)
    g, runner, _ = gate(Settings())
    assert await g.consider(candidate(12_000), body, kind="chat") is WarmOutcome.QUEUED
    assert runner.jobs[-1].trigger == "ahead" and runner.jobs[-1].body["messages"] == body["messages"]

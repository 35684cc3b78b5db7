"""The reasoning of assistant turns before the last user message is rendered by no chat template
(:mod:`litellm_kvwarm.token_reasoning`): it counts in the safe estimate only. Reasoning after the
last user message (the current tool loop, which Qwen3 renders) still counts in both.

Truths: qwen2.5 tokens of the chat messages LiteLLM 1.108.7 sends (its own Messages / Responses →
chat translations for those APIs), rendered in the official Qwen2.5 template and counted with its
tokenizer (``litellm_kvwarm.lab.calibration``, as ``tests/lab`` does); Llama 3.2, DeepSeek-V3 and
o200k (chatml) give 330–520 for the same three bodies."""

from __future__ import annotations

import json

import pytest

from litellm_kvwarm.token_reasoning import last_user_index
from litellm_kvwarm.tokens import calibrated_estimator, count_request, estimate_request

QWEN = calibrated_estimator("qwen2.5")
THOUGHT = "I need to consider the parser and whether the header length check is right. " * 30  # ~500 tokens


def _chat(turns: int = 10) -> dict:
    msgs: list[dict] = [{"role": "user", "content": "Fix it."}]
    for i in range(turns):
        msgs.append({"role": "assistant", "content": None, "reasoning_content": THOUGHT, "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": "Bash", "arguments": json.dumps({"command": f"pytest -k t{i}"})}}]})
        msgs.append({"role": "tool", "tool_call_id": f"c{i}", "content": "1 passed"})
    return {"model": "m", "messages": [*msgs, {"role": "user", "content": "And now?"}]}


def _messages(turns: int = 10, question: bool = True) -> dict:
    msgs: list[dict] = [{"role": "user", "content": "Fix it."}]
    for i in range(turns):
        msgs.append({"role": "assistant", "content": [{"type": "thinking", "thinking": THOUGHT, "signature": "sig" * 100},
                     {"type": "tool_use", "id": f"toolu_{i}", "name": "Bash", "input": {"command": f"pytest -k t{i}"}}]})
        msgs.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": "1 passed"}]})
    return {"model": "m", "max_tokens": 100, "messages": [*msgs, *([{"role": "user", "content": "And now?"}] if question else [])]}


def _responses(turns: int = 10) -> dict:
    items: list[dict] = [{"role": "user", "content": "Fix it."}]
    for i in range(turns):
        items.append({"type": "reasoning", "id": f"rs_{i}", "summary": [{"type": "summary_text", "text": THOUGHT}]})
        items.append({"type": "function_call", "call_id": f"c{i}", "name": "Bash", "arguments": json.dumps({"command": f"pytest -k t{i}"})})
        items.append({"type": "function_call_output", "call_id": f"c{i}", "output": "1 passed"})
    return {"model": "m", "input": [*items, {"role": "user", "content": "And now?"}]}


@pytest.mark.parametrize("kind, body, truth", [("chat", _chat(), 480), ("messages", _messages(), 480), ("responses", _responses(), 480)])
def test_reasoning_before_the_last_user_message_counts_in_the_safe_estimate_only(kind, body, truth):
    """Ten tool-loop turns with ~500 tokens of reasoning each, then a user question: the routing
    estimate read ~5,000 tokens (10× the truth); now 0.7–1.2× the truth, the safe estimate still above
    the truth plus the reasoning."""
    est = estimate_request(body, call_kind=kind, estimator=QWEN, bridged=kind == "messages")
    assert 0.7 * truth <= est.routing <= 1.2 * truth, est.routing
    assert est.safe >= truth + 10 * 450
    assert THOUGHT not in count_request(body, call_kind=kind).text
    assert len(count_request(body, call_kind=kind).past_reasoning) == 10


def test_reasoning_of_the_current_tool_loop_still_counts_in_both():
    """No user message after the turns (an agent mid-loop): Qwen3 renders that reasoning."""
    est = estimate_request(_messages(question=False), call_kind="messages", estimator=QWEN, bridged=True)
    assert est.routing >= 10 * 450
    chat = _chat()
    chat["messages"].pop()
    assert estimate_request(chat, call_kind="chat", estimator=QWEN).routing >= 10 * 450


def test_the_last_user_turn_is_found_per_api():
    tool_results = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "x"}]}
    assert last_user_index([{"role": "user", "content": "q"}, tool_results], "messages") == 0  # tool results: not a user turn
    assert last_user_index([{"role": "user", "content": "q"}, tool_results], "chat") == 1
    assert last_user_index([{"role": "user", "content": "q"}, {"type": "function_call_output", "role": "user"}], "responses") == 0
    assert last_user_index([{"role": "assistant"}, None, 3], "chat") == -1
    assert last_user_index("user", "chat") == last_user_index(None, "chat") == -1

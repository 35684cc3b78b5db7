"""A chat request as Anthropic Messages and as Responses (``litellm_kvwarm.lab.datasets.agent_formats``):
the demo and the benchmark replay recorded tool loops through ``/v1/messages`` and ``/v1/responses``
with these bodies. Checked on a hand-written tool loop, then on a real BFCL conversation by
translating back with LiteLLM's own adapters (the translation the proxy applies)."""

from __future__ import annotations

import json

import pytest
from requires import require

from litellm_kvwarm.lab.datasets import api_body, messages_body, responses_body

TOOLS = [{"type": "function", "function": {"name": "ls", "description": "List a directory.",
                                           "parameters": {"type": "object", "properties": {"a": {"type": "boolean"}}}}}]
CHAT = {
    "model": "fast", "max_tokens": 64, "stream": True, "stream_options": {"include_usage": True}, "tools": TOOLS,
    "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What is in here?"},
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "ls", "arguments": '{"a": true}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "README.md\nsrc"},
        {"role": "assistant", "content": "Two entries.",
         "tool_calls": [{"id": "call_2", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_2", "content": "again"},
        {"role": "user", "content": "Thanks. And src?"},
    ],
}


def test_messages_body_moves_system_up_and_turns_tool_calls_into_blocks():
    body = messages_body(CHAT)
    assert body["system"] == "Be brief." and body["max_tokens"] == 64 and body["stream"] is True
    assert "stream_options" not in body and "max_output_tokens" not in body
    assert body["tools"] == [{"name": "ls", "description": "List a directory.",
                              "input_schema": TOOLS[0]["function"]["parameters"]}]
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["user", "assistant", "user", "assistant", "user"]  # alternating: tool result + user merged
    assert body["messages"][1]["content"] == [{"type": "tool_use", "id": "call_1", "name": "ls", "input": {"a": True}}]
    assert body["messages"][2]["content"] == [{"type": "tool_result", "tool_use_id": "call_1", "content": "README.md\nsrc"}]
    assert body["messages"][3]["content"] == [{"type": "text", "text": "Two entries."},
                                              {"type": "tool_use", "id": "call_2", "name": "ls", "input": {}}]
    assert body["messages"][4]["content"] == [{"type": "tool_result", "tool_use_id": "call_2", "content": "again"},
                                              {"type": "text", "text": "Thanks. And src?"}]


def test_responses_body_uses_instructions_and_function_call_items():
    body = responses_body(CHAT)
    assert body["instructions"] == "Be brief." and body["max_output_tokens"] == 64 and "max_tokens" not in body
    assert body["tools"] == [{"type": "function", "name": "ls", "description": "List a directory.",
                              "parameters": TOOLS[0]["function"]["parameters"]}]
    assert [i["type"] for i in body["input"]] == ["message", "function_call", "function_call_output", "message",
                                                  "function_call", "function_call_output", "message"]
    assert body["input"][0] == {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "What is in here?"}]}
    assert body["input"][1] == {"type": "function_call", "call_id": "call_1", "name": "ls", "arguments": '{"a": true}'}
    assert body["input"][2] == {"type": "function_call_output", "call_id": "call_1", "output": "README.md\nsrc"}
    assert body["input"][3]["content"] == [{"type": "output_text", "text": "Two entries."}]


def test_chat_without_system_or_tools_has_neither_field():
    chat = {"model": "fast", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}
    assert set(messages_body(chat)) == {"model", "messages", "max_tokens"}
    assert set(responses_body(chat)) == {"model", "input", "max_output_tokens"}
    assert api_body("chat", chat) is chat


@pytest.mark.parametrize(("change", "match"), [
    ({"api": "completions"}, "api must be one of"),
    ({"role": "function"}, "role 'function'"),
    ({"arguments": "[1, 2]"}, "not a JSON object"),
], ids=["unknown-api", "unknown-role", "arguments-not-an-object"])
def test_what_cannot_be_converted_is_named(change, match):
    chat = json.loads(json.dumps(CHAT))
    if "role" in change:
        chat["messages"].append({"role": change["role"], "content": "x"})
    if "arguments" in change:
        chat["messages"][2]["tool_calls"][0]["function"]["arguments"] = change["arguments"]
    with pytest.raises(ValueError, match=match):
        api_body(change.get("api", "messages"), chat)


def test_a_bfcl_tool_loop_survives_litellms_messages_translation_back_to_chat():
    """LiteLLM bridges /v1/messages to the backend's chat endpoint: what it rebuilds from our body
    must be the original tool loop (same calls, same results, same tools)."""
    require("bfcl_eval")
    from litellm_kvwarm.lab.datasets import bfcl_conversation
    from litellm_kvwarm.litellm_bridge import messages_adapter

    conversation = bfcl_conversation("multi_turn_long_context_0")
    point = list(conversation.requests())[-1]
    chat = {"model": "fast", "max_tokens": 32, "messages": point.messages, "tools": conversation.tools}
    body = messages_body(chat)
    back, _names = messages_adapter()().translate_anthropic_to_openai(body)
    back = json.loads(json.dumps(back, default=lambda o: o.model_dump(exclude_none=True)))
    calls = [(c["function"]["name"], json.loads(c["function"]["arguments"]))
             for m in back["messages"] if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    expected = [(c["function"]["name"], json.loads(c["function"]["arguments"]))
                for m in point.messages if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    assert calls == expected and len(calls) >= 2
    results = [m["content"] for m in back["messages"] if m["role"] == "tool"]
    assert [r if isinstance(r, str) else "".join(p["text"] for p in r) for r in results] == \
        [m["content"] for m in point.messages if m["role"] == "tool"]
    assert [t["function"]["name"] for t in back["tools"]] == [t["function"]["name"] for t in conversation.tools]

"""Agent loops of the Messages and Responses APIs counted as the chat request LiteLLM sends (breaker
round): every tool call costs its wrapper, Responses function/custom tools and Anthropic tools are
counted in the chat shape the weights were fitted on, structured tool outputs keep their JSON
punctuation, message counts follow LiteLLM's bridge, and a lone message sent as a dict is counted."""

from __future__ import annotations

import json

import pytest

from litellm_kvwarm.tokens import count_request

LISTING = {"files": [{"path": f"src/pkg/mod_{i}/file_{i}.py", "size": 1000 + 37 * i, "mode": "0644"} for i in range(200)]}
PATCH = "*** Begin Patch\n*** Update File: app.py\n" + "".join(
    f'@@ def f{i}(x):\n-    return "old {i}"\n+    return "new {i}"\n' for i in range(100)) + "*** End Patch"


def anthropic_loop(n: int) -> dict:
    turns = [m for i in range(n) for m in (
        {"role": "assistant", "content": [{"type": "tool_use", "id": f"toolu_{i:03d}", "name": "Read", "input": {"file_path": f"/repo/src/m{i}.py"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{i:03d}", "content": f"ok {i}"}]})]
    return {"model": "m", "max_tokens": 100, "messages": [{"role": "user", "content": "go"}, *turns]}


def responses_loop(n: int) -> dict:
    items = [m for i in range(n) for m in (
        {"type": "function_call", "call_id": f"call_{i:03d}", "name": "read", "arguments": json.dumps({"path": f"/repo/src/m{i}.py"})},
        {"type": "function_call_output", "call_id": f"call_{i:03d}", "output": f"ok {i}"})]
    return {"model": "m", "input": [{"role": "user", "content": "go"}, *items]}


def test_tool_calls_are_counted_with_the_wrapper_templates_render():
    text = count_request(responses_loop(1), call_kind="responses").text
    assert '{"name":"read","arguments":{"path": "/repo/src/m0.py"}}' in text
    text = count_request(anthropic_loop(1), call_kind="messages").text
    assert '{"name":"Read","arguments":{"file_path":"/repo/src/m0.py"}}' in text


def test_custom_tool_call_input_is_counted_as_the_json_litellm_sends():
    """Codex's ``apply_patch`` is a custom tool: LiteLLM sends the patch as ``{"content": patch}``,
    every line break and quote escaped (more tokens than the raw patch)."""
    body = {"input": [{"type": "custom_tool_call", "call_id": "c", "name": "apply_patch", "input": PATCH}]}
    text = count_request(body, call_kind="responses").text
    assert json.dumps({"content": PATCH}, ensure_ascii=False, separators=(",", ":")) in text
    assert PATCH not in text  # not the raw patch on top of its JSON


def test_responses_and_anthropic_tools_are_counted_in_the_chat_shape():
    custom = {"type": "custom", "name": "apply_patch", "description": "Apply a patch",
              "format": {"type": "grammar", "syntax": "lark", "definition": "start: hunk+"}}
    function = {"type": "function", "name": "read", "parameters": {"type": "object"}}
    text = count_request({"input": "x", "tools": [custom, function, {"type": "web_search"}]}, call_kind="responses").text
    assert "The apply_patch content following the specified format" in text and "start: hunk+" in text
    assert '{"type":"function","function":{"name":"read","parameters":{"type":"object"}}}' in text
    assert '{"type":"web_search"}' in text
    tools = [{"name": "Bash", "description": "Run", "input_schema": {"type": "object"}, "cache_control": {"type": "ephemeral"}},
             {"type": "bash_20250124", "name": "bash", "cache_control": {"type": "ephemeral"}}]
    text = count_request({"messages": [], "tools": tools}, call_kind="messages").text
    assert '{"type":"function","function":{"name":"Bash","description":"Run","parameters":{"type":"object"}}}' in text
    assert '{"type":"bash_20250124","name":"bash"}' in text and "ephemeral" not in text


@pytest.mark.parametrize("output", [LISTING, LISTING["files"]])
def test_structured_tool_output_keeps_its_json_text(output):
    """A dict (or a list of plain dicts) as ``function_call_output.output``: LiteLLM sends its JSON text;
    its quotes, braces and commas cost tokens too (key names and leaves alone read 0.94x the truth)."""
    body = {"input": [{"type": "function_call_output", "call_id": "c", "output": output}]}
    counts = count_request(body, call_kind="responses")
    assert json.dumps(output, separators=(",", ":")) in counts.text
    parts = {"input": [{"type": "function_call_output", "call_id": "c", "output": [{"type": "input_text", "text": "A"}, "B"]}]}
    assert count_request(parts, call_kind="responses").text == "cA\nB"  # the parts' texts joined as vLLM joins them


def test_anthropic_message_count_follows_litellms_bridge():
    body = {"system": "s", "messages": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "text", "text": "t"}, {"type": "tool_use", "id": "a", "name": "x", "input": {}},
                                          {"type": "tool_use", "id": "b", "name": "y", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "1"},
                                     {"type": "tool_result", "tool_use_id": "b", "content": "2"}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c", "content": "3"}, {"type": "text", "text": "more"}]},
        {"role": "user", "content": []},
    ]}
    # system, user, assistant (its tool_use blocks are its tool_calls), 2 tool, tool + user, one empty user
    assert count_request(body, call_kind="messages").messages == 1 + 1 + 1 + 2 + 2 + 1


@pytest.mark.parametrize("kind, body", [
    ("messages", {"messages": {"role": "user", "content": "LONE"}}),
    ("chat", {"messages": {"role": "user", "content": "LONE"}}),
    ("responses", {"input": {"type": "message", "role": "user", "content": "LONE"}}),
    ("chat", {"messages": [{"content": "LONE", "name": "NAME"}]}),
])
def test_a_lone_message_and_a_name_are_not_dropped(kind, body):
    text = count_request(body, call_kind=kind).text
    assert "LONE" in text and ("NAME" in text or "name" not in str(body))

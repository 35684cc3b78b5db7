"""What the estimator reads from Anthropic Messages and Responses bodies, and from mixed content
blocks in chat messages (issue 14): every block kind that renders text is counted, the ones that
cannot be rendered (redacted thinking, encrypted reasoning, signatures) are not."""

from __future__ import annotations

import json

import pytest

from litellm_kvwarm.image_tokens import ImageRef
from litellm_kvwarm.token_blocks import Collected, collect_blocks
from litellm_kvwarm.tokens import SAFE_TOKENS_PER_OTHER_PART, calibrated_estimator, count_request, estimate_request

CODE = "def handler(request):\n    if request.ok:\n        return request.body\n    raise ValueError(request)\n" * 200


def text_of(content) -> str:
    into = Collected()
    collect_blocks(content, into)
    return "".join(into.parts)


def test_every_text_bearing_block_is_counted():
    blocks = [
        {"type": "text", "text": "A"},
        {"type": "thinking", "thinking": "B", "signature": "never-rendered"},
        {"type": "redacted_thinking", "data": "encrypted"},
        {"type": "tool_use", "id": "t", "name": "C", "input": {"path": "D"}},
        {"type": "tool_result", "tool_use_id": "t", "content": [{"type": "text", "text": "E"}, {"type": "text", "text": "F"}]},
        {"type": "tool_result", "tool_use_id": "u", "content": "G"},
        {"type": "document", "title": "H", "source": {"type": "text", "media_type": "text/plain", "data": "I"}},
        {"type": "document", "source": {"type": "content", "content": [{"type": "text", "text": "J"}]}},
        {"type": "search_result", "title": "K", "source": "L", "content": [{"type": "text", "text": "M"}]},
        {"type": "input_text", "text": "N"}, {"type": "output_text", "text": "O"}, {"type": "refusal", "refusal": "P"},
    ]
    # one line per block that adds text, as vLLM joins a content list's text parts; a block's own pieces unjoined
    assert text_of(blocks) == 'A\nB\nC{"path":"D"}\nE\nF\nG\nHI\nJ\nKLM\nN\nO\nP'


def test_a_content_list_s_text_items_are_joined_by_a_line_break_and_nothing_else_is():
    """vLLM renders a content list's text parts ``"\\n".join``-ed (the "string" content format); an item that adds
    no text (an image) adds no break, and nothing is added before the first or after the last text, nor
    between two messages (the template renders those)."""
    image = {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}
    assert text_of([image, "a", image, image, {"type": "text", "text": "b"}, image]) == "a\nb"
    assert text_of(["a"]) == "a" and text_of("a b") == "a b" and text_of([image]) == ""
    into = Collected()
    collect_blocks([{"type": "text", "text": "a"}, "b"], into)
    collect_blocks([image, "c"], into)
    assert into.parts == ["a", "\n", "b", "c"]


def test_media_blocks_are_images_or_other_parts():
    into = Collected()
    collect_blocks([
        {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}},
        {"type": "image_url", "image_url": {"url": "https://example.com/b.png", "detail": "low"}},
        {"type": "input_image", "image_url": "https://example.com/c.png", "detail": "high"},
        {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="}},
        {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}},
        {"type": "mystery"},
    ], into)
    assert into.images == [ImageRef(), ImageRef(detail="low"), ImageRef(detail="high")]
    # the PDF and the audio carry bytes: priced from them (media_tokens), not as flat parts
    assert [m.kind for m in into.media] == ["pdf", "audio"]
    assert into.other == 1 and into.parts == []


def test_nesting_is_walked_without_recursion():
    content: object = [{"type": "text", "text": "leaf"}]
    for _ in range(5000):
        content = [{"type": "tool_result", "content": content}]
    assert text_of(content) == "leaf"


def messages_body(tool_output: str) -> dict:
    return {
        "model": "fast", "max_tokens": 1024, "system": [{"type": "text", "text": "You are a coding agent."}],
        "tools": [{"name": "read_file", "description": "Read a file", "input_schema": {"type": "object"}}],
        "messages": [
            {"role": "user", "content": "Fix the bug."},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "a.py"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": tool_output}]}]},
        ],
        "metadata": {"user_id": "never counted"},
    }


def responses_body(tool_output: str) -> dict:
    return {
        "model": "fast", "max_output_tokens": 1024, "instructions": "You are a coding agent.",
        "tools": [{"type": "function", "name": "read_file", "description": "Read a file", "parameters": {"type": "object"}}],
        "input": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Fix the bug."}]},
            {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Read it."}], "encrypted_content": "Z" * 9000},
            {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "read_file", "arguments": '{"path": "a.py"}'},
            {"type": "function_call_output", "call_id": "c1", "output": tool_output},
        ],
    }


def test_messages_body_counts_system_blocks_tools_and_tool_results():
    counts = count_request(messages_body(CODE), call_kind="messages")
    assert CODE in counts.text and "You are a coding agent." in counts.text and '"parameters":{"type":"object"}' in counts.text
    assert "never counted" not in counts.text
    # the chat messages LiteLLM's bridge makes: system, user, assistant (tool_use → its tool_calls), tool
    assert (counts.messages, counts.tools) == (4, 1)


def test_responses_body_counts_items_and_skips_encrypted_reasoning():
    counts = count_request(responses_body(CODE), call_kind="responses")
    assert CODE in counts.text and "Read it." in counts.text and '{"path": "a.py"}' in counts.text
    assert "ZZZZ" not in counts.text and "rs_1" not in counts.text and "fc_1" not in counts.text
    assert (counts.messages, counts.tools) == (5, 1)
    assert count_request({"input": "hello", "instructions": "be brief"}, call_kind="responses").text == "be briefhello"


@pytest.mark.parametrize("kind, build", [("messages", messages_body), ("responses", responses_body)])
def test_agent_bodies_estimate_like_the_chat_body_litellm_sends(kind, build):
    """The estimate of a Messages/Responses body is within a few percent of the estimate of the chat
    body it becomes (the text is the same; only the per-message overhead differs): a 20,000-token
    tool result is never estimated at a handful of tokens."""
    estimator = calibrated_estimator("qwen2.5")
    agent = estimate_request(build(CODE), call_kind=kind, estimator=estimator)
    chat = estimate_request({"messages": [{"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": "Fix the bug."},
                                          {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
                                           "function": {"name": "read_file", "arguments": json.dumps({"path": "a.py"})}}]},
                                          {"role": "tool", "tool_call_id": "c1", "content": CODE}]}, call_kind="chat", estimator=estimator)
    assert agent.routing > 0.9 * chat.routing and agent.safe > 0.9 * chat.safe
    assert agent.routing < 1.1 * chat.routing + 50


def test_anthropic_blocks_inside_a_chat_message_are_counted():
    """Issue 14: a 20,000-token tool result in an Anthropic-shaped block of an OpenAI chat message
    estimated at 36 routing tokens."""
    body = {"messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": [{"type": "text", "text": CODE}]}]}]}
    est = estimate_request(body, call_kind="chat", estimator=calibrated_estimator("qwen2.5"))
    assert est.routing > len(CODE) / 6


def test_unknown_and_media_parts_keep_their_safe_price():
    text_only = {"messages": [{"role": "user", "content": "describe"}]}
    with_audio = {"messages": [{"role": "user", "content": [{"type": "text", "text": "describe"}, {"type": "input_audio"}]}]}
    for estimator in (None, calibrated_estimator("any")):
        a, b = estimate_request(text_only, estimator=estimator), estimate_request(with_audio, estimator=estimator)
        assert b.safe - a.safe == SAFE_TOKENS_PER_OTHER_PART and b.routing == a.routing


@pytest.mark.parametrize("kind", ["messages", "responses"])
@pytest.mark.parametrize("body", [{}, {"messages": "x", "input": 7, "system": 3, "tools": "t"}, {"messages": [None, 5, {"content": {"a": 1}}],
                                  "input": [None, 5, {"type": "web_search_call", "id": "ws_1", "action": {"query": "q"}}]}])
def test_odd_agent_bodies_never_raise(kind, body):
    est = estimate_request(body, call_kind=kind, estimator=calibrated_estimator("any"))
    assert est.safe >= est.routing >= 0


@pytest.mark.parametrize("messages, dependent", [
    ([{"role": "user", "content": "a"}, {"role": "function", "name": "f", "content": "x"}], True),
    ([{"role": "user", "content": "a"}, {"role": "function", "content": "x"}], True),  # the two-key fast path
    ([{"role": "user", "content": "a"}, {"role": "narrator", "content": [{"type": "text", "text": "x"}]}], True),
    ([{"role": "system", "content": "s"}, {"role": "developer", "content": "d"}, {"role": "user", "content": "a"},
      {"role": "assistant", "content": None, "tool_calls": []}, {"role": "tool", "tool_call_id": "c", "content": "x"}], False),
])
def test_roles_some_templates_drop_make_the_count_template_dependent(messages, dependent):
    assert count_request({"messages": messages}, call_kind="chat").template_dependent is dependent


def test_responses_tools_count_as_vllm_renders_them():
    """Differential suite, 7:549: LiteLLM's Responses → chat translation adds ``strict: false`` to
    each tool, which vLLM's /v1/responses does not render; the exact count drops it again."""
    from litellm_kvwarm.litellm_bridge import chat_payload

    tool = {"type": "function", "name": "read_file", "parameters": {"type": "object"}}
    loose = chat_payload("responses", {"model": "m", "input": "hi", "tools": [tool]})
    strict = chat_payload("responses", {"model": "m", "input": "hi", "tools": [{**tool, "strict": True}]})
    assert "strict" not in loose["tools"][0]["function"] and strict["tools"][0]["function"]["strict"] is True
    assert [m["role"] for m in chat_payload("responses", {"model": "m", "input": "hi", "instructions": "be brief"})["messages"]] == [
        "system", "user"]
    translated = chat_payload("messages", {"model": "m", "max_tokens": 5, "system": "s", "messages": [
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "out"}]}]})
    assert [m["role"] for m in translated["messages"]] == ["system", "tool"]
    assert chat_payload("completion", {"prompt": "x"}) is None


def _screenshot_body(output: dict) -> dict:
    return {"model": "m", "input": [{"type": "message", "role": "user", "content": "open the settings page"},
                                    {"type": "computer_call", "call_id": "c1", "action": {"type": "screenshot"}},
                                    {"type": "computer_call_output", "call_id": "c1", "output": output}]}


def test_a_computer_call_output_counts_its_screenshot_as_an_image_and_other_dicts_as_their_json_text():
    """Breaker C, 1: a ``computer_call_output``'s screenshot (a dict output) read as an unknown block. LiteLLM 1.109.3's
    Responses → chat bridge sends it as an image part (``decode_responses_media``), 1.108.7's as its JSON text (the
    base64 tokenized): counted as the installed LiteLLM sends it (agent-shapes breaker, round 3: priced as the image
    on 1.108.7, a 30 KB screenshot read safe 0.22-0.24x the truth), and any other dict output as the JSON text both send."""
    import base64
    import random

    from litellm_kvwarm.litellm_bridge import chat_payload

    data = base64.b64encode(b"\x89PNG\r\n\x1a\n" + random.Random(0).randbytes(100_000)).decode()
    body = _screenshot_body({"type": "computer_screenshot", "image_url": "data:image/png;base64," + data})
    estimator = calibrated_estimator("qwen2.5")
    est = estimate_request(body, call_kind="responses", estimator=estimator)
    sent = chat_payload("responses", body)["messages"][-1]
    as_image = isinstance(sent["content"], list) and sent["content"][0].get("type") == "image_url"
    assert as_image or data in sent["content"]  # 1.109: the image; 1.108: its JSON text
    assert (len(est.counts.images), data in est.counts.text) == ((1, False) if as_image else (0, True))
    if as_image:
        chat = estimate_request({"messages": chat_payload("responses", body)["messages"]}, call_kind="chat", estimator=estimator)
        assert est.safe >= chat.safe and est.routing <= 1.1 * chat.routing
    other = _screenshot_body({"type": "logs", "lines": ["a" * 40] * 50})
    assert '"lines"' in estimate_request(other, call_kind="responses", estimator=estimator).counts.text


def test_a_tool_result_item_counts_its_output_and_its_content():
    """LiteLLM reads a ``tool_result`` item's ``call_id`` and ``output`` (a dict as its JSON text); an
    Anthropic-style ``content`` it does not send is still counted (safe)."""
    counts = count_request({"input": [{"type": "tool_result", "call_id": "c1", "output": {"rows": 3}, "content": "kept"}]},
                           call_kind="responses")
    assert counts.text == 'c1{"rows":3}kept' and counts.other_parts == 0


def _mcp_list_tools(n: int) -> dict:
    return {"type": "mcp_list_tools", "id": "mcpl_1", "server_label": "gh", "tools": [
        {"name": f"tool_{i}", "description": "Get a GitHub pull request.", "input_schema": {
            "type": "object", "properties": {"owner": {"type": "string"}, "repo": {"type": "string"}}}} for i in range(n)]}


def test_schema_leaves_inside_an_unknown_item_are_text_not_other_parts():
    """Breaker C, 2: each ``{"type": "string"}`` leaf inside an unknown item had nothing readable and
    cost one other part (1,024 safe tokens): 40 two-property tools read safe 83,769 against 2,059 tokens
    of their JSON text (qwen2.5; LiteLLM's bridge drops the item). Now a mapping inside an unknown block's
    data counts its ``type``; a top-level block with nothing readable keeps the other-part price."""
    item = _mcp_list_tools(40)
    base = {"model": "m", "input": [{"type": "message", "role": "user", "content": "hi"}]}
    body = {**base, "input": [*base["input"], item]}
    counts = count_request(body, call_kind="responses")
    assert counts.other_parts == 0 and counts.text.count("string") == 80
    estimator = calibrated_estimator("qwen2.5")
    added = estimate_request(body, call_kind="responses", estimator=estimator).safe - estimate_request(
        base, call_kind="responses", estimator=estimator).safe
    as_text = estimate_request({"messages": [{"role": "user", "content": json.dumps(item)}]}, call_kind="chat", estimator=estimator).safe
    assert 2_059 / 2 <= added <= min(2 * 2_059, as_text)  # its JSON text: 2,059 tokens (qwen2.5 tokenizer)


@pytest.mark.parametrize("body, kind", [
    ({"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "input_video", "file_id": "x"}]}]}, "chat"),
    ({"input": [{"type": "message", "role": "user", "content": "hi"}, {"type": "computer_call", "call_id": "c"}]}, "responses"),
    ({"input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"},
                                                                {"type": "input_video", "file_id": "x"}]}]}, "responses"),
])
def test_a_top_level_block_with_nothing_readable_is_still_an_other_part(body, kind):
    counts = count_request(body, call_kind=kind)
    assert counts.other_parts == 1
    est = estimate_request(body, call_kind=kind, estimator=calibrated_estimator("qwen2.5"))
    assert est.safe >= SAFE_TOKENS_PER_OTHER_PART

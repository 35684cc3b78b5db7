"""Chat template and token counts of the emulator (cl100k + Qwen2.5 ChatML)."""

from __future__ import annotations

import json

import pytest

from litellm_kvwarm.lab.emulator.tokenizer import (
    DEFAULT_SYSTEM_PROMPT,
    MEDIA_PART_TOKENS,
    count_chat_tokens,
    count_tokens,
    encode,
    filler_pieces,
    render_chat,
)

MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is the weather in Paris?"}]
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


def test_plain_conversation_renders_chatml():
    assert render_chat(MESSAGES) == (
        "<|im_start|>system\nBe brief.<|im_end|>\n"
        "<|im_start|>user\nWhat is the weather in Paris?<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    assert count_chat_tokens(MESSAGES) == 44


def test_default_system_prompt_is_added_like_qwen():
    rendered = render_chat([{"role": "user", "content": "hi"}], add_generation_prompt=False)
    assert rendered == f"<|im_start|>system\n{DEFAULT_SYSTEM_PROMPT}<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n"


def test_tool_schemas_cost_tokens():
    rendered = render_chat(MESSAGES, [WEATHER_TOOL])
    assert "\n<tools>\n" + json.dumps(WEATHER_TOOL) + "\n</tools>" in rendered
    assert count_chat_tokens(MESSAGES, [WEATHER_TOOL]) == 186
    assert count_chat_tokens(MESSAGES, [WEATHER_TOOL, WEATHER_TOOL]) == 186 + count_tokens("\n" + json.dumps(WEATHER_TOOL))


def test_tool_calls_and_tool_results_render_like_qwen():
    conversation = MESSAGES + [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function",
                            "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "18C sunny"},
        {"role": "tool", "tool_call_id": "c2", "content": "wind 5 km/h"},
    ]
    rendered = render_chat(conversation)
    assert rendered.endswith(
        '<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call><|im_end|>\n'
        "<|im_start|>user\n<tool_response>\n18C sunny\n</tool_response>\n<tool_response>\nwind 5 km/h\n</tool_response><|im_end|>\n"
        "<|im_start|>assistant\n"
    )


def test_content_parts_text_is_joined_and_media_costs_a_fixed_amount():
    text_only = [{"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "text", "text": "there"}]}]
    assert render_chat(text_only).count("hi\nthere") == 1
    with_image = [{"role": "user", "content": [{"type": "text", "text": "hi"},
                                               {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]}]
    plain = [{"role": "user", "content": "hi"}]
    assert count_chat_tokens(with_image) - count_chat_tokens(plain) == MEDIA_PART_TOKENS + 1  # + the joining "\n"


def test_null_content_and_no_generation_prompt():
    rendered = render_chat([{"role": "user", "content": None}], add_generation_prompt=False)
    assert rendered.endswith("<|im_start|>user\n<|im_end|>\n")


def test_response_format_is_not_in_the_prompt_unless_asked():
    fmt = {"type": "json_schema", "json_schema": {"name": "w", "schema": {"type": "object"}}}
    assert render_chat(MESSAGES, response_format=fmt) == render_chat(MESSAGES)
    assert count_chat_tokens(MESSAGES, response_format=fmt, render_response_format=True) > count_chat_tokens(MESSAGES)


def test_special_token_text_is_plain_text():
    assert count_tokens("<|endoftext|>") == len(encode("<|endoftext|>")) > 1


@pytest.mark.parametrize("n", [1, 2, 7, 100, 1000])
def test_filler_is_exactly_n_tokens(n):
    pieces = filler_pieces(n)
    assert len(pieces) == n
    assert count_tokens("".join(pieces)) == n
    assert all(count_tokens(piece) == 1 for piece in pieces[:12])


def test_rendering_is_the_official_qwen25_template():
    """The emulator renders Qwen2.5-Instruct's own Jinja template (vendored), as vLLM would."""
    from litellm_kvwarm.lab.calibration.official_templates import render_text

    conversation = MESSAGES + [
        {"role": "assistant", "content": "Checking.",
         "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "18C sunny"},
        {"role": "user", "content": "Thanks"},
    ]
    for messages, tools in ((MESSAGES, None), (conversation, [WEATHER_TOOL]), (conversation[1:], None)):
        assert render_chat(messages, tools) == render_text("hf-qwen2.5", messages, tools)

"""Chat template and token counts of the emulator (cl100k + Qwen2.5 ChatML; images by the Qwen2.5-VL rule)."""

from __future__ import annotations

import json

import pytest

from litellm_kvwarm.image_tokens import QWEN2_VL_RULE
from litellm_kvwarm.lab.emulator.tokenizer import (
    DEFAULT_SYSTEM_PROMPT,
    MEDIA_PART_TOKENS,
    chat_token_ids,
    count_chat_tokens,
    count_tokens,
    encode,
    filler_pieces,
    image_token_ids,
    render_chat,
)
from litellm_kvwarm.lab.images import png_data_url

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


# --- images: priced by the Qwen2.5-VL rule (issue 14) ---------------------------------------

SCREENSHOT = png_data_url(1920, 1080)
THUMB = png_data_url(200, 100)
PLAIN = [{"role": "user", "content": "hi"}]


def with_parts(*parts):
    return [{"role": "user", "content": [{"type": "text", "text": "hi"}, *parts]}]


def image_part(url):
    return {"type": "image_url", "image_url": {"url": url}}


def test_images_cost_the_qwen25_vl_count():
    assert QWEN2_VL_RULE.tokens(1920, 1080) == 2693 and QWEN2_VL_RULE.tokens(200, 100) == 30
    base = count_chat_tokens(PLAIN) + 1  # + the joining "\n"
    assert count_chat_tokens(with_parts(image_part(SCREENSHOT))) == base + 2693
    assert count_chat_tokens(with_parts(image_part(THUMB))) == base + 30
    assert count_chat_tokens(with_parts({"type": "input_image", "image_url": THUMB})) == base + 30
    assert count_chat_tokens(with_parts({"type": "image_url", "image_url": THUMB})) == base + 30
    assert count_chat_tokens(with_parts(image_part(THUMB), image_part(SCREENSHOT))) == base + 1 + 30 + 2693


def test_image_of_unknown_size_costs_the_media_stand_in():
    base = count_chat_tokens(PLAIN) + 1
    assert count_chat_tokens(with_parts(image_part("https://example.com/cat.png"))) == base + MEDIA_PART_TOKENS
    assert image_token_ids("https://example.com/cat.png") is None and image_token_ids("data:image/png;base64,AAAA") is None


def test_image_ids_depend_on_the_image():
    a, b = image_token_ids(THUMB), image_token_ids(png_data_url(201, 100))
    assert len(a) == 30 and len(b) == 30 and a != b and a[0] != b[0]
    assert image_token_ids(THUMB) == a
    ids = chat_token_ids(with_parts(image_part(THUMB)))
    start = len(encode(render_chat(with_parts()).removesuffix("<|im_end|>\n<|im_start|>assistant\n"))) + 1
    assert ids[start:start + 30] == a
    assert ids[:start] == chat_token_ids(with_parts(image_part(png_data_url(201, 100))))[:start]


def test_render_chat_shows_the_vision_markers():
    rendered = render_chat(with_parts(image_part(THUMB)))
    assert "<|im_start|>user\nhi\n<|vision_start|><|image_pad|><|vision_end|><|im_end|>" in rendered
    fake = with_parts({"type": "text", "text": "\ue000kvwarm-image-7\ue001"})
    assert count_chat_tokens(fake) == len(encode(render_chat(fake)))  # a client's look-alike text stays text


async def test_tokenize_usage_and_prefix_cache_with_images(emulator_factory):
    long_text = "Describe the picture in detail. " * 40
    first = [{"role": "user", "content": [{"type": "text", "text": long_text}, image_part(SCREENSHOT)]}]
    other = [{"role": "user", "content": [{"type": "text", "text": long_text}, image_part(png_data_url(1920, 1088))]}]
    async with emulator_factory(max_model_len=8192) as emu:
        tokenized = (await emu.client.post("/tokenize", json={"model": "fast", "messages": first})).json()
        before, after = render_chat(first).split("<|vision_start|><|image_pad|><|vision_end|>")
        assert tokenized["count"] == count_chat_tokens(first) == len(encode(before)) + 2693 + len(encode(after))
        assert tokenized["tokens"] == chat_token_ids(first)
        usage = (await emu.chat(first, max_tokens=1)).json()["usage"]
        assert usage["prompt_tokens"] == tokenized["count"] and usage["prompt_tokens_details"]["cached_tokens"] == 0
        again = (await emu.chat(first, max_tokens=1)).json()["usage"]
        assert again["prompt_tokens_details"]["cached_tokens"] == (tokenized["count"] - 1) // 16 * 16
        text_end = len(encode(before))
        switched = (await emu.chat(other, max_tokens=1)).json()["usage"]
        assert switched["prompt_tokens"] == tokenized["count"]  # 1920x1088 rounds to the same 39x69 grid
        assert switched["prompt_tokens_details"]["cached_tokens"] == text_end // 16 * 16  # only the text blocks hit
        small = (await emu.chat([{"role": "user", "content": [image_part(png_data_url(8000, 8000))]}], max_tokens=1))
        assert small.status_code == 400  # 16386 image tokens > max_model_len 8192

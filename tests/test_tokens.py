import math

import pytest

from litellm_kvwarm.tokens import (
    ROUTING_TOKENS_PER_MESSAGE,
    SAFE_TOKENS_PER_MESSAGE,
    SAFE_TOKENS_PER_OTHER_PART,
    SAFE_TOKENS_PER_REQUEST,
    count_request,
    estimate_request,
)

TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


def test_plain_chat_counts_characters_and_messages():
    payload = {"messages": [{"role": "system", "content": "a" * 100}, {"role": "user", "content": "b" * 1100}]}
    est = estimate_request(payload)
    assert est.counts.chars == 1200 and est.counts.messages == 2
    assert est.safe == 400 + 2 * SAFE_TOKENS_PER_MESSAGE + SAFE_TOKENS_PER_REQUEST
    assert est.routing == 300 + 2 * ROUTING_TOKENS_PER_MESSAGE
    assert est.safe > est.routing


def test_list_of_parts_counts_text_and_images_separately():
    payload = {
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "x" * 30},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * 5000}},
                    {"type": "mystery"},
                ],
            }
        ]
    }
    counts = count_request(payload)
    assert counts.chars == 30 and counts.other_parts == 2
    est = estimate_request(payload)
    assert est.safe == 10 + SAFE_TOKENS_PER_MESSAGE + 2 * SAFE_TOKENS_PER_OTHER_PART + SAFE_TOKENS_PER_REQUEST
    assert est.routing == 7 + ROUTING_TOKENS_PER_MESSAGE  # the base64 blob never counts as text


def test_tool_schemas_tool_calls_and_results_cost_tokens():
    base = {"messages": [{"role": "user", "content": "hi"}]}
    with_tools = dict(base, tools=[TOOL])
    assert count_request(with_tools).chars > count_request(base).chars + 100
    convo = {
        "messages": [
            {"role": "user", "content": "weather?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}],
            },
            {"role": "tool", "tool_call_id": "c1", "content": '{"temp": 21}'},
        ]
    }
    c = count_request(convo)
    assert c.messages == 3
    assert c.chars >= len("weather?") + len('{"city":"Paris"}') + len("get_weather") + len('{"temp": 21}') + len("c1")


def test_response_format_schema_counts():
    rf = {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object", "properties": {"a" * 300: {}}}}}
    assert count_request({"messages": [], "response_format": rf}).chars > 300


def test_messages_xor_prompt():
    both = {"messages": [{"role": "user", "content": "m" * 40}], "prompt": "p" * 4000}
    assert count_request(both, call_kind="chat").chars == 40
    assert count_request(both, call_kind="completion").chars == 4000
    assert count_request({"prompt": "p" * 4000}).chars == 4000


@pytest.mark.parametrize(
    "prompt, exact",
    [([1, 2, 3, 4, 5], 5), ([[1, 2], [1, 2, 3]], 3)],
    ids=["token-ids", "batch-of-token-ids"],
)
def test_prompt_token_ids_are_exact(prompt, exact):
    est = estimate_request({"prompt": prompt})
    assert est.safe == est.routing == exact


def test_prompt_batch_of_strings_uses_longest():
    assert count_request({"prompt": ["a" * 10, "b" * 99]}).chars == 99


@pytest.mark.parametrize(
    "payload",
    [
        {"messages": "not a list"},
        {"messages": [None, 5, "str", {"role": "user", "content": {"weird": True}}]},
        {"messages": [{"role": "user", "content": [None, 3, {"type": "text", "text": None}]}]},
        {"prompt": None},
        {"prompt": [1, "a", None]},
        {},
        {"messages": [], "tools": [{"self": object()}]},
    ],
    ids=["messages-str", "mixed-garbage", "odd-parts", "prompt-none", "prompt-mixed", "empty", "unserialisable-tools"],
)
def test_bad_input_never_raises(payload):
    est = estimate_request(payload)
    assert est.safe >= est.routing >= 0


def test_custom_ratios():
    payload = {"prompt": "z" * 6000}
    est = estimate_request(payload, safe_chars_per_token=2.0, routing_chars_per_token=6.0)
    assert est.safe == 3000 + SAFE_TOKENS_PER_REQUEST and est.routing == 1000
    assert math.isclose(est.counts.chars, 6000)

"""``--chat-template-mode qwen3``: past reasoning rendered only after the last user message, and
replies that carry reasoning (``reasoning_content``), cached as the template renders them."""

from __future__ import annotations

import pytest

from litellm_kvwarm.lab.emulator import tokenizer
from litellm_kvwarm.lab.emulator.reasoning import (
    MAX_REASONING_TOKENS,
    MIN_REASONING_TOKENS,
    filler_reasoning_tokens,
    qwen3_messages,
)

from conftest import sse_events

THOUGHT = "zebracorn ponders quietly"  # tokens that appear nowhere else in these prompts
USER = {"role": "user", "content": "What is the capital of France?"}


def assistant(field: str = "reasoning_content") -> dict:
    return {"role": "assistant", "content": "Paris.", field: THOUGHT}


def contains(haystack: list[int], needle: list[int]) -> bool:
    return any(haystack[i:i + len(needle)] == needle for i in range(len(haystack) - len(needle) + 1))


THOUGHT_IDS = tokenizer.encode(THOUGHT)


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_reasoning_before_the_last_user_message_is_dropped(field):
    ids = tokenizer.chat_token_ids([USER, assistant(field), {"role": "user", "content": "And of Spain?"}],
                                   template_mode="qwen3")
    assert not contains(ids, THOUGHT_IDS)
    assert "<think>" not in tokenizer.decode(ids)


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_reasoning_after_the_last_user_message_is_rendered(field):
    tool = {"role": "tool", "tool_call_id": "c1", "content": "42"}
    ids = tokenizer.chat_token_ids([USER, assistant(field), tool], template_mode="qwen3")
    assert contains(ids, THOUGHT_IDS)
    text = tokenizer.decode(ids)
    assert f"<|im_start|>assistant\n<think>\n{THOUGHT}\n</think>\n\nParis.<|im_end|>" in text


def test_plain_mode_never_renders_reasoning():
    tool = {"role": "tool", "tool_call_id": "c1", "content": "42"}
    ids = tokenizer.chat_token_ids([USER, assistant(), tool])
    assert not contains(ids, THOUGHT_IDS)
    assert ids == tokenizer.chat_token_ids([USER, {"role": "assistant", "content": "Paris."}, tool])


def test_qwen3_rule_splits_think_in_content_and_keeps_the_last_assistant_turns_block():
    inline = {"role": "assistant", "content": f"<think>\n{THOUGHT}\n</think>\n\nParis."}
    earlier, later = qwen3_messages([USER, inline, {"role": "user", "content": "ok"}, inline])[1::2]
    assert earlier["content"] == "Paris."
    assert later["content"] == f"<think>\n{THOUGHT}\n</think>\n\nParis."
    # an assistant turn after the last query without reasoning: content only, unless it is the last message
    plain = {"role": "assistant", "content": "Sure."}
    rendered = qwen3_messages([USER, plain, {"role": "tool", "content": "x"}, plain])
    assert [m["content"] for m in rendered] == [USER["content"], "Sure.", "x", "<think>\n\n</think>\n\nSure."]
    assert all("reasoning_content" not in m for m in qwen3_messages([USER, assistant()]))


def test_filler_reasoning_length_is_deterministic_and_bounded():
    lengths = {filler_reasoning_tokens(list(range(n))) for n in range(1, 200)}
    assert min(lengths) >= MIN_REASONING_TOKENS and max(lengths) <= MAX_REASONING_TOKENS and len(lengths) > 5
    assert filler_reasoning_tokens([1, 2, 3]) == filler_reasoning_tokens([1, 2, 3])


async def test_qwen3_replies_carry_reasoning_non_streamed_and_streamed(emulator_factory):
    async with emulator_factory(chat_template_mode="qwen3") as emu:
        prompt_ids = tokenizer.chat_token_ids([USER], template_mode="qwen3")
        r = filler_reasoning_tokens(prompt_ids)
        body = (await emu.chat([USER], max_tokens=r + 5)).json()
        message = body["choices"][0]["message"]
        assert len(tokenizer.encode(message["reasoning_content"])) == r
        assert len(tokenizer.encode(message["content"])) == 5
        assert body["usage"]["completion_tokens"] == r + 5
        assert body["choices"][0]["finish_reason"] == "length"

        streamed = await emu.chat([USER], max_tokens=r + 5, stream=True, stream_options={"include_usage": True})
        events = sse_events(streamed.text)
        deltas = [e["choices"][0]["delta"] for e in events[1:] if e != "[DONE]" and e["choices"]]
        kinds = [next(iter(d)) for d in deltas]
        assert kinds == ["reasoning_content"] * r + ["content"] * 5
        assert "".join(d.get("reasoning_content", "") for d in deltas) == message["reasoning_content"]
        assert "".join(d.get("content", "") for d in deltas) == message["content"]
        assert events[-2]["usage"]["completion_tokens"] == r + 5

        # a budget smaller than the reasoning: all of it goes to reasoning
        short = (await emu.chat([USER], max_tokens=3)).json()["choices"][0]["message"]
        assert short["content"] == "" and len(tokenizer.encode(short["reasoning_content"])) == 3

    async with emulator_factory() as emu:  # plain: no reasoning
        message = (await emu.chat([USER], max_tokens=4)).json()["choices"][0]["message"]
        assert message["reasoning_content"] is None and len(tokenizer.encode(message["content"])) == 4


async def test_the_reply_is_cached_as_the_template_renders_it_next_turn(emulator_factory):
    """The next turn hits the reply's blocks (reasoning included) when a tool result follows it, and
    stops hitting right at the reply when a user message follows (its reasoning is dropped)."""
    async with emulator_factory(chat_template_mode="qwen3", block_size=4) as emu:
        first = (await emu.chat([USER], max_tokens=40)).json()
        reply = first["choices"][0]["message"]
        prompt_tokens = first["usage"]["prompt_tokens"]
        turn = {"role": "assistant", "content": reply["content"], "reasoning_content": reply["reasoning_content"]}

        with_tool = (await emu.chat([USER, turn, {"role": "tool", "tool_call_id": "c", "content": "ok"}],
                                    max_tokens=1)).json()
        with_user = (await emu.chat([USER, turn, {"role": "user", "content": "thanks"}], max_tokens=1)).json()
        hit_tool = with_tool["usage"]["prompt_tokens_details"]["cached_tokens"]
        hit_user = with_user["usage"]["prompt_tokens_details"]["cached_tokens"]
        assert hit_tool >= prompt_tokens + 40 - 4  # prompt + reasoning + content, but the last partial block
        assert hit_user <= prompt_tokens  # stops before the reply: "assistant\n" is followed by content now

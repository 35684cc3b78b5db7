"""Reply-warm of a response with several choices (``n`` > 1): the warm appends the first choice (the
reply :func:`~litellm_kvwarm.reply_warm.reply_of` reads), so it is sized by that choice alone, not by the
response's ``completion_tokens``, which counts every choice's tokens."""

from __future__ import annotations

from litellm import ModelResponse

from litellm_kvwarm.reply_warm import Reply, reply_tokens
from litellm_kvwarm.warm import WarmTrigger

from test_hook_adapters import CHAIN, FakeRouter, Key, body, handler


def _response(texts: list[str], completion_tokens: int, prompt_tokens: int = 1500) -> ModelResponse:
    return ModelResponse(choices=[{"index": i, "message": {"role": "assistant", "content": t}, "finish_reason": "stop"}
                                  for i, t in enumerate(texts)],
                         usage={"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                                "total_tokens": prompt_tokens + completion_tokens})


def test_the_first_choice_s_share_of_the_completion_tokens():
    """Four choices of 400 characters, 400 completion tokens in all: the first choice is 100 of them (before:
    all 400 were counted as its reply); one choice keeps the server's count exactly; no usage: its characters ÷ 4."""
    four = _response(["A" * 400, "B" * 400, "C" * 400, "D" * 400], 400)
    assert reply_tokens(four, Reply("A" * 400), four.usage) == 100
    uneven = _response(["A" * 100, "B" * 300], 200)
    assert reply_tokens(uneven, Reply("A" * 100), uneven.usage) == 50
    one = _response(["A" * 400], 123)
    assert reply_tokens(one, Reply("A" * 400), one.usage) == 123
    assert reply_tokens(one, Reply("A" * 400), None) == 100


async def test_a_reply_warm_of_an_n4_response_is_sized_by_the_reply_it_appends(monkeypatch):
    """End to end through the handler's hooks: a 6,000-character request with ``n=4`` stays on fast (4,096); the
    server answers four 400-character choices, 400 completion tokens in all, prompt 1,500. Before: the reply-warm
    was sized 1,900 tokens (1,500 + all four choices' 400), grown by 400: warm decisions (threshold, jump, the
    cooldown state) were taken on a conversation four replies long. Now: 1,600 tokens, grown by 100, the size of
    the conversation the warm sends (one reply)."""
    h, _ = handler(FakeRouter({"fast": 4096, "slow": 32768}, chains=CHAIN), monkeypatch, warm_ahead=True)
    seen = []
    consider = h.warm_gate.consider

    async def spy(candidate, data, *args, **kwargs):
        seen.append((candidate, kwargs))
        return await consider(candidate, data, *args, **kwargs)

    h.warm_gate.consider = spy
    data = await h.async_pre_call_hook(Key(), None, body(6000, n=4, litellm_call_id="call-n4"), "acompletion")
    assert data["model"] == "fast" and len(h.effects.pending) == 1
    ahead = seen[-1][0]
    response = _response(["A" * 400, "B" * 400, "C" * 400, "D" * 400], 400)
    await h.async_log_success_event({"litellm_call_id": "call-n4", "litellm_params": {"metadata": data["metadata"]}},
                                    response, None, None)
    candidate, kwargs = seen[-1]
    assert kwargs["trigger"] is WarmTrigger.REPLY
    assert kwargs["body"]["messages"][-1] == {"role": "assistant", "content": "A" * 400}
    assert candidate.tokens == 1600
    assert candidate.growth_tokens == (ahead.growth_tokens or ahead.tokens) + 100


def test_reasoning_the_next_request_drops_is_not_counted_in_the_reply():
    """A Qwen3 final answer: 8,000 characters of reasoning, 400 of answer, 2,100 completion tokens. The warm appends
    the answer only (the next request drops past reasoning): before, sized by all 2,100 tokens; now 100. A tool-calling
    reply whose reasoning the warm appends (``reasoning=True``) keeps the whole count; Anthropic thinking blocks too."""
    final = ModelResponse(choices=[{"index": 0, "message": {"role": "assistant", "content": "A" * 400, "reasoning_content": "r" * 8000},
                                    "finish_reason": "stop"}], usage={"prompt_tokens": 10, "completion_tokens": 2100, "total_tokens": 2110})
    reply = Reply("A" * 400, (), "r" * 8000)
    assert reply_tokens(final, reply, final.usage) == 100
    assert reply_tokens(final, reply, final.usage, reasoning=True) == 2100
    anthropic = {"role": "assistant", "content": [{"type": "thinking", "thinking": "t" * 3000}, {"type": "text", "text": "B" * 1000}],
                 "usage": {"input_tokens": 10, "output_tokens": 1000}}
    from litellm_kvwarm.reply_warm import reply_of
    assert reply_tokens(anthropic, reply_of(anthropic), anthropic["usage"]) == 250

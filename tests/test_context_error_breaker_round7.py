"""Context-length error parsing (pure), round seven (a breaker's sweep, 2026-12-07): SGLang refuses a total that
*reaches* the window it prints (its ``>=`` checks), so a retry sized to the printed window was refused again; and
"prompt (P) + max_tokens (C) = T exceeds ..." from home-grown OpenAI-compatible servers lost P and C (or was not read)
when the sum or a short name of the window was printed. Checked bare and in round 4's wrappers.

Numbers are as printed: W window, P prompt, C requested output, T total.
"""

from __future__ import annotations

import pytest

from context_error_view import expected as _expected, view as _view
from litellm_kvwarm.context_errors import ErrorKind, Number, parse_context_error
from litellm_kvwarm.learned_limits import LimitKind, limit_from_error
from litellm_kvwarm.reactive import BackstopPlan, HopAction, decide_hop
from test_context_error_breaker_round4 import WRAPPERS, wrapped

K = ErrorKind
W, P, C = 32768, 28672, 8192
#: SGLang ``tokenizer_manager._validate_one_request`` (releases that check ``max_new_tokens + input_token_num >=
#: context_len``; the same words from Chutes, Fireworks, Nebius)
SGLANG_TOTAL = (f"Requested token count exceeds the model's maximum context length of {W} tokens. You requested a total of "
                f"{P + C} tokens: {P} tokens from the input messages and {C} tokens for the completion. Please reduce the "
                "number of tokens in the input messages or the completion to fit within the limit.")
SGLANG_PROMPT = f"The input ({W} tokens) is longer than the model's context length ({W} tokens)."

# home-grown servers (public code): "prompt (P tokens) + max_tokens (C) [= T] exceeds <the window> (W)"
ROUND7_SUMS = [
    (f"Prompt ({20000} tokens) + max_tokens ({16384}) = {36384} exceeds context length ({W}). RAG builder must respect the "
     "model's context window.", {"total_tokens": Number(36384)}),
    (f"prompt_tokens (20000) + max_tokens (16384) = 36384 exceeds the model's context length ({W})", {"total_tokens": Number(36384)}),
    (f"prompt (20000 tokens) + max_tokens (16384) = 36384 exceeds model max ({W})", {"total_tokens": Number(36384)}),
    (f"prompt (20000 tokens) + max_tokens (16384) exceeds max_context ({W})", {}),
    (f"Prompt (20000) + max_tokens (16384) exceeds context ({W}); increase --n-ctx or lower --max-tokens", {}),
]


FAMILY, SUM_FIELDS = "generic-prompt-plus-output", {"window": Number(W), "prompt_tokens": Number(20000), "output_tokens": Number(16384)}


@pytest.mark.parametrize(("text", "family", "kind", "fields", "wrapper"),
                         wrapped([(t, FAMILY, K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {**SUM_FIELDS, **extra}) for t, extra in ROUND7_SUMS]))
def test_a_printed_sum_or_a_short_name_of_the_window_keeps_the_prompt_and_output(text, family, kind, fields, wrapper):
    assert _view(parse_context_error(WRAPPERS[wrapper](text))) == _expected(family, kind, fields)


# not a window: a per-request output cap, a rate, a budget in credits, numbers that fit (a second breaker, on the widened
# row: each was read as an exact window and learned as the tenant's total limit, so its next prompt over 64 tokens went
# to the other group)
ROUND7_NOT_WINDOWS = [
    "prompt (5 tokens) + max_tokens (100) exceeds max 64 output tokens",
    "input (500) + output (100) exceeds max 20 requests per minute",
    "Your budget: input 500 + output 100 exceeds max 300 credits",
    "prompt (500) + max_tokens (100) exceeds max 4096 per-request output budget",
    "prompt (5 tokens) + max_tokens (100) exceeds context 64 output tokens",
    "prompt (5) + max_tokens (100) exceeds max_context (6,400 images)",
    "prompt (5) + max_tokens (100) exceeds max_context (6,400)",
]


@pytest.mark.parametrize("text", ROUND7_NOT_WINDOWS)
def test_a_sum_against_something_else_than_the_window_is_not_read(text):
    got = parse_context_error(text)
    assert got is None or got.window is None, got
    assert limit_from_error(got) is None


@pytest.mark.parametrize("wrapper", sorted(WRAPPERS))
@pytest.mark.parametrize(("text", "kind"), [(SGLANG_TOTAL, K.PROMPT_PLUS_OUTPUT_OVER_WINDOW), (SGLANG_PROMPT, K.PROMPT_OVER_WINDOW)])
def test_sglang_prints_its_window_and_admits_one_token_less(text, kind, wrapper):
    got = parse_context_error(WRAPPERS[wrapper](text))
    assert got is not None and got.kind is kind and got.family.startswith("sglang-")
    assert got.window == Number(W)  # as printed
    assert got.refuses_full_window and got.admitted_window == Number(W - 1)


def test_a_window_from_any_other_server_is_the_most_it_admits():
    vllm = parse_context_error(f"This model's maximum context length is {W} tokens. However, you requested {P + C} tokens "
                               f"({P} in the messages, {C} in the completion).")
    assert vllm is not None and not vllm.refuses_full_window and vllm.admitted_window == Number(W)


def test_the_retry_after_sglang_s_refusal_fits_what_it_admits_and_that_is_what_is_learned():
    error = parse_context_error(SGLANG_TOTAL)
    plan = BackstopPlan(source="sglang-small", chain=("big",), requested=C, own_generic_fallbacks=True)
    decision = decide_hop(plan=plan, hop_group="sglang-small", error=error, prompt_count=P, known_window=None,
                          output_floor_tokens=256)
    assert decision.action is HopAction.RETRY_CLAMPED and decision.max_tokens == W - 1 - P  # 4,095: P + 4,095 < W
    learned = limit_from_error(error)
    assert learned is not None and (learned.kind, learned.tokens) == (LimitKind.TOTAL, W - 1)

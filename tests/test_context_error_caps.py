"""Context-length error parsing (pure): a text that prints both the model's output cap and its window keeps both
(``output_cap`` and ``window``), never one read for the other. Before, the cap beside a window wording was lost
(``output_cap`` did not exist; ``printed_limit`` None), and the window beside a cap wording was lost (``window``
None)."""

from __future__ import annotations

import json

import pytest

from litellm_kvwarm.context_errors import Certainty, ErrorKind, Limit, LimitMeaning, Number, parse_context_error
from litellm_kvwarm.learned_limits import limit_from_error

K = ErrorKind
LB = Certainty.LOWER_BOUND
CAP = LimitMeaning.OUTPUT_LIMIT

# (text, family, kind, window, output_cap, output_tokens)
BOTH = [
    # window wordings that name the cap too (a gateway adding its model card)
    ("This model's maximum context length is 128000 tokens. However, you requested 150000 tokens (10000 in the "
     "messages, 140000 in the completion). This model supports at most 16384 completion tokens.",
     "openai-requested", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, Number(128000), Number(16384), Number(140000)),
    ("This model's maximum context length is 131072 tokens. However, your messages resulted in 140000 tokens. The "
     "maximum number of output tokens is 8192.",
     "openai-messages-resulted", K.PROMPT_OVER_WINDOW, Number(131072), Number(8192), None),
    ("prompt is too long: 210000 tokens > 200000 maximum (max output tokens: 64000)",
     "anthropic-prompt-too-long", K.PROMPT_OVER_WINDOW, Number(200000), Number(64000), None),
    ("Requested token count exceeds the model's maximum context length of 163840 tokens. You requested a total of "
     "170000 tokens: 100000 tokens from the input messages and 70000 tokens for the completion. Output token limit "
     "of this model is 32768.",
     "sglang-requested-total", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, Number(163840), Number(32768), Number(70000)),
    ("max_tokens=70000 cannot be greater than max_model_len=65536. The maximum value for max_tokens is 32768.",
     "vllm-max-tokens-over-window", K.OUTPUT_OVER_WINDOW, Number(65536), Number(32768), Number(70000)),
    ("The prompt (40000 tokens) exceeds the context window (32768 tokens). The maximum output length for this model "
     "is 4096 tokens.",
     "generic-prompt-over-window", K.PROMPT_OVER_WINDOW, Number(32768), Number(4096), None),
    # cap wordings that name the window too
    ("max_tokens is too large: 20000. This model supports at most 16384 completion tokens, whereas its maximum "
     "context length is 128000 tokens.",
     "openai-max-output", K.OUTPUT_OVER_LIMIT, Number(128000), Number(16384), Number(20000)),
    ("max_tokens: 70000 > 64000, which is the maximum allowed number of output tokens for claude-sonnet-4-20250514 "
     "(context window 200000 tokens)",
     "anthropic-max-output", K.OUTPUT_OVER_LIMIT, Number(200000), Number(64000), Number(70000)),
    ("Unable to submit request because it has a maxOutputTokens value of 100000 but the supported range is from 1 "
     "(inclusive) to 65537 (exclusive). Context length: 1048576.",
     "vertex-max-output", K.OUTPUT_OVER_LIMIT, Number(1048576), Number(65536), Number(100000)),
    # the requested output over a printed cap (generic wording), with and without a window: read nothing before
    ("Requested max_tokens 20000 exceeds the model's maximum output of 8192 tokens (context window 128000).",
     "generic-output-over-cap", K.OUTPUT_OVER_LIMIT, Number(128000), Number(8192), Number(20000)),
    ("Error: output tokens 9000 > max output length 4096; context length 32768.",
     "generic-output-over-cap", K.OUTPUT_OVER_LIMIT, Number(32768), Number(4096), Number(9000)),
    ("max_completion_tokens (20000) is greater than the maximum output tokens (16384).",
     "generic-output-over-cap", K.OUTPUT_OVER_LIMIT, None, Number(16384), Number(20000)),
    # a cap wording printed beside two different windows: the window is a floor
    ("max_tokens is too large: 20000. This model supports at most 16384 completion tokens. context_window: 128000; "
     "deployment max_model_len: 32768",
     "openai-max-output", K.OUTPUT_OVER_LIMIT, Number(32768, LB), Number(16384), Number(20000)),
]


@pytest.mark.parametrize(("text", "family", "kind", "window", "cap", "output"), BOTH, ids=[b[1] for b in BOTH])
def test_a_text_with_both_an_output_cap_and_a_window_keeps_both(text, family, kind, window, cap, output):
    for form in (text, "litellm.BadRequestError: OpenAIException - " + json.dumps({"error": {"message": text}})):
        got = parse_context_error(form)
        assert got is not None
        assert (got.family, got.kind, got.window, got.output_cap, got.output_tokens) == (family, kind, window, cap,
                                                                                         output)


# (text, family, window, output_cap, printed_limit): one of the two only, never read for the other
ONE = [
    # the vLLM wording prints the requested output and the window, no cap
    ("'max_tokens' or 'max_completion_tokens' is too large: 9000. This model's maximum context length is 8192 tokens "
     "and your request has 300 input tokens (9000 > 8192 - 300)",
     "vllm-max-tokens-too-large", Number(8192), None, None),
    ("max_tokens is too large: 20000. This model supports at most 8192 completion tokens",
     "openai-max-output", None, Number(8192), Limit(8192, CAP)),
    ("maximum output tokens (20000) exceeds the context window (8192)",
     "generic-output-over-window", Number(8192), None, None),
    ("Your max output length (20000) is greater than the model's context length of 8192.",
     "generic-output-over-window", Number(8192), None, None),
    ("Requested output tokens 20000 exceeds the model's context length of 8192.",
     "generic-output-over-window", Number(8192), None, None),
    ("max_tokens must be less than or equal to 8192, the maximum output for this model - received 20000",
     "max-tokens-cap", None, Number(8192), Limit(8192, CAP)),
    ("This model's maximum context length is 16384 tokens. However, your messages resulted in 17000 tokens.",
     "openai-messages-resulted", Number(16384), None, None),
    # a requested max_tokens beside a window is no cap
    ("This model's maximum context length is 8192 tokens. However, you requested 9000 tokens (1000 in the messages, "
     "8000 in the completion). max completion tokens requested: 8000 > allowed",
     "openai-requested", Number(8192), None, None),
]


@pytest.mark.parametrize(("text", "family", "window", "cap", "limit"), ONE,
                         ids=[f"{i}-{o[1]}" for i, o in enumerate(ONE)])
def test_a_window_is_never_an_output_cap_nor_a_cap_a_window(text, family, window, cap, limit):
    got = parse_context_error(text)
    assert got is not None
    assert (got.family, got.window, got.output_cap, got.printed_limit) == (family, window, cap, limit)


def test_a_window_read_beside_an_output_cap_is_never_learned():
    got = parse_context_error("max_tokens is too large: 20000. This model supports at most 16384 completion tokens, "
                              "whereas its maximum context length is 128000 tokens.")
    assert got is not None and got.window == Number(128000) and got.output_cap == Number(16384)
    assert limit_from_error(got) is None  # an output-cap refusal teaches nothing about the window
    both = parse_context_error("This model's maximum context length is 131072 tokens. However, your messages "
                               "resulted in 140000 tokens. The maximum number of output tokens is 8192.")
    assert both is not None and both.output_cap == Number(8192)
    learned = limit_from_error(both)
    assert learned is not None and learned.tokens == 131072  # the window, never the cap


def test_a_cut_cap_beside_a_window_is_a_lower_bound():
    got = parse_context_error("This model's maximum context length is 131072 tokens. However, your messages resulted "
                              "in 140000 tokens. Max output tokens: 81")
    assert got is not None and got.window == Number(131072) and got.output_cap == Number(81, LB)

"""Context-length error parsing (pure), round five: OpenAI's "maximum context length" refusal reworded by gateways
and clients with ", but you requested" (instead of ". However, you requested"), and OpenRouter's "you requested about
T tokens (P of text input, C in the output)" without its "This endpoint's" prefix. Each was read as the window alone
(family ``generic``, kind UNKNOWN): the request's own numbers were lost. Checked bare and in round 4's wrappers.

Numbers are as printed: W window, P prompt, C requested output, T total.
"""

from __future__ import annotations

import pytest

from context_error_view import expected as _expected, view as _view
from litellm_kvwarm.context_errors import Certainty, ErrorKind, Number, parse_context_error
from test_context_error_breaker_round4 import WRAPPERS, wrapped

LB, APPROX = Certainty.LOWER_BOUND, Certainty.APPROXIMATE
K = ErrorKind

ROUND5_FAULTS = [
    # ", but you requested T tokens." with no breakdown: quoted as a provider's refusal in clients' docs and tests
    # (an Obsidian plugin's troubleshooting page, an agent's overflow tests, an API's error-format docs, 2025-2026) and
    # printed by DeepSeek-style gateways ("payload too large: maximum context length is N tokens, but you requested M
    # tokens"). T is prompt + max_tokens, as in "However, you requested T tokens." (``deepseek-requested-total``)
    ("This model's maximum context length is 256000 tokens, but you requested 300000 tokens.",
     "deepseek-requested-total", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {"window": Number(256000), "total_tokens": Number(300000)}),
    ("Maximum context length is 8192 tokens, but you requested 10000 tokens. Please reduce max tokens.",
     "deepseek-requested-total", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {"window": Number(8192), "total_tokens": Number(10000)}),
    # a gateway's 413 (an anonymizing gateway's docs, 2026: "payload too large: maximum context length is N tokens, but
    # you requested M tokens"): "payload too large" alone is a byte limit (a look-alike), not when a token window follows
    ("payload too large: maximum context length is 32768 tokens, but you requested 40000 tokens.",
     "deepseek-requested-total", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {"window": Number(32768), "total_tokens": Number(40000)}),
    # the same joint before OpenAI's breakdown: a prompt at the window is over it alone, one below it is not
    ("This model's maximum context length is 16384 tokens, but you requested 20480 tokens (16384 in the messages, 4096 "
     "in the completion). Please reduce the length of the messages or completion.",
     "openai-requested", K.PROMPT_OVER_WINDOW,
     {"window": Number(16384), "prompt_tokens": Number(16384), "output_tokens": Number(4096), "total_tokens": Number(20480)}),
    ("This model's maximum context length is 16384 tokens, but you requested 17000 tokens (12904 in the messages, 4096 "
     "in the completion).",
     "openai-requested", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW,
     {"window": Number(16384), "prompt_tokens": Number(12904), "output_tokens": Number(4096), "total_tokens": Number(17000)}),
    # "but your messages resulted in P tokens": the prompt alone
    ("This model's maximum context length is 8192 tokens, but your messages resulted in 9000 tokens.",
     "openai-messages-resulted", K.PROMPT_OVER_WINDOW, {"window": Number(8192), "prompt_tokens": Number(9000)}),
    # OpenRouter's breakdown quoted without "This endpoint's" (a client's parser comment, 2026: "maximum context length
    # is 4095 tokens. However, you requested about 38212 tokens (5444 of text input, 32768 in the output)."): the
    # inputs approximate, the output exact; here the input alone is over the window
    ("maximum context length is 4095 tokens. However, you requested about 38212 tokens (5444 of text input, 32768 in "
     "the output).",
     "openrouter", K.PROMPT_OVER_WINDOW,
     {"window": Number(4095), "prompt_tokens": Number(5444, APPROX), "output_tokens": Number(32768),
      "total_tokens": Number(38212, APPROX)}),
    ("maximum context length is 16384 tokens. However, you requested about 18000 tokens (13904 of text input, 4096 in "
     "the output).",
     "openrouter", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW,
     {"window": Number(16384), "prompt_tokens": Number(13904, APPROX), "output_tokens": Number(4096),
      "total_tokens": Number(18000, APPROX)}),
    # ... and without its breakdown: T may or may not count an output (as with the prefix)
    ("This model's maximum context length is 131072 tokens. However, you requested about 224798 tokens",
     "openrouter", K.UNKNOWN, {"window": Number(131072), "total_tokens": Number(224798, APPROX)}),
]

# Look-alikes: "but you requested" about a balance or a quota, no context length named.
ROUND5_NOT_ERRORS = [
    ("413 Payload Too Large: request body exceeds 10485760 bytes", None, None, {}),
    ("Insufficient token balance. You have 500 tokens, but you requested 900 units.", None, None, {}),
    ("Holder only has 1000 tokens, but you requested 5000", None, None, {}),
]

# Ending at "tokens", the message may be OpenAI's breakdown cut short (as "However, you requested T tokens" is read):
# the total kept, the kind left to the breakdown that may have followed. Bare only: a wrapper closes the message.
ROUND5_CUT = [
    ("This model's maximum context length is 256000 tokens, but you requested 300000 tokens",
     "openai-requested-cut", K.UNKNOWN, {"window": Number(256000), "total_tokens": Number(300000)}),
    ("litellm.BadRequestError: OpenAIException - maximum context length is 32768 tokens, but you requested 40000 tokens",
     "openai-requested-cut", K.UNKNOWN, {"window": Number(32768), "total_tokens": Number(40000)}),
]
CUT = [pytest.param(*case, "bare", id=f"cut-{i}") for i, case in enumerate(ROUND5_CUT)]


@pytest.mark.parametrize(("text", "family", "kind", "fields", "wrapper"), wrapped(ROUND5_FAULTS + ROUND5_NOT_ERRORS) + CUT)
def test_round5_message_parses_with_its_meaning(text, family, kind, fields, wrapper):
    assert _view(parse_context_error(WRAPPERS[wrapper](text))) == _expected(family, kind, fields)


def test_a_but_you_requested_total_is_not_read_as_a_prompt():
    """The total counts the request's max_tokens: it is never the prompt (a prompt read from it would escalate a
    request that a smaller output budget serves on its own deployment)."""
    error = parse_context_error("This model's maximum context length is 16384 tokens, but you requested 20480 tokens")
    assert error is not None
    assert (error.prompt_tokens, error.total_tokens) == (None, Number(20480))
    assert LB not in {error.window.certainty}

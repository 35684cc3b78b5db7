"""Context-length error parsing (pure), round six (a breaker's sweep, 2026-12-06): a client's validation error that
echoes a context-length error it was sent (an agent transcript holds one) was read as the server's refusal, so the
backstop clamped or escalated a request whose fault is the client's; a body-size cap worded as a context length was
read as a token window; a parameter's own token cap (``logit_bias``) as a long prompt; and four rewordings of known
refusals lost their numbers or were not read at all. Checked bare and in round 4's wrappers.

Numbers are as printed: W window, P prompt, C requested output, T total, L a printed limit that is not the window.
"""

from __future__ import annotations

import pytest

from context_error_view import expected as _expected, view as _view
from litellm_kvwarm.context_errors import Certainty, ErrorKind, Limit, LimitMeaning, Number, parse_context_error
from test_context_error_breaker_round4 import WRAPPERS, wrapped

K = ErrorKind
#: vLLM 0.18-0.31's refusal, as an agent's transcript may hold it (its own earlier failure, quoted back)
CE = ("This model's maximum context length is 16384 tokens. However, you requested 4096 output tokens and your prompt "
      "contains at least 12289 input tokens, for a total of at least 16385 tokens.")

ROUND6_ECHOES = [
    # OpenAI echoes an enum field's invalid value ("Invalid value: 'toolx'. Supported values are: ..."): the value is
    # the client's, whatever it holds
    (f"Invalid value: '{CE}'. Supported values are: 'system', 'assistant', 'user', 'function', and 'tool'.", None, None, {}),
    # a content part's wrong type, the part quoted after the sentence: the label before it is a field path with indexes
    (f"Invalid type for 'messages[2].content[0]': expected an object, but got a string instead. '{CE}'", None, None, {}),
    (f"Invalid type for 'input[3].content': expected an array, but got a string instead: '{CE}'", None, None, {}),
    # LiteLLM's "Invalid Message passed in" echoes the message whose role is not one it knows: the role is misspelt
    (f"litellm.BadRequestError: Invalid Message passed in {{'role': 'toolx', 'content': \"{CE}\"}}", None, None, {}),
    (f"Invalid Message passed in - {{'role': 'Tool_Result', 'content': '{CE}'}}", None, None, {}),
]

ROUND6_NOT_ERRORS = [
    # a body-size cap worded as a context length: bytes, never tokens (before: a window of 10,485,760 tokens, exact)
    ("Request exceeds maximum context length of 10485760 bytes", None, None, {}),
    ("413: maximum context size is 2 MB", None, None, {}),
    ("Request body exceeds the maximum context size of 8 MiB", None, None, {}),
    # OpenAI's cap on one parameter's token list: the client's error (before: a numberless context error)
    ("Invalid 'logit_bias': too many tokens. Expected at most 300 tokens, got 400.", None, None, {}),
    ("logit_bias has too many tokens: maximum 1024", None, None, {}),
]

ROUND6_FAULTS = [
    # TensorRT-LLM's "Prompt length (P) exceeds maximum input length (L)." with "max" for "maximum" (before: nothing read)
    ("Prompt length (20000) exceeds max input length (16384).",
     "trtllm-input", K.PROMPT_OVER_WINDOW,
     {"prompt_tokens": Number(20000), "printed_limit": Limit(16384, LimitMeaning.INPUT_LIMIT)}),
    ("Prompt length + number of draft tokens (20000 + 4) exceeds max input length (16384).",
     "trtllm-input", K.PROMPT_OVER_WINDOW,
     {"prompt_tokens": Number(20000), "printed_limit": Limit(16384, LimitMeaning.INPUT_LIMIT)}),
    # a count against the window with words before the colon (before: a numberless generic error)
    ("Prompt length is larger than the maximum context length supported by the model: 20000 > 16384.",
     "generic-count-over-window", K.UNKNOWN, {"window": Number(16384), "total_tokens": Number(20000)}),
    ("Request rejected: context length allowed: 40000 > 32768.",
     "generic-count-over-window", K.UNKNOWN, {"window": Number(32768), "total_tokens": Number(40000)}),
    # the output cap as "the maximum number of output tokens allowed (L)" (before: nothing read)
    ("The max_output_tokens (100000) exceeds the maximum number of output tokens allowed (65536).",
     "generic-output-over-cap", K.OUTPUT_OVER_LIMIT,
     {"output_tokens": Number(100000), "printed_limit": Limit(65536, LimitMeaning.OUTPUT_LIMIT)}),
    ("max_tokens (100000) exceeds the maximum number of completion tokens allowed (32768).",
     "generic-output-over-cap", K.OUTPUT_OVER_LIMIT,
     {"output_tokens": Number(100000), "printed_limit": Limit(32768, LimitMeaning.OUTPUT_LIMIT)}),
]

# Kept as they were: the server's own refusal beside a size in bytes, a wrapper quoting the server, the roles LiteLLM knows.
ROUND6_KEPT = [
    ("This model's maximum context length is 16384 tokens. However, your request has 20000 input tokens. (request "
     "size 2 MB)", "vllm-request-has", K.UNKNOWN,
     {"window": Number(16384, Certainty.LOWER_BOUND), "prompt_tokens": Number(20000)}),
    ("Upstream error: value: 'This model's maximum context length is 8192 tokens. However, your messages resulted in "
     "9000 tokens.'", "openai-messages-resulted", K.PROMPT_OVER_WINDOW, {"window": Number(8192), "prompt_tokens": Number(9000)}),
]


@pytest.mark.parametrize(("text", "family", "kind", "fields", "wrapper"),
                         wrapped(ROUND6_ECHOES + ROUND6_NOT_ERRORS + ROUND6_FAULTS + ROUND6_KEPT))
def test_round6_message_parses_with_its_meaning(text, family, kind, fields, wrapper):
    assert _view(parse_context_error(WRAPPERS[wrapper](text))) == _expected(family, kind, fields)


def test_the_echoed_refusal_is_read_when_the_quote_is_the_servers_own():
    """The same refusal quoted by a wrapper after ``error:`` (the server's reply, not the client's value) still reads."""
    error = parse_context_error(f"Upstream returned error: '{CE}'")
    assert error is not None and error.kind is K.PROMPT_PLUS_OUTPUT_OVER_WINDOW and error.window == Number(16384)

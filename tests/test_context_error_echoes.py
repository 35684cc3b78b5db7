"""Context-length error parsing (pure), a second breaker's sweep (2026-12): what a validation error quotes of
the client's own input is the client's text, never the server's refusal; comparisons "(T > W)" never read T as
the window; LiteLLM's own context substrings; and generic wordings that name their counts. Each case read wrongly
(or not at all) before its fix; numbers as printed (W window, P prompt, C output, T total)."""

from __future__ import annotations

import json

import pytest

from context_error_view import expected as _expected, view as _view
from litellm_kvwarm.context_errors import Certainty, ErrorKind, Number, parse_context_error
from litellm_kvwarm.learned_limits import limit_from_error

K = ErrorKind
LB = Certainty.LOWER_BOUND


CASES = [
    # a comparison after "maximum context length (": its first number was read as an EXACT window (40000)
    ("Request exceeds the model's maximum context length (40000 > 32768).",
     "generic-comparison", K.UNKNOWN, {"window": Number(32768), "total_tokens": Number(40000)}),
    ("Input exceeded maximum context length (40000 tokens > 32768).",
     "generic-comparison", K.UNKNOWN, {"window": Number(32768), "total_tokens": Number(40000)}),
    ("prompt exceeds the model's maximum context length of 40000 tokens requested vs 32768 allowed",
     "generic-comparison", K.UNKNOWN, {"window": Number(32768), "total_tokens": Number(40000)}),
    # LiteLLM's own context substrings (exception_mapping_utils): were not context errors at all
    ("litellm.BadRequestError: BedrockException - prompt: length: 1..200000, got 210000", "generic", K.UNKNOWN, {}),
    ("Input validation error: length limit exceeded", "generic", K.UNKNOWN, {}),
    ('{"detail": "Input text length should not exceed 1024"}', "generic", K.UNKNOWN, {}),
    ("ValidationException: Input Tokens Exceeded: Number of input tokens exceeds maximum length.", "generic", K.UNKNOWN, {}),
    ("llama_decode: failed to decode, ret = 1; context size exceeded", "generic", K.UNKNOWN, {}),
    # counts against max_model_len / max_total_tokens
    ("Prompt length 40000 exceeds max_model_len 32768.",
     "prompt-length-over-max-model-len", K.PROMPT_OVER_WINDOW, {"window": Number(32768), "prompt_tokens": Number(40000)}),
    ("The prompt length (40000) exceeds the max_model_len (32768).",
     "prompt-length-over-max-model-len", K.PROMPT_OVER_WINDOW, {"window": Number(32768), "prompt_tokens": Number(40000)}),
    ("Error: input length (40000) + max_new_tokens (1000) > max_total_tokens (32768)",
     "tgi-input-plus-new-tokens", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW,
     {"window": Number(32768), "prompt_tokens": Number(40000), "output_tokens": Number(1000)}),
    # generic wordings that name their counts: were read with no numbers, or not at all
    ("The prompt (40000 tokens) exceeds the context window (32768 tokens).",
     "generic-prompt-over-window", K.PROMPT_OVER_WINDOW, {"window": Number(32768), "prompt_tokens": Number(40000)}),
    ("Input length 33000 exceeds the model's max sequence length 32768.",
     "generic-prompt-over-window", K.PROMPT_OVER_WINDOW, {"window": Number(32768), "prompt_tokens": Number(33000)}),
    ('{"error":"prompt length (40000) exceeds context length (32768)"}',
     "generic-prompt-over-window", K.PROMPT_OVER_WINDOW, {"window": Number(32768), "prompt_tokens": Number(40000)}),
    ("token count 40000 exceeds max context length 32768.",
     "generic-count-over-window", K.UNKNOWN, {"window": Number(32768), "total_tokens": Number(40000)}),
    ("Context length exceeded: requested 40000 tokens but the model supports 32768.",
     "generic-count-over-window", K.UNKNOWN, {"window": Number(32768), "total_tokens": Number(40000)}),
    ("Request exceeds maximum context window of 131072 tokens (requested 140000)",
     "generic-count-over-window", K.UNKNOWN, {"window": Number(131072), "total_tokens": Number(140000)}),
    ("Your request exceeded the model's context window: 40000 > 32768.",
     "generic-count-over-window", K.UNKNOWN, {"window": Number(32768), "total_tokens": Number(40000)}),
    ("context length exceeded, max_seq_len 32768, got 40000.",
     "generic-count-over-window", K.UNKNOWN, {"window": Number(32768), "total_tokens": Number(40000)}),
    ("The total number of tokens (prompt + max_tokens) must not exceed 32768; got 40000.",
     "generic-prompt-plus-output", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {"window": Number(32768), "total_tokens": Number(40000)}),
    # a sentence's full stop after a lone zero is no cut digit group: was a lower bound
    ("max_tokens must be at least 1, got 0.", "vllm-output-below-one", K.OUTPUT_BELOW_ONE, {"output_tokens": Number(0)}),
]


@pytest.mark.parametrize(("text", "family", "kind", "fields"), CASES, ids=[f"{i}-{c[1]}" for i, c in enumerate(CASES)])
def test_the_sweep_s_wordings_parse_with_their_meaning(text, family, kind, fields):
    assert _view(parse_context_error(text)) == _expected(family, kind, fields)
    wrapped = "litellm.BadRequestError: OpenAIException - " + json.dumps({"error": {"message": text, "code": 400}})
    assert _view(parse_context_error(wrapped)) == _expected(family, kind, fields)


OLD_ERROR = "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens."
ECHOES = [
    # pydantic v2 str(ValidationError), as vLLM returns it for a malformed message (a tool_result block sent to chat)
    "1 validation error for ChatCompletionRequest\nmessages.2.content.str\n  Input should be a valid string "
    f"[type=string_type, input_value=[{{'type': 'tool_result', 'content': \"Error: {OLD_ERROR}\"}}], input_type=list]",
    # its errors() list (older vLLM) and FastAPI's 422 body: the "input" field echoes the client's value
    str([{"type": "string_type", "loc": ("body", "messages", 0, "content"), "msg": "Input should be a valid string",
          "input": [{"type": "text", "text": OLD_ERROR}]}]),
    json.dumps({"detail": [{"type": "string_type", "loc": ["body", "tools", 0, "function", "description"],
                            "msg": "Input should be a valid string",
                            "input": {"text": "prompt is too long: 210000 tokens > 200000 maximum"}}]}),
    json.dumps({"detail": [{"type": "missing", "loc": ["body", "model"], "msg": "Field required",
                            "input": {"messages": [{"role": "tool", "content": OLD_ERROR}]},
                            "url": "https://errors.pydantic.dev/2.11/v/missing"}]}),
]


@pytest.mark.parametrize("text", ECHOES, ids=range(len(ECHOES)))
def test_a_validation_error_that_quotes_an_old_context_error_is_the_client_s_error(text):
    for form in (text, "litellm.BadRequestError: Hosted_vllmException - " + json.dumps({"error": {"message": text}})):
        got = parse_context_error(form)
        assert got is None, got
        assert limit_from_error(got) is None


def test_a_server_s_own_refusal_inside_a_validation_error_still_parses():
    # a Python server that raises its length check inside a pydantic validator: the message is the server's, the
    # quoted input_value (with an old error of another size in it) is not
    text = ("1 validation error for ChatCompletionRequest\n  Value error, This model's maximum context length is 16384 "
            "tokens. However, your request has 17000 input tokens. [type=value_error, input_value={'messages': "
            "[{'role': 'user', 'content': \"maximum context length is 4096 tokens\"}]}, input_type=dict]")
    got = parse_context_error(text)
    assert got is not None and got.family == "vllm-request-has"
    assert got.window == Number(16384, LB) and got.prompt_tokens == Number(17000)

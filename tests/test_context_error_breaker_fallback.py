"""Context-length error parsing (pure), a breaker's round of 2026-12-06: a failed fallback hop's error that LiteLLM
appended to the first group's, vLLM's encoder prompt, texts cut right after "tokens", and wordings read as nothing
(SambaNova's sequence length, Vertex embeddings, a Bedrock OpenAI-compatible output cap). Each case read wrongly
before (the comment says how).

Numbers are as printed: W window, P prompt, C requested output, T total, L a printed limit that is not the window.
"""

from __future__ import annotations

import json

import pytest

from context_error_view import expected as _expected, view as _view
from litellm_kvwarm.context_errors import ErrorKind, Limit, LimitMeaning, Number, parse_context_error

K = ErrorKind
M = LimitMeaning

# LiteLLM's router (earlier releases; 1.108's error_normalization still names the wording) re-raised a failed
# fallback's first exception with "Received Model Group=A\nAvailable Model Group Fallbacks=[B]\nError doing the
# fallback: <B's error>" appended.
_HOP = "Received Model Group={a}\nAvailable Model Group Fallbacks=['{b}']\nError doing the fallback: {err}"
_VLLM_8K = ("litellm.ContextWindowExceededError: litellm.BadRequestError: Hosted_vllmException - This model's maximum "
            "context length is 8192 tokens. However, your request has 20000 input tokens. Please reduce the length of "
            "the input messages.")
_OPENAI_128K = ("litellm.ContextWindowExceededError: litellm.BadRequestError: OpenAIException - This model's maximum "
                "context length is 131072 tokens. However, you requested 140000 tokens (136000 in the messages, 4000 in "
                "the completion). Please reduce the length of the messages or completion.")
_TPM = ("litellm.RateLimitError: RateLimitError: OpenAIException - Rate limit reached for gpt-4-32k in organization "
        "org-x on tokens per min (TPM): Limit 80000, Used 79000, Requested 9000. Please try again in 6.75s.")

# (text, family, kind, {field: expected}); family None: not a context error
CASES = [
    # the first group failed otherwise (500, a tool_choice 400, a timeout): the fallback group's window and prompt were
    # read as the first group's (before: vllm-request-has W=8192, openai-requested W=131072, ...)
    ("litellm.InternalServerError: OpenAIException - The server had an error while processing your request. "
     + _HOP.format(a="qwen-72b", b="qwen-7b-8k", err=_VLLM_8K), None, None, {}),
    ("litellm.BadRequestError: OpenAIException - Thinking mode does not support this tool_choice. "
     + _HOP.format(a="deepseek", b="glm-4.7", err=_OPENAI_128K), None, None, {}),
    ("litellm.Timeout: APITimeoutError - Request timed out. - timeout value=600.0, time taken=600.01 seconds. "
     + _HOP.format(a="big", b="small-8k", err=_VLLM_8K), None, None, {}),
    # the first group's own refusal had no numbers: the fallback's 1,000,000 window was read as its (before)
    ('litellm.ContextWindowExceededError: litellm.BadRequestError: BedrockException - {"message":"Input is too long for '
     'requested model."}. ' + _HOP.format(a="claude", b="claude-1m", err="AnthropicException - prompt is too long: "
                                          "1200000 tokens > 1000000 maximum"), "bedrock", K.UNKNOWN, {}),
    # the first group's context error, the fallback hop rate-limited: the look-alike read the whole text (before: None)
    (_OPENAI_128K + " " + _HOP.format(a="gpt-4", b="gpt-4-32k", err=_TPM) + " LiteLLM Retried: 2 times",
     "openai-requested", K.PROMPT_OVER_WINDOW,
     {"window": Number(131072), "prompt_tokens": Number(136000), "output_tokens": Number(4000),
      "total_tokens": Number(140000)}),
    # vLLM V1 (0.11+, InputProcessor._validate_prompt_len): an encoder prompt's limit is the multimodal encoder cache
    # size, not max_model_len (before: W=4096 and W=1500, exact); 0.7-0.10 compared it with max_model_len: which, the
    # text does not say, so no number is read
    ("The encoder prompt (length 8000) is longer than the maximum model length of 4096. Make sure that `max_model_len` "
     "is no smaller than the number of text tokens plus multimodal tokens.", "vllm-encoder-prompt", K.UNKNOWN, {}),
    ("The encoder prompt (length 1500) plus the number of requested output tokens (at least 1) is longer than the "
     "maximum model length of 1500.", "vllm-encoder-prompt", K.UNKNOWN, {}),
    # a text cut right after "T tokens": vLLM 0.4-0.6 "you requested T tokens in the messages" (the prompt alone) or
    # OpenAI's "(P in the messages, C in the completion)" may have followed (before: deepseek-requested-total,
    # prompt + output over the window, T exact)
    ("This model's maximum context length is 32768 tokens. However, you requested 32818 tokens", "openai-requested-cut",
     K.UNKNOWN, {"window": Number(32768), "total_tokens": Number(32818)}),
    ("This model's maximum context length is 32768 tokens. However, you requested 40000 token", "openai-requested-cut",
     K.UNKNOWN, {"window": Number(32768), "total_tokens": Number(40000)}),
    ("This model's maximum context length is 8192 tokens, however you requested 10000 tokens", "openai-requested-cut",
     K.UNKNOWN, {"window": Number(8192), "total_tokens": Number(10000)}),
    # DeepSeek's own wording, whole: prompt + output over the window, as before
    ("This model's maximum context length is 131072 tokens. However, you requested 140000 tokens. Please reduce the "
     "length of the messages or completion.", "deepseek-requested-total", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW,
     {"window": Number(131072), "total_tokens": Number(140000)}),
    # OpenAI embeddings' per-request sum cut before " per request" (before: groq-requested W=300000 exact); Groq's own
    # message ends the same way, so a bare one is read only after Groq's first sentence or inside its JSON body
    ("litellm.BadRequestError: OpenAIException - Requested 400000 tokens, max 300000 tokens", None, None, {}),
    ("Requested 20513 tokens, max 8192 tokens", None, None, {}),
    ("Please reduce the length of the messages or completion. Requested 20513 tokens, max 8192 tokens",
     "groq-requested", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {"window": Number(8192), "total_tokens": Number(20513)}),
    (json.dumps({"error": {"message": "Requested 20513 tokens, max 8192 tokens", "code": "context_length_exceeded"}}),
     "groq-requested", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {"window": Number(8192), "total_tokens": Number(20513)}),
    # SambaNova Cloud (cline/cline#294, 2024-09): every number printed (before: None)
    ("Requested generation length 1 is not possible! The provided prompt is 4309 tokens long, so generating 1 tokens "
     "requires a sequence length of 4310, but the maximum supported sequence length is just 4096!",
     "sambanova-generation-length", K.PROMPT_OVER_WINDOW,
     {"window": Number(4096), "prompt_tokens": Number(4309), "output_tokens": Number(1), "total_tokens": Number(4310)}),
    ("Requested generation length 4096 is not possible! The provided prompt is 14000 tokens long, so generating 4096 "
     "tokens requires a sequence length of 18096, but the maximum supported sequence length is just 16384!",
     "sambanova-generation-length", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW,
     {"window": Number(16384), "prompt_tokens": Number(14000), "output_tokens": Number(4096),
      "total_tokens": Number(18096)}),
    # Vertex AI text embeddings (text-embedding-004/005): the limit is summed over the request's inputs (before: None)
    ("400 Unable to submit request because the input token count is 34708 but the model supports up to 20000. Reduce "
     "the input token count and try again.", "vertex-embeddings", K.PROMPT_OVER_WINDOW,
     {"prompt_tokens": Number(34708), "printed_limit": Limit(20000, M.REQUEST_LIMIT)}),
    ('Failed to generate code embeddings: Api(BadRequest("input token count is 20633 but the model supports up to '
     '20000"))', "vertex-embeddings", K.PROMPT_OVER_WINDOW,
     {"prompt_tokens": Number(20633), "printed_limit": Limit(20000, M.REQUEST_LIMIT)}),
    # Gemini's own wording keeps its input limit
    ("400 Unable to submit request because the input token count is 1048577 but model only supports up to 1048576. "
     "Reduce the input token count and try again.", "vertex-gemini", K.PROMPT_OVER_WINDOW,
     {"prompt_tokens": Number(1048577), "printed_limit": Limit(1048576, M.INPUT_LIMIT)}),
    # an OpenAI-compatible endpoint on Bedrock (qwen3-32b, decisionbox-io/decisionbox#347): an output cap (before: None)
    ('ValidationException: {"error":{"code":"validation_error","message":"\'max_tokens\' (990000) exceeds model maximum '
     '(32768)","param":null,"type":"invalid_request_error"}}', "max-tokens-exceeds-model-maximum", K.OUTPUT_OVER_LIMIT,
     {"output_tokens": Number(990000), "printed_limit": Limit(32768, M.OUTPUT_LIMIT)}),
]


@pytest.mark.parametrize(("text", "family", "kind", "fields"), CASES, ids=[f"{i}-{c[1]}" for i, c in enumerate(CASES)])
def test_breaker_round_reads_each_text_as_its_server_meant_it(text, family, kind, fields):
    assert _view(parse_context_error(text)) == _expected(family, kind, fields)

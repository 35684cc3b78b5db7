"""Context-length error parsing (pure), a breaker's fourth round: wordings from real servers the parser misread, each
with the family, kind and numbers it must report (a field not named must be ``None``), checked bare and in the
wrappers real messages travel in (LiteLLM prefixes, JSON bodies, Python reprs, SSE ``event: error`` lines, router
suffixes, HTML-escaped bodies).

Numbers are as printed: W window, P prompt, C requested output, T total, L a printed limit that is not the window.
"""

from __future__ import annotations

import html
import json

import pytest

from context_error_view import expected as _expected, view as _view
from litellm_kvwarm.context_errors import Certainty, ErrorKind, Number, parse_context_error
from litellm_kvwarm.learned_limits import limit_from_error

EXACT, LB = Certainty.EXACT, Certainty.LOWER_BOUND
K = ErrorKind

# (text, family, kind, {field: expected}): each read wrongly before its fix (the comment says how).
ROUND4_FAULTS = [
    # vLLM's early reject of a multimodal item larger than the encoder cache (vllm-project/vllm PR #33110, 2026-01,
    # InputProcessor._validate_model_input; quoted in vllm-project/vllm#34040, 2026-02, GLM-OCR, and zai-org/GLM-OCR#67):
    # a length refusal of the request's media, read as None (LiteLLM alone fails it; a larger deployment's encoder
    # cache may hold it). The numbers are one item's embeddings against the encoder cache, neither the prompt nor
    # the window: none read (as for vLLM 0.11+'s "The encoder prompt (length P) ..." against the same cache).
    ("The decoder prompt contains a(n) image item with length 6042, which exceeds the pre-allocated encoder cache size "
     "4800. Please reduce the input size or increase the encoder cache size by setting --limit-mm-per-prompt at "
     "startup.",
     "vllm-encoder-cache", K.UNKNOWN, {}),
    # the same counted in embeddings (a vLLM fork's input processor raises it as VLLMValidationError, f"The
    # {prompt_type} prompt contains a(n) {modality} item with {num_embeds} embedding tokens, which exceeds the
    # pre-allocated encoder cache size {self.mm_encoder_cache_size}. ..."; a client's tests quote both forms, 2026)
    ("The decoder prompt contains a(n) image item with 4230 embedding tokens, which exceeds the pre-allocated encoder "
     "cache size 4225. Please reduce the input size or increase the encoder cache size by setting "
     "--limit-mm-per-prompt at startup.",
     "vllm-encoder-cache", K.UNKNOWN, {}),
    # a video item, as ms-swift's FAQ quotes it (modelscope/ms-swift docs, Q21: "ValueError: the decoder prompt contains
    # a(n) video item with length 16758, which exceeds the pre-allocated encoder cache size 16384. please reduce ...")
    ("ValueError: the decoder prompt contains a(n) video item with length 16758, which exceeds the pre-allocated "
     "encoder cache size 16384. please reduce the input size or increase the encoder cache size by setting "
     "--limit-mm-per-prompt at startup.",
     "vllm-encoder-cache", K.UNKNOWN, {}),
    # HF transformers' GenerationMixin._validate_generated_length (transformers 4.39+ raises ValueError: f"Input length
    # of {input_ids_string} is {input_ids_length}, but `max_length` is set to {generation_config.max_length}. This can
    # lead to unexpected behavior. You should consider increasing `max_length` or, better yet, setting
    # `max_new_tokens`."; seen as a server's error with ChatGLM at max_length 8192): read as None. P is the prompt
    # in the server's own tokens, exact. max_length is the generation's total length (prompt + new tokens) as
    # configured for that call (the model's generation_config, the client's own max_length, or transformers' default
    # 20), so it is not read as the window nor as a limit to learn. The prompt reaches it alone: PROMPT_OVER_WINDOW
    # (no smaller output budget serves it there).
    ("ValueError: Input length of input_ids is 14317, but `max_length` is set to 8192. This can lead to unexpected "
     "behavior. You should consider increasing `max_length` or, better yet, setting `max_new_tokens`.",
     "transformers-max-length", K.PROMPT_OVER_WINDOW, {"prompt_tokens": Number(14317)}),
    # transformers' default max_length (20) on a server that never sets max_new_tokens: the same refusal (a look-alike
    # before round 4; read so that a chain step serves it, as nothing is learned from it: see below)
    ("Input length of input_ids is 35, but `max_length` is set to 20. This can lead to unexpected behavior. You should "
     "consider increasing `max_length` or, better yet, setting `max_new_tokens`.",
     "transformers-max-length", K.PROMPT_OVER_WINDOW, {"prompt_tokens": Number(35)}),
    # older transformers (4.2x-4.38) logged it as a warning, encoder-decoder models name decoder_input_ids
    ("Input length of decoder_input_ids is 600, but `max_length` is set to 512. This can lead to unexpected behavior. "
     "You should consider increasing `max_new_tokens`.",
     "transformers-max-length", K.PROMPT_OVER_WINDOW, {"prompt_tokens": Number(600)}),
    # a prompt that fills the window exactly, with any output asked (vllm-project/vllm-ascend#11557, 2026-07, vLLM
    # 0.18+ wording: "... you requested 1 output tokens and your prompt contains at least 4096 input tokens ..."): the
    # prompt alone leaves no room for one output token, but the kind was PROMPT_PLUS_OUTPUT_OVER_WINDOW (only a prompt
    # strictly over the window was read as prompt-alone), as if a smaller output budget could serve it
    ("This model's maximum context length is 4096 tokens. However, you requested 1 output tokens and your prompt "
     "contains at least 4096 input tokens, for a total of at least 4097 tokens. Please reduce the length of the input "
     "prompt or the number of requested output tokens. (parameter=input_tokens, value=4096)",
     "vllm-0.18-0.31", K.PROMPT_OVER_WINDOW,
     {"window": Number(4096), "prompt_tokens": Number(4096, LB), "output_tokens": Number(1),
      "total_tokens": Number(4097, LB)}),
    # the whole kind: every wording whose kind follows the numbers, a prompt exactly at the window. Anthropic's
    # "input length and `max_tokens` exceed context limit: P + C > W" (docs.claude.com errors, 2025-2026):
    ("input length and `max_tokens` exceed context limit: 200000 + 1 > 200000, decrease input length or `max_tokens` "
     "and try again",
     "anthropic-input-and-max-tokens", K.PROMPT_OVER_WINDOW,
     {"window": Number(200000), "prompt_tokens": Number(200000), "output_tokens": Number(1)}),
    # TGI (huggingface/text-generation-inference router/src/validation.rs, 1.x-3.x):
    ("Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: 4096 `inputs` tokens and 1 "
     "`max_new_tokens`",
     "tgi-total", K.PROMPT_OVER_WINDOW,
     {"window": Number(4096), "prompt_tokens": Number(4096), "output_tokens": Number(1)}),
    # SGLang (sgl-project/sglang python/sglang/srt/managers/tokenizer_manager.py, 0.4.3+):
    ("Requested token count exceeds the model's maximum context length of 4096 tokens. You requested a total of 4097 "
     "tokens: 4096 tokens from the input messages and 1 tokens for the completion. Please reduce the number of tokens "
     "in the input messages or the completion to fit within the limit.",
     "sglang-requested-total", K.PROMPT_OVER_WINDOW,
     {"window": Number(4096), "prompt_tokens": Number(4096), "output_tokens": Number(1),
      "total_tokens": Number(4097)}),
]

# Already right, kept so: a prompt below the window stays prompt + output; the decoder prompt at the window was already
# prompt-alone; an approximate prompt at the window (OpenRouter's "about") decides nothing alone.
ROUND4_KEPT = [
    ("This model's maximum context length is 4096 tokens. However, you requested 1 output tokens and your prompt "
     "contains at least 4095 input tokens, for a total of at least 4096 tokens.",
     "vllm-0.18-0.31", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW,
     {"window": Number(4096), "prompt_tokens": Number(4095, LB), "output_tokens": Number(1),
      "total_tokens": Number(4096, LB)}),
    ("The decoder prompt (length 4096) plus the number of requested output tokens (at least 1) is longer than the "
     "maximum model length of 4096.",
     "vllm-decoder-prompt", K.PROMPT_OVER_WINDOW, {"window": Number(4096), "prompt_tokens": Number(4096)}),
    # vLLM's pooling check (serving_engine._validate_input, 0.10+: f"... you requested {token_num} tokens in the input
    # for {operation}. ...", operation "embedding generation", "classification", "score"): the input alone
    ("This model's maximum context length is 512 tokens. However, you requested 600 tokens in the input for "
     "classification. Please reduce the length of the input.",
     "vllm-requested-in-messages", K.PROMPT_OVER_WINDOW, {"window": Number(512), "prompt_tokens": Number(600)}),
]

# Look-alikes that are not context errors: TGI's own parameter checks (router/src/validation.rs), transformers' bare
# default warning about max_length without counts, Anthropic's byte limits.
ROUND4_NOT_ERRORS = [
    ("Input validation error: `truncate` must be strictly positive and less than 1024. Given: 2048", None, None, {}),
    ("Input validation error: `max_new_tokens` must be strictly positive", None, None, {}),
    ("Using the model-agnostic default `max_length` (=20) to control the generation length. We recommend setting "
     "`max_new_tokens` to control the maximum length of the generation.", None, None, {}),
    ("messages.1.content.0.image.source.base64: image exceeds 5 MB maximum: 6291456 bytes > 5242880 bytes",
     None, None, {}),
    ("Request exceeds the maximum allowed number of bytes.", None, None, {}),
    # vLLM's count limit on media (multimodal registry, 0.6+): shares "--limit-mm-per-prompt" with the encoder-cache
    # refusal, but is a count, not a length
    ("At most 1 image(s) may be provided in one request. You can set `--limit-mm-per-prompt` to increase this limit.",
     None, None, {}),
    # vLLM's pooling/completions check of the client's own truncate_prompt_tokens (serving_engine._validate_truncation
    # _size: "truncate_prompt_tokens value (N) is greater than max_model_len (M). Please, select a smaller truncation
    # size."): the client's invalid parameter, not a refusal on length
    ("truncate_prompt_tokens value (10000) is greater than max_model_len (8192). Please, select a smaller truncation "
     "size.", None, None, {}),
    # SGLang's log line with --allow-auto-truncate (python/sglang/srt/managers/utils.py validate_input_length): the
    # request was served, cut
    ("Request length is longer than the KV cache pool size or the max context length. Truncated.", None, None, {}),
]

WRAPPERS = {
    "bare": lambda t: t,
    "litellm-bad-request": lambda t: "litellm.BadRequestError: Hosted_vllmException - " + t,
    "litellm-context-window": lambda t: (
        "litellm.ContextWindowExceededError: litellm.BadRequestError: OpenAIException - " + t),
    "json-body": lambda t: json.dumps({"error": {"message": t, "type": "BadRequestError", "code": 400}}),
    "python-repr": lambda t: "Error code: 400 - " + str({"error": {"message": t, "type": "BadRequestError", "code": 400}}),
    "sse-error": lambda t: "event: error\ndata: " + json.dumps({"type": "error", "error": {"message": t}}) + "\n\n",
    "router-suffix": lambda t: t + "\nReceived Model Group=fast\nAvailable Model Group Fallbacks=None LiteLLM Retried: 2 times",
    "html-escaped": lambda t: html.escape("Error code: 400 - " + str({"error": {"message": t}})),
}

CASES = ROUND4_FAULTS + ROUND4_KEPT + ROUND4_NOT_ERRORS


# every case in every wrapper, but a look-alike under LiteLLM's ContextWindowExceededError name: LiteLLM never names
# a look-alike so, and that name alone reads as a context error
def wrapped(cases: list) -> list:
    """Each (text, family, kind, fields) case as a pytest param in every wrapper (id "i-family-wrapper")."""
    return [pytest.param(*case, wrapper, id=f"{i}-{case[1]}-{wrapper}") for i, case in enumerate(cases)
            for wrapper in sorted(WRAPPERS) if not (case[1] is None and wrapper == "litellm-context-window")]


WRAPPED = wrapped(CASES)


@pytest.mark.parametrize(("text", "family", "kind", "fields", "wrapper"), WRAPPED)
def test_round4_message_parses_with_its_meaning_in_any_wrapper(text, family, kind, fields, wrapper):
    assert _view(parse_context_error(WRAPPERS[wrapper](text))) == _expected(family, kind, fields)


# Cut short after the wording's first words (a relayed body cut at a fixed length): still the same refusal.
ROUND4_CUT = [
    ("The decoder prompt contains a(n) image item with length 6042, which exceeds the pre-allocated encoder cache size 48",
     "vllm-encoder-cache", K.UNKNOWN, {}),
    ("Input length of input_ids is 14317, but `max_length` is set to 81",
     "transformers-max-length", K.PROMPT_OVER_WINDOW, {"prompt_tokens": Number(14317)}),
]


@pytest.mark.parametrize(("text", "family", "kind", "fields"), ROUND4_CUT, ids=[f"cut-{i}" for i in range(len(ROUND4_CUT))])
def test_round4_cut_message_keeps_its_reading(text, family, kind, fields):
    assert _view(parse_context_error(text)) == _expected(family, kind, fields)


@pytest.mark.parametrize("text", [
    "Input length of input_ids is 35, but `max_length` is set to 20. This can lead to unexpected behavior.",
    "ValueError: Input length of input_ids is 14317, but `max_length` is set to 8192. This can lead to unexpected "
    "behavior. You should consider increasing `max_length` or, better yet, setting `max_new_tokens`.",
    "The decoder prompt contains a(n) image item with length 6042, which exceeds the pre-allocated encoder cache size "
    "4800. Please reduce the input size or increase the encoder cache size by setting --limit-mm-per-prompt at startup.",
])
def test_round4_refusals_teach_no_limit(text):
    """transformers' max_length is the call's generation setting and the encoder cache is not the window: a refusal
    read, never a deployment limit learned from it (not even with the refused prompt's exact count)."""
    error = parse_context_error(text)
    assert error is not None
    assert limit_from_error(error) is None
    assert limit_from_error(error, refused_prompt_tokens=50_000) is None

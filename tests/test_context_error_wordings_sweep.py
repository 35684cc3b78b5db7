"""Context-length error parsing (pure), third part: a sweep of server wordings (Groq, LiteLLM's own texts,
llama.cpp, LM Studio, Vertex, Bedrock, SambaNova, Moonshot, OpenAI/SGLang output caps, ...) and their
look-alikes.

Each row is a message as a server (or LiteLLM) prints it, with the exact family, kind and numbers the
parser must report; a field not named must be ``None``. Numbers are as printed: W window, P prompt, C
requested output, T total (prompt + output), L a printed limit that is not the window (with its meaning).
A number that ends the text may have been cut, so it is a lower bound there (see ``context_errors``).
Every positive row is also checked through the wrappers it travels in (LiteLLM prefixes, JSON bodies,
Python reprs, trailing router text), so a fix covers the wording, not the one example.
"""

from __future__ import annotations

import json
import re

import pytest

from litellm_kvwarm.context_errors import (
    Certainty,
    ContextError,
    ErrorKind,
    Limit,
    LimitMeaning,
    Number,
    is_context_error,
    parse_context_error,
)
from context_error_view import FIELDS, SLOTS, expected as _expected, view as _view  # noqa: F401
from litellm_kvwarm.learned_limits import LimitKind, limit_from_error

EXACT, LB, UB, APPROX = Certainty.EXACT, Certainty.LOWER_BOUND, Certainty.UPPER_BOUND, Certainty.APPROXIMATE
K = ErrorKind
M = LimitMeaning


GROQ_BODY = (
    "Error code: 400 - {{'error': {{'message': '{}', 'type': 'invalid_request_error', 'param': 'messages', "
    "'code': 'context_length_exceeded'}}}}"
)

# (text, family, kind, {field: expected}); the comment above each group says where it was seen and what
# each number means.
WORDINGS = [
    # ---- Groq (code context_length_exceeded). No numbers (2024-2025, groq.BadRequestError, OpenHands #1902,
    # Scrapegraph-ai #411, letta #1963): a context error of unknown kind.
    ("Please reduce the length of the messages or completion.", "generic", K.UNKNOWN, {}),
    (GROQ_BODY.format("Please reduce the length of the messages or completion."), "generic", K.UNKNOWN, {}),
    ("GroqException - Error code: 400 - {'error': {'message': 'Please reduce the length of the messages or "
     "completion.', 'type': 'invalid_request_error', 'param': 'messages', 'code': 'context_length_exceeded'}}",
     "generic", K.UNKNOWN, {}),
    # Groq with numbers (its newer form as reported to this project; no public sample found): "Requested T tokens,
    # max W tokens": T what the request needs (prompt + max_tokens), W the model's window (8192 for llama3-8b-8192).
    # (A bare "Requested T tokens, max W tokens" that ends the text: tests/test_context_error_breaker_fallback.py.)
    ("Requested 20513 tokens, max 8192 tokens. Please retry with a shorter prompt.", "groq-requested",
     K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {"window": Number(8192), "total_tokens": Number(20513)}),
    ("Please reduce the length of the messages or completion. Requested 20513 tokens, max 8192 tokens", "groq-requested",
     K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {"window": Number(8192), "total_tokens": Number(20513)}),
    ("Please reduce the length of the messages or completion. Requested 20513 tokens, max 8192 tokens.",
     "groq-requested", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {"window": Number(8192), "total_tokens": Number(20513)}),
    (GROQ_BODY.format("Please reduce the length of the messages or completion. Requested 131500 tokens, max 131072 "
                      "tokens"),
     "groq-requested", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {"window": Number(131072), "total_tokens": Number(131500)}),
    # Groq's output cap (2024-07 groq-moa #8; 2025-06 Roo-Code #5136, qwen3-32b): L is the most output tokens
    # per request, never the window.
    ("Error code: 400 - {'error': {'message': 'max_tokens for `llama-3.1-8b-instant` must be less than or equal to "
     "8000', 'type': 'invalid_request_error'}}", "max-tokens-cap", K.OUTPUT_OVER_LIMIT,
     {"printed_limit": Limit(8000, M.OUTPUT_LIMIT)}),
    ("`max_tokens` must be less than or equal to `40960`, the maximum value for `max_tokens` is less than the "
     "`context_window` for this model", "max-tokens-cap", K.OUTPUT_OVER_LIMIT,
     {"printed_limit": Limit(40960, M.OUTPUT_LIMIT)}),
    # the same cap worded by other servers and gateways (2025-2026): a gateway's body for a DeepSeek model, the
    # pydantic validation of Anthropic-compatible servers, "at most"
    ('{"code":400,"reason":"INVALID_REQUEST_BODY","message":"max_tokens must be less than or equal to 131072",'
     '"metadata":{}}', "max-tokens-cap", K.OUTPUT_OVER_LIMIT, {"printed_limit": Limit(131072, M.OUTPUT_LIMIT)}),
    ('{"error": {"type": "invalid_request_error", "message": "max_tokens: Input should be less than or equal to '
     '30000"}}', "max-tokens-cap", K.OUTPUT_OVER_LIMIT, {"printed_limit": Limit(30000, M.OUTPUT_LIMIT)}),
    ("max_tokens must be at most 128000.", "max-tokens-cap", K.OUTPUT_OVER_LIMIT,
     {"printed_limit": Limit(128000, M.OUTPUT_LIMIT)}),
    # ---- LiteLLM's own texts. ContextWindowExceededError wrapping a server message keeps that message's numbers
    # (litellm exception_mapping_utils: "ContextWindowExceededError: {Provider}Exception - {message}").
    ("litellm.ContextWindowExceededError: litellm.BadRequestError: ContextWindowExceededError: OpenAIException - "
     "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens (8000 in the messages, "
     "1000 in the completion). Please reduce the length of the messages or completion.", "openai-requested",
     K.PROMPT_PLUS_OUTPUT_OVER_WINDOW,
     {"window": Number(8192), "prompt_tokens": Number(8000), "output_tokens": Number(1000),
      "total_tokens": Number(9000)}),
    ("litellm.ContextWindowExceededError: AzureException ContextWindowExceededError - This model's maximum context "
     "length is 8192 tokens. However, your messages resulted in 9000 tokens. Please reduce the length of the "
     "messages.", "openai-messages-resulted", K.PROMPT_OVER_WINDOW,
     {"window": Number(8192), "prompt_tokens": Number(9000)}),
    ("litellm.ContextWindowExceededError: litellm.BadRequestError: AnthropicError - b'{\"type\":\"error\",\"error\":"
     "{\"type\":\"invalid_request_error\",\"message\":\"prompt is too long: 205668 tokens > 200000 maximum\"}}'",
     "anthropic-prompt-too-long", K.PROMPT_OVER_WINDOW, {"window": Number(200000), "prompt_tokens": Number(205668)}),
    ("litellm.ContextWindowExceededError: litellm.BadRequestError: GroqException - {\"error\":{\"message\":\"Please "
     "reduce the length of the messages or completion. Requested 20513 tokens, max 8192 tokens\",\"type\":"
     "\"invalid_request_error\",\"param\":\"messages\",\"code\":\"context_length_exceeded\"}} LiteLLM Retried: 2 times, "
     "LiteLLM Max Retries: 3", "groq-requested", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW,
     {"window": Number(8192), "total_tokens": Number(20513)}),
    ("litellm.ContextWindowExceededError: BedrockException: Context Window Error - {\"message\":\"Input is too long "
     "for requested model.\"}", "bedrock", K.UNKNOWN, {}),
    # LiteLLM's wrapper words alone: a context error without numbers.
    ("ContextWindowExceededError", "generic", K.UNKNOWN, {}),
    ("litellm.ContextWindowExceededError: ContextWindowExceededError: GroqException - Please reduce the length of "
     "the messages or completion.", "generic", K.UNKNOWN, {}),
    # litellm's mock_response="litellm.ContextWindowExceededError", and its proxy's normalised error code
    ("litellm.ContextWindowExceededError: this is a mock context window exceeded error", "generic", K.UNKNOWN, {}),
    ('{"error": {"message": "Bad request", "type": "invalid_request_error", "code": "400_CONTEXT_WINDOW_EXCEEDED"}}',
     "generic", K.UNKNOWN, {}),
    ("litellm.ContextWindowExceededError: Context compaction: A known input window and a smaller output allowance "
     "are required", "generic", K.UNKNOWN, {}),
    # Vertex's payload-size refusal (bytes) that LiteLLM maps to ContextWindowExceededError: the byte count is not
    # a token count, so no number is read.
    ("litellm.ContextWindowExceededError: VertexAIException - 400 Request payload size exceeds the limit: 20971520 "
     "bytes.", "generic", K.UNKNOWN, {}),
    # Router pre-call check (litellm router._pre_call_checks): "Max Input Tokens" is the deployment's configured
    # max_input_tokens (an input limit), "Got" LiteLLM's own token count of the prompt (an estimate).
    ("litellm.ContextWindowExceededError: litellm._pre_call_checks: Context Window exceeded for given call. No "
     "models have context window large enough for this call.\nModel=gpt-4, Max Input Tokens=8192, Got=9000\n"
     "Received Model Group=gpt-4\nAvailable Model Group Fallbacks=None", "litellm-pre-call", K.PROMPT_OVER_WINDOW,
     {"prompt_tokens": Number(9000, APPROX), "printed_limit": Limit(8192, M.INPUT_LIMIT)}),
    ("litellm.ContextWindowExceededError: litellm._pre_call_checks: Context Window exceeded for given call. No "
     "models have context window large enough for this call.\nModel=gpt-4, Max Input Tokens=8192, Got=9000",
     "litellm-pre-call", K.PROMPT_OVER_WINDOW,
     {"prompt_tokens": Number(9000, LB), "printed_limit": Limit(8192, M.INPUT_LIMIT)}),
    # several deployments concatenated: whose limit is whose is unknown, so no limit is reported
    ("litellm.ContextWindowExceededError: litellm._pre_call_checks: Context Window exceeded for given call. No "
     "models have context window large enough for this call.\nModel=gpt-4, Max Input Tokens=8192, Got=9000"
     "Model=gpt-3.5-turbo, Max Input Tokens=4096, Got=9000 LiteLLM Retried: 1 times",
     "litellm-pre-call", K.PROMPT_OVER_WINDOW, {"prompt_tokens": Number(9000, APPROX)}),
    # Bedrock Mantle (OpenAI-compatible Bedrock) validation_error, which LiteLLM rewrites to Anthropic's wording:
    # P the prompt, W the model's window.
    ("litellm.BadRequestError: OpenAIException - prompt tokens (250000) exceed model maximum (200000)",
     "bedrock-mantle", K.PROMPT_OVER_WINDOW, {"window": Number(200000), "prompt_tokens": Number(250000)}),
    # ---- vLLM, all versions: the numbers keep their meaning behind the 2025+ "(parameter=..., value=...)" suffix.
    ("This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the prompt, "
     "1000 in the completion). Please reduce the length of the prompt or completion.", "openai-requested",
     K.PROMPT_PLUS_OUTPUT_OVER_WINDOW,
     {"window": Number(4096), "prompt_tokens": Number(4000), "output_tokens": Number(1000),
      "total_tokens": Number(5000)}),
    ("'max_tokens' or 'max_completion_tokens' is too large: 5000. This model's maximum context length is 4096 "
     "tokens and your request has 100 input tokens (5000 > 4096 - 100). (parameter=max_tokens, value=5000)",
     "vllm-max-tokens-too-large", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW,
     {"window": Number(4096), "prompt_tokens": Number(100), "output_tokens": Number(5000)}),
    ("400 This model's maximum context length is 65536 tokens. However, your request has 93196 input tokens. "
     "Please reduce the length of the input messages. (parameter=input_tokens, value=93196)", "vllm-request-has",
     K.UNKNOWN, {"window": Number(65536, LB), "prompt_tokens": Number(93196)}),
    ("The decoder prompt (length 5000) is longer than the maximum model length of 4096. Make sure that "
     "`max_model_len` is no smaller than the number of text tokens plus multimodal tokens.", "vllm-decoder-prompt",
     K.PROMPT_OVER_WINDOW, {"window": Number(4096), "prompt_tokens": Number(5000)}),
    # without the length (as a client's test double of vLLM's offline engine quotes it): W still the window
    ("ValueError: The decoder prompt is longer than the maximum model length of 49152.", "vllm-prompt-length-of",
     K.PROMPT_OVER_WINDOW, {"window": Number(49152)}),
    ("Input prompt (5000 tokens) is too long and exceeds limit of 4096", "vllm-v0-scheduler", K.PROMPT_OVER_WINDOW,
     {"window": Number(4096, LB), "prompt_tokens": Number(5000)}),
    # ---- SGLang (also behind Zhipu's "API 调用参数有误" prefix, Open-AutoGLM #195, 2025-12)
    ("Error code: 400 - {'error': {'code': '1210', 'message': \"API 调用参数有误，请检查文档。Requested token count "
     "exceeds the model's maximum context length of 25480 tokens. You requested a total of 25515 tokens: 22515 "
     "tokens from the input messages and 3000 tokens for the completion. Please reduce the number of tokens in the "
     "input messages or the completion to fit within the limit.\"}}", "sglang-requested-total",
     K.PROMPT_PLUS_OUTPUT_OVER_WINDOW,
     {"window": Number(25480), "total_tokens": Number(25515), "prompt_tokens": Number(22515),
      "output_tokens": Number(3000)}),
    # SGLang's "max_completion_tokens is too large: C.This model supports at most N completion tokens." prints its
    # context length as N, OpenAI the model's output cap in the same words: read as the output cap (never learned
    # as a window; the retry at N then meets the window error, which names the window).
    ("max_completion_tokens is too large: 999999.This model supports at most 262144 completion tokens.",
     "openai-max-output", K.OUTPUT_OVER_LIMIT,
     {"output_tokens": Number(999999), "printed_limit": Limit(262144, M.OUTPUT_LIMIT)}),
    ("Input length (5000 tokens) exceeds the maximum allowed length (4090 tokens). Use a shorter input or enable "
     "--allow-auto-truncate.", "sglang-max-allowed", K.PROMPT_OVER_WINDOW,
     {"prompt_tokens": Number(5000), "printed_limit": Limit(4090, M.KV_CAPACITY)}),
    # ---- TGI (also HF Inference, Together)
    ("Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: 4000 `inputs` tokens and "
     "200 `max_new_tokens`", "tgi-total", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW,
     {"window": Number(4096), "prompt_tokens": Number(4000), "output_tokens": Number(200)}),
    # ---- llama.cpp server
    # non-causal models (embeddings, rerank) must fit one physical batch: P the input, L n_ubatch
    ("input (3926 tokens) is too large to process. increase the physical batch size (current batch size: 2048)",
     "llamacpp-ubatch", K.PROMPT_OVER_WINDOW, {"prompt_tokens": Number(3926), "printed_limit": Limit(2048, M.BATCH_LIMIT)}),
    ('{"error":{"code":500,"message":"input (518 tokens) is too large to process. increase the physical batch size '
     '(current batch size: 512)"}}', "llamacpp-ubatch", K.PROMPT_OVER_WINDOW,
     {"prompt_tokens": Number(518), "printed_limit": Limit(512, M.BATCH_LIMIT)}),
    ('{"error":{"code":500,"message":"input is too large to process. increase the physical batch size"}}',
     "llamacpp-ubatch", K.UNKNOWN, {}),
    # an embedding input over the slot's n_ctx (server.cpp, type exceed_context_size_error): prompt alone
    ("input is larger than the max context size. skipping", "llamacpp", K.UNKNOWN, {}),
    ('{"error":{"message":"input is larger than the max context size"},"n_ctx":512}', "llamacpp",
     K.PROMPT_OVER_WINDOW, {"window": Number(512)}),
    # llama_decode found no KV slot (2024 server.cpp; Xinference, cortex repeat it): the KV cache filled
    ("Server error: {'code': 500, 'message': 'Input prompt is too big compared to KV size. Please try increasing KV "
     "size.', 'type': 'server_error'}", "llamacpp-context-exceeded", K.UNKNOWN, {}),
    ("Error: 400 request (481909 tokens) exceeds the available context size (32768 tokens), try increasing it",
     "llamacpp-request", K.PROMPT_OVER_WINDOW, {"window": Number(32768), "prompt_tokens": Number(481909)}),
    # ---- LM Studio: generation reached the loaded context length W (prompt + output over the window)
    ("Reached context length of 4096 tokens with model (arch: gpt-oss) that does not currently support "
     "mid-generation context overflow", "lmstudio-reached-context", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW,
     {"window": Number(4096)}),
    ('{"error": "Reached context length of 4096 tokens, but this model does not currently support mid-generation '
     'context overflow. Try reloading with a larger context length or shortening the prompt/chat."}',
     "lmstudio-reached-context", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {"window": Number(4096)}),
    # ---- Ollama /api/embed (truncate=false)
    ("Ollama model error: the input length exceeds the context length (status code: 400)", "generic", K.UNKNOWN, {}),
    # ---- ctransformers: T tokens evaluated so far (n_past + new) over the context length W
    ("Number of tokens (2662) exceeded maximum context length (512).", "ctransformers", K.UNKNOWN,
     {"window": Number(512), "total_tokens": Number(2662)}),
    ("Error: Request exceeded maximum context length (128000 tokens)", "generic", K.UNKNOWN, {"window": Number(128000)}),
    # ---- Google
    ("The input token count (1196265) exceeds the maximum number of tokens allowed (1048575).", "gemini",
     K.PROMPT_OVER_WINDOW, {"prompt_tokens": Number(1196265), "printed_limit": Limit(1048575, M.INPUT_LIMIT)}),
    ("Request contains too many tokens. Please reduce the input size.", "generic", K.UNKNOWN, {}),
    ("An unexpected error occurred on Google's side. Your input context is too long.", "generic", K.UNKNOWN, {}),
    # Vertex output cap "from 1 (inclusive) to N (exclusive)": the most output tokens is N - 1
    ("{'error': {'code': 400, 'message': 'Unable to submit request because it has a maxOutputTokens value of 100000 "
     "but the supported range is from 1 (inclusive) to 65537 (exclusive). Update the value and try again.'}}",
     "vertex-max-output", K.OUTPUT_OVER_LIMIT,
     {"output_tokens": Number(100000), "printed_limit": Limit(65536, M.OUTPUT_LIMIT)}),
    ('{"error":{"code":400,"message":"Unable to submit request because it has a maxOutputTokens value of 64000 but '
     'the supported range is from 1 (inclusive) to 32769 (exclusive). Update the value and try again.",'
     '"status":"INVALID_ARGUMENT"}}', "vertex-max-output", K.OUTPUT_OVER_LIMIT,
     {"output_tokens": Number(64000), "printed_limit": Limit(32768, M.OUTPUT_LIMIT)}),
    # ---- AWS Bedrock
    ("An error occurred (ValidationException) when calling the InvokeModel operation: Input is too long for "
     "requested model.", "bedrock", K.UNKNOWN, {}),
    # Titan: L the model's input limit, P the prompt
    ('{"Error": {"Code": "ValidationException", "Message": "Too many input tokens. Max input tokens: 8192, request '
     'input token count: 12273"}}', "bedrock-max-input-tokens", K.PROMPT_OVER_WINDOW,
     {"prompt_tokens": Number(12273), "printed_limit": Limit(8192, M.INPUT_LIMIT)}),
    ("An error occurred (ValidationException) when calling the InvokeModel operation: 400 Bad Request: Too many "
     "input tokens. Max input tokens: 4096, request input token count: 7262 ", "bedrock-max-input-tokens",
     K.PROMPT_OVER_WINDOW, {"prompt_tokens": Number(7262, LB), "printed_limit": Limit(4096, M.INPUT_LIMIT)}),
    # ---- Anthropic
    ("input length and `max_tokens` exceed context limit: 174167 + 64000 > 200000, decrease input length or "
     "`max_tokens` and try again", "anthropic-input-and-max-tokens", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW,
     {"window": Number(200000), "prompt_tokens": Number(174167), "output_tokens": Number(64000)}),
    # ---- OpenAI output caps (never a window)
    ("max_tokens is too large: 32000. This model supports at most 16384 completion tokens, whereas you provided "
     "32000.", "openai-max-output", K.OUTPUT_OVER_LIMIT,
     {"output_tokens": Number(32000), "printed_limit": Limit(16384, M.OUTPUT_LIMIT)}),
    ("max_completion_tokens is too large: 32,000. This model supports at most 16,384 completion tokens.",
     "openai-max-output", K.OUTPUT_OVER_LIMIT,
     {"output_tokens": Number(32000), "printed_limit": Limit(16384, M.OUTPUT_LIMIT)}),
    ("max_output_tokens is too large: 32000. This model supports at most 16384 output tokens, whereas you provided "
     "32000.", "openai-max-output", K.OUTPUT_OVER_LIMIT,
     {"output_tokens": Number(32000), "printed_limit": Limit(16384, M.OUTPUT_LIMIT)}),
    ('{"error":{"message":"Invalid \'max_output_tokens\': integer above maximum value. Expected a value <= 4096, but '
     'got 8192 instead.","type":"invalid_request_error","code":"invalid_value","param":"max_output_tokens"}}',
     "openai-max-output-above-maximum", K.OUTPUT_OVER_LIMIT,
     {"output_tokens": Number(8192), "printed_limit": Limit(4096, M.OUTPUT_LIMIT)}),
    ("Invalid 'max_tokens': integer above maximum value. Expected a value <= 32768, but got 40000 instead.",
     "openai-max-output-above-maximum", K.OUTPUT_OVER_LIMIT,
     {"output_tokens": Number(40000), "printed_limit": Limit(32768, M.OUTPUT_LIMIT)}),
    ("Your input exceeds the context window of this model. Please adjust your input and try again.", "generic",
     K.UNKNOWN, {}),
    # the embeddings batch limit keeps its meaning next to Groq's look-alike wording
    ("Requested 400000 tokens, max 300000 tokens per request", "openai-embeddings-request", K.PROMPT_OVER_WINDOW,
     {"prompt_tokens": Number(400000), "printed_limit": Limit(300000, M.REQUEST_LIMIT)}),
    # ---- SambaNova (2024-2025, via LiteLLM; OpenHands #9252): W the window, T prompt + max_completion_tokens
    ("litellm.BadRequestError: SambanovaException - The maximum context length of DeepSeek-V3-0324 is 32768. "
     "However, answering your request will take 39732 tokens. Please reduce the length of the messages or the "
     "specified max_completion_tokens value.", "sambanova", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW,
     {"window": Number(32768), "total_tokens": Number(39732)}),
    ("('Sambanova /complete call failed with status code 400.', 'The maximum context length of "
     "Meta-Llama-3.1-405B-Instruct is 8192. However, answering your request will take 32929 tokens. Please reduce "
     "the length of the messages or the specified max_completion_tokens value.\\n.')", "sambanova",
     K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {"window": Number(8192), "total_tokens": Number(32929)}),
    # ---- Cerebras (same first sentence as Groq, its own numbers)
    ("400 Please reduce the length of the messages or completion. Current length is 42328 while limit is 40000",
     "cerebras", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {"window": Number(40000, LB), "total_tokens": Number(42328)}),
    # ---- Moonshot / Kimi (error table: "Your request exceeded model token limit : {max_model_length}", the request's
    # tokens plus max_tokens over the model's length W)
    ('{"error":{"message":"Invalid request: Your request exceeded model token limit : 131072","type":'
     '"invalid_request_error"}}', "moonshot", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {"window": Number(131072)}),
    ("Your request exceeded model token limit : 131072", "moonshot", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW,
     {"window": Number(131072, LB)}),
    ("Input token length too long", "generic", K.UNKNOWN, {}),
    ("tokens in request more than max tokens allowed", "generic", K.UNKNOWN, {}),  # Z.ai code 1210
    # ---- Cohere (docs.cohere.com/reference/errors, all under the "too many tokens:" prefix)
    # an output cap, not a context overflow: L the most output tokens, C the requested max_tokens
    ("too many tokens: max tokens must be less than or equal to 4096, the maximum output for this model - received "
     "8192.", "cohere-max-tokens", K.OUTPUT_OVER_LIMIT,
     {"output_tokens": Number(8192), "printed_limit": Limit(4096, M.OUTPUT_LIMIT)}),
    ("too many tokens: minimal context could not be added to prompt (size limit exceeded by 280 tokens)",
     "cohere-excess", K.PROMPT_OVER_WINDOW, {"excess_tokens": Number(280)}),
    ("too many tokens: multi-hop prompt is too long even after truncation", "generic", K.UNKNOWN, {}),
    ("too many tokens: total number of tokens in the prompt cannot exceed 4081 - received 4292. Try using a shorter "
     "prompt, or enabling prompt truncating. See https://docs.cohere.com/reference/generate for more details.",
     "cohere", K.PROMPT_OVER_WINDOW, {"window": Number(4081), "prompt_tokens": Number(4292)}),
    # ---- Bedrock Converse output cap (2025-2026; Nova Pro 10000, Llama 3.2 Vision 8192): L the most max_tokens
    ("litellm.BadRequestError: BedrockException - {\"message\":\"The maximum tokens you requested exceeds the model "
     "limit of 8192. Try again with a maximum tokens value that is lower than 8192.\"}", "bedrock-max-tokens",
     K.OUTPUT_OVER_LIMIT, {"printed_limit": Limit(8192, M.OUTPUT_LIMIT)}),
    # ---- Z.ai / Zhipu GLM (code 1210, Anthropic- and OpenAI-compatible endpoints, 2026): P the input, W the
    # window; refused with P below W (max_tokens is counted too), so P < W means prompt + output over the window.
    ('API Error: 400 {"type":"error","error":{"message":"Invalid API parameter, please check the documentation. '
     'Request 186773 input tokens exceeds the model\'s maximum context length 202750","code":"1210"},"request_id":'
     '"202601281529202c77e5b03eed4ee9"}', "zai-request-input", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW,
     {"window": Number(202750), "prompt_tokens": Number(186773)}),
    ("Anthropic SSE error event [1210] API 调用参数有误。Request 222313 input tokens exceeds the model's maximum "
     "context length 202752 (request_id=x)", "zai-request-input", K.PROMPT_OVER_WINDOW,
     {"window": Number(202752), "prompt_tokens": Number(222313)}),
    # the window ends the text (may be cut): the prompt over it says nothing sure
    ("Anthropic SSE error event [1210] API 调用参数有误。Request 222313 input tokens exceeds the model's maximum "
     "context length 202752", "zai-request-input", K.UNKNOWN,
     {"window": Number(202752, LB), "prompt_tokens": Number(222313)}),
    # no prompt printed: over the window with or without the output, unknown
    ("Request input tokens exceeds the model's maximum context length 202752.", "zai-request-input", K.UNKNOWN,
     {"window": Number(202752)}),
    # ---- Ollama daemon / cloud (2025-2026): P the prompt, W the window
    ("Run failed: ResponseError: The prompt is too long: 262960, model maximum context length: 262144 (status code: "
     "400)", "fireworks", K.PROMPT_OVER_WINDOW, {"window": Number(262144), "prompt_tokens": Number(262960)}),
    # ---- Alibaba DashScope output cap: L the most max_tokens
    ("<400> InternalError.Algo.InvalidParameter: Range of max_tokens should be [1, 8192]", "dashscope-max-tokens",
     K.OUTPUT_OVER_LIMIT, {"printed_limit": Limit(8192, M.OUTPUT_LIMIT)}),
    ("OpenAI API error: 400 <400> InternalError.Algo.InvalidParameter: Range of input length should be [1, 204800]",
     "dashscope", K.PROMPT_OVER_WINDOW, {"printed_limit": Limit(204800, M.INPUT_LIMIT)}),
    # ---- Perplexity (sonar, 2026 recording): no numbers
    ('{"error":{"message":"The total length of all messages is too long.","type":"too_many_prompt_tokens","code":200}}',
     "generic", K.UNKNOWN, {}),
    # ---- GitHub Copilot: the error code alone
    ('{"error": {"code": "model_max_prompt_tokens_exceeded"}}', "generic", K.UNKNOWN, {}),
    # ---- vLLM output budget the server computed itself (window - prompt): modelled, not a look-alike (the
    # number ends the text, so it may have been cut: an upper bound for a negative number)
    ("max_tokens must be at least 1, got -5.", "vllm-output-below-one", K.OUTPUT_BELOW_ONE,
     {"output_tokens": Number(-5, UB)}),
]

# Look-alikes: rate limits and quotas (a per-minute or per-day budget, never the window), parameter validation
# (characters, bytes, counts of tools or messages, an output floor).
NEGATIVES = [
    # a busy server worded with tokens (found by a breaker: escalated an overloaded fast backend's 503)
    "Server overloaded: too many tokens in flight (KV cache full: 100000 tokens)",
    "Too many tokens in queue, please retry later",
    "scheduler queue has too many tokens",
    "Server is busy: too many tokens being processed concurrently",
    "Rate limit reached for model `llama3-70b-8192` in organization `org_x` on tokens per minute (TPM): Limit 6000, "
    "Used 0, Requested 8523. Please try again in 25.23s.",
    "Request too large for model `llama3-8b-8192` in organization `org_x` service tier `on_demand` on tokens per "
    "minute (TPM): Limit 6000, Requested 7135, please reduce your message size and try again.",
    "Request too large for gpt-4 in organization org-x on tokens per min (TPM): Limit 10000, Requested 12000.",
    "Request too large for gpt-4-turbo-preview in organization org-x on tokens per min (TPM): Limit 30000, Requested "
    "36000. The input or output tokens must be reduced in order to run successfully. Visit "
    "https://platform.openai.com/account/rate-limits to learn more.",
    "litellm.RateLimitError: RateLimitError: GroqException - {\"error\":{\"message\":\"Rate limit reached for model "
    "`llama3-70b-8192` in organization `org_x` service tier `on_demand` on tokens per day (TPD): Limit 500000, Used "
    "499000, Requested 2000. Please try again in 5m.\",\"type\":\"tokens\",\"code\":\"rate_limit_exceeded\"}}",
    "Error code: 413 - {'error': {'message': 'Request too large for model `llama-3.1-8b-instant` in organization "
    "`org_x` service tier `on_demand` on tokens per minute (TPM): Limit 6000, Requested 20513, please reduce your "
    "message size and try again. Need more tokens? Upgrade to Dev Tier today at "
    "https://console.groq.com/settings/billing', 'type': 'tokens', 'code': 'rate_limit_exceeded'}}",
    "This request would exceed the rate limit for your organization of 400,000 input tokens per minute.",
    "max_tokens must be at least 1",
    "max_tokens must be at least 16 for sonar.",
    "Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 16, but got 5 instead.",
    "Invalid 'max_tokens': integer below minimum value. Expected a value >= 1, but got 0 instead.",
    "Invalid 'tools': array too long. Expected an array with maximum length 128, but got an array with length 200 "
    "instead.",
    "Invalid 'messages': array too long. Expected an array with maximum length 2048, but got an array with length "
    "3000 instead.",
    "too many messages",
    "image too large: 20MB maximum",
    "messages.0.content.1.image.source.base64: image exceeds 5 MB maximum: 6000000 bytes > 5242880 bytes",
    "Invalid 'messages[0].content': string too long. Expected a string with maximum length 1048576, but got a string "
    "with length 2000000 instead.",
    # LiteLLM maps this one to ContextWindowExceededError, but it is a character limit on one string, the same on
    # every model: no window and no larger model makes it fit.
    "litellm.ContextWindowExceededError: litellm.BadRequestError: ContextWindowExceededError: OpenAIException - "
    "Invalid 'messages[1].content': string too long. Expected a string with maximum length 10485760, but got a string "
    "with length 12000000 instead.",
    "Request payload size exceeds the limit: 20971520 bytes.",
    "`max_tokens` must be greater than `thinking.budget_tokens`",
    "Input validation error: `max_new_tokens` must be strictly positive",
    "Input validation error: `truncate` must be strictly positive and less than 1024. Given: 2000",
    "truncate_prompt_tokens value (5000) is greater than max_model_len (4096). Please, select a smaller truncation "
    "size.",
    # LiteLLM router debug text appended to an error, alone
    "model=gpt-4. context_window_fallbacks=None. fallbacks=None.\n\nSet 'context_window_fallback' - "
    "https://docs.litellm.ai/docs/routing#fallbacks",
    "The output is too long",
    "messages.0.content: Input should be less than or equal to 4096.",
    "trial token rate limit exceeded, limit is 100000 tokens per minute",
    "invalid request: total number of texts must be at most 96 - received 104",
    '{"error":{"type":"request_too_large","message":"Request exceeds the maximum size"}}',
    "413 status code (no body)",
]


@pytest.mark.parametrize(("text", "family", "kind", "fields"), WORDINGS, ids=[f"{i}-{w[1]}" for i, w in enumerate(WORDINGS)])
def test_wording_parses_with_its_meaning(text, family, kind, fields):
    assert _view(parse_context_error(text)) == _expected(family, kind, fields)


@pytest.mark.parametrize("text", NEGATIVES, ids=[f"neg-{i}" for i in range(len(NEGATIVES))])
def test_look_alike_is_not_a_context_error(text):
    assert parse_context_error(text) is None
    assert not is_context_error(text)


# ---------------------------------------------------------------- the whole kind, not the one example


def _litellm_context(t: str) -> str:
    return "litellm.ContextWindowExceededError: litellm.BadRequestError: ContextWindowExceededError: OpenAIException - " + t


def _json_body(t: str) -> str:
    return json.dumps({"error": {"message": t, "type": "invalid_request_error", "param": None}})


def _json_escaped(t: str) -> str:
    return "litellm.BadRequestError: Hosted_vllmException - " + json.dumps(json.dumps({"error": {"message": t}}))


def _python_repr(t: str) -> str:
    return "Error code: 400 - " + str({"error": {"message": t, "type": "BadRequestError", "param": None, "code": 400}})


def _router_suffix(t: str) -> str:
    return t + "\nReceived Model Group=fast\nAvailable Model Group Fallbacks=None LiteLLM Retried: 2 times"


def _upper(t: str) -> str:
    return t.upper()


WRAPPERS = {
    "litellm-context": _litellm_context,
    "json-body": _json_body,
    "json-escaped": _json_escaped,
    "python-repr": _python_repr,
    "router-suffix": _router_suffix,
    "upper-case": _upper,
}


_ENDS_WITH_NUMBER = re.compile(r"\d[.,_' ]?\s*\Z")


def _ends_with_number(text: str) -> bool:
    """Whether a number ends ``text`` (it may then have been cut: a bound, which a wrapper may make exact)."""
    return _ENDS_WITH_NUMBER.search(text) is not None


def _same_values(a: tuple, b: tuple) -> bool:
    """The same family and the same numbers, whatever their certainty (and so the kind they imply)."""
    if a[0] != b[0]:
        return False
    return all(
        x == y or (isinstance(x, (Number, Limit)) and isinstance(y, type(x)) and x.value == y.value)
        for x, y in zip(a[2:], b[2:])
    )


def _reference(text: str, wrapped: str, clean: tuple) -> tuple:
    """What ``wrapped`` (``text`` in a wrapper) must read as: ``clean``, or, where a number ends ``text`` (a bound
    there) and no longer ends ``wrapped``, the reading of ``text`` with that number no longer last."""
    if not _ends_with_number(text) or _ends_with_number(wrapped):
        return clean
    reference = _view(parse_context_error(text + " (end)"))
    assert reference is not None and _same_values(clean, reference), (text, reference)
    return reference


@pytest.mark.parametrize("wrapper", sorted(WRAPPERS))
def test_every_wording_survives_the_wrappers_it_travels_in(wrapper):
    wrap = WRAPPERS[wrapper]
    failures = []
    for text, family, kind, fields in WORDINGS:
        wrapped = wrap(text)
        want = _reference(text, wrapped, _expected(family, kind, fields))
        got = _view(parse_context_error(wrapped))
        if got != want:
            failures.append(f"{text[:100]!r}\n   want {want}\n   got  {got}")
    assert not failures, f"{len(failures)} wordings read differently under {wrapper}:\n" + "\n".join(failures[:5])


@pytest.mark.parametrize("wrapper", sorted(set(WRAPPERS) - {"litellm-context"}))
def test_every_look_alike_stays_negative_in_any_wrapper(wrapper):
    wrapped = [t for t in NEGATIVES if parse_context_error(WRAPPERS[wrapper](t)) is not None]
    assert not wrapped, wrapped[:3]


# ---------------------------------------------------------------- what is learned from them


@pytest.mark.parametrize(
    "text",
    [w[0] for w in WORDINGS if w[2] is K.OUTPUT_OVER_LIMIT] + NEGATIVES,
)
def test_no_output_cap_or_look_alike_is_learned_as_a_limit(text):
    assert limit_from_error(parse_context_error(text)) is None


def test_groq_window_is_learned_and_its_tpm_quota_is_not():
    learned = limit_from_error(parse_context_error("Please reduce the length of the messages or completion. Requested "
                                                   "20513 tokens, max 8192 tokens."))
    assert (learned.kind, learned.tokens, learned.family) == (LimitKind.TOTAL, 8192, "groq-requested")
    assert limit_from_error(parse_context_error(NEGATIVES[1])) is None


def test_llamacpp_embedding_overflow_without_numbers_needs_the_prompt_count():
    error = parse_context_error("input is larger than the max context size. skipping")
    assert limit_from_error(error) is None
    learned = limit_from_error(error, refused_prompt_tokens=600)
    assert (learned.kind, learned.tokens, learned.bound) == (LimitKind.INPUT, 599, True)


def test_vertex_exclusive_bound_is_one_less_and_never_below_one():
    for excl, most in ((65537, 65536), (2, 1)):
        text = (f"Unable to submit request because it has a maxOutputTokens value of 100000 but the supported range is "
                f"from 1 (inclusive) to {excl} (exclusive). Update the value and try again.")
        assert parse_context_error(text).printed_limit == Limit(most, M.OUTPUT_LIMIT)


@pytest.mark.parametrize("text", [t for t in NEGATIVES if "per min" in t or "per day" in t or "rate limit" in t.lower()])
def test_a_quota_stays_negative_even_under_litellms_context_wrapper(text):
    """A per-minute or per-day token quota is never a window, whatever exception name wraps it."""
    assert parse_context_error(_litellm_context(text)) is None


# The sentence joint of the "maximum context length is W tokens" family, reworded by servers and gateways
# (". However, ", ", however ", "; however, "): every row of the family keeps its numbers whatever the joint.
JOINT_VARIANTS = [
    ("This model's maximum context length is 4096 tokens{j}you requested 5000 tokens (4000 in the messages, 1000 in "
     "the completion).", "openai-requested",
     {"window": Number(4096), "prompt_tokens": Number(4000), "output_tokens": Number(1000),
      "total_tokens": Number(5000)}),
    ("This model's maximum context length is 8192 tokens{j}your messages resulted in 9000 tokens.",
     "openai-messages-resulted", {"window": Number(8192), "prompt_tokens": Number(9000)}),
    ("This model's maximum context length is 4096 tokens{j}your request has 5000 input tokens.", "vllm-request-has",
     {"window": Number(4096, LB), "prompt_tokens": Number(5000)}),
    ("This model's maximum context length is 8192 tokens{j}you requested 9000 tokens. Please reduce the length.",
     "deepseek-requested-total", {"window": Number(8192), "total_tokens": Number(9000)}),
    ("The maximum context length of Meta-Llama-3.1-8B-Instruct is 8192{j}answering your request will take 9000 "
     "tokens.", "sambanova", {"window": Number(8192), "total_tokens": Number(9000)}),
]


@pytest.mark.parametrize("joint", [". However, ", ", however ", "; however, ", ". however "])
@pytest.mark.parametrize(("template", "family", "fields"), JOINT_VARIANTS, ids=[v[1] for v in JOINT_VARIANTS])
def test_the_sentence_joint_does_not_change_the_reading(template, family, fields, joint):
    got = parse_context_error(template.format(j=joint))
    assert got is not None and got.family == family
    assert {s: getattr(got, s) for s in SLOTS if getattr(got, s) is not None} == fields

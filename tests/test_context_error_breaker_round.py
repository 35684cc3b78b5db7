"""Context-length error parsing (pure), a breaker's round: kinds of message the parser misread, each with the
family, kind and numbers it must report (a field not named must be ``None``), checked bare and in the wrappers
real messages travel in (LiteLLM prefixes, JSON bodies, Python reprs, SSE ``event: error`` lines, router suffixes).

Numbers are as printed: W window, P prompt, C requested output, T total, L a printed limit that is not the window. A
number that ends the text may have been cut, so it is a lower bound there (see ``context_errors``).
"""

from __future__ import annotations

import json

import pytest

from context_error_view import expected as _expected, view as _view
from litellm_kvwarm.context_errors import Certainty, ErrorKind, Limit, LimitMeaning, Number, parse_context_error

EXACT, LB, UB, APPROX = Certainty.EXACT, Certainty.LOWER_BOUND, Certainty.UPPER_BOUND, Certainty.APPROXIMATE
K = ErrorKind
M = LimitMeaning

# (text, family, kind, {field: expected}): each read wrongly before its fix (the comment says how).
ROUND_FAULTS = [
    # "exceeds the model's context window of W tokens": the wording of many gateways and agent runtimes (Go and
    # TypeScript model routers, 2025-2026: "Input is P tokens, which exceeds the model's context window of W tokens.",
    # "P tokens exceeds the model's context window of W (context_length_exceeded)"). Read as a context error with no
    # number at all (generic): the window W was lost, and with a subject the prompt P too.
    ("prompt exceeds the model's context window of 200000 tokens",
     "generic", K.UNKNOWN, {"window": Number(200000)}),
    ("This request exceeds the model's maximum context window of 200,000 tokens.",
     "generic", K.UNKNOWN, {"window": Number(200000)}),
    ("Request exceeds model context window (4096 tokens)",
     "generic", K.UNKNOWN, {"window": Number(4096)}),
    ("Your message exceeds the model's context window of 4,096 tokens. Please shorten it.",
     "generic", K.UNKNOWN, {"window": Number(4096)}),
    ("decoder.HiddenLast: 9000 tokens exceeds the model's context window of 8192 (context_length_exceeded); truncate "
     "before pooling",
     "generic", K.UNKNOWN, {"window": Number(8192)}),
    ("Input is 9000 tokens, which exceeds the model's context window of 8192 tokens.",
     "generic-prompt-over-window", K.PROMPT_OVER_WINDOW, {"window": Number(8192), "prompt_tokens": Number(9000)}),
    ("The prompt has 9000 tokens, which exceeds the model's context length of 8192 tokens.",
     "generic-prompt-over-window", K.PROMPT_OVER_WINDOW, {"window": Number(8192), "prompt_tokens": Number(9000)}),
    ("Your prompt contains 9,000 tokens which exceeds this model's context window of 8,192 tokens",
     "generic-prompt-over-window", K.PROMPT_OVER_WINDOW, {"window": Number(8192), "prompt_tokens": Number(9000)}),
    # LiteLLM's router suffix ("\nReceived Model Group=...") after "... W tokens" was read as "W tokens received" (a
    # count compared with W): the window was lost in the router-suffix wrapper
    ("The input exceeds the model's maximum context length of 4096 tokens",
     "generic", K.UNKNOWN, {"window": Number(4096)}),
    # an output parameter over "the context window of W" was read as the prompt over it (openai-context-window,
    # PROMPT_OVER_WINDOW, no output): the requested output alone is over the window
    ("max_tokens (9000) exceeds the context window of 8192 tokens",
     "generic-output-over-window", K.OUTPUT_OVER_WINDOW, {"window": Number(8192), "output_tokens": Number(9000)}),
    # an apostrophe lost to a wrong decoding ("model?s" from an ASCII encode, U+FFFD from an invalid byte, "model\u00e2\u20ac\u2122s"
    # from a typographic apostrophe read as Windows-1252 by a console or log pipeline): every wording spelled with
    # "model's" or "endpoint's" (SGLang, vLLM, OpenRouter, Z.ai) read as nothing, or as a numberless generic error
    ("The input (516368 tokens) is longer than the model?s context length (262144 tokens).",
     "sglang-context-length", K.PROMPT_OVER_WINDOW, {"window": Number(262144), "prompt_tokens": Number(516368)}),
    ("The input (516368 tokens) is longer than the model\ufffds context length (262144 tokens).",
     "sglang-context-length", K.PROMPT_OVER_WINDOW, {"window": Number(262144), "prompt_tokens": Number(516368)}),
    ("The input (516368 tokens) is longer than the model\u00e2\u20ac\u2122s context length (262144 tokens).",
     "sglang-context-length", K.PROMPT_OVER_WINDOW, {"window": Number(262144), "prompt_tokens": Number(516368)}),
    ("'max_tokens' or 'max_completion_tokens' is too large: 5000. This model?s maximum context length is 4096 tokens "
     "and your request has 100 input tokens (5000 > 4096 - 100).",
     "vllm-max-tokens-too-large", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW,
     {"window": Number(4096), "prompt_tokens": Number(100), "output_tokens": Number(5000)}),
    ("This endpoint\u00e2\u0080\u0099s maximum context length is 32768 tokens. However, you requested about 42832 tokens "
     "(42832 of text input). Please reduce the length of either one.",
     "openrouter", K.PROMPT_OVER_WINDOW,
     {"window": Number(32768), "prompt_tokens": Number(42832, APPROX), "total_tokens": Number(42832, APPROX)}),
    # terminal colour codes around words and numbers (a coloured server log or CLI output relayed as the error text):
    # the number was glued to the code ("[1m8192") and read as nothing, or the whole wording failed
    ("ValueError: This model's maximum context length is \x1b[1m16384\x1b[0m tokens. However, you requested "
     "\x1b[1m19591\x1b[0m tokens (\x1b[1m9591\x1b[0m in the messages, \x1b[1m10000\x1b[0m in the completion).",
     "openai-requested", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW,
     {"window": Number(16384), "prompt_tokens": Number(9591), "output_tokens": Number(10000), "total_tokens": Number(19591)}),
    ("\x1b[0;31mERROR\x1b[0m prompt is too long: [1m210000[0m tokens > [1m200000[0m maximum",
     "anthropic-prompt-too-long", K.PROMPT_OVER_WINDOW, {"window": Number(200000), "prompt_tokens": Number(210000)}),
    ("Input validation error: `inputs` must have less than ^[[1m4096^[[0m tokens. Given: ^[[1m4097^[[0m (see the docs)",
     "tgi-max-input", K.PROMPT_OVER_WINDOW, {"prompt_tokens": Number(4097), "printed_limit": Limit(4096, M.INPUT_LIMIT)}),
    # LM Studio 0.4.21 (2026-08, lmstudio-ai/lmstudio-bug-tracker#2322 via aaif-goose/goose#11318: an SSE event: error
    # with HTTP 200): read as nothing at all. The prompt alone over the loaded context length.
    ("Input does not fit in context length. The input has 31430 tokens, but the context length only supports 30000 "
     "tokens.",
     "lmstudio-does-not-fit", K.PROMPT_OVER_WINDOW, {"window": Number(30000), "prompt_tokens": Number(31430)}),
    ('event: error\ndata: {"error":{"message":"Input does not fit in context length. The input has 31430 tokens, but '
     'the context length only supports 30000 tokens."},"message":"Input does not fit in context length. The input has '
     '31430 tokens, but the context length only supports 30000 tokens."}',
     "lmstudio-does-not-fit", K.PROMPT_OVER_WINDOW, {"window": Number(30000), "prompt_tokens": Number(31430)}),
    ("Input does not fit in context length.", "lmstudio-does-not-fit", K.UNKNOWN, {}),
    # OpenAI's output-cap wording on a native API's parameter (a gateway's profile check in front of SGLang /generate,
    # 2026: "sampling_params.max_new_tokens is too large: C. This model supports at most L completion tokens."): read
    # as nothing at all. The requested output over the model's output cap.
    ("sampling_params.max_new_tokens is too large: 70000. This model supports at most 32768 completion tokens.",
     "openai-max-output", K.OUTPUT_OVER_LIMIT,
     {"output_tokens": Number(70000), "printed_limit": Limit(32768, M.OUTPUT_LIMIT)}),
    # throttling and quotas over a period spelled other than "tokens per minute" (gateways' own rate limiters and
    # plan quotas): read as a numberless context error (generic "token limit exceeded", "too many tokens") though a
    # rate over time is never one request's size
    ("Your request exceeded model token limit per day", None, None, {}),
    ("Too many tokens: you have used 100000 tokens/min, limit is 90000 tokens/min", None, None, {}),
    ("Token limit exceeded: 1,000,000 tokens per 24h", None, None, {}),
    ("input token limit exceeded for this hour (limit: 200000)", None, None, {}),
    # OpenRouter's wording without its breakdown (cut before or inside the parentheses, or relayed without them, as
    # agent runtimes quote it): read as a bare window, the requested total lost. T alone (it counts max_tokens only
    # when the request set one), kind UNKNOWN.
    ("This endpoint's maximum context length is 8192 tokens. However, you requested about 9000 tokens. Please reduce "
     "the length of either one.",
     "openrouter", K.UNKNOWN, {"window": Number(8192), "total_tokens": Number(9000, APPROX)}),
    ("This endpoint's maximum context length is 200000 tokens. However, you requested about 212776 tokens (210776 of "
     "text input, 20[truncated]",
     "openrouter", K.UNKNOWN, {"window": Number(200000), "total_tokens": Number(212776, APPROX)}),
    # "exceeded maximum context length (P tokens > W)" cut inside its comparison ("(40000 t", "(40000 tokens"): P was
    # read as the exact window (generic), though what follows it decides what it is. No number now; a text cut right
    # after the number keeps it as a floor. The bare "exceeded maximum context length" (not "exceeds") read as no
    # context error at all once the number was gone.
    ("Input exceeded maximum context length (40000 t", "generic", K.UNKNOWN, {}),
    ("Input exceeded maximum context length (40000 tokens", "generic", K.UNKNOWN, {}),
    ("Input exceeded maximum context length. Please shorten the conversation.", "generic", K.UNKNOWN, {}),
    # SiliconFlow (code 20015) once the prompt alone fits: "max_total_tokens (T) must be less than or equal to
    # max_seq_len (W)" (continuedev/continue#10993, 2026-03, Qwen 2.5 Coder 32B): read as nothing at all. T is the
    # prompt plus max_tokens.
    ('{"code":20015,"message":"max_total_tokens (33802) must be less than or equal to max_seq_len (32768).","data":null}',
     "max-seq-len", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {"window": Number(32768), "total_tokens": Number(33802)}),
    # Cohere v1 generate (2022-2023, cohere-ai/sandbox-topically#4): read as a numberless generic error ("too many
    # tokens"). W the window, T the prompt plus the requested prediction (max_tokens).
    ("CohereError: too many tokens: total number of tokens (prompt and prediction) cannot exceed 2048 - received 6354. "
     "Try using a shorter prompt or a smaller max_tokens value.",
     "cohere-total", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {"window": Number(2048), "total_tokens": Number(6354)}),
    # "max context length" (not "maximum"): Liquid AI's LEAP SDK (LeapGenerationPromptExceedContextLengthException,
    # 2026) "The prompt exceeds the max context length of W tokens.", a plan-limited gateway "Your prompt exceeds the
    # max context length for your plan.": read as nothing at all
    ("The prompt exceeds the max context length of 4096 tokens.", "generic", K.UNKNOWN, {"window": Number(4096)}),
    ("Your prompt exceeds the max context length for your plan.", "generic", K.UNKNOWN, {}),
    ("Input exceeds the context length of 8192 tokens.", "generic", K.UNKNOWN, {"window": Number(8192)}),
    # the same refusal with another verb (gateways, agent runtimes and local servers word it freely): read as nothing
    # at all before; a numberless context error now
    ("The conversation is longer than the model's context window.", "generic", K.UNKNOWN, {}),
    ("Input is larger than the context size.", "generic", K.UNKNOWN, {}),
    ("The prompt doesn't fit into the model's context. Shorten it or load the model with a larger context.",
     "generic", K.UNKNOWN, {}),
    ("Your messages are too long for the context window of this model.", "generic", K.UNKNOWN, {}),
    ("The prompt exceeds the model's token limit.", "generic", K.UNKNOWN, {}),
    ("Request failed: input exceeded the maximum number of tokens.", "generic", K.UNKNOWN, {}),
    # a prompt count against the window with "is larger/greater than" or "of P tokens": read as a numberless generic
    # error (or nothing), both numbers lost
    ("The input (9000 tokens) is larger than the model's context length (8192 tokens).",
     "generic-prompt-over-window", K.PROMPT_OVER_WINDOW, {"window": Number(8192), "prompt_tokens": Number(9000)}),
    ("Prompt (9000) is greater than the max context length (8192).",
     "generic-prompt-over-window", K.PROMPT_OVER_WINDOW, {"window": Number(8192), "prompt_tokens": Number(9000)}),
    ("The prompt of 9000 tokens exceeds the context window of 8192 tokens.",
     "generic-prompt-over-window", K.PROMPT_OVER_WINDOW, {"window": Number(8192), "prompt_tokens": Number(9000)}),
    # the count's subject the conversation or messages (the prompt) or the request (prompt and maybe output): read as a
    # bare window (the count lost), and "Token count T exceeds the context window of W" as the prompt over it
    # (openai-context-window, PROMPT_OVER_WINDOW, no count)
    ("The conversation (9000 tokens) exceeds the context window (8192 tokens).",
     "generic-prompt-over-window", K.PROMPT_OVER_WINDOW, {"window": Number(8192), "prompt_tokens": Number(9000)}),
    ("Messages (9000 tokens) exceed the context window (8192 tokens).",
     "generic-prompt-over-window", K.PROMPT_OVER_WINDOW, {"window": Number(8192), "prompt_tokens": Number(9000)}),
    ("Your request (9000 tokens) exceeds the context window (8192 tokens).",
     "generic-count-over-window", K.UNKNOWN, {"window": Number(8192), "total_tokens": Number(9000)}),
    ("The request has 9000 tokens, which exceeds the model's context window of 8192 tokens.",
     "generic-count-over-window", K.UNKNOWN, {"window": Number(8192), "total_tokens": Number(9000)}),
    ("Token count 9000 exceeds the context window of 8192 tokens.",
     "generic-count-over-window", K.UNKNOWN, {"window": Number(8192), "total_tokens": Number(9000)}),
    # vLLM 0.18+'s character pre-check without its parenthesis (cut there, or quoted without it, as a DeepInfra client
    # comment does, 2026-09): read as a bare window (generic), the requested output lost
    ("This model's maximum context length is 40960 tokens. However, you requested 40960 output tokens and your prompt "
     "contains 12769 characters. Please reduce the length of the input prompt.",
     "vllm-chars-precheck", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW,
     {"window": Number(40960), "output_tokens": Number(40960), "prompt_chars": 12769}),
    # TGI's first sentence alone (a client or gateway that keeps one sentence): the window was lost
    ("Input validation error: `inputs` tokens + `max_new_tokens` must be <= 2048. Please shorten the input.",
     "tgi-total", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {"window": Number(2048)}),
    # Xinference's transformers backend (xorbitsai/inference#3066, 2025-03): max_new_tokens + 8 over the context length,
    # no numbers. Read as nothing at all.
    ("Exception: [address=0.0.0.0:33147, pid=11088] Max tokens exceeds model's max length", "generic", K.UNKNOWN, {}),
    # TabbyAPI (ExLlamaV2, 2025-02, SillyTavern/SillyTavern#3543): "Request length P + C is greater than max_seq_len W",
    # read as nothing at all. The kind from the numbers: a prompt over the window alone, or prompt + output.
    ("ERROR:    ValueError: Request length 71599 + 2048 is greater than max_seq_len 65536\nERROR:    Sent to request: "
     "Chat completion aborted. Please check the server console.",
     "tabbyapi", K.PROMPT_OVER_WINDOW,
     {"window": Number(65536), "prompt_tokens": Number(71599), "output_tokens": Number(2048)}),
    ("ValueError: Request length 60000 + 8192 is greater than max_seq_len 65536.",
     "tabbyapi", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW,
     {"window": Number(65536), "prompt_tokens": Number(60000), "output_tokens": Number(8192)}),
    # MLX servers (2026): oMLX "Prompt too long: P tokens exceeds max context window of W tokens" (jundot/omlx#169, read
    # as a bare window, P lost) and vMLX "prompt_too_long: tokenized VLM text prompt has P tokens, max prompt/context
    # tokens is L" (jjang-ai/vmlx#253, read as nothing at all)
    ("POST /v1/chat/completions \u2192 400: Prompt too long: 51587 tokens exceeds max context window of 32768 tokens",
     "omlx", K.PROMPT_OVER_WINDOW, {"window": Number(32768), "prompt_tokens": Number(51587)}),
    ("Server error: prompt_too_long: tokenized VLM text prompt has 20767 tokens, max prompt/context tokens is 16384.",
     "vmlx", K.PROMPT_OVER_WINDOW, {"prompt_tokens": Number(20767), "printed_limit": Limit(16384, M.INPUT_LIMIT)}),
    ('{"error": {"code": "prompt_too_long", "message": "Prompt too long"}}', "generic", K.UNKNOWN, {}),
    # the output cap wording with "this model's" (not "the model's"): read as nothing at all
    ("The requested max_tokens (100000) exceeds this model's maximum output of 32768 tokens.",
     "generic-output-over-cap", K.OUTPUT_OVER_LIMIT,
     {"output_tokens": Number(100000), "printed_limit": Limit(32768, M.OUTPUT_LIMIT)}),
    # "the model's" reworded "this model's" or "the model" by forks and gateways: every row spelled with "the model's"
    # (SGLang, vLLM's "You passed", Z.ai, SGLang's requested total) read as a numberless generic error, or as a bare
    # window
    ("400 The input (516368 tokens) is longer than this model's context length (262144 tokens).",
     "sglang-context-length", K.PROMPT_OVER_WINDOW, {"window": Number(262144), "prompt_tokens": Number(516368)}),
    ("Input (300000 tokens) is longer than the model context length (128000 tokens)",
     "sglang-context-length", K.PROMPT_OVER_WINDOW, {"window": Number(128000), "prompt_tokens": Number(300000)}),
    ("You passed 7500 input tokens and requested 1000 output tokens. However, the model context length is only 8192 "
     "tokens, resulting in a maximum input length of 7192 tokens.",
     "vllm-you-passed", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW,
     {"window": Number(8192), "prompt_tokens": Number(7500), "output_tokens": Number(1000),
      "printed_limit": Limit(7192, M.INPUT_BUDGET)}),
    ("max_tokens (100000) is greater than this model's context length (32768)",
     "generic-output-over-window", K.OUTPUT_OVER_WINDOW, {"window": Number(32768), "output_tokens": Number(100000)}),
    ("Request 186773 input tokens exceeds this model's maximum context length 202750. Please shorten it.",
     "zai-request-input", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {"window": Number(202750), "prompt_tokens": Number(186773)}),
    ("Requested token count exceeds this model's maximum context length of 25480 tokens. You requested a total of 30000 "
     "tokens: 22515 tokens from the input messages and 7485 tokens for the completion.",
     "sglang-requested-total", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW,
     {"window": Number(25480), "prompt_tokens": Number(22515), "output_tokens": Number(7485),
      "total_tokens": Number(30000)}),
    # "exceeds" in the past tense ("exceeded", a fork's or a log line's wording): every row spelled with "exceeds" fell
    # to a numberless generic error (or None)
    ("request (481909 tokens) exceeded the available context size (32768 tokens), try increasing it",
     "llamacpp-request", K.PROMPT_OVER_WINDOW, {"window": Number(32768), "prompt_tokens": Number(481909)}),
    ("Request 186773 input tokens exceeded the model's maximum context length 202750. Please shorten it.",
     "zai-request-input", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {"window": Number(202750), "prompt_tokens": Number(186773)}),
    ("Provider returned error: Input length 131393 exceeded the maximum allowed input length of 131040 tokens.",
     "baseten-input-length", K.PROMPT_OVER_WINDOW,
     {"prompt_tokens": Number(131393), "printed_limit": Limit(131040, M.INPUT_LIMIT)}),
    # "the maximum" without its article ("exceeds maximum number of tokens allowed", "longer than maximum model
    # length"): the row fell to a numberless generic error (or None)
    ("The input token count (1200000) exceeds maximum number of tokens allowed (1048576).",
     "gemini", K.PROMPT_OVER_WINDOW, {"prompt_tokens": Number(1200000), "printed_limit": Limit(1048576, M.INPUT_LIMIT)}),
    ("ValueError: Prompt length of 5016 is longer than maximum model length of 4096.",
     "vllm-prompt-length-of", K.PROMPT_OVER_WINDOW, {"window": Number(4096), "prompt_tokens": Number(5016)}),
]

# Messages that already read right and must keep doing so beside the fixes above.
ROUND_CORPUS = [
    ('data: {"choices":[{"delta":{"content":"hi"}}]}\n\ndata: {"error": {"message": "This model\'s maximum context '
     'length is 8192 tokens. However, your messages resulted in 9000 tokens."}}\n\n',
     "openai-messages-resulted", K.PROMPT_OVER_WINDOW, {"window": Number(8192), "prompt_tokens": Number(9000)}),
    ('{"code":20015,"message":"length of prompt_tokens (68957) must be less than max_seq_len (65536).","data":null}',
     "max-seq-len", K.PROMPT_OVER_WINDOW, {"window": Number(65536), "prompt_tokens": Number(68957)}),
    ("Input exceeded maximum context length (40000 tokens > 32768).",
     "generic-comparison", K.UNKNOWN, {"window": Number(32768), "total_tokens": Number(40000)}),
    ("exceeds maximum context length (4096 tokens). Please shorten the input.", "generic", K.UNKNOWN,
     {"window": Number(4096)}),
    ("This endpoint's maximum context length is 200000 tokens. However, you requested about 212776 tokens (210776 of "
     "text input, 2000 in the output). Please reduce the length of either one.",
     "openrouter", K.PROMPT_OVER_WINDOW,
     {"window": Number(200000), "prompt_tokens": Number(210776, APPROX), "output_tokens": Number(2000),
      "total_tokens": Number(212776, APPROX)}),
    ("Why?s the prompt so long? prompt is too long: 210000 tokens > 200000 maximum",
     "anthropic-prompt-too-long", K.PROMPT_OVER_WINDOW, {"window": Number(200000), "prompt_tokens": Number(210000)}),
    ("Your input exceeds the context window of 8192 tokens.",
     "openai-context-window", K.PROMPT_OVER_WINDOW, {"window": Number(8192)}),
    ("Your input exceeds the context window of this model. Please adjust your input and try again.",
     "generic", K.UNKNOWN, {}),
    ("Your input exceeds the context window of 128k tokens.", "generic", K.UNKNOWN, {}),
    ("exceeds the model's maximum context length (9000 > 8192)",
     "generic-comparison", K.UNKNOWN, {"window": Number(8192), "total_tokens": Number(9000)}),
    ("request (9000 tokens) exceeds the available context size (8192 tokens), try increasing it",
     "llamacpp-request", K.PROMPT_OVER_WINDOW, {"window": Number(8192), "prompt_tokens": Number(9000)}),
]

# Texts cut short (by a log line, a UI or a gateway that truncates the body): read bare, with a truncation mark, and in a
# JSON body closed after such a mark (a cut text wrapped again), never with more words after the cut.
ROUND_CUT_FAULTS = [
    # a wording cut right before its last number (a log line or a UI that truncates the body; the text ends there):
    # the prompt count already printed, and the wording's meaning, were lost (a numberless generic error, or None).
    # The prompt is read; the limit is not printed.
    ("prompt is too long: 213462 tokens >",
     "anthropic-prompt-too-long", K.PROMPT_OVER_WINDOW, {"prompt_tokens": Number(213462)}),
    ("The input token count (1196265) exceeds the maximum number of tokens",
     "gemini", K.PROMPT_OVER_WINDOW, {"prompt_tokens": Number(1196265)}),
    ("Unable to submit request because the input token count is 1251952 but model only supports up to",
     "vertex-gemini", K.PROMPT_OVER_WINDOW, {"prompt_tokens": Number(1251952)}),
    ("Error: The decoder prompt (length 21535) is longer than the maximum model length of",
     "vllm-decoder-prompt", K.PROMPT_OVER_WINDOW, {"prompt_tokens": Number(21535)}),
    ("ValueError: Prompt length of 5016 is longer than the maximum model length of ...",
     "vllm-prompt-length-of", K.PROMPT_OVER_WINDOW, {"prompt_tokens": Number(5016)}),
    ("ValueError: The input (85050 tokens) is longer than the model's context length",
     "sglang-context-length", K.PROMPT_OVER_WINDOW, {"prompt_tokens": Number(85050)}),
    ("Input length (160062 tokens) exceeds the maximum allowed length (59862",
     "sglang-max-allowed", K.PROMPT_OVER_WINDOW,
     {"prompt_tokens": Number(160062), "printed_limit": Limit(59862, M.KV_CAPACITY, LB)}),
    ("ValueError: Requested tokens (516) exceed context window of",
     "llama-cpp-python", K.PROMPT_OVER_WINDOW, {"prompt_tokens": Number(516)}),
    ("[ERROR] Error: Input length 6491 exceeds context length",
     "lmstudio-input-length", K.PROMPT_OVER_WINDOW, {"prompt_tokens": Number(6491)}),
    ("400 length of prompt_tokens (163280) must be less than max_seq_len",
     "max-seq-len", K.PROMPT_OVER_WINDOW, {"prompt_tokens": Number(163280)}),
    ("[TensorRT-LLM][ERROR] Cannot process new request: Prompt length (1251) exceeds maximum input length",
     "trtllm-input", K.PROMPT_OVER_WINDOW, {"prompt_tokens": Number(1251)}),
    ("Prompt is 11543 tokens but the model context window is 4096",
     "rkllama", K.PROMPT_OVER_WINDOW, {"prompt_tokens": Number(11543), "window": Number(4096, LB)}),
    ("prompt token count of 514673 exceeds the limit of",
     "copilot", K.PROMPT_OVER_WINDOW, {"prompt_tokens": Number(514673)}),
]

ROUND_CUT_WRAPPERS = {
    "bare": lambda t: t,
    "ellipsis": lambda t: t + "...",
    "truncated-mark": lambda t: t + " [truncated]",
    "json-after-mark": lambda t: json.dumps({"error": {"message": t + "\u2026"}}),
}

# Not context errors, whatever wrapper carries them, except LiteLLM's own ContextWindowExceededError name (which says
# it is one).
ROUND_NOT_ERRORS = [
    # a stream chunk's delta text quoting a context error (every chunk after the first carries no role; Anthropic's
    # text_delta): the model's own words were read as the server's refusal. Not a context error; the server's own
    # error frame after such chunks still reads.
    ('data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"The error '
     'says: maximum context length is 8192 tokens"},"finish_reason":null}]}\n\n', None, None, {}),
    ('event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":'
     '"prompt is too long: 210000 tokens > 200000 maximum"}}\n\n', None, None, {}),
]

ROUND_WRAPPERS = {
    "bare": lambda t: t,
    "litellm-context": lambda t: "litellm.ContextWindowExceededError: litellm.BadRequestError: OpenAIException - " + t,
    "json-body": lambda t: json.dumps({"error": {"message": t, "type": "invalid_request_error", "param": None}}),
    "python-repr": lambda t: "Error code: 400 - " + str({"error": {"message": t, "type": "BadRequestError", "code": 400}}),
    "sse-error": lambda t: "event: error\ndata: " + json.dumps({"type": "error", "error": {"message": t}}) + "\n\n",
    "router-suffix": lambda t: t + "\nReceived Model Group=fast\nAvailable Model Group Fallbacks=None LiteLLM Retried: 2 times",
}


@pytest.mark.parametrize("wrapper", sorted(ROUND_WRAPPERS))
@pytest.mark.parametrize(("text", "family", "kind", "fields"), ROUND_FAULTS + ROUND_CORPUS,
                         ids=[f"{i}-{w[1]}" for i, w in enumerate(ROUND_FAULTS + ROUND_CORPUS)])
def test_round_message_parses_with_its_meaning_in_any_wrapper(text, family, kind, fields, wrapper):
    assert _view(parse_context_error(ROUND_WRAPPERS[wrapper](text))) == _expected(family, kind, fields)


@pytest.mark.parametrize("wrapper", sorted(ROUND_CUT_WRAPPERS))
@pytest.mark.parametrize(("text", "family", "kind", "fields"), ROUND_CUT_FAULTS,
                         ids=[f"cut-{i}-{w[1]}" for i, w in enumerate(ROUND_CUT_FAULTS)])
def test_round_cut_message_reads_what_it_printed(text, family, kind, fields, wrapper):
    assert _view(parse_context_error(ROUND_CUT_WRAPPERS[wrapper](text))) == _expected(family, kind, fields)


@pytest.mark.parametrize("wrapper", sorted(set(ROUND_WRAPPERS) - {"litellm-context"}))
@pytest.mark.parametrize(("text", "family", "kind", "fields"), ROUND_NOT_ERRORS,
                         ids=[f"not-{i}" for i, _ in enumerate(ROUND_NOT_ERRORS)])
def test_round_look_alike_stays_none(text, family, kind, fields, wrapper):
    assert _view(parse_context_error(ROUND_WRAPPERS[wrapper](text))) == _expected(family, kind, fields)

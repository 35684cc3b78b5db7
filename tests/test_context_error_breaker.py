"""Context-length error parsing (pure), a breaker's sweep: new server wordings across versions and LiteLLM's wrappings
of them, each with the family, kind and numbers the parser must report (a field not named must be ``None``).

``FAULTS`` are messages the parser misread before (each comment says what was wrong); ``CORPUS`` is the rest of the
sweep (real wordings that already read right, and look-alikes that must stay negative), kept as a regression table.
Numbers are as printed: W window, P prompt, C requested output, T total, L a printed limit that is not the window. A
number that ends the text may have been cut, so it is a lower bound there (see ``context_errors``).
"""

from __future__ import annotations

import json

import pytest

from context_error_view import expected as _expected, view as _view
from litellm_kvwarm.context_errors import Certainty, ErrorKind, Limit, LimitMeaning, Number, parse_context_error
from litellm_kvwarm.learned_limits import limit_from_error
from litellm_kvwarm.reactive import BackstopPlan, HopAction, decide_hop

EXACT, LB, UB, APPROX = Certainty.EXACT, Certainty.LOWER_BOUND, Certainty.UPPER_BOUND, Certainty.APPROXIMATE
K = ErrorKind
M = LimitMeaning


VLLM_BODY = 'litellm.BadRequestError: Hosted_vllmException - {{"error":{{"message":"{}","type":"BadRequestError","code":400}}}}'

# (text, family, kind, {field: expected}): each read wrongly before its fix.
FAULTS = [
    # vLLM 0.11+ input_processor._validate_prompt_len: a prompt of exactly max_model_len leaves no room for the "at
    # least 1" output token. Read as no context error at all (None). P == W: no output budget makes room for it.
    (VLLM_BODY.format("The decoder prompt (length 8192) plus the number of requested output tokens (at least 1) is "
                      "longer than the maximum model length of 8192. Make sure that `max_model_len` is no smaller than "
                      "the number of text tokens (prompt + requested output tokens)."),
     "vllm-decoder-prompt", K.PROMPT_OVER_WINDOW, {"window": Number(8192), "prompt_tokens": Number(8192)}),
    ("ValueError: The decoder prompt (length 512) plus the number of requested output tokens (at least 1) exceeds the "
     "maximum model length of 512. Make sure that `max_model_len` is no smaller than the number of text tokens.",
     "vllm-decoder-prompt", K.PROMPT_OVER_WINDOW, {"window": Number(512), "prompt_tokens": Number(512)}),
    # vLLM 0.11-0.15 /v1/completions prints W - max_tokens as "maximum context length" (issue vllm-project/vllm#33418:
    # 8 prompt tokens, 2045 max_tokens, 2048 window -> "is 3 tokens"). The prompt fits alone there, so the kind was
    # wrong (PROMPT_OVER_WINDOW made the backstop skip the clamped retry): UNKNOWN.
    ('{"error":{"message":"This model\'s maximum context length is 3 tokens. However, your request has 8 input tokens. '
     'Please reduce the length of the input messages. (parameter=input_tokens, value=8)","type":"BadRequestError",'
     '"param":"input_tokens","code":400}}',
     "vllm-request-has", K.UNKNOWN, {"window": Number(3, LB), "prompt_tokens": Number(8)}),
    # the same check without "input" (0.10 renderer forks, test emulators): the prompt count was lost
    ("This model's maximum context length is 8192 tokens. However, your request has 9000 tokens. Please reduce the "
     "length of the messages.",
     "vllm-request-has", K.UNKNOWN, {"window": Number(8192, LB), "prompt_tokens": Number(9000)}),
    # the fix proposed in vLLM PR #33425 (2026-01): W is the real window and the output is printed. Read before as
    # a prompt-alone refusal with the window a lower bound and no output.
    (VLLM_BODY.format("This model's maximum context length is 2048 tokens. However, your request has 8 input tokens "
                      "plus 2045 'max_tokens'. Please reduce one or the other. (parameter=input_tokens, max_tokens, "
                      "value=(8, 2045))"),
     "vllm-request-has-plus", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW,
     {"window": Number(2048), "prompt_tokens": Number(8), "output_tokens": Number(2045)}),
    # vLLM plugins with a max_prompt_length below the window: no numbers were read (generic)
    ("This model's maximum prompt length is 8192 tokens. However, your request has 9000 prompt tokens. Please reduce "
     "the length of the prompt.",
     "vllm-max-prompt-length", K.PROMPT_OVER_WINDOW,
     {"prompt_tokens": Number(9000), "printed_limit": Limit(8192, M.INPUT_LIMIT)}),
    # a hosted API (NovelForge #136, 2026-05): not recognised at all
    ("Error code: 400 - {'code': 400, 'message': 'number of input tokens (167594) has exceeded max_prompt_tokens "
     "(163840) limit.', 'data': None}",
     "max-prompt-tokens", K.PROMPT_OVER_WINDOW,
     {"prompt_tokens": Number(167594), "printed_limit": Limit(163840, M.INPUT_LIMIT)}),
    # Fireworks with "tokens" after the prompt count: the numbers were lost (generic)
    ('litellm.BadRequestError: Fireworks_aiException - {"error":{"object":"error","type":"invalid_request_error",'
     '"message":"The prompt is too long: 40000 tokens, model maximum context length: 32768"}}',
     "fireworks", K.PROMPT_OVER_WINDOW, {"window": Number(32768), "prompt_tokens": Number(40000)}),
    # output caps worded as other validators word them: not recognised (None). A cap, never a window.
    ("Error code: 400 - {'code': 400, 'reason': 'INVALID_REQUEST_BODY', 'message': 'max_tokens (current value: 4096) "
     "must be between 0 and 4000 ', 'metadata': {}}",
     "max-tokens-cap", K.OUTPUT_OVER_LIMIT, {"output_tokens": Number(4096), "printed_limit": Limit(4000, M.OUTPUT_LIMIT)}),
    ('litellm.BadRequestError: Azure_aiException - {"error":{"code":"Invalid input","status":422,"message":"invalid '
     'input error","details":[{"type":"value_error","loc":["body","max_tokens"],"msg":"Value error, max_tokens must be '
     'smaller than or equal to 4096."}]}}',
     "max-tokens-cap", K.OUTPUT_OVER_LIMIT, {"printed_limit": Limit(4096, M.OUTPUT_LIMIT)}),
    ('litellm.BadRequestError: GroqException - {"error":{"message":"\'max_tokens\' : must be less than or equal to '
     '32768","type":"invalid_request_error"}}',
     "max-tokens-cap", K.OUTPUT_OVER_LIMIT, {"printed_limit": Limit(32768, M.OUTPUT_LIMIT)}),
    # GPT4All backend (zylon-ai/private-gpt #839, printed without spaces): the numbers were lost, or (without the
    # first sentence) not recognised at all
    ("ERROR: The prompt size exceeds the context window size and cannot be processed.GPT-J ERROR: The prompt "
     "is2614tokens and the context window is2048!",
     "gpt4all", K.PROMPT_OVER_WINDOW, {"window": Number(2048), "prompt_tokens": Number(2614)}),
    ("LLaMA ERROR: The prompt is 5000 tokens and the context window is 4096!",
     "gpt4all", K.PROMPT_OVER_WINDOW, {"window": Number(4096), "prompt_tokens": Number(5000)}),
    # Voyage embeddings batch limit (sigoden/aichat #825, VeraTools/vera #18): not recognised. The sum over the batch.
    ('{"detail":"Request to model \'voyage-code-3\' failed. The max allowed tokens per submitted batch is 120000. Your '
     'batch has 124417 tokens after truncation. Please lower the number of tokens in the batch."}',
     "voyage-batch", K.PROMPT_OVER_WINDOW,
     {"prompt_tokens": Number(124417), "printed_limit": Limit(120000, M.REQUEST_LIMIT)}),
    # Salesforce Einstein (forcedotcom/Einstein-GPT-for-Developers #228, 2026): not recognised
    ("Error : Request input tokens exceed model token limit. Reduce the input size.", "generic", K.UNKNOWN, {}),
    # a count with a magnitude suffix is no token count: "128k" was read as an exact 128-token window (and learned)
    ("Your input exceeds the context window of 128k tokens.", "generic", K.UNKNOWN, {}),
    ("Input length (140k tokens) exceeds model's maximum context length (128K).", "generic", K.UNKNOWN, {}),
    # Wordings a second sweep found unread (None) or read without their window (generic, no numbers):
    # Cloudflare Workers AI (HTTP 413, codes 5021 and 3010): T is its estimate of prompt + max_tokens
    ("5021: The estimated number of input and maximum output tokens (155740) exceeded this model context window "
     "limit (128000).",
     "cloudflare-estimated", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW,
     {"window": Number(128000), "total_tokens": Number(155740, APPROX)}),
    ("3010: AiError: The estimated number of input and maximum output tokens (35000) exceeded this model context "
     "window limit (24000)",
     "cloudflare-estimated", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW,
     {"window": Number(24000), "total_tokens": Number(35000, APPROX)}),
    # IBM watsonx.ai invalid_input_argument
    ('{"errors":[{"code":"invalid_input_argument","message":"Invalid input argument for Model \'meta-llama/llama-2-70b-'
     'chat\': the number of input tokens 4098 cannot exceed the total tokens limit 4096 for this model","more_info":'
     '"https://cloud.ibm.com/apidocs/watsonx-ai"}],"trace":"f8a07210b001efe4c862b642f3ece475","status_code":400}',
     "watsonx", K.PROMPT_OVER_WINDOW, {"window": Number(4096), "prompt_tokens": Number(4098)}),
    # Voyage (contextualized) embeddings: one example over the window; the window was not read (generic)
    ("Request to model 'voyage-context-3' failed. The example at index 17 in your batch has too many tokens and does "
     "not fit into the model's context window of 32000 tokens. Contextualized chunk embeddings do not support "
     "truncation.",
     "voyage-example", K.PROMPT_OVER_WINDOW, {"window": Number(32000)}),
    # TabbyAPI (ExLlamaV2 backend)
    ("Prompt length 5000 is greater than max_seq_len 4096.", "tabbyapi", K.PROMPT_OVER_WINDOW,
     {"window": Number(4096), "prompt_tokens": Number(5000)}),
    # MLC-LLM serve (check_prompts_length): max_single_sequence_length is the window; the later builds' input limit
    ('{"object":"error","message":"Request prompt has 5000 tokens in total, larger than the model capacity 4096.",'
     '"code":400}',
     "mlc-llm", K.PROMPT_OVER_WINDOW, {"window": Number(4096), "prompt_tokens": Number(5000)}),
    ("Request prompt has 5000 tokens in total, larger than the model input length limit 3072.", "mlc-llm",
     K.PROMPT_OVER_WINDOW, {"prompt_tokens": Number(5000), "printed_limit": Limit(3072, M.INPUT_LIMIT)}),
    # LightLLM httpserver manager: the input limit first, then input + output against max_req_total_len, then the pool
    ("ValueError: the input prompt token len 5000 is too long > 4095.", "lightllm-input", K.PROMPT_OVER_WINDOW,
     {"prompt_tokens": Number(5000), "printed_limit": Limit(4095, M.INPUT_LIMIT)}),
    ('{"error": "the req token total len (input len + output len) is too long > max_req_total_len:16384"}',
     "lightllm-total", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {"window": Number(16384)}),
    ("the req total len (input len + output len) is too long > max_req_total_len:16384.", "lightllm-total",
     K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {"window": Number(16384)}),
    ("the req token total len + 1 (input len + output len + 1) is too long > max_total_token_num:100000.",
     "lightllm-total", K.UNKNOWN, {}),
    # Baidu Qianfan / ERNIE: character limits (never tokens) and the tokens_too_long code; all read as None before
    ("{'error_code':336003,'error_msg':'the max length of current question is 2000','id':'as-fxhfe8n53r'}",
     "qianfan-chars", K.PROMPT_OVER_WINDOW, {"char_limit": 2000}),
    ('{"error":{"code":"characters_too_long","message":"the max input characters is 20000","type":'
     '"invalid_request_error"}}',
     "qianfan-chars", K.PROMPT_OVER_WINDOW, {"char_limit": 20000}),
    ('{"error":{"code":"tokens_too_long","message":"Prompt tokens too long","type":"invalid_request_error"}}',
     "generic", K.UNKNOWN, {}),
    ("400 Prompt tokens too long. Shorten the input.", "generic", K.UNKNOWN, {}),
    # Bedrock's JSON-schema check names the input field it measured (Cohere embeddings: "#/texts/0"): read as None
    ("An error occurred (ValidationException) when calling the InvokeModel operation: Malformed input request: "
     "#/texts/0: expected maxLength: 2048, actual: 4680, please reformat your input and try again.",
     "bedrock-max-length", K.PROMPT_OVER_WINDOW, {"char_limit": 2048, "prompt_chars": 4680}),
    ("ValidationException: Malformed input request: #/inputText: expected maxLength: 50000, actual: 75000, please "
     "reformat your input and try again.",
     "bedrock-max-length", K.PROMPT_OVER_WINDOW, {"char_limit": 50000, "prompt_chars": 75000}),
    # NVIDIA NIM embeddings: None before
    ('{"error":"Input length 1728 exceeds maximum allowed token size 512"}', "nim-embedding", K.PROMPT_OVER_WINDOW,
     {"window": Number(512), "prompt_tokens": Number(1728)}),
    # Elasticsearch inference (BERT-style tokenization, bracketed counts): None before
    ("Input too large. The tokenized input length [1100] exceeds the maximum sequence length [512]",
     "generic-prompt-over-window", K.PROMPT_OVER_WINDOW, {"window": Number(512), "prompt_tokens": Number(1100)}),
    # Apple FoundationModels through a local bridge: None before
    ('exceededContextWindowSize(FoundationModels.LanguageModelSession.GenerationError.Context(debugDescription: '
     '"Content contains 5342 tokens, which exceeds the maximum allowed context size of 4096.", underlyingErrors: []))',
     "apple-foundation-models", K.UNKNOWN, {"window": Number(4096), "total_tokens": Number(5342)}),
    ("GenerationError: exceededContextWindowSize", "generic", K.UNKNOWN, {}),
    # Ollama's llama-server path (llm/llama_server.go, context shift off): None before
    ('{"error":"the prompt is longer than the context length currently available to the model; shorten the prompt, '
     'adjust the context length in settings, or use a model with a longer context length"}',
     "generic", K.UNKNOWN, {}),
    # vLLM 0.16-0.17 renderer's character pre-check (higress-group/hiclaw #346): read as generic, no numbers
    ("400 You passed 74655 input characters and requested 32000 output tokens. However, the model's context length is "
     "only 131072 tokens, resulting in a maximum input length of 99072 tokens (at most 60000 characters). Please reduce "
     "the length of the input prompt. (parameter=input_text, value=74655)",
     "vllm-you-passed", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW,
     {"window": Number(131072), "output_tokens": Number(32000), "printed_limit": Limit(99072, M.INPUT_BUDGET),
      "prompt_chars": 74655, "char_limit": 60000}),
    # llama.cpp server-context.cpp (embeddings, no context shift): the numbers were lost without n_prompt_tokens/n_ctx
    ('{"error":{"code":400,"message":"input (1682 tokens) is larger than the max context size (1024 tokens). skipping",'
     '"type":"exceed_context_size_error"}}',
     "llamacpp-request", K.PROMPT_OVER_WINDOW, {"window": Number(1024), "prompt_tokens": Number(1682)}),
    ("input (526 tokens) is larger than the max context size (512). skipping", "llamacpp-request", K.PROMPT_OVER_WINDOW,
     {"window": Number(512), "prompt_tokens": Number(526)}),
    # Volcengine Ark's output cap (dify #14376, kimi-cli #1124): None before; an output cap, never a window
    ('{"error":{"code":"InvalidParameter","message":"The parameter `max_tokens` specified in the request are not valid: '
     'integer above maximum value, expected a value <= 4096, but got 8192 instead. Request id: 0217","param":'
     '"max_tokens","type":"BadRequest"}}',
     "openai-max-output-above-maximum", K.OUTPUT_OVER_LIMIT,
     {"output_tokens": Number(8192), "printed_limit": Limit(4096, M.OUTPUT_LIMIT)}),
    ("The parameter `max_completion_tokens` specified in the request is not valid: integer above maximum value, "
     "expected a value <= 12288, but got 16384 instead.",
     "openai-max-output-above-maximum", K.OUTPUT_OVER_LIMIT,
     {"output_tokens": Number(16384), "printed_limit": Limit(12288, M.OUTPUT_LIMIT)}),
]

# The rest of the sweep: vLLM 0.4-0.32, SGLang, TGI (and Together, HF), llama.cpp, LM Studio, Ollama, OpenAI, Azure,
# Anthropic (direct, Bedrock, Vertex), Gemini/Vertex, Mistral, Groq, DeepSeek, OpenRouter, Fireworks, Cerebras, Cohere,
# xAI, DashScope, Moonshot, DeepInfra, as LiteLLM wraps them (exception class and provider prefixes, JSON bodies with
# nested "error", escaped quotes and newlines, "Received Model Group=" and "LiteLLM Retried:" suffixes); family None:
# a look-alike (rate limit, TPM quota, client parameter errors, content filter, auth, missing model, overload).
CORPUS = [
    ('litellm.BadRequestError: Hosted_vllmException - {"object":"error","message":"This model\'s maximum context length is 32768 tokens. However, you requested 33792 tokens (1024 in the messages, 32768 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}',
     'openai-requested', K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {'window': Number(32768), 'prompt_tokens': Number(1024), 'output_tokens': Number(32768), 'total_tokens': Number(33792)}),
    ('litellm.BadRequestError: Hosted_vllmException - {"object":"error","message":"\'max_tokens\' or \'max_completion_tokens\' is too large: 4096. This model\'s maximum context length is 8192 tokens and your request has 4500 input tokens (4096 > 8192 - 4500). None","type":"BadRequestError","param":null,"code":400}',
     'vllm-max-tokens-too-large', K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {'window': Number(8192), 'prompt_tokens': Number(4500), 'output_tokens': Number(4096)}),
    ('litellm.BadRequestError: OpenAIException - Error code: 400 - {\'object\': \'error\', \'message\': "This model\'s maximum context length is 2048 tokens. However, your request has 2100 input tokens. Please reduce the length of the input messages. None", \'type\': \'BadRequestError\', \'param\': None, \'code\': 400}',
     'vllm-request-has', K.UNKNOWN, {'window': Number(2048, LB), 'prompt_tokens': Number(2100)}),
    ('The decoder prompt (length 9000) is longer than the maximum model length of 8192. Make sure that `max_model_len` is no smaller than the number of text tokens plus multimodal tokens. For image inputs, the number of image tokens depends on the number of images, and possibly their aspect ratios as well.',
     'vllm-decoder-prompt', K.PROMPT_OVER_WINDOW, {'window': Number(8192), 'prompt_tokens': Number(9000)}),
    ('litellm.BadRequestError: Hosted_vllmException - {"error":{"message":"This model\'s maximum context length is 4096 tokens. However, your prompt contains at least 4097 input tokens, which exceeds this limit even without any output tokens. Please reduce the length of the input prompt. (parameter=input_tokens, value=4097)","type":"BadRequestError","param":"input_tokens","code":400}}',
     'vllm-0.32+', K.PROMPT_OVER_WINDOW, {'window': Number(4096), 'prompt_tokens': Number(4097, LB)}),
    ('litellm.BadRequestError: Hosted_vllmException - {"error":{"message":"max_tokens=5000 cannot be greater than max_model_len=4096. Please request fewer output tokens. (parameter=max_tokens, value=5000)","type":"BadRequestError","param":"max_tokens","code":400}}',
     'vllm-max-tokens-over-window', K.OUTPUT_OVER_WINDOW, {'window': Number(4096), 'output_tokens': Number(5000)}),
    ('truncate_prompt_tokens value (5000) is greater than max_model_len (4096). Please, select a smaller truncation size.', None, None, {}),
    ('Input prompt (5000 tokens) is too long and exceeds limit of 4096',
     'vllm-v0-scheduler', K.PROMPT_OVER_WINDOW, {'window': Number(4096, LB), 'prompt_tokens': Number(5000)}),
    ("This model's maximum context length is 4096 tokens. However, you requested 5000 tokens in the input for embedding generation. Please reduce the length of the input.",
     'vllm-embedding', K.PROMPT_OVER_WINDOW, {'window': Number(4096), 'prompt_tokens': Number(5000)}),
    ("The input (40000 tokens) is longer than the model's context length (32768 tokens).",
     'sglang-context-length', K.PROMPT_OVER_WINDOW, {'window': Number(32768), 'prompt_tokens': Number(40000)}),
    ('Input length (40000 tokens) exceeds the maximum allowed length (32700 tokens). Use a shorter input or enable --allow-auto-truncate.',
     'sglang-max-allowed', K.PROMPT_OVER_WINDOW, {'prompt_tokens': Number(40000), 'printed_limit': Limit(32700, M.KV_CAPACITY)}),
    ('litellm.BadRequestError: OpenAIException - Error code: 400 - {\'object\': \'error\', \'message\': "Requested token count exceeds the model\'s maximum context length of 32768 tokens. You requested a total of 34000 tokens: 30000 tokens from the input messages and 4000 tokens for the completion. Please reduce the number of tokens in the input messages or the completion to fit within the limit.", \'type\': \'BadRequestError\', \'param\': None, \'code\': 400}',
     'sglang-requested-total', K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {'window': Number(32768), 'prompt_tokens': Number(30000), 'output_tokens': Number(4000), 'total_tokens': Number(34000)}),
    ('litellm.BadRequestError: HuggingfaceException - {"error":"Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: 4000 `inputs` tokens and 200 `max_new_tokens`","error_type":"validation"}',
     'tgi-total', K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {'window': Number(4096), 'prompt_tokens': Number(4000), 'output_tokens': Number(200)}),
    ('Input validation error: `inputs` must have less than 1024 tokens. Given: 1500',
     'tgi-max-input', K.PROMPT_OVER_WINDOW, {'prompt_tokens': Number(1500, LB), 'printed_limit': Limit(1024, M.INPUT_LIMIT)}),
    ('Input validation error: `max_new_tokens` must be <= 1000. Given: 2000',
     'tgi-max-new-tokens', K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {'output_tokens': Number(2000, LB), 'printed_limit': Limit(1000, M.OUTPUT_BUDGET)}),
    ('Input validation error: `truncate` must be strictly positive and less than 1024. Given: 2000', None, None, {}),
    ('Input validation error: `max_new_tokens` must be strictly positive', None, None, {}),
    ('Input validation error: `best_of` must be > 0 and <= 2. Given: 3', None, None, {}),
    ('Input validation error: `top_n_tokens` must be >= 0 and <= 5. Given: 10', None, None, {}),
    ('{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":5000,"n_ctx":4096}}',
     'llamacpp', K.PROMPT_OVER_WINDOW, {'window': Number(4096), 'prompt_tokens': Number(5000)}),
    ("litellm.BadRequestError: OpenAIException - Error code: 400 - {'error': {'code': 400, 'message': 'request (5000 tokens) exceeds the available context size (4096 tokens), try increasing it', 'type': 'exceed_context_size_error', 'n_prompt_tokens': 5000, 'n_ctx': 4096}}",
     'llamacpp-request', K.PROMPT_OVER_WINDOW, {'window': Number(4096), 'prompt_tokens': Number(5000)}),
    ('{"error":"prompt too long; exceeded max context length by 1520 tokens"}',
     'ollama-excess', K.PROMPT_OVER_WINDOW, {'excess_tokens': Number(1520)}),
    ("This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens (129000 in the messages, 1000 in the functions). Please reduce the length of the messages or functions.",
     'openai-messages-resulted', K.PROMPT_OVER_WINDOW, {'window': Number(128000), 'prompt_tokens': Number(130000)}),
    ("This model's maximum context length is 8192 tokens, however you requested 10000 tokens (10000 in your prompt; 0 for the completion). Please reduce your prompt; or completion length.",
     'openai-completions', K.PROMPT_OVER_WINDOW, {'window': Number(8192), 'prompt_tokens': Number(10000), 'output_tokens': Number(0), 'total_tokens': Number(10000)}),
    ("Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.", None, None, {}),
    ("Invalid 'max_tokens': integer below minimum value. Expected a value >= 1, but got 0 instead.", None, None, {}),
    ("Invalid 'max_completion_tokens': integer above maximum value. Expected a value <= 100000, but got 200000 instead.",
     'openai-max-output-above-maximum', K.OUTPUT_OVER_LIMIT, {'output_tokens': Number(200000), 'printed_limit': Limit(100000, M.OUTPUT_LIMIT)}),
    ('max_tokens is too large: 50000. This model supports at most 16384 completion tokens, whereas you provided 50000.',
     'openai-max-output', K.OUTPUT_OVER_LIMIT, {'output_tokens': Number(50000), 'printed_limit': Limit(16384, M.OUTPUT_LIMIT)}),
    ('litellm.BadRequestError: AnthropicException - {"type":"error","error":{"type":"invalid_request_error","message":"input length and `max_tokens` exceed context limit: 195000 + 8192 > 200000, decrease input length or `max_tokens` and try again"}}',
     'anthropic-input-and-max-tokens', K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {'window': Number(200000), 'prompt_tokens': Number(195000), 'output_tokens': Number(8192)}),
    ('`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size', None, None, {}),
    ('max_tokens: 100000 > 64000, which is the maximum allowed number of output tokens for claude-sonnet-4-20250514',
     'anthropic-max-output', K.OUTPUT_OVER_LIMIT, {'output_tokens': Number(100000), 'printed_limit': Limit(64000, M.OUTPUT_LIMIT)}),
    ('This request would exceed the rate limit for your organization (abc) of 40,000 input tokens per minute. For details, refer to: https://docs.anthropic.com/en/api/rate-limits.', None, None, {}),
    ('litellm.BadRequestError: BedrockException - {"message":"The model returned the following errors: prompt is too long: 201234 tokens > 200000 maximum"}',
     'anthropic-prompt-too-long', K.PROMPT_OVER_WINDOW, {'window': Number(200000), 'prompt_tokens': Number(201234)}),
    ('litellm.ContextWindowExceededError: BedrockException - {"message":"This model\'s maximum context length is 8192 tokens. Please reduce the length of the prompt"}',
     'generic', K.UNKNOWN, {'window': Number(8192)}),
    ('litellm.BadRequestError: VertexAIException BadRequestError - {"error": {"code": 400, "message": "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).", "status": "INVALID_ARGUMENT"}}',
     'gemini', K.PROMPT_OVER_WINDOW, {'prompt_tokens': Number(1200000), 'printed_limit': Limit(1048576, M.INPUT_LIMIT)}),
    ('litellm.BadRequestError: VertexAIException - {"error": {"code": 400, "message": "Unable to submit request because the input token count is 40000 but model only supports up to 32768. Reduce the input token count and try again. You can also use the CountTokens API to calculate prompt token count and billing characters. Learn more: https://cloud.google.com/vertex-ai/generative-ai/docs/multimodal/send-chat-prompts-gemini", "status": "INVALID_ARGUMENT"}}',
     'vertex-gemini', K.PROMPT_OVER_WINDOW, {'prompt_tokens': Number(40000), 'printed_limit': Limit(32768, M.INPUT_LIMIT)}),
    ('litellm.BadRequestError: VertexAIException - {"error": {"code": 400, "message": "Request contains an invalid argument.", "status": "INVALID_ARGUMENT"}}', None, None, {}),
    ('litellm.BadRequestError: MistralException - {"object":"error","message":"Prompt contains 40000 tokens and 0 draft tokens, too large for model with 32768 maximum context length","type":"invalid_request_error","param":null,"code":null}',
     'mistral', K.PROMPT_OVER_WINDOW, {'window': Number(32768), 'prompt_tokens': Number(40000)}),
    ('litellm.RateLimitError: GroqException - {"error":{"message":"Rate limit reached for model `llama-3.3-70b-versatile` in organization `org_x` service tier `on_demand` on tokens per minute (TPM): Limit 6000, Used 0, Requested 7000. Please try again in 10s.","type":"tokens","code":"rate_limit_exceeded"}}', None, None, {}),
    ('litellm.BadRequestError: GroqException - {"error":{"message":"Request too large for model `llama-3.3-70b-versatile` in organization `org_x` service tier `on_demand` on tokens per minute (TPM): Limit 12000, Requested 20000, please reduce your message size and try again.","type":"tokens","code":"rate_limit_exceeded"}}', None, None, {}),
    ('litellm.BadRequestError: Together_aiException - {"message": "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 8193. Given: 8000 `inputs` tokens and 512 `max_new_tokens`", "type_": "invalid_request_error", "param": "max_tokens", "code": null}',
     'tgi-total', K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {'window': Number(8193), 'prompt_tokens': Number(8000), 'output_tokens': Number(512)}),
    ('litellm.BadRequestError: Fireworks_aiException - {"error":{"object":"error","type":"invalid_request_error","message":"The prompt is too long: 40000, model maximum context length: 32768"}}',
     'fireworks', K.PROMPT_OVER_WINDOW, {'window': Number(32768), 'prompt_tokens': Number(40000)}),
    ('litellm.BadRequestError: DeepseekException - {"error":{"message":"This model\'s maximum context length is 65536 tokens. However, you requested 70000 tokens (66000 in the messages, 4000 in the completion). Please reduce the length of the messages or completion.","type":"invalid_request_error","param":null,"code":"invalid_request_error"}}',
     'openai-requested', K.PROMPT_OVER_WINDOW, {'window': Number(65536), 'prompt_tokens': Number(66000), 'output_tokens': Number(4000), 'total_tokens': Number(70000)}),
    ('litellm.BadRequestError: OpenrouterException - {"error":{"message":"This endpoint\'s maximum context length is 200000 tokens. However, you requested about 210000 tokens (195000 of text input, 3000 of image input, 12000 in the output). Please reduce the length of either one, or use the \\"middle-out\\" transform to compress your prompt automatically.","code":400,"metadata":{"provider_name":null}}}',
     'openrouter', K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {'window': Number(200000), 'prompt_tokens': Number(198000, APPROX), 'output_tokens': Number(12000), 'total_tokens': Number(210000, APPROX)}),
    ('litellm.BadRequestError: CohereException - {"message":"too many tokens: total number of tokens in the prompt cannot exceed 4081 - received 5000. Try using a shorter prompt, or enabling prompt truncating. See https://docs.cohere.com/reference/generate for more details."}',
     'cohere', K.PROMPT_OVER_WINDOW, {'window': Number(4081), 'prompt_tokens': Number(5000)}),
    ('litellm.BadRequestError: AzureException - Error code: 400 - {\'error\': {\'message\': "This model\'s maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens. Please reduce the length of the messages.", \'type\': \'invalid_request_error\', \'param\': \'messages\', \'code\': \'context_length_exceeded\'}}',
     'openai-messages-resulted', K.PROMPT_OVER_WINDOW, {'window': Number(128000), 'prompt_tokens': Number(130000)}),
    ('litellm.BadRequestError: Azure_aiException - {"error":{"code":"Invalid input","status":422,"message":"invalid input error","details":[{"type":"value_error","loc":["body","max_tokens"],"msg":"Value error, max_tokens must be smaller than or equal to 4096."}]}}',
     'max-tokens-cap', K.OUTPUT_OVER_LIMIT, {'printed_limit': Limit(4096, M.OUTPUT_LIMIT)}),
    ('litellm.NotFoundError: OpenAIException - The model `gpt-5-turbo` does not exist or you do not have access to it.', None, None, {}),
    ('litellm.AuthenticationError: AnthropicException - {"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}', None, None, {}),
    ('litellm.BadRequestError: OpenAIException - Invalid prompt: your prompt was flagged as potentially violating our usage policy. Please try again with a different prompt.', None, None, {}),
    ("litellm.ContentPolicyViolationError: AzureException - The response was filtered due to the prompt triggering Azure OpenAI's content management policy.", None, None, {}),
    ("This model's maximum prompt length is 131072 but the request contains 140000 tokens.",
     'xai', K.PROMPT_OVER_WINDOW, {'prompt_tokens': Number(140000), 'printed_limit': Limit(131072, M.INPUT_LIMIT)}),
    ('litellm.BadRequestError: PerplexityException - {"error":{"message":"The total length of all messages is too long.","type":"too_many_prompt_tokens","code":400}}',
     'generic', K.UNKNOWN, {}),
    ('number of input tokens (167594) has exceeded max_prompt_tokens (163840) limit.',
     'max-prompt-tokens', K.PROMPT_OVER_WINDOW, {'prompt_tokens': Number(167594), 'printed_limit': Limit(163840, M.INPUT_LIMIT)}),
    ("{'code': 400, 'reason': 'INVALID_REQUEST_BODY', 'message': 'max_tokens (current value: 4096) must be between 0 and 4000 ', 'metadata': {}}",
     'max-tokens-cap', K.OUTPUT_OVER_LIMIT, {'output_tokens': Number(4096), 'printed_limit': Limit(4000, M.OUTPUT_LIMIT)}),
    ('{"error": {"code": 400, "message": "The input token count exceeds the maximum number of tokens allowed (1048576).", "status": "INVALID_ARGUMENT"}}',
     'gemini', K.PROMPT_OVER_WINDOW, {'printed_limit': Limit(1048576, M.INPUT_LIMIT)}),
    ('Input validation error: `inputs` tokens + `max_new_tokens` must be <= 2048. Given: 2000 `inputs` tokens and 100 `max_new_tokens`. Please reduce the length of the prompt.',
     'tgi-total', K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {'window': Number(2048), 'prompt_tokens': Number(2000), 'output_tokens': Number(100)}),
    ("This model's maximum context length is 4096 tokens. However, you requested 4500 tokens (4400 in the messages, None in the completion). Please reduce the length of the messages or completion.",
     'openai-requested', K.PROMPT_OVER_WINDOW, {'window': Number(4096), 'prompt_tokens': Number(4400), 'total_tokens': Number(4500)}),
    # a prompt that fills the window leaves no room for one output token: prompt alone (was prompt + output, round 4)
    ('litellm.ContextWindowExceededError: litellm.BadRequestError: Hosted_vllmException - Error code: 400 - {\'object\': \'error\', \'message\': "This model\'s maximum context length is 8192 tokens. However, you requested 9216 tokens (8192 in the messages, 1024 in the completion). Please reduce the length of the messages or completion.", \'type\': \'BadRequestError\', \'param\': None, \'code\': 400}\\nReceived Model Group=qwen\\nAvailable Model Group Fallbacks=None LiteLLM Retried: 2 times, LiteLLM Max Retries: 3',
     'openai-requested', K.PROMPT_OVER_WINDOW, {'window': Number(8192), 'prompt_tokens': Number(8192), 'output_tokens': Number(1024), 'total_tokens': Number(9216)}),
    ('litellm.BadRequestError: Hosted_vllmException - {\\"object\\":\\"error\\",\\"message\\":\\"This model\'s maximum context length is 16,384 tokens. However, you requested 2,048 output tokens and your prompt contains at least 14,337 input tokens, for a total of at least 16,385 tokens.\\",\\"type\\":\\"BadRequestError\\",\\"param\\":null,\\"code\\":400}',
     'vllm-0.18-0.31', K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {'window': Number(16384), 'prompt_tokens': Number(14337, LB), 'output_tokens': Number(2048), 'total_tokens': Number(16385, LB)}),
    ("You passed 8193 input tokens and requested 256 output tokens. However, the model's context length is only 8192 tokens, resulting in a maximum input length of 7936 tokens. Please reduce the length of the input prompt.",
     'vllm-you-passed', K.PROMPT_OVER_WINDOW, {'window': Number(8192), 'prompt_tokens': Number(8193), 'output_tokens': Number(256), 'printed_limit': Limit(7936, M.INPUT_BUDGET)}),
    ("This model's maximum context length is 4096 tokens. However, you requested 512 output tokens and your prompt contains 3800 input tokens, for a total of 4312 tokens. Please reduce the length of the input prompt or the number of requested output tokens. (parameter=input_tokens, value=3800)",
     'vllm-0.18-0.31', K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {'window': Number(4096), 'prompt_tokens': Number(3800), 'output_tokens': Number(512), 'total_tokens': Number(4312)}),
    ('litellm.BadRequestError: Hosted_vllmException - {"error":{"message":"This model\'s maximum context length is 32768 tokens. However, your prompt contains 1048576 characters (more than 131072 characters, which is the upper bound for 32768 input tokens). Please reduce the length of the input prompt. (parameter=input_text, value=1048576)","type":"BadRequestError","param":"input_text","code":400}}',
     'vllm-chars-precheck', K.PROMPT_OVER_WINDOW, {'window': Number(32768), 'printed_limit': Limit(32768, M.INPUT_BUDGET), 'prompt_chars': 1048576, 'char_limit': 131072}),
    ('max_tokens must be at least 1, got -512.',
     'vllm-output-below-one', K.OUTPUT_BELOW_ONE, {'output_tokens': Number(-512, UB)}),
    ('Requested input length 33000 exceeds maximum input length 32767',
     'deepinfra-input-length', K.PROMPT_OVER_WINDOW, {'prompt_tokens': Number(33000), 'printed_limit': Limit(32767, M.INPUT_LIMIT, LB)}),
    ('litellm.BadRequestError: Together_aiException - Input validation error: `inputs` tokens + `max_new_tokens` must be <= 32769. Given: 30000 `inputs` tokens and 4000 `max_new_tokens`',
     'tgi-total', K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {'window': Number(32769), 'prompt_tokens': Number(30000), 'output_tokens': Number(4000)}),
    ('Error code: 400 - {\'error\': {\'message\': "This model\'s maximum context length is 131072 tokens. However, you requested 140000 tokens (132000 in the messages, 8000 in the completion). Please reduce the length of the messages or completion.", \'type\': \'invalid_request_error\', \'param\': \'messages\', \'code\': \'context_length_exceeded\'}}',
     'openai-requested', K.PROMPT_OVER_WINDOW, {'window': Number(131072), 'prompt_tokens': Number(132000), 'output_tokens': Number(8000), 'total_tokens': Number(140000)}),
    ('{"error":{"message":"prompt is too long: 250000 tokens > 200000 maximum","type":"invalid_request_error"},"type":"error"}',
     'anthropic-prompt-too-long', K.PROMPT_OVER_WINDOW, {'window': Number(200000), 'prompt_tokens': Number(250000)}),
    ('The maximum tokens you requested exceeds the model limit of 32768',
     'bedrock-max-tokens', K.OUTPUT_OVER_LIMIT, {'printed_limit': Limit(32768, M.OUTPUT_LIMIT, LB)}),
    ("anthropic.BadRequestError: Error code: 400 - {'type': 'error', 'error': {'type': 'invalid_request_error', 'message': 'prompt is too long: 210345 tokens > 200000 maximum'}, 'request_id': 'req_011'}",
     'anthropic-prompt-too-long', K.PROMPT_OVER_WINDOW, {'window': Number(200000), 'prompt_tokens': Number(210345)}),
    ('litellm.BadRequestError: AnthropicException - {"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: 128000 > 64000, which is the maximum allowed number of output tokens for claude-sonnet-4-5-20250929"},"request_id":"req_1"}',
     'anthropic-max-output', K.OUTPUT_OVER_LIMIT, {'output_tokens': Number(128000), 'printed_limit': Limit(64000, M.OUTPUT_LIMIT)}),
    ("Error code: 400 - {'error': {'message': 'Please reduce the length of the messages or completion.', 'type': 'invalid_request_error', 'param': 'messages', 'code': 'context_length_exceeded'}}",
     'generic', K.UNKNOWN, {}),
    ('litellm.BadRequestError: GeminiException - {"error": {"code": 400, "message": "The input token count (2845475) exceeds the maximum number of tokens allowed (1048576).", "status": "INVALID_ARGUMENT"}}',
     'gemini', K.PROMPT_OVER_WINDOW, {'prompt_tokens': Number(2845475), 'printed_limit': Limit(1048576, M.INPUT_LIMIT)}),
    ('litellm.BadRequestError: VertexAIException - {"error": {"code": 400, "message": "Unable to submit request because it has a maxOutputTokens value of 100000 but the supported range is from 1 (inclusive) to 65537 (exclusive). Update the value and try again.", "status": "INVALID_ARGUMENT"}}',
     'vertex-max-output', K.OUTPUT_OVER_LIMIT, {'output_tokens': Number(100000), 'printed_limit': Limit(65536, M.OUTPUT_LIMIT)}),
    ('litellm.BadRequestError: BedrockException - {"message":"The model returned the following errors: Input is too long for requested model."}',
     'bedrock', K.UNKNOWN, {}),
    ('litellm.BadRequestError: BedrockException - {"message":"ValidationException: Input is too long for requested model."}',
     'bedrock', K.UNKNOWN, {}),
    ('litellm.BadRequestError: Ollama_chatException - {"error":"model requires more system memory (9.6 GiB) than is available (4.0 GiB)"}', None, None, {}),
    ('litellm.APIConnectionError: Ollama_chatException - {"error":"an error was encountered while running the model: context canceled"}', None, None, {}),
    ('litellm.BadRequestError: LM_studioException - {"error":"Trying to keep the first 5000 tokens when context the overflows. However, the model is loaded with context length of only 4096 tokens, which is not enough. Try to load the model with a larger context length, or provide a shorter input"}',
     'lmstudio-keep', K.PROMPT_OVER_WINDOW, {'window': Number(4096), 'prompt_tokens': Number(5000, LB)}),
    ('litellm.BadRequestError: LM_studioException - {"error":"The number of tokens to keep from the initial prompt is greater than the context length. Try to load the model with a larger context length, or provide a shorter input"}',
     'lmstudio-n-keep', K.UNKNOWN, {}),
    ('{"error":{"code":500,"message":"Context size has been exceeded.","type":"server_error"}}',
     'llamacpp-context-exceeded', K.UNKNOWN, {}),
    ('{"error":{"code":400,"message":"input is too large to process. increase the physical batch size","type":"invalid_request_error"}}',
     'llamacpp-ubatch', K.UNKNOWN, {}),
    ("litellm.BadRequestError: Text-completion-openaiException - This model's maximum context length is 4097 tokens, however you requested 4500 tokens (500 in your prompt; 4000 for the completion). Please reduce your prompt; or completion length.",
     'openai-completions', K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {'window': Number(4097), 'prompt_tokens': Number(500), 'output_tokens': Number(4000), 'total_tokens': Number(4500)}),
    ("litellm.BadRequestError: OpenAIException - Error code: 400 - {'error': {'message': 'Your input exceeds the context window of this model. Please adjust your input and try again.', 'type': 'invalid_request_error', 'param': 'input', 'code': 'context_length_exceeded'}}",
     'generic', K.UNKNOWN, {}),
    ('litellm.BadRequestError: MistralException - {"object":"error","message":"Prompt contains 140000 tokens, too large for model with 131072 maximum context length","type":"invalid_request_error","param":null,"code":"3051"}',
     'mistral', K.PROMPT_OVER_WINDOW, {'window': Number(131072), 'prompt_tokens': Number(140000)}),
    ('litellm.BadRequestError: Fireworks_aiException - {"error":{"object":"error","type":"invalid_request_error","code":"invalid_request_error","message":"The prompt is too long: 200000, model maximum context length: 163840"}}',
     'fireworks', K.PROMPT_OVER_WINDOW, {'window': Number(163840), 'prompt_tokens': Number(200000)}),
    ('litellm.BadRequestError: DeepinfraException - {"error":{"message":"Requested input length 33000 exceeds maximum input length 32767"}}',
     'deepinfra-input-length', K.PROMPT_OVER_WINDOW, {'prompt_tokens': Number(33000), 'printed_limit': Limit(32767, M.INPUT_LIMIT)}),
    ('litellm.BadRequestError: CerebrasException - {"message":"Please reduce the length of the messages or completion. Current length is 70000 while limit is 65536","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}',
     'cerebras', K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {'window': Number(65536), 'total_tokens': Number(70000)}),
    ('litellm.RateLimitError: CerebrasException - {"message":"Tokens per minute limit exceeded - too many tokens processed.","type":"too_many_tokens_error","param":"quota","code":"token_quota_exceeded"}', None, None, {}),
    ('litellm.BadRequestError: OpenrouterException - {"error":{"message":"This endpoint\'s maximum context length is 163840 tokens. However, you requested about 170000 tokens (170000 of text input). Please reduce the length of either one, or use the \\"middle-out\\" transform to compress your prompt automatically.","code":400}}',
     'openrouter', K.PROMPT_OVER_WINDOW, {'window': Number(163840), 'prompt_tokens': Number(170000, APPROX), 'total_tokens': Number(170000, APPROX)}),
    ('litellm.RateLimitError: AnthropicException - {"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed your organization\'s rate limit of 30,000 input tokens per minute (org: x, model: claude-sonnet-4). For details, refer to: https://docs.claude.com/en/api/rate-limits."}}', None, None, {}),
    ('litellm.BadRequestError: AnthropicException - {"type":"error","error":{"type":"invalid_request_error","message":"messages.1.content.0.text: total length of tool_result exceeds maximum allowed"}}', None, None, {}),
    ('litellm.BadRequestError: OpenAIException - Error code: 400 - {\'error\': {\'message\': "Invalid \'messages\': array too long. Expected an array with maximum length 2048, but got an array with length 3000 instead.", \'type\': \'invalid_request_error\', \'param\': \'messages\', \'code\': \'array_above_max_length\'}}', None, None, {}),
    ('litellm.BadRequestError: OpenAIException - Error code: 400 - {\'error\': {\'message\': "Invalid \'max_output_tokens\': integer below minimum value. Expected a value >= 16, but got 1 instead.", \'type\': \'invalid_request_error\', \'param\': \'max_output_tokens\', \'code\': \'integer_below_min_value\'}}', None, None, {}),
    ('litellm.BadRequestError: OpenAIException - Error code: 400 - {\'error\': {\'message\': "\'max_tokens\' or \'max_completion_tokens\' is too large: 8192. This model\'s maximum context length is 8192 tokens and your request has 21 input tokens (8192 > 8192 - 21). None", \'type\': \'BadRequestError\', \'param\': None, \'code\': 400}}',
     'vllm-max-tokens-too-large', K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {'window': Number(8192), 'prompt_tokens': Number(21), 'output_tokens': Number(8192)}),
    ("litellm.BadRequestError: OpenAIException - Error code: 400 - {'error': {'message': 'max_tokens is too large: 32768. This model supports at most 8192 completion tokens, whereas you provided 32768.', 'type': 'invalid_request_error', 'param': 'max_tokens', 'code': 'invalid_value'}}",
     'openai-max-output', K.OUTPUT_OVER_LIMIT, {'output_tokens': Number(32768), 'printed_limit': Limit(8192, M.OUTPUT_LIMIT)}),
    ('litellm.BadRequestError: GroqException - {"error":{"message":"\'max_tokens\' : must be less than or equal to 32768","type":"invalid_request_error"}}',
     'max-tokens-cap', K.OUTPUT_OVER_LIMIT, {'printed_limit': Limit(32768, M.OUTPUT_LIMIT)}),
    ('litellm.BadRequestError: XaiException - {"code":"Client specified an invalid argument","error":"This model\'s maximum prompt length is 131072 but the request contains 135423 tokens."}',
     'xai', K.PROMPT_OVER_WINDOW, {'prompt_tokens': Number(135423), 'printed_limit': Limit(131072, M.INPUT_LIMIT)}),
    ('litellm.BadRequestError: DashscopeException - {"error":{"message":"<400> InternalError.Algo.InvalidParameter: Range of input length should be [1, 30720]","type":"invalid_request_error","code":"invalid_parameter_error"}}',
     'dashscope', K.PROMPT_OVER_WINDOW, {'printed_limit': Limit(30720, M.INPUT_LIMIT)}),
    ('litellm.BadRequestError: MoonshotException - {"error":{"message":"Invalid request: Your request exceeded model token limit: 131072 (requested: 140000)","type":"invalid_request_error"}}',
     'moonshot', K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {'window': Number(131072), 'total_tokens': Number(140000)}),
    ('litellm.BadRequestError: Hosted_vllmException - {"object":"error","message":"Input length (9000) exceeds model\'s maximum context length (8192).","type":"BadRequestError","code":400}',
     'input-length-exceeds-context', K.PROMPT_OVER_WINDOW, {'window': Number(8192), 'prompt_tokens': Number(9000)}),
    ('litellm.BadRequestError: Hosted_vllmException - {"object":"error","message":"The model `llama` does not exist.","type":"NotFoundError","param":null,"code":404}', None, None, {}),
    ('litellm.BadRequestError: Hosted_vllmException - {"error":{"message":"The decoder prompt (length 8192) plus the number of requested output tokens (at least 1) is longer than the maximum model length of 8192. Make sure that `max_model_len` is no smaller than the number of text tokens (prompt + requested output tokens).","type":"BadRequestError","param":null,"code":400}}',
     'vllm-decoder-prompt', K.PROMPT_OVER_WINDOW, {'window': Number(8192), 'prompt_tokens': Number(8192)}),
    ('The decoder prompt (length 512) plus the number of requested output tokens (at least 1) exceeds the maximum model length of 512.',
     'vllm-decoder-prompt', K.PROMPT_OVER_WINDOW, {'window': Number(512, LB), 'prompt_tokens': Number(512)}),
    ('litellm.ContextWindowExceededError: litellm.BadRequestError: Hosted_vllmException - Error code: 400 - {\'error\': {\'message\': "This model\'s maximum context length is 32768 tokens. However, you requested 8192 output tokens and your prompt contains at least 24577 input tokens, for a total of at least 32769 tokens. Please reduce the length of the input prompt or the number of requested output tokens. (parameter=input_tokens, value=24577)", \'type\': \'BadRequestError\', \'param\': \'input_tokens\', \'code\': 400}}\\nmodel=qwen3-32b. context_window_fallbacks=None. fallbacks=None.\\n\\nSet \'context_window_fallback\' - https://docs.litellm.ai/docs/routing#fallbacks\\nReceived Model Group=qwen3-32b\\nAvailable Model Group Fallbacks=None',
     'vllm-0.18-0.31', K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {'window': Number(32768), 'prompt_tokens': Number(24577, LB), 'output_tokens': Number(8192), 'total_tokens': Number(32769, LB)}),
    ('litellm.BadRequestError: OpenAIException - Error code: 400 - {\'object\': \'error\', \'message\': "This model\'s maximum context length is 4096 tokens. However, you requested 4097 tokens (3097 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.", \'type\': \'BadRequestError\', \'param\': None, \'code\': 400} LiteLLM Retried: 1 times, LiteLLM Max Retries: 2',
     'openai-requested', K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {'window': Number(4096), 'prompt_tokens': Number(3097), 'output_tokens': Number(1000), 'total_tokens': Number(4097)}),
    ("litellm.APIError: APIError: Hosted_vllmException - Error code: 500 - {'object': 'error', 'message': 'Context size has been exceeded.', 'type': 'InternalServerError', 'param': None, 'code': 500}",
     'llamacpp-context-exceeded', K.UNKNOWN, {}),
    ('litellm.BadRequestError: Hosted_vllmException - {"object":"error","message":"This model\'s maximum context length is 8192 tokens. However, you requested 10000 tokens in the messages, Please reduce the length of the messages.","type":"BadRequestError","param":null,"code":400}',
     'vllm-requested-in-messages', K.PROMPT_OVER_WINDOW, {'window': Number(8192), 'prompt_tokens': Number(10000)}),
    ('litellm.BadRequestError: Hosted_vllmException - {"object":"error","message":"The prompt (total length 10000) is too long to fit into the model (context length 8192). Make sure that `max_model_len` is no smaller than the number of text tokens plus multimodal tokens. For image inputs, the number of image tokens depends on the number of images, and possibly their aspect ratios as well.","type":"BadRequestError","param":null,"code":400}',
     'vllm-v0-too-long-to-fit', K.PROMPT_OVER_WINDOW, {'window': Number(8192), 'prompt_tokens': Number(10000)}),
    ('litellm.BadRequestError: Hosted_vllmException - {"object":"error","message":"This model\'s maximum context length is 40960 tokens. However, you requested 41000 output tokens and your prompt contains at least 1 input tokens, for a total of at least 41001 tokens. Please reduce the length of the input prompt or the number of requested output tokens. (parameter=input_tokens, value=1)","type":"BadRequestError","param":"input_tokens","code":400}',
     'vllm-0.18-0.31', K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {'window': Number(40960), 'prompt_tokens': Number(1, LB), 'output_tokens': Number(41000), 'total_tokens': Number(41001, LB)}),
    ('Error code: 400 - {\'error\': {\'message\': "This model\'s maximum context length is 128000 tokens. However, your messages resulted in 135,217 tokens. Please reduce the length of the messages.", \'type\': \'invalid_request_error\', \'param\': \'messages\', \'code\': \'context_length_exceeded\'}}',
     'openai-messages-resulted', K.PROMPT_OVER_WINDOW, {'window': Number(128000), 'prompt_tokens': Number(135217)}),
    ('litellm.BadRequestError: AnthropicException - {"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 1048577 tokens > 1000000 maximum"}}',
     'anthropic-prompt-too-long', K.PROMPT_OVER_WINDOW, {'window': Number(1000000), 'prompt_tokens': Number(1048577)}),
    ('litellm.BadRequestError: BedrockException - {"message":"The model returned the following errors: input length and `max_tokens` exceed context limit: 199999 + 32000 > 200000, decrease input length or `max_tokens` and try again"}',
     'anthropic-input-and-max-tokens', K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {'window': Number(200000), 'prompt_tokens': Number(199999), 'output_tokens': Number(32000)}),
    ('litellm.BadRequestError: Vertex_ai_betaException - {"error":{"code":400,"message":"{\\"type\\":\\"error\\",\\"error\\":{\\"type\\":\\"invalid_request_error\\",\\"message\\":\\"prompt is too long: 203524 tokens > 200000 maximum\\"}}","status":"INVALID_ARGUMENT"}}',
     'anthropic-prompt-too-long', K.PROMPT_OVER_WINDOW, {'window': Number(200000), 'prompt_tokens': Number(203524)}),
    ('{"error":{"message":"{\\"error\\":{\\"message\\":\\"This model\'s maximum context length is 32768 tokens. However, you requested 40000 tokens (36000 in the messages, 4000 in the completion). Please reduce the length of the messages or completion.\\",\\"type\\":\\"invalid_request_error\\"}}","code":400}}',
     'openai-requested', K.PROMPT_OVER_WINDOW, {'window': Number(32768), 'prompt_tokens': Number(36000), 'output_tokens': Number(4000), 'total_tokens': Number(40000)}),
    ('litellm.BadRequestError: OpenAIException - {"error":{"message":"Provider returned error","code":400,"metadata":{"raw":"{\\"object\\":\\"error\\",\\"message\\":\\"This model\'s maximum context length is 131072 tokens. However, you requested 140000 tokens (132000 in the messages, 8000 in the completion). Please reduce the length of the messages or completion.\\",\\"type\\":\\"BadRequestError\\",\\"param\\":null,\\"code\\":400}","provider_name":"DeepInfra"}}}',
     'openai-requested', K.PROMPT_OVER_WINDOW, {'window': Number(131072), 'prompt_tokens': Number(132000), 'output_tokens': Number(8000), 'total_tokens': Number(140000)}),
    ('litellm.BadRequestError: Hosted_vllmException - {"object":"error","message":"max_tokens must be at least 1, got 0.","type":"BadRequestError","param":"max_tokens","code":400}',
     'vllm-output-below-one', K.OUTPUT_BELOW_ONE, {'output_tokens': Number(0)}),
    ('litellm.BadRequestError: OpenAIException - {"error":{"message":"Requested token count exceeds the model\'s maximum context length of 163840 tokens. You requested a total of 168265 tokens: 104265 tokens from the input messages and 64000 tokens for the completion. Please reduce the number of tokens in the input messages or the completion to fit within the limit.","type":"invalid_request_error","code":400}}',
     'sglang-requested-total', K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {'window': Number(163840), 'prompt_tokens': Number(104265), 'output_tokens': Number(64000), 'total_tokens': Number(168265)}),
    ('litellm.ContextWindowExceededError: litellm.BadRequestError: Lm_studioException - {"error":"Reached context length of 4096 tokens with model (arch: qwen2) that does not currently support mid-generation context overflow. Try reloading with a larger context length or shortening the prompt/chat."}',
     'lmstudio-reached-context', K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {'window': Number(4096)}),
    ('litellm.BadRequestError: Ollama_chatException - {"error":"registry.ollama.ai/library/llama3:latest does not support tools"}', None, None, {}),
    ('llama_decode: failed to decode, ret = 1', None, None, {}),
    ('litellm.BadRequestError: Openai_likeException - {"detail":"Input validation error: `inputs` tokens + `max_new_tokens` must be <= 16384. Given: 16000 `inputs` tokens and 1024 `max_new_tokens`"}',
     'tgi-total', K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {'window': Number(16384), 'prompt_tokens': Number(16000), 'output_tokens': Number(1024)}),
    ('litellm.RateLimitError: litellm.RateLimitError: VertexAIException - {"error":{"code":429,"message":"Resource exhausted. Please try again later.","status":"RESOURCE_EXHAUSTED"}}', None, None, {}),
    ('litellm.BadRequestError: OpenAIException - Error code: 400 - {\'error\': {\'message\': "Invalid \'max_tokens\': integer above maximum value. Expected a value <= 4096, but got 8192 instead.", \'type\': \'invalid_request_error\', \'param\': \'max_tokens\', \'code\': \'integer_above_max_value\'}}',
     'openai-max-output-above-maximum', K.OUTPUT_OVER_LIMIT, {'output_tokens': Number(8192), 'printed_limit': Limit(4096, M.OUTPUT_LIMIT)}),
    # a prompt that fills the window leaves no room for one output token: prompt alone (was prompt + output, round 4)
    ('litellm.BadRequestError: Hosted_vllmException - {"object":"error","message":"This model\'s maximum context length is 4096 tokens. However, you requested 4608 tokens (4096 in the messages, 512 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400} Received Model Group=local-4096',
     'openai-requested', K.PROMPT_OVER_WINDOW, {'window': Number(4096), 'prompt_tokens': Number(4096), 'output_tokens': Number(512), 'total_tokens': Number(4608)}),
    ("litellm.BadRequestError: Hosted_vllmException - This model's maximum context length is 2048 tokens. However, you requested 2100 tokens (2000 in the prompt, 100 in the completion). Please reduce the length of the prompt or completion.",
     'openai-requested', K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {'window': Number(2048), 'prompt_tokens': Number(2000), 'output_tokens': Number(100), 'total_tokens': Number(2100)}),
    ('{"detail":"This model\'s maximum context length is 4096 tokens. However, your request has 3000 input tokens. Please reduce the length of the input messages."}',
     'vllm-request-has', K.UNKNOWN, {'window': Number(4096, LB), 'prompt_tokens': Number(3000)}),
    ("This model's maximum context length is 131,072 tokens. However, you requested 8,192 output tokens and your prompt contains at least 122,881 input tokens, for a total of at least 131,073 tokens.",
     'vllm-0.18-0.31', K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {'window': Number(131072), 'prompt_tokens': Number(122881, LB), 'output_tokens': Number(8192), 'total_tokens': Number(131073, LB)}),
    ("This model's maximum prompt length is 8192 tokens. However, your request has 9000 prompt tokens. Please reduce the length of the prompt.",
     'vllm-max-prompt-length', K.PROMPT_OVER_WINDOW, {'prompt_tokens': Number(9000), 'printed_limit': Limit(8192, M.INPUT_LIMIT)}),
    ("This model's maximum context length is 8192 tokens. However, your request has 9000 tokens. Please reduce the length of the messages.",
     'vllm-request-has', K.UNKNOWN, {'window': Number(8192, LB), 'prompt_tokens': Number(9000)}),
    ("This model's maximum context length was exceeded. Please reduce the length of the messages.",
     'generic', K.UNKNOWN, {}),
    ('This maximum context length is 4000 tokens. However, your request has 4500 input tokens. Please reduce the length of the input messages.',
     'vllm-request-has', K.UNKNOWN, {'window': Number(4000, LB), 'prompt_tokens': Number(4500)}),
    ('litellm.BadRequestError: Hosted_vllmException - {"error":{"message":"This model\'s maximum context length is 8192 tokens. However, your request has 8192 input tokens. (parameter=input_tokens, value=8192)","type":"BadRequestError","param":"input_tokens","code":400}}',
     'vllm-request-has', K.UNKNOWN, {'window': Number(8192, LB), 'prompt_tokens': Number(8192)}),
    ('litellm.BadRequestError: OpenAIException - Error code: 400 - {\'error\': {\'message\': "Invalid \'messages[2].tool_calls[0].function.arguments\': string too long.", \'type\': \'invalid_request_error\'}}\\nmodel=gpt-4o. context_window_fallbacks=None. fallbacks=None.\\n\\nSet \'context_window_fallback\' - https://docs.litellm.ai/docs/routing#fallbacks\\nReceived Model Group=gpt-4o\\nAvailable Model Group Fallbacks=None', None, None, {}),
    ('litellm.BadRequestError: AnthropicException - {"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: Field required"}}', None, None, {}),
    ('litellm.BadRequestError: AnthropicException - {"type":"error","error":{"type":"invalid_request_error","message":"thinking.budget_tokens: Input should be greater than or equal to 1024"}}', None, None, {}),
    ('litellm.BadRequestError: OpenAIException - Error code: 400 - {\'error\': {\'message\': "Invalid \'tools\': array too long. Expected an array with maximum length 128, but got an array with length 200 instead.", \'type\': \'invalid_request_error\', \'param\': \'tools\', \'code\': \'array_above_max_length\'}}', None, None, {}),
    ('litellm.InternalServerError: AnthropicException - {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}', None, None, {}),
    ('litellm.BadRequestError: Hosted_vllmException - {"object":"error","message":"max_tokens must be at least 1, got -1.","type":"BadRequestError","param":"max_tokens","code":400}',
     'vllm-output-below-one', K.OUTPUT_BELOW_ONE, {'output_tokens': Number(-1)}),
    ('litellm.Timeout: Connection timed out after 600.0 seconds.', None, None, {}),
    ('litellm.APIConnectionError: Ollama_chatException - {"error":"llama runner process has terminated: error loading model: unable to allocate backend buffer"}', None, None, {}),
    ('Error code: 400 - {\'error\': {\'message\': "This model\'s maximum context length is 8192 tokens. However, you requested 8196 tokens (4100 in the messages, 4096 in the completion). Please reduce the length of the messages or completion.", \'type\': \'invalid_request_error\', \'param\': \'messages\', \'code\': \'context_length_exceeded\'}} (request id: 20250101abc)',
     'openai-requested', K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {'window': Number(8192), 'prompt_tokens': Number(4100), 'output_tokens': Number(4096), 'total_tokens': Number(8196)}),
    ('openai.BadRequestError: Error code: 400 - {\'error\': {\'message\': "This model\'s maximum context length is 1,047,576 tokens. However, your messages resulted in 1,100,000 tokens. Please reduce the length of the messages.", \'type\': \'invalid_request_error\', \'param\': \'messages\', \'code\': \'context_length_exceeded\'}}',
     'openai-messages-resulted', K.PROMPT_OVER_WINDOW, {'window': Number(1047576), 'prompt_tokens': Number(1100000)}),
    ('litellm.BadRequestError: VertexAIException - {"error": {"code": 400, "message": "The input token count (1,200,000) exceeds the maximum number of tokens allowed (1,048,576).", "status": "INVALID_ARGUMENT"}}',
     'gemini', K.PROMPT_OVER_WINDOW, {'prompt_tokens': Number(1200000), 'printed_limit': Limit(1048576, M.INPUT_LIMIT)}),
    ('litellm.BadRequestError: BedrockException - {"message":"Input is too long for requested model."} LiteLLM Retried: 3 times',
     'bedrock', K.UNKNOWN, {}),
    ('litellm.BadRequestError: Hosted_vllmException - Error code: 400 - {\'object\': \'error\', \'message\': "This model\'s maximum context length is 2048 tokens. However, you requested 2049 tokens (1 in the messages, 2048 in the completion). Please reduce the length of the messages or completion.", \'type\': \'BadRequestError\', \'param\': None, \'code\': 400}',
     'openai-requested', K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {'window': Number(2048), 'prompt_tokens': Number(1), 'output_tokens': Number(2048), 'total_tokens': Number(2049)}),
    ("litellm.BadRequestError: Hosted_vllmException - Error code: 400 - {'object': 'error', 'message': 'max_tokens=2049 cannot be greater than max_model_len=2048. Please request fewer output tokens.', 'type': 'BadRequestError', 'param': 'max_tokens', 'code': 400}",
     'vllm-max-tokens-over-window', K.OUTPUT_OVER_WINDOW, {'window': Number(2048), 'output_tokens': Number(2049)}),
    ('litellm.BadRequestError: TogetherAIException - {"error":{"message":"Input validation error: `inputs` tokens + `max_new_tokens` must be <= 131073. Given: 130000 `inputs` tokens and 2048 `max_new_tokens`","type":"invalid_request_error","param":"max_tokens"}}',
     'tgi-total', K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {'window': Number(131073), 'prompt_tokens': Number(130000), 'output_tokens': Number(2048)}),
    ('litellm.BadRequestError: Text-completion-codestralException - {"object":"error","message":"Prompt contains 33000 tokens and 0 draft tokens, too large for model with 32768 maximum context length","type":"invalid_request_error"}',
     'mistral', K.PROMPT_OVER_WINDOW, {'window': Number(32768), 'prompt_tokens': Number(33000)}),
    ('Error : Request input tokens exceed model token limit. Reduce the input size.',
     'generic', K.UNKNOWN, {}),
    ('{"error":{"code":400,"message":"the request exceeds the available context size. try increasing the context size or enable context shift","type":"invalid_request_error"}}',
     'llamacpp', K.UNKNOWN, {}),
    ("google.genai.errors.ClientError: 400 INVALID_ARGUMENT. {'error': {'code': 400, 'message': 'The input token count (81881) exceeds the maximum number of tokens allowed (65536).', 'status': 'INVALID_ARGUMENT'}}",
     'gemini', K.PROMPT_OVER_WINDOW, {'prompt_tokens': Number(81881), 'printed_limit': Limit(65536, M.INPUT_LIMIT)}),
    ("Request to model 'voyage-3' failed. The max allowed tokens per submitted batch is 120000. Your batch has 130000 tokens after truncation. Please lower the number of tokens in the batch.",
     'voyage-batch', K.PROMPT_OVER_WINDOW, {'prompt_tokens': Number(130000), 'printed_limit': Limit(120000, M.REQUEST_LIMIT)}),
    ('litellm.BadRequestError: OpenAIException - {"error":{"message":"Param Incorrect","type":"upstream_error","param":"max_tokens is too large: 1048576. This model supports at most 131072 completion tokens, whereas you provided 1048576.","code":"400"}}',
     'openai-max-output', K.OUTPUT_OVER_LIMIT, {'output_tokens': Number(1048576), 'printed_limit': Limit(131072, M.OUTPUT_LIMIT)}),
    ('litellm.BadRequestError: Hosted_vllmException - {"error":{"message":"This model\'s maximum context length is 4096 tokens. However, your request has 8 input tokens plus 4095 \'max_tokens\'. Please reduce one or the other. (parameter=input_tokens, max_tokens, value=(8, 4095))","type":"BadRequestError","param":"input_tokens, max_tokens","code":400}}',
     'vllm-request-has-plus', K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {'window': Number(4096), 'prompt_tokens': Number(8), 'output_tokens': Number(4095)}),
    ('{"error":{"message":"This model\'s maximum context length is 3 tokens. However, your request has 8 input tokens. Please reduce the length of the input messages. (parameter=input_tokens, value=8)","type":"BadRequestError","param":"input_tokens","code":400}}',
     'vllm-request-has', K.UNKNOWN, {'window': Number(3, LB), 'prompt_tokens': Number(8)}),
    # Volcengine Ark's other parameter error: not about size at all
    ("The parameter max_tokens specified in the request are not valid: max_tokens and max_completion_tokens cannot be "
     "set at the same time. Request id: 0217", None, None, {}),
    # Bedrock's JSON-schema check on a field that is not the input (a stop sequence): no input length
    ("Malformed input request: #/stop_sequences/0: expected maxLength: 64, actual: 100, please reformat your input "
     "and try again.", None, None, {}),
]


@pytest.mark.parametrize(("text", "family", "kind", "fields"), FAULTS, ids=[f"fault-{i}-{w[1]}" for i, w in enumerate(FAULTS)])
def test_fault_parses_with_its_meaning(text, family, kind, fields):
    assert _view(parse_context_error(text)) == _expected(family, kind, fields)


WRAPPERS = {
    "litellm-context": lambda t: "litellm.ContextWindowExceededError: litellm.BadRequestError: OpenAIException - " + t,
    "json-body": lambda t: json.dumps({"error": {"message": t, "type": "invalid_request_error", "param": None}}),
    "python-repr": lambda t: "Error code: 400 - " + str({"error": {"message": t, "type": "BadRequestError", "code": 400}}),
    "router-suffix": lambda t: t + "\nReceived Model Group=fast\nAvailable Model Group Fallbacks=None LiteLLM Retried: 2 times",
}


@pytest.mark.parametrize("wrapper", sorted(WRAPPERS))
def test_every_fault_reads_the_same_in_any_wrapper(wrapper):
    wrap = WRAPPERS[wrapper]
    bad = [text[:80] for text, family, kind, fields in FAULTS
           if _view(parse_context_error(wrap(text))) != _expected(family, kind, fields)]
    assert not bad, bad


@pytest.mark.parametrize(("text", "family", "kind", "fields"), CORPUS, ids=[f"corpus-{i}-{w[1]}" for i, w in enumerate(CORPUS)])
def test_corpus_message_parses_with_its_meaning(text, family, kind, fields):
    assert _view(parse_context_error(text)) == _expected(family, kind, fields)


def test_the_sweep_is_at_least_sixty_new_messages():
    assert len(FAULTS) + len(CORPUS) >= 60
    assert sum(1 for w in CORPUS if w[1] is None) >= 20


@pytest.mark.parametrize("text", [
    "Your input exceeds the context window of 128k tokens.",
    "prompt is too long: 250k tokens > 200k maximum",
    "This model's maximum context length is 128K tokens. However, your messages resulted in 140K tokens.",
    "Input length (140k tokens) exceeds model's maximum context length (128k).",
    "The input token count (1.2M) exceeds the maximum number of tokens allowed (1M).",
])
def test_a_count_with_a_magnitude_suffix_is_never_read_or_learned(text):
    got = parse_context_error(text)
    assert got is not None and not got.has_numbers
    assert limit_from_error(got) is None


def test_completions_window_minus_max_tokens_is_retried_clamped_not_escalated():
    # vllm-project/vllm#33418: "maximum context length is 3 tokens" for 2045 max_tokens in a 2048 window, 8-token prompt
    text = FAULTS[2][0]
    plan = BackstopPlan(source="fast", chain=("slow",), requested=2045, own_generic_fallbacks=True)
    d = decide_hop(plan=plan, hop_group="fast", error=parse_context_error(text), prompt_count=8, known_window=2048,
                   output_floor_tokens=256)
    assert (d.action, d.max_tokens) == (HopAction.RETRY_CLAMPED, 2048 - 8)


def test_a_prompt_that_fills_the_window_skips_the_retry():
    d = decide_hop(plan=BackstopPlan("fast", ("slow",), 1024, True), hop_group="fast",
                   error=parse_context_error(FAULTS[0][0]), prompt_count=8192, known_window=8192, output_floor_tokens=256)
    assert d.action is HopAction.SKIP


@pytest.mark.parametrize("text", [
    "&#" + "1" * 4301,  # html.unescape's int() raised past Python's 4300-digit limit
    "prompt is too long: 5000 tokens > 4096 maximum &#" + "9" * 19_000 + ";",
    "Request failed: " + "&#" + "7" * 50_000,
])
def test_a_huge_character_reference_never_raises(text):
    result = parse_context_error(text)
    assert result is None or result.family == "anthropic-prompt-too-long"
    if "maximum" in text:
        assert result is not None and result.window == Number(4096) and result.prompt_tokens == Number(5000)

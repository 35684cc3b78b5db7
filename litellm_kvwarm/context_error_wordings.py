"""The wording table: every context-length error wording the parser knows (a data table).

This module is **pure data** (two tuples, :data:`ROWS` and :data:`NEGATIVES`, and this
docstring describing them), so it is exempt from the plugin's 300-line module limit:
splitting a table only scatters it. The machinery is :mod:`litellm_kvwarm.context_error_rows`,
the parser :mod:`litellm_kvwarm.context_errors`. A new wording is one more row; order
matters (the first row that matches wins, generic fallbacks last).

The table (family — wording — where seen; W window, P prompt, C requested output, T total,
L a printed limit that is not the window):

vLLM (and servers that reuse its text)
  * ``vllm-chars-precheck`` — "maximum context length is W tokens. However, [you requested C
    output tokens and] your prompt contains N characters (more than M characters, which is
    the upper bound for L input tokens)": vLLM 0.18+ character pre-check. N and M are
    characters (``prompt_chars``/``char_limit``), never tokens; L is W − C (INPUT_BUDGET). Without its parenthesis (cut
    there, or quoted without it: "you requested 40960 output tokens and your prompt contains 12769 characters",
    DeepInfra 2026) W and C still read (before: a bare window, C lost).
  * ``vllm-0.18-0.31`` — "maximum context length is W tokens. However, you requested C output
    tokens and your prompt contains at least P input tokens, for a total of at least T
    tokens." P and T are LOWER_BOUND; without "at least" (the same check as worded in some builds
    and hosted forks, 2025–2026: "... your prompt contains P tokens") they are exact.
  * ``vllm-0.32+`` — "... However, your prompt contains at least P input tokens, which
    exceeds this limit even without any output tokens." P is LOWER_BOUND (exact without
    "at least").
  * ``vllm-max-tokens-too-large`` — "'max_tokens' or 'max_completion_tokens' is too large: C.
    This model's maximum context length is W tokens and your request has P input tokens
    (C > W - P)": vLLM 0.10–0.17.
  * ``vllm-you-passed`` — "You passed P input tokens and requested C output tokens. However,
    the model's context length is only W tokens, resulting in a maximum input length of L
    tokens": vLLM 0.10–0.17 (also seen from hosted vLLM gateways in 2026). L = W − C
    (INPUT_BUDGET); P == L + 1 means vLLM truncated the tokenization, so P is LOWER_BOUND. Its character
    pre-check (0.16–0.17, the renderer) "You passed N input characters and requested C output tokens. However, the model's
    context length is only W tokens, resulting in a maximum input length of L tokens (at most M characters)": N and M
    are characters (``prompt_chars``/``char_limit``), never tokens.
  * ``vllm-request-has`` — "maximum context length is X tokens. However, your request has P
    input tokens" (also "P tokens"; "This maximum context length is X", 0.10 renderer): vLLM
    0.10–0.15. For ``/v1/completions`` on 0.11–0.15 X is W − max_tokens, for chat it is W: reported
    as ``window`` with certainty LOWER_BOUND (the window is ≥ X). The kind is UNKNOWN: with X =
    W − max_tokens the prompt may fit alone (issue vllm-project/vllm#33418: "maximum context length
    is 3 tokens. However, your request has 8 input tokens" for 2045 max_tokens in a 2048 window), so
    it is not a prompt-alone refusal. ``vllm-request-has-plus`` — "... your request has P input
    tokens plus C 'max_tokens'. Please reduce one or the other." (the fix proposed in PR #33425,
    2026-01): X is W there, and the kind follows the numbers.
  * ``vllm-max-tokens-over-window`` — "max_tokens=C cannot be greater than max_model_len=W"
    (0.32+), and ``vllm-max-tokens-over-window-old`` "max_tokens=Ccannot be greater than
    max_model_len=max_total_tokens=W" (0.18–0.31 and main before PR #40324, 2026-04); the
    field is ``max_output_tokens`` on ``/v1/responses`` (0.32, ``responses/serving.py``).
  * ``vllm-engine-prompt`` — "The engine prompt length P exceeds the max_model_len W. Please
    reduce prompt.": vLLM 0.32 ``/v1/responses`` (a prompt that fills the whole window).
  * ``vllm-output-below-one`` — "max_tokens must be at least 1, got N": N ≤ 0 is the output
    budget the server computed (asked for, or window − prompt when max_tokens was absent);
    reported in ``output_tokens`` as printed.
  * ``vllm-decoder-prompt`` — "The decoder prompt (length P) is longer than the maximum model
    length of W": vLLM V1 engine (~0.7–0.10, ``_validate_model_input``,
    multimodal and encoder-decoder models); "The decoder prompt (length P) plus the number of
    requested output tokens (at least 1) is longer than (or "exceeds") the maximum model length of
    W" (``input_processor._validate_prompt_len``, 0.11+: P == W, a prompt that fills the window
    leaves no room for any output, so PROMPT_OVER_WINDOW).
  * ``vllm-encoder-prompt`` — the same wording for "The encoder prompt (length P)": its limit is
    ``max_model_len`` in 0.7–0.10 but the multimodal encoder cache size in 0.11+ (``mm_encoder_cache_size``),
    and P the encoder's input: a length refusal with no number read. ``vllm-encoder-cache`` — "The decoder prompt
    contains a(n) image item with length N, which exceeds the pre-allocated encoder cache size M. Please reduce the
    input size or increase the encoder cache size by setting --limit-mm-per-prompt at startup." (vLLM main from PR
    #33110, merged 2026-01, ``InputProcessor._validate_model_input``, quoted in vllm-project/vllm#34040 and
    zai-org/GLM-OCR#67; "with N embedding tokens" in later builds and forks that count embeddings, 2026): one media
    item over the encoder cache, N and M its embeddings and the cache, neither the prompt nor the window: a length
    refusal with no number read (kind UNKNOWN; read before as nothing).
  * ``vllm-prompt-length-of`` — "Prompt length of P is longer than the maximum model length of W"
    (and "input is longer than the maximum model length of W", no prompt count): vLLM 0.6–0.7.
  * ``vllm-v0-too-long-to-fit`` — "The prompt (total length P) is too long to fit into the model
    (context length W). Make sure that `max_model_len` is no smaller than the number of text
    tokens plus multimodal tokens": vLLM V0 engine (0.6–0.8, issue vllm-project/vllm#12165).
  * ``vllm-v0-block-manager`` — "Input prompt (P tokens) [+ lookahead slots (K)] is too long and
    exceeds the capacity of block_manager": V0 scheduler log (≤0.8); the limit is the KV pool,
    not printed, so only the prompt is reported.
  * ``vllm-embedding`` — "maximum context length is W tokens. However, you requested P tokens in
    the input for embedding generation": vLLM 0.6–0.9 ``/v1/embeddings`` (P is the input).
  * ``vllm-requested-in-messages`` — "This model's maximum context length is W tokens. However, you
    requested P tokens in the messages, Please reduce the length of the messages.": vLLM 0.4–0.6
    ``serving_engine._validate_input`` when the request has no ``max_tokens`` (P ≥ W; also "in the
    prompt" on ``/v1/completions``; NVIDIA NIM repeats it). P is the prompt alone.
  * ``vllm-v0-scheduler`` — "Input prompt (P tokens) is too long and exceeds limit of W": V0
    scheduler log line (≤0.7; the limit equals max_model_len because V0 requires
    max_num_batched_tokens ≥ max_model_len without chunked prefill).
OpenAI and OpenAI-compatible
  * ``openai-requested`` — "maximum context length is W tokens. However, you requested T tokens
    (P in the messages, C in the completion)" (", but you requested" in gateways' rewording): OpenAI chat (2023–), vLLM ≤0.9, DeepSeek,
    Azure, FastChat, DeepInfra; "(P in the prompt, C in the completion)" vLLM 0.4 completions;
    "(P in the messages, None in the completion)" vLLM 0.4–0.5 with ``max_tokens`` null (no
    output reported).
  * ``openai-requested-cut`` — the same breakdown cut short by whoever truncated the body ("... you requested
    T tokens (P in the messages, C in the compl", "(P in the mess", "(P", "(", "you requested T", "you requested T tokens"): P is the whole prompt when the completion part
    follows it, else only the messages part (LOWER_BOUND: functions and tools may follow); the kind from the numbers
    (:func:`~litellm_kvwarm.context_error_rows.refine_cut_breakdown`). Read before as ``deepseek-requested-total``
    (no prompt, and a prompt-alone refusal taken for prompt + output).
  * ``openai-requested-functions`` — "... (M in the messages, F in the functions, and C in the
    completion)": OpenAI functions API (2023–2025), "F in the tools" its 2024– tools wording;
    ``prompt_tokens`` is M + F.
  * ``deepseek-requested-total`` — "maximum context length is W tokens. However, you requested T
    tokens." with no breakdown: DeepSeek API (2025–2026), OpenAI-compatible gateways; also
    "maximum context length is W tokens; requested T" and ", but you requested T tokens." (gateways,
    clients' quotes; "payload too large: " before it is no byte limit). T is prompt + max_tokens
    (``total_tokens``), the split unknown: PROMPT_PLUS_OUTPUT_OVER_WINDOW.
  * ``openai-completions`` — "maximum context length is W tokens, however you requested T
    tokens (P in your prompt; C for the completion)": OpenAI/Azure completions API (2022–2023).
  * ``openai-messages-resulted`` — "... However, your messages resulted in P tokens": OpenAI,
    Azure, Groq, FastChat, NVIDIA NIM.
  * ``textgen-webui`` — "This model maximum context length is W tokens. However, your messages
    resulted in over P tokens [and max_tokens is C]": text-generation-webui (P LOWER_BOUND).
  * ``openai-input-limit`` — "Input tokens exceed the configured limit of L tokens. [Your
    messages resulted in P tokens.]": OpenAI/Azure GPT-5 family; L is INPUT_LIMIT.
  * ``openai-max-output`` — "max_tokens is too large: C. This model supports at most L
    completion tokens": L is OUTPUT_LIMIT.
  * ``openai-embeddings-request`` — "Requested P tokens, max L tokens per request": embeddings
    batch limit (REQUEST_LIMIT); ``voyage-batch`` "Request to model 'voyage-3' failed. The max allowed
    tokens per submitted batch is L. Your batch has P tokens after truncation." (Voyage embeddings,
    2024–2026: the sum over the batch, REQUEST_LIMIT).
  * ``openrouter`` — "This endpoint's maximum context length is W tokens. However, you
    requested about T tokens (P of text input, C in the output)" (also quoted without "This endpoint's"): P, T APPROXIMATE; without the breakdown (cut
    before it or inside it, or relayed without it: read before as a bare window, T lost) T alone, kind UNKNOWN (T is
    the prompt plus max_tokens when the request sets it, the prompt alone when not).
  * ``sglang-requested-total`` — "Requested token count exceeds the model's maximum context
    length of W tokens. You requested a total of T tokens: P tokens from the input messages
    and C tokens for the completion": SGLang ≥0.4.3 (also Chutes, Fireworks; W as printed, but these releases
    refuse a total that *reaches* W: ``admitted_window`` W − 1, as ``sglang-context-length``); the first sentence
    alone (LiteLLM-wrapped, cut, or a gateway that drops the rest; seen 2025–2026) keeps W, the
    request being prompt + output.
  * Output caps, never a window (OUTPUT_OVER_LIMIT, L is OUTPUT_LIMIT): ``openai-max-output`` also
    reads "max_completion_tokens/max_output_tokens is too large: C. This model supports at most L
    completion/output tokens" (OpenAI chat and Responses; "sampling_params.max_new_tokens is too large: C" from
    gateways in front of SGLang/TGI-style native APIs, 2026, read before as nothing; SGLang prints its context length as L in
    the same words, read as a cap all the same: a cap is never learned as a window, and the retry at
    L then meets SGLang's window error); ``openai-max-output-above-maximum`` "Invalid
    'max_output_tokens' (or max_tokens, max_completion_tokens): integer above maximum value. Expected
    a value <= L, but got C instead" (OpenAI parameter bound; Volcengine Ark's "The parameter `max_tokens` specified
    in the request are not valid: integer above maximum value, expected a value <= L, but got C instead", 2025–2026;
    "integer below minimum value" is the
    client's own value and stays a look-alike); ``max-tokens-cap`` "max_tokens for `model` must be
    less than or equal to L" (Groq 2024), "`max_tokens` must be less than or equal to `L`, the
    maximum value for `max_tokens` is less than the `context_window` for this model" (Groq 2025),
    "max_tokens must be less than or equal to L" (DeepSeek and gateways, 2025–2026), "max_tokens:
    Input should be less than or equal to L" (pydantic validation of Anthropic-compatible servers),
    "max_tokens must be at most L", "Value error, max_tokens must be smaller than or equal to L"
    (Azure AI serverless), "'max_tokens' : must be less than or equal to L", "max_tokens (current
    value: C) must be between 0 and L" (a gateway's INVALID_REQUEST_BODY, 2025), Databricks Model Serving's "max_tokens
    (C) cannot exceed L. Please reduce the length of max output tokens generated." and "max_new_tokens C cannot be
    greater than max_output_tokens L" (a breaker's round 3, 2026-12; read before as None).
  * ``groq-requested`` — "Please reduce the length of the messages or completion. Requested T
    tokens, max W tokens" (Groq, code ``context_length_exceeded``; without the numbers it is a
    ``generic`` match; a bare "Requested T tokens, max W tokens" that ends the text is read only after Groq's first
    sentence: OpenAI embeddings' "... max 300000 tokens per request" cut short ends the same way): T what the request needs (prompt + max_tokens, ``total_tokens``), W the
    window. Groq's "Request too large ... on tokens per minute (TPM): Limit L, Requested T" is a
    per-minute quota, a look-alike (:data:`NEGATIVES`), never a window.
  * ``sambanova`` — "The maximum context length of MODEL is W. However, answering your request will
    take T tokens" (SambaNova Cloud 2024–2025): T is prompt + max_completion_tokens.
    ``sambanova-generation-length`` "Requested generation length C is not possible! The provided prompt is P
    tokens long, so generating C tokens requires a sequence length of T, but the maximum supported sequence length
    is just W!" (SambaNova Cloud 2024, cline/cline#294).
  * ``max-tokens-exceeds-model-maximum`` "'max_tokens' (C) exceeds model maximum (L)" (an OpenAI-compatible
    endpoint on Bedrock, qwen3-32b, 2026): L is the output cap (OUTPUT_LIMIT).
  * ``zai-request-input`` — "Request [P] input tokens exceeds the model's maximum context length W"
    (Z.ai / Zhipu GLM, code 1210, 2026): refused with P below W (the requested output is counted
    too), so the kind follows the numbers (:func:`~litellm_kvwarm.context_error_rows.refine_output_counted`).
  * ``litellm-pre-call`` — LiteLLM's router pre-call check, "Context Window exceeded for given call.
    No models have context window large enough for this call. Model=M, Max Input Tokens=L, Got=P":
    L is the deployment's configured ``max_input_tokens`` (INPUT_LIMIT), P LiteLLM's own count
    (APPROXIMATE); with several deployments concatenated ("Got=PModel=...") no limit is reported
    (whose it is is unknown). LiteLLM's wrapper words alone ("ContextWindowExceededError", its
    fallback texts) are ``generic`` (no numbers); a server message it wraps keeps its own row.
Other servers
  * ``transformers-max-length`` — "Input length of input_ids is P, but `max_length` is set to L. This can lead to
    unexpected behavior. You should consider increasing `max_length` or, better yet, setting `max_new_tokens`."
    (HF transformers ``GenerationMixin._validate_generated_length``: a ValueError since 4.39, a logged warning before;
    "decoder_input_ids" for encoder-decoder models), relayed by servers that run ``generate`` themselves. P is the
    prompt in the server's tokens (exact). L is the generation's total length (prompt + new tokens) as configured
    for that call (the model's generation config, the client's own ``max_length``, or transformers' default 20): never
    read as the window nor as a limit to learn. P ≥ L: the prompt alone reaches it (PROMPT_OVER_WINDOW).
  * ``anthropic-prompt-too-long`` "prompt is too long: P tokens > W maximum";
    ``anthropic-input-and-max-tokens`` "input length and max_tokens exceed context limit: P +
    C > W"; ``anthropic-max-output`` "max_tokens: C > L, which is the maximum allowed number of
    output tokens" (OUTPUT_LIMIT). Also Bedrock/Vertex Claude.
  * ``gemini`` "The input token count (P) exceeds the maximum number of tokens allowed (L)" (also
    "the input token count P exceeds the maximum allowed", Gemini via Vertex/AI Studio SDKs);
    ``vertex-gemini`` "the input token count is P but model only supports up to L": L is the
    model's input token limit (INPUT_LIMIT; output has its own limit). ``vertex-embeddings`` "the input token count is P but
    the model supports up to L" (Vertex AI text-embedding-004/005): L sums the request's inputs (REQUEST_LIMIT).
  * ``bedrock`` "Input is too long for requested model" (no numbers); ``bedrock-max-length``
    "Malformed input request: expected maxLength: M, actual: N" (JSON-schema string length:
    characters, ``char_limit``/``prompt_chars``; also with the pointer of the input text it checked, "#/texts/0: expected
    maxLength: 2048, actual: 4680" from Cohere embeddings on Bedrock, "#/inputText:", "#/textToImageParams/text:"; a
    pointer to any other field, "#/stop_sequences/0:", is not the input and stays unread).
  * ``llamacpp-request`` "request (P tokens) exceeds the available context size (W tokens)" and "input (P
    tokens) is larger than the max context size (W tokens). skipping" (``server-context.cpp``, embeddings and no
    context shift; "(W)" without "tokens" in 2025 builds);
    ``llamacpp`` "the request exceeds the available context size" with optional body fields
    ``n_prompt_tokens``/``n_ctx`` (PR #15780, 2025-09; type ``exceed_context_size_error``); ``llama-cpp-python`` "Requested tokens
    (P) exceed context window of W" (0.2+: the prompt alone, PROMPT_OVER_WINDOW; 0.1's "Requested tokens exceed context
    window of W", without P, is prompt + max_tokens over W: PROMPT_PLUS_OUTPUT_OVER_WINDOW). ``llamacpp-context-exceeded`` "Context size has been exceeded."
    (no numbers; llama-server ``update_slots`` when ``llama_decode`` finds no KV slot, HTTP 500
    ``server_error``, 2024–2026; LM Studio repeats it; also its 2024 wording "Input prompt is too big
    compared to KV size. Please try increasing KV size."): the KV cache filled, possibly during
    generation, so it is not a prompt-alone refusal (kind UNKNOWN). ``llamacpp`` also covers "input
    is larger than the max context size. skipping" (an embedding input over the slot's n_ctx: the
    prompt alone). ``llamacpp-ubatch`` "input (P tokens) is too large to process. increase the
    physical batch size (current batch size: L)" (non-causal models, embeddings and rerank, must fit
    one physical batch: L is n_ubatch, BATCH_LIMIT).
  * ``lmstudio-does-not-fit`` "Input does not fit in context length. The input has P tokens, but the context length
    only supports W tokens." (LM Studio 0.4.21, 2026-08, sent as an SSE ``event: error`` with HTTP 200:
    lmstudio-ai/lmstudio-bug-tracker#2322, aaif-goose/goose#11318; read before as nothing at all): the prompt alone
    over the loaded context length W; the first sentence alone (cut, or relayed without the second) is numberless.
  * ``lmstudio-reached-context`` "Reached context length of W tokens with model (arch: A) that does
    not currently support mid-generation context overflow" (also "..., but this model does not ...",
    LM Studio 0.3, 2025): generation reached the loaded context length W (prompt + output).
  * ``bedrock-max-input-tokens`` "Too many input tokens. Max input tokens: L, request input token
    count: P" (Bedrock Titan text and embeddings; INPUT_LIMIT); ``bedrock-max-tokens`` "The maximum
    tokens you requested exceeds the model limit of L. Try again with a maximum tokens value that is
    lower than L." (Bedrock Converse output cap, 2025–2026: OUTPUT_LIMIT), and InvokeModel's schema check "Malformed input
    request: #/max_tokens: C is not less or equal to L" (also max_gen_len, textGenerationConfig/maxTokenCount; a
    breaker's round 3, read before as None); ``bedrock-mantle`` "prompt tokens
    (P) exceed model maximum (W)" (Bedrock Mantle validation_error, which LiteLLM rewrites to
    Anthropic's wording); ``vertex-max-output`` "maxOutputTokens value of C but the supported range
    is from 1 (inclusive) to N (exclusive)" (Vertex Gemini; the cap L is N − 1, OUTPUT_LIMIT).
  * ``ctransformers`` "Number of tokens (T) exceeded maximum context length (W)." (T tokens evaluated
    so far, the prompt and what was generated: kind UNKNOWN).
  * ``tgi-total`` "inputs tokens + max_new_tokens must be <= W. Given: P inputs tokens and C
    max_new_tokens" (W is max_total_tokens); ``tgi-max-input`` "inputs must have less than L
    tokens. Given: P" (L is max_input_length: INPUT_LIMIT); ``tgi-max-new-tokens``
    "max_new_tokens must be <= L. Given: C": L is the room left for output, OUTPUT_BUDGET, never a
    window — TGI ``router/src/validation.rs`` (1.x–2.x, ``ValidationError::MaxNewTokens``) prints
    ``max_total_tokens - max_input_length`` when it cannot count the prompt (no fast tokenizer; the
    prompt is assumed to fill max_input_length or ``truncate``), so the request is prompt + output
    over the window (PROMPT_PLUS_OUTPUT_OVER_WINDOW). Also Together AI, HF Inference, LoRAX.
  * ``sglang-context-length`` "The input (P tokens) is longer than the model's context length
    (W tokens)" (SGLang ≥0.4; Together AI prints it without the leading "The", 2025–2026:
    "Input (P tokens) is longer than ..."); ``sglang-max-allowed`` "Input length (P tokens) exceeds the maximum allowed
    length (L tokens)": L = min(context_len, KV pool) − margin (KV_CAPACITY); its multimodal form "Multimodal prompt is too long
    after expanding multimodal tokens. After expanding len(req.origin_input_ids_unpadded)=U => P >= L." (same L).
  * ``trtllm-input`` "Prompt length (P) exceeds maximum input length (L)" and "Prompt length +
    number of draft tokens (P + D) exceeds maximum input length (L)" (INPUT_LIMIT; C++
    ``llmRequest``/``trtGptModelInflightBatching``; "max input length" in rewordings); ``trtllm-seq-len`` "Prompt length (P) exceeds
    maximum sequence length (W)", "Prompt length + number of requested output tokens (P + C)
    exceeds maximum sequence length (W)" and "Number of requested output tokens (C) exceeds
    maximum sequence length (W)" (C++ runtime; max_seq_len is the window);
    ``trtllm-sum`` "The sum of prompt length (P), query length (Q) should not exceed
    max_num_tokens (L)" (pytorch backend, ``llmapi/llm.py`` ``_check_arguments``; BATCH_LIMIT;
    max_seq_len there is the window); ``trtllm-sum-max-tokens`` "The sum of prompt length (P) and
    query length (Q) max_tokens (C) should not exceed max_seq_len (W)" (tensorrt backend, same
    method) and "The sum of prompt length (P) and max_tokens (C) should not exceed max_seq_len
    (W)" (llmapi 0.9–0.12); ``trtllm-prompt-max-num-tokens`` "The prompt length (P) should not
    exceed max_num_tokens (L)" (1.3.0rc, BATCH_LIMIT); ``trtllm-default-max-tokens``
    "`default_max_tokens` (D) must be greater than 0, `default_max_tokens` (D) = max_seq_len (W) -
    `splited_prompt_len` (P) [- `query_token_len` (Q)]" (pytorch ``base_worker.py``
    ``_deduce_max_tokens``: the prompt fills the window). A non-zero query length Q is input, so it
    is added to P; P is prompt_len / cp_size and may print as a fraction ("5000.0").
  * ``input-length-exceeds-context`` "Input length (P) exceeds model's maximum context length (W)."
    (OpenAI-compatible servers: vLLM-based hosts, Hugging Face router, Sakura AI gpt-oss, 2025–2026;
    also "(P tokens)", "Input sequence length (P)"); ``baseten-input-length`` "Input length P exceeds
    the maximum allowed input length of L tokens." (Baseten's chat processor, seen through
    OpenRouter/Poolside 2025–2026): L is an input limit below the window (131040 of 131072,
    INPUT_LIMIT, like TGI's max_input_length).
  * ``lmstudio-input-length`` "Input length P exceeds context length W"; ``lmstudio-keep``
    "Trying to keep the first P tokens when context the overflows. However, the model is
    loaded with context length of only W tokens" (P LOWER_BOUND: the kept part of the prompt);
    ``lmstudio-n-keep`` "The number of tokens to keep from the initial prompt is greater than the
    context length (n_keep: P>= n_ctx: W). Try to load the model with a larger context length, or
    provide a shorter input" (LM Studio 0.3, llama.cpp ``n_keep`` check; P LOWER_BOUND, W exact), and LM Studio 0.4's
    "Cannot truncate prompt with n_keep (P) >= n_ctx (W)" (anomalyco/opencode#11141, continuedev/continue#11279, 2026;
    read before as None).
    This row and ``llamacpp`` read the fields ``n_keep``/``n_ctx``/``n_ctx_slot``/
    ``n_prompt_tokens`` wherever they appear (JSON body, log line, ``:``, ``=`` or ``(N)``).
  * ``ollama-truncate`` log "truncating input prompt" limit=W prompt=P (num_ctx);
    ``ollama-excess`` "prompt too long; exceeded max context length by N tokens" (Ollama ≥0.12 with
    ``truncate: false``, 2025–2026): N is prompt − num_ctx, an **excess** (``excess_tokens``), not a
    window; the window is the refused prompt's exact size − N
    (:meth:`~litellm_kvwarm.context_error_model.ContextError.limit_given_prompt`).
  * ``copilot`` "prompt token count of P exceeds the limit of L" (INPUT_LIMIT);
    ``github-models`` "Request body too large for X model. Max size: L tokens" (INPUT_LIMIT);
    ``dashscope`` "Range of input length should be [1, L]" (INPUT_LIMIT) and ``dashscope-max-tokens``
    "Range of max_tokens should be [1, L]" (OUTPUT_LIMIT); ``xai`` "maximum
    prompt length is L but the request contains P tokens" (INPUT_LIMIT); ``xai-input-too-large`` "Failed to start
    sampling: [input_too_large] Current message (P tokens) exceeds budget (L tokens)" (xAI's gRPC ``INVALID_ARGUMENT``
    since 2026, the wording that replaced "maximum prompt length", quoted in UKGovernmentBEIS/inspect_ai PR #5208,
    2026-09: 1149677 over 975424; L is the prompt budget, INPUT_LIMIT; the bare code ``input_too_large`` is
    ``generic``); ``deepinfra-input-length``
    "Requested input length P exceeds maximum input length L" (DeepInfra, also via OpenRouter's
    ``metadata.raw``; INPUT_LIMIT, e.g. 32767 for a 32768 window);
    ``generic-max-input-length`` "maximum input length (or prompt length) is L tokens" and "Input too
    long: P input tokens, limit is L" (INPUT_LIMIT); ``vllm-max-prompt-length`` "This model's maximum
    prompt length is L tokens. However, your request has P prompt tokens" (vLLM plugins that add a
    ``max_prompt_length`` below the window: INPUT_LIMIT); ``max-prompt-tokens`` "number of input tokens
    (P) has exceeded max_prompt_tokens (L) limit" (a hosted API seen 2026-05, NovelForge #136;
    INPUT_LIMIT).
  * ``cerebras`` "Current length is T while limit is W" and ``moonshot`` "exceeded model token
    limit: W (requested: T)" and "total message size T exceeds limit W" (Kimi For Coding,
    2025–2026, the same numbers): T is what was requested, prompt + max_tokens (``total_tokens``);
    Moonshot's documented "Your request exceeded model token limit : W" keeps W without T.
  * ``mistral`` "Prompt contains P tokens [and D draft tokens], too large for model with W
    maximum context length" (also "and K images", "which is too large", La Plateforme 2025–2026,
    and "Prompt is too large for model with W maximum context length" without P); ``ds4`` "Prompt
    has P tokens, but the configured context size is W tokens" (DS4 server, pi issue #6262,
    2026); ``cohere-excess`` "too many tokens: size limit exceeded by N tokens" (Cohere v1 chat,
    N an excess as for Ollama); ``openai-context-window`` "Your input exceeds the context window of
    W tokens" (OpenAI Responses/Azure with the number, 2025–2026; tried after the generic rows with a subject, so
    "max_tokens (C) exceeds the context window of W" is the output's, OUTPUT_OVER_WINDOW); ``fireworks`` "prompt is too long: P[ tokens], model maximum context
    length: W"; ``cohere`` "total number of tokens in the prompt cannot exceed W - received P";
    ``cohere-total`` "too many tokens: total number of tokens (prompt and prediction) cannot exceed W - received T"
    (Cohere v1 generate, 2022–2023, cohere-ai/sandbox-topically#4; read before as a numberless generic error): T is
    the prompt plus max_tokens;
    ``cohere-max-tokens`` "too many tokens: max tokens must be less than or equal to L, the maximum
    output for this model - received C" (Cohere's output cap under its "too many tokens:" prefix:
    OUTPUT_LIMIT, never a context overflow);
    ``rkllama`` "Prompt is P tokens but the model context window is W tokens"; ``gpt4all`` "ERROR: The
    prompt size exceeds the context window size and cannot be processed. GPT-J ERROR: The prompt is P
    tokens and the context window is W!" (GPT4All backend, printed without spaces around the numbers
    in 2023 builds: "is2614tokens", zylon-ai/private-gpt #839);
    ``max-seq-len`` "length of prompt_tokens (P) must be less than max_seq_len (W)" and "max_total_tokens (T) must be
    less than or equal to max_seq_len (W)" (SiliconFlow, code 20015; the second, continuedev/continue#10993, 2026-03,
    read before as nothing: T is the prompt plus max_tokens, checked once the prompt alone fits);
    ``textgen-truncated`` "Context length: W, max_new_tokens: C, available context length: L"
    (INPUT_BUDGET); ``candle-vllm`` "Requested max tokens C larger than available tokens L
    ... (P tokens reserved for prompt)" (L = W − P: OUTPUT_BUDGET); ``deepseek-max-tokens``
    "the valid range of max_tokens is [1, L]" (OUTPUT_LIMIT).
  * ``prompt-length-over-max-model-len`` "Prompt length P exceeds max_model_len W" (also "The prompt
    length (P) exceeds the max_model_len (W)"): vLLM-derived servers and gateways.
  * ``tgi-input-plus-new-tokens`` "input length (P) + max_new_tokens (C) > max_total_tokens (W)".
  * ``cloudflare-estimated`` "5021: The estimated number of input and maximum output tokens (T) exceeded this model
    context window limit (W)." (Cloudflare Workers AI, HTTP 413, also code 3010, 2024–2026): T is Cloudflare's estimate
    of prompt + max_tokens (``total_tokens``, APPROXIMATE). ``watsonx`` "Invalid input argument for Model 'M': the
    number of input tokens P cannot exceed the total tokens limit W for this model" (IBM watsonx.ai
    ``invalid_input_argument``; W is the model's max sequence length). ``voyage-example`` "The example at index I in
    your batch has too many tokens and does not fit into the model's context window of W tokens." (Voyage embeddings
    and contextualized embeddings, 2025–2026: one input over the window). ``tabbyapi`` "Prompt length P is greater
    than max_seq_len W" (TabbyAPI / ExLlamaV2, max_seq_len the loaded window) and "Request length P + C is greater than
    max_seq_len W" (TabbyAPI 2025, SillyTavern/SillyTavern#3543; read before as nothing: the kind from the numbers).
  * ``omlx`` "Prompt too long: P tokens exceeds max context window of W tokens" (oMLX server, jundot/omlx#169,
    2026-03; read before as a bare window, P lost); ``vmlx`` "prompt_too_long: tokenized VLM text prompt has P tokens,
    max prompt/context tokens is L" (vMLX, jjang-ai/vmlx#253, 2026-08; read before as nothing): L the most prompt tokens
    (INPUT_LIMIT), the bare code ``prompt_too_long`` is ``generic``.
  * ``mlc-llm`` "Request prompt has P tokens in total, larger than the model capacity W." (MLC-LLM serve,
    ``check_prompts_length``: W is max_single_sequence_length, the window) and "..., larger than the model input length
    limit L." (later builds: max_input_sequence_length, INPUT_LIMIT). ``lightllm-input`` "the input prompt token len P
    is too long > L" (LightLLM max_req_input_len, INPUT_LIMIT); ``lightllm-total`` "the req token total len (input len +
    output len) is too long > max_req_total_len:W" (also "the req total len ..."; checked after the input limit, so
    the prompt fits and the output pushed it over) and "the req token total len + 1 (input len + output len + 1) is
    too long > max_total_token_num:N" (the whole KV pool, not a per-request limit: no number kept, UNKNOWN).
  * ``qianfan-chars`` "the max input characters is N" (Baidu Qianfan, code 336007 and the v2 API's
    ``characters_too_long``) and "the max length of current question is N" (ERNIE, code 336003: the last message's
    length): N is in characters (``char_limit``), never tokens. Qianfan's ``tokens_too_long`` "Prompt tokens too long"
    (also UCloud Modelverse, code 336103) is ``generic``.
  * ``nim-embedding`` "Input length P exceeds maximum allowed token size W" (NVIDIA NIM embeddings and rerankers,
    HTTP 400 ``{"error": ...}``, 2024–2026: W is the embedding model's sequence length, 512 for nv-embedqa-e5-v5).
  * ``apple-foundation-models`` "exceededContextWindowSize(... "Content contains T tokens, which exceeds the maximum
    allowed context size of W." ...)" (Apple FoundationModels, served by local OpenAI-compatible bridges, 2025–2026):
    T is the session's transcript so far (instructions, prompt, schema, what was generated): kind UNKNOWN; the bare
    ``exceededContextWindowSize`` is ``generic``.
  * ``ark-input-length`` "Input length P exceeds the maximum length L." (Volcengine Ark, GLM-4.7 and DeepSeek-V4,
    ``InvalidParameter``: langgenius/dify#32221, 2026-02, esengine/DeepSeek-Reasonix#9696; read before as nothing): L is
    Ark's input cap below the window (202752), INPUT_LIMIT. ``wasmedge`` "[WASI-NN] GGML backend:
    Error: prompt too long (P tokens, max L)" (LlamaEdge, second-state/WasmEdge-WASINN-examples#50; read before as a
    numberless generic error): INPUT_LIMIT. ``writer`` "Total number of tokens (prompt+generation) exceeded the service
    limit of W tokens." (Writer's Palmyra API, stanford-crfm/helm#1571; read before as nothing):
    PROMPT_PLUS_OUTPUT_OVER_WINDOW. ``deepspeed-input-size`` "Input with size P exceeds maximum length of L. Please
    increase 'max_tokens' in the DeepSpeed Inference Config." (DeepSpeed inference engine; read before as nothing): L
    the engine's max_out_tokens (KV_CAPACITY). ``chatglm-cpp`` "requested max_length (T) is larger than model's
    max_length (W)" (chatglm.cpp, ipex-llm's native ChatGLM; read before as nothing): T the requested total cap.
    ``mistralrs`` "Prompt sequence length is greater than W, perhaps consider using `truncate_sequence`?" (mistral.rs;
    read before as nothing): W the model's max_seq_len, PROMPT_OVER_WINDOW.
  * Chinese wordings (Chinese gateways and hosted servers; read before as nothing): ``zh-context-window`` a context
    overflow that prints the window, "输入长度超过模型最大上下文长度 W", "最大上下文长度为 W ... 超出了上下文长度"; the
    numberless ones are ``generic``: "上下文长度超出限制", "输入内容过长，请减少 Prompt 中的 token 数量后重试"
    (claude-code-hub's ``prompt_limit``, fengshao1227/ccg-workflow#69), iFlytek Spark 10907 "token数量超过上限。对话历史+问题的
    字数太多" (langchain4j's Spark error map), "输入 token 超出限制". Each names a context length, window or tokens (an
    input "too long" only with tokens or the context after it: a user name, a search box or audio "输入过长" is not the
    prompt), and a window is read only before tokens or no unit (20 轮, 1000 字, 60 秒 are other counts). Chinese words of
    rates, quotas, plans, "retry later" and warnings (流控, 频繁, 每分钟, 每月, 额度, 余额, 套餐, 并发, 请稍后, 已截断, TPM, ...)
    keep a text from these rows (Spark's "日流控超限" is throttling), never from an English wording it wraps.
  * ``generic-comparison`` "exceeds the model's maximum context length (T > W)", "(T tokens > W)", "of T
    tokens requested vs W allowed": T is what the request needs, W the window (the plain ``generic`` row
    below would have read T as the window).
  * ``generic-prompt-over-window`` "The prompt (P tokens) exceeds the context window (W tokens)", "Input is P tokens,
    which exceeds the model's context window of W tokens" (also "has", "contains", "of"; "is larger/greater than"),
    "Input length
    P exceeds the model's max sequence length W", "prompt length P > max_model_len W", Elasticsearch's inference "Input
    too large. The tokenized input length [P] exceeds the maximum sequence length [W]", "Input sequence length (P)
    exceeds the maximum sequence length (W)";
    ``generic-count-over-window`` "token count T exceeds max context length W", "requested T tokens but the
    model supports W", "maximum context window of W tokens (requested T)", "context window: T > W" (also "context
    length supported by the model: T > W"),
    "context length exceeded, max_seq_len W, got T"; ``generic-prompt-plus-output`` "The total number of
    tokens (prompt + max_tokens) must not exceed W; got T" (and "Your prompt (P tokens) plus max_tokens (C)
    exceeds the model context length of W", "context window: P + C > W", "prompt_tokens (P) + max_tokens (C) = T exceeds
    context length (W)" with the sum printed or the window named "model max", "max_context" or "context": the kind from
    the numbers): gateways and
    home-grown servers (a breaker's sweep, 2026-12), each a count against the window with its subject named (the
    conversation or messages are the prompt; a request's count, "Request (T tokens) exceeds the context window (W
    tokens)", is of unknown split);
    ``generic-output-over-window``
    "max_completion_tokens (C) exceeds the model's maximum context length of W tokens", "max_tokens (C) is greater
    than the model's context length (W)", "num_predict C exceeds context length W", "max_tokens too large: C > W
    (context length)": the requested output alone over the window (OUTPUT_OVER_WINDOW; read before as a bare
    window, or not at all), its subject an output parameter (a breaker's round, 2026-12). These generic rows also read the limit stated as a
    rule ("max_tokens (C) cannot exceed the context length of W", "The prompt (P tokens) must not exceed ...": ``MUST_NOT``;
    before, only W was read and the subject's count was lost).
    ``generic-output-over-cap`` "Requested max_tokens C exceeds the model's maximum output of L tokens",
    "max_completion_tokens (C) is greater than the maximum output tokens (L)", "output tokens C > max output length L",
    "exceeds the maximum number of output tokens allowed (L)":
    the requested output over the model's output cap (OUTPUT_OVER_LIMIT, L is OUTPUT_LIMIT; gateways and home-grown
    servers, 2025–2026; read before as nothing at all); the window beside it, if printed, is kept
    (:mod:`~litellm_kvwarm.context_error_caps`).
  * ``generic`` — no usable numbers ("context_length_exceeded", "exceeds the context window",
    "prompt is too long", MiniMax "context window exceeds limit", LM Studio "greater than the
    context length", "too many tokens", LiteLLM's own "ContextWindowExceededError", z.ai
    "Prompt too long" / "Prompt exceeds max length", Kimi "Input token length too long", Gemini
    "Your input context is too long", Copilot's code ``model_max_prompt_tokens_exceeded``, Z.ai
    "tokens in request more than max tokens allowed", Salesforce Einstein "Request input tokens exceed model
    token limit. Reduce the input size." (2026), Perplexity "The total length of all messages is too
    long." (type ``too_many_prompt_tokens``), Xinference "Max tokens exceeds model's max length" (max_new_tokens alone
    over the window, no numbers), Ollama's llama-server path "the prompt is longer than the context length
    currently available to the model; shorten the prompt, ..." (2026), Volcengine Ark's ``OutofContextError`` "Total
    tokens of image and text exceed max message tokens.", Tencent Cloud's "input length too long" (code 20059,
    egoist/chatwise-releases#404), LMDeploy's "exceed session max length. Please end the session.", …); a bare
    "maximum context length is W tokens", "exceeds the model's maximum context length of W tokens" or
    "exceeds (exceeded) maximum context length (W)" keeps W (only when the parenthesis closes after W: "(P tokens > W)"
    cut to "(P t" is no window), and so does "exceeds the model's (maximum) context window
    of W tokens" / "exceeds model context window (W tokens)" (gateways and agent runtimes, 2025–2026; read before as
    no number at all) and "exceeds the max context length of W tokens" (Liquid AI's LEAP SDK, 2026; read before as
    nothing at all, with or without the number); LiteLLM's router suffix after it ("... W tokens\nReceived Model Group=...") is no "received"
    count.

A wording cut right before its last number (the text ends there, or a truncation mark follows: "prompt is too long:
P tokens >", "The input (P tokens) is longer than the model's context length", "Prompt length (P) exceeds maximum input
length", "Requested tokens (P) exceed context window of", "prompt token count of P exceeds the limit of"; rows
``anthropic-prompt-too-long``, ``gemini``, ``vertex-gemini``, ``vllm-decoder-prompt``, ``vllm-prompt-length-of``,
``sglang-context-length``, ``sglang-max-allowed``, ``llama-cpp-python``, ``lmstudio-input-length``, ``max-seq-len``,
``trtllm-input``, ``rkllama``, ``copilot``) still reads the prompt it printed and its kind (read before as a
numberless generic error or nothing); a limit cut inside its digits is a floor. A text cut inside the words after a
number is also read as if cut at its last word breaks (:mod:`~litellm_kvwarm.context_error_cuts`); vLLM's own wordings
read such a cut themselves, keeping the count exact ("... at least 12289 input tok", "... you requested 4096 output tok",
"You passed 12289 input tokens and requested 4096 output tokens. However, the mod": ``cut_within``). TGI's first sentence alone ("inputs
tokens + max_new_tokens must be <= W.") keeps W (``tgi-total``, PROMPT_PLUS_OUTPUT_OVER_WINDOW).

Look-alikes (:data:`NEGATIVES`) include throttling worded with tokens: Bedrock's
"ThrottlingException: Too many tokens, please wait before trying again." (also without the
exception name, and "Throttling error:"/"Service unavailable:"/"Rate limit:" prefixes, or "too many
tokens ... per minute / slow down"): not a context error, even without LiteLLM's RateLimitError
wrapper. Bedrock's real context errors ("Input is too long for requested model", "too many input
tokens") still parse. So do a body-size cap worded as a context length in bytes ("Request exceeds maximum context
length of 10485760 bytes", "maximum context size is 2 MB": read before as a window of that many tokens) and OpenAI's
cap on ``logit_bias`` ("Invalid 'logit_bias': too many tokens. Expected at most 300 tokens": the client's parameter).

A result whose text carries no numbers at all has kind :attr:`ErrorKind.UNKNOWN`.
"""

from __future__ import annotations

import re

from .context_error_model import Certainty, ErrorKind, LimitMeaning
from .context_error_rows import (
    CUT_END,
    Row,
    cut_within,
    refine_cut_breakdown,
    refine_exclusive_limit,
    refine_functions,
    refine_openrouter,
    refine_refuses_full_window,
    refine_output_counted,
    refine_trtllm,
    refine_trtllm_query,
    refine_truncated_prompt,
)

__all__ = ["NEGATIVES", "ROWS"]

# Short names that keep each row on a few lines: certainties, (slot, certainty) pairs, kinds,
# limit meanings, and the commonest phrase ("maximum context length is W tokens").
E, LB, APPROX = Certainty.EXACT, Certainty.LOWER_BOUND, Certainty.APPROXIMATE
W, P, C, T, L = ("window", E), ("prompt", E), ("output", E), ("total", E), ("limit", E)
K = ErrorKind
M = LimitMeaning
MCL = r"maximum context length is (?P<window>{n}) tokens"
# A Chinese wording of the refusal (Chinese gateways and hosted servers): the context, the input or its tokens over
# the limit: "上下文长度超出限制", "超过了模型的最大上下文长度", "输入内容过长" (claude-code-hub's prompt_limit),
# "输入 token 超出限制", iFlytek Spark 10907 "token数量超过上限". Never a quota: see ZH_NOT.
ZH_OVERFLOW = (
    r"(?:上下文(?:长度|窗口|token ?数?|tokens) ?(?:已)?(?:超过|超出|超限|超长|过长|太长|溢出)|"
    r"(?:上下文|context) ?(?:超长|过长|太长|溢出)|context (?:length|window) ?(?:超过|超出|超限)|"
    r"(?:超过|超出)了?(?:模型)?(?:的|所)?(?:支持的)?(?:最大)?上下文(?:长度|窗口|限制|token)|"
    r"输入(?:内容|文本)? ?(?:过长|太长|超长)[^。]{0,30}?(?:token|上下文)|"
    r"输入 ?(?:的)?(?:token ?(?:数量|数)?|tokens ?(?:数量|数)?) ?(?:过长|太长|超长|超过|超出|超限)|"
    r"(?:token|tokens) ?(?:数量|数)(?:已)?(?:超过|超出)(?:了)?(?:上限|限制|最大))"
)
# The sentence joint after it: ". However, ", ", however ", "; however, ", ", but ", or none (", you requested T tokens"):
# servers and gateways reword it; what follows names its subject, so the joint itself tells nothing.
HOWEVER = r"[.,;]? ?(?:(?:However|but),? )?"
# A limit stated as a rule rather than an event ("max_tokens (C) cannot exceed the context length of W", "Input length (P)
# must not exceed the maximum context length of W"): the same refusal as "exceeds", its subject's count kept.
MUST_NOT = r"(?:cannot|can ?not|can't|must not|may not|should not) (?:exceed|be (?:longer|larger|greater|bigger|more) than)"
# Where a truncated text ends right after a wording's last number (before its "tokens" or "maximum"): nothing more but
# spaces or a truncation mark. The parser reads a number there as a floor (it may have been cut mid-digits).
CUT = r"(?=" + CUT_END + r"\Z)"
# vLLM's prompt count cut inside the words after it ("at least 12289 input tok", "12289 tok"): still the prompt. A count
# without "at least" cut right after its digits is not read: vLLM's character pre-check prints "your prompt contains N
# characters" there.
CUT_PROMPT_WORDS = cut_within(" input tokens", " tokens")
# A Chinese wording counts only in a text without the Chinese words of rates, quotas, plans and balances, "retry later",
# a warning that the input was cut or compressed, or a content filter (flow control, too frequent, per minute/day/week/
# month, quota, balance, usage, concurrency, top up, free tier, load, ...), nor TPM/RPM: "输入token超过TPM限制", "每月 token
# 数量超过上限", "token 数量超过上限，请稍后" are throttling or billing. Checked by the Chinese rows only (never a global
# look-alike: a Chinese gateway's note around a genuine English error, "上游返回错误，请稍后重试：This model's maximum
# context length is ...", keeps its reading).
ZH_NOT = (
    r"\A(?![\s\S]*(?:流控|限流|频繁|频率|每分钟|每小时|每秒|每天|每日|每周|每月|本周|本月|今日|当日|配额|额度|限额|余额|用量|速率|并发|"
    r"请稍后|稍后再试|稍后重试|已截断|已自动压缩|已压缩|敏感|sensitive word|套餐|充值|账户|免费|请求过多|负载|"
    r"(?<![A-Za-z])(?:[TR]PM|QPS|TPD|RPD)(?![A-Za-z])))[\s\S]*?"
)
# After a Chinese wording's number: tokens, or no unit at all (a punctuation mark or the end); 字 轮 条 秒 字节 ... are
# other counts.
ZH_TOKENS = r"(?= ?(?:个 ?)?tokens?\b| ?[,.;:，。；：)]|" + CUT + ")"
# llama.cpp / LM Studio body and log fields, read wherever they appear ("n_ctx": 4096, n_ctx = 4096,
# 'n_ctx_slot': 4096, n_keep: 5220>= n_ctx: 4096, and in parentheses: LM Studio 0.4's "Cannot truncate prompt with
# n_keep (4270) >= n_ctx (4096)"): n_keep is the kept part of the prompt (a floor), n_prompt_tokens the whole prompt; a
# row maps "keep" before "prompt" so the exact count wins.
_FIELD = r"(?:['\"]?\s?[:=]\s?| ?\( ?(?={n} ?\)))"
LLAMACPP_FIELDS = (  # a number followed by "%" is not a count ("n_ctx = 50% of slot")
    r"\bn_prompt_tokens" + _FIELD + r"(?P<prompt>{n})(?! ?%)",
    r"\bn_ctx(?:_slot)?" + _FIELD + r"(?P<window>{n})(?! ?%)",
    r"\bn_keep" + _FIELD + r"(?P<keep>{n})(?! ?%)",
)


ROWS: tuple[Row, ...] = (
    # ---- vLLM
    Row("vllm-chars-precheck",
        MCL + HOWEVER + r"(?:you requested (?P<output>{n}) output tokens and )?your prompt contains "
        r"(?P<prompt_chars>{n}) characters(?: \(more than (?P<char_limit>{n}) characters"
        r"(?:, which is the upper bound for (?P<limit>{n}) input tokens)?)?",
        {"window": W, "output": C, "prompt_chars": ("prompt_chars", E), "char_limit": ("char_limit", E),
         "limit": L},
        limit_meaning=M.INPUT_BUDGET),
    Row("vllm-0.18-0.31",
        MCL + HOWEVER + r"you requested (?P<output>{n})(?: output tokens? and your prompt contains "
        r"(?:at least (?P<prompt_lb>{n})(?: (?:input )?tokens?|" + CUT_PROMPT_WORDS + "|" + CUT + r")|"
        r"(?P<prompt>{n})(?: (?:input )?tokens?|" + CUT_PROMPT_WORDS + r")|{n}(?:" + CUT + "|"
        + cut_within(" characters") + r"))"
        r"(?:, for a total of (?:at least (?P<total_lb>{n})|(?P<total>{n}))(?: tokens?|" + cut_within(" tokens") + "|"
        + CUT + "))?|" + cut_within(" output tokens and your prompt contains at least ") + ")",
        {"window": W, "output": C, "prompt_lb": ("prompt", LB), "prompt": P, "total_lb": ("total", LB),
         "total": T}),
    Row("vllm-0.32+",
        MCL + HOWEVER + r"your prompt contains (?:at least (?P<prompt_lb>{n})(?: (?:input )?tokens?|" + CUT_PROMPT_WORDS
        + "|" + CUT + r")|(?P<prompt>{n})(?: (?:input )?tokens?|" + CUT_PROMPT_WORDS + r")|{n}(?:" + CUT + "|"
        + cut_within(" characters") + "))",
        {"window": W, "prompt_lb": ("prompt", LB), "prompt": P}, K.PROMPT_OVER_WINDOW),
    Row("vllm-max-tokens-too-large",
        r"'?max_tokens'? or '?max_completion_tokens'? is too large: (?P<output>{n})\.? This model'?s " + MCL
        + r" and your request has (?P<prompt>{n}) input tokens",
        {"window": W, "output": C, "prompt": P}),
    Row("vllm-you-passed",
        r"You passed (?:(?P<prompt>{n}) input tokens|(?P<prompt_chars>{n}) input characters) and requested "
        r"(?P<output>{n}) output tokens\. However, the model'?s context length is (?:only )?(?P<window>{n})(?: tokens|"
        + cut_within(" tokens") + "|" + CUT + ")"
        r"(?:, resulting in a maximum input length of (?P<limit>{n}) tokens(?: \(at most (?P<char_limit>{n}) characters\))?)?",
        {"window": W, "output": C, "prompt": P, "limit": L, "prompt_chars": ("prompt_chars", E),
         "char_limit": ("char_limit", E)}, limit_meaning=M.INPUT_BUDGET,
        refine=refine_truncated_prompt),
    # the same text cut before its window ("input t" tells tokens from the character pre-check's "input characters";
    # the kind needs the window: the wording is printed for a prompt over it alone too)
    Row("vllm-you-passed",
        r"You passed (?P<prompt>{n})(?: input tokens and requested (?P<output>{n})(?:"
        + cut_within(" output tokens. However, the model's context length is only ") + "|" + CUT + ")|"
        + cut_within(" input tokens and requested ", least=8) + ")",
        {"output": C, "prompt": ("prompt", LB)}, K.UNKNOWN),
    Row("vllm-request-has-plus",
        MCL + HOWEVER + r"your request has (?P<prompt>{n}) (?:input )?tokens plus (?P<output>{n}) '?max_tokens",
        {"window": W, "prompt": P, "output": C}),
    Row("vllm-request-has",
        MCL + HOWEVER + r"your request has (?P<prompt>{n})(?: (?:input )?tokens|" + CUT + ")",
        {"window": ("window", LB), "prompt": P}, K.UNKNOWN),
    Row("vllm-max-tokens-over-window-old",
        r"max_(?:output_|completion_)?tokens=(?P<output>{n}) ?cannot be greater than max_model_len=max_total_tokens=(?P<window>{n})",
        {"window": W, "output": C}, K.OUTPUT_OVER_WINDOW),
    Row("vllm-max-tokens-over-window",
        r"max_(?:output_|completion_)?tokens=(?P<output>{n}) ?cannot be greater than max_model_len=(?P<window>{n})",
        {"window": W, "output": C}, K.OUTPUT_OVER_WINDOW),
    Row("vllm-output-below-one",
        r"max_tokens must be at least 1, got (?P<output>-?{n})",
        {"output": C}, K.OUTPUT_BELOW_ONE),
    Row("vllm-engine-prompt",
        r"engine prompt length (?P<prompt>{n}) exceeds the max_model_len (?P<window>{n})",
        {"window": W, "prompt": P}, K.PROMPT_OVER_WINDOW),
    Row("vllm-encoder-prompt",
        r"encoder prompt \(length {n}\)(?: plus the number of requested output tokens \(at least {n}\))? "
        r"(?:is longer than|exceeds) the maximum model length",
        {}, K.PROMPT_OVER_WINDOW),
    Row("vllm-encoder-cache",
        r"(?:en|de)coder prompt contains a ?\(n\) [\w-]{1,40} item with (?:length {n}|{n} embedding tokens),? which "
        r"exceeds the pre-allocated encoder cache",
        {}, K.UNKNOWN),
    Row("transformers-max-length",
        r"Input length of (?:decoder_)?input_ids is (?P<prompt>{n}),? but max_length is set to",
        {"prompt": P}, K.PROMPT_OVER_WINDOW),
    Row("vllm-decoder-prompt",
        r"(?:decoder )?prompt \(length (?P<prompt>{n})\)(?: plus the number of requested output tokens "
        r"\(at least {n}\))? (?:is longer than|exceeds) the maximum model length of(?: (?P<window>{n})|" + CUT + ")",
        {"window": W, "prompt": P}, K.PROMPT_OVER_WINDOW),
    Row("vllm-prompt-length-of",
        r"(?:Prompt length of (?P<prompt>{n}) |(?:input|(?:decoder )?(?<!encoder )prompt) )is longer than the maximum model "
        r"length of(?: (?P<window>{n})|" + CUT + ")",
        {"window": W, "prompt": P}, K.PROMPT_OVER_WINDOW),
    Row("vllm-v0-too-long-to-fit",
        r"prompt \(total length (?P<prompt>{n})\) is too long to fit into the model \(context length "
        r"(?P<window>{n})\)",
        {"window": W, "prompt": P}, K.PROMPT_OVER_WINDOW),
    Row("vllm-v0-block-manager",
        r"Input prompt \((?P<prompt>{n}) tokens\)(?: \+ lookahead slots \({n}\))? is too long and exceeds the "
        r"capacity of block_manager",
        {"prompt": P}, K.PROMPT_OVER_WINDOW),
    Row("vllm-embedding",
        MCL + HOWEVER + r"you requested (?P<prompt>{n}) tokens in the input for embedding generation",
        {"window": W, "prompt": P}, K.PROMPT_OVER_WINDOW),
    Row("vllm-requested-in-messages",
        MCL + HOWEVER + r"you requested (?P<prompt>{n}) tokens? in the (?:messages|prompt|input)\b"
        r"(?! for embedding)",
        {"window": W, "prompt": P}, K.PROMPT_OVER_WINDOW),
    Row("vllm-v0-scheduler",
        r"Input prompt \((?P<prompt>{n}) tokens\) is too long and exceeds limit of (?P<window>{n})",
        {"window": W, "prompt": P}, K.PROMPT_OVER_WINDOW),
    # ---- OpenAI and compatible
    Row("openai-requested-functions",
        MCL + HOWEVER + r"you requested (?P<total>{n}) tokens \((?P<messages>{n}) in the (?:messages|prompt), "
        r"(?P<functions>{n}) in the (?:functions|tools), and (?P<output>{n}|None) in the completion\)",
        {"window": W, "total": T, "output": C}, refine=refine_functions),
    Row("openai-requested",
        MCL + HOWEVER + r"you requested (?P<total>{n}) tokens \((?P<prompt>{n}) in the (?:messages|prompt|input), "
        r"(?P<output>{n}|None) in the completion\)",
        {"window": W, "total": T, "prompt": P, "output": C}),
    Row("openai-completions",
        MCL + HOWEVER + r"you requested (?P<total>{n}) tokens \((?P<prompt>{n}) in your prompt[;,] "
        r"(?P<output>{n}) for the completion\)",
        {"window": W, "total": T, "prompt": P, "output": C}),
    Row("openai-requested-cut",
        MCL + HOWEVER + r"you requested (?P<total>{n})(?: tokens \((?:(?P<prompt>{n}) in the (?:messages|prompt|input), "
        r"(?P<output>{n}|None) in the c|(?P<prompt_lb>{n})(?: in\b|" + CUT + ")|" + CUT + ")| tokens?" + CUT + "|" + CUT
        + ")",
        {"window": W, "total": T, "prompt_lb": ("prompt", LB), "prompt": P, "output": C}, refine=refine_cut_breakdown),
    Row("deepseek-requested-total",
        MCL + r"(?:" + HOWEVER + r"you requested (?P<total>{n}) tokens?\b(?! in\b)(?!" + CUT_END + r"\Z)|; requested "
        r"(?P<total2>{n}))",
        {"window": W, "total": T, "total2": T}, K.PROMPT_PLUS_OUTPUT_OVER_WINDOW),
    Row("textgen-webui",
        r"This model maximum context length is (?P<window>{n}) tokens" + HOWEVER + r"your messages resulted in "
        r"over (?P<prompt>{n}) tokens(?: and max_tokens is (?P<output>{n}))?",
        {"window": W, "prompt": ("prompt", LB), "output": C}),
    Row("openai-messages-resulted",
        MCL + HOWEVER + r"your messages resulted in (?P<prompt>{n})(?: tokens|" + CUT + ")",
        {"window": W, "prompt": P}, K.PROMPT_OVER_WINDOW),
    Row("openai-input-limit",
        r"Input tokens exceed the configured limit of (?P<limit>{n}) tokens\.?"
        r"(?: Your messages resulted in (?P<prompt>{n}) tokens)?",
        {"limit": L, "prompt": P}, K.PROMPT_OVER_WINDOW, M.INPUT_LIMIT),
    Row("openai-max-output",
        r"max_(?:completion_|output_|new_)?tokens is too large: (?P<output>{n})\.? This model supports at most "
        r"(?P<limit>{n}) (?:completion|output) tokens",
        {"output": C, "limit": L}, K.OUTPUT_OVER_LIMIT, M.OUTPUT_LIMIT),
    Row("max-tokens-exceeds-model-maximum",
        r"max_(?:completion_|output_|new_)?tokens \((?P<output>{n})\) exceeds (?:the )?model(?:'s)? maximum \((?P<limit>{n})\)",
        {"output": C, "limit": L}, K.OUTPUT_OVER_LIMIT, M.OUTPUT_LIMIT),
    Row("openai-max-output-above-maximum",
        r"(?:Invalid '?max_(?:completion_|output_)?tokens'?|parameter '?max_(?:completion_|output_)?tokens'? specified in "
        r"the request (?:are|is) not valid): integer above maximum value[.,]? Expected a value <= ?"
        r"(?P<limit>{n}),? but got (?P<output>{n})",
        {"output": C, "limit": L}, K.OUTPUT_OVER_LIMIT, M.OUTPUT_LIMIT),
    Row("openai-embeddings-request",
        r"Requested (?P<prompt>{n}) tokens, max (?P<limit>{n}) tokens per request",
        {"prompt": P, "limit": L}, K.PROMPT_OVER_WINDOW, M.REQUEST_LIMIT),
    Row("voyage-batch",
        r"max allowed tokens per submitted batch is (?P<limit>{n})\.? Your batch has (?P<prompt>{n}) tokens",
        {"prompt": P, "limit": L}, K.PROMPT_OVER_WINDOW, M.REQUEST_LIMIT),
    Row("groq-requested",
        r"(?<=completion\. )Requested (?P<total>{n}) tokens?,? max(?:imum)? (?P<window>{n}) tokens?\b(?! per\b)|"
        r"Requested (?P<total2>{n}) tokens?,? max(?:imum)? (?P<window2>{n}) tokens?\b(?! per\b)(?!" + CUT_END + r"\Z)",
        {"window": W, "total": T, "window2": W, "total2": T}, K.PROMPT_PLUS_OUTPUT_OVER_WINDOW),
    Row("max-tokens-cap",
        r"max_(?:completion_|output_)?tokens(?: for (?:model )?.{1,120}?| ?\(current value: (?P<output>{n})\))? ?:? "
        r"(?:Input )?(?:must|should) be (?:(?:less|smaller) than or equal to|at most|between -?{n} and) (?P<limit>{n})",
        {"limit": L, "output": C}, K.OUTPUT_OVER_LIMIT, M.OUTPUT_LIMIT),
    # the output parameter over a bare number, or over the output-cap field: Databricks Model Serving "max_tokens (C)
    # cannot exceed L. Please reduce the length of max output tokens generated." (databricks/databricks-sdk-go#1183),
    # "max_new_tokens C cannot be greater than max_output_tokens L" (read before as None). After the vLLM rows: a
    # window named (max_model_len=W, "the context length of W") is theirs or another row's, never this cap.
    Row("max-tokens-cap",
        r"(?<!plus )(?<!\+ )(?<!and )max_(?:completion_|output_|new_)?tokens ?(?:\(?(?P<output>{n})\)? )?(?:cannot|can ?not|"
        r"can't|must not|may not|should not) (?:exceed|be (?:greater|larger|more|bigger) than) (?:(?:the )?(?:model'?s )?"
        r"(?:maximum |max )?(?:max_(?:output|completion)_tokens|output (?:tokens|limit)|completion tokens)(?: of| ?[=:])? ?)?"
        r"(?P<limit>{n})(?! ?%)",
        {"limit": L, "output": C}, K.OUTPUT_OVER_LIMIT, M.OUTPUT_LIMIT),
    Row("sambanova-generation-length",
        r"Requested generation length (?P<output>{n}) is not possible!? The provided prompt is (?P<prompt>{n}) tokens "
        r"long, so generating {n} tokens requires a sequence length of (?P<total>{n}), but the maximum supported "
        r"sequence length is just (?P<window>{n})",
        {"window": W, "prompt": P, "output": C, "total": T}),
    Row("sambanova",
        r"maximum context length of .{1,200}? is (?P<window>{n})(?: tokens)?" + HOWEVER + r"answering your request will "
        r"take (?P<total>{n}) tokens",
        {"window": W, "total": T}, K.PROMPT_PLUS_OUTPUT_OVER_WINDOW),
    Row("openrouter",
        r"(?:endpoint'?s )?" + MCL + HOWEVER + r"you requested about (?P<total>{n})(?: tokens(?: \((?P<parts>[^)]{0,300})\))?|"
        + CUT + ")",
        {"window": W, "total": ("total", APPROX)}, refine=refine_openrouter),
    Row("sglang-requested-total",
        r"Requested token count exceeds the model'?s maximum context length of (?P<window>{n}) tokens?\.? You "
        r"requested a total of (?P<total>{n}) tokens?: (?P<prompt>{n}) tokens? from the input messages and "
        r"(?P<output>{n}) tokens? for the completion",
        {"window": W, "total": T, "prompt": P, "output": C}, refine=refine_refuses_full_window),
    Row("sglang-requested-total",
        r"Requested token count exceeds the model'?s maximum context length of (?P<window>{n})",
        {"window": W}, K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, refine=refine_refuses_full_window),
    # ---- Anthropic, Google, AWS
    Row("anthropic-prompt-too-long",
        r"prompt is too long: (?P<prompt>{n}) tokens(?: ?> ?(?P<window>{n})(?: maximum|" + CUT + ")| ?>?" + CUT + ")",
        {"window": W, "prompt": P}, K.PROMPT_OVER_WINDOW),
    Row("anthropic-input-and-max-tokens",
        r"input length and max_tokens exceed context limit: (?P<prompt>{n}) ?\+ ?(?P<output>{n}) ?> ?(?P<window>{n})",
        {"window": W, "prompt": P, "output": C}),
    Row("anthropic-max-output",
        r"max_tokens: (?P<output>{n}) ?> ?(?P<limit>{n}), which is the maximum allowed number of output tokens",
        {"output": C, "limit": L}, K.OUTPUT_OVER_LIMIT, M.OUTPUT_LIMIT),
    Row("gemini",
        r"input token count(?: \((?P<prompt>{n})\)| (?P<prompt2>{n}))? exceeds the maximum (?:number of tokens(?: allowed)?|"
        r"allowed)(?: \((?P<limit>{n})(?:\)|" + CUT + ")| (?:of )?(?P<limit2>{n}))?",
        {"prompt": P, "prompt2": P, "limit": L, "limit2": L}, K.PROMPT_OVER_WINDOW, M.INPUT_LIMIT),
    Row("vertex-gemini",
        r"input token count is (?P<prompt>{n}) but (?:the )?model only supports up to(?: (?P<limit>{n})|" + CUT + ")",
        {"prompt": P, "limit": L}, K.PROMPT_OVER_WINDOW, M.INPUT_LIMIT),
    Row("vertex-embeddings",
        r"input token count is (?P<prompt>{n}) but the model supports up to(?: (?P<limit>{n})|" + CUT + ")",
        {"prompt": P, "limit": L}, K.PROMPT_OVER_WINDOW, M.REQUEST_LIMIT),
    Row("bedrock-max-length",
        r"Malformed input request: (?:#/(?:\w+/){0,6}(?:texts?|inputText|prompt|input|content|message)(?:/\d+)?: ?)?"
        r"expected maxLength: (?P<char_limit>{n}), actual: (?P<prompt_chars>{n})",
        {"char_limit": ("char_limit", E), "prompt_chars": ("prompt_chars", E)}, K.PROMPT_OVER_WINDOW),
    Row("bedrock", r"Input is too long for requested model", {}, K.PROMPT_OVER_WINDOW),
    # the same JSON-schema validator (everit: "#/<path>: <value> is not less or equal to <maximum>", as its "expected
    # maxLength: M, actual: N" above) on an output parameter: "Malformed input request: #/max_tokens: 9000 is not less or
    # equal to 8192, please reformat your input and try again." (Mistral, Llama max_gen_len, Titan
    # textGenerationConfig/maxTokenCount on InvokeModel; read before as None): the model's output cap
    Row("bedrock-max-tokens",
        r"#/(?:\w+/){0,4}(?:max_tokens|max_gen_len|maxTokenCount|maxTokens|max_new_tokens|max_tokens_to_sample|"
        r"max_output_tokens): ?(?P<output>{n}) is not less or equal to (?P<limit>{n})",
        {"limit": L, "output": C}, K.OUTPUT_OVER_LIMIT, M.OUTPUT_LIMIT),
    Row("bedrock-max-tokens",
        r"maximum tokens you requested exceeds the model limit of (?P<limit>{n})",
        {"limit": L}, K.OUTPUT_OVER_LIMIT, M.OUTPUT_LIMIT),
    Row("bedrock-max-input-tokens",
        r"Too many input tokens\.? Max input tokens: (?P<limit>{n})(?:,? request input token count: (?P<prompt>{n}))?",
        {"limit": L, "prompt": P}, K.PROMPT_OVER_WINDOW, M.INPUT_LIMIT),
    Row("bedrock-mantle",
        r"prompt tokens \((?P<prompt>{n})\) exceeds? (?:the )?model maximum \((?P<window>{n})\)",
        {"window": W, "prompt": P}, K.PROMPT_OVER_WINDOW),
    Row("vertex-max-output",
        r"maxOutputTokens value of (?P<output>{n}) but the supported range is from 1 \(inclusive\) to (?P<limit>{n}) "
        r"\(exclusive\)",
        {"output": C, "limit": L}, K.OUTPUT_OVER_LIMIT, M.OUTPUT_LIMIT, refine=refine_exclusive_limit),
    # ---- local and self-hosted servers
    Row("llamacpp-request",
        r"(?:request|prompt) \((?P<prompt>{n}) tokens\) exceeds (?:the )?available context size \((?P<window>{n}) tokens\)|"
        r"input \((?P<prompt2>{n}) tokens?\) is larger than the max context size \((?P<window2>{n})(?: tokens?)?\)",
        {"window": W, "prompt": P, "window2": W, "prompt2": P}, K.PROMPT_OVER_WINDOW),
    Row("llamacpp",
        r"exceeds (?:the )?available context size|exceed_context_size_error|input is larger than the max context size",
        {"keep": ("prompt", LB), "prompt": P, "window": W}, K.PROMPT_OVER_WINDOW, extras=LLAMACPP_FIELDS),
    Row("llamacpp-context-exceeded", r"Context size has been exceeded|input prompt is too big compared to KV size",
        {}, K.UNKNOWN),
    Row("llamacpp-ubatch",
        r"input(?: \((?P<prompt>{n}) tokens?\))? is too large to process\.? increase the physical batch size"
        r"(?: \(current batch size: (?P<limit>{n})\))?",
        {"prompt": P, "limit": L}, K.PROMPT_OVER_WINDOW, M.BATCH_LIMIT),
    Row("llama-cpp-python",
        r"Requested tokens \((?P<prompt>{n})\) exceed context window of(?: (?P<window>{n})|" + CUT + ")",
        {"window": W, "prompt": P}, K.PROMPT_OVER_WINDOW),
    # without the count (llama-cpp-python 0.1.x, abetlen/llama-cpp-python#120: raised when len(prompt_tokens) +
    # max_tokens > n_ctx): the prompt and its output budget over the window, not the prompt alone (read before as
    # PROMPT_OVER_WINDOW, which skips the clamp that serves it)
    Row("llama-cpp-python",
        r"Requested tokens exceed context window of(?: (?P<window>{n})|" + CUT + ")",
        {"window": W}, K.PROMPT_PLUS_OUTPUT_OVER_WINDOW),
    Row("tgi-total",
        r"inputs tokens \+ max_new_tokens must be <= (?P<window>{n})\. Given: (?P<prompt>{n}) inputs tokens and "
        r"(?P<output>{n}) max_new_tokens",
        {"window": W, "prompt": P, "output": C}),
    Row("tgi-total",
        r"inputs tokens \+ max_new_tokens must be <= (?P<window>{n})(?!\.? ?Given)",  # its first sentence alone
        {"window": W}, K.PROMPT_PLUS_OUTPUT_OVER_WINDOW),
    Row("tgi-max-input",
        r"inputs must have less than (?P<limit>{n}) tokens\. Given: (?P<prompt>{n})",
        {"limit": L, "prompt": P}, K.PROMPT_OVER_WINDOW, M.INPUT_LIMIT),
    Row("tgi-max-new-tokens",
        r"(?<!\+ )max_new_tokens must be <= (?P<limit>{n})\. Given: (?P<output>{n})(?! inputs)",
        {"limit": L, "output": C}, K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, M.OUTPUT_BUDGET),
    Row("sglang-context-length",
        r"\binput \((?P<prompt>{n}) tokens?\) is longer than the model'?s context length(?: \((?P<window>{n})(?: tokens?\)|"
        + CUT + ")|" + CUT + ")",
        {"window": W, "prompt": P}, K.PROMPT_OVER_WINDOW, refine=refine_refuses_full_window),
    Row("sglang-max-allowed",
        r"Input length \((?P<prompt>{n}) tokens\) exceeds the maximum allowed length(?: \((?P<limit>{n})(?: tokens\)|" + CUT
        + ")|" + CUT + ")",
        {"limit": L, "prompt": P}, K.PROMPT_OVER_WINDOW, M.KV_CAPACITY),
    # SGLang's scheduler for a prompt with images, audio or video (0.4–0.5, ``scheduler.handle_generate_request``):
    # "Multimodal prompt is too long after expanding multimodal tokens. After expanding
    # len(req.origin_input_ids_unpadded)=U => P >= L." P is the prompt after expansion, L ``max_req_input_len`` (as
    # ``sglang-max-allowed``); U the text-only count, not the prompt (read before as a numberless generic error).
    Row("sglang-max-allowed",
        r"Multimodal prompt is too long after expanding multimodal tokens\.? After expanding .{0,80}?=> ?(?P<prompt>{n}) ?"
        r">= ?(?P<limit>{n})",
        {"limit": L, "prompt": P}, K.PROMPT_OVER_WINDOW, M.KV_CAPACITY),
    Row("input-length-exceeds-context",
        r"Input(?: sequence)? length \(?(?P<prompt>{n})(?: tokens?)?\)? exceeds (?:the )?(?:model'?s )?maximum context "
        r"length (?:of )?\(?(?P<window>{n})",
        {"window": W, "prompt": P}, K.PROMPT_OVER_WINDOW),
    Row("zai-request-input",
        r"Request (?:(?P<prompt>{n}) )?input tokens exceeds? (?:the )?model'?s maximum context length (?:of )?(?P<window>{n})",
        {"window": W, "prompt": P}, refine=refine_output_counted),
    Row("baseten-input-length",
        r"(?:Input length (?P<prompt>{n}) )?exceeds (?:the )?maximum allowed input length of (?P<limit>{n})",
        {"limit": L, "prompt": P}, K.PROMPT_OVER_WINDOW, M.INPUT_LIMIT),
    Row("trtllm-input",
        r"Prompt length \((?P<prompt>{n})\) exceeds max(?:imum)? input length(?: \((?:(?P<limit>{n})|[^)]{0,40})\)|" + CUT + ")",
        {"limit": L, "prompt": P}, K.PROMPT_OVER_WINDOW, M.INPUT_LIMIT),
    Row("trtllm-input",
        r"Prompt length \+ number of draft tokens \((?P<prompt>{n}) ?\+ ?{n}\) exceeds max(?:imum)? input length "
        r"\((?P<limit>{n})\)",
        {"limit": L, "prompt": P}, K.PROMPT_OVER_WINDOW, M.INPUT_LIMIT),
    Row("trtllm-seq-len",
        r"Prompt length \((?P<prompt>{n})\) exceeds maximum sequence length \((?P<window>{n})\)",
        {"window": W, "prompt": P}, K.PROMPT_OVER_WINDOW),
    Row("trtllm-seq-len",
        r"Prompt length \+ number of requested output tokens \((?P<prompt>{n}) ?\+ ?(?P<output>{n})\) exceeds "
        r"maximum sequence length \((?P<window>{n})\)",
        {"window": W, "prompt": P, "output": C}),
    Row("trtllm-seq-len",
        r"Number of requested output tokens \((?P<output>{n})\) exceeds maximum sequence length \((?P<window>{n})\)",
        {"window": W, "output": C}, K.PROMPT_PLUS_OUTPUT_OVER_WINDOW),
    Row("trtllm-sum-max-tokens",
        r"sum of prompt length \((?P<prompt>{n})\),? (?:and )?(?:query length \((?P<query>{n})\),? )?(?:and )?"
        r"max_tokens \((?P<output>{n})\) should not exceed max_seq_len \((?P<window>{n})\)",
        {"window": W, "prompt": P, "output": C}, refine=refine_trtllm_query),
    Row("trtllm-sum",
        r"sum of prompt length \((?P<prompt>{n})\),? (?:and )?query length \((?P<query>{n})\) should not exceed "
        r"(?P<which>max_num_tokens|max_seq_len) \((?P<limit>{n})\)",
        {"limit": L, "prompt": P}, K.PROMPT_OVER_WINDOW, M.BATCH_LIMIT, refine=refine_trtllm),
    Row("trtllm-prompt-max-num-tokens",
        r"The prompt length \((?P<prompt>{n})\) should not exceed max_num_tokens \((?P<limit>{n})\)",
        {"limit": L, "prompt": P}, K.PROMPT_OVER_WINDOW, M.BATCH_LIMIT),
    Row("trtllm-default-max-tokens",
        r"default_max_tokens \(-?{n}\) must be greater than 0, default_max_tokens \(-?{n}\) = max_seq_len "
        r"\((?P<window>{n})\) - splited_prompt_len \((?P<prompt>{n})\)(?: - query_token_len \((?P<query>{n})\))?",
        {"window": W, "prompt": P}, K.PROMPT_OVER_WINDOW, refine=refine_trtllm_query),
    Row("lmstudio-input-length",
        r"Input length (?P<prompt>{n}) exceeds context length(?: (?P<window>{n})|" + CUT + ")",
        {"window": W, "prompt": P}, K.PROMPT_OVER_WINDOW),
    Row("lmstudio-n-keep",
        r"tokens to keep from the initial prompt is greater than the context length|n_keep ?(?:[:=] ?{n}|\( ?{n} ?\)) ?>=? ?"
        r"n_ctx",
        {"keep": ("prompt", LB), "prompt": P, "window": W}, K.PROMPT_OVER_WINDOW, extras=LLAMACPP_FIELDS),
    Row("lmstudio-reached-context",
        r"Reached context length of (?P<window>{n}) tokens?,? (?:with model .{0,80}?that|but this model) does not "
        r"currently support mid-generation context overflow",
        {"window": W}, K.PROMPT_PLUS_OUTPUT_OVER_WINDOW),
    Row("lmstudio-does-not-fit",
        r"(?:input|prompt) has (?P<prompt>{n}) tokens?,? but the (?:model'?s )?context (?:length|window|size) (?:only )?"
        r"supports (?:only )?(?P<window>{n})",
        {"window": W, "prompt": P}, K.PROMPT_OVER_WINDOW),
    Row("lmstudio-does-not-fit",
        r"(?:input|prompt) does not fit (?:in|into) (?:the )?(?:model'?s )?context(?: length| window| size)?",
        {}, K.PROMPT_OVER_WINDOW),
    Row("lmstudio-keep",
        r"Trying to keep the first (?P<prompt>{n}) tokens when context the overflows(?:\. However, the model is "
        r"loaded with context length of only (?P<window>{n}) tokens)?",
        {"window": W, "prompt": ("prompt", LB)}, K.PROMPT_OVER_WINDOW),
    Row("ollama-excess",
        r"prompt too long; exceeded (?:the )?(?:max |maximum )?context length(?: by (?P<excess>{n}) tokens?)?",
        {"excess": ("excess", E)}, K.PROMPT_OVER_WINDOW),
    Row("ollama-truncate",
        r"truncating input prompt\"? limit=(?P<window>{n}) prompt=(?P<prompt>{n})",
        {"window": W, "prompt": P}, K.PROMPT_OVER_WINDOW),
    Row("copilot",
        r"prompt token count of (?P<prompt>{n}) exceeds the limit of(?: (?P<limit>{n})|" + CUT + ")",
        {"limit": L, "prompt": P}, K.PROMPT_OVER_WINDOW, M.INPUT_LIMIT),
    Row("github-models",
        r"Request body too large for .{1,200}? model\. Max size: (?P<limit>{n}) tokens",
        {"limit": L}, K.PROMPT_OVER_WINDOW, M.INPUT_LIMIT),
    Row("dashscope",
        r"Range of input length should be \[ ?1 ?, ?(?P<limit>{n}) ?\]",
        {"limit": L}, K.PROMPT_OVER_WINDOW, M.INPUT_LIMIT),
    Row("dashscope-max-tokens",
        r"Range of max_tokens should be \[ ?1 ?, ?(?P<limit>{n}) ?\]",
        {"limit": L}, K.OUTPUT_OVER_LIMIT, M.OUTPUT_LIMIT),
    Row("xai",
        r"maximum prompt length is (?P<limit>{n})(?: tokens)?\.?,? but the request contains (?P<prompt>{n}) tokens",
        {"limit": L, "prompt": P}, K.PROMPT_OVER_WINDOW, M.INPUT_LIMIT),
    Row("xai-input-too-large",
        r"Current message \((?P<prompt>{n}) tokens?\) exceeds (?:the )?(?:token )?budget \((?P<limit>{n})(?: tokens?)?\)",
        {"limit": L, "prompt": P}, K.PROMPT_OVER_WINDOW, M.INPUT_LIMIT),
    Row("vllm-max-prompt-length",
        r"maximum prompt length is (?P<limit>{n}) tokens?" + HOWEVER + r"your request has (?P<prompt>{n}) "
        r"(?:prompt |input )?tokens",
        {"limit": L, "prompt": P}, K.PROMPT_OVER_WINDOW, M.INPUT_LIMIT),
    Row("max-prompt-tokens",
        r"number of input tokens \((?P<prompt>{n})\) (?:has )?exceeded (?:the )?max_prompt_tokens \((?P<limit>{n})\)",
        {"limit": L, "prompt": P}, K.PROMPT_OVER_WINDOW, M.INPUT_LIMIT),
    Row("deepinfra-input-length",
        r"Requested input length (?P<prompt>{n}) exceeds maximum input length (?P<limit>{n})",
        {"limit": L, "prompt": P}, K.PROMPT_OVER_WINDOW, M.INPUT_LIMIT),
    Row("generic-max-input-length",
        r"Input too long: (?P<prompt>{n}) input tokens, limit is (?P<limit>{n})",
        {"limit": L, "prompt": P}, K.PROMPT_OVER_WINDOW, M.INPUT_LIMIT),
    Row("generic-max-input-length",
        r"maximum (?:input|prompt) length is (?P<limit>{n}) tokens",
        {"limit": L}, K.PROMPT_OVER_WINDOW, M.INPUT_LIMIT),
    Row("cerebras",
        r"Current length is (?P<total>{n}) while limit is (?P<window>{n})",
        {"window": W, "total": T}, K.PROMPT_PLUS_OUTPUT_OVER_WINDOW),
    Row("moonshot",
        r"exceeded model token limit ?: (?P<window>{n})(?: ?\(re ?quested: (?P<total>{n})\))?",
        {"window": W, "total": T}, K.PROMPT_PLUS_OUTPUT_OVER_WINDOW),
    Row("moonshot",
        r"total message size (?P<total>{n}) exceeds (?:the )?limit (?:of )?(?P<window>{n})",
        {"window": W, "total": T}, K.PROMPT_PLUS_OUTPUT_OVER_WINDOW),
    Row("mistral",
        r"Prompt contains (?P<prompt>{n}) tokens?(?: and {n} (?:draft tokens?|images?))*,?(?: which is)? too large for "
        r"model with (?P<window>{n}) maximum context length",
        {"window": W, "prompt": P}, K.PROMPT_OVER_WINDOW),
    Row("mistral",
        r"too large for model with (?P<window>{n}) maximum context length",
        {"window": W}, K.PROMPT_OVER_WINDOW),
    Row("ds4",
        r"prompt has (?P<prompt>{n}) tokens?,? but the configured context size is (?P<window>{n})",
        {"window": W, "prompt": P}, K.PROMPT_OVER_WINDOW),
    Row("cohere-excess",
        r"size limit exceeded by (?P<excess>{n}) tokens?",
        {"excess": ("excess", E)}, K.PROMPT_OVER_WINDOW),
    Row("fireworks",
        r"prompt is too long: (?P<prompt>{n})(?: tokens?)?, model maximum context length: (?P<window>{n})",
        {"window": W, "prompt": P}, K.PROMPT_OVER_WINDOW),
    Row("cohere-max-tokens",
        r"max tokens must be less than or equal to (?P<limit>{n}),? the maximum output for this model"
        r"(?: ?- ?received (?P<output>{n}))?",
        {"limit": L, "output": C}, K.OUTPUT_OVER_LIMIT, M.OUTPUT_LIMIT),
    Row("cohere",
        r"total number of tokens in the prompt cannot exceed (?P<window>{n}) - received (?P<prompt>{n})",
        {"window": W, "prompt": P}, K.PROMPT_OVER_WINDOW),
    Row("cohere-total",
        r"total number of tokens \(prompt and prediction\) cannot exceed (?P<window>{n}) ?- ?received (?P<total>{n})",
        {"window": W, "total": T}, K.PROMPT_PLUS_OUTPUT_OVER_WINDOW),
    Row("gpt4all",
        r"prompt is (?P<prompt>{n}) tokens and the context window is (?P<window>{n})",
        {"window": W, "prompt": P}, K.PROMPT_OVER_WINDOW),
    Row("rkllama",
        r"Prompt is (?P<prompt>{n}) tokens but the model context window is (?P<window>{n})(?: tokens|" + CUT + ")",
        {"window": W, "prompt": P}, K.PROMPT_OVER_WINDOW),
    Row("max-seq-len",
        r"length of prompt_tokens \((?P<prompt>{n})\) must be less than max_seq_len(?: \((?P<window>{n})(?:\)|" + CUT + ")|"
        + CUT + ")",
        {"window": W, "prompt": P}, K.PROMPT_OVER_WINDOW),
    Row("max-seq-len",
        r"max_total_tokens \((?P<total>{n})\) must be less than or equal to max_seq_len \((?P<window>{n})\)",
        {"window": W, "total": T}, K.PROMPT_PLUS_OUTPUT_OVER_WINDOW),
    Row("textgen-truncated",
        r"Context length: (?P<window>{n}), max_new_tokens: (?P<output>{n}), available context length: (?P<limit>{n})",
        {"window": W, "output": C, "limit": L}, K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, M.INPUT_BUDGET),
    Row("candle-vllm",
        r"Requested max tokens (?P<output>{n}) larger than available tokens (?P<limit>{n})"
        r"(?:.{0,200}?\((?P<prompt>{n}) tokens reserved for prompt\))?",
        {"output": C, "limit": L, "prompt": P}, K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, M.OUTPUT_BUDGET),
    Row("deepseek-max-tokens",
        r"valid range of max_tokens is \[ ?1 ?, ?(?P<limit>{n}) ?\]",
        {"limit": L}, K.OUTPUT_OVER_LIMIT, M.OUTPUT_LIMIT),
    Row("ctransformers",
        r"Number of tokens \((?P<total>{n})\) exceeded maximum context length \((?P<window>{n})\)",
        {"window": W, "total": T}, K.UNKNOWN),
    Row("prompt-length-over-max-model-len",
        r"prompt length \(?(?P<prompt>{n})\)? exceeds (?:the )?(?:model'?s )?max_model_len \(?(?P<window>{n})\)?",
        {"window": W, "prompt": P}, K.PROMPT_OVER_WINDOW),
    Row("tgi-input-plus-new-tokens",
        r"input length \((?P<prompt>{n})\) ?\+ ?max_new_tokens \((?P<output>{n})\) ?> ?max_total_tokens \((?P<window>{n})\)",
        {"window": W, "prompt": P, "output": C}, K.PROMPT_PLUS_OUTPUT_OVER_WINDOW),
    Row("cloudflare-estimated",
        r"estimated number of input and maximum output tokens \((?P<total>{n})\) exceeded (?:this |the )?model'?s? "
        r"context window limit(?: \((?P<window>{n})\))?",
        {"window": W, "total": ("total", APPROX)}, K.PROMPT_PLUS_OUTPUT_OVER_WINDOW),
    Row("watsonx",
        r"number of input tokens (?P<prompt>{n}) cannot exceed the total tokens limit (?P<window>{n})",
        {"window": W, "prompt": P}, K.PROMPT_OVER_WINDOW),
    Row("voyage-example",
        r"has too many tokens and does not fit into the model'?s context window of (?P<window>{n}) tokens",
        {"window": W}, K.PROMPT_OVER_WINDOW),
    Row("omlx",
        r"prompt too long: (?P<prompt>{n}) tokens? exceeds? (?:the )?(?:max(?:imum)? )?context (?:window|length) of "
        r"(?P<window>{n})",
        {"window": W, "prompt": P}, K.PROMPT_OVER_WINDOW),
    Row("vmlx",
        r"prompt has (?P<prompt>{n}) tokens?,? max prompt/context tokens is(?: (?P<limit>{n})|" + CUT + ")",
        {"limit": L, "prompt": P}, K.PROMPT_OVER_WINDOW, M.INPUT_LIMIT),
    Row("tabbyapi",
        r"Prompt length (?P<prompt>{n}) is greater than (?:the )?max_seq_len (?P<window>{n})",
        {"window": W, "prompt": P}, K.PROMPT_OVER_WINDOW),
    Row("tabbyapi",
        r"Request length (?P<prompt>{n}) ?\+ ?(?P<output>{n}) is greater than (?:the )?max_seq_len (?P<window>{n})",
        {"window": W, "prompt": P, "output": C}),
    Row("mlc-llm",
        r"Request prompt has (?P<prompt>{n}) tokens in total,? larger than the model (?:capacity (?P<window>{n})|"
        r"input length limit (?P<limit>{n}))",
        {"window": W, "prompt": P, "limit": L}, K.PROMPT_OVER_WINDOW, M.INPUT_LIMIT),
    Row("lightllm-input",
        r"input prompt token len (?P<prompt>{n}) is too long ?> ?(?P<limit>{n})",
        {"limit": L, "prompt": P}, K.PROMPT_OVER_WINDOW, M.INPUT_LIMIT),
    Row("lightllm-total",
        r"req (?:token )?total len (?:\(input len ?\+ ?output len\) )?is too long ?> ?max_req_total_len ?:? ?(?P<window>{n})",
        {"window": W}, K.PROMPT_PLUS_OUTPUT_OVER_WINDOW),
    Row("lightllm-total",
        r"req (?:token )?total len ?\+ ?1 (?:\(input len ?\+ ?output len ?\+ ?1\) )?is too long ?> ?max_total_token_num",
        {}, K.UNKNOWN),
    Row("qianfan-chars",
        r"the max input characters is (?P<char_limit>{n})|the max length of current question is (?P<char_limit2>{n})",
        {"char_limit": ("char_limit", E), "char_limit2": ("char_limit", E)}, K.PROMPT_OVER_WINDOW),
    Row("nim-embedding",
        r"Input length (?P<prompt>{n}) exceeds (?:the )?maximum allowed token size (?P<window>{n})",
        {"window": W, "prompt": P}, K.PROMPT_OVER_WINDOW),
    Row("apple-foundation-models",
        r"Content contains (?P<total>{n}) tokens?,? which exceeds the maximum allowed context size of (?P<window>{n})",
        {"window": W, "total": T}, K.UNKNOWN),
    Row("generic-comparison",
        r"exceed(?:s|ed)? (?:the )?(?:model'?s )?maximum context length (?:of )?\(?(?P<total>{n})(?: tokens?)? ?"
        r"(?:> ?|requested,? ?(?:vs\.?|versus|but|while|,)? (?:only )?)(?P<window>{n})",
        {"window": W, "total": T}, K.UNKNOWN),
    # ---- generic forms with numbers (gateways and home-grown servers): the subject says what the count is
    Row("generic-prompt-plus-output",
        r"(?:prompt|input)(?:[ _]tokens?| length)? \(?(?P<prompt>{n})(?: tokens?)?\)? ?(?:plus|\+|and) ?(?:the )?(?:requested )?"
        r"(?:max_(?:completion_|new_|output_)?tokens|output(?: tokens)?|completion(?: tokens)?) \(?(?P<output>{n})"
        r"(?: tokens?)?\)?(?: ?= ?(?P<total>{n})(?: tokens?)?)? (?:exceeds?|exceeded|is (?:greater|larger|more) than|>) (?:the )?"
        r"(?:model'?s? )?(?:maximum |max )?(?:context(?: (?:length|window|size|limit))?|max_model_len|max_context|(?<=model )max)"
        r"(?: of| is)? ?\(?(?P<window>{n})(?![,._' ]?\d| ?\)? ?(?:output|completion|generat|new|reques|credit|per\b|per-|rpm|tpm|image|char|byte))|"
        r"context (?:window|length)(?: exceeded)? ?: ?(?P<prompt2>{n}) ?\+ ?(?P<output2>{n}) ?> ?(?P<window2>{n})",
        {"window": W, "prompt": P, "output": C, "total": T, "window2": W, "prompt2": P, "output2": C}, overflow_only=True),
    Row("generic-output-over-window",
        r"(?<!plus )(?<!\+ )(?<!and )(?:max_(?:completion_|output_|new_)?tokens|maxOutputTokens|num_predict|n_predict|(?:requested |maximum )?"
        r"output (?:tokens|length))(?: value)? ?[(=:]? ?(?P<output>{n})(?: tokens?)?\)? (?:exceeds?|exceeded|is (?:greater|"
        r"larger) than|>|" + MUST_NOT + r") (?:the )?(?:model'?s? )?(?:maximum |max )?(?:context (?:length|window|size|limit)|max_model_len)"
        r"(?: of| is)? ?\(?(?P<window>{n})|"
        r"max_(?:completion_|output_|new_)?tokens (?:is )?too large: (?P<output2>{n}) ?> ?(?P<window2>{n}) ?\(?(?:the )?"
        r"(?:model'?s )?(?:maximum )?context (?:length|window)",
        {"window": W, "output": C, "window2": W, "output2": C}, K.OUTPUT_OVER_WINDOW),
    Row("generic-output-over-cap",
        r"(?<!plus )(?<!\+ )(?<!and )(?:max_(?:completion_|output_|new_)?tokens|maxOutputTokens|(?:requested )?output "
        r"tokens)(?: value)? ?[(=:]? ?(?P<output>{n})(?: tokens?)?\)? (?:exceeds?|exceeded|is (?:greater|larger|more) "
        r"than|>) (?:the |this |its )?(?:model'?s )?(?:maximum|max|allowed) (?:number of )?(?:output|completion)(?: tokens?| length)?"
        r"(?: allowed)?(?: limit)?(?: of| is)? ?\(?(?P<limit>{n})",
        {"output": C, "limit": L}, K.OUTPUT_OVER_LIMIT, M.OUTPUT_LIMIT),
    Row("generic-prompt-over-window",
        r"(?:prompt|input|conversation|messages?)(?: sequence)?(?: length| tokens?| token count)?(?: is| has| contains| of)? "
        r"[(\[]?(?P<prompt>{n})"
        r"(?: tokens?)?[)\]]?,? (?:which )?(?:exceeds?|exceeded|is (?:longer|larger|greater|bigger) than|>|" + MUST_NOT + r") "
        r"(?:the |this |its )?(?:model'?s )?"
        r"(?:maximum |max )?"
        r"(?:context (?:length|window|size|limit)|max_model_len|max(?:imum)? sequence length|max_seq_len)"
        r"(?: of| is)? [(\[]?(?P<window>{n})",
        {"window": W, "prompt": P}, K.PROMPT_OVER_WINDOW),
    Row("generic-count-over-window",
        r"(?:token count|number of tokens|total tokens|request)(?: is| has| of)? \(?(?P<total>{n})(?: tokens?)?\)?"
        r"(?: tokens?)?,? (?:which )?(?:exceeds?|exceeded|is (?:longer|larger|greater|bigger) than|>|" + MUST_NOT + r") "
        r"(?:the |this |its )?(?:model'?s )?(?:maximum |max )?(?:context (?:length|window|size|limit)|max_model_len)(?: of| is)? "
        r"\(?(?P<window>{n})",
        {"window": W, "total": T}, K.UNKNOWN),
    # after the subject-bearing rows above: "max_tokens (C) exceeds the context window of W" is the output's, "Token
    # count T exceeds the context window of W" a count of unknown split
    Row("openai-context-window",
        r"exceeds the context window of (?P<window>{n})",
        {"window": W}, K.PROMPT_OVER_WINDOW),
    Row("generic-count-over-window",
        r"requested (?P<total>{n}) tokens?,? but (?:the )?model (?:only )?supports (?:up to )?(?P<window>{n})",
        {"window": W, "total": T}, K.UNKNOWN),
    Row("generic-count-over-window",
        r"maximum context (?:window|length) of (?P<window>{n}) tokens? \(requested (?P<total>{n})",
        {"window": W, "total": T}, K.UNKNOWN),
    Row("generic-count-over-window",
        # also with words before the colon: "Prompt length is larger than the maximum context length supported by the
        # model: 20000 > 16384" (a NIM-style gateway; read before as a numberless generic error)
        r"context (?:window|length|size)(?: (?:supported|allowed)(?: by (?:the |this )?model)?)? ?: ?(?P<total>{n})"
        r"(?: tokens?)? ?> ?(?P<window>{n})",
        {"window": W, "total": T}, K.UNKNOWN),
    Row("generic-count-over-window",
        r"context length exceeded,? max_seq_len ?:? ?(?P<window>{n}),? got (?P<total>{n})",
        {"window": W, "total": T}, K.UNKNOWN),
    Row("generic-prompt-plus-output",
        r"total number of tokens \(prompt \+ max_tokens\) must not exceed (?P<window>{n})[;,.]? got (?P<total>{n})",
        {"window": W, "total": T}, K.PROMPT_PLUS_OUTPUT_OVER_WINDOW),
    # ---- LiteLLM's own refusal (router pre-call check): LiteLLM's configured limit and its own count
    Row("litellm-pre-call",
        r"Got ?= ?(?P<prompt>{n}) ?Model ?=.{0,300}?Max Input Tokens ?=",
        {"prompt": ("prompt", APPROX)}, K.PROMPT_OVER_WINDOW),
    Row("litellm-pre-call",
        r"Max Input Tokens ?= ?(?P<limit>{n}), Got ?= ?(?P<prompt>{n})",
        {"limit": L, "prompt": ("prompt", APPROX)}, K.PROMPT_OVER_WINDOW, M.INPUT_LIMIT),
    # ---- more servers with numbers (a breaker's search of public issues, 2026-12)
    Row("ark-input-length",
        r"Input length (?P<prompt>{n})(?: tokens)? exceeds the maximum length(?: of)? (?P<limit>{n})"
        r"(?:(?: tokens?)?(?=\.?(?:\s*(?:request id\b|\Z)|[\"'}\]])|\.(?=\s*\Z))|" + CUT + ")",
        {"limit": L, "prompt": P}, K.PROMPT_OVER_WINDOW, M.INPUT_LIMIT),
    # Writer (Palmyra, quoted in stanford-crfm/helm#1571, 2023): "Total number of tokens (prompt+generation) exceeded the
    # service limit of W tokens. Please make the prompt shorter or reduce the number of tokens to generate." (read
    # before as None): W holds prompt and generation together.
    Row("writer",
        r"Total number of tokens \((?:prompt|input) ?\+ ?(?:generation|completion|output)\) exceeded the (?:service |model )?"
        r"limit of (?P<window>{n})",
        {"window": W}, K.PROMPT_PLUS_OUTPUT_OVER_WINDOW),
    # DeepSpeed inference (deepspeed/inference/engine.py ``_generate``, also behind DeepSpeed-MII): "Input with size P
    # exceeds maximum length of L. Please increase 'max_tokens' in the DeepSpeed Inference Config." L is the engine's
    # max_out_tokens, the tokens it holds per sequence (KV_CAPACITY); read before as None
    Row("deepspeed-input-size",
        r"Input with size (?P<prompt>{n}) exceeds maximum length of (?P<limit>{n})(?:(?=\.? ?Please increase '?max_tokens'? "
        r"in the DeepSpeed)|" + CUT + ")",
        {"limit": L, "prompt": P}, K.PROMPT_OVER_WINDOW, M.KV_CAPACITY),
    # chatglm.cpp (li-plus/chatglm.cpp, also BigDL/ipex-llm's native ChatGLM: intel/ipex-llm#9040): "requested max_length
    # (T) is larger than model's max_length (W)": T is the requested total (prompt + generation) cap, W the model's
    # context (read before as None)
    Row("chatglm-cpp",
        r"requested max_length \((?P<total>{n})\) is larger than model'?s max_length \((?P<window>{n})\)",
        {"window": W, "total": T}, K.UNKNOWN),
    # mistral.rs (EricLBuehler/mistral.rs mistralrs-core/src/engine/add_request.rs, its HTTP server's ValidationError):
    # "Prompt sequence length is greater than W, perhaps consider using `truncate_sequence`?" W is the model's
    # max_seq_len (read before as None)
    Row("mistralrs",
        r"Prompt sequence length is greater than (?P<window>{n})(?:(?=,? ?perhaps consider using truncate_sequence)|"
        + CUT + ")",
        {"window": W}, K.PROMPT_OVER_WINDOW),
    Row("wasmedge",
        r"prompt too long \((?P<prompt>{n}) tokens?,? max (?P<limit>{n})",
        {"limit": L, "prompt": P}, K.PROMPT_OVER_WINDOW, M.INPUT_LIMIT),
    # Chinese: "最大上下文长度为 W" (the window, by a wording that says a context overflowed; W before tokens or no unit)
    Row("zh-context-window",
        ZH_NOT + r"(?:" + ZH_OVERFLOW + r".{0,40}?最大上下文(?:长度|窗口)?(?:限制)?(?:为|是|:)? ?(?P<window>{n})" + ZH_TOKENS + "|"
        r"最大上下文(?:长度|窗口)?(?:限制)?(?:为|是|:)? ?(?P<window2>{n})" + ZH_TOKENS + ".{0,40}?" + ZH_OVERFLOW + "|"
        r"(?:超过|超出)了?(?:模型)?(?:的|所)?(?:支持的)?最大上下文(?:长度|窗口)(?:限制)?(?:为|是|:)? ?(?P<window3>{n})"
        + ZH_TOKENS + ")",
        {"window": W, "window2": W, "window3": W}, K.UNKNOWN),
    Row("generic", ZH_NOT + ZH_OVERFLOW, {}, K.UNKNOWN),  # the Chinese wordings without a window
    # ---- generic fallbacks (last)
    Row("generic", MCL, {"window": W}, K.UNKNOWN),
    # also "longer than the context length of W" and "the maximum context limit of W" (LiteLLM's own test strings for its
    # exception mapping, 2025-2026: "The input exceeds the model's maximum context limit of 8192 tokens.", "Your prompt
    # is longer than the model's context length of 2048."; W was lost before, a numberless generic error)
    Row("generic",
        r"(?:exceed(?:s|ed)?|(?:is|are) (?:longer|larger|greater|bigger) than) (?:the |this |its )?(?:model'?s? )?"
        r"(?:maximum |max )?context (?:length|window|size|limit) "
        r"(?:of (?P<window>{n})|\((?P<window2>{n})(?=(?: tokens?)? ?\)|" + CUT + r"))"
        # "(P > W)": P is the request, not W; "(W" is read only when it closes (or the text ends right after W): "(P t"
        # cut inside its comparison is no window
        r"(?! ?(?:tokens? ?)?(?:>|requested|given|provided|received(?! model group)|vs\b))",
        {"window": W, "window2": W}, K.UNKNOWN),
    Row("generic",
        r"context[ _-]?(?:length|window|size)[ _-]?(?:exceeded|exceeds)|exceed(?:s|ed)? (?:the |this |its )?(?:model'?s? )?"
        r"(?:maximum |max |available )?context (?:window|length|size|limit)|(?:prompt|input) is too long|"
        r"greater than the context length|exceeded model token limit|too many (?:input )?tokens|"
        r"token limit exceeded|reduce the length of the (?:messages|input|prompt)|exceeds? context limit|"
        r"model'?s maximum context (?:length|limit)|ContextWindowExceededError|prompt too long|"
        r"prompt exceeds max(?:imum)? length|input token length (?:is )?too long|input context is too long|"
        r"max_prompt_tokens_exceeded|exceeds the maximum number of tokens|tokens in request more than max tokens|"
        r"too_many_prompt_tokens|total length of all messages is too long|prompt tokens too long|tokens_too_long|"
        r"exceededContextWindowSize|prompt is longer than the context length|"
        r"input tokens? exceeds? (?:the )?model'?s? token limit|"
        # the same refusal with another verb (gateways, agent runtimes, local servers): "is longer than the context
        # window", "does not fit into the model's context", "is too long for the context window", "exceeds the model's
        # token limit", "exceeded the maximum number of tokens"
        r"(?:is|are) (?:(?:longer|larger|greater|bigger) than|over) (?:the |this |its )?(?:model'?s? )?(?:maximum |max )?"
        r"context (?:window|length|size|limit)|(?:does not|doesn'?t|do not|don'?t|cannot|can'?t|won'?t) fit (?:in|into|"
        r"within) (?:the |this |its )?(?:model'?s? )?(?:maximum |max |available )?context\b|too (?:long|large|big) for "
        r"(?:the |this |its )?(?:model'?s? )?(?:maximum |max )?context (?:window|length|size)|exceed(?:s|ed)? (?:the |this "
        r"|its )?model'?s? (?:maximum )?token limit|exceeded (?:the )?maximum number of tokens|"
        # Xinference's transformers backend (and FastChat's generate_stream it derives from): max_new_tokens + 8 over the
        # context length, "Max tokens exceeds model's max length" (xorbitsai/inference#3066, 2025-03; read before as None)
        r"max tokens exceeds? (?:the )?model'?s max length|"
        r"\bprompt_too_long\b|"
        # LiteLLM's own substrings (exception_mapping_utils, 1.108.7): Bedrock "prompt: length: 1..200000, got
        # 210000" (a unit it does not name), Hugging Face "Input validation error: length limit exceeded", NLP
        # Cloud "Input text length should not exceed 1024", Bedrock Nova "Input Tokens Exceeded: Number of input
        # tokens exceeds maximum length"
        r"prompt: length: 1\.\.|input validation error: length limit exceeded|input text length should not exceed|"
        r"input tokens exceeded|number of input tokens exceeds? (?:the )?maximum|\binput_too_large\b|"
        # Volcengine Ark's OutofContextError "Total tokens of image and text exceed max message tokens.", Tencent
        # Cloud's "input length too long" (code 20059), LMDeploy's "exceed session max length. Please end the session."
        r"exceed max message tokens|\binput length too long|exceed session max length|"
        # Megatron-LM's text generation server (prompt + tokens_to_generate over max_position_embeddings, no number);
        # a gateway that relays transformers' tokenizer warning as its 400 (vllm-project/vllm-ascend#7535, 2026-03: {"msg":
        # "Token indices sequence length is longer than the specified maximum sequence length for this model!"}; its
        # "(P > M)" is the tokenizer's model_max_length, not the server's window: no number read). Both read before as None
        r"length of prompt \+ tokens_to_generate longer than allowed|"
        r"token indices sequence length is longer than the specified maximum sequence length",
        {}, K.UNKNOWN),
)

#: Known look-alikes, checked before :data:`ROWS`: a hit means "not a context-length error".
NEGATIVES: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        r"rate[ _-]?limit",  # "Rate limit reached for ... tokens", rate_limit_exceeded
        r"tokens? per (?:min|minute|hour|day|second)|\b(?:[io]?tpm|rpm|tpd|rpd)\b",  # Groq/OpenAI/Anthropic TPM
        # the same throttling with its period spelled another way: "100000 tokens/min", "token limit per day", "tokens per
        # 24h", "limit exceeded for this hour" (a rate or a quota over time, never one request's size)
        r"tokens? ?/ ?(?:s|sec|second|min|minute|h|hr|hour|d|day)\b|\blimit (?:per|/) ?(?:sec|second|min|minute|hour|day)\b|"
        r"\bper (?:24 ?h(?:ours?)?|hour|day|week|month)\b|\b(?:this|each|every) (?:minute|hour|day)\b",
        r"quota|resource[_ ]exhausted|too many requests|service tier capacity exceeded",
        r"(?:daily|weekly|monthly|hourly) (?:token )?(?:limit|usage)",
        r"budget (?:has been )?exceeded|exceededbudget|max budget",  # LiteLLM budgets
        r"string_above_max_length|invalid '?user'?|string too long",  # OpenAI string-length validation (chars)
        r"content[_ ](?:filter|policy|management)|responsibleaipolicyviolation|safety system",
        r"maximum number of tools|too many tools",
        # HTTP body bytes, not tokens; but a gateway's 413 that states a context length in tokens right after it
        # ("payload too large: maximum context length is N tokens, but you requested M tokens") is the token refusal
        r"(?:request_too_large|payload too large|request entity too large)(?![^\n]{0,40}?context length is \d[\d,.]* tokens)",
        r"(?:invalid|incorrect) api[ _-]?key|\bunauthorized\b|authentication[_ ]error",
        # a size limit in bytes worded as a context length ("Request exceeds maximum context length of 10485760 bytes"):
        # a body-size cap, never a token window (read before as a window of 10,485,760 tokens, certainty exact)
        r"context (?:length|window|size|limit)(?: is| of)? \(?\d[\d,.]* ?(?:bytes?|[kmg]i?b)\b",
        # a parameter's own token list over its cap (OpenAI "Invalid 'logit_bias': too many tokens. Expected at most 300
        # tokens, got 400."): the client's error, not the prompt's length
        r"logit[_ ]?bias",
        # throttling worded with tokens (Bedrock "ThrottlingException: Too many tokens, please wait before
        # trying again.", pi-ai's "Throttling error: Too many tokens", "Service unavailable: too many tokens")
        r"throttl|wait before trying again",
        r"too many tokens[^.]{0,60}?(?:please wait|try again (?:later|in)|slow down|\brate\b|per (?:sec|min|hour|day))",
        r"(?:\brate\b|service unavailable)\W{0,3}[^.]{0,40}?too many tokens",
        # load worded with tokens: "Server overloaded: too many tokens in flight (KV cache full)", "Too many tokens
        # in queue, please retry later", "scheduler queue has too many tokens" (a busy server, not this request's size)
        r"too many tokens[^.]{0,60}?(?:in[ -]flight|in (?:the )?queue|queued|\bretry\b|overload|\bbusy\b|capacity|concurrent)",
        r"(?:overload(?:ed)?|server (?:is )?busy|queue (?:is )?full|queue has|in[ -]flight)\W{0,3}[^.]{0,60}?too many tokens",
    )
)


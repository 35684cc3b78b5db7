"""Context-length error parsing (pure), a breaker's third round: wordings from real servers the parser misread, each
with the family, kind and numbers it must report (a field not named must be ``None``), checked bare and in the
wrappers real messages travel in (LiteLLM prefixes, JSON bodies, Python reprs, SSE ``event: error`` lines, router
suffixes).

Numbers are as printed: W window, P prompt, C requested output, L a printed limit that is not the window.
"""

from __future__ import annotations

import json

import pytest

from context_error_view import expected as _expected, view as _view
from litellm_kvwarm.context_errors import Certainty, ErrorKind, Limit, LimitMeaning, Number, parse_context_error

EXACT, LB = Certainty.EXACT, Certainty.LOWER_BOUND
K = ErrorKind
M = LimitMeaning

# (text, family, kind, {field: expected}): each read wrongly before its fix (the comment says how).
ROUND3_FAULTS = [
    # Databricks Model Serving (databricks/databricks-sdk-go#1183, 2025-03: "Bad request: rpc error: code =
    # InvalidArgument desc = max_tokens (10000) cannot exceed 8192. Please reduce the length of max output tokens
    # generated."): the output parameter over the model's output cap stated as a rule. Read as None (not a context
    # error): the plugin failed open where one retry at the cap serves the request.
    ("Bad request: rpc error: code = InvalidArgument desc = max_tokens (10000) cannot exceed 8192. Please reduce the "
     "length of max output tokens generated.",
     "max-tokens-cap", K.OUTPUT_OVER_LIMIT,
     {"output_tokens": Number(10000), "printed_limit": Limit(8192, M.OUTPUT_LIMIT, EXACT)}),
    # the same cap named by its field (a Databricks-served model's wording, quoted in a public test of a client that
    # reads caps from refusals, 2026): read as None
    ("max_new_tokens 16000 cannot be greater than max_output_tokens 8192. Please retry.",
     "max-tokens-cap", K.OUTPUT_OVER_LIMIT,
     {"output_tokens": Number(16000), "printed_limit": Limit(8192, M.OUTPUT_LIMIT, EXACT)}),
    # a window stated as a rule ("cannot exceed", "must not exceed"): the subject's count was lost (a bare numberless-
    # kind generic with only W), so an output over the window alone was taken for an unknown overflow
    ("max_tokens (9000) cannot exceed the context length of 8192 tokens",
     "generic-output-over-window", K.OUTPUT_OVER_WINDOW, {"window": Number(8192), "output_tokens": Number(9000)}),
    ("The prompt (5000 tokens) must not exceed the model's context window of 4096 tokens.",
     "generic-prompt-over-window", K.PROMPT_OVER_WINDOW, {"window": Number(4096), "prompt_tokens": Number(5000)}),
    # SGLang's scheduler, a prompt with images after expansion (sgl-project/sglang python/sglang/srt/managers/
    # scheduler.py, 0.4-0.5: f"After expanding {len(req.origin_input_ids_unpadded)=} => {len(req.origin_input_ids)} >=
    # {self.max_req_input_len}."): read as a numberless generic error; the prompt after expansion and SGLang's
    # max_req_input_len were lost. The text-only count before "=>" is not the prompt.
    ("Multimodal prompt is too long after expanding multimodal tokens. After expanding "
     "len(req.origin_input_ids_unpadded)=1200 => 9000 >= 8192.",
     "sglang-max-allowed", K.PROMPT_OVER_WINDOW,
     {"prompt_tokens": Number(9000), "printed_limit": Limit(8192, M.KV_CAPACITY, EXACT)}),
    # Writer's Palmyra API (quoted in stanford-crfm/helm#1571, 2023-05): read as None; W holds prompt + generation
    ("Total number of tokens (prompt+generation) exceeded the service limit of 2048 tokens. Please make the prompt "
     "shorter or reduce the number of tokens to generate.",
     "writer", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {"window": Number(2048)}),
    # Megatron-LM's text generation server (megatron/text_generation/generation.py: raise ValueError("Length of prompt +
    # tokens_to_generate longer than allowed"), its Flask server returns the string): read as None
    ("Length of prompt + tokens_to_generate longer than allowed", "generic", K.UNKNOWN, {}),
    # a gateway relaying transformers' tokenizer warning as its 400 for a request over the window (vllm-project/
    # vllm-ascend#7535, 2026-03); with the warning's "(P > M)" M is the tokenizer's model_max_length, not the server's
    # window: a context error, no number. Read as None
    ("Token indices sequence length is longer than the specified maximum sequence length for this model!",
     "generic", K.UNKNOWN, {}),
    ("Token indices sequence length is longer than the specified maximum sequence length for this model (5000 > 4096). "
     "Running this sequence through the model will result in indexing errors",
     "generic", K.UNKNOWN, {}),
    # LM Studio 0.4 (anomalyco/opencode#11141, 2026-01: "Cannot truncate prompt with n_keep (15028) >= n_ctx (7424)";
    # continuedev/continue#11279, 2026-03: "... n_keep (4270) >= n_ctx (4096)"): the llama.cpp fields in parentheses
    # were read as None. n_keep is the kept part of the prompt (a floor), n_ctx the window.
    ("Cannot truncate prompt with n_keep (15028) >= n_ctx (7424)",
     "lmstudio-n-keep", K.PROMPT_OVER_WINDOW, {"window": Number(7424), "prompt_tokens": Number(15028, LB)}),
    ("Cannot truncate prompt with n_keep (4270) >= n_ctx (4096). Try to load the model with a larger context length.",
     "lmstudio-n-keep", K.PROMPT_OVER_WINDOW, {"window": Number(4096), "prompt_tokens": Number(4270, LB)}),
    # a window after "context limit of" or "longer than the ... context length of" (LiteLLM's own test strings for its
    # exception mapping, tests/test_litellm/litellm_core_utils/test_exception_mapping_utils.py): W was lost (a
    # numberless generic error), and with a subject's count that count too
    ("An error occurred: The input exceeds the model's maximum context limit of 8192 tokens.",
     "generic", K.UNKNOWN, {"window": Number(8192)}),
    ("Your prompt is longer than the model's context length of 2048. Please shorten it.",
     "generic", K.UNKNOWN, {"window": Number(2048)}),
    ("The prompt (9000 tokens) exceeds the model's context limit of 8192 tokens.",
     "generic-prompt-over-window", K.PROMPT_OVER_WINDOW, {"window": Number(8192), "prompt_tokens": Number(9000)}),
    # DeepSpeed inference engine (deepspeedai/DeepSpeed deepspeed/inference/engine.py, PR #4349: f"Input with size
    # {tensor_length} exceeds maximum length of {self._config.max_out_tokens}. Please increase 'max_tokens' in the
    # DeepSpeed Inference Config."): read as None
    ("Input with size 5000 exceeds maximum length of 4096. Please increase 'max_tokens' in the DeepSpeed Inference "
     "Config.",
     "deepspeed-input-size", K.PROMPT_OVER_WINDOW,
     {"prompt_tokens": Number(5000), "printed_limit": Limit(4096, M.KV_CAPACITY, EXACT)}),
    # chatglm.cpp's length check (chatglm.cpp:678 in intel/ipex-llm#9040, 2023-09: "check failed (gen_config.max_length
    # <= config_.max_length) requested max_length (2099) is larger than model's max_length (2048)"): read as None
    ("chatglm.cpp:678 check failed (gen_config.max_length <= config_.max_length) requested max_length (2099) is larger "
     "than model's max_length (2048)",
     "chatglm-cpp", K.UNKNOWN, {"window": Number(2048), "total_tokens": Number(2099)}),
    # Bedrock InvokeModel's JSON-schema validator on an output parameter (everit's "#/<path>: <value> is not less or
    # equal to <maximum>", the validator behind Bedrock's "Malformed input request: ... expected maxLength: M, actual:
    # N" and "#: extraneous key [top_n] is not permitted"): read as None; the model's output cap
    ("ValidationException: Malformed input request: #/max_tokens: 9000 is not less or equal to 8192, please reformat "
     "your input and try again.",
     "bedrock-max-tokens", K.OUTPUT_OVER_LIMIT,
     {"output_tokens": Number(9000), "printed_limit": Limit(8192, M.OUTPUT_LIMIT, EXACT)}),
    ("Malformed input request: #/textGenerationConfig/maxTokenCount: 9000 is not less or equal to 8192, please "
     "reformat your input and try again.",
     "bedrock-max-tokens", K.OUTPUT_OVER_LIMIT,
     {"output_tokens": Number(9000), "printed_limit": Limit(8192, M.OUTPUT_LIMIT, EXACT)}),
    # mistral.rs (mistralrs-core/src/engine/add_request.rs: format!("Prompt sequence length is greater than {},
    # perhaps consider using `truncate_sequence`?", max_seq_len)): read as None; W is the model's max_seq_len
    ("Prompt sequence length is greater than 4096, perhaps consider using `truncate_sequence`?",
     "mistralrs", K.PROMPT_OVER_WINDOW, {"window": Number(4096)}),
    # llama-cpp-python 0.1.x (abetlen/llama-cpp-python#120, 2023-04: `if len(prompt_tokens) + max_tokens > n_ctx: raise
    # ValueError(f"Requested tokens exceed context window of {n_ctx}")`): prompt + output over W, read before as the
    # prompt alone over it (PROMPT_OVER_WINDOW: escalated where one clamped retry serves). 0.2+ prints the prompt's
    # count and checks the prompt alone.
    ("ValueError: Requested tokens exceed context window of 512. Please shorten the request.",
     "llama-cpp-python", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {"window": Number(512)}),
    ("Requested tokens (5000) exceed context window of 4096. Please shorten the request.",
     "llama-cpp-python", K.PROMPT_OVER_WINDOW, {"window": Number(4096), "prompt_tokens": Number(5000)}),
]

# Not context errors (or not this row's): a rule about the output that names the window stays with the window's rows.
ROUND3_KEPT = [
    ("max_tokens=9000 cannot be greater than max_model_len=8192. Please request fewer output tokens.",
     "vllm-max-tokens-over-window", K.OUTPUT_OVER_WINDOW, {"window": Number(8192), "output_tokens": Number(9000)}),
]

ROUND3_NOT_ERRORS = [
    # the same validator on a value below its minimum is the client's own invalid parameter, not a length refusal
    ("Malformed input request: #/max_tokens: 0 is not greater or equal to 1, please reformat your input and try again.",
     None, None, {}),
    # a share, not a count ("50%"): no cap read
    ("max_tokens cannot exceed 50% of the context budget set by the operator", None, None, {}),
]

WRAPPERS = {
    "bare": lambda t: t,
    "litellm-bad-request": lambda t: "litellm.BadRequestError: DatabricksException - " + t,
    "json-body": lambda t: json.dumps({"error_code": "BAD_REQUEST", "message": t}),
    "python-repr": lambda t: "Error code: 400 - " + str({"error": {"message": t, "type": "BadRequestError", "code": 400}}),
    "sse-error": lambda t: "event: error\ndata: " + json.dumps({"type": "error", "error": {"message": t}}) + "\n\n",
    "router-suffix": lambda t: t + "\nReceived Model Group=fast\nAvailable Model Group Fallbacks=None LiteLLM Retried: 2 times",
}


@pytest.mark.parametrize("wrapper", sorted(WRAPPERS))
@pytest.mark.parametrize(("text", "family", "kind", "fields"), ROUND3_FAULTS + ROUND3_KEPT + ROUND3_NOT_ERRORS,
                         ids=[f"{i}-{w[1]}" for i, w in enumerate(ROUND3_FAULTS + ROUND3_KEPT + ROUND3_NOT_ERRORS)])
def test_round3_message_parses_with_its_meaning_in_any_wrapper(text, family, kind, fields, wrapper):
    assert _view(parse_context_error(WRAPPERS[wrapper](text))) == _expected(family, kind, fields)


# Cut right after a new row's last number (a relayed body cut at a fixed length, bare or with a truncation mark): the
# row still reads, the cut number as a floor. Before: the DeepSpeed wording needed its closing sentence (None).
ROUND3_CUT = [
    ("Input with size 5000 exceeds maximum length of 40",
     "deepspeed-input-size", K.PROMPT_OVER_WINDOW,
     {"prompt_tokens": Number(5000), "printed_limit": Limit(40, M.KV_CAPACITY, LB)}),
    ("Input with size 5000 exceeds maximum length of 40...",
     "deepspeed-input-size", K.PROMPT_OVER_WINDOW,
     {"prompt_tokens": Number(5000), "printed_limit": Limit(40, M.KV_CAPACITY, LB)}),
    ("max_tokens (10000) cannot exceed 81 [truncated]",
     "max-tokens-cap", K.OUTPUT_OVER_LIMIT,
     {"output_tokens": Number(10000), "printed_limit": Limit(81, M.OUTPUT_LIMIT, LB)}),
]


@pytest.mark.parametrize(("text", "family", "kind", "fields"), ROUND3_CUT, ids=[f"cut-{i}" for i in range(len(ROUND3_CUT))])
def test_round3_cut_message_reads_its_floor(text, family, kind, fields):
    assert _view(parse_context_error(text)) == _expected(family, kind, fields)

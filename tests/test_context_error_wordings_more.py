"""Context-length error parsing (pure), second part: wordings seen in 2025-2026 and the faults of a
breaker's report (items 4-8): more servers' wordings with their numbers and meanings, numbers cut
mid-digits (never read as exact), dot thousands separators, field names in any quotes, throttling
look-alikes. Every wording is checked with its near variants (case, trailing period, thousands
separators, wrappers)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from litellm_kvwarm.context_errors import (
    MAX_CUT_EXTENSION,
    MAX_SCAN_CHARS,
    Certainty,
    ContextError,
    ErrorKind,
    Limit,
    LimitMeaning,
    Number,
    parse_context_error,
)
from context_error_view import FIELDS, SLOTS, view as _view  # noqa: F401
from litellm_kvwarm.learned_limits import LimitKind, limit_from_error

SHARED_DATA = Path(__file__).resolve().parent / "data" / "context_errors.json"
ENTRIES = json.loads(SHARED_DATA.read_text(encoding="utf-8"))
POSITIVE = [e["message"] for e in ENTRIES if e["kind"] in ("numbers", "no_numbers")]

EXACT, LB, UB = Certainty.EXACT, Certainty.LOWER_BOUND, Certainty.UPPER_BOUND
K = ErrorKind


# ---------------------------------------------------------------- item 4: wordings and their meaning

# (text, family, kind, {field: expected}); fields not named must be None.
WORDINGS = [
    # llama-server / LM Studio: the KV cache filled (HTTP 500), no numbers, not a prompt-alone refusal
    ('{"error":{"code":500,"message":"Context size has been exceeded.","type":"server_error"}}',
     "llamacpp-context-exceeded", K.UNKNOWN, {}),
    ("The model has crashed without additional information. (Exit code: 18446744072635812000). Context size has "
     "been exceeded.", "llamacpp-context-exceeded", K.UNKNOWN, {}),
    # Ollama: an excess over the window, never the window itself
    ("prompt too long; exceeded max context length by 4021 tokens", "ollama-excess", K.PROMPT_OVER_WINDOW,
     {"excess_tokens": Number(4021)}),
    ('Ollama API error 400: {"StatusCode":400,"Status":"400 Bad Request","error":"prompt too long; exceeded max '
     'context length by 4 tokens"}', "ollama-excess", K.PROMPT_OVER_WINDOW, {"excess_tokens": Number(4)}),
    ("400 `prompt too long; exceeded max context length by 100918 tokens`", "ollama-excess", K.PROMPT_OVER_WINDOW,
     {"excess_tokens": Number(100918)}),
    ("prompt too long; exceeded max context length by 1 token.", "ollama-excess", K.PROMPT_OVER_WINDOW,
     {"excess_tokens": Number(1)}),
    ("prompt too long; exceeded context length", "ollama-excess", K.UNKNOWN, {}),
    ("too many tokens: size limit exceeded by 1200 tokens. Try using shorter or fewer inputs, or setting "
     "prompt_truncation='AUTO'.", "cohere-excess", K.PROMPT_OVER_WINDOW, {"excess_tokens": Number(1200)}),
    # Together (no leading "The") and SGLang
    ("Input (300000 tokens) is longer than the model's context length (128000 tokens)", "sglang-context-length",
     K.PROMPT_OVER_WINDOW, {"window": Number(128000), "prompt_tokens": Number(300000)}),
    ("400 The input (516368 tokens) is longer than the model's context length (262144 tokens).",
     "sglang-context-length", K.PROMPT_OVER_WINDOW, {"window": Number(262144), "prompt_tokens": Number(516368)}),
    ("input (5 tokens) is longer than the models context length (4 tokens)", "sglang-context-length",
     K.PROMPT_OVER_WINDOW, {"window": Number(4), "prompt_tokens": Number(5)}),
    ("The input (1 token) is longer than the model\u2019s context length (0 tokens).", "sglang-context-length",
     K.PROMPT_OVER_WINDOW, {"window": Number(0), "prompt_tokens": Number(1)}),
    # Mistral
    ("Prompt contains 300000 tokens and 0 images too large for model with 262144 maximum context length",
     "mistral", K.PROMPT_OVER_WINDOW, {"window": Number(262144), "prompt_tokens": Number(300000)}),
    ("Prompt contains 300000 tokens and 2 images, too large for model with 262144 maximum context length.",
     "mistral", K.PROMPT_OVER_WINDOW, {"window": Number(262144), "prompt_tokens": Number(300000)}),
    ("Prompt contains 140000 tokens which is too large for model with 131072 maximum context length", "mistral",
     K.PROMPT_OVER_WINDOW, {"window": Number(131072), "prompt_tokens": Number(140000)}),
    ("Prompt contains 1 token, too large for model with 0 maximum context length", "mistral",
     K.PROMPT_OVER_WINDOW, {"window": Number(0), "prompt_tokens": Number(1)}),
    ("Prompt is too large for model with 32768 maximum context length", "mistral", K.PROMPT_OVER_WINDOW,
     {"window": Number(32768)}),
    # OpenRouter / Poolside (Baseten): an input limit, not the window
    ("Provider returned error: Input length 131393 exceeds the maximum allowed input length of 131040 tokens.",
     "baseten-input-length", K.PROMPT_OVER_WINDOW,
     {"prompt_tokens": Number(131393), "printed_limit": Limit(131040, LimitMeaning.INPUT_LIMIT)}),
    ("Input length 2 exceeds maximum allowed input length of 1 token.", "baseten-input-length",
     K.PROMPT_OVER_WINDOW, {"prompt_tokens": Number(2), "printed_limit": Limit(1, LimitMeaning.INPUT_LIMIT)}),
    # DS4 server
    ("Prompt has 200000 tokens, but the configured context size is 131072 tokens", "ds4", K.PROMPT_OVER_WINDOW,
     {"window": Number(131072), "prompt_tokens": Number(200000)}),
    ("400 The prompt has 256468 tokens, but the configured context size is 256000 tokens.", "ds4",
     K.PROMPT_OVER_WINDOW, {"window": Number(256000), "prompt_tokens": Number(256468)}),
    # OpenAI-compatible "Input length (P) exceeds model's maximum context length (W)."
    ("Input length (265330) exceeds model's maximum context length (262144).", "input-length-exceeds-context",
     K.PROMPT_OVER_WINDOW, {"window": Number(262144), "prompt_tokens": Number(265330)}),
    ('Error: 400 {"error":{"message":"Input length (265330) exceeds model\'s maximum context length (262144).",'
     '"type":"BadRequestError","param":null,"code":400}}', "input-length-exceeds-context", K.PROMPT_OVER_WINDOW,
     {"window": Number(262144), "prompt_tokens": Number(265330)}),
    ("Input length (10384 tokens) exceeds model's maximum context length (10240 tokens).",
     "input-length-exceeds-context", K.PROMPT_OVER_WINDOW, {"window": Number(10240), "prompt_tokens": Number(10384)}),
    ("Input sequence length (5000) exceeds model's maximum context length (4096).", "input-length-exceeds-context",
     K.PROMPT_OVER_WINDOW, {"window": Number(4096), "prompt_tokens": Number(5000)}),
    ("exceeds the model's maximum context length of 4096 tokens.", "generic", K.UNKNOWN, {"window": Number(4096)}),
    ("Requested token count exceeds the model's maximum context length of 131072 tokens.",
     "sglang-requested-total", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {"window": Number(131072)}),
    # vLLM 0.4-0.6 without max_tokens: P is the prompt
    ("This model's maximum context length is 32768 tokens. However, you requested 32818 tokens in the messages, "
     "Please reduce the length of the messages.", "vllm-requested-in-messages", K.PROMPT_OVER_WINDOW,
     {"window": Number(32768), "prompt_tokens": Number(32818)}),
    ("This model's maximum context length is 4096 tokens. However, you requested 4096 tokens in the prompt, "
     "Please reduce the length of the prompt.", "vllm-requested-in-messages", K.PROMPT_OVER_WINDOW,
     {"window": Number(4096), "prompt_tokens": Number(4096)}),
    # OpenAI with the window printed
    ("Your input exceeds the context window of 128000 tokens", "openai-context-window", K.PROMPT_OVER_WINDOW,
     {"window": Number(128000)}),
    ("Your input exceeds the context window of this model. Please adjust your input and try again.", "generic",
     K.UNKNOWN, {}),
    # DeepSeek: T is prompt + output, the split unknown
    ("This model's maximum context length is 65536 tokens. However, you requested 81920 tokens. Please reduce the "
     "length of the messages or completion.", "deepseek-requested-total", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW,
     {"window": Number(65536), "total_tokens": Number(81920)}),
    ("maximum context length is 128000 tokens; requested 142912 tokens.", "deepseek-requested-total",
     K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {"window": Number(128000), "total_tokens": Number(142912)}),
    # OpenAI/vLLM breakdowns: "in the prompt", "in the tools", "None in the completion"
    ("This model's maximum context length is 4096 tokens. However, you requested 5016 tokens (5000 in the prompt, "
     "16 in the completion). Please reduce the length of the prompt or completion.", "openai-requested",
     K.PROMPT_OVER_WINDOW, {"window": Number(4096), "prompt_tokens": Number(5000), "output_tokens": Number(16),
                            "total_tokens": Number(5016)}),
    ("This model's maximum context length is 128000 tokens. However, you requested 131000 tokens (120000 in the "
     "messages, 3000 in the tools, and 8000 in the completion). Please reduce the length.",
     "openai-requested-functions", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW,
     {"window": Number(128000), "prompt_tokens": Number(123000), "output_tokens": Number(8000),
      "total_tokens": Number(131000)}),
    ("This model's maximum context length is 16384 tokens. However, you requested 20000 tokens (20000 in the "
     "messages, None in the completion). Please reduce the length of the messages or completion.",
     "openai-requested", K.PROMPT_OVER_WINDOW,
     {"window": Number(16384), "prompt_tokens": Number(20000), "total_tokens": Number(20000)}),
    # vLLM 0.18-style check worded without "at least": exact
    ("This model's maximum context length is 10240 tokens. However, you requested 4000 output tokens and your "
     "prompt contains 10200 tokens.", "vllm-0.18-0.31", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW,
     {"window": Number(10240), "prompt_tokens": Number(10200), "output_tokens": Number(4000)}),
    # Kimi For Coding, both wordings
    ("total message size 2306631 exceeds limit 2097152.", "moonshot", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW,
     {"window": Number(2097152), "total_tokens": Number(2306631)}),
    # Gemini without parentheses
    ("INPUT TOKEN COUNT 90001 EXCEEDS THE MAXIMUM ALLOWED", "gemini", K.PROMPT_OVER_WINDOW,
     {"prompt_tokens": Number(90001)}),
    # z.ai
    ('{"code":"1261","message":"Prompt too long"}', "generic", K.UNKNOWN, {}),
]


def _variants(text: str) -> dict[str, str]:
    """Near variants that must read the same: case, trailing period, separators, wrappers."""
    grouped = lambda sep: re.sub(  # noqa: E731
        r"(?<![\d.])\d{4,}(?![\d.])", lambda m: f"{int(m.group(0)):,}".replace(",", sep), text
    )
    body = json.dumps({"error": {"message": text, "type": "BadRequestError", "code": 400}})
    out = {
        "as-is": text,
        "upper": text.upper(),
        "lower": text.lower(),
        "thousands-comma": grouped(","),
        "thousands-dot": grouped("."),
        "thousands-nbsp": grouped("\u202f"),
        "json": body,
        "litellm": "litellm.BadRequestError: OpenAIException - " + json.dumps(body),
        "newlines": text.replace(" ", "\n", 4),
    }
    if text.endswith(".") and not text[-2:-1].isdigit():  # "...limit 2097152." without "." would end in a number
        out["no-final-period"] = text[:-1]
    elif not text[-1:].isdigit() and not text.endswith("."):
        out["final-period"] = text + "."
    return out


@pytest.mark.parametrize(
    "text, family, kind, expected", WORDINGS, ids=[f"{i:02d}-{w[1]}" for i, w in enumerate(WORDINGS)]
)
def test_wordings_and_their_variants(text, family, kind, expected):
    r = parse_context_error(text)
    assert r is not None, "not recognised"
    assert (r.family, r.kind) == (family, kind)
    for name in SLOTS:
        assert getattr(r, name) == expected.get(name), name
    for variant, mangled in _variants(text).items():
        assert _view(parse_context_error(mangled)) == _view(r), variant


def test_an_excess_is_not_a_window_but_gives_one_with_the_exact_prompt():
    r = parse_context_error("prompt too long; exceeded max context length by 4021 tokens")
    assert r.window is None and r.prompt_tokens is None and r.printed_limit is None
    assert limit_from_error(r) is None  # nothing to learn from the text alone
    assert r.limit_given_prompt(36789) == Number(32768)  # the refused prompt's exact size − the excess
    assert r.limit_given_prompt(None) is None
    assert r.limit_given_prompt(4021) is None  # not positive: not a limit
    cut = parse_context_error("prompt too long; exceeded max context length by 40")  # cut before "tokens"
    assert cut.family == "ollama-excess" and cut.excess_tokens is None and cut.limit_given_prompt(36789) is None
    cut = parse_context_error("prompt too long; exceeded max context length by 40 tokens [truncated]")
    assert cut.excess_tokens == Number(40) and cut.limit_given_prompt(36789) == Number(36749)


def test_singular_and_plural_read_alike():
    pairs = [
        ("Input (1 token) is longer than the model's context length (1 token).",
         "Input (1 tokens) is longer than the model's context length (1 tokens)."),
        ("Prompt has 1 token, but the configured context size is 0 tokens.",
         "Prompt has 1 tokens, but the configured context size is 0 tokens."),
        ("Input length 2 exceeds the maximum allowed input length of 1 token.",
         "Input length 2 exceeds the maximum allowed input length of 1 tokens."),
    ]
    for one, many in pairs:
        assert _view(parse_context_error(one)) == _view(parse_context_error(many)) != None  # noqa: E711


def test_input_limits_are_learned_as_input_and_windows_as_total():
    baseten = parse_context_error("Input length 131393 exceeds the maximum allowed input length of 131040 tokens.")
    assert (limit_from_error(baseten).kind, limit_from_error(baseten).tokens) == (LimitKind.INPUT, 131040)
    ds4 = parse_context_error("Prompt has 200000 tokens, but the configured context size is 131072 tokens.")
    assert (limit_from_error(ds4).kind, limit_from_error(ds4).tokens) == (LimitKind.TOTAL, 131072)
    kv_full = parse_context_error("Context size has been exceeded.")
    assert limit_from_error(kv_full, 9000) is None  # may have filled during generation: no input bound


# ---------------------------------------------------------------- item 5: a number cut mid-digits

_NUMBER_TOKEN = re.compile(r"\d(?:[\d,_' .\u202f]*\d)?")


def _sweep_texts() -> list[str]:
    texts = list(POSITIVE)
    for message in POSITIVE:
        texts.append(re.sub(r"(?<![\d.])\d{4,}(?![\d.])", lambda m: f"{int(m.group(0)):,}", message))
        texts.append(re.sub(r"(?<![\d.])\d{4,}(?![\d.])", lambda m: f"{int(m.group(0)):,}".replace(",", "."), message))
        texts.append(json.dumps({"error": {"message": message}}))
    return texts


def _wrong_exact(cut: ContextError, whole: ContextError | None) -> list[str]:
    """Slots the cut text reads exact (or as a character count) with a value the whole text does
    not have: a number cut mid-digits read as exact."""
    wrong = []
    for name in SLOTS:
        got = getattr(cut, name)
        if got is None:
            continue
        want = getattr(whole, name) if whole is not None else None
        if isinstance(got, int):  # character counts carry no certainty: never from a cut number
            if got != want:
                wrong.append(f"{name}={got} (whole text: {want})")
        elif got.certainty is EXACT and (want is None or want.value != got.value):
            wrong.append(f"{name}={got} (whole text: {want})")
    return wrong


def test_truncation_sweep_never_reads_a_cut_number_as_exact():
    """Every positive sample (also with thousands separators and JSON-wrapped) cut at every position
    inside a number's digits: no parsed number is exact with a value the uncut text does not give."""
    failures, cuts = [], 0
    for text in _sweep_texts():
        whole = parse_context_error(text)
        for number in _NUMBER_TOKEN.finditer(text):
            for end in range(number.start() + 1, number.end()):
                cuts += 1
                cut = parse_context_error(text[:end])
                if cut is not None and (wrong := _wrong_exact(cut, whole)):
                    failures.append(f"{text[max(0, end - 80):end]!r}: {wrong}")
    assert cuts > 3000  # the sweep is not empty
    assert not failures, f"{len(failures)} cuts read as exact:\n" + "\n".join(failures[:10])


@pytest.mark.parametrize(
    "text, slot, value",
    [
        ("max_tokens=5000 cannot be greater than max_model_len=4", "window", 4),
        ("input length and `max_tokens` exceed context limit: 180000 + 40000 > 2", "window", 2),
        ("Current length is 69553 while limit is 6", "window", 6),
        ("Input validation error: `inputs` must have less than 4096 tokens. Given: 4", "prompt_tokens", 4),
        ("input length and max_tokens exceed context limit: 180000 + 40000 > 200,0", "window", 200),
        ("input length and max_tokens exceed context limit: 180000 + 40000 > 200.", "window", 200),
        ("prompt token count of 139639 exceeds the limit of 1...", "printed_limit", 1),
        ("prompt token count of 139639 exceeds the limit of 1 [truncated]", "printed_limit", 1),
        ("Input prompt (15681 tokens) is too long and exceeds limit of 25\u2026", "window", 25),
        ("max_tokens must be at least 1, got -18", "output_tokens", -18),
    ],
)
def test_a_number_ending_the_text_is_a_bound_and_never_learned(text, slot, value):
    r = parse_context_error(text)
    got = getattr(r, slot)
    assert got.value == value
    assert got.certainty is (UB if value < 0 else LB)
    if slot in ("window", "printed_limit"):
        assert limit_from_error(r) is None  # a cut window or input limit is never learned


def test_a_closed_number_at_the_end_stays_exact():
    for text in ("max_tokens=5000 cannot be greater than max_model_len=4096.",
                 "max_tokens=5000 cannot be greater than max_model_len=4096. None",
                 '{"message": "Current length is 69553 while limit is 65536"}'):
        assert parse_context_error(text).window == Number(4096 if "4096" in text else 65536)


@pytest.mark.parametrize("inside", range(1, 7))
def test_the_scan_cut_never_splits_a_number(inside):
    """The breaker's example: the scan limit falls inside "200000" (or right after it); the number is
    read whole, with the character after it that shows it ended."""
    message = "input length and `max_tokens` exceed context limit: 180000 + 40000 > 200000, decrease input length"
    at = message.index("200000") + inside
    r = parse_context_error("x" * (MAX_SCAN_CHARS - at) + message)
    assert r.window == Number(200000) and r.prompt_tokens == Number(180000)
    assert limit_from_error(r).tokens == 200000


@pytest.mark.parametrize("message", POSITIVE[::8])
def test_the_scan_cut_anywhere_in_a_sample_never_reads_exact_wrong(message):
    whole = parse_context_error(message)
    for number in _NUMBER_TOKEN.finditer(message):
        for at in range(number.start() + 1, number.end() + 1):
            cut = parse_context_error("x" * (MAX_SCAN_CHARS - at) + message)
            assert cut is None or not _wrong_exact(cut, whole), (message[:at], cut)


def test_the_scan_extension_is_bounded():
    digits = "9" * (MAX_CUT_EXTENSION * 4)
    text = "x" * (MAX_SCAN_CHARS - 10) + " maximum context length is " + digits + " tokens"
    r = parse_context_error(text)
    assert r is None or r.window is None or r.window.certainty is not EXACT


# ---------------------------------------------------------------- item 6: dot thousands

DOT_THOUSANDS = [
    ("prompt is too long: 210.000 tokens > 200.000 maximum", {"prompt_tokens": Number(210000),
                                                              "window": Number(200000)}),
    ("input length and max_tokens exceed context limit: 180.000 + 40.000 > 200.000, decrease input length",
     {"prompt_tokens": Number(180000), "output_tokens": Number(40000), "window": Number(200000)}),
    ("The input token count (1.200.000) exceeds the maximum number of tokens allowed (1.048.576).",
     {"prompt_tokens": Number(1200000), "printed_limit": Limit(1048576, LimitMeaning.INPUT_LIMIT)}),
    ("Requested tokens (2.285) exceed context window of 2.048.", {"prompt_tokens": Number(2285),
                                                                  "window": Number(2048)}),
    ("max_tokens=5.000 cannot be greater than max_model_len=4.096. Please request fewer output tokens.",
     {"output_tokens": Number(5000), "window": Number(4096)}),
    # TensorRT-LLM's float prompt length (prompt_len / cp_size) keeps its fraction dropped
    ("The sum of prompt length (256.125), query length (0) should not exceed max_num_tokens (8.192)",
     {"prompt_tokens": Number(256), "printed_limit": Limit(8192, LimitMeaning.BATCH_LIMIT)}),
    ("The sum of prompt length (5000.0) and query length (0) max_tokens (16) should not exceed max_seq_len (4096)",
     {"prompt_tokens": Number(5000), "output_tokens": Number(16), "window": Number(4096)}),
    ("The sum of prompt length (3000.5), query length (200) should not exceed max_num_tokens (3072)",
     {"prompt_tokens": Number(3200), "printed_limit": Limit(3072, LimitMeaning.BATCH_LIMIT)}),
    ("`default_max_tokens` (-152) must be greater than 0, `default_max_tokens` (-152) = max_seq_len (8192) - "
     "`splited_prompt_len` (512.125)", {"prompt_tokens": Number(512), "window": Number(8192)}),
]


@pytest.mark.parametrize("text, expected", DOT_THOUSANDS, ids=[f"dots-{i}" for i in range(len(DOT_THOUSANDS))])
def test_dot_thousands_are_thousands(text, expected):
    r = parse_context_error(text)
    for name, value in expected.items():
        assert getattr(r, name) == value, name


def test_dot_thousands_never_teach_a_tiny_window():
    observed = limit_from_error(parse_context_error("prompt is too long: 210.000 tokens > 200.000 maximum"))
    assert (observed.kind, observed.tokens) == (LimitKind.TOTAL, 200000)


def test_version_numbers_and_decimals_are_not_thousands():
    r = parse_context_error("litellm 1.108.7: prompt is too long: 210000 tokens > 200000 maximum (took 0.123 s)")
    assert (r.prompt_tokens, r.window) == (Number(210000), Number(200000))


# ---------------------------------------------------------------- item 7: field names in any quotes

QUOTES = [("\u201c", "\u201d"), ("\u201e", "\u201c"), ("\u00ab", "\u00bb"), ("\u2039", "\u203a"), ('"', '"'),
          ("'", "'"), ("`", "`"), ("\\\"", "\\\"")]
QUOTED = [
    ("Input validation error: {o}inputs{c} tokens + {o}max_new_tokens{c} must be <= 8192. Given: 9000 {o}inputs{c} "
     "tokens and 100 {o}max_new_tokens{c}", "tgi-total",
     {"window": Number(8192), "prompt_tokens": Number(9000), "output_tokens": Number(100)}),
    ("Input validation error: {o}inputs{c} must have less than 4096 tokens. Given: 4545.", "tgi-max-input",
     {"prompt_tokens": Number(4545), "printed_limit": Limit(4096, LimitMeaning.INPUT_LIMIT)}),
    ("Input validation error: {o}max_new_tokens{c} must be <= 1024. Given: 2048.", "tgi-max-new-tokens",
     {"output_tokens": Number(2048), "printed_limit": Limit(1024, LimitMeaning.OUTPUT_BUDGET)}),
    ("input length and {o}max_tokens{c} exceed context limit: 180000 + 40000 > 200000, decrease input length or "
     "{o}max_tokens{c} and try again", "anthropic-input-and-max-tokens",
     {"window": Number(200000), "prompt_tokens": Number(180000), "output_tokens": Number(40000)}),
    ("{o}max_tokens{c} or {o}max_completion_tokens{c} is too large: 4096. This model{a}s maximum context length is "
     "16384 tokens and your request has 12300 input tokens (4096 > 16384 - 12300).", "vllm-max-tokens-too-large",
     {"window": Number(16384), "prompt_tokens": Number(12300), "output_tokens": Number(4096)}),
]


@pytest.mark.parametrize("quote", QUOTES, ids=[f"quote-{i}" for i in range(len(QUOTES))])
@pytest.mark.parametrize("template, family, expected", QUOTED, ids=[q[1] for q in QUOTED])
def test_field_names_in_any_quotes(quote, template, family, expected):
    for apostrophe in ("'", "\u2019", "\u02bc"):
        text = template.format(o=quote[0], c=quote[1], a=apostrophe)
        for wrapped in (text, json.dumps({"error": {"message": text}})):
            r = parse_context_error(wrapped)
            assert r is not None and r.family == family, wrapped
            for name, value in expected.items():
                assert getattr(r, name) == value, (name, wrapped)


def test_invisible_and_full_width_characters():
    full_width = "\uff1a\uff12\uff11\uff10\uff10\uff10\uff10"  # ": 210000" in full-width forms
    r = parse_context_error("prompt is too long" + full_width + " tok\u200bens > 200000 maximum")
    assert (r.prompt_tokens, r.window) == (Number(210000), Number(200000))


# ---------------------------------------------------------------- item 8: throttling is not a context error

THROTTLING = [
    "ThrottlingException: Too many tokens, please wait before trying again.",
    "An error occurred (ThrottlingException) when calling the InvokeModel operation (reached max retries: 4): Too "
    "many tokens, please wait before trying again.",
    'litellm.APIConnectionError: BedrockException - {"message":"Too many tokens, please wait before trying again."}',
    "Too many tokens, please wait before trying again.",
    "Throttling error: Too many tokens",
    "Service unavailable: too many tokens",
    "Rate limit: too many tokens",
    "too many tokens per minute",
    "Too many tokens processed per minute for this model",
    "Too many tokens in the last minute, please slow down",
    "TOO MANY TOKENS, PLEASE WAIT BEFORE TRYING AGAIN",
]


@pytest.mark.parametrize("text", THROTTLING, ids=[f"throttling-{i:02d}" for i in range(len(THROTTLING))])
def test_throttling_worded_with_tokens_is_not_a_context_error(text):
    assert parse_context_error(text) is None
    assert parse_context_error(json.dumps({"message": text})) is None


@pytest.mark.parametrize(
    "text, family",
    [
        ("ValidationException: Input is too long for requested model.", "bedrock"),
        ('litellm.BadRequestError: BedrockException - {"message":"Input is too long for requested model."}',
         "bedrock"),
        ('litellm.BadRequestError: BedrockException - {"message":"too many input tokens"}', "generic"),
        ("The model returned the following errors: prompt is too long: 205000 tokens > 200000 maximum",
         "anthropic-prompt-too-long"),
        ("too many tokens in request", "generic"),
    ],
)
def test_real_bedrock_context_errors_still_parse(text, family):
    r = parse_context_error(text)
    assert r is not None and r.family == family


# ---------------------------------------------------------------- item 14 (reported only): output caps


@pytest.mark.parametrize(
    "text, output, cap",
    [
        ("max_tokens is too large: 9000. This model supports at most 4096 completion tokens, whereas you provided "
         "9000.", 9000, 4096),
        ("max_tokens: 9000 > 4096, which is the maximum allowed number of output tokens for claude-3-5-sonnet",
         9000, 4096),
        ("Invalid max_tokens value, the valid range of max_tokens is [1, 4096]", None, 4096),
    ],
)
def test_output_caps_parse_as_a_cap_on_the_output(text, output, cap):
    r = parse_context_error(text)
    assert r.kind is K.OUTPUT_OVER_LIMIT and r.window is None
    assert r.printed_limit == Limit(cap, LimitMeaning.OUTPUT_LIMIT)
    assert r.output_tokens == (Number(output) if output is not None else None)


# ---------------------------------------------------------------- robustness of the new normalisation

HOSTILE = [
    "'a' " * 6000,
    "a_" * 10000,
    "'" + "a_b" * 6000 + "'",
    "1.000." * 4000,
    "\u201c" * 20000,
    "x" * (MAX_SCAN_CHARS - 3) + "\\u202" + "1" * 100,
    "x" * (MAX_SCAN_CHARS - 2) + "&#4" + "9;" * 100,
    "prompt too long; exceeded max context length by " + "9" * 400 + " tokens",
]


@pytest.mark.parametrize("text", HOSTILE, ids=[f"hostile-{i}" for i in range(len(HOSTILE))])
def test_hostile_text_never_raises(text):
    r = parse_context_error(text)
    assert r is None or isinstance(r, ContextError)

"""Context-length error parsing: error text from any LLM server → what overflowed, with numbers (pure).

Contract: :func:`parse_context_error` takes the text of an error (the server's message, the
JSON body, or either wrapped by LiteLLM, e.g. ``litellm.ContextWindowExceededError:
litellm.BadRequestError: Hosted_vllmException - {"error": {"message": "..."}}``, with or
without JSON-escaped quotes) and returns a frozen :class:`ContextError`, or ``None`` when the
text is not a context-length error. It never raises on a ``str`` and reads only the first
:data:`MAX_SCAN_CHARS` characters. All numbers are **tokens** unless a field says characters.

How it decides, like LiteLLM's ``is_error_str_context_window_exceeded`` but with numbers:

1. The text is normalised: JSON/Unicode/HTML escapes undone (``\\"`` ``\\n`` ``\\u003e``
   ``&gt;``), backticks dropped, whitespace collapsed. Numbers may carry thousands
   separators (``16,384``).
2. :data:`NEGATIVES` (known look-alikes: rate limits, TPM, quota, budget, auth, content
   filter, string-length and tool-count validation) are checked first: any hit → ``None``.
3. :data:`ROWS` are tried in order; the first whose pattern matches wins. A row names its
   family, maps named regex groups to meanings and certainties, and may add a refinement.
   A new wording is one more row.

Every number says how sure it is (:class:`Certainty`): vLLM's "at least N input tokens" is a
**lower bound** (vLLM truncates tokenization at ``max_input + 1``), OpenRouter's "about N" is
approximate. A printed number that is *not* the model's window (prompt + output) goes to
``printed_limit`` with its :class:`LimitMeaning`, never to ``window``.

The table (family — wording — where seen; W window, P prompt, C requested output, T total,
L a printed limit that is not the window):

vLLM (and servers that reuse its text)
  * ``vllm-chars-precheck`` — "maximum context length is W tokens. However, [you requested C
    output tokens and] your prompt contains N characters (more than M characters, which is
    the upper bound for L input tokens)": vLLM 0.18+ character pre-check. N and M are
    characters (``prompt_chars``/``char_limit``), never tokens; L is W − C (INPUT_BUDGET).
  * ``vllm-0.18-0.31`` — "maximum context length is W tokens. However, you requested C output
    tokens and your prompt contains at least P input tokens, for a total of at least T
    tokens." P and T are LOWER_BOUND.
  * ``vllm-0.32+`` — "... However, your prompt contains at least P input tokens, which
    exceeds this limit even without any output tokens." P is LOWER_BOUND.
  * ``vllm-max-tokens-too-large`` — "'max_tokens' or 'max_completion_tokens' is too large: C.
    This model's maximum context length is W tokens and your request has P input tokens
    (C > W - P)": vLLM 0.10–0.17.
  * ``vllm-you-passed`` — "You passed P input tokens and requested C output tokens. However,
    the model's context length is only W tokens, resulting in a maximum input length of L
    tokens": vLLM 0.10–0.17 (also seen from hosted vLLM gateways in 2026). L = W − C
    (INPUT_BUDGET); P == L + 1 means vLLM truncated the tokenization, so P is LOWER_BOUND.
  * ``vllm-request-has`` — "maximum context length is X tokens. However, your request has P
    input tokens": vLLM 0.10–0.15. For ``/v1/completions`` on 0.11–0.15 X is W − max_tokens,
    for chat it is W: reported as ``window`` with certainty LOWER_BOUND (the window is ≥ X).
  * ``vllm-max-tokens-over-window`` — "max_tokens=C cannot be greater than max_model_len=W"
    (0.32+), and ``vllm-max-tokens-over-window-old`` "max_tokens=Ccannot be greater than
    max_model_len=max_total_tokens=W" (0.18–0.31 and main before PR #40324, 2026-04).
  * ``vllm-output-below-one`` — "max_tokens must be at least 1, got N": N ≤ 0 is the output
    budget the server computed (asked for, or window − prompt when max_tokens was absent);
    reported in ``output_tokens`` as printed.
  * ``vllm-decoder-prompt`` — "The decoder prompt (length P) is longer than the maximum model
    length of W": vLLM V1 engine (~0.7–0.10, multimodal models).
  * ``vllm-v0-scheduler`` — "Input prompt (P tokens) is too long and exceeds limit of W": V0
    scheduler log line (≤0.7; the limit equals max_model_len because V0 requires
    max_num_batched_tokens ≥ max_model_len without chunked prefill).
OpenAI and OpenAI-compatible
  * ``openai-requested`` — "maximum context length is W tokens. However, you requested T tokens
    (P in the messages, C in the completion)": OpenAI chat (2023–), vLLM ≤0.9, DeepSeek,
    Azure, FastChat, DeepInfra.
  * ``openai-requested-functions`` — "... (M in the messages, F in the functions, and C in the
    completion)": OpenAI functions API (2023–2025); ``prompt_tokens`` is M + F.
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
    batch limit (REQUEST_LIMIT).
  * ``openrouter`` — "This endpoint's maximum context length is W tokens. However, you
    requested about T tokens (P of text input, C in the output)": P, T APPROXIMATE.
  * ``sglang-requested-total`` — "Requested token count exceeds the model's maximum context
    length of W tokens. You requested a total of T tokens: P tokens from the input messages
    and C tokens for the completion": SGLang ≥0.4.3 (also Chutes, Fireworks).
Other servers
  * ``anthropic-prompt-too-long`` "prompt is too long: P tokens > W maximum";
    ``anthropic-input-and-max-tokens`` "input length and max_tokens exceed context limit: P +
    C > W"; ``anthropic-max-output`` "max_tokens: C > L, which is the maximum allowed number of
    output tokens" (OUTPUT_LIMIT). Also Bedrock/Vertex Claude.
  * ``gemini`` "The input token count (P) exceeds the maximum number of tokens allowed (L)";
    ``vertex-gemini`` "the input token count is P but model only supports up to L": L is the
    model's input token limit (INPUT_LIMIT; output has its own limit).
  * ``bedrock`` "Input is too long for requested model" (no numbers); ``bedrock-max-length``
    "Malformed input request: expected maxLength: M, actual: N" (JSON-schema string length:
    characters, ``char_limit``/``prompt_chars``).
  * ``llamacpp-request`` "request (P tokens) exceeds the available context size (W tokens)";
    ``llamacpp`` "the request exceeds the available context size" with optional body fields
    ``n_prompt_tokens``/``n_ctx`` (PR #15780, 2025-09); ``llama-cpp-python`` "Requested tokens
    (P) exceed context window of W".
  * ``tgi-total`` "inputs tokens + max_new_tokens must be <= W. Given: P inputs tokens and C
    max_new_tokens" (W is max_total_tokens); ``tgi-max-input`` "inputs must have less than L
    tokens. Given: P" (L is max_input_length: INPUT_LIMIT); ``tgi-max-new-tokens``
    "max_new_tokens must be <= L. Given: C" (OUTPUT_LIMIT). Also Together AI, HF Inference.
  * ``sglang-context-length`` "The input (P tokens) is longer than the model's context length
    (W tokens)"; ``sglang-max-allowed`` "Input length (P tokens) exceeds the maximum allowed
    length (L tokens)": L = min(context_len, KV pool) − margin (KV_CAPACITY).
  * ``trtllm-input`` "Prompt length (P) exceeds maximum input length (L)" (INPUT_LIMIT);
    ``trtllm-sum`` "The sum of prompt length (P), query length (Q) should not exceed
    max_num_tokens (L)" (BATCH_LIMIT; max_seq_len there is the window).
  * ``lmstudio-input-length`` "Input length P exceeds context length W"; ``lmstudio-keep``
    "Trying to keep the first P tokens when context the overflows. However, the model is
    loaded with context length of only W tokens" (P LOWER_BOUND: the kept part of the prompt).
  * ``ollama-truncate`` log "truncating input prompt" limit=W prompt=P (num_ctx).
  * ``copilot`` "prompt token count of P exceeds the limit of L" (INPUT_LIMIT);
    ``github-models`` "Request body too large for X model. Max size: L tokens" (INPUT_LIMIT);
    ``dashscope`` "Range of input length should be [1, L]" (INPUT_LIMIT); ``xai`` "maximum
    prompt length is L but the request contains P tokens" (INPUT_LIMIT);
    ``generic-max-input-length`` "maximum input length is L tokens" and "Input too long: P
    input tokens, limit is L" (INPUT_LIMIT).
  * ``cerebras`` "Current length is T while limit is W" and ``moonshot`` "exceeded model token
    limit: W (requested: T)": T is what was requested, prompt + max_tokens (``total_tokens``).
  * ``mistral`` "Prompt contains P tokens [and D draft tokens], too large for model with W
    maximum context length"; ``fireworks`` "prompt is too long: P, model maximum context
    length: W"; ``cohere`` "total number of tokens in the prompt cannot exceed W - received P";
    ``rkllama`` "Prompt is P tokens but the model context window is W tokens";
    ``max-seq-len`` "length of prompt_tokens (P) must be less than max_seq_len (W)";
    ``textgen-truncated`` "Context length: W, max_new_tokens: C, available context length: L"
    (INPUT_BUDGET); ``candle-vllm`` "Requested max tokens C larger than available tokens L
    ... (P tokens reserved for prompt)" (L = W − P: OUTPUT_BUDGET); ``deepseek-max-tokens``
    "the valid range of max_tokens is [1, L]" (OUTPUT_LIMIT).
  * ``generic`` — no usable numbers ("context_length_exceeded", "exceeds the context window",
    "prompt is too long", MiniMax "context window exceeds limit", LM Studio "greater than the
    context length", "too many tokens", LiteLLM's own "ContextWindowExceededError", …); a
    bare "maximum context length is W tokens" keeps W.

A result whose text carries no numbers at all has kind :attr:`ErrorKind.UNKNOWN`.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from enum import Enum

__all__ = [
    "MAX_SCAN_CHARS",
    "NEGATIVES",
    "ROWS",
    "Certainty",
    "ContextError",
    "ErrorKind",
    "Limit",
    "LimitMeaning",
    "Number",
    "Row",
    "is_context_error",
    "parse_context_error",
]

#: Only this many leading characters are searched (bounds time on huge wrapped errors).
MAX_SCAN_CHARS = 20_000


class Certainty(str, Enum):
    """How a number relates to the true value."""

    EXACT = "exact"
    LOWER_BOUND = "lower_bound"  # the true value is at least this ("at least", "over", truncated count)
    UPPER_BOUND = "upper_bound"  # the true value is at most this (derived from a lower bound)
    APPROXIMATE = "approximate"  # "about"


class ErrorKind(str, Enum):
    """What the server refused."""

    PROMPT_PLUS_OUTPUT_OVER_WINDOW = "prompt_plus_output_over_window"  # prompt fits, prompt + requested output does not
    PROMPT_OVER_WINDOW = "prompt_over_window"  # the prompt alone is too long (for the window, or for printed_limit)
    OUTPUT_OVER_WINDOW = "output_over_window"  # requested output alone exceeds the window (max_tokens > max_model_len)
    OUTPUT_OVER_LIMIT = "output_over_limit"  # requested output exceeds the model's output cap (not the window)
    OUTPUT_BELOW_ONE = "output_below_one"  # output budget ≤ 0 ("max_tokens must be at least 1, got 0")
    UNKNOWN = "unknown"  # a context-length error whose text says too little to tell


class LimitMeaning(str, Enum):
    """What a printed limit that is not the window means (all in tokens)."""

    INPUT_LIMIT = "input_limit"  # most prompt tokens accepted, output counted separately (Gemini, TGI max_input_length)
    INPUT_BUDGET = "input_budget"  # window − requested output (vLLM "maximum input length of")
    OUTPUT_LIMIT = "output_limit"  # most output tokens per request (Anthropic, OpenAI max_tokens caps)
    OUTPUT_BUDGET = "output_budget"  # window − prompt (candle-vllm "available tokens")
    KV_CAPACITY = "kv_capacity"  # ≤ window, also capped by the KV-cache pool (SGLang max_req_input_len)
    BATCH_LIMIT = "batch_limit"  # engine per-step token budget (TensorRT-LLM max_num_tokens)
    REQUEST_LIMIT = "request_limit"  # tokens summed over a batch request (OpenAI embeddings)


@dataclass(frozen=True)
class Number:
    """A token count taken from the text, with how sure it is."""

    value: int
    certainty: Certainty = Certainty.EXACT


@dataclass(frozen=True)
class Limit:
    """A printed limit that is not the model's window, with what it means."""

    value: int
    meaning: LimitMeaning
    certainty: Certainty = Certainty.EXACT


@dataclass(frozen=True)
class ContextError:
    """A parsed context-length error. Token counts unless the name says characters.

    ``window``: the model's context window (prompt + output), only when the printed number is
    that window (certainty LOWER_BOUND when it may be smaller than the window, see
    ``vllm-request-has``). ``prompt_tokens``: the prompt (input) size. ``output_tokens``: the
    requested output (max_tokens) as the server saw it; ≤ 0 only with ``OUTPUT_BELOW_ONE``.
    ``total_tokens``: printed prompt + output. ``printed_limit``: a printed limit that is not
    the window. ``prompt_chars``/``char_limit``: character counts (never tokens).
    ``family``: the :data:`ROWS` entry that matched.
    """

    kind: ErrorKind
    family: str
    window: Number | None = None
    prompt_tokens: Number | None = None
    output_tokens: Number | None = None
    total_tokens: Number | None = None
    printed_limit: Limit | None = None
    prompt_chars: int | None = None
    char_limit: int | None = None

    @property
    def has_numbers(self) -> bool:
        """Whether any token count was printed (window, prompt, output, total or a limit)."""
        return any(
            x is not None
            for x in (self.window, self.prompt_tokens, self.output_tokens, self.total_tokens, self.printed_limit)
        )

    def output_room(self) -> Number | None:
        """Tokens the window leaves for output after this prompt: ``window − prompt``.

        EXACT when both are exact; UPPER_BOUND when the prompt is a lower bound. ``None`` when
        the window is not exactly known or the prompt is unknown or approximate.
        """
        w, p = self.window, self.prompt_tokens
        if w is None or p is None or w.certainty is not Certainty.EXACT:
            return None
        if p.certainty is Certainty.EXACT:
            return Number(w.value - p.value)
        if p.certainty is Certainty.LOWER_BOUND:
            return Number(w.value - p.value, Certainty.UPPER_BOUND)
        return None

    def fits_with(self, output_floor: int) -> bool | None:
        """Would this prompt plus ``output_floor`` output tokens fit the window?

        ``True``/``False`` when the printed numbers decide it, ``None`` when they do not.
        """
        room = self.output_room()
        if room is None:
            return None
        if room.value < output_floor:
            return False  # an upper bound on the room that is already too small
        return True if room.certainty is Certainty.EXACT else None


# ---------------------------------------------------------------- the table

#: A token count as printed: "16384", "16,384", "9351.0" (bounded: at most 20 digits).
NUM = r"(?:\d{1,3}(?:,\d{3}){1,6}(?![\d,])|\d{1,20}(?!\d))(?:\.0+(?!\d))?"

Refine = Callable[["dict[str, str]", ContextError], ContextError]


@dataclass(frozen=True)
class Row:
    """One wording: ``pattern`` (``{n}`` stands for a number) with named groups mapped by
    ``fields`` to ``(slot, certainty)``. Slots: window, prompt, output, total, limit,
    prompt_chars, char_limit. ``kind`` ``None`` means: decide from the numbers (prompt over
    window if the prompt alone exceeds it, else prompt + output). ``extras`` are searched
    anywhere in the text for more groups; ``refine`` adjusts the result (documented per row).
    """

    family: str
    pattern: str
    fields: Mapping[str, tuple[str, Certainty]]
    kind: ErrorKind | None = None
    limit_meaning: LimitMeaning | None = None
    extras: tuple[str, ...] = ()
    refine: Refine | None = None
    regex: re.Pattern[str] = field(init=False, repr=False, compare=False)
    extra_regexes: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "regex", _compile(self.pattern))
        object.__setattr__(self, "extra_regexes", tuple(_compile(p) for p in self.extras))


def _compile(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern.replace("{n}", NUM), re.IGNORECASE)


E, LB, APPROX = Certainty.EXACT, Certainty.LOWER_BOUND, Certainty.APPROXIMATE
W, P, C, T, L = ("window", E), ("prompt", E), ("output", E), ("total", E), ("limit", E)
K = ErrorKind
M = LimitMeaning
MCL = r"maximum context length is (?P<window>{n}) tokens"


def _refine_functions(groups: dict[str, str], result: ContextError) -> ContextError:
    """OpenAI functions wording: the prompt is messages + function definitions."""
    messages, functions = _to_int(groups.get("messages")), _to_int(groups.get("functions"))
    if messages is None or functions is None:
        return result
    return _with_kind(replace(result, prompt_tokens=Number(messages + functions)), None)


_OPENROUTER_PART = re.compile(rf"({NUM}) (of [a-z]+ input|in the output)", re.IGNORECASE)


def _refine_openrouter(groups: dict[str, str], result: ContextError) -> ContextError:
    """OpenRouter: "(P1 of text input, P2 of tool input, C in the output)": sum the inputs."""
    prompt, output = 0, None
    for number, what in _OPENROUTER_PART.findall(groups.get("parts") or ""):
        value = _to_int(number)
        if value is None:
            continue
        if what.lower() == "in the output":
            output = value
        else:
            prompt += value
    result = replace(
        result,
        prompt_tokens=Number(prompt, APPROX) if prompt else None,
        output_tokens=Number(output) if output is not None else None,
    )
    return _with_kind(result, None)


def _refine_truncated_prompt(groups: dict[str, str], result: ContextError) -> ContextError:
    """vLLM truncates a text prompt's tokenization at max_input + 1: P == L + 1 is a floor."""
    p, lim = result.prompt_tokens, result.printed_limit
    if p is not None and lim is not None and p.value == lim.value + 1:
        return replace(result, prompt_tokens=Number(p.value, LB))
    return result


def _refine_trtllm(groups: dict[str, str], result: ContextError) -> ContextError:
    """TensorRT-LLM: max_seq_len is the window; max_num_tokens is a batch budget."""
    lim = result.printed_limit
    if lim is not None and (groups.get("which") or "").lower() == "max_seq_len":
        return replace(result, window=Number(lim.value), printed_limit=None)
    return result


ROWS: tuple[Row, ...] = (
    # ---- vLLM
    Row("vllm-chars-precheck",
        MCL + r"\. However, (?:you requested (?P<output>{n}) output tokens and )?your prompt contains "
        r"(?P<prompt_chars>{n}) characters \(more than (?P<char_limit>{n}) characters"
        r"(?:, which is the upper bound for (?P<limit>{n}) input tokens)?",
        {"window": W, "output": C, "prompt_chars": ("prompt_chars", E), "char_limit": ("char_limit", E),
         "limit": L},
        limit_meaning=M.INPUT_BUDGET),
    Row("vllm-0.18-0.31",
        MCL + r"\. However, you requested (?P<output>{n}) output tokens and your prompt contains at least "
        r"(?P<prompt>{n}) input tokens(?:, for a total of at least (?P<total>{n}) tokens)?",
        {"window": W, "output": C, "prompt": ("prompt", LB), "total": ("total", LB)}),
    Row("vllm-0.32+",
        MCL + r"\. However, your prompt contains at least (?P<prompt>{n}) input tokens",
        {"window": W, "prompt": ("prompt", LB)}, K.PROMPT_OVER_WINDOW),
    Row("vllm-max-tokens-too-large",
        r"'?max_tokens'? or '?max_completion_tokens'? is too large: (?P<output>{n})\.? This model's " + MCL
        + r" and your request has (?P<prompt>{n}) input tokens",
        {"window": W, "output": C, "prompt": P}),
    Row("vllm-you-passed",
        r"You passed (?P<prompt>{n}) input tokens and requested (?P<output>{n}) output tokens\. However, the "
        r"model's context length is only (?P<window>{n}) tokens(?:, resulting in a maximum input length of "
        r"(?P<limit>{n}) tokens)?",
        {"window": W, "output": C, "prompt": P, "limit": L}, limit_meaning=M.INPUT_BUDGET,
        refine=_refine_truncated_prompt),
    Row("vllm-request-has",
        MCL + r"\. However, your request has (?P<prompt>{n}) input tokens",
        {"window": ("window", LB), "prompt": P}, K.PROMPT_OVER_WINDOW),
    Row("vllm-max-tokens-over-window-old",
        r"max_tokens=(?P<output>{n}) ?cannot be greater than max_model_len=max_total_tokens=(?P<window>{n})",
        {"window": W, "output": C}, K.OUTPUT_OVER_WINDOW),
    Row("vllm-max-tokens-over-window",
        r"max_tokens=(?P<output>{n}) ?cannot be greater than max_model_len=(?P<window>{n})",
        {"window": W, "output": C}, K.OUTPUT_OVER_WINDOW),
    Row("vllm-output-below-one",
        r"max_tokens must be at least 1, got (?P<output>-?{n})",
        {"output": C}, K.OUTPUT_BELOW_ONE),
    Row("vllm-decoder-prompt",
        r"decoder prompt \(length (?P<prompt>{n})\) is longer than the maximum model length of (?P<window>{n})",
        {"window": W, "prompt": P}, K.PROMPT_OVER_WINDOW),
    Row("vllm-v0-scheduler",
        r"Input prompt \((?P<prompt>{n}) tokens\) is too long and exceeds limit of (?P<window>{n})",
        {"window": W, "prompt": P}, K.PROMPT_OVER_WINDOW),
    # ---- OpenAI and compatible
    Row("openai-requested-functions",
        MCL + r"\.? However, you requested (?P<total>{n}) tokens \((?P<messages>{n}) in the messages, "
        r"(?P<functions>{n}) in the functions, and (?P<output>{n}) in the completion\)",
        {"window": W, "total": T, "output": C}, refine=_refine_functions),
    Row("openai-requested",
        MCL + r"\.? However, you requested (?P<total>{n}) tokens \((?P<prompt>{n}) in the messages, "
        r"(?P<output>{n}) in the completion\)",
        {"window": W, "total": T, "prompt": P, "output": C}),
    Row("openai-completions",
        MCL + r", however you requested (?P<total>{n}) tokens \((?P<prompt>{n}) in your prompt[;,] "
        r"(?P<output>{n}) for the completion\)",
        {"window": W, "total": T, "prompt": P, "output": C}),
    Row("textgen-webui",
        r"This model maximum context length is (?P<window>{n}) tokens\. However, your messages resulted in "
        r"over (?P<prompt>{n}) tokens(?: and max_tokens is (?P<output>{n}))?",
        {"window": W, "prompt": ("prompt", LB), "output": C}),
    Row("openai-messages-resulted",
        MCL + r"\.? However, your messages resulted in (?P<prompt>{n}) tokens",
        {"window": W, "prompt": P}, K.PROMPT_OVER_WINDOW),
    Row("openai-input-limit",
        r"Input tokens exceed the configured limit of (?P<limit>{n}) tokens\.?"
        r"(?: Your messages resulted in (?P<prompt>{n}) tokens)?",
        {"limit": L, "prompt": P}, K.PROMPT_OVER_WINDOW, M.INPUT_LIMIT),
    Row("openai-max-output",
        r"max_tokens is too large: (?P<output>{n})\. This model supports at most (?P<limit>{n}) completion tokens",
        {"output": C, "limit": L}, K.OUTPUT_OVER_LIMIT, M.OUTPUT_LIMIT),
    Row("openai-embeddings-request",
        r"Requested (?P<prompt>{n}) tokens, max (?P<limit>{n}) tokens per request",
        {"prompt": P, "limit": L}, K.PROMPT_OVER_WINDOW, M.REQUEST_LIMIT),
    Row("openrouter",
        r"endpoint's " + MCL + r"\. However, you requested about (?P<total>{n}) tokens \((?P<parts>[^)]{0,300})\)",
        {"window": W, "total": ("total", APPROX)}, refine=_refine_openrouter),
    Row("sglang-requested-total",
        r"Requested token count exceeds the model's maximum context length of (?P<window>{n}) tokens\. You "
        r"requested a total of (?P<total>{n}) tokens: (?P<prompt>{n}) tokens from the input messages and "
        r"(?P<output>{n}) tokens for the completion",
        {"window": W, "total": T, "prompt": P, "output": C}),
    # ---- Anthropic, Google, AWS
    Row("anthropic-prompt-too-long",
        r"prompt is too long: (?P<prompt>{n}) tokens ?> ?(?P<window>{n}) maximum",
        {"window": W, "prompt": P}, K.PROMPT_OVER_WINDOW),
    Row("anthropic-input-and-max-tokens",
        r"input length and max_tokens exceed context limit: (?P<prompt>{n}) ?\+ ?(?P<output>{n}) ?> ?(?P<window>{n})",
        {"window": W, "prompt": P, "output": C}),
    Row("anthropic-max-output",
        r"max_tokens: (?P<output>{n}) ?> ?(?P<limit>{n}), which is the maximum allowed number of output tokens",
        {"output": C, "limit": L}, K.OUTPUT_OVER_LIMIT, M.OUTPUT_LIMIT),
    Row("gemini",
        r"input token count(?: \((?P<prompt>{n})\))? exceeds the maximum number of tokens allowed"
        r"(?: \((?P<limit>{n})\))?",
        {"prompt": P, "limit": L}, K.PROMPT_OVER_WINDOW, M.INPUT_LIMIT),
    Row("vertex-gemini",
        r"input token count is (?P<prompt>{n}) but (?:the )?model only supports up to (?P<limit>{n})",
        {"prompt": P, "limit": L}, K.PROMPT_OVER_WINDOW, M.INPUT_LIMIT),
    Row("bedrock-max-length",
        r"Malformed input request: expected maxLength: (?P<char_limit>{n}), actual: (?P<prompt_chars>{n})",
        {"char_limit": ("char_limit", E), "prompt_chars": ("prompt_chars", E)}, K.PROMPT_OVER_WINDOW),
    Row("bedrock", r"Input is too long for requested model", {}, K.PROMPT_OVER_WINDOW),
    # ---- local and self-hosted servers
    Row("llamacpp-request",
        r"request \((?P<prompt>{n}) tokens\) exceeds the available context size \((?P<window>{n}) tokens\)",
        {"window": W, "prompt": P}, K.PROMPT_OVER_WINDOW),
    Row("llamacpp", r"exceeds the available context size", {"window": W, "prompt": P}, K.PROMPT_OVER_WINDOW,
        extras=(r"n_prompt_tokens['\"]?\s?[:=]\s?(?P<prompt>{n})", r"n_ctx['\"]?\s?[:=]\s?(?P<window>{n})")),
    Row("llama-cpp-python",
        r"Requested tokens(?: \((?P<prompt>{n})\))? exceed context window of (?P<window>{n})",
        {"window": W, "prompt": P}, K.PROMPT_OVER_WINDOW),
    Row("tgi-total",
        r"inputs tokens \+ max_new_tokens must be <= (?P<window>{n})\. Given: (?P<prompt>{n}) inputs tokens and "
        r"(?P<output>{n}) max_new_tokens",
        {"window": W, "prompt": P, "output": C}),
    Row("tgi-max-input",
        r"inputs must have less than (?P<limit>{n}) tokens\. Given: (?P<prompt>{n})",
        {"limit": L, "prompt": P}, K.PROMPT_OVER_WINDOW, M.INPUT_LIMIT),
    Row("tgi-max-new-tokens",
        r"(?<!\+ )max_new_tokens must be <= (?P<limit>{n})\. Given: (?P<output>{n})(?! inputs)",
        {"limit": L, "output": C}, K.OUTPUT_OVER_LIMIT, M.OUTPUT_LIMIT),
    Row("sglang-context-length",
        r"The input \((?P<prompt>{n}) tokens\) is longer than the model's context length \((?P<window>{n}) tokens\)",
        {"window": W, "prompt": P}, K.PROMPT_OVER_WINDOW),
    Row("sglang-max-allowed",
        r"Input length \((?P<prompt>{n}) tokens\) exceeds the maximum allowed length \((?P<limit>{n}) tokens\)",
        {"limit": L, "prompt": P}, K.PROMPT_OVER_WINDOW, M.KV_CAPACITY),
    Row("trtllm-input",
        r"Prompt length \((?P<prompt>{n})\) exceeds maximum input length \((?:(?P<limit>{n})|[^)]{0,40})\)",
        {"limit": L, "prompt": P}, K.PROMPT_OVER_WINDOW, M.INPUT_LIMIT),
    Row("trtllm-sum",
        r"sum of prompt length \((?P<prompt>{n})\),? (?:and )?query length \({n}\) should not exceed "
        r"(?P<which>max_num_tokens|max_seq_len) \((?P<limit>{n})\)",
        {"limit": L, "prompt": P}, K.PROMPT_OVER_WINDOW, M.BATCH_LIMIT, refine=_refine_trtllm),
    Row("lmstudio-input-length",
        r"Input length (?P<prompt>{n}) exceeds context length (?P<window>{n})",
        {"window": W, "prompt": P}, K.PROMPT_OVER_WINDOW),
    Row("lmstudio-keep",
        r"Trying to keep the first (?P<prompt>{n}) tokens when context the overflows(?:\. However, the model is "
        r"loaded with context length of only (?P<window>{n}) tokens)?",
        {"window": W, "prompt": ("prompt", LB)}, K.PROMPT_OVER_WINDOW),
    Row("ollama-truncate",
        r"truncating input prompt\"? limit=(?P<window>{n}) prompt=(?P<prompt>{n})",
        {"window": W, "prompt": P}, K.PROMPT_OVER_WINDOW),
    Row("copilot",
        r"prompt token count of (?P<prompt>{n}) exceeds the limit of (?P<limit>{n})",
        {"limit": L, "prompt": P}, K.PROMPT_OVER_WINDOW, M.INPUT_LIMIT),
    Row("github-models",
        r"Request body too large for .{1,200}? model\. Max size: (?P<limit>{n}) tokens",
        {"limit": L}, K.PROMPT_OVER_WINDOW, M.INPUT_LIMIT),
    Row("dashscope",
        r"Range of input length should be \[ ?1 ?, ?(?P<limit>{n}) ?\]",
        {"limit": L}, K.PROMPT_OVER_WINDOW, M.INPUT_LIMIT),
    Row("xai",
        r"maximum prompt length is (?P<limit>{n})(?: tokens)?\.?,? but the request contains (?P<prompt>{n}) tokens",
        {"limit": L, "prompt": P}, K.PROMPT_OVER_WINDOW, M.INPUT_LIMIT),
    Row("generic-max-input-length",
        r"Input too long: (?P<prompt>{n}) input tokens, limit is (?P<limit>{n})",
        {"limit": L, "prompt": P}, K.PROMPT_OVER_WINDOW, M.INPUT_LIMIT),
    Row("generic-max-input-length",
        r"maximum input length is (?P<limit>{n}) tokens",
        {"limit": L}, K.PROMPT_OVER_WINDOW, M.INPUT_LIMIT),
    Row("cerebras",
        r"Current length is (?P<total>{n}) while limit is (?P<window>{n})",
        {"window": W, "total": T}, K.PROMPT_PLUS_OUTPUT_OVER_WINDOW),
    Row("moonshot",
        r"exceeded model token limit: (?P<window>{n}) \(re ?quested: (?P<total>{n})\)",
        {"window": W, "total": T}, K.PROMPT_PLUS_OUTPUT_OVER_WINDOW),
    Row("mistral",
        r"Prompt contains (?P<prompt>{n}) tokens(?: and {n} draft tokens)?, too large for model with "
        r"(?P<window>{n}) maximum context length",
        {"window": W, "prompt": P}, K.PROMPT_OVER_WINDOW),
    Row("fireworks",
        r"prompt is too long: (?P<prompt>{n}), model maximum context length: (?P<window>{n})",
        {"window": W, "prompt": P}, K.PROMPT_OVER_WINDOW),
    Row("cohere",
        r"total number of tokens in the prompt cannot exceed (?P<window>{n}) - received (?P<prompt>{n})",
        {"window": W, "prompt": P}, K.PROMPT_OVER_WINDOW),
    Row("rkllama",
        r"Prompt is (?P<prompt>{n}) tokens but the model context window is (?P<window>{n}) tokens",
        {"window": W, "prompt": P}, K.PROMPT_OVER_WINDOW),
    Row("max-seq-len",
        r"length of prompt_tokens \((?P<prompt>{n})\) must be less than max_seq_len \((?P<window>{n})\)",
        {"window": W, "prompt": P}, K.PROMPT_OVER_WINDOW),
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
    # ---- generic fallbacks (last)
    Row("generic", MCL, {"window": W}, K.UNKNOWN),
    Row("generic",
        r"context[ _-]?(?:length|window)[ _-]?(?:exceeded|exceeds)|exceeds? (?:the |this |its )?(?:model's )?"
        r"(?:maximum |available )?context (?:window|length|size|limit)|(?:prompt|input) is too long|"
        r"greater than the context length|exceeded model token limit|too many (?:input )?tokens|"
        r"token limit exceeded|reduce the length of the (?:messages|input|prompt)|exceeds? context limit|"
        r"model's maximum context (?:length|limit)|ContextWindowExceededError",
        {}, K.UNKNOWN),
)

#: Known look-alikes, checked before :data:`ROWS`: a hit means "not a context-length error".
NEGATIVES: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        r"rate[ _-]?limit",  # "Rate limit reached for ... tokens", rate_limit_exceeded
        r"tokens? per (?:min|minute|hour|day|second)|\b(?:[io]?tpm|rpm|tpd|rpd)\b",  # Groq/OpenAI/Anthropic TPM
        r"quota|resource[_ ]exhausted|too many requests|service tier capacity exceeded",
        r"(?:daily|weekly|monthly|hourly) (?:token )?(?:limit|usage)",
        r"budget (?:has been )?exceeded|exceededbudget|max budget",  # LiteLLM budgets
        r"string_above_max_length|invalid 'user'|string too long",  # OpenAI string-length validation (chars)
        r"content[_ ](?:filter|policy|management)|responsibleaipolicyviolation|safety system",
        r"maximum number of tools|too many tools",
        r"request_too_large|payload too large|request entity too large",  # HTTP body bytes, not tokens
        r"(?:invalid|incorrect) api[ _-]?key|\bunauthorized\b|authentication[_ ]error",
    )
)


# ---------------------------------------------------------------- parsing

# Each starts only at the first backslash of a run ((?<!\\)): otherwise a long run of
# backslashes is retried from every position (quadratic).
_ESCAPED_QUOTE = re.compile(r"(?<!\\)\\+(?=[\"'`/])")
_ESCAPED_WS = re.compile(r"(?<!\\)\\+[nrt]")
_ESCAPED_UNICODE = re.compile(r"(?<!\\)\\+u([0-9a-fA-F]{4})")
_SPACE = re.compile(r"\s+")


def _normalise(text: str) -> str:
    s = text[:MAX_SCAN_CHARS]
    s = _ESCAPED_UNICODE.sub(lambda m: chr(int(m.group(1), 16)), s)
    s = _ESCAPED_QUOTE.sub("", s)
    s = _ESCAPED_WS.sub(" ", s)
    if "&" in s:
        s = html.unescape(s)
    s = s.replace("`", "").replace("\u2019", "'").replace("\u2018", "'")
    return _SPACE.sub(" ", s)


def _to_int(text: str | None) -> int | None:
    if not text:
        return None
    digits = text.replace(",", "").split(".", 1)[0]
    try:
        return int(digits)
    except ValueError:  # only on a malformed group; NUM bounds the length
        return None


def _with_kind(result: ContextError, kind: ErrorKind | None) -> ContextError:
    """Fix the kind: the row's own, or decided from the numbers; UNKNOWN without any number."""
    if not result.has_numbers and result.prompt_chars is None and result.char_limit is None:
        return replace(result, kind=ErrorKind.UNKNOWN)
    if kind is None:
        w, p, out = result.window, result.prompt_tokens, result.output_tokens
        prompt_alone = (
            w is not None and p is not None and w.certainty is Certainty.EXACT and p.value > w.value
        )
        if prompt_alone or out is None or out.value <= 0:
            kind = ErrorKind.PROMPT_OVER_WINDOW
        else:
            kind = ErrorKind.PROMPT_PLUS_OUTPUT_OVER_WINDOW
    return replace(result, kind=kind)


def _apply(row: Row, groups: dict[str, str]) -> ContextError:
    slots: dict[str, object] = {}
    for group, (slot, certainty) in row.fields.items():
        value = _to_int(groups.get(group))
        if value is None:
            continue
        if slot in ("prompt_chars", "char_limit"):
            slots[slot] = value
        elif slot == "limit":
            slots["printed_limit"] = Limit(value, row.limit_meaning or LimitMeaning.INPUT_LIMIT, certainty)
        else:
            slots[f"{slot}_tokens" if slot != "window" else "window"] = Number(value, certainty)
    result = ContextError(kind=ErrorKind.UNKNOWN, family=row.family, **slots)  # type: ignore[arg-type]
    result = _with_kind(result, row.kind)
    if row.refine is not None:
        result = row.refine(groups, result)
    return result


def parse_context_error(text: object) -> ContextError | None:
    """Parse a context-length error from its text; ``None`` if it is not one.

    Args:
        text: the error text as a ``str`` (raw message, JSON body, LiteLLM-wrapped string,
            JSON-escaped or not). ``bytes`` are decoded as UTF-8; any other object (an
            exception) is read with ``str()``; ``None`` gives ``None``.

    Returns:
        a :class:`ContextError` (token counts with their certainty, see the module table), or
        ``None`` for anything else, including known look-alikes (rate limits, TPM, quota,
        auth, content filters). Only the first :data:`MAX_SCAN_CHARS` characters are read.
    """
    if text is None:
        return None
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text[: MAX_SCAN_CHARS * 4]).decode("utf-8", errors="replace")
    elif not isinstance(text, str):
        text = str(text)
    s = _normalise(text)
    if any(neg.search(s) for neg in NEGATIVES):
        return None
    for row in ROWS:
        match = row.regex.search(s)
        if match is None:
            continue
        groups = {k: v for k, v in match.groupdict().items() if v is not None}
        for extra in row.extra_regexes:
            found = extra.search(s)
            if found is not None:
                groups.update({k: v for k, v in found.groupdict().items() if v is not None})
        return _apply(row, groups)
    return None


def is_context_error(text: object) -> bool:
    """Whether :func:`parse_context_error` recognises ``text`` as a context-length error."""
    return parse_context_error(text) is not None

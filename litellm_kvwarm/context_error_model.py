"""Context-length errors, the parsed shape (pure data, no parsing here).

A :class:`ContextError` says what a server refused (:class:`ErrorKind`) and the numbers it
printed, each with how sure it is (:class:`Certainty`). All numbers are **tokens** unless a
field says characters. A printed number that is *not* the model's window (prompt + output)
is a :class:`Limit` with its :class:`LimitMeaning`, never the window.

Built by :func:`litellm_kvwarm.context_errors.parse_context_error` from the wordings of
:mod:`litellm_kvwarm.context_error_wordings`; read by :mod:`litellm_kvwarm.reactive`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum

__all__ = ["Certainty", "ContextError", "ErrorKind", "Limit", "LimitMeaning", "Number", "with_kind"]


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
    the window. ``excess_tokens``: by how much the request is over the limit when that is all the
    server printed (Ollama "exceeded max context length by N tokens": prompt − window = N; the
    window itself is not printed, see :meth:`limit_given_prompt`). ``output_cap``: the model's own cap on
    output tokens per request (max_tokens), tokens, whenever the text prints one: the ``printed_limit`` of an
    output-cap wording (``OUTPUT_LIMIT``: OpenAI "supports at most N completion tokens", Anthropic "N, which is
    the maximum allowed number of output tokens"), or a cap printed beside another wording's window ("...
    maximum context length is 128000 tokens ... supports at most 16384 completion tokens"); never the window, and
    the window never it (:mod:`~litellm_kvwarm.context_error_caps`). ``prompt_chars``/``char_limit``:
    character counts (never tokens).

    A number that ends the text (nothing but spaces or a truncation mark after it) may have been
    cut mid-digits by whoever truncated the text: its certainty is LOWER_BOUND (UPPER_BOUND for a
    negative number), never EXACT; a character count there is dropped.
    ``family``: the row of :data:`~litellm_kvwarm.context_error_wordings.ROWS` that matched.
    """

    kind: ErrorKind
    family: str
    window: Number | None = None
    prompt_tokens: Number | None = None
    output_tokens: Number | None = None
    total_tokens: Number | None = None
    printed_limit: Limit | None = None
    excess_tokens: Number | None = None
    prompt_chars: int | None = None
    char_limit: int | None = None
    output_cap: Number | None = None
    refuses_full_window: bool = False

    @property
    def admitted_window(self) -> Number | None:
        """The most prompt + output (tokens) the server admits: :attr:`window`, less one where it refuses a total that
        reaches its window (:attr:`refuses_full_window`, SGLang's ``>=`` checks); ``None`` without a window."""
        w = self.window
        if w is None or not self.refuses_full_window or w.value < 2:
            return w
        return Number(w.value - 1, w.certainty)

    @property
    def has_numbers(self) -> bool:
        """Whether any token count was printed (window, prompt, output, total, a limit or an excess). ``output_cap``
        is not counted: it says nothing about the window or the prompt (a numberless prompt-alone refusal beside a
        cap still needs the refused prompt's count to teach a limit)."""
        return any(
            x is not None
            for x in (
                self.window, self.prompt_tokens, self.output_tokens, self.total_tokens, self.printed_limit,
                self.excess_tokens,
            )
        )

    def limit_given_prompt(self, prompt_tokens: int | None) -> Number | None:
        """The limit an excess-only refusal implies for a prompt of exactly ``prompt_tokens`` tokens
        (the refused prompt, counted by the server's own tokenizer): ``prompt − excess``.

        EXACT only when the excess is exact; ``None`` without an excess, without a prompt count, or
        when the result would not be positive. The caller must pass the *exact* size of the refused
        prompt (an estimate makes the result an estimate too).
        """
        x = self.excess_tokens
        if x is None or prompt_tokens is None or x.certainty is not Certainty.EXACT:
            return None
        value = prompt_tokens - x.value
        return Number(value) if value > 0 else None

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


def with_kind(result: ContextError, kind: ErrorKind | None) -> ContextError:
    """``result`` with its kind fixed: ``kind`` (the row's own), or, when ``None``, decided from
    the numbers (prompt alone over an exact window, or no positive output → PROMPT_OVER_WINDOW,
    else PROMPT_PLUS_OUTPUT_OVER_WINDOW); UNKNOWN when no number at all was printed. A prompt that
    fills the exact window (exactly, or "at least" it) is over it alone: it leaves no room for one
    output token (vLLM "you requested 1 output tokens and your prompt contains at least 4096 input
    tokens" in a 4096 window, Anthropic "200000 + 1 > 200000")."""
    if not result.has_numbers and result.prompt_chars is None and result.char_limit is None:
        return replace(result, kind=ErrorKind.UNKNOWN)
    if kind is None:
        w, p, out = result.window, result.prompt_tokens, result.output_tokens
        prompt_alone = (
            w is not None and p is not None and w.certainty is Certainty.EXACT
            and (p.value > w.value
                 or (p.value == w.value and p.certainty in (Certainty.EXACT, Certainty.LOWER_BOUND)))
        )
        if prompt_alone or out is None or out.value <= 0:
            kind = ErrorKind.PROMPT_OVER_WINDOW
        else:
            kind = ErrorKind.PROMPT_PLUS_OUTPUT_OVER_WINDOW
    return replace(result, kind=kind)


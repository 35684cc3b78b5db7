"""The wording-table machinery: a :class:`Row` (one wording), the number pattern, refinements (pure).

A row's ``pattern`` is a regular expression in which ``{n}`` stands for :data:`NUM`, a token
count as printed. Named groups map to slots of :class:`~litellm_kvwarm.context_error_model.ContextError`;
a ``refine`` function adjusts the result where a wording needs more than a mapping (the
``_refine_*`` functions here, each documented with the wording it serves). The rows
themselves are data: :data:`litellm_kvwarm.context_error_wordings.ROWS`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from .context_error_model import Certainty, ContextError, ErrorKind, LimitMeaning, Number, with_kind

__all__ = [
    "CUT_END",
    "cut_within",
    "NUM",
    "THOUSANDS_SEPARATORS",
    "Refine",
    "Row",
    "refine_cut_breakdown",
    "refine_exclusive_limit",
    "refine_functions",
    "refine_openrouter",
    "refine_refuses_full_window",
    "refine_output_counted",
    "refine_trtllm",
    "refine_trtllm_query",
    "refine_truncated_prompt",
    "to_int",
]

#: Characters that may group thousands inside a printed count, once normalised (NBSP, narrow NBSP
#: and thin space are collapsed to a plain space by the parser before matching).
THOUSANDS_SEPARATORS = ",_' "

#: A token count as printed: "16384", "16,384", "16 384", "16_384", "16'384" (groups of exactly three
#: digits), "9351.0" or "36208.5" (TensorRT-LLM prints prompt_len / cp_size; the fraction is dropped).
#: Dot thousands ("210.000", "1.048.576") reach it as commas: the parser rewrites them first.
#: A count with a magnitude suffix ("128k", "128K tokens", "1.2M", Chinese "12.8万": rounded, and "128" is not 128 tokens) is
#: no count at all: never read, not even its digits (the parser has put a space before the letter).
#: Bounded: at most 20 digits, at most 6 groups, so it never backtracks far.
NUM = (
    r"(?:\d{1,3}(?:[,_' ]\d{3}){1,6}(?!\d|[,_' ]\d)|\d{1,20}(?!\d))"
    r"(?:\.\d{1,6}(?!\d))?(?!\.\d| ?[kKmM]\b| ?[万千亿])"
)

#: Where a cut text ends after a number: spaces, then optionally truncation marks ("...", "…", "[truncated]",
#: "[truncated 512 chars]", "... [512 characters truncated]", "(12 more characters)", "(+512 bytes)", "[…]",
#: "...truncated") and after them only the quotes and braces of a wrapper closed again around the cut text
#: ('(truncated)"}}'). A regex to match from the number's end to the end of the text (case-insensitive).
_MARK = (
    r"(?:\.{3,}(?!\.)|\u2026|truncated\b|[\[(<][^\[\]()<>]{0,60}?(?:\.{2,}|\u2026|truncat|\bmore\b|omitted|elided|\+ ?\d)"
    r"[^\[\]()<>]{0,60}[\])>])"
)
CUT_END = r"\s*(?:" + _MARK + r"(?:\s|" + _MARK + r")*[\"'}\]\s]*)?"

Refine = Callable[["dict[str, str]", ContextError], ContextError]


def cut_within(*literals: str, least: int = 2) -> str:
    """A regex for a text cut inside one of ``literals`` (a wording's words after its last number read): the
    first ``least`` or more characters of one, then the end of the text (spaces and truncation marks may follow,
    :data:`CUT_END`). A log line or a relayed body cut at a fixed length ends mid-word ("... at least 12289 input
    tok"); without this the row would not match and the numbers before the cut would be lost. ``least`` keeps a
    bare space or letter from counting as the wording (the row chooses it: where another wording shares the
    first characters, enough of them to tell the two apart)."""
    alternatives = []
    for literal in literals:
        tail = ""
        for char in reversed(literal[least:]):
            tail = "(?:" + re.escape(char) + tail + ")?"
        alternatives.append(re.escape(literal[:least]) + tail)
    return "(?:" + "|".join(alternatives) + r")(?=" + CUT_END + r"\Z)"


@dataclass(frozen=True)
class Row:
    """One wording: ``pattern`` (``{n}`` stands for a number) with named groups mapped by
    ``fields`` to ``(slot, certainty)``. Slots: window, prompt, output, total, limit, excess,
    prompt_chars, char_limit. Several groups may map to one slot (alternative spellings of one
    wording); the last one present wins. ``kind`` ``None`` means: decide from the numbers (prompt over
    window if the prompt alone exceeds it, else prompt + output). ``extras`` are searched
    anywhere in the text for more groups; ``refine`` adjusts the result (documented per row). ``overflow_only``: a text
    whose exact printed prompt + output fit its exact printed window is not this wording's refusal (the row is skipped).
    """

    family: str
    pattern: str
    fields: Mapping[str, tuple[str, Certainty]]
    kind: ErrorKind | None = None
    limit_meaning: LimitMeaning | None = None
    extras: tuple[str, ...] = ()
    refine: Refine | None = None
    overflow_only: bool = False
    regex: re.Pattern[str] = field(init=False, repr=False, compare=False)
    extra_regexes: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "regex", _compile(self.pattern))
        object.__setattr__(self, "extra_regexes", tuple(_compile(p) for p in self.extras))


# A literal space right before or after a number slot ("{n}" or "(?P<name>-?{n})"), unless the
# pattern already quantifies it: made optional, because transport drops it ("262144(requested").
_SPACE_BY_NUMBER = re.compile(r" (?=\(\?P<\w+>-?\{n\}\)|-?\{n\})|(?<=\{n\}\)) (?![?*+{])|(?<=\{n\}) (?![?*+{])")


# "the model's" in a row also reads "this model's", "its" and "the model" (gateways and forks reword it: "longer than
# this model's context length", "exceeds the model maximum context length"), "the maximum" also "maximum": (old, new) in
# order.
_MODEL_POSSESSIVE = (
    ("(?:model'?s )?", "(?:model(?:'?s)? )?"),
    ("(?:the )?(?:model(?:'?s)? )?", "(?:the |this |its )?(?:model(?:'?s)? )?"),
    ("(?:the )?(?:model'?s? )?", "(?:the |this |its )?(?:model'?s? )?"),
    ("(?:the )?model'?s", "(?:the |this |its )?model(?:'?s)?"),
    ("the model'?s", "(?:the|this|its) model(?:'?s)?"),
    ("the maximum ", "(?:the )?maximum "),  # "exceeds maximum model length" (the article dropped)
)
# "exceeds" (or "exceeds?") as a whole word of a pattern: also "exceeded" (a fork's or a log's past tense)
_EXCEEDS = re.compile(r"(?<!\w)exceeds\??(?=[ )|])")


def _compile(pattern: str) -> re.Pattern[str]:
    """A row pattern as a regex: ``{n}`` → :data:`NUM`; a space next to a number is optional; "the model's" also
    reads "this model's", "its" and "the model", "the maximum" also "maximum", "exceeds" also "exceeded"."""
    for old, new in _MODEL_POSSESSIVE:
        pattern = pattern.replace(old, new)
    pattern = _EXCEEDS.sub("exceed(?:s|ed)?", pattern)
    return re.compile(_SPACE_BY_NUMBER.sub(" ?", pattern).replace("{n}", NUM), re.IGNORECASE)


def to_int(text: str | None) -> int | None:
    """A printed count as an int ("16,384" → 16384, "9351.0" → 9351); ``None`` for none."""
    if not text:
        return None
    digits = text.split(".", 1)[0]
    for sep in THOUSANDS_SEPARATORS:
        digits = digits.replace(sep, "")
    try:
        return int(digits)
    except ValueError:  # only on a malformed group; NUM bounds the length
        return None


def refine_functions(groups: dict[str, str], result: ContextError) -> ContextError:
    """OpenAI functions wording: the prompt is messages + function definitions."""
    messages, functions = to_int(groups.get("messages")), to_int(groups.get("functions"))
    if messages is None or functions is None:
        return result
    return with_kind(replace(result, prompt_tokens=Number(messages + functions)), None)


_OPENROUTER_PART = re.compile(rf"({NUM}) (of [a-z]+ input|in the output)", re.IGNORECASE)


def refine_openrouter(groups: dict[str, str], result: ContextError) -> ContextError:
    """OpenRouter: "(P1 of text input, P2 of tool input, C in the output)": sum the inputs. Without the whole
    breakdown (cut, or not printed) only T is known, which may or may not count an output: UNKNOWN."""
    if groups.get("parts") is None:
        return replace(result, kind=ErrorKind.UNKNOWN)
    prompt, output = 0, None
    for number, what in _OPENROUTER_PART.findall(groups.get("parts") or ""):
        value = to_int(number)
        if value is None:
            continue
        if what.lower() == "in the output":
            output = value
        else:
            prompt += value
    result = replace(
        result,
        prompt_tokens=Number(prompt, Certainty.APPROXIMATE) if prompt else None,
        output_tokens=Number(output) if output is not None else None,
    )
    return with_kind(result, None)


def refine_cut_breakdown(groups: dict[str, str], result: ContextError) -> ContextError:
    """OpenAI's "you requested T tokens (P in the messages, C in the completion)" cut inside the parentheses
    (a truncated body): P is the prompt when the completion part follows it, else only its messages part (a floor:
    functions and tools may follow). A prompt at or over an exact window is over it alone
    (PROMPT_OVER_WINDOW); below it, the output pushed the request over when the prompt is whole
    (PROMPT_PLUS_OUTPUT_OVER_WINDOW); otherwise UNKNOWN."""
    w, p = result.window, result.prompt_tokens
    if w is not None and p is not None and w.certainty is Certainty.EXACT and p.value >= w.value:
        kind = ErrorKind.PROMPT_OVER_WINDOW
    elif w is not None and p is not None and p.certainty is Certainty.EXACT and result.output_tokens is not None:
        kind = ErrorKind.PROMPT_PLUS_OUTPUT_OVER_WINDOW
    else:
        kind = ErrorKind.UNKNOWN
    return replace(result, kind=kind)


def refine_exclusive_limit(groups: dict[str, str], result: ContextError) -> ContextError:
    """A limit printed as an exclusive bound ("the supported range is from 1 (inclusive) to 65537
    (exclusive)", Vertex AI Gemini ``maxOutputTokens``, 2025–2026): the most allowed is one less."""
    lim = result.printed_limit
    if lim is None or lim.value < 2:
        return result
    return replace(result, printed_limit=replace(lim, value=lim.value - 1))


def refine_refuses_full_window(groups: dict[str, str], result: ContextError) -> ContextError:
    """SGLang refuses a request whose total *reaches* the window it prints (``tokenizer_manager._validate_one_request``:
    ``input_token_num >= context_len`` and ``max_new_tokens + input_token_num >= context_len`` in the releases that
    print "Requested token count exceeds the model's maximum context length of W tokens"; later ones check ``>``): the
    window stays W as printed, and :attr:`~.ContextError.admitted_window` (W − 1) is what a retry must fit."""
    return replace(result, refuses_full_window=True)


def refine_output_counted(groups: dict[str, str], result: ContextError) -> ContextError:
    """A refusal worded as the input over the window by a server that also counts the requested output
    (Z.ai "Request P input tokens exceeds the model's maximum context length W", 2026: refused with P
    below W when max_tokens fills the rest): a prompt below the window means the output pushed the
    request over (PROMPT_PLUS_OUTPUT_OVER_WINDOW); at or over an exact window, the prompt alone
    (PROMPT_OVER_WINDOW); otherwise (no prompt printed, or a window that may be cut) UNKNOWN."""
    w, p = result.window, result.prompt_tokens
    if w is None or p is None:
        kind = ErrorKind.UNKNOWN
    elif p.value < w.value:
        kind = ErrorKind.PROMPT_PLUS_OUTPUT_OVER_WINDOW
    elif w.certainty is Certainty.EXACT:
        kind = ErrorKind.PROMPT_OVER_WINDOW
    else:
        kind = ErrorKind.UNKNOWN
    return replace(result, kind=kind)


def refine_truncated_prompt(groups: dict[str, str], result: ContextError) -> ContextError:
    """vLLM truncates a text prompt's tokenization at max_input + 1: P == L + 1 is a floor (L = W − C where a cut
    text lost L but kept the window and the output)."""
    p, lim = result.prompt_tokens, result.printed_limit
    w, c = result.window, result.output_tokens
    limit = lim.value if lim is not None else w.value - c.value if w is not None and c is not None else None
    if p is not None and limit is not None and p.value == limit + 1:
        return replace(result, prompt_tokens=Number(p.value, Certainty.LOWER_BOUND))
    return result


def refine_trtllm_query(groups: dict[str, str], result: ContextError) -> ContextError:
    """TensorRT-LLM: the input is prompt + query (``query_len``/``query_token_len``, star attention):
    a non-zero query length is added to the prompt; the kind is then decided from the numbers
    unless the row fixed it."""
    query, p = to_int(groups.get("query")), result.prompt_tokens
    if not query or p is None:
        return result
    return replace(result, prompt_tokens=Number(p.value + query, p.certainty))


def refine_trtllm(groups: dict[str, str], result: ContextError) -> ContextError:
    """TensorRT-LLM: max_seq_len is the window; max_num_tokens is a batch budget; a non-zero
    query length is part of the input (:func:`refine_trtllm_query`)."""
    result = refine_trtllm_query(groups, result)
    lim = result.printed_limit
    if lim is not None and (groups.get("which") or "").lower() == "max_seq_len":
        return replace(result, window=Number(lim.value, lim.certainty), printed_limit=None)
    return result


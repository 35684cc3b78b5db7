"""Context-length error parsing: error text from any LLM server → what overflowed, with numbers (pure).

Contract: :func:`parse_context_error` takes the text of an error (the server's message, the
JSON body, or either wrapped by LiteLLM, e.g. ``litellm.ContextWindowExceededError:
litellm.BadRequestError: Hosted_vllmException - {"error": {"message": "..."}}``, with or
without JSON-escaped quotes) and returns a frozen :class:`ContextError`, or ``None`` when the
text is not a context-length error. It never raises on a ``str`` and reads only the first
:data:`MAX_SCAN_CHARS` characters (the cut is moved past a number it would split, at most
:data:`MAX_CUT_EXTENSION` characters further). All numbers are **tokens** unless a field says
characters.

How it decides, like LiteLLM's ``is_error_str_context_window_exceeded`` but with numbers:

1. The text is normalised: its transport encodings undone, bounded (:mod:`.context_error_layers`: JSON/Unicode
   escapes at any depth, byte escapes, percent and form encoding, HTML entities, each also applied twice),
   Unicode compatibility forms folded (NFKC: full-width ``：`` and digits, ``…``), zero-width
   characters dropped, quotes around words dropped (backticks, ASCII and curly double quotes
   ``"`` ``“”`` ``„``, guillemets ``«»`` ``‹›``, and single quotes around one identifier:
   ``'inputs'``), typographic apostrophes (``’`` ``‘`` ``‛`` ``ʼ`` ``´``) made ``'``, Unicode spaces and
   whitespace collapsed, and a space put back between a number and a word (``16384tokens``,
   ``max_model_len=4096.Please``). Numbers may carry thousands separators (``16,384``, ``16 384``
   with any Unicode space, ``16_384``, ``16'384``, and dots: ``210.000 tokens``, ``1.048.576``). A
   token count is an integer, so 1-3 digits followed by ``.ddd`` groups are thousands, except one
   ``.ddd`` group where TensorRT-LLM prints ``prompt_len / cp_size`` as a Python float ("sum of
   prompt length (256.125)", "splited_prompt_len (256.125)"; also ``(9351.0)``): the fraction is
   dropped. A count with a magnitude suffix ("128k", "128K tokens", "1.2M") is rounded, so it is
   never read (not even its digits): such a text parses with no numbers. HTML tags are dropped and
   locale grouping (``1,63,840``, ``16٬384``, ``16·384``) read as thousands (:mod:`.context_error_markup`).
   Prose quotes that may hold a context error are marked before quotes are dropped (:mod:`.context_error_echoes`).
   Wrappers (LiteLLM prefixes, JSON bodies, Python reprs, trailing ``None``) need no unwrapping: rows are
   searched anywhere in the text. A failed fallback hop's error that LiteLLM's router appended ("Error doing the
   fallback: ...", another model group's) is dropped first.
2. :data:`NEGATIVES` (known look-alikes: rate limits, TPM, quota, budget, auth, content
   filter, string-length and tool-count validation) are checked first: any hit → ``None``.
   What a validation error quotes of the client's own input (pydantic's ``input_value=``, the ``input``
   of a FastAPI/pydantic error list) is dropped first: a malformed request whose content holds an old
   context-length error text is the client's error, not a refusal on length.
3. :data:`ROWS` are tried in order; the first whose pattern matches wins. A row names its
   family, maps named regex groups to meanings and certainties, and may add a refinement.
   A new wording is one more row.

Every number says how sure it is (:class:`Certainty`): vLLM's "at least N input tokens" is a
**lower bound** (vLLM truncates tokenization at ``max_input + 1``), OpenRouter's "about N" is
approximate. A number that **ends the text** (nothing after it but spaces, a truncation mark such
as ``...`` or ``[truncated]``, or a separator that could start another digit group) may have been
cut mid-digits by whoever truncated the text (``max_model_len=4`` of ``max_model_len=4096``): it
is a LOWER_BOUND (UPPER_BOUND when negative), never EXACT, so a cut window is never learned as a
smaller exact one; a character count there is dropped. A text cut mid-word ("... resulted in 4619 tok") is
also read as if cut at each of its last few word breaks (never past a finished sentence), and a named wording's
reading with more numbers is kept (:mod:`.context_error_cuts` says when). A printed number that is *not* the
model's window (prompt + output) goes to ``printed_limit`` with its :class:`LimitMeaning`, never
to ``window``; an excess over an unprinted limit (Ollama "exceeded ... by N tokens") goes to
``excess_tokens``; the model's output cap is kept in ``output_cap`` too, also when the text prints it beside a
window, and the window beside it (:mod:`.context_error_caps`).

The table of wordings (family, wording, where seen) is :mod:`litellm_kvwarm.context_error_wordings`;
the result's shape :mod:`litellm_kvwarm.context_error_model`; a row's machinery
:mod:`litellm_kvwarm.context_error_rows`. This module is the parser and the public entry point:
every name above is importable from here.
"""

from __future__ import annotations

import re
import unicodedata

from .context_error_model import Certainty, ContextError, ErrorKind, Limit, LimitMeaning, Number, with_kind
from .context_error_caps import with_output_cap
from .context_error_cuts import better_cut_reading, looks_cut, may_be_cut, trims
from .context_error_echoes import marked_quotes, without_echoes, without_fallback_hop
from .context_error_layers import without_layers
from .context_error_markup import with_plain_grouping, without_markup
from .context_error_windows import with_competing_window
from .context_error_rows import Row, to_int
from .context_error_wordings import NEGATIVES, ROWS

__all__ = [
    "MAX_CUT_EXTENSION",
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
#: At most this many characters past :data:`MAX_SCAN_CHARS` are read to finish a number (or an
#: escape) the cut would split, plus the first character after it.
MAX_CUT_EXTENSION = 64


_SPACE = re.compile(r"\s+")  # \s includes NBSP, narrow NBSP and thin space (U+00A0, U+202F, U+2009)
# A digit touching a letter ("16384tokens", "is16384", "5000cannot"), a sentence after a number
# ("max_model_len=4096.Please") or a word after a colon ("request:expected", from a full-width colon):
# put back the space a row expects.
_DIGIT_LETTER = re.compile(
    r"(?<=\d)(?=[A-Za-z])|(?<=[A-Za-z])(?=\d)|(?<=\d\.)(?=[A-Za-z])|(?<=[A-Za-z]:)(?=[A-Za-z])"
)
# Quotes around words, dropped like backticks: ASCII and curly double quotes, low-9 and reversed
# double quotes, guillemets (double and single), CJK double quotes.
_DROPPED_QUOTES = str.maketrans(
    dict.fromkeys("`\"\u201c\u201d\u201e\u201f\u00ab\u00bb\u2039\u203a\u301d\u301e\u301f", None)
)
# Typographic apostrophes and single quotes read as "'"; zero-width characters and soft hyphens dropped; the minus sign
# (U+2212, "got −20" from a typesetting front end) read as "-".
_APOSTROPHES = str.maketrans(
    {**dict.fromkeys("\u2018\u2019\u201a\u201b\u2032\u02bc\u00b4", "'"), "\u2212": "-",
     **dict.fromkeys("\u200b\u200c\u200d\u2060\ufeff\u00ad", None)}
)
# One identifier in single quotes ('inputs', 'max_new_tokens'), not an apostrophe inside a word; and
# a lone single quote stuck to a field name (TGI's inputs, snake_case names), e.g. from a message
# whose own quotes were unbalanced.
_QUOTED_WORD = re.compile(r"(?<![\w'])'([A-Za-z_][\w.]{0,63})'(?!\w)")
_QUOTED_FIELD = re.compile(r"(?<!\w)'?(inputs|[A-Za-z][A-Za-z0-9]{0,30}(?:_[A-Za-z0-9]{1,30}){1,6})'?(?!\w)")
# Dot thousands ("210.000 tokens", "1.048.576", "(32.768)"): 1-3 digits then .ddd groups. One group
# where TensorRT-LLM prints prompt_len / cp_size as a Python float is a fraction: "sum of prompt
# length (256.125)", "splited_prompt_len (256.125)".
_DOT_THOUSANDS = re.compile(r"(?<![\d.,])\d{1,3}(?:\.\d{3})+(?!\d|\.\d)")
_FLOAT_PROMPT_LEN = re.compile(r"(?:sum of prompt length|prompt_len) ?\( ?\Z", re.IGNORECASE)
# A run the scan cut must not split: digits, separators before a digit, escapes, HTML entities, percent escapes.
_RAW_NUMBER_RUN = re.compile(
    r"(?:\d|[,_'. +\t\u00a0\u202f\u2009](?=\d|\\|&|%)|\\+u[0-9a-fA-F]{4}|\\+x[0-9a-fA-F]{2}|&#?\w{1,8};"
    r"|%u[0-9a-fA-F]{4}|%[0-9a-fA-F]{2})+"
)


def _scan_window(text: str) -> str:
    """The first :data:`MAX_SCAN_CHARS` characters, the cut moved past a number or escape it would
    split (at most :data:`MAX_CUT_EXTENSION` more characters) and past the spaces after it, to the
    first character that shows where the number ended."""
    end = MAX_SCAN_CHARS
    if len(text) <= end:
        return text
    limit = min(len(text), end + MAX_CUT_EXTENSION)
    for run in _RAW_NUMBER_RUN.finditer(text, max(0, end - 16), limit):
        if run.start() >= end:
            break
        if run.end() >= end:  # the cut falls inside this run or right after it: finish it
            end = run.end()
            while end < limit and text[end].isspace():
                end += 1
            end = min(end + 1, len(text))
            break
    return text[:end]


def _dot_thousands(match: re.Match[str]) -> str:
    number, start = match.group(0), match.start()
    if number.count(".") == 1 and _FLOAT_PROMPT_LEN.search(match.string, max(0, start - 24), start):
        return number  # "sum of prompt length (256.125)": a TensorRT-LLM float, not thousands
    return number.replace(".", ",")


def _normalise(text: str) -> str:
    """Undo transport mangling: encodings (:func:`~.context_error_layers.without_layers`), compatibility
    forms (NFKC), zero-width characters, quotes around words (prose quotes marked first), typographic
    apostrophes, Unicode spaces; put back a space between a number and a word; dot thousands read as
    thousands. Numbers keep their other separators (:data:`NUM` reads them)."""
    s = without_layers(_scan_window(text))
    s = with_plain_grouping(without_markup(s))
    if not s.isascii():
        s = unicodedata.normalize("NFKC", s.translate(_APOSTROPHES))
    s = marked_quotes(s).translate(_DROPPED_QUOTES)
    if "'" in s:
        s = _QUOTED_FIELD.sub(r"\1", _QUOTED_WORD.sub(r"\1", s))
    s = _DIGIT_LETTER.sub(" ", s)
    if "." in s:
        s = _DOT_THOUSANDS.sub(_dot_thousands, s)
    return _SPACE.sub(" ", s)


def _weaker(number: Number) -> Number:
    """A number that may have been cut: a prefix of its digits is at most the true value (at least it, if negative)."""
    return Number(number.value, Certainty.UPPER_BOUND if number.value < 0 else Certainty.LOWER_BOUND)


def _apply(row: Row, groups: dict[str, str], cut: frozenset[str] = frozenset()) -> ContextError:
    """The result of ``row`` from its matched ``groups``; ``cut``: groups whose number ends the text
    and may have been cut mid-digits (never EXACT: see the module docstring)."""
    slots: dict[str, object] = {}
    for group, (slot, certainty) in row.fields.items():
        value = to_int(groups.get(group))
        if value is None:
            continue
        may_be_cut = group in cut
        if slot in ("prompt_chars", "char_limit"):
            if not may_be_cut:
                slots[slot] = value
            continue
        number = Number(value, certainty)
        if may_be_cut:
            number = _weaker(number)
        if slot == "limit":
            slots["printed_limit"] = Limit(value, row.limit_meaning or LimitMeaning.INPUT_LIMIT, number.certainty)
        else:
            slots[f"{slot}_tokens" if slot != "window" else "window"] = number
    result = ContextError(kind=ErrorKind.UNKNOWN, family=row.family, **slots)  # type: ignore[arg-type]
    result = with_kind(result, row.kind)
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
    s = without_echoes(without_fallback_hop(_normalise(text)), _reads)
    if any(neg.search(s) for neg in NEGATIVES):
        return None
    full = best = _parse_normalised(s)
    for trimmed in trims(s) if looks_cut(s) else ():  # cut mid-word: an earlier cut may read its wording
        found = _parse_normalised(trimmed, trimmed=True)
        if better_cut_reading(found, best, full):
            best = found
    return best


def _parse_normalised(s: str, trimmed: bool = False) -> ContextError | None:
    for row in ROWS:
        match = row.regex.search(s)
        if match is None:
            continue
        if trimmed and match.end() == len(s) and not s[-1].isdigit():
            return None  # its wording ends where the trim did: the words dropped may be what its guards read
        result, spans = _read(row, s, match)
        if row.overflow_only and _fits(result):
            continue  # "prompt (5) + max_tokens (100) exceeds max_context (6,400)": not a refusal for length
        result = with_competing_window(s, spans, result, row.kind is not None)
        return with_output_cap(s, spans, result, lambda cap_row, found: _read(cap_row, s, found)[0], may_be_cut)
    return None


def _fits(result: ContextError) -> bool:
    """Whether ``result``'s exact prompt and output fit its exact window (the numbers describe no overflow)."""
    w, p, c = result.admitted_window, result.prompt_tokens, result.output_tokens
    exact = all(n is not None and n.certainty is Certainty.EXACT for n in (w, p, c))
    return exact and p.value + c.value <= w.value  # type: ignore[union-attr]


def _read(row: Row, s: str, match: re.Match[str]) -> tuple[ContextError, list[tuple[int, int]]]:
    """The result of ``row`` whose pattern matched ``s`` at ``match`` (its extras searched anywhere in ``s``), and
    the spans its wording covers."""
    groups: dict[str, str] = {}
    cut: set[str] = set()
    spans: list[tuple[int, int]] = []
    for found in (match, *(extra.search(s) for extra in row.extra_regexes)):
        if found is None:
            continue
        spans.append(found.span())
        for name, value in found.groupdict().items():
            if value is None:
                continue
            groups[name] = value
            cut.discard(name)
            if may_be_cut(s, found.start(name), found.end(name)):
                cut.add(name)
    return _apply(row, groups, frozenset(cut)), spans


def _reads(s: str) -> bool:
    """Whether the normalised text ``s`` reads as a refusal that prints a number (no look-alike; the first wording
    of :data:`ROWS` that matches reads a token count): a wrapper's bare error name reads none."""
    if any(neg.search(s) for neg in NEGATIVES):
        return False
    for row in ROWS:
        match = row.regex.search(s)
        if match is not None:
            return _read(row, s, match)[0].has_numbers
    return False


def is_context_error(text: object) -> bool:
    """Whether :func:`parse_context_error` recognises ``text`` as a context-length error."""
    return parse_context_error(text) is not None

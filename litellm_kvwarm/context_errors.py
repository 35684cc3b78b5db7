"""Context-length error parsing: error text from any LLM server → what overflowed, with numbers (pure).

Contract: :func:`parse_context_error` takes the text of an error (the server's message, the
JSON body, or either wrapped by LiteLLM, e.g. ``litellm.ContextWindowExceededError:
litellm.BadRequestError: Hosted_vllmException - {"error": {"message": "..."}}``, with or
without JSON-escaped quotes) and returns a frozen :class:`ContextError`, or ``None`` when the
text is not a context-length error. It never raises on a ``str`` and reads only the first
:data:`MAX_SCAN_CHARS` characters. All numbers are **tokens** unless a field says characters.

How it decides, like LiteLLM's ``is_error_str_context_window_exceeded`` but with numbers:

1. The text is normalised: JSON/Unicode/HTML escapes undone at any depth (``\\"`` ``\\\\\\"``
   ``\\'`` ``\\n`` ``\\u003e`` ``&gt;``), runs of byte escapes decoded as UTF-8 (``b'...\\xe2\\x80\\x99s'``),
   backticks dropped, Unicode spaces and whitespace collapsed, and a space put back between a
   number and a word (``16384tokens``, ``max_model_len=4096.Please``). Numbers may carry
   thousands separators (``16,384``, ``16 384`` with any Unicode space, ``16_384``, ``16'384``).
   Wrappers (LiteLLM prefixes, JSON bodies, Python reprs, trailing ``None``) need no
   unwrapping: rows are searched anywhere in the text.
2. :data:`NEGATIVES` (known look-alikes: rate limits, TPM, quota, budget, auth, content
   filter, string-length and tool-count validation) are checked first: any hit → ``None``.
3. :data:`ROWS` are tried in order; the first whose pattern matches wins. A row names its
   family, maps named regex groups to meanings and certainties, and may add a refinement.
   A new wording is one more row.

Every number says how sure it is (:class:`Certainty`): vLLM's "at least N input tokens" is a
**lower bound** (vLLM truncates tokenization at ``max_input + 1``), OpenRouter's "about N" is
approximate. A printed number that is *not* the model's window (prompt + output) goes to
``printed_limit`` with its :class:`LimitMeaning`, never to ``window``.

The table of wordings (family, wording, where seen) is :mod:`litellm_kvwarm.context_error_wordings`;
the result's shape :mod:`litellm_kvwarm.context_error_model`; a row's machinery
:mod:`litellm_kvwarm.context_error_rows`. This module is the parser and the public entry point:
every name above is importable from here.
"""

from __future__ import annotations

import html
import re

from .context_error_model import Certainty, ContextError, ErrorKind, Limit, LimitMeaning, Number, with_kind
from .context_error_rows import Row, to_int
from .context_error_wordings import NEGATIVES, ROWS

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


# Each starts only at the first backslash of a run ((?<!\\)): otherwise a long run of
# backslashes is retried from every position (quadratic).
_ESCAPED_QUOTE = re.compile(r"(?<!\\)\\+(?=[\"'`/])")
_ESCAPED_WS = re.compile(r"(?<!\\)\\+[nrt]")
_ESCAPED_UNICODE = re.compile(r"(?<!\\)\\+u([0-9a-fA-F]{4})")
# A run of byte escapes ("\xe2\x80\x99" in a Python bytes or str repr), at any escaping depth.
_ESCAPED_BYTES = re.compile(r"(?:(?<!\\)\\+x[0-9a-fA-F]{2})+")
_HEX_PAIR = re.compile(r"x([0-9a-fA-F]{2})")
_SPACE = re.compile(r"\s+")  # \s includes NBSP, narrow NBSP and thin space (U+00A0, U+202F, U+2009)
# A digit touching a letter ("16384tokens", "is16384", "5000cannot") or a sentence after a number
# ("max_model_len=4096.Please"): put back the space a row expects.
_DIGIT_LETTER = re.compile(r"(?<=\d)(?=[A-Za-z])|(?<=[A-Za-z])(?=\d)|(?<=\d\.)(?=[A-Za-z])")


def _decode_bytes(match: re.Match[str]) -> str:
    raw = bytes(int(h, 16) for h in _HEX_PAIR.findall(match.group(0)))
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:  # a str repr's "\xa0" (one Latin-1 character), not UTF-8 bytes
        return raw.decode("latin-1")


def _normalise(text: str) -> str:
    """Undo transport mangling: escapes at any depth (JSON, Python repr, bytes literals), HTML
    entities, backticks, typographic apostrophes, Unicode spaces; put back a space between a
    number and a word. Numbers keep their thousands separators (:data:`NUM` reads them)."""
    s = text[:MAX_SCAN_CHARS]
    if "\\" in s:
        s = _ESCAPED_BYTES.sub(_decode_bytes, s)
        s = _ESCAPED_UNICODE.sub(lambda m: chr(int(m.group(1), 16)), s)
        s = _ESCAPED_QUOTE.sub("", s)
        s = _ESCAPED_WS.sub(" ", s)
    if "&" in s:
        s = html.unescape(s)
    s = s.replace("`", "").replace("\u2019", "'").replace("\u2018", "'")
    s = _DIGIT_LETTER.sub(" ", s)
    return _SPACE.sub(" ", s)


def _apply(row: Row, groups: dict[str, str]) -> ContextError:
    slots: dict[str, object] = {}
    for group, (slot, certainty) in row.fields.items():
        value = to_int(groups.get(group))
        if value is None:
            continue
        if slot in ("prompt_chars", "char_limit"):
            slots[slot] = value
        elif slot == "limit":
            slots["printed_limit"] = Limit(value, row.limit_meaning or LimitMeaning.INPUT_LIMIT, certainty)
        else:
            slots[f"{slot}_tokens" if slot != "window" else "window"] = Number(value, certainty)
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

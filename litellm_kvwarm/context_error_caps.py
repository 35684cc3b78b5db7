"""The model's output cap and its window, both kept when one text prints both (pure; used by
:func:`~litellm_kvwarm.context_errors.parse_context_error` on a row's result).

A server or gateway may print the model's cap on output tokens per request beside its context window, in either
order, and only one of them is the wording a row reads:

* a window refusal that names the cap too ("This model's maximum context length is 128000 tokens. However, you
  requested 150000 tokens (10000 in the messages, 140000 in the completion). This model supports at most 16384
  completion tokens": an OpenAI-compatible gateway that adds its model card; "maximum context length is 131072
  tokens and the maximum number of output tokens is 8192", Fireworks/Together-style cards, 2025–2026);
* an output-cap refusal that names the window ("max_tokens: 70000 > 64000, which is the maximum allowed number of
  output tokens for claude-sonnet-4 (context window 200000 tokens)"; "max_tokens is too large: 20000. This model
  supports at most 16384 completion tokens, whereas its maximum context length is 128000 tokens").

So the result carries ``output_cap`` (tokens; the printed cap of any output-cap wording of
:data:`~litellm_kvwarm.context_error_wordings.ROWS`, or a cap phrase below) whenever the text prints one outside
the matched wording, and an output-cap refusal carries ``window`` when a window phrase outside its wording prints
one (the smallest, a LOWER_BOUND, when several differ). Neither is ever read for the other: a requested output
("max_tokens is too large: 9000", "maximum output tokens (20000) exceeds the context window") is no cap, and a
window phrase ("maximum context length is 8192") is no cap. The kind stays the row's.

Cap phrases that are no row of their own (they never say the request is over anything): "maximum number of output
tokens is N", "max output tokens: N", "maximum output length is N", "maximum completion tokens of N", "output token
limit of N" (also "of this model is N"), "the maximum value for max_tokens is N", "supports up to N output tokens".
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace

from .context_error_model import Certainty, ContextError, LimitMeaning, Number
from .context_error_rows import NUM, Row, to_int
from .context_error_windows import windows_outside
from .context_error_wordings import ROWS

__all__ = ["CAP_ROWS", "with_output_cap"]

#: The wordings whose printed limit is the model's output cap.
CAP_ROWS: tuple[Row, ...] = tuple(row for row in ROWS if row.limit_meaning is LimitMeaning.OUTPUT_LIMIT)

# A cap stated as a fact, not a requested output compared with something ("maximum output tokens (20000) exceeds").
_NOT_COMPARED = r"(?! ?\)?,? ?(?:tokens? )?(?:exceed|is (?:greater|larger|more|too)|>|cannot|must|should))"
_CAP_PHRASES = tuple(re.compile(p, re.IGNORECASE) for p in (
    r"(?:maximum|max) (?:number of )?(?:output|completion|generated|new) (?:tokens|length)(?: allowed)?"
    r"(?: for (?:this|the) model)?"
    r"(?: is| of|:|=)? ?\(?(?P<cap>" + NUM + r")" + _NOT_COMPARED,
    r"output (?:token )?(?:limit|cap)(?: (?:of|for) (?:this|the) model)?(?: of| is|:|=)? ?\(?(?P<cap>" + NUM + r")"
    + _NOT_COMPARED,
    r"maximum value for max_(?:completion_|output_|new_)?tokens is (?P<cap>" + NUM + r")",
    r"supports (?:up to|at most) (?P<cap>" + NUM + r") (?:output|completion) tokens",
))

Reader = Callable[[Row, "re.Match[str]"], ContextError]
Cut = Callable[[str, int, int], bool]


def _outside(span: tuple[int, int], spans: list[tuple[int, int]]) -> bool:
    start, end = span
    return not any(a < end and start < b for a, b in spans)


def _caps(s: str, spans: list[tuple[int, int]], read: Reader, cut: Cut) -> list[Number]:
    caps = []
    for row in CAP_ROWS:
        found = row.regex.search(s)
        if found is not None and _outside(found.span(), spans):
            limit = read(row, found).printed_limit
            if limit is not None:
                caps.append(Number(limit.value, limit.certainty))
    for phrase in _CAP_PHRASES:
        for found in phrase.finditer(s):
            value = to_int(found.group("cap"))
            if value is not None and value > 0 and _outside(found.span("cap"), spans):
                uncut = not cut(s, *found.span("cap"))
                caps.append(Number(value, Certainty.EXACT if uncut else Certainty.LOWER_BOUND))
    return caps


def with_output_cap(s: str, spans: list[tuple[int, int]], result: ContextError, read: Reader, cut: Cut) -> ContextError:
    """``result`` (read from ``s`` by wordings that matched ``spans``) with ``output_cap`` set from its own printed
    cap or from a cap printed outside ``spans``, and, for an output-cap refusal without a window, ``window`` from a
    window phrase outside ``spans``. ``read``: a row's result from its match; ``cut``: whether the number at
    ``s[start:end]`` may have been cut. ``result`` itself when the text prints neither."""
    own = result.printed_limit
    if own is not None and own.meaning is LimitMeaning.OUTPUT_LIMIT:
        result = replace(result, output_cap=Number(own.value, own.certainty))
        if result.window is None:
            windows = windows_outside(s, spans)
            values = {value for value, _, _ in windows}
            if len(values) == 1:
                value, start, end = windows[0]
                exact = all(not cut(s, a, b) for _, a, b in windows)
                result = replace(result, window=Number(value, Certainty.EXACT if exact else Certainty.LOWER_BOUND))
            elif values:
                result = replace(result, window=Number(min(values), Certainty.LOWER_BOUND))
        return result
    caps = _caps(s, spans, read, cut)
    if not caps:
        return result
    values = {c.value for c in caps}
    if len(values) == 1:
        exact = all(c.certainty is Certainty.EXACT for c in caps)
        return replace(result, output_cap=Number(caps[0].value, Certainty.EXACT if exact else Certainty.LOWER_BOUND))
    return replace(result, output_cap=Number(min(values), Certainty.LOWER_BOUND))

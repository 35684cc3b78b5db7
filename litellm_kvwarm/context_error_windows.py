"""A window read from one wording, dropped when the same text prints another, different window (pure; used by
:func:`~litellm_kvwarm.context_errors.parse_context_error` on a row's result).

A text may name two windows: a model's and a deployment's ("This model's maximum context length is 131072 tokens,
but the deployment's max_model_len is 32768"), a gateway that lists the refusals of several providers or
deployments one after the other (each with its own "maximum context length is W tokens"), a wrapper that adds the
context window it configured (``context_window: 8192``) to a server's message. The row that matched reads one of
them as the window; which one refused the request the text does not say, and a wrong exact window is worse than
none (a retry clamped to the larger one is refused again, a limit learned from it is wrong). So when a window phrase
*outside* the matched wording prints a different number, the window becomes the smallest of those printed, as a
LOWER_BOUND (the window that refused is one of them, so it is at least the smallest; never EXACT, so it is neither
clamped to nor learned). Its other numbers are kept; the kind is the row's own where the wording fixes it (a prompt
"longer than the context length" is over it alone), else UNKNOWN (which window the prompt and output overflowed is
not known).

A window phrase: ``maximum context length``, ``context length``/``window``/``size`` (not llama.cpp's or
text-generation-webui's "available context length", the room left), ``max_model_len``, ``max_seq_len``,
``max_total_tokens``, ``n_ctx``, ``context_length``/``context_window`` fields, each followed by a count (``is``,
``of``, ``only``, ``:``, ``=``, ``(`` between). A number inside the matched wording is the row's own (a total the
row reads after "context window:"), never a competitor; nor is one followed by ``%`` or a magnitude suffix.
"""

from __future__ import annotations

import re
from dataclasses import replace

from .context_error_model import Certainty, ContextError, ErrorKind, Number
from .context_error_rows import NUM, to_int

__all__ = ["windows_outside", "with_competing_window"]

_WINDOW_PHRASE = re.compile(
    r"(?:max_model_len|max_seq_len|max_total_tokens|\bn_ctx(?:_slot)?|context_length|context_window|"
    r"(?<!available )(?:maximum )?context (?:length|window|size))"
    r"(?: is| of)?(?: only)? ?[:=(]? ?(?P<n>" + NUM + r")(?! ?%)",
    re.IGNORECASE,
)


def windows_outside(s: str, spans: list[tuple[int, int]]) -> list[tuple[int, int, int]]:
    """Every window phrase of ``s`` whose count lies outside ``spans``: (tokens, start, end of the count)."""
    found_windows = []
    for found in _WINDOW_PHRASE.finditer(s):
        start, end = found.span("n")
        if any(a <= start < b or a < end <= b for a, b in spans):
            continue
        value = to_int(found.group("n"))
        if value is not None:
            found_windows.append((value, start, end))
    return found_windows


def with_competing_window(s: str, spans: list[tuple[int, int]], result: ContextError,
                             kind_fixed: bool) -> ContextError:
    """``result`` (read from ``s`` by wordings that matched ``spans``) with its window made a floor, the smallest
    window printed, when a window phrase outside those spans prints a different number; ``kind_fixed``: the row
    fixed the kind (kept), else the kind is UNKNOWN. ``result`` itself otherwise."""
    w = result.window
    if w is None:
        return result
    others = {value for value, _, _ in windows_outside(s, spans) if value != w.value}
    if not others:
        return result
    floor = replace(result, window=Number(min(others | {w.value}), Certainty.LOWER_BOUND))
    return replace(floor, kind=result.kind if kind_fixed else ErrorKind.UNKNOWN)

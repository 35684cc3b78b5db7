"""What the fragments of a text (:mod:`~litellm_kvwarm.token_fragments`) add to the linear estimates (pure):
token edges the fitted weights leave out (safe), and routing corrections for digit groups, line words, escapes,
a space before a pipe, box drawing, mixed runs and Vietnamese tone letters. Used by :class:`~litellm_kvwarm.token_estimators.CalibratedEstimator`."""

from __future__ import annotations

import re
from collections.abc import Sequence

from .token_features import FEATURES
from .token_fragments import COMBINING_SAFE_TOKENS, FRAGMENT_SAFE_TOKENS, Fragments
from .token_runs import RUN_MIN_CHARS

__all__ = [
    "BOX_ROUTING_TOKENS", "DIGIT_GROUP_FAMILIES", "LATIN_ADDITIONAL_ROUTING_TOKENS", "LINE_BREAK_ROUTING_TOKENS",
    "LINE_WORDS_FITTED_SHARE", "MIXED_RUN_ROUTING_PER_CHAR", "MIXED_RUN_ROUTING_PER_RUN", "PIPE_ROUTING_TOKENS",
    "NUMERIC_MARKS_FROM", "NUMERIC_MARKS_FULL", "PUNCT_WORDS_FROM", "PUNCT_WORDS_FULL", "fragment_tokens", "grouped_digits",
    "MARKER_ROUTING_TOKENS", "line_words_routing", "marker_routing", "mark_pairs_routing", "punct_words_safe",
]

#: Routing tokens of one box-drawing character (measured 0.98-1.26; routing leans low).
BOX_ROUTING_TOKENS = 0.9
#: Routing tokens of one Vietnamese tone letter (U+1E00–U+1EFF; the text costs 0.25 tokens per character in qwen3.6).
LATIN_ADDITIONAL_ROUTING_TOKENS = 0.3
#: Routing tokens of a run of distinct run characters (:mod:`~litellm_kvwarm.token_fragments`): per character and per run.
MIXED_RUN_ROUTING_PER_CHAR = 1 / 16
MIXED_RUN_ROUTING_PER_RUN = 1.0
#: Routing tokens of the line break before a word (``newline_words``): never merged with the word after it, one
#: token of its own in every measured family, so the word costs that and what it costs after a space; priced 0.85,
#: leaning low as routing does (word lists then read 0.83-0.88 of the truth: ``tests/lab/test_line_words_truth.py``).
LINE_BREAK_ROUTING_TOKENS = 0.85
#: Share of a text's word starts (line words and single spaces) that start a line or follow a tab, up to which the fitted
#: routing weights price line words (prose, code, logs, tables: at most 0.22 in ``tests/data/token_sample.json``).
LINE_WORDS_FITTED_SHARE = 0.25
#: Routing tokens of a space and the ``|`` after it (``space_pipes``): one token in every measured family (the space
#: merges into it), which the weights price as a space and a punctuation mark (~1.5); the calibration data holds
#: almost none (0.05-0.2% of its spaces), so Markdown tables read 1.0-1.14 of the truth in routing, short cells 1.3.
PIPE_ROUTING_TOKENS = 1.0

#: Words after a punctuation mark per byte of the sample (``punct_words``) from which the safe estimate adds their token
#: edge, and at which in full (linearly between): code, JSON, HTML, logs and URLs hold 0.01-0.10, random printable text
#: (passwords, fuzz strings, ``git diff --binary``'s base85, Ascii85) 0.16-0.18.
PUNCT_WORDS_FROM, PUNCT_WORDS_FULL = 0.08, 0.14

#: Digits per byte of the sample from which routing prices a mark right after a mark (``mark_pairs``) at nothing, and
#: at which in full (linearly between): numeric JSON holds 0.6-0.65, JSON and logs 0.25-0.4.
NUMERIC_MARKS_FROM, NUMERIC_MARKS_FULL = 0.4, 0.55

#: Routing tokens of a ``^`` or ``~`` after the same mark (``^^^^`` is one token, ``~~~~~~~~`` one in cl100k).
MARKER_ROUTING_TOKENS = 0.25
# Runs of carets, and of tildes too short for token_runs (which prices those of RUN_MIN_CHARS and more).
_MARKERS = re.compile(rb"\^{2,}|(?<!~)~{2,%d}(?!~)" % (RUN_MIN_CHARS - 1))

_FEATURE_INDEX = {name: i for i, name in enumerate(FEATURES)}


def marker_routing(f: Fragments, w_routing: Sequence[float]) -> float:
    """Routing tokens to add (≤ 0) for the error markers of Python 3.11+ tracebacks and compilers (``~~~~^^^^^^``
    under the failing expression, rustc's ``^^^^^ expected``): byte-level BPEs spend one token on four carets or eight
    tildes, the weights ~0.85 a mark, so Python tracebacks read routing 1.09-1.25 × the truth
    (``tests/lab/test_traceback_markers_truth.py``). Each mark after the same mark is priced at
    :data:`MARKER_ROUTING_TOKENS`."""
    data = f.text
    if b"^^" not in data and b"~~" not in data:
        return 0.0
    repeats = sum(len(run) - 1 for run in _MARKERS.findall(data))
    return repeats * min(0.0, MARKER_ROUTING_TOKENS - w_routing[_FEATURE_INDEX["punct"]])


def mark_pairs_routing(f: Fragments, digits: float, w_routing: Sequence[float]) -> float:
    """Routing tokens to add (≤ 0) for the marks right after a mark in number-heavy text: byte-level BPEs group a run
    of marks in one pre-token and merge the short ones between numbers (``,-``, ``],[``, ``],[-``: one token), which
    the weights price per mark; minified GeoJSON and integer matrices read routing 1.11-1.32 × the truth
    (``tests/lab/test_numeric_json_truth.py``). Nothing below :data:`NUMERIC_MARKS_FROM` digits per byte (code and
    JSON keep the fitted price), in full from :data:`NUMERIC_MARKS_FULL`."""
    if not f.size:
        return 0.0
    weight = min(1.0, (digits / f.size - NUMERIC_MARKS_FROM) / (NUMERIC_MARKS_FULL - NUMERIC_MARKS_FROM))
    return -weight * f.mark_pairs * w_routing[_FEATURE_INDEX["punct"]] if weight > 0 else 0.0


def punct_words_safe(f: Fragments, w_safe: Sequence[float]) -> float:
    """Safe tokens to add for the words after a punctuation mark where the sample is cut so (random printable text):
    letters there come one or two between marks, each run a token of its own, while the weights price a letter at
    0.2-0.35 (fitted on words); base85 and random passwords read 0.88-0.98 safe ÷ truth in every family
    (``tests/lab/test_random_printable_truth.py``). Nothing below :data:`PUNCT_WORDS_FROM` (code and JSON keep
    their price), in full from :data:`PUNCT_WORDS_FULL`."""
    price = FRAGMENT_SAFE_TOKENS - w_safe[_FEATURE_INDEX["letters"]]
    if price <= 0 or not f.size:
        return 0.0
    words = f.punct_words
    weight = min(1.0, (words / f.size - PUNCT_WORDS_FROM) / (PUNCT_WORDS_FULL - PUNCT_WORDS_FROM))
    return price * words * weight if weight > 0 else 0.0


#: Families whose pre-tokenizer cuts a run of digits into groups of three (``\\p{N}{1,3}``): a run of
#: n digits costs ⌈n/3⌉ tokens (measured: cl100k, o200k, deepseek, llama3; Qwen and Gemma spend one per
#: digit). ``any`` leans low for every family, so it follows the cheapest.
DIGIT_GROUP_FAMILIES = frozenset({"cl100k", "o200k", "deepseek", "llama3", "any"})


def grouped_digits(digits: float, runs: int, w_routing: Sequence[float]) -> float:
    """Routing tokens to add (≤ 0) for the digits of a sample in a :data:`DIGIT_GROUP_FAMILIES` family:
    its digits priced at ``(digits + runs) / 3`` (one third per digit and per run: ⌈n/3⌉ for a run of n,
    less a third on average) where that is below the weight's price (long numbers: IDs, timestamps,
    floats; single digits keep the fitted weight). The routing weight (0.68–0.82 per digit) read
    tables of numbers 1.3–2.4 × their tokens."""
    weight = w_routing[_FEATURE_INDEX["digits"]]
    return min(0.0, (digits + runs) / 3 - weight * digits)


def line_words_routing(f: Fragments, spaces: float, w_routing: Sequence[float]) -> float:
    """Routing tokens to add (≥ 0) for the words of a sample that start a line or follow a tab, where they
    are many of its word starts (words after a line break, after a tab, after a single space): in full from
    half, not at all up to :data:`LINE_WORDS_FITTED_SHARE`, linearly between. A word after a line break is
    priced at its break (:data:`LINE_BREAK_ROUTING_TOKENS`: a token of its own) and a word after a space, a
    word after a tab as a word after a space (most tokenizers merge a tab into the word after it, as a space:
    ``"yes\tno"`` costs what ``"yes no"`` costs in cl100k, o200k, Qwen and Llama 3). The routing weights
    price a break or tab at 0–0.56 and the word after it by its letters only, which the fit absorbed
    elsewhere for prose and code; a word list, ``ls -1`` output or a content list of one-word parts (joined
    by line breaks) read 0.15 of the truth, tab-separated values 0.04–0.55."""
    line_words = f.line_words
    share = line_words / (line_words + spaces)
    weight = min(1.0, (share - LINE_WORDS_FITTED_SHARE) / (0.5 - LINE_WORDS_FITTED_SHARE))
    if weight <= 0:
        return 0.0
    word = w_routing[_FEATURE_INDEX["spaces"]] - w_routing[_FEATURE_INDEX["breaks"]]
    newline = f.newline_words
    return weight * (max(0.0, newline * (LINE_BREAK_ROUTING_TOKENS + word)) + max(0.0, (line_words - newline) * word))


def fragment_tokens(f: Fragments, w_safe: Sequence[float], w_routing: Sequence[float]) -> tuple[float, float]:
    """``(safe, routing)`` tokens to add for the fragments of the sample (:mod:`~litellm_kvwarm.token_fragments`):
    safe what the weights leave out of one token per space before a digit and per word after a digit
    or a case change, of two per word after a line break or tab and per space before one, of 2.5 per combining mark; routing one
    punctuation mark less per escape, a space before a pipe and the pipe as one token, the mixed runs at their run price instead of their class price, Vietnamese tone
    letters at theirs."""
    one = FRAGMENT_SAFE_TOKENS
    spaces, letters, breaks = (w_safe[_FEATURE_INDEX[k]] for k in ("spaces", "letters", "breaks"))
    safe = 0.0
    for price, count in ((one - spaces, "digit_spaces"), (one - letters, "word_edges"),
                         (2 * one - breaks - letters, "line_words"), (2 * (one - breaks), "space_breaks")):
        if price > 0:  # counted only when priced (Fragments counts on first read)
            safe += price * getattr(f, count)
    if (marks := COMBINING_SAFE_TOKENS - w_safe[_FEATURE_INDEX["utf8_2"]]) > 0:
        safe += marks * f.combining_marks
    safe += punct_words_safe(f, w_safe)
    punct = w_routing[_FEATURE_INDEX["punct"]]
    routing = -f.escaped_quotes * punct
    if (pipe := w_routing[_FEATURE_INDEX["spaces"]] + punct - PIPE_ROUTING_TOKENS) > 0:
        routing -= pipe * f.space_pipes
    if (tone := w_routing[_FEATURE_INDEX["utf8_3"]] - LATIN_ADDITIONAL_ROUTING_TOKENS) > 0:  # Vietnamese tone letters
        routing -= tone * f.latin_additional
    routing += marker_routing(f, w_routing)
    if f.mixed_chars:
        routing += f.mixed_chars * (MIXED_RUN_ROUTING_PER_CHAR - punct) + f.mixed_runs * MIXED_RUN_ROUTING_PER_RUN
    return safe, routing

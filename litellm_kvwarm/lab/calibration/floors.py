"""Per-class lower bounds of the weights: what a tokenizer spends on each non-ASCII class (pure
but for the tokenizer calls the caller passes in).

A safe weight below what a vocabulary may spend on a character of its class lets a text made
of that class fall below the truth however the other weights are fitted (3,000 Braille
characters cost 8,957 cl100k tokens; a ``symbols`` weight of 0 estimated 40). So, per family and
class of :data:`FLOOR_CLASSES`:

* the class's text is cut out of every fit-half request that holds at least
  :data:`MIN_CLASS_CHARS` characters of it (:data:`MIN_CLASS_CHARS_BY_CLASS` for general punctuation) (its runs joined by single spaces) and tokenized;
  tokens ÷ class characters is the class's *rate* in that request;
* **safe floor**: the largest rate seen, where at least :data:`MIN_TEXTS` requests hold the
  class; otherwise, and always for :data:`BYTE_BOUND_ONLY` (classes spanning thousands of code
  points of which the data shows a few blocks), the byte-level bound :data:`BYTE_BOUND`: a
  byte-level BPE (and SentencePiece with byte fallback) spends at most one token per UTF-8 byte;
* **routing floor**: :data:`ROUTING_FLOOR_SHARE` of the :data:`ROUTING_FLOOR_QUANTILE` quantile
  of the rates measured on the runs joined *without* spaces (the spaces have their own weight),
  where at least :data:`MIN_TEXTS` requests hold the class; else 0. It keeps scripts written
  without spaces (Thai, CJK) from being priced near zero by a fit that found spaces the
  cheaper proxy for words.
* ``indented_lines`` routing floor :data:`INDENTED_LINE_ROUTING_FLOOR` in every family: an
  indentation run is one token whatever its length, and the first word after it has no single
  space before it (single spaces are what the routing fit counts words by); without the floor
  the per-kind routing fit priced runs at 0 and 4-space-indented code read 0.77× (qwen2.5).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

import numpy as np

__all__ = ["BYTE_BOUND", "BYTE_BOUND_ONLY", "FLOOR_CLASSES", "INDENTED_LINE_ROUTING_FLOOR", "ClassTexts", "class_texts", "floors"]

#: Non-ASCII classes and their code points (``token_features.CHAR_CLASSES`` names).
FLOOR_CLASSES = {
    "latin_ext": "\u0080-\u017f", "cyrillic": "\u0400-\u04ff", "utf8_2": "\u0180-\u03ff\u0500-\u07ff",
    "gen_punct": "\u2000-\u203f", "symbols": "\u2040-\u2fff", "cjk": "\u3000-\ud7ff", "indic": "\u0800-\u0fff",
    "utf8_3": "\u1000-\u1fff\ue000-\uffff", "utf8_4": "\U00010000-\U0010ffff",
}
#: Tokens per character a byte-level vocabulary may spend at most (UTF-8 bytes of the class).
BYTE_BOUND = {"latin_ext": 2.0, "cyrillic": 2.0, "indic": 3.0, "utf8_2": 2.0, "gen_punct": 3.0, "symbols": 3.0, "cjk": 3.0, "utf8_3": 3.0, "utf8_4": 4.0}
BYTE_BOUND_ONLY = frozenset({"symbols", "utf8_4"})
MIN_CLASS_CHARS = 200
#: General punctuation (curly quotes, dashes) comes a few per message: requests holding this many count.
MIN_CLASS_CHARS_BY_CLASS = {"gen_punct": 50}
MIN_TEXTS = 20
MAX_TEXTS = 400
ROUTING_FLOOR_QUANTILE = 0.1
ROUTING_FLOOR_SHARE = 0.5
#: Tokens per indented line the routing weight is at least: the run's own token (measured: removing
#: the indentation of 21 LiteLLM source files saves 1.00 token per indented line in cl100k, o200k,
#: qwen2.5, qwen3.6, llama3 and gemma3, 0.96 in deepseek) plus half a word (see module doc).
INDENTED_LINE_ROUTING_FLOOR = 1.5
_PATTERNS = {name: re.compile(f"[{chars}]+") for name, chars in FLOOR_CLASSES.items()}

#: class -> (runs joined by spaces, runs joined without, class characters) per request
ClassTexts = dict[str, list[tuple[str, str, int]]]


def class_texts(texts: Iterable[str]) -> ClassTexts:
    """Each class's text cut out of each of ``texts`` that holds ≥ :data:`MIN_CLASS_CHARS` of it
    (at most :data:`MAX_TEXTS` per class, evenly spread over the input order)."""
    found: ClassTexts = {name: [] for name in FLOOR_CLASSES}
    for text in texts:
        if text.isascii():
            continue
        for name, pattern in _PATTERNS.items():
            runs = pattern.findall(text)
            chars = sum(map(len, runs))
            if chars >= MIN_CLASS_CHARS_BY_CLASS.get(name, MIN_CLASS_CHARS):
                found[name].append((" ".join(runs), "".join(runs), chars))
    for name, items in found.items():
        step = max(1, len(items) // MAX_TEXTS)
        found[name] = items[::step][:MAX_TEXTS]
    return found


def floors(texts: ClassTexts, count: Callable[[list[str]], list[int]], features: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """(safe floors, routing floors) in ``features`` order (tokens per character; 0 for the
    features that are not a class of :data:`FLOOR_CLASSES`, but ``indented_lines``' routing floor,
    :data:`INDENTED_LINE_ROUTING_FLOOR` tokens per line), with ``count`` the family's tokenizer
    (texts -> token counts)."""
    safe, routing = np.zeros(len(features)), np.zeros(len(features))
    if "indented_lines" in features:
        routing[features.index("indented_lines")] = INDENTED_LINE_ROUTING_FLOOR
    for name in FLOOR_CLASSES:
        if name not in features:
            continue
        items = texts.get(name, [])
        index = features.index(name)
        bound = BYTE_BOUND[name]
        if len(items) < MIN_TEXTS:
            safe[index] = bound
            continue
        chars = np.array([c for _, _, c in items], dtype=float)
        spaced = np.array(count([s for s, _, _ in items]), dtype=float) / chars
        joined = np.array(count([j for _, j, _ in items]), dtype=float) / chars
        safe[index] = bound if name in BYTE_BOUND_ONLY else min(bound, float(spaced.max()))
        routing[index] = ROUTING_FLOOR_SHARE * float(np.quantile(joined, ROUTING_FLOOR_QUANTILE))
    return safe, routing

"""Features of rendered text for the calibrated estimator: character classes, ``dense``, ``indented_lines``,
sampling (pure).

Cost (details and benchmark in ``docs/estimator.md``): character classes are counted at
C speed (one ``bytes.translate`` deleting letters, then ``translate``/``count`` on the
rest); a request longer than :data:`SAMPLE_CHARS` characters is classified on
:data:`SAMPLE_CHARS` characters of evenly spaced 256-character blocks and scaled up, so
the cost stays bounded (tens of µs) at 100k tokens. The fitted weights were fitted on
features computed exactly this way, so sampling noise is inside their margins. The estimator also
reads the sample's runs of one character and gaps (:func:`request_shape`,
:mod:`~litellm_kvwarm.token_runs`; one more ``translate`` and a few ``count``/``in`` searches).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import repeat
from operator import itemgetter

from .token_counts import RequestCounts
from .token_fragments import DENSE_DELETE, DENSE_PAIRS, NO_FRAGMENTS, Fragments, find_fragments, mark_pairs
from .token_runs import Runs, find_runs

__all__ = [
    "CHAR_CLASSES",
    "FEATURES",
    "char_classes",
    "parts_features",
    "request_features",
    "request_features_and_regime",
    "request_shape",
    "text_features",
]

#: Character classes, in the order :func:`char_classes` returns them.
#: ``spaces``: spaces outside runs; ``indent``: spaces in runs of two or more (indentation, aligned
#: columns, pretty-printed JSON), counted as 2 × the non-overlapping ``"  "`` pairs (a run of n
#: spaces gives 2⌊n/2⌋; one ``bytes.count``). Byte-level BPEs merge such a run into one token,
#: so these spaces cost far less than word-separating ones.
#: ``gen_punct``: U+2000–U+203F (curly quotes, dashes, bullets, ellipsis; E2 80 xx), common in prose;
#: ``symbols``: the rest of U+2000–U+2FFF (arrows, math, box drawing, Braille, dingbats), which
#: a vocabulary may spell byte by byte (3 tokens each).
#: ``latin_ext``: U+0080–U+017F (accented Latin, ``°``, ``×``; lead bytes C2–C5); ``cyrillic``:
#: U+0400–U+04FF (lead bytes D0–D3); ``utf8_2``: the other 2-byte characters (Greek, Hebrew,
#: Arabic, IPA, …); ``cjk``: U+3000–U+DFFF (CJK punctuation, kana, Han, Hangul); ``indic``:
#: U+0800–U+0FFF (Devanagari, Bengali, Tamil, Thai, Lao, Tibetan; lead byte E0); ``utf8_3``:
#: other 3-byte (Vietnamese tone marks, Georgian, Ethiopic, fullwidth forms); ``utf8_4``: emoji
#: and other astral characters. Scripts within one
#: class cost alike in most vocabularies; the classes that differ by an order of magnitude
#: (isolated accents vs Cyrillic words, curly quotes vs Devanagari) are kept apart.
CHAR_CLASSES = (
    "letters", "digits", "spaces", "indent", "breaks", "punct", "latin_ext", "cyrillic", "utf8_2", "gen_punct", "symbols",
    "cjk", "indic", "utf8_3", "utf8_4",
)
#: Inputs of the calibrated linear estimates, in weight order. ``indented_lines``: line breaks
#: followed by a space (one ``bytes.count``), i.e. indentation *runs*: byte-level BPEs spend about
#: one token per run whatever its length, which ``indent`` (per space) cannot price — its weight
#: fitted to ~0 and 4-space-indented code read 0.65× its tokens.
FEATURES = ("const", "messages", "tools", *CHAR_CLASSES, "dense", "indented_lines")
#: Above this many characters, classes are counted on a sample of this many (see module doc).
SAMPLE_CHARS = 8192
SAMPLE_BLOCK_CHARS = 256
#: ``dense``: per block of 256 letters, digits and separator runs (a run of spaces, line breaks,
#: punctuation or non-ASCII bytes counts once: ``",\n    "`` between two quoted base64 lines is one
#: interruption, not eight), ASCII letters and digits beyond this many per separator run. Prose
#: scores 0; base64, hashes, long identifiers and long-word languages score high: they cost far more
#: tokens per letter than prose does. Counting separator bytes instead let dense text wrapped in short
#: punctuation (a JSON array of quoted 76-character base64 lines, a Python list of them, PEM lines
#: inside indented JSON) score a third of plain base64 and read 0.77–0.91 of its tokens (safe).
#: A ``,`` or ``;`` right after an upper-case letter is no separator (a ``;`` there counts as a letter, a ``,`` not
#: at all): short random capitals cut every 2–8 characters by them, the base64-VLQ ``mappings`` of a source map
#: (``AAAA,CAAC,MAAM;;AAE9F``) and lists of upper-case codes, cost 0.58–0.70 tokens per character in every measured
#: family (``;X`` more than ``,X``), scored 0 and read 0.56–0.86 of their tokens (safe; a 54 KB ``tsc`` map 0.64 in
#: o200k); they read 1.05–1.35 now (``tests/lab/test_source_maps_truth.py``). Lower-case words and digits joined by
#: commas (CSV, minified JS, numbers) keep their cuts: they cost prose or digit rates.
DENSE_LETTERS_PER_SEPARATOR = 5
DENSE_BLOCK_BYTES = 256
#: The *English* regime: a request whose sampled text has at least
#: :data:`ENGLISH_MIN_MARKERS_PER_100_CHARS` occurrences of :data:`ENGLISH_MARKER` per 100
#: characters, and under :data:`ENGLISH_MAX_NON_ASCII_SHARE` non-ASCII characters, gets its
#: family's English weights (fitted on such requests only). One weight per character class must
#: otherwise cover every language in the class — plain-ASCII Swahili or Finnish cost up to 1.5×
#: the tokens per letter of English — which leaves English over-estimated by ~1.8× instead of
#: ~1.4×. Measured on the calibration data: no other language's text reaches 0.05, two thirds
#: of ShareGPT and nine tenths of BFCL requests reach 0.3 (one ``bytes.count``, ~4 µs).
ENGLISH_MARKER = b" the "
ENGLISH_MIN_MARKERS_PER_100_CHARS = 0.3
ENGLISH_MAX_NON_ASCII_SHARE = 0.02


def _byte_set(ranges: Iterable[tuple[int, int]]) -> bytes:
    return bytes(b for lo, hi in ranges for b in range(lo, hi + 1))


# A letter or a UTF-8 continuation byte is deleted in the first pass; every other byte is
# one character (ASCII non-letter, or the lead byte of a multi-byte character).
_LETTERS_AND_CONTINUATION = _byte_set([(0x41, 0x5A), (0x61, 0x7A), (0x80, 0xBF)])
_CODE = {
    "digits": b"0", "spaces": b" ", "breaks": b"\n", "punct": b"!", "latin_ext": b"L", "cyrillic": b"R", "utf8_2": b"2",
    "symbols": b"S", "cjk": b"C", "indic": b"I", "utf8_3": b"3", "utf8_4": b"4",
}
_CODE_TABLE = bytes(
    _CODE["digits"][0] if 0x30 <= b <= 0x39
    else _CODE["spaces"][0] if b == 0x20
    else _CODE["breaks"][0] if b in (0x09, 0x0A, 0x0B, 0x0C, 0x0D)
    else _CODE["punct"][0] if b < 0x80
    else _CODE["latin_ext"][0] if 0xC0 <= b <= 0xC5  # U+0080–U+017F (C0/C1 never lead valid UTF-8)
    else _CODE["cyrillic"][0] if 0xD0 <= b <= 0xD3  # U+0400–U+04FF
    else _CODE["utf8_2"][0] if 0xC6 <= b <= 0xDF
    else _CODE["symbols"][0] if b == 0xE2  # U+2000–U+2FFF
    else _CODE["cjk"][0] if 0xE3 <= b <= 0xED  # U+3000–U+DFFF: CJK punctuation, kana, Han, Hangul
    else _CODE["indic"][0] if b == 0xE0  # U+0800–U+0FFF
    else _CODE["utf8_3"][0] if 0xE1 <= b <= 0xEF
    else _CODE["utf8_4"][0]
    for b in range(256)
)
_NON_ASCII_CLASSES = ("latin_ext", "cyrillic", "utf8_2", "symbols", "cjk", "indic", "utf8_3", "utf8_4")
_INDENTED_LINE = b"\n "
_ASCII_ONLY = dict.fromkeys(_NON_ASCII_CLASSES, 0)
_CLASS_COUNTS = itemgetter(*CHAR_CLASSES)  # a dict's counts in CHAR_CLASSES order
_GEN_PUNCT_LEAD = b"\xe2\x80"  # U+2000–U+203F: split off ``symbols`` after counting

def char_classes(text: str) -> tuple[float, ...]:
    """Characters of ``text`` per class of :data:`CHAR_CLASSES` (they sum to ``len(text)``)."""
    return text_features(text)[: len(CHAR_CLASSES)]


def text_features(text: str) -> tuple[float, ...]:
    """:data:`CHAR_CLASSES` counts of ``text`` followed by its ``dense`` score and ``indented_lines``;
    see :func:`parts_features`."""
    return parts_features((text,), len(text))


def parts_features(parts: Sequence[str], total: int) -> tuple[float, ...]:
    """:data:`CHAR_CLASSES` counts of the text ``"".join(parts)`` (``total`` characters long)
    followed by its ``dense`` score (characters) and ``indented_lines`` (line breaks followed by a
    space).

    Counted at C speed: the text (or, past :data:`SAMPLE_CHARS`, a sample of evenly spaced
    blocks taken from the parts without joining them, scaled back up to ``total``) is UTF-8
    encoded, letters and continuation bytes are deleted in one ``bytes.translate``, and what
    is left (one byte per character) is mapped to class codes and counted. ``dense`` maps the
    byte pairs of :func:`~litellm_kvwarm.token_fragments.mark_pairs` to letters and separator-run
    starts once and counts the starts per 256 (``bytes.count`` with start/end). No per-character
    Python loop.
    """
    return _features(parts, total)[0]


NO_RUNS = Runs({})


def _features(
    parts: Sequence[str], total: int, with_runs: bool = False,
) -> tuple[tuple[float, ...], bool, Runs, float, Fragments]:
    """:func:`parts_features`, whether the text is in the English regime, with ``with_runs`` its long
    runs of one character and gaps (:mod:`~litellm_kvwarm.token_runs`) and its fragments
    (:mod:`~litellm_kvwarm.token_fragments`), both counted in the sample (else :data:`NO_RUNS`,
    :data:`~litellm_kvwarm.token_fragments.NO_FRAGMENTS`), and the factor scaling the sample's counts
    to the text (one pass)."""
    if total == 0:
        return (0.0,) * (len(CHAR_CLASSES) + 2), False, NO_RUNS, 1.0, NO_FRAGMENTS
    sample = _sample(parts, total)
    ascii_only = sample.isascii()
    data = sample.encode("ascii") if ascii_only else sample.encode("utf-8", "surrogatepass")
    rest = data.translate(None, _LETTERS_AND_CONTINUATION)
    codes = rest.translate(_CODE_TABLE)
    # Spaces are the commonest non-letter: delete them once, count the rest on what is left.
    no_spaces = codes.translate(None, _CODE["spaces"])
    counts = {"spaces": len(codes) - len(no_spaces), "digits": no_spaces.count(_CODE["digits"])}
    counts["breaks"] = no_spaces.count(_CODE["breaks"])
    if ascii_only:  # no non-ASCII class to count (nor to add up below: all 0)
        counts.update(_ASCII_ONLY)
        non_ascii = 0
    else:
        for name in _NON_ASCII_CLASSES:
            counts[name] = no_spaces.count(_CODE[name])
        non_ascii = sum(counts[name] for name in _NON_ASCII_CLASSES)
    counts["punct"] = len(no_spaces) - counts["digits"] - counts["breaks"] - non_ascii
    counts["letters"] = len(sample) - len(rest)
    counts["indent"] = 2 * sample.count("  ") if counts["spaces"] > 1 else 0  # str: 1/3 the length of CJK bytes
    indented = data.count(_INDENTED_LINE) if counts["spaces"] and counts["breaks"] else 0
    counts["spaces"] -= counts["indent"]
    counts["gen_punct"] = data.count(_GEN_PUNCT_LEAD) if counts["symbols"] else 0
    counts["symbols"] -= counts["gen_punct"]
    scale = total / len(sample)
    english = False
    if non_ascii - counts["symbols"] - counts["gen_punct"] < ENGLISH_MAX_NON_ASCII_SHARE * len(sample):  # all but symbols
        english = data.count(ENGLISH_MARKER) * 100 >= ENGLISH_MIN_MARKERS_PER_100_CHARS * len(sample)
    # two spaces in a row: ``indent`` counted them (none where there are under two spaces at all)
    runs = find_runs(sample, data, double_spaces=counts["indent"] > 0) if with_runs else NO_RUNS
    marks, pairs = mark_pairs(data)
    fragments = find_fragments(data, marks, pairs) if with_runs else NO_FRAGMENTS
    classes = (*[c * scale for c in _CLASS_COUNTS(counts)], _dense(pairs) * scale, indented * scale)
    return classes, english, runs, scale, fragments


def _dense(pairs: bytes) -> int:
    # The letters and digits and the first separator of each separator run (``a`` and ``|`` of
    # token_fragments.DENSE_PAIRS, the rest of each run deleted): per 256 of them, letters − k·runs
    # = size − (k + 1)·runs, floored at 0: one C-level ``count`` per block (``map`` over the block
    # bounds, no Python frame per block).
    marks = pairs.translate(DENSE_PAIRS, DENSE_DELETE)
    if not marks:
        return 0
    size, factor = DENSE_BLOCK_BYTES, DENSE_LETTERS_PER_SEPARATOR + 1
    starts = range(0, len(marks), size)
    others = list(map(marks.count, repeat(b"|", len(starts)), starts, range(size, len(marks) + size, size)))
    lengths = [size] * len(others)
    lengths[-1] = len(marks) - starts[-1]
    return sum([n - factor * o for n, o in zip(lengths, others) if factor * o < n])


def _sample(parts: Sequence[str], total: int) -> str:
    """The joined parts, or :data:`SAMPLE_CHARS` characters of them in evenly spaced
    :data:`SAMPLE_BLOCK_CHARS`-character blocks sliced from the joined text (joining is a
    memory copy, far cheaper than locating blocks part by part)."""
    text = parts[0] if len(parts) == 1 else "".join(parts)
    if total <= SAMPLE_CHARS:
        return text
    blocks, size = SAMPLE_CHARS // SAMPLE_BLOCK_CHARS, SAMPLE_BLOCK_CHARS
    stride = (total - size) / (blocks - 1)
    return "".join([text[start : start + size] for start in map(int, map(stride.__mul__, range(blocks)))])


def request_features(counts: RequestCounts) -> tuple[float, ...]:
    """The calibrated estimator's inputs, in :data:`FEATURES` order."""
    return request_features_and_regime(counts)[0]


def request_features_and_regime(counts: RequestCounts) -> tuple[tuple[float, ...], bool]:
    """:func:`request_features` and whether the request is in the English regime
    (:data:`ENGLISH_MARKER`), from one pass over its text."""
    classes, english, _, _, _ = _features(counts.parts, counts.chars)
    return (1.0, float(counts.messages), float(counts.tools), *classes), english


def request_shape(counts: RequestCounts) -> tuple[tuple[float, ...], bool, Runs, float, Fragments]:
    """:func:`request_features_and_regime`, the text's long runs of one character, the factor that
    scales the sample's counts to the whole text (the runs are counted in the sample) and the
    sample's fragments (:mod:`~litellm_kvwarm.token_fragments`)."""
    classes, english, runs, scale, fragments = _features(counts.parts, counts.chars, with_runs=True)
    return (1.0, float(counts.messages), float(counts.tools), *classes), english, runs, scale, fragments

"""Where byte-level BPEs cut text into more tokens than its character classes say, and where fewer
(pure; counted on the same sample as the classes, at C speed).

The calibrated weights price characters by class; fitted on chat text, they price a space at
0.4–0.9 tokens (most spaces lead a word and share its token), a letter at 0.1–0.35 (letters come
in words) and, for deepseek and llama3 outside the English regime, a line break or tab at 0. Five
shapes break those averages (measured with the calibration tokenizers,
``tests/lab/test_token_shapes_truth.py``; ratios are safe ÷ truth before this module):

* **A space before a digit** (``digit_spaces``): every pre-tokenizer of the measured families
  (cl100k, o200k, Qwen 2.5/3, DeepSeek, Llama 3) keeps digits apart from a leading space, so the
  space is one whole token: ``1.5, 2.5, 3.5`` spends one token per character in Qwen (digits split
  one per token). Space-separated numbers read 0.87 (qwen2.5), hex dumps (``0x00, 0x1f``) 0.85–0.93.
* **A letter after a digit** (``word_edges``): digits and letters never share a pre-token, so the
  letters after a digit (``0x``, ``3f``, ``12ms``, ``2024-01-01T10``) start a token of their own.
* **A letter after a control character** (``word_edges`` too): a C0 control but ESC (NUL, BEL, backspace, ...) written as
  is is a token of its own and never merges with the word after it (nor with a space before it):
  NUL-separated or backspace-laden tool output read 0.86–0.96 (``tests/lab/test_unicode_marks_truth.py``).
* **An upper-case letter after a lower-case one** (``word_edges`` too): o200k's pre-tokenizer cuts there
  and the other vocabularies hold few tokens across it; in random identifiers (base64, API keys,
  short IDs) it marks a token edge about every sixth character, however often punctuation cuts the
  text (base64 cut every 8–16 characters by a comma kept its 0.72 tokens per character, but lost
  most of its ``dense`` score and read 0.89–0.99).
* **A word at the start of a line or after a tab** (``line_words``): a line break is never merged
  with the letters after it, so a word list, ``ls -1`` output, TSV or one value per line spends two
  tokens per short line (the break and the word); the weights priced the pair at ~1.4 (``TODO`` per
  line read 0.66–0.96). Counted apart (``newline_words``: after a line break; the rest after a tab) for
  routing, which prices them where they are many of a text's word starts
  (:func:`~litellm_kvwarm.token_fragment_prices.line_words_routing`).
* **Spaces before a line break or tab** (``space_breaks``): whitespace-only lines and trailing
  whitespace (``"\\t \\t\\n"`` costs 0.5 tokens per character in every measured family) read 0.27–0.54
  in DeepSeek and Llama 3, whose breaks weigh 0.

Each adds, to the safe estimate only (routing keeps the fitted medians, but for line words), what the weights leave out
of one token per edge: ``digit_spaces × (1 − w_spaces)``, ``word_edges × (1 − w_letters)``,
``line_words × (2 − w_breaks − w_letters)``, ``space_breaks × 2 × (1 − w_breaks)`` (each term at least
0; ``w`` the family's safe weights in the request's regime; :data:`FRAGMENT_SAFE_TOKENS` is that one
token). The dense-text floor (:mod:`~litellm_kvwarm.token_weights`) counts these terms before it
raises the ``dense`` weight; the weight is then set by dense text without such edges (DNA, protein,
upper-case IDs), and base64, which has many, reads 1.2–1.4 × its tokens (safe).

* **Control characters** (``control_chars``: C0 controls other than tab, line feed and carriage
  return, and DEL: the ESC of terminal colour codes, ``\x1b[32m``): Llama 3's template writes a
  ``tool`` message with ``tojson``, so each becomes ``\u001b``, three tokens; priced as one
  punctuation mark, coloured test or build output in a tool result read 0.92–0.95 safe ÷ truth
  (llama3). The safe estimate adds ``control_chars × (CONTROL_SAFE_TOKENS − w_punct)`` in the
  families whose templates do that (:mod:`~litellm_kvwarm.token_tojson`).

* **Combining marks** (``combining_marks``: U+0300–U+036F, the accents of decomposed (NFD) text: macOS file
  names, NFD Vietnamese, stacked marks): a mark after its letter costs 1.3–2.4 tokens (itself, often two
  byte tokens, and the word cut around it) in every measured family; the ``utf8_2`` weight (1.2–1.3 in
  qwen3.6 and o200k) left NFD Vietnamese at 0.82–0.87 safe ÷ truth, stacked marks at 0.59. The safe
  estimate adds ``combining_marks × (COMBINING_SAFE_TOKENS − w_utf8_2)`` (``tests/lab/test_unicode_marks_truth.py``).

And shapes the routing weights over-price:

* **Escaped quotes and backslashes** (``escaped_quotes``: ``\\"``, ``\\\\``): JSON carried inside a JSON
  string (a tool result that is a JSON document, serialised again) spends about one token on ``\\"``,
  which the weights count as two punctuation marks: escaped JSON-in-JSON read routing 1.2–1.5 × the
  truth. Routing counts one mark less per escape; safe is unchanged.
* **Box drawing** (``box_chars``: U+2500–U+257F, ``tree`` output's ``├──`` / ``│``, box-drawn tables): one
  token each in every measured family (0.98–1.26), priced as symbols (1.8–2.7 routing): a ``tree`` listing
  read routing 1.37–1.89 × the truth. Routing prices those outside runs at :data:`BOX_ROUTING_TOKENS`.
* **Vietnamese tone letters** (``latin_additional``: U+1E00–U+1EFF, Latin Extended Additional: ``ế``, ``ộ``,
  ``ữ``): in the ``utf8_3`` class, whose routing weight (qwen3.6 1.73, llama3 1.57 per character) was fitted
  on scripts a vocabulary spells byte by byte, while the multilingual vocabularies hold whole Vietnamese
  syllables (0.25–0.5 tokens per character of the text): Vietnamese read routing 1.8–2.0 × the truth in
  qwen3.6 and llama3. Routing prices them at :data:`~litellm_kvwarm.token_fragment_prices.LATIN_ADDITIONAL_ROUTING_TOKENS` where the weight is above it.
* **Digit runs** (``digit_runs``): cl100k, o200k, DeepSeek and Llama 3 spend ⌈n/3⌉ tokens on n digits;
  routing prices digits there at ``(digits + runs) / 3`` where that is lower
  (:data:`~litellm_kvwarm.token_fragment_prices.DIGIT_GROUP_FAMILIES`).
* **Runs of mixed repeated punctuation** (``mixed_chars``, ``mixed_runs``): ``-=-=-=…``, ``=-=-…``,
  ``*-*-…`` of at least :data:`~litellm_kvwarm.token_runs.RUN_MIN_CHARS` characters with no one
  character repeated that long (those are :mod:`~litellm_kvwarm.token_runs`' single-character runs)
  merge like single-character runs (``-=`` × 4,000 costs ~510 tokens in cl100k, routing priced
  ~7,000); routing prices them at :data:`~litellm_kvwarm.token_fragment_prices.MIXED_RUN_ROUTING_PER_CHAR` per character and
  :data:`~litellm_kvwarm.token_fragment_prices.MIXED_RUN_ROUTING_PER_RUN` per run; safe keeps the class price (a run of distinct marks
  may cost one token per mark).
A **word after a punctuation mark** (``punct_words``) is counted here, priced in :mod:`~litellm_kvwarm.token_fragment_prices`.

Cost: every pair of adjacent bytes is classified at once (:func:`mark_pairs`: one ``translate`` and one big-integer
multiplication, shared with ``dense``; :func:`find_fragments`: one more ``translate`` and a few one-byte ``count``;
no Python loop), the mixed runs only where a run of run characters is (rare)."""

from __future__ import annotations

import re

from .token_runs import RUN_MIN_CHARS, RUN_PRICES

__all__ = ["COMBINING_SAFE_TOKENS", "CONTROL_SAFE_TOKENS", "DENSE_DELETE", "DENSE_PAIRS", "FRAGMENT_SAFE_TOKENS", "NO_FRAGMENTS",
           "Fragments", "find_fragments", "mark_pairs"]

FRAGMENT_SAFE_TOKENS = 1.0
#: Tokens of one control character written by ``tojson`` (``\u001b``: ``\u``, ``001``, ``b``).
CONTROL_SAFE_TOKENS = 3.0
#: Tokens of one combining mark and the word cut around it, at most (measured: 2.39, NFD Vietnamese in qwen3.6).
COMBINING_SAFE_TOKENS = 2.5
#: C0 controls but tab, line feed and carriage return, and DEL (deleted to count them).
_CONTROLS = bytes(b for b in (*range(0x20), 0x7F) if b not in (0x09, 0x0A, 0x0D))

_RUN_ASCII = "".join(c for c in RUN_PRICES if c.isascii() and not c.isspace())
# Each byte to a mark value below 16: other 0, space 1, line break 2, digit 3, lower-case ASCII
# letter 4, upper-case 5, a run character 6, backslash 7, double quote 8, a control character 9, tab 10,
# comma 11, semicolon 12 (for ``dense``; a run character too, read as 6 where :func:`find_fragments` seeks runs).
_OTHER, _SPACE, _BREAK, _DIGIT, _LOWER, _UPPER, _RUN, _BACKSLASH, _QUOTE, _CONTROL, _TAB, _COMMA, _SEMI = range(13)
_FIXED_MARKS = {0x20: _SPACE, 0x0A: _BREAK, 0x09: _TAB, 0x2C: _COMMA, 0x3B: _SEMI, 0x5C: _BACKSLASH, 0x22: _QUOTE}


def _mark(b: int) -> int:
    if b in _FIXED_MARKS:
        return _FIXED_MARKS[b]
    if 0x30 <= b <= 0x39:
        return _DIGIT
    if 0x61 <= b <= 0x7A:
        return _LOWER
    if 0x41 <= b <= 0x5A:
        return _UPPER
    if chr(b) in _RUN_ASCII:
        return _RUN
    return _CONTROL if b in _CONTROLS and b != 0x1B else _OTHER  # ESC leads a terminal escape (``\x1b[0m``): punctuation


_MARKS = bytes(_mark(b) for b in range(256))
_MARKS_MERGED = (_OTHER, _RUN, _COMMA, _SEMI)  # punctuation a byte-level BPE pre-token groups (``,-``, ``],[``)


def _category(first: int, second: int) -> int:
    """The category letter of the mark pair ``(first, second)`` (``.``: none)."""
    if first == _SPACE and second == _DIGIT:
        return ord("d")  # a space before a digit (and a digit run's start)
    if second == _DIGIT and first != _DIGIT:
        return ord("r")  # a digit run's start
    if (first in (_DIGIT, _CONTROL) and second in (_LOWER, _UPPER)) or (first == _LOWER and second == _UPPER):
        return ord("e")  # a word after a digit, a control character or a case change
    if first == _SPACE and second == _CONTROL:
        return ord("e")  # a space before a control character: a token of its own (priced like a word edge)
    if first in (_OTHER, _RUN, _COMMA, _SEMI, _QUOTE, _BACKSLASH) and second in (_LOWER, _UPPER):
        return ord("p")  # a word after a punctuation mark (token_fragment_prices.punct_words_safe)
    if first in _MARKS_MERGED and second in _MARKS_MERGED and not first == second == _RUN:
        return ord("k")  # a mark right after a mark, no run (token_fragment_prices.mark_pairs_routing)
    if first == _BREAK and second in (_LOWER, _UPPER):
        return ord("l")  # a word after a line break
    if first == _TAB and second in (_LOWER, _UPPER):
        return ord("t")  # a word after a tab
    if first == _SPACE and second in (_BREAK, _TAB):
        return ord("s")  # a space before a line break or tab
    if first == _BACKSLASH and second in (_BACKSLASH, _QUOTE):
        return ord("q")  # an escape
    return ord(".")


# A pair code is 16 × first + second (< 256): see mark_pairs.
_CATEGORIES = bytes(_category(code >> 4, code & 15) for code in range(256))
_PAIR = 16 + 256  # big-endian: byte j of marks × 272 is 16 × marks[j − 1] + marks[j]
_RUN_NEEDLE = bytes((_RUN,)) * RUN_MIN_CHARS
_MARK_RUN = re.compile(re.escape(bytes((_RUN,))) + b"+")
_ALNUM = (_DIGIT, _LOWER, _UPPER)
_UPPER_COMMA, _UPPER_SEMI = 16 * _UPPER + _COMMA, 16 * _UPPER + _SEMI
#: For ``dense`` (:mod:`~litellm_kvwarm.token_features`): a pair whose second byte is a letter or digit
#: -> ``a``; the first separator after one -> ``|``; a separator after a separator is deleted
#: (:data:`DENSE_DELETE`), so a separator run counts once. A ``,`` or ``;`` after an upper-case letter
#: cuts nothing (``;`` -> ``a``, ``,`` deleted): :data:`~litellm_kvwarm.token_features.DENSE_LETTERS_PER_SEPARATOR`.
DENSE_PAIRS = bytes(ord("a") if code & 15 in _ALNUM or code == _UPPER_SEMI else ord("|") for code in range(256))
DENSE_DELETE = bytes(c for c in range(256) if c == _UPPER_COMMA or c & 15 not in _ALNUM and c >> 4 not in _ALNUM and c != _UPPER_SEMI)


def mark_pairs(data: bytes) -> tuple[bytes, bytes]:
    """The marks of ``data`` (one value below 16 per byte) and its pair codes: byte ``j`` of the
    second is ``16 × marks[j − 1] + marks[j]`` (``marks[−1]`` an empty mark), one more byte at the
    end for the last byte and an empty mark.

    At C speed, without a Python loop: read as one big-endian integer and multiplied by 272
    (16 + 256), each byte of the product is that sum, with no carries (every mark is below 16)."""
    marks = data.translate(_MARKS)
    return marks, (int.from_bytes(marks, "big") * _PAIR).to_bytes(len(marks) + 1, "big")


class Fragments:
    """The fragments of one text (see the module docstring), each counted when first read: the
    estimator reads only those its family's weights leave a price for (a digit run count only for
    the families that group digits, a space before a break only where breaks weigh under one
    token), so a request pays for the counts it uses."""

    __slots__ = ("_categories", "_counts", "_data", "escaped_quotes", "mixed_chars", "mixed_runs")

    def __init__(self, categories: bytes = b"", escaped_quotes: int = 0, mixed_chars: int = 0, mixed_runs: int = 0,
                 data: bytes = b"") -> None:
        self._categories, self._data = categories, data
        self._counts: dict[bytes, int] = {}
        self.escaped_quotes = escaped_quotes
        self.mixed_chars = mixed_chars
        self.mixed_runs = mixed_runs

    def _non_ascii(self) -> bool:
        """Whether the text has a non-ASCII byte (one fast pass: an ASCII sample skips the byte counts below, ~19 µs)."""
        return bool(self._data) and not self._data.isascii()

    def _count(self, letter: bytes) -> int:
        found = self._counts.get(letter)
        if found is None:
            found = self._counts[letter] = self._categories.count(letter)
        return found

    digit_spaces = property(lambda self: self._count(b"d"))

    @property
    def word_edges(self) -> int:
        return self._count(b"e")

    punct_words = property(lambda self: self._count(b"p"), doc="Words (letters) right after a punctuation mark.")
    mark_pairs = property(lambda self: self._count(b"k"), doc="Punctuation marks right after one (not two run characters).")
    size = property(lambda self: len(self._data), doc="Bytes of the sampled text.")

    @property
    def line_words(self) -> int:
        """Words after a line break or a tab."""
        return self._count(b"l") + (self._count(b"t") if b"\t" in self._data else 0)

    newline_words = property(lambda self: self._count(b"l"), doc="Words after a line break (not a tab).")
    text = property(lambda self: self._data, doc="The sampled text (UTF-8 bytes).")

    space_breaks = property(lambda self: self._count(b"s"))

    @property
    def control_chars(self) -> int:
        found = self._counts.get(b"c")
        if found is None:
            found = self._counts[b"c"] = len(self._data) - len(self._data.translate(None, _CONTROLS))
        return found

    @property
    def combining_marks(self) -> int:
        """Characters U+0300–U+037F (lead bytes CC and CD: the combining marks, and 16 rare Greek letters)."""
        found = self._counts.get(b"m")
        if found is None:
            found = self._counts[b"m"] = self._data.count(0xCC) + self._data.count(0xCD) if self._non_ascii() else 0
        return found

    @property
    def box_chars(self) -> int:
        """Box-drawing characters U+2500–U+257F (``E2 94 xx``, ``E2 95 xx``)."""
        found = self._counts.get(b"b")
        if found is None:
            found = self._counts[b"b"] = self._data.count(b"\xe2\x94") + self._data.count(b"\xe2\x95") if self._non_ascii() else 0
        return found

    @property
    def space_pipes(self) -> int:
        """A space before a ``|`` (a table's or a shell pipeline's separator)."""
        found = self._counts.get(b"|")
        if found is None:
            found = self._counts[b"|"] = self._data.count(b" |") if b"|" in self._data else 0
        return found

    @property
    def latin_additional(self) -> int:
        """Characters U+1E00–U+1EFF (``E1 B8``–``E1 BB`` and a continuation byte)."""
        found = self._counts.get(b"v")
        if found is None:
            data = self._data
            found = self._counts[b"v"] = sum(data.count(b) for b in (b"\xe1\xb8", b"\xe1\xb9", b"\xe1\xba", b"\xe1\xbb")) \
                if b"\xe1" in data else 0
        return found

    @property
    def digit_runs(self) -> int:
        return self._count(b"r") + self._count(b"d")

    def __bool__(self) -> bool:
        return bool(self._categories)

    def __repr__(self) -> str:
        names = ("digit_spaces", "word_edges", "punct_words", "line_words", "space_breaks", "escaped_quotes", "digit_runs",
                 "mixed_chars", "mixed_runs")
        return "Fragments(" + ", ".join(f"{n}={getattr(self, n)}" for n in names) + ")"


NO_FRAGMENTS = Fragments()


def find_fragments(data: bytes, marks: bytes, pairs: bytes) -> Fragments:
    """The :class:`Fragments` of ``data`` (UTF-8 bytes of the sampled text), from its
    :func:`mark_pairs`: the pair codes are mapped to their category letter (one ``translate``),
    counted (one-byte ``count``) when read."""
    categories = pairs.translate(_CATEGORIES)
    escaped = categories.count(b"q") if b"\\" in data else 0
    mixed_chars = mixed_runs = 0
    marks = marks.replace(b"\x0c", b"\x06") if b";" in data else marks  # ``;`` (_SEMI) is a run character (_RUN) too
    pos = marks.find(_RUN_NEEDLE)
    while pos >= 0:  # a run of run characters (rare): is it one character repeated, or mixed?
        end = _MARK_RUN.match(marks, pos).end()  # type: ignore[union-attr]
        run = data[pos:end]
        if not any(bytes((c,)) * RUN_MIN_CHARS in run for c in set(run)):
            mixed_chars += len(run)
            mixed_runs += 1
        pos = marks.find(_RUN_NEEDLE, end)
    return Fragments(categories, escaped, mixed_chars, mixed_runs, data)

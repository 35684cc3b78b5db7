"""Long runs of one repeated character (``====`` rules, ``----`` separators, ``####`` progress bars,
whitespace), priced sub-linearly, and gaps of spaces in aligned columns (pure).

Byte-level BPE vocabularies hold tokens of 16, 32, 64 or 128 repeated ``=``, ``-``, ``#``, spaces, …:
200 lines of 78 ``=`` cost ~410 tokens, but the calibrated weights price each ``=`` as a punctuation
mark (~1 token): 30× over. And a 30,000-space run cost ~15 safe tokens (spaces in runs weigh ~0)
against 235. So a run of at least :data:`RUN_MIN_CHARS` (spaces: :data:`SPACE_RUN_MIN_CHARS`, past
ordinary indentation) of a character of :data:`RUN_PRICES` is taken out of its character class and
priced by the table:

* safe, for the families measured (:data:`MEASURED_FAMILIES`): ``per_run + chars × safe_per_char``
  per run, where ``safe_per_char`` is the largest tokens-per-character of a long run over those
  families and ``per_run`` bounds, over them, what a run of 12–2,048 characters costs beyond that
  rate, in six contexts (alone, after a letter, a space, a line break, ``": "``), rounded up
  (measured with the calibration tokenizers; ``tests/lab/test_token_shapes_truth.py`` checks them). A family not
  measured (``gemma3``, the SentencePiece models ``any`` must also hold for: Llama 2's vocabulary
  spends one token per ``#`` or tab) keeps the class price of these characters, except spaces:
  :data:`UNMEASURED_SPACE_PRICE` (one token per 8 spaces, above Llama 2's 16).
* routing: ``chars × routing_per_char + runs × ROUTING_TOKENS_PER_RUN`` (the common rate of the
  measured families: cl100k, qwen, llama3 agree; deepseek and o200k merge some characters less,
  where routing leans low); where the families differ by 2-8x (``━``, ``═``, ``…``), each measured
  family its own rate and any other the lowest (:meth:`RunPrice.routing_rate`).

*Gaps* (:data:`GAP_SAFE_TOKENS`), runs of two or more spaces inside a line (aligned columns), are
priced apart: the weights count spaces in runs at ~0 and aligned tables (``ps``, ``ls -l``, pandas,
``kubectl``) read 0.85–0.90 of the truth (qwen2.5, ``any``).

Runs are found at C speed: one ``bytes.translate`` and three ``in`` searches rule most text out;
only text that may hold a run is searched per character (an ``in`` search, then a regular
expression with a literal prefix, for the characters found); non-ASCII text with an ``E2`` byte (the
lead byte of every non-ASCII run character) gets one ``in`` search per non-ASCII run character. On a sampled text
(:data:`~litellm_kvwarm.token_features.SAMPLE_CHARS`), runs are found in the sample and scaled
with it; a run cut at a sample block's edge counts as two runs (safe over-counts ``per_run``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = [
    "GAP_ROUTING_TOKENS",
    "GAP_SAFE_TOKENS",
    "MEASURED_FAMILIES",
    "ROUTING_TOKENS_PER_RUN",
    "RUN_MIN_CHARS",
    "RUN_PRICES",
    "SPACE_RUN_MIN_CHARS",
    "UNMEASURED_SPACE_PRICE",
    "Runs",
    "find_runs",
]

RUN_MIN_CHARS = 16
SPACE_RUN_MIN_CHARS = 64
#: Families whose tokenizers the table was measured with (the calibration's offline tokenizers).
MEASURED_FAMILIES = frozenset({"cl100k", "o200k", "qwen2.5", "qwen3.6", "deepseek", "llama3"})


@dataclass(frozen=True)
class RunPrice:
    """Tokens of one run: safe ``per_run + chars × safe_per_char``, routing ``chars × routing_per_char``
    (``routing_by_family``: a measured family's own rate where it is above that common one)."""

    safe_per_char: float
    per_run: float
    routing_per_char: float
    klass: str  # its class in token_features.CHAR_CLASSES
    routing_by_family: Mapping[str, float] = field(default_factory=dict)

    def routing_rate(self, family: str | None) -> float:
        """Routing tokens per character for ``family`` (its measured rate, else the common one)."""
        return self.routing_by_family.get(family, self.routing_per_char) if family else self.routing_per_char


#: Measured: tokens of ``c * n`` (n = 2,048) ÷ n, largest and commonest over the measured families,
#: and the worst excess per run over n in 12..2,048 in six contexts, + 0.5, rounded up. Non-ASCII
#: entries past ``─`` (measured 2026-12 with the calibration tokenizers, LiteLLM 1.108.7's lab): routing
#: the lowest family's rate, and each family's own where higher (long runs merge 2-16 characters a token:
#: '━' cl100k, qwen2.5, deepseek 1/2, o200k, qwen3.6 1/8, llama3 1/16; '═' cl100k, qwen2.5, llama3
#: 1/2, qwen3.6, deepseek 1/4, o200k 1/8; '…' cl100k, qwen2.5, qwen3.6 1/8, the others 1/16; '█' 1/4
#: and '—' 1/16 in all six). Priced per character, separator lines of them read routing 1.2-8.7x the truth.
RUN_PRICES = {
    " ": RunPrice(1 / 128, 4, 1 / 128, "spaces"),
    "\t": RunPrice(1 / 8, 4, 1 / 16, "breaks"),
    "\n": RunPrice(1 / 16, 4, 1 / 32, "breaks"),
    "=": RunPrice(1 / 64, 5, 1 / 64, "punct"),
    "-": RunPrice(1 / 64, 4, 1 / 64, "punct"),
    "#": RunPrice(1 / 64, 5, 1 / 64, "punct"),
    "*": RunPrice(1 / 64, 5, 1 / 64, "punct"),
    ".": RunPrice(1 / 64, 4, 1 / 64, "punct"),
    "_": RunPrice(1 / 64, 5, 1 / 64, "punct"),
    "/": RunPrice(1 / 64, 6, 1 / 64, "punct"),
    "~": RunPrice(1 / 16, 6, 1 / 32, "punct"),
    "+": RunPrice(1 / 8, 5, 1 / 32, "punct"),
    "%": RunPrice(1 / 16, 6, 1 / 64, "punct"),
    "!": RunPrice(1 / 8, 4, 1 / 8, "punct"),
    ":": RunPrice(1 / 8, 4, 1 / 8, "punct"),
    ";": RunPrice(1 / 8, 4, 1 / 16, "punct"),
    "\u2500": RunPrice(1 / 8, 6, 1 / 8, "symbols"),  # ─ box drawing
    "\u2501": RunPrice(1 / 2, 3, 1 / 16, "symbols", {  # ━ heavy box drawing (pip, uv and rich progress bars)
        "cl100k": 1 / 2, "qwen2.5": 1 / 2, "deepseek": 1 / 2, "o200k": 1 / 8, "qwen3.6": 1 / 8}),
    "\u2550": RunPrice(1 / 2, 3, 1 / 8, "symbols", {  # ═ double box drawing (table rules)
        "cl100k": 1 / 2, "qwen2.5": 1 / 2, "llama3": 1 / 2, "qwen3.6": 1 / 4, "deepseek": 1 / 4}),
    "\u2588": RunPrice(1 / 4, 4, 1 / 4, "symbols"),  # █ full block (tqdm bars)
    "\u2014": RunPrice(1 / 16, 5, 1 / 16, "gen_punct"),  # — em dash (separator lines)
    "\u2026": RunPrice(1 / 8, 4, 1 / 16, "gen_punct", {  # … ellipsis (table-of-contents leaders)
        "cl100k": 1 / 8, "qwen2.5": 1 / 8, "qwen3.6": 1 / 8}),
}
#: Safe price of a space run for a family not measured: (tokens per run, tokens per space).
UNMEASURED_SPACE_PRICE = (4, 1 / 8)
ROUTING_TOKENS_PER_RUN = 0.5
#: A gap: a run of two or more spaces inside a line, or at its start before a digit (aligned
#: columns: ``ps``, ``ls -l``, pandas and numpy printouts; not indentation, which the weights price).
#: A byte-level BPE spends one token on the run and the word after it keeps one space (measured: one
#: token per gap in cl100k, o200k, qwen2.5, qwen3.6 and llama3, 0.25–0.5 in deepseek), where the
#: weights price spaces in runs at ~0: each gap adds :data:`GAP_SAFE_TOKENS` and one single space
#: (the family's weight) to safe, in every family, and :data:`GAP_ROUTING_TOKENS` to routing.
GAP_SAFE_TOKENS = 1.0
GAP_ROUTING_TOKENS = 0.5
_ASCII_RUN_CHARS = "".join(c for c in RUN_PRICES if c.isascii() and c not in " \n")
# One translation serves the prefilter and the gaps: space -> " ", line break -> "n", a run character
# of RUN_PRICES -> "r", any other byte -> "x".
_MARKS = bytes(0x20 if b == 0x20 else 0x6E if b == 0x0A else 0x72 if chr(b) in _ASCII_RUN_CHARS else 0x78 for b in range(256))
_RUN_NEEDLE = b"r" * RUN_MIN_CHARS
_SPACE_NEEDLE = b" " * SPACE_RUN_MIN_CHARS
_BREAK_NEEDLE = b"n" * RUN_MIN_CHARS


def _minimum(char: str) -> str:
    return char * (SPACE_RUN_MIN_CHARS if char == " " else RUN_MIN_CHARS)


# per character: the bytes that say a run may be there, and the run's pattern (a literal prefix of
# the minimum length, which the regex engine searches for at C speed)
_PATTERNS = {c: (_minimum(c).encode(), re.compile(re.escape(_minimum(c)) + re.escape(c) + "*")) for c in RUN_PRICES}
#: The non-ASCII run characters and their minimum runs (searched in the text: 3-4x faster than in its
#: UTF-8 bytes on box-drawn text), and their first UTF-8 bytes (all ``E2`` today): a text without one
#: of these bytes holds none of their runs (CJK text: one ``memchr``).
_NON_ASCII_RUNS = tuple((c, _minimum(c)) for c in RUN_PRICES if not c.isascii())
_NON_ASCII_LEADS = tuple({c.encode()[:1] for c, _ in _NON_ASCII_RUNS})
_LEAD_DIGIT_GAP = re.compile(rb"\n  +[0-9]")


@dataclass(frozen=True)
class Runs:
    """The runs of one text: per run character, ``(characters, runs)``; ``odd_spaces``: space runs
    of odd length (each left one space in ``spaces``, the rest in ``indent``)."""

    found: dict[str, tuple[int, int]]
    odd_spaces: int = 0
    gaps: int = 0

    def __bool__(self) -> bool:
        return bool(self.found) or self.gaps > 0

    def class_chars(self, *, spaces_only: bool = False) -> dict[str, float]:
        """Characters to take out of each class of ``CHAR_CLASSES`` (a run of n spaces held
        2⌊n/2⌋ in ``indent`` and the rest in ``spaces``; only the space runs with ``spaces_only``)."""
        out: dict[str, float] = {}
        for char, (chars, _) in self.found.items():
            if char == " ":
                out["indent"] = out.get("indent", 0.0) + chars - self.odd_spaces
                out["spaces"] = out.get("spaces", 0.0) + self.odd_spaces
            elif not spaces_only:
                klass = RUN_PRICES[char].klass
                out[klass] = out.get(klass, 0.0) + chars
        return out

    def tokens(self, *, measured: bool, family: str | None = None) -> tuple[float, float]:
        """``(safe, routing)`` tokens of the runs; ``measured``: the family is one of
        :data:`MEASURED_FAMILIES` (else only the space runs count for safe, see the module docstring);
        ``family``: its name, for its own routing rates (:meth:`RunPrice.routing_rate`)."""
        safe, routing = self.gaps * GAP_SAFE_TOKENS, self.gaps * GAP_ROUTING_TOKENS
        for char, (chars, runs) in self.found.items():
            price = RUN_PRICES[char]
            routing += chars * price.routing_rate(family) + runs * ROUTING_TOKENS_PER_RUN
            if measured:
                safe += runs * price.per_run + chars * price.safe_per_char
            elif char == " ":
                per_run, per_char = UNMEASURED_SPACE_PRICE
                safe += runs * per_run + chars * per_char
        return safe, routing


def find_runs(text: str, data: bytes, *, double_spaces: bool | None = None) -> Runs:
    """The runs and gaps of ``text`` (``data``: its UTF-8 bytes), see the module docstring.

    One ``translate`` to five marks and ``in`` searches for marks long enough to be a run; only for
    a text that may hold one, an ``in`` search per character, then a literal-prefix regular
    expression for each character found. ``double_spaces``: whether ``text`` holds two spaces in a
    row, when the caller already knows (the features count them): the same answer, without a second
    search (``None``: searched here)."""
    marks = data.translate(_MARKS)
    gaps = _gaps(marks, data) if (b"  " in marks if double_spaces is None else double_spaces) else 0
    candidates = [c for c in _ASCII_RUN_CHARS if _PATTERNS[c][0] in data] if _RUN_NEEDLE in marks else []
    if _SPACE_NEEDLE in marks:
        candidates.append(" ")
    if _BREAK_NEEDLE in marks:
        candidates.append("\n")
    if not text.isascii() and any(lead in data for lead in _NON_ASCII_LEADS):
        candidates += [c for c, minimum in _NON_ASCII_RUNS if minimum in text]
    if not candidates:
        return Runs({}, 0, gaps) if gaps else _NONE
    found: dict[str, tuple[int, int]] = {}
    odd = 0
    for char in candidates:
        lengths = [end - start for start, end in map(re.Match.span, _PATTERNS[char][1].finditer(text))]
        if lengths:
            found[char] = (sum(lengths), len(lengths))
            if char == " ":
                odd = sum(n & 1 for n in lengths)
    return Runs(found, odd, gaps)


def _gaps(marks: bytes, data: bytes) -> int:
    """Gaps (see :data:`GAP_SAFE_TOKENS`): in the marks of ``_MARKS``, two spaces after anything but
    a line break or a space; in a table (a gap per four lines or more; the regular expression is
    not worth its cost on code or JSON), a line break and spaces before a digit."""
    gaps = marks.count(b"x  ") + marks.count(b"r  ")
    if gaps and 4 * gaps >= marks.count(b"n") and b"n  " in marks:
        gaps += len(_LEAD_DIGIT_GAP.findall(data))
    return gaps


_NONE = Runs({})

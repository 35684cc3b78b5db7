"""A context-length error cut mid-word: the same text ended at its last few word breaks (pure).

A log line, a relayed body or a chat front end may cut an error at a fixed length, anywhere: inside the word after
a number ("your messages resulted in 4619 tok", "prompt is too long: 202609 tokens > 200000 maxim") or inside a
second sentence ("inputs tokens + max_new_tokens must be <= 8192. Given: 70"). A wording's row needs its words
after a number, or reads a cut only where the text ends right at one, so such a text read fewer numbers than the
same text cut a few characters earlier, or nothing. :func:`trims` gives those earlier cuts: the text ended at each
of its last :data:`MAX_TRIMS` word breaks within :data:`TRIM_SPAN` characters; the parser reads each and keeps a
reading as :func:`better_cut_reading` says, and a number that ends a trimmed text is read as a floor, as for any
cut (it may have been cut mid-digits). A wording matched right up to a trimmed end reads only if it ends on that
number: one that ends on a word there ("Requested 400000 tokens, max 300000 tokens" trimmed from "... tokens per")
lost the words its own guards read (Groq's window is no per-request limit), so that trim reads nothing. Only a text
that :func:`looks_cut` is trimmed: one that ends in a sentence mark or a closing bracket ended where its writer ended
it. Every pattern here is linear in the text (a breaker's round found runs of dots and of closing braces that
backtracked for seconds).
"""

from __future__ import annotations

import re

from .context_error_model import ContextError
from .context_error_rows import CUT_END

__all__ = ["CLOSERS_SPAN", "KEPT_CHARS", "MAX_TRIMS", "TRIM_SPAN", "better_cut_reading", "drops_a_unit", "looks_cut", "may_be_cut",
           "numbers_read", "trims"]

#: At most this many earlier cuts are tried (each one is a parse of the text: the error path only).
MAX_TRIMS = 8
#: Earlier cuts are taken within this many characters of the end.
TRIM_SPAN = 160
#: A trimmed text keeps this many characters before its cut (a wording is far shorter; rows search anywhere).
KEPT_CHARS = 1_000

# A wrapper's closing quotes and braces after a cut body, and truncation marks ("...", "…", "[truncated]").
_CLOSERS = re.compile(r"""(?:[\s"'}\]]|\.{3,}(?!\.)|\u2026|\[[^\[\]]{0,40}truncat[^\[\]]{0,40}\]|\btruncated\b)+\Z""",
                      re.IGNORECASE)
#: Closers and marks are looked for in this many characters at the end only (each search start scans to the end).
CLOSERS_SPAN = 200
_WORD_BREAK = re.compile(r"[ (\[:;,]")
# The end of a finished sentence (a trim goes no further back): a full stop, "!" or "?" before a space, a Chinese
# full stop or mark, a line break.
_SENTENCE_END = re.compile(r"[.!?](?= )|[。！？]|\n")
_FIRST_WORD = re.compile(r"\s*([^\s,.;:()\[\]{}\"']*)")
_UNIT_WORDS = ("characters", "chars", "bytes", "words", "images", "pages", "lines", "seconds", "files", "items", "per",
               "kb", "mb", "gb", "kib", "mib", "letters", "symbols", "elements", "entries", "messages", "turns",
               "rounds", "runes", "codepoints", "minutes")
_SINGLE_UNITS = frozenset({"c", "b", "B", "w", "k", "K", "M"})
# What may follow a number that was cut: nothing, spaces, or truncation marks (then a wrapper's closing quotes and
# braces).
_CUT_END = re.compile(CUT_END, re.IGNORECASE)
# A separator (and the start of a digit group) right before such an end: "200,0", "210.", "16 3".
_CUT_GROUP = re.compile(r"[,_'. ]\d{0,2}")


def _closers(s: str) -> re.Match[str] | None:
    """The wrapper's closing quotes and braces and the truncation marks that end ``s`` (searched in its last
    :data:`CLOSERS_SPAN` characters: linear in the text, however long a run of braces or dots it holds)."""
    return _CLOSERS.search(s, max(0, len(s) - CLOSERS_SPAN))


def looks_cut(s: str) -> bool:
    """Whether the normalised error text ``s`` may end where something cut it: its last character (before a
    wrapper's closing quotes and braces and truncation marks) is a letter, a digit or a joint (``:,(-+<>=``),
    or a truncation mark follows it. Ending in ``.``, ``!``, ``?`` or ``)`` reads as whole."""
    closers = _closers(s)
    body = s[: closers.start()] if closers is not None else s
    if not body:
        return False
    marked = closers is not None and any(mark in closers.group(0).lower() for mark in ("...", "\u2026", "truncat"))
    return marked or body[-1] not in ".!?)"


def trims(s: str) -> list[str]:
    """``s`` ended at each of its last :data:`MAX_TRIMS` word breaks (a space, bracket or joint) within
    :data:`TRIM_SPAN` characters of its end and after its last sentence end (``. `` ``。`` ``! `` ``? ``, a line
    break), and at that sentence end itself, longest first; the break itself and what follows dropped. A trim never
    crosses a finished sentence: "... resulted in 9000 characters. Request id: abc" trims back to "... 9000
    characters." at most, never to "... 9000". Nor does it end on a number followed by more than one word (the text
    may be whole: "maximum length 10 of field name") or whose unit it would drop ("9000 charac", "8 千", "9000M":
    :func:`drops_a_unit`). Each keeps only its last :data:`KEPT_CHARS` characters or so (from a space: no number cut
    at its start), so a long text costs a few short parses."""
    start = max(0, len(s) - TRIM_SPAN)
    sentences = list(_SENTENCE_END.finditer(s, start))
    sentence = sentences[-1] if sentences else None
    if sentence is not None:
        start = sentence.end()
    cuts = [m.start() for m in _WORD_BREAK.finditer(s, start)]
    if sentence is not None:
        cuts.insert(0, sentence.start() + 1)  # the text ending with its last finished sentence
    closers = _closers(s)
    body_end = closers.start() if closers is not None else len(s)
    out: list[str] = []
    for cut in reversed(cuts):
        begin = 0 if cut <= KEPT_CHARS else _kept_start(s, cut - KEPT_CHARS, cut)
        text = s[begin:cut].rstrip()
        if not text or (out and text == out[-1]):
            continue
        dropped = s[cut:body_end]
        if text[-1].isdigit() and (len(dropped.split()) > 1 or drops_a_unit(dropped)):
            continue  # a number is read at a trim only where one cut word follows it (not "10 of field name")
        out.append(text)
        if len(out) == MAX_TRIMS:
            break
    return out


#: What a kept text does not start inside: a word or a number with its separators.
_PARTIAL = re.compile(r"[\w,.'_]*")


def _kept_start(s: str, at: int, cut: int) -> int:
    """Where a trim ending at ``cut`` starts, from ``at`` on: after the first space before ``cut``, else after the word
    or number ``at`` falls in (a text without spaces, "1,11,1,11,...", kept its whole length: each of the eight
    trims of a 20,000-character text then cost a full parse, ~0.8 s in all)."""
    space = s.find(" ", at, cut)
    return space + 1 if space >= 0 else _PARTIAL.match(s, at).end()


def drops_a_unit(dropped: str) -> bool:
    """Whether the text a trim drops after a number begins with what makes that number no token count: a unit
    other than tokens, or the start of one (``charac``, ``by``, ``wo``, ``im``, ``me``, ``tu``, ``per``, ``Ki``; any CJK
    word: 字 轮 条 秒 次 个 页 汉字), or a magnitude (``K``, ``M``, 千, 万, 亿). Ambiguous single letters stay readable: "t"
    (tokens), "i" (in, input), "m" (maximum)."""
    word = _FIRST_WORD.match(dropped)
    text = word.group(1) if word is not None else ""
    if not text:
        return False
    if "\u2e80" <= text[0] <= "\u9fff" or text in _SINGLE_UNITS:  # any CJK word after a count is its unit or magnitude
        return True
    lower = text.lower()
    return len(lower) >= 2 and any(unit.startswith(lower) or lower.startswith(unit) for unit in _UNIT_WORDS)


def numbers_read(result: ContextError | None) -> int:
    """How many token counts ``result`` read (-1 for no result): window, prompt, output, total, printed limit, excess."""
    if result is None:
        return -1
    return sum(x is not None for x in (result.window, result.prompt_tokens, result.output_tokens, result.total_tokens,
                                       result.printed_limit, result.excess_tokens))


def may_be_cut(s: str, start: int, end: int) -> bool:
    """Whether the number ``s[start:end]`` may have been cut mid-digits: nothing follows it but
    spaces or a truncation mark, or a separator (with at most two digits) that could start another
    group of it ("200,0", "210." before the end)."""
    tail = _CUT_END.match(s, end)
    if tail is not None and tail.end() == len(s):
        return True
    group = _CUT_GROUP.match(s, end)
    if group is None:
        return False
    tail = _CUT_END.match(s, group.end())
    if tail is None or tail.end() != len(s):
        return False
    sep = s[end]
    digits = s[start:end].lstrip("-")
    if digits == "0":  # "got 0." ends a sentence: no digit group follows a lone zero
        return False
    return re.fullmatch(r"\d{1,3}(?:" + re.escape(sep) + r"\d{3})*", digits) is not None


def better_cut_reading(found: ContextError | None, best: ContextError | None, full: ContextError | None) -> bool:
    """Whether ``found`` (the reading of a trimmed text) replaces ``best`` (the reading kept so far; ``full`` that of
    the whole text): it reads more numbers, by a named wording (never a ``generic`` fallback: its loose patterns
    cannot tell what a number before the cut counted, "exceeds maximum context length (40000 t" may have gone on
    "tokens > 32768)"), and the whole text was not read by that same wording (a wording that declined a number on the
    whole text did so on purpose: LiteLLM's pre-call check printed for several deployments reports no limit)."""
    if found is None or found.family.startswith("generic") or numbers_read(found) <= numbers_read(best):
        return False
    return full is None or found.family != full.family

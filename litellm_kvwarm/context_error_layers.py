"""Transport encodings undone on an error text before it is read (pure; used by
:func:`~litellm_kvwarm.context_errors.parse_context_error` on the first characters it scans).

An error body reaches the proxy through layers that each encode it again:

* JSON/Python escapes at any depth (``\\"`` ``\\\\\\"`` ``\\'`` ``\\/`` ``\\n`` ``\\u003e``), and runs of byte escapes
  decoded as UTF-8 (``b'...\\xe2\\x80\\x99s'``; a lone ``\\xa0`` of a ``str`` repr as Latin-1);
* percent-encoding, as a gateway or an OAuth-style redirect carries the message in a URL
  (``?error_description=This%20model%27s%20maximum%20context%20length%20is%2016384%20tokens``), also twice
  (``%2520``) and JavaScript's ``%u2019``; form encoding's ``+`` for a space (``maximum+context+length+is+16384``);
* HTML entities, also escaped twice (``&amp;#39;``, ``&amp;quot;``) by a page that escapes an escaped body.
* an apostrophe lost to a wrong decoding, once the layers above are undone: a typographic one (``’``, ``‘``) read
  as Windows-1252 or Latin-1 (``modelâ€™s``, a Windows console or log pipeline), or replaced by ``?``
  or U+FFFD (an ASCII encode, an invalid UTF-8 byte): ``endpoint?s maximum``, ``model�s context length``. Only
  between a letter and an ``s`` that ends the word, so "why?s" is the one case it could misread, and no wording
  depends on it.

Each layer is undone only where its signs are plain: percent escapes only in a text that holds a common one
(an ASCII space, punctuation or bracket: ``%20`` ``%22`` ``%27`` ``%28`` ``%2C`` ``%3A`` ``%7B`` ``%25`` …), so
"95%CPU" stays; ``+`` only inside a run with no
whitespace and at least three ``+`` of which two join letters (``This+model's+maximum``), so "P + C > W",
"1000+2000>4096" and "C++" stay. At most :data:`MAX_PASSES` passes, each linear in the text, and the text is the
parser's bounded scan window: never slow, never raises on a ``str``.
"""

from __future__ import annotations

import html
import re

__all__ = ["MAX_PASSES", "without_layers"]

#: Passes over the text at most (a layer may reveal another: percent-encoded JSON holds escaped quotes).
MAX_PASSES = 3

# Each starts only at the first backslash of a run ((?<!\\)): else a long run is retried from every position.
_ESCAPED_QUOTE = re.compile(r"(?<!\\)\\+(?=[\"'`/])")
_ESCAPED_WS = re.compile(r"(?<!\\)\\+[nrt]")
_ESCAPED_UNICODE = re.compile(r"(?<!\\)\\+u([0-9a-fA-F]{4})")
# A run of byte escapes ("\xe2\x80\x99" in a Python bytes or str repr), at any escaping depth.
_ESCAPED_BYTES = re.compile(r"(?:(?<!\\)\\+x[0-9a-fA-F]{2})+")
_HEX_PAIR = re.compile(r"x([0-9a-fA-F]{2})")
# A decimal character reference past U+10FFFF (html.unescape makes it U+FFFD, but int() raises past 4300 digits).
_HUGE_CHARREF = re.compile(r"&#0*[1-9][0-9]{7,};?")
_ENTITY = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});?")
# Percent escapes: a run of %XX (bytes, decoded together as UTF-8), and JavaScript's %uXXXX.
_PERCENT_RUN = re.compile(r"(?:%[0-9a-fA-F]{2})+")
_PERCENT_UNICODE = re.compile(r"%u([0-9a-fA-F]{4})")
_PERCENT_SIGN = re.compile(r"%(?:2[0-9A-Fa-f]|3[A-Fa-f]|0[9AaDd]|5[BbCcDd]|7[BbCcDdEe]|u[0-9a-fA-F]{4})")
# A whitespace-free run with three or more "+" (form encoding), and a "+" joining two letters in it. A run starts only
# after whitespace or at the start ((?<!\S)): else a long run without "+" is retried from every position.
_FORM_RUN = re.compile(r"(?<!\S)[^\s+]*(?:\+[^\s+]*){3,}")
_LETTER_PLUS = re.compile(r"(?<=[A-Za-z'.,;:?!])\+(?=[A-Za-z])")
# An apostrophe lost to a wrong decoding: U+2019/U+2018 as Windows-1252 ("â€™") or Latin-1 (with C1
# controls), or "?"/U+FFFD, between a letter and an "s" that ends the word ("model?s").
_LOST_APOSTROPHE = re.compile(r"(?<=[A-Za-z])(?:\u00e2(?:\u20ac[\u2122\u02dc]|\x80[\x98\x99])|[?\ufffd])(?=s\b)")


def _decode_hex(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:  # a str repr's "\xa0" (one Latin-1 character), not UTF-8 bytes
        return raw.decode("latin-1")


def _bytes_escape(match: re.Match[str]) -> str:
    return _decode_hex(bytes(int(h, 16) for h in _HEX_PAIR.findall(match.group(0))))


def _percent_run(match: re.Match[str]) -> str:
    run = match.group(0)
    return _decode_hex(bytes(int(run[i + 1:i + 3], 16) for i in range(0, len(run), 3)))


def _form_run(match: re.Match[str]) -> str:
    run = match.group(0)
    return run.replace("+", " ") if len(_LETTER_PLUS.findall(run)) >= 2 else run


def _one_pass(s: str) -> str:
    if "+" in s:
        s = _FORM_RUN.sub(_form_run, s)
    if "%" in s and _PERCENT_SIGN.search(s):
        s = _PERCENT_RUN.sub(_percent_run, _PERCENT_UNICODE.sub(lambda m: chr(int(m.group(1), 16)), s))
    if "\\" in s:
        s = _ESCAPED_BYTES.sub(_bytes_escape, s)
        s = _ESCAPED_UNICODE.sub(lambda m: chr(int(m.group(1), 16)), s)
        s = _ESCAPED_QUOTE.sub("", s)
        s = _ESCAPED_WS.sub(" ", s)
    if "&" in s and _ENTITY.search(s):
        s = html.unescape(_HUGE_CHARREF.sub("\ufffd", s))
    return s


def without_layers(s: str) -> str:
    """``s`` with its transport encodings undone (see the module docstring), at most :data:`MAX_PASSES` passes
    (fewer when a pass changes nothing), then its lost apostrophes put back."""
    for _ in range(MAX_PASSES):
        decoded = _one_pass(s)
        if decoded == s:
            break
        s = decoded
    if "\u00e2" in s or "?" in s or "\ufffd" in s:
        s = _LOST_APOSTROPHE.sub("'", s)
    return s

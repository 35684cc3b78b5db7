"""HTML markup and locale digit grouping taken out of an error text before it is parsed (pure; used by
:func:`~litellm_kvwarm.context_errors.parse_context_error` on its text once escapes and entities are undone).

Markup: a proxy or load balancer that answers with an HTML error page (nginx, an ingress, a gateway's "400 Bad
Request" page) may set the server's numbers in tags ("you requested <b>10000</b> tokens (<b>9000</b> in the
messages"). Inline tags (``b``, ``code``, ``span``, …) are dropped without a trace, so "(<b>9000</b> in" reads
"(9000 in"; any other tag (``p``, ``br``, ``pre``, ``h1``, …) becomes a space, so sentences stay apart. Only a
``<`` followed by a tag name is a tag: "<= 4096", "(T < W)" and "<|im_end|>" stay as they are. Markdown emphasis
around a number (a chat front end or bot relaying the error: "maximum context length is **8192** tokens", ``*8192*``,
``__8192__``) is dropped too; a snake_case name or ``16_384`` is no emphasis.

Terminal colours: a log line or CLI output relayed as the error (a server's coloured log, a gateway that forwards its
console text) may wrap words and numbers in ANSI escape sequences ("maximum context length is ESC[1m8192ESC[0m
tokens"). Every CSI sequence that starts with ESC is dropped, and so is a colour code whose ESC was stripped on the
way ("[1m8192[0m", "[0;31m", caret notation "^[[1m"): one or more numbers joined by ``;`` in brackets, then an
``m`` that ends the word and no closing bracket.

Locale digit grouping, made the comma the number pattern reads (:data:`~litellm_kvwarm.context_error_rows.NUM`):
the Arabic thousands separator ``٬`` (U+066C) and the middle dot (``·``, U+00B7, Catalan "16·384") between
digits; the Arabic decimal separator ``٫`` (U+066B) becomes a dot. Indian grouping (lakh and crore: "1,63,840",
"1,04,85,760") is regrouped in threes ("163,840"), which the number pattern then reads whole; before, such a
number read no digits at all.
"""

from __future__ import annotations

import re

__all__ = ["without_markup", "with_plain_grouping"]

_INLINE = "a|abbr|b|big|cite|code|em|font|i|kbd|mark|q|s|samp|small|span|strong|sub|sup|tt|u|var"
_INLINE_TAG = re.compile(rf"</?(?:{_INLINE})(?:\s[^<>]{{0,200}})?/?>", re.IGNORECASE)
_OTHER_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9]{0,15}(?:\s[^<>]{0,200})?/?>")
# comment markers and the doctype (a comment's text is kept: searching for its end from every "<!--" is quadratic)
_HTML_COMMENT = re.compile(r"<!--|-->|<!DOCTYPE[^<>]{0,200}>", re.IGNORECASE)
# ANSI escapes: a CSI sequence after ESC, or a colour code (SGR) whose ESC was stripped ("[1m", "[0;31m").
_ANSI = re.compile(r"\x1b\[[0-?]{0,32}[ -/]{0,4}[@-~]|\x1b|(?:\^\[)?\[\d{1,3}(?:;\d{1,3}){0,8}m(?![A-Za-z\]])")
# Markdown emphasis wrapping a number only (the same marker on both sides, no word character touching either).
_EMPHASIS = re.compile(r"(?<![\w*])(\*{1,3}|_{1,2})(\d(?:[\d,.' ]{0,30}\d)?)\1(?![\w*])")
# A separator between two digits: the Arabic thousands separator and the middle dot.
_LOCALE_THOUSANDS = re.compile(r"(?<=\d)[\u066c\u00b7](?=\d{3}(?!\d))")
# Indian grouping: 1-2 digits, one or more 2-digit groups, a last 3-digit group (not part of a longer number).
_INDIAN = re.compile(r"(?<![\d,.[])\d{1,2}(?:,\d{2})+,\d{3}(?![\d]|[,.]\d)")


def without_markup(s: str) -> str:
    """``s`` without HTML tags and comment markers (inline tags dropped, others a space) and without Markdown
    emphasis around a number, and without terminal colour codes; ``s`` itself without any."""
    if "\x1b" in s or "m" in s and "[" in s:
        s = _ANSI.sub("", s)
    if "*" in s or "__" in s:
        s = _EMPHASIS.sub(r"\2", s)
    if "<" not in s:
        return s
    s = _HTML_COMMENT.sub(" ", s)
    return _OTHER_TAG.sub(" ", _INLINE_TAG.sub("", s))


def _regroup(match: re.Match[str]) -> str:
    digits = match.group(0).replace(",", "")
    head = len(digits) % 3 or 3
    return ",".join([digits[:head]] + [digits[i:i + 3] for i in range(head, len(digits), 3)])


def with_plain_grouping(s: str) -> str:
    """``s`` with locale digit grouping made commas (see the module docstring); the Arabic decimal separator a dot."""
    if not s.isascii():
        s = _LOCALE_THOUSANDS.sub(",", s).replace("\u066b", ".")
    if "," in s:
        s = _INDIAN.sub(_regroup, s)
    return s

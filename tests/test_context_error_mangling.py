"""Transport mangling (pure): every shared sample parses the same after each mangling real messages suffer.

Each mangling is applied generically to every 'numbers' and 'no_numbers' message of
tests/data/context_errors.json; the parse must equal the parse of the clean message. Every
'negative' entry must stay ``None`` under every mangling. Also: an output cap is never a window.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from litellm_kvwarm.context_errors import ROWS, Certainty, ErrorKind, Limit, Number, parse_context_error

SHARED_DATA = Path(__file__).resolve().parent / "data" / "context_errors.json"
ENTRIES = json.loads(SHARED_DATA.read_text(encoding="utf-8"))
FIELDS = (
    "family", "kind", "window", "prompt_tokens", "output_tokens", "total_tokens", "printed_limit", "excess_tokens",
    "prompt_chars", "char_limit",
)

_BIG_NUMBER = re.compile(r"(?<![\d.])\d{4,}(?![\d.])")


def _group_thousands(sep: str):
    def apply(text: str) -> str:
        return _BIG_NUMBER.sub(lambda m: f"{int(m.group(0)):,}".replace(",", sep), text)

    return apply


def _indian(value: int) -> str:
    """``value`` grouped the Indian way (lakh, crore): 1,63,840."""
    digits = str(value)
    head, tail = digits[:-3], digits[-3:]
    groups = [head[max(0, i - 2):i] for i in range(len(head), 0, -2)][::-1]
    return ",".join(groups + [tail]) if head else tail


def _requote(opening: str, closing: str):
    """Field names quoted another way than with backticks (TGI's `inputs`, Anthropic's `max_tokens`)."""

    def apply(text: str) -> str:
        return re.sub(r"`([^`]*)`", lambda m: opening + m.group(1) + closing, text)

    return apply


def _repr_dict(message: str) -> str:
    return "litellm.BadRequestError: OpenAIException - Error code: 400 - " + str(
        {"error": {"message": message, "type": "BadRequestError", "param": None, "code": 400}}
    )


def _repr_escaped_apostrophe(message: str) -> str:
    inner = message.replace("\\", "\\\\").replace("'", "\\'")
    return (
        "litellm.BadRequestError: OpenAIException - Error code: 400 - {'error': {'message': '" + inner
        + "', 'type': 'BadRequestError', 'param': None, 'code': 400}}"
    )


def _bytes_literal(message: str) -> str:
    body = json.dumps({"error": {"message": message.replace("'", "\u2019") + "\n"}}, ensure_ascii=False)
    return repr(body.encode("utf-8"))  # b'...' with \xe2\x80\x99 escapes and a literal \n


def _bytes_literal_double_quoted(message: str) -> str:
    return 'b"' + repr(json.dumps({"error": {"message": message}}).encode("utf-8"))[2:-1] + '"'


def _unicode_escaped(message: str) -> str:
    body = json.dumps({"error": {"message": message}}, ensure_ascii=True)
    return body.replace(">", "\\u003e").replace("'", "\\u0027").replace("(", "\\u0028")


MANGLINGS = {
    # missing spaces: number→word ("16384tokens", "5220>="), "digit." → next sentence, word→number
    "no-space-after-number": lambda t: re.sub(r"(?<=\d) (?=[A-Za-z>(])", "", t),
    "no-space-after-period": lambda t: re.sub(r"(?<=\d\.) (?=[A-Za-z])", "", t),
    "no-space-before-number": lambda t: re.sub(r"(?<=[A-Za-z]) (?=\d)", "", t),
    # thousands separators in every 4+ digit number
    "thousands-comma": _group_thousands(","),
    "thousands-nbsp": _group_thousands("\u00a0"),
    "thousands-narrow-nbsp": _group_thousands("\u202f"),
    "thousands-thin-space": _group_thousands("\u2009"),
    "thousands-underscore": _group_thousands("_"),
    "thousands-apostrophe": _group_thousands("'"),
    "thousands-dot": _group_thousands("."),
    "thousands-arabic": _group_thousands("\u066c"),
    "thousands-indian": lambda t: _BIG_NUMBER.sub(lambda m: _indian(int(m.group(0))), t),
    # field names quoted any way: curly double quotes, guillemets, ASCII double and single quotes
    "quotes-curly-double": _requote("\u201c", "\u201d"),
    "quotes-low-9": _requote("\u201e", "\u201c"),
    "quotes-guillemets": _requote("\u00ab", "\u00bb"),
    "quotes-single-guillemets": _requote("\u2039", "\u203a"),
    "quotes-ascii-double": _requote('"', '"'),
    "quotes-ascii-single": _requote("'", "'"),
    # invisible and compatibility characters
    "zero-width-space-in-words": lambda t: re.sub(r"(?<=[a-z]{3})(?=[a-z]{3})", "\u200b", t, count=3),
    "fullwidth-colon": lambda t: t.replace(": ", "\uff1a"),
    # escaping at any depth
    "json-escaped-once": lambda t: json.dumps(json.dumps({"error": {"message": t}})),
    "json-escaped-twice": lambda t: json.dumps(json.dumps(json.dumps({"error": {"message": t}}))),
    "unicode-escaped": _unicode_escaped,
    # Python-repr and bytes wrappers
    "python-repr": _repr_dict,
    "python-repr-escaped-apostrophe": _repr_escaped_apostrophe,
    "bytes-literal": _bytes_literal,
    "bytes-literal-double-quoted": _bytes_literal_double_quoted,
    # markup of a relaying front end: an HTML error page, Markdown emphasis around each number
    "html-page": lambda t: "<html><head><title>400 Bad Request</title></head><body><h1>Bad Request</h1><p>"
    + t.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("'", "&#39;") + "</p></body></html>",
    "html-bold-numbers": lambda t: re.sub(r"(?<![\w.,*])(\d+)(?![\w*]|[.,]\d)", r"<b>\1</b>", t),
    "markdown-bold-numbers": lambda t: re.sub(r"(?<![\w.,*])(\d+)(?![\w*]|[.,]\d)", r"**\1**", t),
    # trailing junk
    "trailing-none": lambda t: t + " None",
    "trailing-junk": lambda t: t + "\n\nReceived Model Group=fast\nAvailable Model Group Fallbacks=None",
}

POSITIVE = [(i, e) for i, e in enumerate(ENTRIES) if e["kind"] in ("numbers", "no_numbers")]
NEGATIVE = [(i, e) for i, e in enumerate(ENTRIES) if e["kind"] == "negative"]


def _view(result):
    return None if result is None else tuple(getattr(result, f) for f in FIELDS)


_TRAILING_NUMBER = re.compile(r"(\d[\d,_' ]*)\s*$")


def _last_number(message: str) -> int | None:
    """The number ``message`` ends with, if it ends with one (nothing after it but spaces)."""
    found = _TRAILING_NUMBER.search(message)
    return None if found is None else int(re.sub(r"\D", "", found.group(1)))


def _same(clean, got, message: str) -> bool:
    """``got`` reads like ``clean``. One difference is allowed: a number that ends the clean text is
    only a lower bound there (it may have been cut mid-digits), and a mangling that wraps or extends
    the text (a closing quote, brace or more words after it) shows it was whole: exact."""
    if _view(got) == _view(clean):
        return True
    if clean is None or got is None:
        return False
    last = _last_number(message)
    for a, b in zip(_view(clean), _view(got)):
        if a == b:
            continue
        relaxed = (
            isinstance(a, (Number, Limit)) and type(a) is type(b) and a.value == b.value == last
            and a.certainty is Certainty.LOWER_BOUND and b.certainty is Certainty.EXACT
        )
        if not relaxed and not (a is None and b == last):  # a character count at the end is dropped
            return False
    return True


def test_the_file_has_samples_of_each_kind():
    assert len(POSITIVE) >= 100 and len(NEGATIVE) >= 1


@pytest.mark.parametrize("name", list(MANGLINGS))
def test_manglings_change_the_text(name):
    """Guard: each mangling really alters the samples it is meant for (else the test below is empty)."""
    changed = sum(MANGLINGS[name](e["message"]) != e["message"] for _, e in POSITIVE)
    assert changed >= 5, f"{name} changed only {changed} samples"


@pytest.mark.parametrize("name", list(MANGLINGS))
def test_every_sample_parses_the_same_after_mangling(name):
    mangle = MANGLINGS[name]
    failures = []
    for i, entry in POSITIVE:
        clean = parse_context_error(entry["message"])
        assert clean is not None, f"sample {i} does not parse even clean"
        mangled_text = mangle(entry["message"])
        got = parse_context_error(mangled_text)
        if not _same(clean, got, entry["message"]):
            failures.append(f"{i}: {mangled_text[:160]!r}\n   clean {_view(clean)}\n   got   {_view(got)}")
    assert not failures, f"{len(failures)} samples read differently after {name}:\n" + "\n".join(failures[:5])


@pytest.mark.parametrize("name", list(MANGLINGS))
def test_look_alikes_stay_negative_after_mangling(name):
    for i, entry in NEGATIVE:
        assert parse_context_error(MANGLINGS[name](entry["message"])) is None, f"negative sample {i}"


def test_mangled_examples_read_their_numbers():
    text = (
        "b'{\"error\":{\"message\":\"This model\\xe2\\x80\\x99s maximum context length is 16\\xe2\\x80\\xaf384tokens. "
        "However, your messages resulted in 17,001tokens.\\n\"}}'"
    )
    r = parse_context_error(text)
    assert (r.family, r.window.value, r.prompt_tokens.value) == ("openai-messages-resulted", 16384, 17001)
    r = parse_context_error("max_tokens=5000 cannot be greater than max_model_len=4096.Please request fewer. None")
    assert (r.window.value, r.output_tokens.value) == (4096, 5000)
    r = parse_context_error("prompt is too long: 208'310 tokens > 200_000 maximum")
    assert (r.prompt_tokens.value, r.window.value) == (208310, 200000)


def test_three_digit_groups_only():
    """"(1234 5678)" is two numbers, not one: separators join only groups of exactly three digits."""
    r = parse_context_error("Input length (4097 tokens) exceeds the maximum allowed length (4096 tokens)")
    assert (r.prompt_tokens.value, r.printed_limit.value) == (4097, 4096)
    r = parse_context_error("input length and max_tokens exceed context limit: 1000 + 20000 > 20500")
    assert (r.prompt_tokens.value, r.output_tokens.value, r.window.value) == (1000, 20000, 20500)


# ---------------------------------------------------------------- an output cap is never the window

OUTPUT_CAP_TEXTS = [
    "max_tokens: 10000 > 4096, which is the maximum allowed number of output tokens for claude-3-5-sonnet",
    "max_tokens is too large: 20000. This model supports at most 16384 completion tokens, whereas you provided 20000.",
    "Invalid max_tokens value, the valid range of max_tokens is [1, 8192]",
]


def test_rows_for_output_caps_never_map_a_window():
    cap_rows = [row for row in ROWS if row.kind is ErrorKind.OUTPUT_OVER_LIMIT]
    assert len(cap_rows) >= 3
    for row in cap_rows:
        assert all(slot != "window" for slot, _ in row.fields.values()), row.family


@pytest.mark.parametrize("text", OUTPUT_CAP_TEXTS + [e["message"] for _, e in POSITIVE])
def test_output_over_limit_results_have_no_window(text):
    for mangled in [text] + [m(text) for m in MANGLINGS.values()]:
        r = parse_context_error(mangled)
        if r is not None and r.kind is ErrorKind.OUTPUT_OVER_LIMIT:
            assert r.window is None and r.printed_limit is not None


def test_every_output_cap_text_is_an_output_cap():
    for text in OUTPUT_CAP_TEXTS:
        assert parse_context_error(text).kind is ErrorKind.OUTPUT_OVER_LIMIT


# ---------------------------------------------------------------- speed


def test_a_20000_char_mangled_text_parses_fast():
    hostile = ("1,2 3_4'5\\x4 \\\\\\u00 16384tokens " * 700)[:19_900] + " prompt is too long: 208310 tokens > 200000 maximum"
    start = time.process_time()  # this process's CPU seconds: other work on the machine does not count
    for _ in range(5):
        parse_context_error(hostile)
        parse_context_error(_repr_dict(hostile))
    assert time.process_time() - start < 2.0

"""Context-length error parsing (pure): transport encodings undone before reading (percent and form encoding,
escapes applied twice, HTML entities escaped twice). Each encoded case read no numbers (or nothing) before."""

from __future__ import annotations

import json
from urllib.parse import quote, quote_plus, urlencode

import pytest

from context_error_view import expected as _expected, view as _view
from litellm_kvwarm.context_error_layers import without_layers
from litellm_kvwarm.context_errors import Certainty, ErrorKind, Limit, LimitMeaning, Number, parse_context_error

K = ErrorKind
LB = Certainty.LOWER_BOUND

# (server text, family, kind, fields): a spread of servers' wordings
MESSAGES = [
    ("This model's maximum context length is 16384 tokens. However, your messages resulted in 17000 tokens.",
     "openai-messages-resulted", K.PROMPT_OVER_WINDOW, {"window": Number(16384), "prompt_tokens": Number(17000)}),
    ("This model's maximum context length is 16,384 tokens. However, you requested 17,000 tokens (16,000 in the "
     "messages, 1,000 in the completion). Please reduce the length of the messages or completion.",
     "openai-requested", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW,
     {"window": Number(16384), "prompt_tokens": Number(16000), "output_tokens": Number(1000),
      "total_tokens": Number(17000)}),
    ("prompt is too long: 210000 tokens > 200000 maximum", "anthropic-prompt-too-long", K.PROMPT_OVER_WINDOW,
     {"window": Number(200000), "prompt_tokens": Number(210000)}),
    ("The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).", "gemini",
     K.PROMPT_OVER_WINDOW, {"prompt_tokens": Number(1200000),
                            "printed_limit": Limit(1048576, LimitMeaning.INPUT_LIMIT)}),
    ("'max_tokens' or 'max_completion_tokens' is too large: 9000. This model's maximum context length is 8192 "
     "tokens and your request has 300 input tokens (9000 > 8192 - 300)", "vllm-max-tokens-too-large",
     K.PROMPT_PLUS_OUTPUT_OVER_WINDOW,
     {"window": Number(8192), "prompt_tokens": Number(300), "output_tokens": Number(9000)}),
]


def _percent(text: str) -> str:
    return "https://gateway.example/v1/error?code=context_length_exceeded&message=" + quote(text, safe="")


def _percent_twice(text: str) -> str:
    return "Location: /login?error_description=" + quote(quote(text, safe=""), safe="")


def _form(text: str) -> str:
    return urlencode({"error": "invalid_request", "error_description": text})


def _plus_only(text: str) -> str:
    return text.replace(" ", "+")


def _percent_json(text: str) -> str:
    return "redirect_uri=https%3A%2F%2Fapp.example%2Fcb&body=" + quote(json.dumps({"error": {"message": text}}))


def _json_twice(text: str) -> str:
    inner = json.dumps({"message": text})
    return "litellm.BadRequestError: OpenAIException - " + json.dumps({"error": json.dumps({"error": inner})})


def _html_twice(text: str) -> str:
    escaped = text.replace("&", "&amp;").replace("'", "&#39;").replace(">", "&gt;").replace(" ", "&nbsp;")
    return "<html><body><pre>" + escaped.replace("&", "&amp;") + "</pre></body></html>"


def _percent_javascript(text: str) -> str:
    return "err=" + quote(text, safe="").replace("%27", "%u2019")


ENCODINGS = [_percent, _percent_twice, _form, _plus_only, _percent_json, _json_twice, _html_twice, _percent_javascript]


@pytest.mark.parametrize("encode", ENCODINGS, ids=[e.__name__ for e in ENCODINGS])
@pytest.mark.parametrize(("text", "family", "kind", "fields"), MESSAGES, ids=[m[1] for m in MESSAGES])
def test_an_encoded_error_body_reads_like_the_plain_one(encode, text, family, kind, fields):
    assert _view(parse_context_error(text)) == _expected(family, kind, fields)
    assert _view(parse_context_error(encode(text))) == _expected(family, kind, fields)


@pytest.mark.parametrize(("raw", "decoded"), [
    ("maximum%20context%20length%20is%2016384%20tokens", "maximum context length is 16384 tokens"),
    ("maximum%2520context%2520length", "maximum context length"),
    ("This+model's+maximum+context+length+is+4096", "This model's maximum context length is 4096"),
    ("&amp;quot;max&amp;quot; &amp;#39;x&amp;#39;", "\"max\" 'x'"),
    # no encoding: left alone
    ("input length and max_tokens exceed context limit: 1000 + 2000 > 4096",
     "input length and max_tokens exceed context limit: 1000 + 2000 > 4096"),
    ("context window: 1000+2000+3000>4096", "context window: 1000+2000+3000>4096"),
    ("KV cache at 95%CPU and 50%", "KV cache at 95%CPU and 50%"),
    ("C++ or a+b", "C++ or a+b"),
])
def test_without_layers_decodes_only_plain_signs(raw, decoded):
    assert without_layers(raw) == decoded


@pytest.mark.parametrize("text", [
    # encoded look-alikes stay look-alikes, and encoded non-errors stay non-errors
    quote("Rate limit reached for gpt-4o on tokens per min (TPM): Limit 30000, Used 29000, Requested 5000."),
    quote_plus("You exceeded your current quota, please check your plan and billing details."),
    "q=100%25+sure+it+is+fine+now",
    "%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%",
    "%u12%zz%2%%u00",
])
def test_an_encoded_look_alike_is_still_no_context_error(text):
    assert parse_context_error(text) is None


def test_a_megabyte_of_encoded_garbage_is_read_whole_and_returns():
    # every layer's sign repeated for 1 MB (only the scan window is read; each pass is linear)
    garbage = ("%25%2" + "\\\\\\u00" + "&amp;amp;#" + "a+b+c+" + "%u12") * (1_000_000 // 26)
    assert len(garbage) >= 990_000
    assert parse_context_error(garbage) is None
    message = quote("This model's maximum context length is 16384 tokens. However, your messages resulted in "
                    "17000 tokens.", safe="")
    got = parse_context_error(message + garbage)
    assert got is not None and got.window == Number(16384) and got.prompt_tokens == Number(17000)
    assert parse_context_error(("+" * 999_999) + "%") is None
    # one run of 1 MB without whitespace, then form-encoded words: read at the end of the scan window
    assert parse_context_error("x" * 1_000_000 + "+a+b+c") is None
    tail = "This+model's+maximum+context+length+is+4096+tokens.+However,+your+messages+resulted+in+5000+tokens."
    got = parse_context_error("x" * 19_000 + " " + tail + "x" * 1_000_000)
    assert got is not None and got.window == Number(4096) and got.prompt_tokens == Number(5000)

"""Context-length error parsing (pure): a context error quoted in prose inside the client's echoed text (a user
asking what an old error means) is the client's, never the server's refusal; the server's own message beside it
still reads, and a server or wrapper that quotes its own message still reads. Before, each echo case read the
quoted error (window 4096, total 5000: a wrong EXACT window) or a look-alike as a refusal."""

from __future__ import annotations

import json

import pytest

from context_error_view import expected as _expected, view as _view
from litellm_kvwarm.context_errors import ErrorKind, Limit, LimitMeaning, Number, parse_context_error
from litellm_kvwarm.learned_limits import limit_from_error

K = ErrorKind

OLD = "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens"
ASK = f'Yesterday I got "{OLD}" — what does it mean?'
ASK_CURLY = f"Yesterday I got \u201c{OLD}\u201d \u2014 what does it mean?"
ASK_GUILLEMETS = f"Hier j'ai eu \u00ab{OLD}\u00bb, pourquoi ?"
ASK_COLON = f'I keep getting this error: "{OLD}". How do I fix it?'
ASK_SINGLE = f"Yesterday I got '{OLD}' - what does it mean?"
ASK_TYPOGRAPHIC = f"Yesterday I got \u2018{OLD}\u2019 - what does it mean?"
ASK_CODE = f"My agent failed with `{OLD}` after a long session"
ASK_FENCED = f"Error log:\n```\n{OLD}\n```\nWhy?"

OPENAI = ("This model's maximum context length is 8192 tokens. However, your messages resulted in 9500 tokens.",
          "openai-messages-resulted", K.PROMPT_OVER_WINDOW, {"window": Number(8192), "prompt_tokens": Number(9500)})
ANTHROPIC = ("prompt is too long: 210000 tokens > 200000 maximum", "anthropic-prompt-too-long", K.PROMPT_OVER_WINDOW,
             {"window": Number(200000), "prompt_tokens": Number(210000)})
GEMINI = ("The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).", "gemini",
          K.PROMPT_OVER_WINDOW, {"prompt_tokens": Number(1200000),
                                 "printed_limit": Limit(1048576, LimitMeaning.INPUT_LIMIT)})
VLLM = ("max_tokens=9000 cannot be greater than max_model_len=8192.", "vllm-max-tokens-over-window",
        K.OUTPUT_OVER_WINDOW, {"window": Number(8192), "output_tokens": Number(9000)})
BEDROCK = ("Input is too long for requested model.", "bedrock", K.UNKNOWN, {})

# (text, (server message, family, kind, fields)): the server's refusal beside the client's quoted prose
BESIDE = [
    (json.dumps({"error": {"message": OPENAI[0]}, "request": {"model": "m", "prompt": ASK}}), OPENAI),
    (json.dumps({"request": {"prompt": ASK, "max_tokens": 10}, "error": OPENAI[0]}), OPENAI),
    (json.dumps({"error": ANTHROPIC[0], "input": ASK_CURLY}), ANTHROPIC),
    (json.dumps({"error": {"code": 400, "message": GEMINI[0]}, "body": {"text": ASK_GUILLEMETS}}), GEMINI),
    (f"Error processing request with prompt='{ASK}': {VLLM[0]}", VLLM),
    (f"Request body: {ASK_COLON}\nError: {OPENAI[0]}", OPENAI),
    ("litellm.BadRequestError: Hosted_vllmException - " + json.dumps({"detail": VLLM[0], "query": ASK}), VLLM),
    # the server's message says no number: the quote sits under a request label, so it is still the client's
    (json.dumps({"request": {"prompt": ASK}, "error": BEDROCK[0]}), BEDROCK),
    (json.dumps({"message": BEDROCK[0], "inputText": ASK_CURLY, "prompt": ASK_CURLY}), BEDROCK),
    # the body cut inside the client's quote: the quote runs to the end
    (json.dumps({"error": {"message": OPENAI[0]}, "request": {"prompt": ASK}})[:-40], OPENAI),
    (f"{GEMINI[0]} Request: {{user_input: {ASK_CURLY}}}", GEMINI),
    # single quotes, ASCII or typographic (the apostrophe of "model's" inside them)
    (json.dumps({"error": {"message": OPENAI[0]}, "request": {"prompt": ASK_SINGLE}}), OPENAI),
    (f"{ANTHROPIC[0]} (request text: {ASK_TYPOGRAPHIC})", ANTHROPIC),
    # Markdown code in the client's text
    (json.dumps({"error": {"message": ANTHROPIC[0]}, "request": {"prompt": ASK_CODE}}), ANTHROPIC),
    (json.dumps({"input": [{"type": "input_text", "text": ASK_FENCED}], "error": {"message": VLLM[0]}}), VLLM),
]


@pytest.mark.parametrize(("text", "server"), BESIDE, ids=range(len(BESIDE)))
def test_a_context_error_quoted_in_the_client_s_prose_is_not_the_server_s(text, server):
    message, family, kind, fields = server
    assert _view(parse_context_error(message)) == _expected(family, kind, fields)
    assert _view(parse_context_error(text)) == _expected(family, kind, fields)


@pytest.mark.parametrize("text", [
    # an echo and no refusal of the server's own: the quoted error is the client's
    "Bad request: invalid field 'temperatur'. Request prompt was: " + ASK,
    json.dumps({"error": {"message": "Invalid value for 'temperature': 5"}, "request": {"prompt": ASK_CURLY}}),
    json.dumps({"detail": "unknown model 'gpt-5-mini'", "body": {"input": ASK_COLON}}),
])
def test_a_quoted_context_error_in_an_echo_alone_is_no_refusal(text):
    got = parse_context_error(text)
    assert got is None, got
    assert limit_from_error(got) is None


# (text, family, kind, fields): a server or wrapper that quotes its own message still reads it
OWN = [
    ('Error: "' + OPENAI[0] + '"', *OPENAI[1:]),
    ('Upstream provider returned "' + ANTHROPIC[0] + '"', *ANTHROPIC[1:]),
    ("Upstream provider returned '" + OPENAI[0] + "'", *OPENAI[1:]),
    (str({"error": {"message": OPENAI[0], "type": "invalid_request_error"}}), *OPENAI[1:]),
    ('litellm.ContextWindowExceededError: litellm.BadRequestError: Provider returned "' + OPENAI[0] + '"',
     *OPENAI[1:]),
    ("The upstream said \u201c" + GEMINI[0] + "\u201d", *GEMINI[1:]),
    ('{"error": {"message": "Request failed with message: \\"' + VLLM[0] + '\\""}}', *VLLM[1:]),
    # the server's own quote cut before it closed
    ('Upstream returned "' + OPENAI[0][:60], "generic", K.UNKNOWN, {"window": Number(8192)}),
    # quoted field names (not prose) in a server's own wording
    ("Input validation error: \u201cinputs\u201d tokens + \u201cmax_new_tokens\u201d must be <= 4096. Given: 4000 "
     "\u201cinputs\u201d tokens and 500 \u201cmax_new_tokens\u201d", "tgi-total",
     K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {"window": Number(4096), "prompt_tokens": Number(4000),
                                        "output_tokens": Number(500)}),
]


@pytest.mark.parametrize(("text", "family", "kind", "fields"), OWN, ids=range(len(OWN)))
def test_a_server_s_own_quoted_message_still_reads(text, family, kind, fields):
    assert _view(parse_context_error(text)) == _expected(family, kind, fields)


@pytest.mark.parametrize("text", [ASK, ASK_CURLY, ASK_GUILLEMETS, ASK_COLON, ASK_SINGLE, ASK_TYPOGRAPHIC, ASK_CODE,
                                  ASK_FENCED])
def test_the_client_s_own_text_alone_still_reads_as_the_error_it_quotes(text):
    # what limit_learning.echoes_client relies on: the client's text itself reads as a context error
    got = parse_context_error(text)
    assert got is not None and got.window is not None and got.window.value == 4096
    assert got.total_tokens == Number(5000)


def test_quoted_prose_marking_stays_linear_on_hostile_text():
    for text in ("a \u201c" * 50_000, 'a "' * 100_000, "x: \"context tokens too long " * 20_000, " `" * 100_000,
                 " ```a" * 50_000,
                 "\u201c" * 30_000, "a 'B" * 30_000, "a 'B c d context'" * 5_000,
                 "\u201ca b context " * 5_000 + "\u201d", "\u00ab" * 10_000 + "\u00bb" * 10_000,
                 "\ue000\ue001\ue002" * 10_000 + OPENAI[0]):
        got = parse_context_error(text)
        assert got is None or got.family == "openai-messages-resulted"

"""What a validation error quotes back of the client's own request, taken out of an error text before it is
parsed (pure; used by :func:`~litellm_kvwarm.context_errors.parse_context_error` on its normalised text).

pydantic v2's ``str(ValidationError)`` prints ``input_value=..., input_type=...``; its ``errors()`` list and
FastAPI's 422 body (which vLLM and other Python servers return for a malformed request) carry an ``input``
field. What those quote is the client's text: an agent transcript often holds an earlier context-length
error, and a malformed request that echoes one is the client's error, not a refusal on length.

An entry of such a list names its field only in ``loc`` (``"loc": ["body", "max_tokens"], "msg": "Input should be
less than or equal to 4096"``): the field is set before the message, as pydantic's own ``str()`` prints it
(``max_tokens: Input should be ...``), so the wording reads the same in either form.

A conversation message quoted back (``{"role": "user", "content": "..."}`` in an error that logs the request, whatever
its role: LiteLLM's "Invalid Message passed in" echoes one whose role it does not know, ``'toolx'``; a
gateway's body that carries the messages, a stream's ``delta``) is the conversation's own text, whatever error it
holds: the value of its ``content`` (up to the message's closing brace, the next message field, or the end of a cut
text) is taken out too, in either order of the two fields (a tool message's ``tool_call_id`` or a ``name`` may stand
between them; Gemini's ``parts`` and Cohere's ``message``, role ``CHATBOT``, are the same content), and so is the
``output`` of a Responses API ``function_call_output`` item (a sub-agent's own context error returned as a tool's
result), a tool call's ``arguments`` (chat ``tool_calls``, Responses ``function_call``), and Anthropic's
``tool_result`` content and ``tool_use`` input, and a stream chunk's ``delta`` text without a role (every chunk after
the first: ``"delta": {"content": "..."}``, Anthropic's ``"delta": {"type": "text_delta", "text": "..."}``).

A context error quoted in *prose* inside the client's text (a user asking 'Yesterday I got "This model's maximum
context length is 4096 tokens. However, you requested 5000 tokens" — what does it mean?', in an echoed ``prompt``,
``input`` or ``text`` field, a logged ``prompt='...'``, a request body printed before the server's own message) is
the client's too. :func:`marked_quotes` (on the text before its quotes are dropped) marks each quoted passage of at
most :data:`MAX_QUOTE` characters (to the end of a text cut inside it) that is a sentence (three words or more)
naming context or tokens. Quotes: ASCII ``"`` opened after a word and a space or after ``word: ``; a single quote,
typographic ones included, likewise but only before a capital (``'This model's ...'``, never ``'max_tokens'``);
curly ``“”`` ``„“``; guillemets ``«»``; Markdown code (```` `...` ````, fenced ```` ```...``` ````) opened after a
space. A quoted field name (``"max_tokens"``) or a JSON/repr string (opened after ``:`` ``,`` ``{`` ``[`` ``=``) is
never such a passage.

:func:`without_echoes` then takes the marked passages out when the text without them still reads as a refusal with
a number (the server's own message beside the quote; a wrapper's bare error name, LiteLLM's
``ContextWindowExceededError``, is none), except a passage opened after ``word: `` (that word labels it:
``debugDescription: "Content contains 5342 tokens ..."`` is the server's); or, passage by passage, when the nearest
field label before it that names either side names the client's request (``prompt:``, ``messages``, ``content``,
``input``, ``inputText``, ``text``, ``query``, ``body``, ``request``, ``instructions``, ``system``, ``Request prompt
was:``, a field path with indexes, ``'messages[2].content[0]':``; a passage opened after ``word: `` skips that word, unless
it is a value the server refused, OpenAI's ``Invalid value: '...'. Supported values are: ...``), not the server's reply (``message``, ``error``,
``detail``, ``BadRequestError``). So a wrapper quoting the server ('Upstream returned "This model's maximum context
length is ..."', 'Error: "prompt is too long: ..."') still reads.
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["MAX_QUOTE", "marked_quotes", "without_echoes", "without_fallback_hop"]

#: A quoted passage longer than this (characters) is not marked.
MAX_QUOTE = 4000
#: Private-use characters that stand for a marked passage's quotes until :func:`without_echoes` reads them (a
#: passage opened after ``word: `` has its own opening mark: the word labels it, so only its label decides).
OPEN, CLOSE, OPEN_LABELLED = "\ue000", "\ue001", "\ue002"
_MARKS = str.maketrans(dict.fromkeys(OPEN + CLOSE + OPEN_LABELLED, None))

# pydantic's echo (always ends at ``input_type=``, or where the text was cut)
_ECHO_INPUT_VALUE = re.compile(r"input_value=.*?(?:, ?input_type=\w+|\Z)", re.DOTALL)
_VALIDATION_ENTRY = re.compile(r"\bloc ?: ?[\[(].{0,400}?\bmsg ?:", re.DOTALL | re.IGNORECASE)
_ECHO_INPUT_FIELD = re.compile(r"\binput ?: ?.*?(?=, ?(?:ctx|url) ?: |\Z)", re.DOTALL | re.IGNORECASE)
# an entry's field (the last name of its loc) set before its msg, as pydantic's own str() prints it
_LOC_MSG = re.compile(
    r"(\bloc ?: ?[\[(][^\[\](){}]{0,200}?\b([A-Za-z_]\w{0,63}) ?,? ?[\])] ?, ?msg ?: ?)'?", re.IGNORECASE
)
# a chat message's content, after its role (the role's value is one of the chat roles; a tool message's id or a name
# may come between) or before it; a Responses API tool output (function_call_output) likewise
# any role: the chat roles, and the misspelt one a validation error echoes the message for ("Invalid Message passed in
# {'role': 'toolx', 'content': ...}")
_ROLE = r"\brole ?: ?[A-Za-z_][\w-]{0,31}\b"
_MESSAGE_END = r"(?=\} ?[\],}]|\} ?\Z|, ?(?:role|name|tool_calls|tool_call_id|refusal|reasoning_content) ?: |\Z)"
_BETWEEN = r"(?: ?, ?(?:name|tool_call_id|tool_use_id|call_id|id|type|status|is_error) ?: ?[^,{}]{0,128}){0,3} ?, ?"
_ECHO_CONTENT = re.compile(
    r"(?P<head>(?:" + _ROLE + _BETWEEN + r"(?:content|parts|message)|\btype ?: ?function_call_output\b" + _BETWEEN
    + r"output|\btype ?: ?function_call\b" + _BETWEEN + r"arguments|\btype ?: ?tool_result\b" + _BETWEEN + r"content|"
    r"\btype ?: ?tool_use\b" + _BETWEEN + r"input|\bfunction ?: ?\{ ?name ?: ?[^,{}]{0,128}, ?arguments|"
    r"\bdelta ?: ?\{ ?(?:(?:role|type) ?: ?\w{1,32} ?, ?)?(?:content|text|reasoning_content|reasoning)) ?: ?).*?"
    + _MESSAGE_END, re.DOTALL | re.IGNORECASE,
)
_ECHO_CONTENT_FIRST = re.compile(r"\{ ?(?:content|message) ?: ?[^{}]*?, ?(?=" + _ROLE + r")", re.DOTALL | re.IGNORECASE)


_QUOTE = r"(?:\"(?=\S)|'(?=[A-Z]))"  # a single quote opens prose only before a capital: 'max_tokens' is a name
_PROSE_OPEN = re.compile(
    r"(?<=[A-Za-z0-9.!?;)\u2014\u2013] )" + _QUOTE + r"|(?P<labelled>(?<=[A-Za-z]: )" + _QUOTE + r")|"
    r"[\u201c\u201e\u00ab](?=\S)|(?<!\S)```|(?<!\S)`(?=[^\s`])"
)
_CLOSER = {'"': '"', "'": "'", "\u201c": "\u201d", "\u201e": "\u201c", "\u00ab": "\u00bb", "```": "```", "`": "`"}
# a single quote that closes: after a character, before no letter or digit (the apostrophe of "model's" does not)
_SINGLE_CLOSE = re.compile(r"(?<=\S)'(?![A-Za-z0-9])")
_CONTEXT_WORD = re.compile(r"context|tokens?\b|too long|max_tokens|max_model_len|maximum|exceed", re.IGNORECASE)
_MARKED = re.compile("[\ue000\ue002][^\ue000\ue001\ue002]*\ue001")
# A field label (a JSON/repr key, "Request body:", "prompt=", "prompt was:"), and what names the client's request in it
# ("prompt", "inputText", "user_input", "messages") or the server's reply ("error", "detail", "debugDescription",
# "litellm.BadRequestError"), by the last part of its name.
_LABEL = re.compile(r"\b([A-Za-z][\w.\[\]-]{0,40})'?(?: (?:was|is))? ?[:=]")
_WORD_PART = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
_REQUEST_NAMES = frozenset({"prompt", "input", "inputs", "text", "query", "content", "question", "instructions",
                            "system", "body", "request", "messages", "contents", "parts"})
# a passage's own label that says it is a value the client sent and the server refused (OpenAI's "Invalid value:
# '...'. Supported values are: ..."); a bare "value:" may be anyone's
_REFUSED_VALUE = re.compile(r"(?:invalid|unsupported|unknown|unexpected|illegal|bad) value$", re.IGNORECASE)
_REPLY_NAMES = frozenset({"error", "detail", "reason", "description", "msg", "message", "status", "code", "exception"})
#: Marked passages weighed at most (each looks back at most this far for its label).
_MAX_PASSAGES, _LABEL_REACH = 64, 2000


def marked_quotes(s: str) -> str:
    """``s`` (an error text whose quotes are still there) with the quotes of each prose passage that may quote a
    context error replaced by :data:`OPEN`/:data:`CLOSE` (see the module docstring); any such character already in
    ``s`` dropped. Linear: each closing quote is searched for once per kind, and a passage inside one already
    weighed (the same closing quote, or the same cut end) is not weighed again."""
    if OPEN in s or CLOSE in s or OPEN_LABELLED in s:
        s = s.translate(_MARKS)
    marks: list[tuple[int, int, int, int, str]] = []  # opening quote, passage, end of the closing quote; mark
    next_close: dict[str, int] = {}
    weighed: dict[str, int] = {}  # closer → the end of the last passage weighed and left unmarked
    pos = 0
    for found in _PROSE_OPEN.finditer(s):
        start, inner = found.start(), found.end()
        if start < pos:
            continue
        closer = _CLOSER[found.group()]
        end = next_close.get(closer, start)
        if end != -1 and end < inner:
            if closer == "'":
                close = _SINGLE_CLOSE.search(s, inner)
                end = next_close[closer] = close.start() if close is not None else -1
            else:
                end = next_close[closer] = s.find(closer, inner)
        if end == -1:  # never closed: the text was cut inside the quote
            end = len(s)
        if end - start > MAX_QUOTE or weighed.get(closer) == end:
            continue
        passage = s[inner:end]
        weighed[closer] = end
        if len(passage.split(None, 2)) == 3 and _CONTEXT_WORD.search(passage):
            marks.append((start, inner, end, min(end + len(closer), len(s)),
                          OPEN_LABELLED if found.group("labelled") else OPEN))
            pos = end + len(closer)
    if not marks:
        return s
    parts, last = [], 0
    for start, inner, end, after, mark in marks:
        parts += [s[last:start], mark, s[inner:end], CLOSE]
        last = after
    return "".join(parts) + s[last:]


def _requested(s: str, start: int) -> bool:
    """Whether the nearest field label before ``start`` that names either side names the client's request (a
    passage opened after ``word: `` skips that word's own label)."""
    labels = list(_LABEL.finditer(s, max(0, start - _LABEL_REACH), start))
    if labels and s[start] == OPEN_LABELLED and labels[-1].end() >= start - 1:
        own = labels.pop()
        if _REFUSED_VALUE.search(s, max(0, own.start() - 16), own.end(1)):
            return True
    for label in reversed(labels):
        parts = _WORD_PART.findall(label.group(1))  # the last part names it: inputText, user_input, BadRequestError
        last = parts[-1].lower() if parts else ""
        if last in _REPLY_NAMES:
            return False
        if last in _REQUEST_NAMES:
            return True
    return False


def _without_quoted_prose(s: str, reads: Callable[[str], bool]) -> str:
    passages = list(_MARKED.finditer(s))[:_MAX_PASSAGES]
    if passages:
        every = reads(_MARKED.sub(" ", s).translate(_MARKS))
        for found in reversed(passages):
            if (every and s[found.start()] == OPEN) or _requested(s, found.start()):
                s = s[:found.start()] + " (quoted) " + s[found.end():]
    return s.translate(_MARKS)


def without_echoes(s: str, reads: Callable[[str], bool] = lambda _: False) -> str:
    """``s`` (a normalised error text: quotes already dropped, prose passages marked by :func:`marked_quotes`)
    without what a validation error quotes of the client's input and without the client's quoted prose; the rest
    unchanged, and no mark left. ``reads``: whether a text still reads as a context-length refusal that prints a
    token count. Never
    raises."""
    if "input_value=" in s:
        s = _ECHO_INPUT_VALUE.sub("input_value=(client input), input_type=echo", s)
    if _VALIDATION_ENTRY.search(s):
        s = _ECHO_INPUT_FIELD.sub("input: (client input)", s)
        s = _LOC_MSG.sub(r"\1\2: ", s)
    lowered = s.lower()
    if "role" in lowered or "function_call" in lowered or "tool_" in lowered or "arguments" in lowered or "delta" in lowered:
        s = _ECHO_CONTENT_FIRST.sub("{content: (conversation), ", s)
        s = _ECHO_CONTENT.sub(r"\g<head>(conversation)", s)
    if OPEN in s or CLOSE in s or OPEN_LABELLED in s:
        s = _without_quoted_prose(s, reads)
    return s


# LiteLLM's router (earlier releases; 1.108's error_normalization still names the wording) re-raised a failed
# fallback's *first* exception with the last hop's error appended: "... Received Model Group=A\nAvailable Model
# Group Fallbacks=[B]\nError doing the fallback: <B's error>". What follows is another model group's error: its
# numbers are not A's, nor are its look-alikes (a rate limit on B) A's.
_FALLBACK_HOP = re.compile(r"error doing the fallback\b", re.IGNORECASE)


def without_fallback_hop(s: str) -> str:
    """The normalised error text ``s`` without a failed fallback hop's error that LiteLLM's router appended to it
    (everything from "Error doing the fallback" on); ``s`` itself when it holds none."""
    hop = _FALLBACK_HOP.search(s) if "allback" in s else None
    return s[: hop.start()] if hop else s

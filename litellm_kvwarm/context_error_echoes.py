"""What a validation error quotes back of the client's own request, taken out of an error text before it is
parsed (pure; used by :func:`~litellm_kvwarm.context_errors.parse_context_error` on its normalised text).

pydantic v2's ``str(ValidationError)`` prints ``input_value=..., input_type=...``; its ``errors()`` list and
FastAPI's 422 body (which vLLM and other Python servers return for a malformed request) carry an ``input``
field. What those quote is the client's text: an agent transcript often holds an earlier context-length
error, and a malformed request that echoes one is the client's error, not a refusal on length.

An entry of such a list names its field only in ``loc`` (``"loc": ["body", "max_tokens"], "msg": "Input should be
less than or equal to 4096"``): the field is set before the message, as pydantic's own ``str()`` prints it
(``max_tokens: Input should be ...``), so the wording reads the same in either form.

A conversation message quoted back (``{"role": "user", "content": "..."}`` in an error that logs the request, a
gateway's body that carries the messages, a stream's ``delta``) is the conversation's own text, whatever error it
holds: the value of its ``content`` (up to the message's closing brace, the next message field, or the end of a cut
text) is taken out too, in either order of the two fields (a tool message's ``tool_call_id`` or a ``name`` may stand
between them; Gemini's ``parts`` and Cohere's ``message``, role ``CHATBOT``, are the same content), and so is the
``output`` of a Responses API ``function_call_output`` item (a sub-agent's own context error returned as a tool's
result), a tool call's ``arguments`` (chat ``tool_calls``, Responses ``function_call``), and Anthropic's
``tool_result`` content and ``tool_use`` input.
"""

from __future__ import annotations

import re

__all__ = ["without_echoes"]

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
_ROLE = r"\brole ?: ?(?:user|assistant|system|developer|tool|function|model|human|ai|chatbot)\b"
_MESSAGE_END = r"(?=\} ?[\],}]|\} ?\Z|, ?(?:role|name|tool_calls|tool_call_id|refusal|reasoning_content) ?: |\Z)"
_BETWEEN = r"(?: ?, ?(?:name|tool_call_id|tool_use_id|call_id|id|type|status|is_error) ?: ?[^,{}]{0,128}){0,3} ?, ?"
_ECHO_CONTENT = re.compile(
    r"(?P<head>(?:" + _ROLE + _BETWEEN + r"(?:content|parts|message)|\btype ?: ?function_call_output\b" + _BETWEEN
    + r"output|\btype ?: ?function_call\b" + _BETWEEN + r"arguments|\btype ?: ?tool_result\b" + _BETWEEN + r"content|"
    r"\btype ?: ?tool_use\b" + _BETWEEN + r"input|\bfunction ?: ?\{ ?name ?: ?[^,{}]{0,128}, ?arguments) ?: ?).*?"
    + _MESSAGE_END, re.DOTALL | re.IGNORECASE,
)
_ECHO_CONTENT_FIRST = re.compile(r"\{ ?(?:content|message) ?: ?[^{}]*?, ?(?=" + _ROLE + r")", re.DOTALL | re.IGNORECASE)


def without_echoes(s: str) -> str:
    """``s`` (a normalised error text: quotes already dropped) without what a validation error quotes of the
    client's input; the rest unchanged. Never raises."""
    if "input_value=" in s:
        s = _ECHO_INPUT_VALUE.sub("input_value=(client input), input_type=echo", s)
    if _VALIDATION_ENTRY.search(s):
        s = _ECHO_INPUT_FIELD.sub("input: (client input)", s)
        s = _LOC_MSG.sub(r"\1\2: ", s)
    lowered = s.lower()
    if "role" in lowered or "function_call" in lowered or "tool_" in lowered or "arguments" in lowered:
        s = _ECHO_CONTENT_FIRST.sub("{content: (conversation), ", s)
        s = _ECHO_CONTENT.sub(r"\g<head>(conversation)", s)
    return s

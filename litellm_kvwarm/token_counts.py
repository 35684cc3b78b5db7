"""Request collection: the text a chat template will render, and the counts, of one request body (pure).

One pass collects the text the chat template will render — message text (string or
list-of-parts content), names, tool calls and tool results, the ``tools`` / ``functions``
JSON schemas — and counts messages, tool schemas and non-text parts; a ``response_format``
schema is kept apart (:attr:`RequestCounts.format_parts`: safe counts it, routing does not). For a text completion it reads ``prompt`` instead: ``messages`` XOR
``prompt``, exactly as the payload is sent (a ``prompt`` of token ids is counted exactly).
The estimators (:mod:`litellm_kvwarm.token_estimators`) turn a :class:`RequestCounts` into tokens.
"""

from __future__ import annotations

from collections.abc import Mapping
from operator import itemgetter

from .deep_json import lenient_json_text as _json_text
from .deep_json import unescaped_json
from .request_counts import RequestCounts
from .token_blocks import Collected, collect_blocks
from .token_counts_agents import AGENT_COUNTERS, call_text
from .token_reasoning import last_user_index

__all__ = ["RequestCounts", "count_request"]

_PROMPT_SHAPING_KEYS = ("tools", "functions")


def _format_parts(response_format: object) -> tuple[str, ...]:
    """A ``response_format`` other than plain text, as JSON text (:attr:`RequestCounts.format_parts`)."""
    if not response_format or (isinstance(response_format, Mapping) and response_format.get("type") == "text"):
        return ()
    return (_json_text(response_format),)


def count_request(payload: Mapping[str, object], *, call_kind: str | None = None, reasoning_rendered: bool = True) -> RequestCounts:
    """Collect the counts (and the rendered text) of one request body.

    Args:
        payload: the request body as the client sent it.
        call_kind: the API (:data:`litellm_kvwarm.view.ADAPTERS`): ``"chat"`` reads ``messages``
            (OpenAI chat), ``"completion"`` reads ``prompt`` only, ``"messages"`` reads an
            Anthropic Messages body (``system``, ``messages``, ``tools``), ``"responses"`` a
            Responses body (``instructions``, ``input``, ``tools``); ``None`` reads ``messages``
            when present, else ``prompt``.
        reasoning_rendered: ``False`` when the served model's template renders no reasoning at all
            (:func:`~litellm_kvwarm.token_reasoning.renders_no_reasoning`): the reasoning of the current
            tool loop is then past reasoning too (safe estimate only).

    Never raises on odd input: anything it does not understand is counted by its JSON
    text (a deliberate over-count), or skipped when it cannot be serialised. Nesting depth
    is the client's to choose: nothing here recurses on it (see :func:`json_text`).
    """
    if not isinstance(payload, Mapping):
        return RequestCounts(chars=0, messages=0)
    if call_kind in AGENT_COUNTERS:
        return AGENT_COUNTERS[call_kind](payload, reasoning_rendered=reasoning_rendered)
    use_messages = call_kind == "chat" or (call_kind is None and "messages" in payload)
    if use_messages:
        raw = payload.get("messages")
        raw = [raw] if isinstance(raw, Mapping) else raw  # a lone message sent as a dict: one message, not nothing
        plain = _plain_contents(raw)
        if plain is not None:
            parts, chars, odd_roles = plain
            messages, other, images, media, past = len(raw), 0, (), (), ()  # type: ignore[arg-type]
        else:
            collected = Collected()
            messages, odd_roles = _collect_messages(raw, collected, reasoning_rendered)
            parts, other, images, media = collected.parts, collected.other, tuple(collected.images), tuple(collected.media)
            chars, past = sum(map(len, parts)), tuple(collected.past_reasoning)
        tools = 0
        for key in _PROMPT_SHAPING_KEYS:
            value = payload.get(key)
            if value:
                schema = _json_text(value)
                parts.append(schema)
                chars += len(schema)
                if isinstance(value, list):
                    tools += len(value)
        return RequestCounts(chars=chars, messages=messages, other_parts=other, tools=tools, parts=parts, images=images,
                             media=media, template_dependent=odd_roles, format_parts=_format_parts(payload.get("response_format")),
                             past_reasoning=past)
    return _count_prompt(payload.get("prompt"))


_CONTENT = itemgetter("content")
_REASONING_KEYS = ("reasoning_content", "reasoning")
#: Roles every chat template renders; any other (the legacy ``function``, made-up roles) makes the
#: count template-dependent (:attr:`RequestCounts.template_dependent`).
_STANDARD_ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})


def standard_role(role: object) -> bool:
    """Whether ``role`` is one of :data:`_STANDARD_ROLES` (a list or dict sent as a role is not, and
    does not raise: ``x in frozenset`` would, on an unhashable value)."""
    return isinstance(role, str) and role in _STANDARD_ROLES


_ROLE_KEY = itemgetter("role")


def _plain_contents(messages: object) -> tuple[list[str], int, bool] | None:
    """Fast path (C-level ``map``/``join``/``set``, no per-message Python code): the message text
    joined into one part, its length, and whether a role is outside :data:`_STANDARD_ROLES`, when
    every message is a dict of exactly two keys (``role``, hashable, and a string ``content``), the
    common case; else ``None`` and the general path runs (a 100k-token conversation of 257
    messages: one ``join`` and one ``set``, not 257 Python calls)."""
    if type(messages) is not list:
        return None
    try:
        if sum(map(len, messages)) != 2 * len(messages):
            return None
        text = "".join(map(_CONTENT, messages))  # TypeError unless every content is a str
        roles = set(map(_ROLE_KEY, messages))  # KeyError when the second key is not the role (a ``name``: not dropped)
    except (KeyError, TypeError, IndexError):  # TypeError on an unhashable role (a list or dict sent as one)
        return None
    return [text], len(text), not roles <= _STANDARD_ROLES


def _collect_messages(messages: object, into: Collected, reasoning_rendered: bool = True) -> tuple[int, bool]:
    """Add every message's text to ``into``; returns (messages, whether a role outside
    :data:`_STANDARD_ROLES` appears)."""
    if not isinstance(messages, list):
        return 0, False
    odd = False
    last_user = last_user_index(messages) if reasoning_rendered else len(messages)
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping):
            into.text(message)
            continue
        odd = odd or not standard_role(message.get("role"))
        content = message.get("content")
        if isinstance(content, (str, list)) or (isinstance(content, Mapping) and "type" in content):
            collect_blocks(content, into)  # a lone block (with a type) is read as a block: its image is an image
        elif content is not None:
            into.text(content)  # not a chat content shape: its JSON text (a deliberate over-count)
        for key in ("name", "tool_call_id", "reasoning_content", "reasoning"):  # vLLM reads either reasoning field
            value = message.get(key)
            if isinstance(value, str):
                if key in _REASONING_KEYS and index < last_user:
                    into.past_reasoning.append(value)  # no template renders it (:mod:`.token_reasoning`)
                else:
                    into.parts.append(_unsigned_id(value) if key == "tool_call_id" else value)
        for key in ("tool_calls", "function_call"):
            value = message.get(key)
            if value:
                into.parts.extend(_calls_text(value))
    return len(messages), odd


#: LiteLLM's encoding of a Gemini thought signature into a tool call id (``call_…__thought__<signature>``).
_THOUGHT_SEPARATOR = "__thought__"


def _unsigned_id(call_id: str) -> str:
    """A tool call id without the thought signature LiteLLM appends to it (never rendered)."""
    return call_id.split(_THOUGHT_SEPARATOR, 1)[0]


def _calls_text(calls: object) -> list[str]:
    """``tool_calls`` (or a legacy ``function_call``) as the chat templates render each call:
    ``{"name": ..., "arguments": ...}`` (:func:`~.token_counts_agents.call_text`, as the Messages and
    Responses calls are counted). The call's ``id`` and ``type`` are rendered by no template (Qwen2.5,
    Qwen3, Llama 3, DeepSeek-V3 render the name and arguments; the ``tool`` message's ``tool_call_id``
    still counts), nor are the opaque ``provider_specific_fields`` (a Gemini thought signature, also
    appended to the id as ``__thought__<signature>``): counted as the call's JSON, 100 short calls with
    Claude-style ids read 1.5-1.9x the truth. ``arguments`` with ``\\u`` escapes count as the characters
    (:func:`~.deep_json.unescaped_json`); anything odd is counted by its JSON text."""
    out = []
    for call in calls if isinstance(calls, list) else (calls,):
        function = call.get("function", call) if isinstance(call, Mapping) else None
        if isinstance(function, Mapping) and ("name" in function or "arguments" in function):
            arguments = function.get("arguments")
            out.append(call_text(function.get("name"), unescaped_json(arguments) if isinstance(arguments, str) else _json_text(arguments)))
        else:
            out.append(_json_text(call))
    return out


def _count_prompt(prompt: object) -> RequestCounts:
    if isinstance(prompt, str):
        return RequestCounts(chars=len(prompt), messages=0, parts=(prompt,))
    if isinstance(prompt, list) and prompt:
        if all(isinstance(item, int) for item in prompt):
            return RequestCounts(chars=0, messages=0, exact_tokens=len(prompt))
        if all(isinstance(item, str) for item in prompt):
            # A batch: each string is its own sequence; the longest one decides whether it fits.
            longest = max(prompt, key=len)
            return RequestCounts(chars=len(longest), messages=0, parts=(longest,))
        if all(isinstance(item, list) and all(isinstance(t, int) for t in item) for item in prompt):
            return RequestCounts(chars=0, messages=0, exact_tokens=max(len(item) for item in prompt))
    return RequestCounts(chars=0, messages=0)

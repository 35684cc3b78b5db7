"""Request collection: the text a chat template will render, and the counts, of one request body (pure).

One pass collects the text the chat template will render — message text (string or
list-of-parts content), names, tool calls and tool results, the ``tools`` / ``functions``
JSON schemas, a ``response_format`` schema — and counts messages, tool schemas and
non-text parts. For a text completion it reads ``prompt`` instead: ``messages`` XOR
``prompt``, exactly as the payload is sent (a ``prompt`` of token ids is counted exactly).
The estimators (:mod:`litellm_kvwarm.token_estimators`) turn a :class:`RequestCounts` into tokens.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from operator import itemgetter

from .deep_json import lenient_json_text as _json_text

__all__ = ["RequestCounts", "count_request"]

_TEXT_PART_TYPES = frozenset({"text", "input_text", "output_text"})
_PROMPT_SHAPING_KEYS = ("tools", "functions", "response_format")


@dataclass(frozen=True)
class RequestCounts:
    """What the estimates are computed from.

    Attributes:
        chars: characters of rendered text (message text, tool calls/results, schemas).
        messages: number of chat messages (0 for a text completion).
        other_parts: content parts that are not text (images, audio, files).
        exact_tokens: token ids sent as ``prompt`` (exact count), else ``None``.
        tools: tool / function schemas sent with a chat request.
        parts: the rendered text pieces, in order (their joined length is ``chars``), for the
            calibrated estimator; :attr:`text` joins them.
    """

    chars: int
    messages: int
    other_parts: int = 0
    exact_tokens: int | None = None
    tools: int = 0
    parts: tuple[str, ...] | list[str] = field(default=(), repr=False, compare=False)

    @property
    def text(self) -> str:
        """The rendered text, joined (O(characters); the estimators never need it)."""
        return "".join(self.parts)


def count_request(payload: Mapping[str, object], *, call_kind: str | None = None) -> RequestCounts:
    """Collect the counts (and the rendered text) of a chat or text-completion request body.

    Args:
        payload: the OpenAI-style request body (``messages`` or ``prompt``, ``tools``, ...).
        call_kind: ``"chat"`` reads ``messages`` only, ``"completion"`` reads ``prompt`` only;
            ``None`` reads ``messages`` when present, else ``prompt``.

    Never raises on odd input: anything it does not understand is counted by its JSON
    text (a deliberate over-count), or skipped when it cannot be serialised. Nesting depth
    is the client's to choose: nothing here recurses on it (see :func:`json_text`).
    """
    use_messages = call_kind == "chat" or (call_kind is None and "messages" in payload)
    if use_messages:
        raw = payload.get("messages")
        plain = _plain_contents(raw)
        if plain is not None:
            parts, chars = plain
            messages, other = len(raw), 0  # type: ignore[arg-type]
        else:
            parts = []
            messages, other = _collect_messages(raw, parts)
            chars = sum(map(len, parts))
        tools = 0
        for key in _PROMPT_SHAPING_KEYS:
            value = payload.get(key)
            if value:
                schema = _json_text(value)
                parts.append(schema)
                chars += len(schema)
                if key != "response_format" and isinstance(value, list):
                    tools += len(value)
        return RequestCounts(chars=chars, messages=messages, other_parts=other, tools=tools, parts=parts)
    return _count_prompt(payload.get("prompt"))


_CONTENT = itemgetter("content")


def _plain_contents(messages: object) -> tuple[list[str], int] | None:
    """Fast path (C-level ``map``/``join``, no per-message Python code): the message text
    joined into one part, and its length, when every message is a dict of exactly two keys
    (the role and a string ``content``), the common case; else ``None`` and the general
    path runs."""
    if type(messages) is not list:
        return None
    try:
        if sum(map(len, messages)) != 2 * len(messages):
            return None
        text = "".join(map(_CONTENT, messages))  # TypeError unless every content is a str
    except (KeyError, TypeError, IndexError):
        return None
    return [text], len(text)


def _collect_messages(messages: object, parts: list[str]) -> tuple[int, int]:
    if not isinstance(messages, list):
        return 0, 0
    other = 0
    for message in messages:
        if not isinstance(message, Mapping):
            parts.append(_json_text(message))
            continue
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            other += _collect_parts(content, parts)
        elif content is not None:
            parts.append(_json_text(content))
        for key in ("name", "tool_call_id", "reasoning_content"):
            value = message.get(key)
            if isinstance(value, str):
                parts.append(value)
        for key in ("tool_calls", "function_call"):
            value = message.get(key)
            if value:
                parts.append(_json_text(value))
    return len(messages), other


def _collect_parts(content: Iterable[object], parts: list[str]) -> int:
    other = 0
    for part in content:
        if isinstance(part, str):
            parts.append(part)
        elif isinstance(part, Mapping) and part.get("type") in _TEXT_PART_TYPES and isinstance(part.get("text"), str):
            parts.append(part["text"])  # type: ignore[arg-type]
        else:
            other += 1
    return other


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

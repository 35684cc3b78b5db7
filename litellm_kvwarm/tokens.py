"""Cheap input-token estimates of a request, from what the backend will render (pure).

One pass collects the characters the chat template will render — message text (string
or list-of-parts content), tool calls and tool results, the ``tools`` / ``functions``
JSON schemas, a ``response_format`` schema — and counts messages and non-text parts.
For a text completion it reads ``prompt`` instead: ``messages`` XOR ``prompt``, exactly
as the payload is sent (a ``prompt`` of token ids is counted exactly).

Two estimates come out, biased on purpose:

* ``safe``: characters ÷ ``safe_chars_per_token`` (default 3) plus per-message template
  overhead, rounded up. Meant to over-estimate; used to clamp ``max_tokens``.
* ``routing``: characters ÷ ``routing_chars_per_token`` (default 4), rounded down, with
  less overhead. Meant to lean low; used for proactive routing, so a borderline
  interactive turn is not sent to the slow tier for nothing.

Cost: O(characters), no tokenizer; ~10 µs per 10k tokens of plain chat.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

#: Template tokens per message (role header and end marker; ChatML renders ~5, Llama 3 ~5).
SAFE_TOKENS_PER_MESSAGE = 8
ROUTING_TOKENS_PER_MESSAGE = 3
#: Tokens the template adds once (generation prompt, BOS, tool preamble share).
SAFE_TOKENS_PER_REQUEST = 16
ROUTING_TOKENS_PER_REQUEST = 0
#: Tokens counted for a non-text content part (image, audio, file): a placeholder, since
#: its real cost depends on the model's encoder. Routing counts none of it.
SAFE_TOKENS_PER_OTHER_PART = 1024

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
    """

    chars: int
    messages: int
    other_parts: int = 0
    exact_tokens: int | None = None


@dataclass(frozen=True)
class TokenEstimate:
    """Input-token estimates of one request (tokens). ``safe >= routing`` always."""

    safe: int
    routing: int
    counts: RequestCounts


def count_request(payload: Mapping[str, object], *, call_kind: str | None = None) -> RequestCounts:
    """Collect the counts of a chat or text-completion request body.

    Args:
        payload: the OpenAI-style request body (``messages`` or ``prompt``, ``tools``, ...).
        call_kind: ``"chat"`` reads ``messages`` only, ``"completion"`` reads ``prompt`` only;
            ``None`` reads ``messages`` when present, else ``prompt``.

    Never raises on odd input: anything it does not understand is counted by its JSON
    length (a deliberate over-count), or skipped when it cannot be serialised.
    """
    use_messages = call_kind == "chat" or (call_kind is None and "messages" in payload)
    if use_messages:
        chars, messages, other = _count_messages(payload.get("messages"))
        for key in _PROMPT_SHAPING_KEYS:
            value = payload.get(key)
            if value:
                chars += _json_len(value)
        return RequestCounts(chars=chars, messages=messages, other_parts=other)
    return _count_prompt(payload.get("prompt"))


def estimate_counts(
    counts: RequestCounts,
    *,
    safe_chars_per_token: float = 3.0,
    routing_chars_per_token: float = 4.0,
) -> TokenEstimate:
    """Turn counts into the two estimates (tokens). See the module docstring for the bias."""
    if counts.exact_tokens is not None:
        exact = counts.exact_tokens
        return TokenEstimate(safe=exact, routing=exact, counts=counts)
    safe = (
        math.ceil(counts.chars / safe_chars_per_token)
        + SAFE_TOKENS_PER_MESSAGE * counts.messages
        + SAFE_TOKENS_PER_OTHER_PART * counts.other_parts
        + SAFE_TOKENS_PER_REQUEST
    )
    routing = (
        int(counts.chars // routing_chars_per_token)
        + ROUTING_TOKENS_PER_MESSAGE * counts.messages
        + ROUTING_TOKENS_PER_REQUEST
    )
    return TokenEstimate(safe=safe, routing=min(routing, safe), counts=counts)


def estimate_request(
    payload: Mapping[str, object],
    *,
    call_kind: str | None = None,
    safe_chars_per_token: float = 3.0,
    routing_chars_per_token: float = 4.0,
) -> TokenEstimate:
    """``estimate_counts(count_request(payload))``: both estimates of one request body (tokens)."""
    return estimate_counts(
        count_request(payload, call_kind=call_kind),
        safe_chars_per_token=safe_chars_per_token,
        routing_chars_per_token=routing_chars_per_token,
    )


def _count_messages(messages: object) -> tuple[int, int, int]:
    if not isinstance(messages, list):
        return 0, 0, 0
    chars = other = 0
    for message in messages:
        if not isinstance(message, Mapping):
            chars += _json_len(message)
            continue
        content = message.get("content")
        if isinstance(content, str):
            chars += len(content)
        elif isinstance(content, list):
            part_chars, part_other = _count_parts(content)
            chars += part_chars
            other += part_other
        elif content is not None:
            chars += _json_len(content)
        for key in ("name", "tool_call_id", "reasoning_content"):
            value = message.get(key)
            if isinstance(value, str):
                chars += len(value)
        for key in ("tool_calls", "function_call"):
            value = message.get(key)
            if value:
                chars += _json_len(value)
    return chars, len(messages), other


def _count_parts(parts: Iterable[object]) -> tuple[int, int]:
    chars = other = 0
    for part in parts:
        if isinstance(part, str):
            chars += len(part)
        elif isinstance(part, Mapping) and part.get("type") in _TEXT_PART_TYPES and isinstance(part.get("text"), str):
            chars += len(part["text"])  # type: ignore[arg-type]
        else:
            other += 1
    return chars, other


def _count_prompt(prompt: object) -> RequestCounts:
    if isinstance(prompt, str):
        return RequestCounts(chars=len(prompt), messages=0)
    if isinstance(prompt, list) and prompt:
        if all(isinstance(item, int) for item in prompt):
            return RequestCounts(chars=0, messages=0, exact_tokens=len(prompt))
        if all(isinstance(item, str) for item in prompt):
            # A batch: each string is its own sequence; the longest one decides whether it fits.
            return RequestCounts(chars=max(len(item) for item in prompt), messages=0)
        if all(isinstance(item, list) and all(isinstance(t, int) for t in item) for item in prompt):
            return RequestCounts(chars=0, messages=0, exact_tokens=max(len(item) for item in prompt))
    return RequestCounts(chars=0, messages=0)


def _json_len(value: object) -> int:
    try:
        return len(json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str))
    except (TypeError, ValueError):
        return 0

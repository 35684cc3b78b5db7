"""A session's head: what every later request of the session starts with (pure; no I/O).

The head of a request is its prompt fields as they are (system / ``instructions``, ``tools``, every
other field that shapes the rendered prompt) and its items up to and including the **first user
message** (the first item a client writes; the system and developer messages before it). Every
later request of the same conversation renders it first, so a warm of the head is a prefix-cache
hit for the session's escalated turn however the session grows before it: the one warm that a
session which jumps past the window in one step (an agent's tool result of thousands of tokens)
can still get. Agents' heads are large (tool schemas, long system prompts: thousands of tokens),
and identical across a tenant's sessions, so most of a head warm is itself a prefix-cache hit.

:func:`head_request` returns the head of a request body of one kind (``chat``, ``messages``,
``responses``), or ``None`` where there is no strict head (no user item, the head is the whole
request, ``input`` a plain string, a text completion).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .warm_prefixes import ITEMS_FIELD, role

__all__ = ["head_items", "head_request"]


def _is_user(kind: str, item: object) -> bool:
    if not isinstance(item, Mapping) or role(item) != "user":
        return False
    # a Responses item with a type other than a message (a function_call_output has no role) is not the client's turn
    return kind != "responses" or item.get("type", "message") == "message"


def head_items(kind: str, items: object) -> int | None:
    """How many leading ``items`` form the head (up to and including the first user item), ``None``
    when there is none or it would be all of them (a one-turn request is its own head)."""
    if not isinstance(items, list):
        return None
    k = next((i + 1 for i, item in enumerate(items) if _is_user(kind, item)), None)
    return k if k is not None and k < len(items) else None


def head_request(kind: str | None, data: Mapping[str, Any]) -> dict[str, Any] | None:
    """``data`` (a request body of ``kind``) with its items cut to the head (:func:`head_items`),
    every other field as it is; ``None`` without a strict head. The result is a valid request
    of the same API: it ends with the client's first user message."""
    field = ITEMS_FIELD.get(kind or "")
    if field is None:
        return None
    items = data.get(field)
    k = head_items(kind or "", items)
    if k is None:
        return None
    return {**data, field: items[:k]}  # type: ignore[index]

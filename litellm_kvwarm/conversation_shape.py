"""Whether a request's conversation is one the API takes, structurally (pure): the plugin leaves a malformed
one as LiteLLM alone sends it (the planner's ``client_malformed``), since it is the client's own error."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .warm_prefixes import ITEMS_FIELD

__all__ = ["body_well_formed"]


def body_well_formed(kind: str | None, body: Mapping[str, Any]) -> bool:
    """Whether ``body``'s conversation (``messages`` of chat and Messages, a Responses ``input`` list) is a
    list of objects whose ``content`` (chat, Messages) is text, a list of objects, or absent; a body without
    one (a text completion, a Responses ``input`` string) is. Roles are not judged (vLLM takes any role
    a template knows). A malformed one is the client's own error: LiteLLM refuses it, so the plugin leaves
    the request as LiteLLM alone sends it (moving it would only add a second group's failures)."""
    field = ITEMS_FIELD.get(kind or "")
    if field is None or field not in body or (kind == "responses" and isinstance(body[field], str)):
        return True
    items = body[field]
    if not isinstance(items, list):
        return False
    if kind == "responses":
        return all(isinstance(item, Mapping) for item in items)
    for item in items:  # item_sound of chat and Messages, one frame per body (every request reads it)
        if not isinstance(item, Mapping):
            return False
        content = item.get("content")
        if content is None or isinstance(content, str):
            continue
        if not isinstance(content, list) or not all(isinstance(part, Mapping) for part in content):
            return False
    return True

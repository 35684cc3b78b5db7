"""Whether a request's conversation is one the API takes, structurally (pure): the plugin leaves a malformed
one as LiteLLM alone sends it (the planner's ``client_malformed``), since it is the client's own error."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .warm_prefixes import ITEMS_FIELD

__all__ = ["body_well_formed"]

#: Request fields LiteLLM refuses before any backend attempt unless of these types, per API (1.108.7: pydantic's
#: "tools: Input should be a valid list" / "tools.0: Input should be a valid dictionary"; "Invalid tool choice";
#: the Messages bridge's "'int' object is not subscriptable"; hosted_vllm's "Unsupported response_format type",
#: the last two 500s after LiteLLM's retries).
TOOL_FIELD_TYPES = {"tools": list, "tool_choice": (str, Mapping)}
FIELD_TYPES = {"chat": {**TOOL_FIELD_TYPES, "response_format": Mapping}, "messages": TOOL_FIELD_TYPES,
               "responses": {"tools": list}}  # a Responses tool_choice of another type is served (ignored)


def _fields_sound(kind: str | None, body: Mapping[str, Any]) -> bool:
    for name, types in FIELD_TYPES.get(kind or "", {}).items():
        value = body.get(name)
        if value is not None and not isinstance(value, types):
            return False
    tools = body.get("tools") if kind in FIELD_TYPES else None
    return (tools is None or all(isinstance(tool, Mapping) for tool in tools)) and _bridge_fields_sound(kind, body)


def _bridge_fields_sound(kind: str | None, body: Mapping[str, Any]) -> bool:
    """A ``thinking`` whose ``budget_tokens`` is given but not a number (chat, Messages), a Messages ``thinking`` that is
    not an object, or a Messages ``tool_choice`` object whose ``type`` is not text, is refused by LiteLLM (1.108.7:
    "'>=' not supported between instances of 'str' and 'int'", "'str' object has no attribute 'get'", a 500 after its
    retries; a chat ``thinking: "yes"`` is served)."""
    choice = body.get("tool_choice") if kind == "messages" else None
    if isinstance(choice, Mapping) and not isinstance(choice.get("type", ""), str):
        return False
    thinking = body.get("thinking") if kind in ("chat", "messages") else None
    if thinking is None:
        return True
    if not isinstance(thinking, Mapping):
        return kind == "chat"
    return "budget_tokens" not in thinking or isinstance(thinking["budget_tokens"], (int, float))


def body_well_formed(kind: str | None, body: Mapping[str, Any]) -> bool:
    """Whether ``body``'s conversation (``messages`` of chat and Messages, a Responses ``input`` list) is a
    list of objects whose ``content`` (chat, Messages) is text, a list of objects, or absent; a body without
    one (a text completion, a Responses ``input`` string) is. Roles are not judged (vLLM takes any role
    a template knows); its ``tools`` and, in chat and Messages, ``tool_choice`` (and a chat body's
    ``response_format``, a ``thinking.budget_tokens``, a Messages ``thinking`` and ``tool_choice.type``) are of the types LiteLLM takes (:data:`FIELD_TYPES`). A malformed one is the client's own error: LiteLLM refuses it, so the plugin
    leaves the request as LiteLLM alone sends it (moving it would only add a second group's failures)."""
    if not _fields_sound(kind, body):
        return False
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

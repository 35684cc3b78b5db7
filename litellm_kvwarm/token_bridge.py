"""What LiteLLM's Anthropic Messages → chat bridge sends of a ``/v1/messages`` body (pure).

A provider without a native ``/v1/messages`` (``hosted_vllm``, ``openai``, ...: see
:func:`~litellm_kvwarm.litellm_bridge.native_messages`) gets the body translated to chat by
``LiteLLMAnthropicMessagesAdapter.translate_anthropic_messages_to_openai`` (LiteLLM 1.108.7), which
keeps only the blocks it knows and drops the rest without a trace:

* ``system``: a string, or its ``text`` blocks;
* ``user`` messages: ``text``, ``image`` and ``document`` blocks whose ``source`` is base64 data or a
  URL (a ``document`` with a ``text`` or ``content`` source is dropped), and ``tool_result`` blocks
  (a ``tool`` message; content a string, or its ``text`` / ``image`` / ``document`` (base64 or URL) /
  ``tool_reference`` parts and strings; any other content, a lone dict included, becomes ``""``);
* ``assistant`` messages: ``text``, ``tool_use`` (``tool_calls``), ``thinking``, ``redacted_thinking``
  blocks and strings;
* everything else is dropped: ``search_result``, server tool calls and results
  (``server_tool_use``, ``web_search_tool_result``, ``web_fetch_tool_result``, code-execution
  results), MCP blocks (``mcp_tool_use``, ``mcp_tool_result``), ``container_upload``, a ``tool_use``
  in a user message, a ``tool_result`` in an assistant message; a message left with nothing becomes
  no chat message at all.

:func:`bridged_messages` returns the body cut down to what the bridge sends, or ``None`` when it
drops nothing (the common case: no copy). The routing estimate of a bridged request counts that
body; the safe estimate keeps counting the body as sent (conservative, and cheap: it only decides
when an exact count is asked; a native deployment of the same group, or a LiteLLM version whose
bridge turns these blocks into text, renders them, and an under-count there would skip that count).
The group is taken as bridged when any of its deployments is (routing leans low).
A dropped block never reaches the model, so counting it in routing sent requests that fit to the
bigger group (a ~6,000-token search result before a one-line question: 6,027 routing tokens for a
36-token prompt, qwen2.5).
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["bridged_messages"]

_USER_BLOCKS = frozenset({"text", "image", "document", "tool_result"})
_ASSISTANT_BLOCKS = frozenset({"text", "tool_use", "thinking", "redacted_thinking"})
_RESULT_PARTS = frozenset({"text", "image", "document", "tool_reference"})
_SOURCED = frozenset({"image", "document"})
_SYSTEM_BLOCKS = frozenset({"text"})
#: Blocks the bridge sends as they are, per role (compared, never hashed: a type may be a list).
_PLAIN = {
    "user": lambda b: type(b) is dict and (b.get("type") == "text" or (b.get("type") == "tool_result" and type(b.get("content")) is str)),
    "assistant": lambda b: type(b) is dict and b.get("type") in ("text", "tool_use", "thinking", "redacted_thinking"),
    "system": lambda b: type(b) is dict and b.get("type") == "text",
}


def _has_source(block: Mapping) -> bool:
    """An ``image`` / ``document`` the bridge turns into an ``image_url`` (base64 data or a URL string)."""
    source = block.get("source")
    if not isinstance(source, Mapping):
        return False
    if source.get("type") == "base64":
        return bool(source.get("data"))
    return source.get("type") == "url" and isinstance(source.get("url"), str)


def _kept(block: object, allowed: frozenset[str]) -> bool:
    if isinstance(block, str):
        return True  # a string in a list: the assistant path keeps it; the user path raises in LiteLLM (left as sent)
    if not isinstance(block, Mapping):
        return True  # not a block: counted as sent (the bridge raises on it; nothing to learn here)
    kind = block.get("type")
    if not isinstance(kind, str) or kind not in allowed:  # a list or dict sent as a type: dropped, never hashed
        return False
    return kind not in _SOURCED or _has_source(block)


def _result_content(content: object) -> object:
    """A ``tool_result``'s ``content`` as the ``tool`` message carries it."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    kept = [p for p in content if isinstance(p, str) or (isinstance(p, Mapping) and _kept(p, _RESULT_PARTS))]
    return content if len(kept) == len(content) else kept


def _user_block(block: object) -> object:
    if isinstance(block, Mapping) and block.get("type") == "tool_result":
        content = block.get("content")
        sent = _result_content(content)
        if sent is not content:
            return {**block, "content": sent}
    return block


def _message(message: object) -> tuple[object, bool]:
    """The message as the bridge sends it (``None``: none) and whether anything was dropped."""
    if not isinstance(message, Mapping):
        return message, False
    content, role = message.get("content"), message.get("role")
    if not isinstance(content, list) or role not in ("user", "assistant", "system"):
        return message, False
    allowed = _USER_BLOCKS if role == "user" else _ASSISTANT_BLOCKS if role == "assistant" else _SYSTEM_BLOCKS
    if all(map(_PLAIN[role], content)):
        return message, False  # the common message: text, tool calls, string tool results (no copy)
    blocks = [_user_block(b) if role == "user" else b for b in content if _kept(b, allowed)]
    if len(blocks) == len(content) and all(a is b for a, b in zip(blocks, content)):
        return message, False
    return ({**message, "content": blocks} if blocks else None), True


def bridged_messages(payload: Mapping[str, object]) -> Mapping[str, object] | None:
    """``payload`` (an Anthropic Messages body) with only what LiteLLM's chat bridge sends (see the
    module docstring); ``None`` when the bridge drops nothing. Never raises."""
    changed = False
    out: dict[str, object] = dict(payload)
    system = payload.get("system")
    if isinstance(system, list):
        kept = [b for b in system if isinstance(b, Mapping) and b.get("type") == "text"]
        if len(kept) != len(system):
            out["system"], changed = kept, True
    raw = payload.get("messages")
    if isinstance(raw, list):
        messages = []
        for message in raw:
            sent, dropped = _message(message)
            changed = changed or dropped
            if sent is not None:
                messages.append(sent)
        out["messages"] = messages
    return out if changed else None

"""A chat request in the agent APIs' wire formats (pure): what an agent client would send for the
same turn to ``/v1/messages`` (Anthropic Messages) or ``/v1/responses`` (OpenAI Responses).

The demo and the benchmark replay some recorded conversations this way (a :class:`~.model.Conversation`
whose ``api`` is ``"messages"`` or ``"responses"``); the history is the same, only its shape changes.
Field knowledge follows LiteLLM 1.108's own translators (``llms/anthropic/pass_through/adapters``, ``messages/adapters`` since 1.109,
``responses/litellm_completion_transformation``), read in the other direction:

* **Messages** (:func:`messages_body`): ``system`` messages -> top-level ``system`` (joined with a
  blank line); user text -> ``{"type": "text"}`` blocks; assistant ``content`` -> a text block and
  each ``tool_calls`` entry -> a ``tool_use`` block whose ``input`` is the parsed ``arguments``;
  ``tool`` messages -> ``tool_result`` blocks in a user message; consecutive messages of one role
  are merged (Messages alternates user / assistant); empty text is dropped (Anthropic refuses empty
  text blocks); OpenAI ``tools`` -> ``{name, description, input_schema}``; ``max_tokens`` stays.
* **Responses** (:func:`responses_body`): ``system`` -> ``instructions``; user / assistant text ->
  ``message`` items (``input_text`` / ``output_text`` parts); ``tool_calls`` -> ``function_call``
  items (``call_id``, ``name``, ``arguments`` as the JSON string); ``tool`` messages ->
  ``function_call_output`` items; ``tools`` -> ``{type: "function", name, description,
  parameters}``; ``max_tokens`` -> ``max_output_tokens``.

Both keep ``model`` and ``stream``; ``stream_options`` is a chat-only field and is not carried.
A tool call whose ``arguments`` is not a JSON object raises :class:`ValueError` (Messages needs
an object); an unknown role raises :class:`ValueError` naming it.
"""

from __future__ import annotations

import json
from typing import Any

from .model import Message

__all__ = ["API_PATHS", "APIS", "CHAT", "MESSAGES", "RESPONSES", "api_body", "content_text", "messages_body", "responses_body"]

CHAT = "chat"
MESSAGES = "messages"
RESPONSES = "responses"
#: The proxy path each API is sent to.
API_PATHS = {CHAT: "/v1/chat/completions", MESSAGES: "/v1/messages", RESPONSES: "/v1/responses"}
APIS = tuple(API_PATHS)


def content_text(content: Any) -> str:
    """A chat ``content`` (string, ``None`` or a list of ``{"type": "text"}`` parts) as one string."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if isinstance(part, dict))


def _system(messages: list[Message]) -> str:
    return "\n\n".join(content_text(m.get("content")) for m in messages if m["role"] == "system")


def _arguments(call: dict[str, Any]) -> dict[str, Any]:
    raw = call["function"].get("arguments") or "{}"
    parsed = json.loads(raw) if isinstance(raw, str) else raw
    if not isinstance(parsed, dict):
        raise ValueError(f"tool call {call.get('id')!r}: arguments are not a JSON object: {raw!r}")
    return parsed


def _messages_blocks(message: Message) -> tuple[str, list[dict[str, Any]]]:
    role = message["role"]
    text = content_text(message.get("content"))
    if role == "user":
        return "user", [{"type": "text", "text": text}] if text else []
    if role == "tool":
        return "user", [{"type": "tool_result", "tool_use_id": message["tool_call_id"], "content": text}]
    if role == "assistant":
        blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
        blocks += [{"type": "tool_use", "id": call["id"], "name": call["function"]["name"], "input": _arguments(call)}
                   for call in message.get("tool_calls") or []]
        return "assistant", blocks
    raise ValueError(f"no Messages equivalent for a chat message with role {role!r}")


def messages_body(chat: dict[str, Any]) -> dict[str, Any]:
    """The Anthropic Messages body for the chat body ``chat`` (see module docstring)."""
    turns: list[dict[str, Any]] = []
    for message in chat["messages"]:
        if message["role"] == "system":
            continue
        role, blocks = _messages_blocks(message)
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"] += blocks
        else:
            turns.append({"role": role, "content": blocks})
    body: dict[str, Any] = {"model": chat["model"], "messages": turns, "max_tokens": chat["max_tokens"]}
    system = _system(chat["messages"])
    if system:
        body["system"] = system
    if chat.get("tools"):
        body["tools"] = [{"name": t["function"]["name"], "description": t["function"].get("description", ""),
                          "input_schema": t["function"].get("parameters") or {"type": "object", "properties": {}}}
                         for t in chat["tools"]]
    if "stream" in chat:
        body["stream"] = chat["stream"]
    return body


def _responses_items(message: Message) -> list[dict[str, Any]]:
    role = message["role"]
    text = content_text(message.get("content"))
    if role == "user":
        return [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}]
    if role == "tool":
        return [{"type": "function_call_output", "call_id": message["tool_call_id"], "output": text}]
    if role == "assistant":
        items = [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}] if text else []
        for call in message.get("tool_calls") or []:
            arguments = call["function"].get("arguments") or "{}"
            items.append({"type": "function_call", "call_id": call["id"], "name": call["function"]["name"],
                          "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments)})
        return items
    raise ValueError(f"no Responses equivalent for a chat message with role {role!r}")


def responses_body(chat: dict[str, Any]) -> dict[str, Any]:
    """The Responses body for the chat body ``chat`` (see module docstring)."""
    items = [item for m in chat["messages"] if m["role"] != "system" for item in _responses_items(m)]
    body: dict[str, Any] = {"model": chat["model"], "input": items, "max_output_tokens": chat["max_tokens"]}
    system = _system(chat["messages"])
    if system:
        body["instructions"] = system
    if chat.get("tools"):
        body["tools"] = [{"type": "function", "name": t["function"]["name"],
                          "description": t["function"].get("description", ""),
                          "parameters": t["function"].get("parameters") or {"type": "object", "properties": {}}}
                         for t in chat["tools"]]
    if "stream" in chat:
        body["stream"] = chat["stream"]
    return body


def api_body(api: str, chat: dict[str, Any]) -> dict[str, Any]:
    """``chat`` itself (``"chat"``) or its :func:`messages_body` / :func:`responses_body`;
    :class:`ValueError` for another ``api``."""
    if api == CHAT:
        return chat
    if api == MESSAGES:
        return messages_body(chat)
    if api == RESPONSES:
        return responses_body(chat)
    raise ValueError(f"api must be one of {APIS}, got {api!r}")

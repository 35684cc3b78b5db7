"""What the events of each API's stream mean (pure): the first token, the usage, errors, the end.

:func:`litellm_kvwarm.lab.sse.read_stream` (``api=...``) and the benchmark's recording tap read
three stream shapes with these rules:

* ``"chat"`` (OpenAI ``chat.completion.chunk`` / ``text_completion``): the first token is the first
  event with non-empty ``choices`` (vLLM sends its role-only chunk with the first generated token);
  usage is the last non-empty ``usage``; the end is ``[DONE]``.
* ``"messages"`` (Anthropic Messages, as LiteLLM streams ``/v1/messages``: ``message_start``,
  ``content_block_start`` / ``content_block_delta`` / ``content_block_stop``, ``message_delta``,
  ``message_stop``): the first token is the first ``content_block_start`` or ``content_block_delta``
  (LiteLLM sends ``message_start`` before the backend's first chunk, and opens the first block with
  the first non-blank one); usage is ``message_delta.usage`` (or ``message_start.message.usage``)
  when it counts anything; the end is ``message_stop``; errors are ``{"type": "error"}`` events.
* ``"responses"`` (OpenAI Responses: ``response.created`` ... ``response.output_text.delta`` ...
  ``response.completed``): the first token is the first event whose ``type`` ends with ``.delta``
  (text, reasoning or function-call arguments); usage is ``response.usage`` of ``response.completed``
  (or of ``response.incomplete``); the end is ``response.completed`` / ``response.incomplete`` /
  ``response.failed``; errors are ``{"type": "error"}`` and ``response.failed`` events.

Every usage is returned in the chat shape, so one row builder reads all three:
``{"prompt_tokens", "completion_tokens", "prompt_tokens_details": {"cached_tokens"}}``.  Messages
counts the prompt as ``input_tokens`` + ``cache_read_input_tokens`` + ``cache_creation_input_tokens``
(LiteLLM's translation subtracts the cached part from ``input_tokens``); Responses' ``input_tokens``
already includes ``input_tokens_details.cached_tokens``.  An event of any API that is
``{"error": ...}`` (LiteLLM's mid-stream failure) is an error too.
"""

from __future__ import annotations

from typing import Any

__all__ = ["API_OF_PATH", "chat_usage", "is_end", "is_error", "is_first_token", "usage_of"]

#: The API a generation path speaks (the tap records these).
API_OF_PATH = {"/v1/chat/completions": "chat", "/v1/completions": "chat", "/v1/responses": "responses",
               "/v1/messages": "messages"}

_MESSAGES_FIRST = frozenset({"content_block_start", "content_block_delta"})
_RESPONSES_END = frozenset({"response.completed", "response.incomplete", "response.failed"})


def is_error(api: str, event: dict[str, Any]) -> bool:
    """``event`` reports a failure (an ``error`` key, a ``type: error`` event, ``response.failed``)."""
    kind = event.get("type")
    if api == "chat":
        return "error" in event
    return kind in ("error", "response.failed") or (kind is None and "error" in event)


def is_first_token(api: str, event: dict[str, Any]) -> bool:
    """``event`` carries (or opens) the first generated token (see module docstring)."""
    if api == "messages":
        return event.get("type") in _MESSAGES_FIRST
    if api == "responses":
        return str(event.get("type", "")).endswith(".delta")
    return bool(event.get("choices"))


def is_end(api: str, event: dict[str, Any]) -> bool:
    """``event`` ends a Messages or Responses stream (chat streams end with ``[DONE]`` instead)."""
    if api == "messages":
        return event.get("type") == "message_stop"
    return api == "responses" and event.get("type") in _RESPONSES_END


def chat_usage(api: str, usage: Any) -> dict[str, Any] | None:
    """An API's ``usage`` object in the chat shape (see module docstring); ``None`` when it is not a
    mapping or (Messages, Responses) counts nothing."""
    if not isinstance(usage, dict) or not usage:
        return None
    if api == "messages":
        cached = usage.get("cache_read_input_tokens") or 0
        prompt = (usage.get("input_tokens") or 0) + cached + (usage.get("cache_creation_input_tokens") or 0)
        completion = usage.get("output_tokens") or 0
        if not prompt and not completion:
            return None
        return {"prompt_tokens": prompt, "completion_tokens": completion,
                "prompt_tokens_details": {"cached_tokens": cached}}
    if api == "responses" and ("input_tokens" in usage or "output_tokens" in usage):
        details = usage.get("input_tokens_details") or {}
        return {"prompt_tokens": usage.get("input_tokens"), "completion_tokens": usage.get("output_tokens"),
                "prompt_tokens_details": {"cached_tokens": details.get("cached_tokens")}}
    return usage


def usage_of(api: str, event: dict[str, Any]) -> dict[str, Any] | None:
    """The usage ``event`` carries, in the chat shape, or ``None``."""
    if api == "messages":
        inner = event.get("message") if event.get("type") == "message_start" else event
        return chat_usage(api, (inner or {}).get("usage"))
    if api == "responses":
        response = event.get("response") if isinstance(event.get("response"), dict) else event
        return chat_usage(api, response.get("usage"))
    return event.get("usage") or None

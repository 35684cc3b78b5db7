"""Past reasoning in the prompt, as Qwen3-family chat templates render it (pure).

Contract (``--chat-template-mode qwen3``): :func:`qwen3_messages` rewrites the messages vLLM hands
to the template (content already a string, see ``calibration.hf_chat.server_messages``) so that
the emulator's Qwen2.5 template renders each assistant turn as Qwen3's official template does:

* An assistant message's reasoning is its ``reasoning_content`` (``reasoning`` is accepted as an
  alias, as newer vLLM names the field); without one, a content holding ``</think>`` is split:
  the reasoning is what lies before ``</think>`` (after any ``<think>``), the content what follows.
* The *last query* is the last ``user`` message whose content is not a
  ``<tool_response>…</tool_response>`` wrapper. An assistant message AFTER it is rendered
  ``<think>\\n{reasoning.strip("\\n")}\\n</think>\\n\\n{content.lstrip("\\n")}`` when it has
  reasoning or is the last message; any other assistant message is rendered with its content
  only: reasoning of turns before the last user message is dropped, so those turns' cached
  blocks (which held the reasoning) stop matching from there on.

:func:`raw_reply` is the text a reasoning model generates for a reply (what vLLM caches after
the prompt), which is also what the template renders for that reply as an assistant turn after
the last query. :func:`filler_reasoning_tokens` is how many reasoning tokens the emulator makes up
for a reply (:data:`MIN_REASONING_TOKENS`–:data:`MAX_REASONING_TOKENS`, deterministic).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "MAX_REASONING_TOKENS",
    "MIN_REASONING_TOKENS",
    "filler_reasoning_tokens",
    "qwen3_messages",
    "raw_reply",
    "reasoning_of",
]

#: Bounds of the made-up reasoning of a qwen3-mode reply, tokens.
MIN_REASONING_TOKENS = 8
MAX_REASONING_TOKENS = 32
_REASONING_FIELDS = ("reasoning_content", "reasoning")


def reasoning_of(message: Mapping[str, Any]) -> str | None:
    """The message's ``reasoning_content`` (else ``reasoning``) when it is a string, else ``None``."""
    for name in _REASONING_FIELDS:
        value = message.get(name)
        if isinstance(value, str):
            return value
    return None


def _split(message: Mapping[str, Any]) -> tuple[str, str]:
    """(reasoning, content) of an assistant message, by Qwen3's template rule."""
    content = message.get("content") or ""
    content = content if isinstance(content, str) else str(content)
    reasoning = reasoning_of(message)
    if reasoning is None:
        reasoning = ""
        if "</think>" in content:
            reasoning = content.split("</think>")[0].rstrip("\n").split("<think>")[-1].lstrip("\n")
            content = content.split("</think>")[-1].lstrip("\n")
    return reasoning, content


def _is_query(message: Mapping[str, Any]) -> bool:
    content = message.get("content")
    return (message.get("role") == "user" and isinstance(content, str)
            and not (content.startswith("<tool_response>") and content.endswith("</tool_response>")))


def _think(reasoning: str, content: str) -> str:
    return "<think>\n" + reasoning.strip("\n") + "\n</think>\n\n" + content.lstrip("\n")


def qwen3_messages(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Copies of ``messages`` (content strings) whose assistant contents carry the reasoning Qwen3's
    template renders (see the module docstring); the reasoning fields are removed."""
    last_query = next((i for i in range(len(messages) - 1, -1, -1) if _is_query(messages[i])), len(messages) - 1)
    out: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        copy = {k: v for k, v in message.items() if k not in _REASONING_FIELDS}
        if message.get("role") == "assistant":
            reasoning, content = _split(message)
            after = index > last_query and (index == len(messages) - 1 or reasoning)
            copy["content"] = _think(reasoning, content) if after else content
        out.append(copy)
    return out


def raw_reply(reasoning: str, content: str) -> str:
    """What a reasoning model generates for a reply: the think block (when ``reasoning``) and content."""
    return _think(reasoning, content) if reasoning else content


def filler_reasoning_tokens(prompt_ids: Sequence[int]) -> int:
    """Made-up reasoning length of a reply to ``prompt_ids``, tokens: the same prompt always gets
    the same length, between :data:`MIN_REASONING_TOKENS` and :data:`MAX_REASONING_TOKENS`."""
    span = MAX_REASONING_TOKENS - MIN_REASONING_TOKENS + 1
    return MIN_REASONING_TOKENS + (len(prompt_ids) * 7 + sum(prompt_ids[-4:])) % span

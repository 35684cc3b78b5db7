"""Which past reasoning a chat template renders: none before the last user message (pure).

A conversation replayed by an agent carries the reasoning of its earlier assistant turns (chat
``reasoning_content`` / ``reasoning``, Anthropic ``thinking`` blocks that LiteLLM's bridge turns
into ``reasoning_content``, Responses ``reasoning`` items). No chat template renders the reasoning
of an assistant turn *before the last user message*: the reasoning templates drop it (Qwen3 renders
``reasoning_content`` only after its last user query, QwQ and DeepSeek-R1 never render past
reasoning) and the others never render a reasoning field at all (Qwen2.5, Llama 3, DeepSeek-V3 and
V3.1, Gemma 3, Qwen3 Instruct-2507 / Coder; V3.1's template renders an assistant turn's ``content`` after
its ``</think>`` and never ``reasoning_content``, in thinking mode too). Counted as prompt text it read ten
times the truth: ten tool-loop turns with 2 KB of reasoning each, then a user question, routed as ~5,000 tokens for a
~500-token prompt (Qwen2.5, Llama 3, DeepSeek, o200k truths).

So that reasoning counts in the safe estimate only (a custom template might render it;
:attr:`~litellm_kvwarm.request_counts.RequestCounts.past_reasoning`); the reasoning of turns after
the last user message (the current tool loop, which Qwen3 renders) counts in both, unless every
served model is known to render no reasoning at all (:func:`renders_no_reasoning`: Qwen2.5, Llama 3,
DeepSeek-V3 / V3.1 (V3.2's own encoder keeps the current loop's reasoning: not listed), Gemma 3,
Qwen3-Coder and Qwen3 Instruct-2507 templates read no ``reasoning_content``;
LiteLLM 1.108.7 turns Anthropic ``thinking`` blocks and Responses ``reasoning`` items into that field):
then it is past reasoning too, safe only. Counted, ten current-loop turns with 2 KB of reasoning each
read ~10x the truth in routing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

__all__ = ["last_user_index", "renders_no_reasoning"]

#: Served-model names whose official chat templates render no reasoning field anywhere.
_NO_REASONING = re.compile(r"qwen2\.5|qwen2-|llama[-_ ]?3|deepseek-v3(?:\.1)?(?![.\d])|gemma[-_ ]?3|qwen3-coder|qwen3-.*instruct-2507")
#: Names that may carry a reasoning template whatever else they match (R1 distills of Llama / Qwen2.5, QwQ,
#: Nemotron reasoning models, "-thinking" variants).
_MAY_REASON = re.compile(r"deepseek-r1|qwq|nemotron|think|reason|-r1\b")


def renders_no_reasoning(served_model: str | None) -> bool:
    """Whether ``served_model`` (the name ``/v1/models`` lists) is of a family whose template renders no
    reasoning at all (module docstring); ``False`` when unknown (its reasoning keeps counting)."""
    name = str(served_model or "").lower()
    return bool(name) and _NO_REASONING.search(name) is not None and _MAY_REASON.search(name) is None


def _is_user_turn(message: object, api: str) -> bool:
    if not isinstance(message, Mapping) or message.get("role") != "user":
        return False
    if api == "responses":
        return message.get("type") in (None, "message")
    if api != "messages":
        return True
    content = message.get("content")  # Anthropic: a user message of tool results only is tool messages, not a user turn
    if not isinstance(content, list):
        return True
    return any(not (isinstance(b, Mapping) and b.get("type") == "tool_result") for b in content)


def last_user_index(messages: object, api: str = "chat") -> int:
    """Index of the last user turn in ``messages`` (``api``: ``"chat"``, ``"messages"`` or
    ``"responses"`` items); ``-1`` when there is none (then no reasoning is past)."""
    if not isinstance(messages, Sequence) or isinstance(messages, str):
        return -1
    for i in range(len(messages) - 1, -1, -1):
        if _is_user_turn(messages[i], api):
            return i
    return -1

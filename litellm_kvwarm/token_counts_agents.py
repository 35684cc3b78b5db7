"""Request collection for the agent APIs: Anthropic Messages and OpenAI Responses bodies (pure).

Both are counted as the chat messages LiteLLM and vLLM turn them into, so the calibrated weights
of :mod:`litellm_kvwarm.token_estimators` (fitted on chat templates) apply unchanged:

* **Anthropic Messages** (``/v1/messages``, LiteLLM call type ``anthropic_messages``): ``system``
  (a string or text blocks) is one more message; each of ``messages`` is one message whose
  ``content`` (a string or blocks: :mod:`litellm_kvwarm.token_blocks`) is counted block by block;
  ``tools`` (``name``, ``description``, ``input_schema``) by their JSON text. LiteLLM's bridge to
  ``/v1/chat/completions`` (``LiteLLMMessagesToCompletionTransformationHandler``, 1.108) turns
  each ``tool_result`` block into a ``tool`` message and ``tool_use`` blocks into ``tool_calls``:
  each such block counts as one more message.
* **Responses** (``/v1/responses``, call type ``aresponses``): ``instructions`` is the system
  message; ``input`` is a string (one user message) or items: ``message`` items (``content`` a
  string or ``input_text``/``output_text``/``input_image`` parts), ``function_call`` (``name`` and
  ``arguments``), ``function_call_output`` (``output``), ``reasoning`` (``summary`` and
  ``content`` text; ``encrypted_content`` counts nothing), ``item_reference`` nothing (it names an
  item the server holds; the request is server state, :attr:`~.view.PreCallView.server_state`),
  any other item (``computer_call_output``, ``web_search_call``, ...) as an unknown block of
  :mod:`~litellm_kvwarm.token_blocks` without its ids: its key names and leaves, media inside it
  (a screenshot's ``image_url``) priced as media, never as base64 text. Each item is one message
  (vLLM 0.32 ``serving_responses`` renders each as a chat message). ``tools`` by their JSON text;
  a ``text.format`` schema (structured output) by its JSON text, like chat's ``response_format``, in
  the safe estimate only (:attr:`~litellm_kvwarm.request_counts.RequestCounts.format_parts`).

Never raises on odd input (same contract as :func:`litellm_kvwarm.token_counts.count_request`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from .deep_json import lenient_json_text as _json_text
from .request_counts import RequestCounts
from .token_blocks import Collected, collect_blocks, collect_unknown

__all__ = ["AGENT_COUNTERS", "count_anthropic_messages", "count_responses"]

_SPLIT_BLOCKS = frozenset({"tool_result", "tool_use"})
#: Responses item keys that are identifiers or state, never rendered into the prompt.
_ITEM_NOISE = frozenset({"id", "call_id", "status", "type", "encrypted_content", "role"})


def _is_split(kind: object) -> bool:
    """A block LiteLLM's bridge turns into a message of its own (a list or dict type is not one)."""
    return isinstance(kind, str) and kind in _SPLIT_BLOCKS


def _finish(into: Collected, messages: int, tools: object, output_format: object = None) -> RequestCounts:
    n_tools = 0
    fmt = ()
    if isinstance(output_format, Mapping) and output_format.get("type") not in (None, "text"):
        fmt = (_json_text(output_format),)  # a schema some servers render, like chat's response_format: safe only
    if tools:
        into.parts.append(_json_text(tools))
        n_tools = len(tools) if isinstance(tools, list) else 1
    return RequestCounts(
        chars=sum(map(len, into.parts)), messages=messages, other_parts=into.other, tools=n_tools,
        parts=into.parts, images=tuple(into.images), media=tuple(into.media), format_parts=fmt,
    )


def count_anthropic_messages(payload: Mapping[str, object]) -> RequestCounts:
    """Counts of an Anthropic Messages body (see the module docstring)."""
    into = Collected()
    messages = 0
    system = payload.get("system")
    if system:
        collect_blocks(system, into)
        messages += 1
    raw = payload.get("messages")
    for message in raw if isinstance(raw, list) else ():
        messages += 1
        content = message.get("content") if isinstance(message, Mapping) else message
        if isinstance(content, list):
            messages += sum(1 for block in content if isinstance(block, Mapping) and _is_split(block.get("type")))
        collect_blocks(content, into)
    return _finish(into, messages, payload.get("tools"))


def count_responses(payload: Mapping[str, object]) -> RequestCounts:
    """Counts of a Responses body (see the module docstring)."""
    into = Collected()
    messages = 0
    instructions = payload.get("instructions")
    if instructions:
        collect_blocks(instructions, into)
        messages += 1
    raw = payload.get("input")
    if isinstance(raw, str):
        into.parts.append(raw)
        messages += 1
    elif isinstance(raw, list):
        for item in raw:
            if isinstance(item, Mapping) and item.get("type") == "item_reference":
                continue  # a reference to an item the server holds: it renders nothing here (~0 tokens)
            messages += 1
            _item(item, into)
    text = payload.get("text")
    return _finish(into, messages, payload.get("tools"), text.get("format") if isinstance(text, Mapping) else None)


def _item(item: object, into: Collected) -> None:
    if not isinstance(item, Mapping):
        into.text(item)
        return
    kind = item.get("type")
    if kind in (None, "message"):
        collect_blocks(item.get("content"), into)
    elif kind == "function_call" or kind == "custom_tool_call":
        into.text(item.get("name"))
        into.text(item.get("arguments") if kind == "function_call" else item.get("input"))
    elif kind in ("function_call_output", "custom_tool_call_output"):
        collect_blocks(item.get("output"), into)
    elif kind == "reasoning":
        collect_blocks(item.get("summary"), into)
        collect_blocks(item.get("content"), into)
    else:  # other items (web_search_call, computer_call_output, ...): read as an unknown block
        collect_unknown({k: v for k, v in item.items() if k not in _ITEM_NOISE}, into)


#: Counters by call kind (:data:`litellm_kvwarm.view.ADAPTERS`).
AGENT_COUNTERS: dict[str, Callable[[Mapping[str, object]], RequestCounts]] = {
    "messages": count_anthropic_messages,
    "responses": count_responses,
}

"""Which Responses ``input`` items reach a vLLM prompt (pure).

A ``/v1/responses`` body reaches a vLLM server one of two ways, and neither renders the hosted-tool
items an OpenAI client replays (``mcp_call``, ``mcp_list_tools``, ``mcp_approval_request`` /
``_response``, ``image_generation_call``, ``file_search_call``, ``computer_call``,
``code_interpreter_call``, ``local_shell_call`` / ``_output``, any unknown type):

* LiteLLM's Responses → chat bridge
  (``LiteLLMCompletionResponsesConfig._transform_responses_api_input_item_to_chat_completion_message``,
  LiteLLM 1.108.7) keeps ``message`` items, ``function_call`` / ``custom_tool_call`` (tool calls),
  ``function_call_output`` / ``custom_tool_call_output`` / ``computer_call_output`` / ``tool_result``
  (tool messages), ``reasoning`` and ``web_search_call`` (an assistant text, ``"Hosted web search: "``
  and its JSON); any other item becomes a message of its ``content`` when it has one, and nothing when
  it has none (``content is None``: ``return []``).
* vLLM's own ``/v1/responses`` (0.10-0.11 ``OpenAIServingResponses._construct_input_messages`` /
  ``construct_chat_message_with_tool_call``) turns messages, function calls and outputs and reasoning
  into chat messages and passes any other item on as a chat message, which has no ``role`` and no
  ``content`` to render (the request is refused, or renders nothing of it).

:func:`rendered_input` returns the body with only the items one of them renders (the bridge's list, the
larger), or ``None`` when every item is rendered (the common case: no copy). The routing estimate of a
group served by vLLM counts that body; the safe estimate keeps counting every item (conservative: an
OpenAI-hosted deployment renders them server-side). :func:`vllm_served` tells such a deployment apart.
A replayed ``file_search_call`` with 40 results of 600 characters each before a one-line question read
as ~6,000 routing tokens for a ~40-token prompt (qwen2.5).
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["RENDERED_ITEMS", "folds_into_previous", "rendered", "rendered_input", "vllm_served"]

#: Item types LiteLLM 1.108.7's Responses → chat bridge turns into chat messages whatever they carry
#: (``None``: an item without a type is a message).
RENDERED_ITEMS = frozenset({
    "message", "function_call", "custom_tool_call", "function_call_output", "custom_tool_call_output",
    "computer_call_output", "tool_result", "reasoning", "web_search_call", "item_reference",
})
#: Providers that send Responses to OpenAI's own servers when no ``api_base`` is set.
_OPENAI_HOSTED = frozenset({"openai", "azure", "azure_ai"})


def rendered(item: object) -> bool:
    """Whether the bridge or vLLM renders ``item`` (module docstring)."""
    if not isinstance(item, Mapping):
        return True  # not an item: counted as sent (LiteLLM raises on it)
    kind = item.get("type")
    if kind is None or (isinstance(kind, str) and kind in RENDERED_ITEMS):
        return True
    return item.get("content") is not None  # another item becomes a message of its content, if it has one


_CALLS = ("function_call", "custom_tool_call")  # tuples: an unhashable type is no error
_ASSISTANT_SIDE = (*_CALLS, "reasoning", "web_search_call")


def _assistant_side(item: Mapping) -> bool:
    kind = item.get("type")
    return kind in _ASSISTANT_SIDE or (kind in (None, "message") and item.get("role") == "assistant")


def folds_into_previous(item: object, previous: object) -> bool:
    """Whether LiteLLM's Responses → chat bridge (1.108.7 and 1.109.3) folds ``item`` into the assistant
    message it made of ``previous`` (the last item it rendered) instead of making a message of it: a
    ``function_call`` / ``custom_tool_call`` after an assistant message, a reasoning item, a call or a
    ``web_search_call`` (30 parallel calls: one assistant message with 30 ``tool_calls``, not 30
    messages), and an assistant message or ``web_search_call`` after a call. Another assistant message
    or reasoning item after one starts a message of its own."""
    if not isinstance(item, Mapping) or not isinstance(previous, Mapping):
        return False
    if item.get("type") in _CALLS:
        return _assistant_side(previous)
    return previous.get("type") in _CALLS and _assistant_side(item) and item.get("type") != "reasoning"


def rendered_input(payload: Mapping[str, object]) -> Mapping[str, object] | None:
    """``payload`` (a Responses body) with only the ``input`` items vLLM renders (module docstring);
    ``None`` when it renders them all. Never raises."""
    items = payload.get("input")
    if not isinstance(items, list) or all(map(rendered, items)):
        return None
    return {**payload, "input": [item for item in items if rendered(item)]}


def vllm_served(provider: str | None, api_base: object) -> bool:
    """Whether a deployment's Responses requests reach a vLLM server (or LiteLLM's chat bridge): every
    deployment but an OpenAI / Azure one without an ``api_base`` of its own, or with one on
    ``openai.com`` / ``azure.com`` (their servers run the hosted tools and render their items)."""
    if provider not in _OPENAI_HOSTED:
        return True
    if not isinstance(api_base, str) or not api_base:
        return False
    host = api_base.lower()
    return not any(d in host for d in ("openai.com", "azure.com", "azure.net"))

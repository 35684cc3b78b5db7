"""The APIs the plugin handles, one :class:`CallAdapter` each (pure data).

What differs between chat completions, text completions, Anthropic Messages and Responses, as
far as the hooks care: LiteLLM's call types, the output-budget field, where LiteLLM carries the
request's metadata, how streaming is asked for, and whether vLLM's ``/tokenize`` can count the
prompt. Where text lives is :mod:`litellm_kvwarm.token_counts` / :mod:`~litellm_kvwarm.token_counts_agents`;
how a warm of the same shape is built is :mod:`litellm_kvwarm.warm_body`.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ADAPTERS", "CallAdapter", "adapter_for", "call_kind"]


@dataclass(frozen=True)
class CallAdapter:
    """What the plugin needs to know about one API.

    ``kind``: the name the estimator and the warm builder use (``"chat"``: OpenAI chat
    ``messages``; ``"completion"``: ``prompt``; ``"messages"``: Anthropic Messages; ``"responses"``:
    OpenAI Responses); ``call_types``: LiteLLM's call types of this API (proxy strings and
    ``CallTypes`` values); ``exact_countable``: vLLM's ``/tokenize`` can count its prompt (Messages
    and Responses bodies after LiteLLM's own translation to chat: :meth:`Facts.chat_payload`);
    ``output_field``: the API's own output-budget field (added on a hop that sets one);
    ``metadata_field``: where LiteLLM carries the request's metadata for this API (the proxy
    uses ``litellm_metadata`` where the API's body has a ``metadata`` field of its own or is
    routed by ``Router._ageneric_api_call_with_fallbacks``, 1.108); ``stream_field``: how
    streaming is asked for."""

    kind: str
    call_types: frozenset[str]
    exact_countable: bool
    output_field: str = "max_tokens"
    metadata_field: str = "metadata"
    stream_field: str = "stream"


#: The APIs the plugin handles, one adapter each. Anthropic Messages bodies that LiteLLM bridges
#: to ``/v1/chat/completions`` (every provider without a native ``/v1/messages``, ``hosted_vllm``
#: included) reach the deployment hook twice: as ``anthropic_messages``, then as the translated
#: ``acompletion`` (whose clamp uses an exact ``/tokenize`` count).
ADAPTERS: tuple[CallAdapter, ...] = (
    CallAdapter("chat", frozenset({"completion", "acompletion"}), exact_countable=True),
    CallAdapter("completion", frozenset({"text_completion", "atext_completion"}), exact_countable=False),
    CallAdapter("messages", frozenset({"anthropic_messages"}), exact_countable=True, metadata_field="litellm_metadata"),
    CallAdapter("responses", frozenset({"responses", "aresponses"}), exact_countable=True,
                output_field="max_output_tokens", metadata_field="litellm_metadata"),
)
_BY_CALL_TYPE = {call_type: adapter for adapter in ADAPTERS for call_type in adapter.call_types}


def adapter_for(call_type: object) -> CallAdapter | None:
    """The adapter of a LiteLLM ``call_type`` (string or ``CallTypes`` member), ``None`` when the
    plugin does not handle it (embeddings, images, ...)."""
    value = getattr(call_type, "value", call_type)
    return _BY_CALL_TYPE.get(value) if isinstance(value, str) else None


def call_kind(call_type: object) -> str | None:
    """The adapter's ``kind`` (``"chat"``, ``"completion"``, ``"messages"``, ``"responses"``) for
    the call types the plugin handles, else ``None``."""
    adapter = adapter_for(call_type)
    return adapter.kind if adapter is not None else None

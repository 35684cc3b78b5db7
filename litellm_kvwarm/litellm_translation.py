"""What LiteLLM sends for a request, as the plugin counts it: the chat messages after LiteLLM's own rewrites per
provider (:func:`litellm_messages`: the developer role, tool messages) and the chat body LiteLLM builds from an Anthropic
Messages or Responses body (:func:`chat_payload`, :func:`messages_adapter`). Re-exported by
:mod:`~litellm_kvwarm.litellm_bridge`; LiteLLM is imported at the call, so this module loads cheaply.

Written against LiteLLM 1.108.7 and 1.109.3.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Mapping
from typing import Any

logger = logging.getLogger("litellm_kvwarm")


def litellm_messages(messages: list, provider: str, model: str = "", api_base: str | None = None,
                     model_info: object = None, tool_messages: bool = True) -> list:
    """``messages`` as LiteLLM's chat path rewrites them for ``provider`` before it sends them
    (``translate_developer_role_to_system_role`` of the provider's config; with ``tool_messages``, its rewrite of tool
    messages, :func:`_tool_messages_as_sent`); the list itself when LiteLLM has no config for it or nothing changes.

    1.108.x takes ``messages`` only; 1.109.x also ``model``, ``custom_llm_provider``, ``api_base``
    and the deployment's ``model_info`` (``litellm/main.py`` l.6023 in 1.109.3: an OpenAI-compatible
    model declared ``supports_mid_conversation_system: false`` gets one leading system message)."""
    from litellm.types.utils import LlmProviders
    from litellm.utils import ProviderConfigManager

    if provider not in LlmProviders._value2member_map_:
        return messages
    config = ProviderConfigManager.get_provider_chat_config(model=model, provider=LlmProviders(provider))
    if config is None:
        return messages
    if tool_messages:
        messages = _tool_messages_as_sent(messages, config)
    if not any(isinstance(m, Mapping) and m.get("role") == "developer" for m in messages):
        return messages
    translate = config.translate_developer_role_to_system_role
    if "model_info" in inspect.signature(translate).parameters:
        return list(translate(messages=messages, model=model, custom_llm_provider=provider, api_base=api_base,
                              model_info=model_info))
    return translate(messages=messages)


def _tool_messages_as_sent(messages: list, config: object) -> list:
    """``messages`` with LiteLLM's rewrite of tool messages for OpenAI-compatible providers
    (``OpenAIGPTConfig._transform_messages``, hosted_vllm's included, LiteLLM 1.108.7 and 1.109.3): ``tool_reference``
    parts dropped, and a tool message's images moved into a user message after its run of tool messages, led by
    LiteLLM's "[The following images are tool output ...]" text (~35 tokens a run that a count of the messages as the
    client wrote them misses: a screenshot returned by a computer-use tool). The list itself when nothing changes or
    this LiteLLM has no such rewrite."""
    try:
        from litellm.litellm_core_utils.prompt_templates.common_utils import (
            drop_tool_reference_parts_from_tool_messages,
            hoist_images_from_tool_messages,
        )
        from litellm.llms.openai.chat.gpt_transformation import OpenAIGPTConfig
    except ImportError:  # a LiteLLM without the rewrite sends the tool messages as they are
        return messages
    if not isinstance(config, OpenAIGPTConfig) or not all(isinstance(m, Mapping) for m in messages):
        return messages  # LiteLLM's rewrite reads each message as a mapping: a malformed list is sent (and refused) as is
    return hoist_images_from_tool_messages(drop_tool_reference_parts_from_tool_messages(messages))


def messages_adapter() -> Any:
    """LiteLLM's ``LiteLLMAnthropicMessagesAdapter`` class: at ``llms.anthropic.messages.adapters`` since
    1.109 (whose old ``llms.anthropic.pass_through`` path is a shim that warns it "will be removed in a future
    release"), at ``llms.anthropic.pass_through.adapters`` in 1.108. Raises ``ImportError`` where neither is."""
    try:
        from litellm.llms.anthropic.messages.adapters.transformation import LiteLLMAnthropicMessagesAdapter
    except ImportError:
        from litellm.llms.anthropic.pass_through.adapters.transformation import LiteLLMAnthropicMessagesAdapter  # LiteLLM 1.108
    return LiteLLMAnthropicMessagesAdapter


def chat_payload(kind: str, payload: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The chat-completions body (``messages``, ``tools``) LiteLLM builds from an Anthropic
    Messages body (``LiteLLMAnthropicMessagesAdapter.translate_anthropic_to_openai``, the bridge
    LiteLLM 1.108 uses for providers without a native ``/v1/messages``) or a Responses body
    (``LiteLLMCompletionResponsesConfig.transform_responses_api_request_to_chat_completion_request``;
    vLLM's own ``/v1/responses`` renders the same items into chat messages). ``None`` on any
    error (the caller then has no exact count)."""
    try:
        if kind == "messages":
            body = {k: v for k, v in payload.items() if k in ("model", "messages", "system", "tools", "tool_choice", "max_tokens")}
            request, _ = messages_adapter()().translate_anthropic_to_openai(body)
        elif kind == "responses":
            from litellm.responses.litellm_completion_transformation.transformation import LiteLLMCompletionResponsesConfig

            options = {k: v for k, v in payload.items() if k in ("instructions", "tools", "tool_choice")}
            request = LiteLLMCompletionResponsesConfig.transform_responses_api_request_to_chat_completion_request(
                model=str(payload.get("model") or ""), input=payload.get("input") or "", responses_api_request=options,  # type: ignore[arg-type]
                custom_llm_provider="hosted_vllm")
        else:
            return None
    except Exception:
        logger.debug("chat translation of a %s body failed", kind, exc_info=True)
        return None
    messages = request.get("messages") if isinstance(request, Mapping) else None
    if not isinstance(messages, list):
        return None
    out: dict[str, Any] = {"messages": [dict(m) if isinstance(m, Mapping) else m for m in messages]}
    if request.get("tools"):
        out["tools"] = request["tools"] if kind != "responses" else _without_added_strict(request["tools"], payload.get("tools"))
    return out


def _without_added_strict(translated: object, sent: object) -> object:
    """LiteLLM's Responses → chat translation adds ``"strict": false`` to every function tool; vLLM's
    own ``/v1/responses`` renders the tools as sent (4 tokens a tool on Qwen2.5, found by the
    differential suite): drop ``strict`` where the client's tool had none."""
    if not isinstance(translated, list) or not isinstance(sent, list) or len(translated) != len(sent):
        return translated
    out = []
    for tool, original in zip(translated, sent):
        function = tool.get("function") if isinstance(tool, Mapping) else None
        if isinstance(function, Mapping) and "strict" in function and isinstance(original, Mapping) and "strict" not in original:
            tool = {**tool, "function": {k: v for k, v in function.items() if k != "strict"}}
        out.append(tool)
    return out

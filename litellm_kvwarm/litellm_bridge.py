"""Everything the plugin asks of LiteLLM and FastAPI, in one place (with :mod:`~litellm_kvwarm.hook`,
the only modules that import them; imports are deferred to the call so this module loads cheaply).

* :func:`key_may_use`: LiteLLM's own model-access check for a key (fails closed);
* :func:`litellm_messages`: the developer-role translation LiteLLM applies per provider;
* :func:`resolve_secret`: LiteLLM's ``os.environ/NAME`` (and secret-manager) references;
* :func:`unreachable`: whether a LiteLLM exception means the backend could not be reached;
* :func:`context_window_error` / :func:`http_error`: the exceptions the hooks raise or return;
* :func:`proxy_master_key` / :func:`proxy_router`: the running proxy's master key and Router.

Written against LiteLLM 1.108.7 (the names are stable through 1.109). The Router's own members are
read through :mod:`~litellm_kvwarm.router_view` (1.109 deprecates the 1.108 ones).
"""

from __future__ import annotations

import inspect

import logging
from collections.abc import Mapping
from typing import Any

from .router_view import RouterView

logger = logging.getLogger("litellm_kvwarm")

#: Words of a LiteLLM ``APIConnectionError`` / ``InternalServerError`` that mean the backend could
#: not be reached (httpx's and aiohttp's connect-failure texts); other such errors are LiteLLM's
#: own failures (e.g. "Unmapped prompt format") and stay as they are.
UNREACHABLE_WORDS = ("connection refused", "connecterror", "connect error", "all connection attempts failed",
                     "connection reset", "connecttimeout", "name or service not known", "server disconnected",
                     "cannot connect to host", "connect call failed")


def unreachable(exc: Exception) -> bool:
    """Whether a failure says the backend could not be reached or answered it is unavailable:
    a timeout, 502/503/504, or a connection error (not LiteLLM's own 500s)."""
    import litellm

    if isinstance(exc, (litellm.Timeout, litellm.ServiceUnavailableError)):
        return True
    if getattr(exc, "status_code", None) in (502, 503, 504):
        return True
    text = str(exc).lower()
    # LiteLLM 1.108.7 raises a refused connection (aiohttp transport) as InternalServerError
    # "Cannot connect to host ...", httpx's as APIConnectionError
    return isinstance(exc, (litellm.APIConnectionError, litellm.InternalServerError)) and any(w in text for w in UNREACHABLE_WORDS)


def litellm_messages(messages: list, provider: str, model: str = "", api_base: str | None = None,
                     model_info: object = None) -> list:
    """``messages`` as LiteLLM's chat path rewrites them for ``provider`` before it sends them
    (``translate_developer_role_to_system_role`` of the provider's config); the list itself when
    LiteLLM has no config for it or nothing changes.

    1.108.x takes ``messages`` only; 1.109.x also ``model``, ``custom_llm_provider``, ``api_base``
    and the deployment's ``model_info`` (``litellm/main.py`` l.6023 in 1.109.3: an OpenAI-compatible
    model declared ``supports_mid_conversation_system: false`` gets one leading system message)."""
    from litellm.types.utils import LlmProviders
    from litellm.utils import ProviderConfigManager

    if provider not in LlmProviders._value2member_map_:
        return messages
    config = ProviderConfigManager.get_provider_chat_config(model=model, provider=LlmProviders(provider))
    if config is None or not any(isinstance(m, Mapping) and m.get("role") == "developer" for m in messages):
        return messages
    translate = config.translate_developer_role_to_system_role
    if "model_info" in inspect.signature(translate).parameters:
        return list(translate(messages=messages, model=model, custom_llm_provider=provider, api_base=api_base,
                              model_info=model_info))
    return translate(messages=messages)


def resolve_secret(reference: str) -> str | None:
    """A deployment's ``api_key`` as LiteLLM resolves it: ``os.environ/NAME`` (and LiteLLM's
    other secret-manager references) through ``litellm.get_secret_str``; a plain key as is."""
    if not reference.startswith("os.environ/"):
        return reference
    from litellm import get_secret_str

    return get_secret_str(reference)


async def key_may_use(user_api_key_dict: Any, group: str, router: Any) -> bool:
    """LiteLLM's own model-access check (``can_key_call_resolved_model``) of the caller's key and
    team for ``group``, handed the router's model list as the proxy hands it (read through
    :class:`~litellm_kvwarm.router_view.RouterView`: ``registry().all()`` on 1.109, whose old
    ``model_list`` attribute warns). ``False`` on a denial and on a check that cannot complete
    (fails closed)."""
    if user_api_key_dict is None:
        return False
    try:
        from litellm.proxy.auth.auth_checks import can_key_call_resolved_model

        await can_key_call_resolved_model(
            model=group, llm_model_list=RouterView(router).model_list(), valid_token=user_api_key_dict, llm_router=router
        )
    except Exception as exc:  # a denial is an exception; so is a check that cannot complete
        logger.debug("access check for %r denied or failed: %r", group, exc)
        return False
    return True


def context_window_error(message: str, model: str) -> Exception:
    """LiteLLM's ``ContextWindowExceededError`` (a fallback hop LiteLLM moves past)."""
    import litellm

    return litellm.ContextWindowExceededError(message=message, model=model, llm_provider="hosted_vllm")


def http_error(status_code: int, detail: str) -> Exception:
    """FastAPI's ``HTTPException``: the proxy answers it as is."""
    from fastapi import HTTPException

    return HTTPException(status_code=status_code, detail=detail)


def forbidden(detail: str) -> Exception:
    """HTTP 403 with ``detail``."""
    return http_error(403, detail)


def proxy_master_key() -> str | None:
    """The running proxy's ``general_settings.master_key``; ``None`` outside a proxy or when unset."""
    try:
        from litellm.proxy import proxy_server

        key = getattr(proxy_server, "master_key", None)
    except Exception:  # not inside a proxy (tests, embedders)
        return None
    return key if isinstance(key, str) and key else None


def proxy_router() -> Any:
    """The running proxy's Router (read at call time: the proxy rebinds it on config reload)."""
    from litellm.proxy import proxy_server

    return proxy_server.llm_router

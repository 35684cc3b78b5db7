"""Everything the plugin asks of LiteLLM and FastAPI, in one place (with :mod:`~litellm_kvwarm.hook`,
the only modules that import them; imports are deferred to the call so this module loads cheaply).

* :func:`key_may_use`: LiteLLM's own model-access check for a key (fails closed);
* :func:`litellm_messages` / :func:`chat_payload` / :func:`messages_adapter`: what LiteLLM sends, from
  :mod:`~litellm_kvwarm.litellm_translation` (re-exported here);
* :func:`resolve_secret`: LiteLLM's ``os.environ/NAME`` (and secret-manager) references;
* :func:`unreachable`: whether a LiteLLM exception means the backend could not be reached;
* :func:`source_refused` / :func:`target_failed`: whether a proactive escalation's error is the one LiteLLM alone
  would have answered with the source's context-length 400;
* :func:`context_window_error` / :func:`http_error`: the exceptions the hooks raise or return;
* :func:`proxy_master_key` / :func:`proxy_router`: the running proxy's master key and Router.

Written against LiteLLM 1.108.7 (the names are stable through 1.109). The Router's own members are
read through :mod:`~litellm_kvwarm.router_view` (1.109 deprecates the 1.108 ones).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any

from .context_errors import parse_context_error
from .fallback_outcome import FALLBACK_FAILED
from .litellm_translation import chat_payload, litellm_messages, messages_adapter  # noqa: F401 (the bridge's API)
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


def source_refused(exc: BaseException, source: object) -> bool:
    """Whether the error LiteLLM's Router re-raised says its fallback to the model group ``source`` was
    attempted and refused the request on length ("Fallback to fast also failed:
    litellm.ContextWindowExceededError: ..."; any wording :func:`parse_context_error` reads): the error
    LiteLLM alone, which tries ``source`` first, would have answered. Never raises."""
    try:
        if not isinstance(source, str) or not source:
            return False
        found = FALLBACK_FAILED.search(str(exc))  # what the Router appends when it gives up (:mod:`.fallback_outcome`)
        if found is None:
            return False
        targets = found.group("targets")
        if source not in [t.strip() for t in targets.split(",")] and f"'model': '{source}'" not in targets:
            return False
        detail = found.group("detail")
        return "ContextWindowExceededError" in detail[:200] or parse_context_error(detail) is not None
    except Exception:
        return False


#: The Router's own refusal when no deployment of a group may take the request (all rate-limited or cooling down).
#: LiteLLM alone re-raises the source's 400 with "Fallback to <target> also failed: <this>" appended, and its proxy
#: answers that with HTTP 429 (1.108.7: ``error_normalization`` reads "no deployments available" before "context
#: length"): retryable, not the source's 400 (a breaker's real proxies: 429 alone, 400 with the plugin).
_NO_DEPLOYMENTS = re.compile(r"no deployments available|no healthy deployments?", re.IGNORECASE)


def target_failed(exc: BaseException, origin: object) -> bool:
    """Whether the final error of a request proactively escalated away from ``origin["source"]`` (the
    escalation's origin record; not a mapping: False) stands for the context-length 400 LiteLLM alone
    would have answered (it tries the source first, falls back to the
    target and re-raises the source's refusal whatever the target did): the target could not be reached
    (:func:`unreachable`), or it failed in any way while the request's fallback to the source was refused on
    length (:func:`source_refused`); never where the Router found no deployment of the target to take it
    (:data:`_NO_DEPLOYMENTS`: LiteLLM alone answers that 429, and so does the error that stands). Never raises."""
    try:
        if not isinstance(origin, Mapping) or _NO_DEPLOYMENTS.search(str(exc)[:4000]):
            return False
        return unreachable(exc) or source_refused(exc, origin.get("source"))  # type: ignore[arg-type]
    except Exception:
        return False


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
    ``model_list`` attribute warns), then the budget check the proxy gives its Router for every
    fallback target (``fallback_budget_check``, ``proxy/auth/fallback_budget.py``: the key's and the user's
    ``max_budget``, a team member's per-model caps; a free group always passes): LiteLLM alone reaches ``group``
    only by a fallback, which it skips for a caller over budget, so the plugin's own escalation must not take an
    over-budget key from a free group to a paid one (a breaker's proxies: 200 billed on slow where LiteLLM alone
    answered fast's 400). ``False`` on a denial and on a check that cannot complete (fails closed)."""
    if user_api_key_dict is None:
        return False
    try:
        from litellm.proxy.auth.auth_checks import can_key_call_resolved_model

        await can_key_call_resolved_model(
            model=group, llm_model_list=RouterView(router).model_list(), valid_token=user_api_key_dict, llm_router=router
        )
        request = {"metadata": {"user_api_key_auth": user_api_key_dict}}
        allowed = getattr(getattr(router, "_core_ctx", None), "fallback_budget_allowed", None)
        if callable(allowed):  # LiteLLM 1.109: its routing context runs the check (which takes ``ctx=``, not ``llm_router=``)
            within = await allowed(model=group, request_kwargs=request)
        else:
            budget_check = RouterView(router).setting("fallback_budget_check")
            within = budget_check is None or await budget_check(model=group, request_kwargs=request, llm_router=router)
        if not within:
            return False  # the caller is over budget for group
    except Exception as exc:  # a denial is an exception; so is a check that cannot complete
        logger.debug("access check for %r denied or failed: %r", group, exc)
        return False
    return True


def context_window_error(message: str, model: str) -> Exception:
    """LiteLLM's ``ContextWindowExceededError`` (a fallback hop LiteLLM moves past)."""
    import litellm

    return litellm.ContextWindowExceededError(message=message, model=model, llm_provider="hosted_vllm")


def skip_error(message: str, model: str, *, declined: bool = False) -> Exception:
    """The exception that ends a fallback hop before any backend attempt: LiteLLM's
    ``ContextWindowExceededError`` (LiteLLM moves on to the next context-window fallback), or, when
    ``declined`` (a generic hop the plugin armed for context errors, after a failure that is not one),
    a plain ``BadRequestError`` (never retried, no cooldown) that no client reads as a context-length
    error: the client gets the original error."""
    import litellm

    if declined:
        return litellm.BadRequestError(message=message, model=model, llm_provider="hosted_vllm")
    return context_window_error(message, model)


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


def native_messages(model: str, provider: str | None) -> bool:
    """Whether LiteLLM sends an Anthropic Messages request for ``model`` of ``provider`` to a
    native ``/v1/messages`` endpoint (``ProviderConfigManager.get_provider_anthropic_messages_config``,
    1.108), rather than bridging it to ``/v1/chat/completions`` (``hosted_vllm``, ``openai``, ...).
    Unknown provider or any error: ``False`` (the bridged chat attempt then does the work)."""
    try:
        import litellm
        from litellm.utils import ProviderConfigManager

        if provider is None or provider not in {p.value for p in litellm.LlmProviders}:
            return False
        return ProviderConfigManager.get_provider_anthropic_messages_config(model=model, provider=litellm.LlmProviders(provider)) is not None
    except Exception:
        return False


async def send_warm(router: Any, kind: str, body: dict[str, Any]) -> Any:
    """Send one warm through LiteLLM's Router (its fallbacks, cooldowns, logging): ``kind``
    ``"completion"`` → ``atext_completion``, ``"messages"`` → ``aanthropic_messages``,
    ``"responses"`` → ``aresponses``, else ``acompletion``.

    Raises:
        RuntimeError: the proxy has no Router (anymore); whatever the Router raises.
    """
    if router is None:
        raise RuntimeError("LiteLLM router is gone")
    send = {"completion": router.atext_completion, "messages": router.aanthropic_messages, "responses": router.aresponses}
    return await send.get(kind, router.acompletion)(**body)

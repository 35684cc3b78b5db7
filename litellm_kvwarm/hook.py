"""The LiteLLM callback: the only module that imports LiteLLM.

Request path, top to bottom:

1. ``async_pre_call_hook`` (proxy, before the Router picks a group): estimate → windows of
   the group and its escalation target → :func:`~litellm_kvwarm.policy.decide_route` →
   catalog and key check → rewrite ``data["model"]`` to the target when it cannot fit.
2. ``async_pre_call_deployment_hook`` (every attempt, after a deployment is chosen): safe
   estimate → that deployment's window → :func:`~litellm_kvwarm.policy.clamp_output`,
   counting exactly with ``/tokenize`` before cutting the requested output.

Fail open for speed: an unexpected error inside a hook is logged and the request goes on
exactly as LiteLLM alone would send it. Fail closed for security: an escalation whose
permission check cannot be completed does not happen.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

import httpx
from litellm.integrations.custom_logger import CustomLogger

from . import catalog
from .config import Settings
from .exact import ExactCounter
from .policy import RouteAction, clamp_output, decide_route
from .tokens import TokenEstimate, estimate_request
from .windows import HttpWindowFetcher, WindowCache

logger = logging.getLogger("litellm_kvwarm")

_CHAT_CALL_TYPES = frozenset({"completion", "acompletion"})
_TEXT_CALL_TYPES = frozenset({"text_completion", "atext_completion"})
_OUTPUT_KEYS = ("max_tokens", "max_completion_tokens")


def call_kind(call_type: object) -> str | None:
    """``"chat"`` / ``"completion"`` for the call types the plugin handles, else ``None``.
    Accepts the proxy's strings (``"acompletion"``) and ``CallTypes`` members."""
    value = getattr(call_type, "value", call_type)
    if value in _CHAT_CALL_TYPES:
        return "chat"
    if value in _TEXT_CALL_TYPES:
        return "completion"
    return None


def configure_logging(level: str) -> None:
    """Give the plugin's logger its own stderr handler (LiteLLM configures only its own loggers),
    unless the operator already attached one."""
    if not logger.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s - litellm_kvwarm:%(levelname)s - %(message)s"))
        logger.addHandler(handler)
        logger.propagate = False
    logger.setLevel(level)


def _proxy_router() -> Any:
    from litellm.proxy import proxy_server  # read at call time: the proxy rebinds it on config reload

    return proxy_server.llm_router


class KVWarmHandler(CustomLogger):
    """LiteLLM ``CustomLogger`` implementing proactive routing and output clamping.

    Args:
        settings: plugin settings (default: :meth:`Settings.from_env`).
        router_getter: returns LiteLLM's Router (default: ``proxy_server.llm_router``).
        clock: monotonic seconds, for the window cache.
        http_client: shared client for discovery and ``/tokenize`` (default: created on first use).
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        router_getter: Callable[[], Any] = _proxy_router,
        clock: Callable[[], float] = time.monotonic,
        http_client: httpx.AsyncClient | None = None,
    ):
        super().__init__()
        self.settings = settings if settings is not None else Settings.from_env()
        configure_logging(self.settings.log_level)
        self._router_getter = router_getter
        self._clock = clock
        self._http = http_client
        self._windows: WindowCache | None = None
        self._exact: ExactCounter | None = None

    # -- LiteLLM hooks ---------------------------------------------------------------------

    async def async_pre_call_hook(self, user_api_key_dict: Any, cache: Any, data: dict, call_type: Any) -> dict:
        """Route a request that cannot fit its group's window to the escalation target.
        Returns ``data`` (possibly with ``data["model"]`` rewritten); never raises."""
        try:
            await self._route(user_api_key_dict, data, call_type)
        except Exception:  # fail open: LiteLLM serves the request as if the plugin were absent
            logger.warning("[CONTEXT-ROUTE] routing skipped after an internal error", exc_info=True)
        return data

    async def async_pre_call_deployment_hook(self, kwargs: dict[str, Any], call_type: Any) -> dict[str, Any] | None:
        """Clamp ``max_tokens`` / ``max_completion_tokens`` to the chosen deployment's window.
        Returns the (possibly modified) kwargs; never raises."""
        try:
            await self._clamp(kwargs, call_type)
        except Exception:  # fail open
            logger.warning("[CONTEXT-ROUTE] clamp skipped after an internal error", exc_info=True)
        return kwargs

    # -- steps -------------------------------------------------------------------------------

    async def _route(self, user_api_key_dict: Any, data: dict, call_type: Any) -> None:
        kind = call_kind(call_type)
        group = data.get("model")
        if not self.settings.proactive_routing or kind is None or not isinstance(group, str):
            return
        router = self._router_getter()
        if router is None or group not in router.model_names:
            return
        target = catalog.escalation_target(
            group,
            overrides=self.settings.escalation_targets,
            context_window_fallbacks=getattr(router, "context_window_fallbacks", None),
        )
        source_window = await self._group_window(router, group)
        if source_window is None:
            logger.debug("[CONTEXT-ROUTE] untouched: window of %r unknown", group)
            return
        estimate = self._estimate(data, kind)
        target_window = await self._group_window(router, target) if target and target in router.model_names else None
        floor = self.settings.output_floor_tokens
        tokens = estimate.routing
        if (
            kind == "chat"
            and self.settings.exact_count
            and estimate.routing + floor <= source_window < estimate.safe + floor
        ):
            # The estimates disagree on whether it fits: one exact count settles it (within the
            # discovery budget), so neither a doomed attempt nor a needless escalation happens.
            exact = await self._exact_count_for_group(router, group, data)
            if exact is not None:
                tokens = exact
        decision = decide_route(
            source=group,
            target=target,
            routing_estimate=tokens,
            output_floor_tokens=floor,
            source_window=source_window,
            target_window=target_window,
        )
        if decision.action is RouteAction.STAY:
            logger.debug("[CONTEXT-ROUTE] %s", decision.describe())
            return
        if not decision.escalate:
            logger.info("[CONTEXT-ROUTE] %s", decision.describe())
            return
        if target not in router.model_names:
            logger.info("[CONTEXT-ROUTE] kept local: target %r of %r is not in the model list", target, group)
            return
        if not await self._key_may_use(user_api_key_dict, target, router):
            logger.info("[CONTEXT-ROUTE] kept local: the caller's key may not use target %r of %r", target, group)
            return
        logger.info("[CONTEXT-ROUTE] %s", decision.describe())
        data["model"] = target

    async def _clamp(self, kwargs: dict[str, Any], call_type: Any) -> None:
        kind = call_kind(call_type)
        if not self.settings.clamp_output or kind is None:
            return
        key = next((k for k in _OUTPUT_KEYS if isinstance(kwargs.get(k), int) and not isinstance(kwargs.get(k), bool)), None)
        if key is None:
            return
        info = catalog.deployment_info(
            {"api_base": kwargs.get("api_base"), "model": kwargs.get("model")}, kwargs.get("model_info")
        )
        window = info.operator_window
        if window is None and info.deployment is not None:
            window = await self.windows.get(info.deployment)
        if window is None:
            return
        requested = kwargs[key]
        safe = self._estimate(kwargs, kind).safe
        floor = self.settings.output_floor_tokens
        decision = clamp_output(requested=requested, prompt_tokens=safe, window=window, output_floor_tokens=floor, exact=False)
        if decision.needs_exact and self.settings.exact_count and info.deployment is not None and kind == "chat":
            exact = await self.exact.count(info.deployment.api_base, info.deployment.served_model, kwargs)
            if exact is not None:
                decision = clamp_output(
                    requested=requested,
                    prompt_tokens=exact,
                    window=window,
                    output_floor_tokens=floor,
                    exact=True,
                    margin_tokens=self.settings.clamp_margin_tokens,
                )
        if decision.changed:
            for k in _OUTPUT_KEYS:
                if isinstance(kwargs.get(k), int):
                    kwargs[k] = min(kwargs[k], decision.max_tokens)
            logger.info("[CONTEXT-ROUTE] clamp on %s: %s", kwargs.get("model"), decision.reason)

    # -- helpers -----------------------------------------------------------------------------

    def _estimate(self, payload: Mapping[str, Any], kind: str) -> TokenEstimate:
        return estimate_request(
            payload,
            call_kind=kind,
            safe_chars_per_token=self.settings.safe_chars_per_token,
            routing_chars_per_token=self.settings.routing_chars_per_token,
        )

    async def _group_window(self, router: Any, group: str) -> int | None:
        infos = catalog.group_deployments(router.get_model_list(model_name=group) or [])
        operator = [info.operator_window for info in infos if info.operator_window is not None]
        discovered = await asyncio.gather(
            *(self.windows.get(info.deployment) for info in infos if info.operator_window is None and info.deployment)
        )
        return catalog.combine_windows([*operator, *discovered])

    async def _exact_count_for_group(self, router: Any, group: str, data: Mapping[str, Any]) -> int | None:
        """Exact prompt tokens on the group's smallest-window deployment that offers /tokenize."""
        infos = catalog.group_deployments(router.get_model_list(model_name=group) or [])
        candidates = [i.deployment for i in infos if i.deployment is not None]
        candidates.sort(key=lambda d: self.windows.peek(d) or float("inf"))
        for deployment in candidates[:1]:
            return await self.exact.count(deployment.api_base, deployment.served_model, data)
        return None

    async def _key_may_use(self, user_api_key_dict: Any, target: str, router: Any) -> bool:
        """LiteLLM's own model-access check for the caller's key and team. Fails closed."""
        if user_api_key_dict is None:
            return False
        try:
            from litellm.proxy.auth.auth_checks import can_key_call_resolved_model

            await can_key_call_resolved_model(
                model=target, llm_model_list=router.model_list, valid_token=user_api_key_dict, llm_router=router
            )
        except Exception as exc:  # a denial is an exception; so is a check that cannot complete
            logger.debug("access check for %r denied or failed: %r", target, exc)
            return False
        return True

    @property
    def http(self) -> httpx.AsyncClient:
        if self._http is None:
            self._http = httpx.AsyncClient(timeout=self.settings.discovery_timeout_s)
        return self._http

    @property
    def windows(self) -> WindowCache:
        if self._windows is None:
            self._windows = WindowCache(
                HttpWindowFetcher(self.http),
                ttl_s=self.settings.window_ttl_s,
                budget_s=self.settings.discovery_budget_s,
                unknown_retry_s=self.settings.unknown_window_retry_s,
                clock=self._clock,
            )
        return self._windows

    @property
    def exact(self) -> ExactCounter:
        if self._exact is None:
            self._exact = ExactCounter(self.http, budget_s=self.settings.discovery_budget_s)
        return self._exact

    async def aclose(self) -> None:
        """Cancel background discovery and close the HTTP client."""
        if self._windows is not None:
            await self._windows.aclose()
        if self._http is not None:
            await self._http.aclose()

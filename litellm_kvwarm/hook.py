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
import os
import time
from collections.abc import Callable, Mapping
from typing import Any

import httpx
from litellm.integrations.custom_logger import CustomLogger

from . import catalog, identity
from .config import Settings
from .cooldown import CooldownStore, FallbackCooldownStore, MemoryCooldownStore, RedisCooldownStore
from .exact import ExactCounter
from .errors import parse_context_error
from .metrics import Metrics, deployment_label, metrics
from .scrape import BackendScraper, PrefixCacheStats
from .policy import RouteAction, clamp_output, decide_route
from .reactive import (
    SKIP_MESSAGE_PREFIX,
    BackstopPlan,
    HopAction,
    backend_error_text,
    decide_hop,
    fallback_chain,
    narrowed_by_client,
)
from .tokens import TokenEstimate, estimate_request
from .warm import WarmOutcome, WarmRunner, warm_request
from .windows import HttpWindowFetcher, WindowCache

logger = logging.getLogger("litellm_kvwarm")

_CHAT_CALL_TYPES = frozenset({"completion", "acompletion"})
_TEXT_CALL_TYPES = frozenset({"text_completion", "atext_completion"})
_OUTPUT_KEYS = ("max_tokens", "max_completion_tokens")
#: Keys the plugin adds to ``data["metadata"]`` (hashes only, no raw ids).
AFFINITY_KEY = "kvwarm_affinity"
WARM_MARKER = "kvwarm_warm"
PLAN_KEY = "kvwarm_backstop"
ESCALATED_KEY = "kvwarm_escalated"
ESTIMATE_KEY = "kvwarm_estimate"


class _SkipHop(Exception):
    """Raised inside the deployment hook to end a fallback hop before any backend attempt."""


def _metadata(data: dict) -> dict:
    meta = data.get("metadata")
    if not isinstance(meta, dict):
        meta = {}
        data["metadata"] = meta
    return meta


def _field(obj: Any, name: str) -> Any:
    if obj is None:
        return None
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)


def redis_url_from_env(settings_url: str, environ: Mapping[str, str]) -> str | None:
    """Redis for the cooldown store: the plugin setting, else ``REDIS_URL``, else LiteLLM's
    ``REDIS_HOST`` / ``REDIS_PORT`` / ``REDIS_PASSWORD``; ``None`` when none is configured."""
    if settings_url:
        return settings_url
    if environ.get("REDIS_URL"):
        return environ["REDIS_URL"]
    host = environ.get("REDIS_HOST")
    if host:
        password = environ.get("REDIS_PASSWORD")
        auth = f":{password}@" if password else ""
        return f"redis://{auth}{host}:{environ.get('REDIS_PORT', '6379')}/0"
    return None


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
        metrics_: Metrics | None = None,
    ):
        super().__init__()
        self.metrics = metrics_ if metrics_ is not None else metrics()
        self._scraper: BackendScraper | None = None
        self.settings = settings if settings is not None else Settings.from_env()
        configure_logging(self.settings.log_level)
        self._router_getter = router_getter
        self._clock = clock
        self._http = http_client
        self._windows: WindowCache | None = None
        self._exact: ExactCounter | None = None
        self._cooldown: CooldownStore | None = None
        self._warmer: WarmRunner | None = None
        #: warm outcomes seen by this process, by outcome value (for tests and the demo)
        self.warm_outcomes: dict[str, int] = {}

    # -- LiteLLM hooks ---------------------------------------------------------------------

    async def async_pre_call_hook(self, user_api_key_dict: Any, cache: Any, data: dict, call_type: Any) -> dict:
        """Route a request that cannot fit its group's window to the escalation target, and warm
        the target ahead for a session that nears the window. Returns ``data`` (possibly with
        ``data["model"]`` rewritten). Never raises, except that tenant cache isolation refuses a
        request without a tenant (fail closed)."""
        started = time.perf_counter()
        self._isolate_tenant(user_api_key_dict, data)
        try:
            self._start_background()
            await self._route(user_api_key_dict, data, call_type)
        except Exception:  # fail open: LiteLLM serves the request as if the plugin were absent
            logger.warning("[CONTEXT-ROUTE] routing skipped after an internal error", exc_info=True)
        self.metrics.plugin_seconds.labels("pre_call").observe(time.perf_counter() - started)
        return data

    async def async_pre_call_deployment_hook(self, kwargs: dict[str, Any], call_type: Any) -> dict[str, Any] | None:
        """Clamp ``max_tokens`` / ``max_completion_tokens`` to the chosen deployment's window.
        Returns the (possibly modified) kwargs; never raises."""
        started = time.perf_counter()
        try:
            await self._reactive(kwargs, call_type)
            await self._clamp(kwargs, call_type)
        except _SkipHop as skip:
            import litellm

            raise litellm.ContextWindowExceededError(
                message=f"{SKIP_MESSAGE_PREFIX} {skip}", model=str(kwargs.get("model")), llm_provider="hosted_vllm"
            ) from None
        except Exception:  # fail open
            logger.warning("[CONTEXT-ROUTE] clamp skipped after an internal error", exc_info=True)
        finally:
            self.metrics.plugin_seconds.labels("deployment").observe(time.perf_counter() - started)
        return kwargs

    async def async_filter_deployments(
        self,
        model: str,
        healthy_deployments: list,
        messages: Any,
        request_kwargs: dict | None = None,
        parent_otel_span: Any = None,
    ) -> list:
        """Pin a session to one deployment of an escalation-target group (rendezvous hash of
        tenant and session over the healthy deployments' ids), so a warm and the escalated
        request that follows meet the same prefix cache. Other groups are untouched."""
        try:
            return self._pin(model, healthy_deployments, request_kwargs)
        except Exception:  # fail open: LiteLLM's own choice stands
            logger.warning("[KV-WARM] session pinning skipped after an internal error", exc_info=True)
            return healthy_deployments

    # -- steps -------------------------------------------------------------------------------

    async def _route(self, user_api_key_dict: Any, data: dict, call_type: Any) -> None:
        kind = call_kind(call_type)
        group = data.get("model")
        if kind is None or not isinstance(group, str):
            return
        router = self._router_getter()
        if router is None or group not in router.model_names:
            return
        session = self._session(user_api_key_dict, data)
        if session is not None and self.settings.session_pinning:
            _metadata(data)[AFFINITY_KEY] = identity.affinity_key(session)
        target = self._target_of(router, group)
        allowed = await self._arm_backstop(user_api_key_dict, data, router, group, target)
        if target is None and not self.settings.proactive_routing:
            return
        source_window = await self._group_window(router, group)
        if source_window is None:
            logger.debug("[CONTEXT-ROUTE] untouched: window of %r unknown", group)
            return
        estimate = self._estimate(data, kind)
        _metadata(data)[ESTIMATE_KEY] = {"safe": estimate.safe, "routing": estimate.routing}
        target_known = target is not None and target in router.model_names
        target_window = await self._group_window(router, target) if target_known else None
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
            self._count_route("stay", group, target)
            if target is not None:
                await self._maybe_warm(
                    user_api_key_dict, data, router, session, target, target_known, target_window, tokens, source_window
                )
            return
        if not decision.escalate or not self.settings.proactive_routing:
            logger.info("[CONTEXT-ROUTE] %s", decision.describe())
            if decision.escalate or decision.action is RouteAction.UNKNOWN_WINDOW:
                self._count_route("stay", group, target)
            else:
                self._count_route(decision.action.value, group, target)
            return
        if not target_known:
            logger.info("[CONTEXT-ROUTE] kept local: target %r of %r is not in the model list", target, group)
            self._count_route("kept_local_missing", group, target)
            return
        if not allowed:
            logger.info("[CONTEXT-ROUTE] kept local: the caller's key may not use target %r of %r", target, group)
            self._count_route("kept_local_forbidden", group, target)
            return
        logger.info("[CONTEXT-ROUTE] %s", decision.describe())
        self._count_route("proactive", group, target)
        data["model"] = target
        _metadata(data)[ESCALATED_KEY] = "proactive"
        await self._arm_backstop(user_api_key_dict, data, router, target, self._target_of(router, target))

    async def _maybe_warm(
        self,
        user_api_key_dict: Any,
        data: dict,
        router: Any,
        session: identity.Session | None,
        target: str,
        target_known: bool,
        target_window: int | None,
        tokens: int,
        source_window: int,
    ) -> WarmOutcome:
        """Guards in order, each with its own outcome; fires at most one warm."""
        outcome = await self._warm_guard(
            user_api_key_dict, router, session, target, target_known, target_window, tokens, source_window
        )
        if outcome is WarmOutcome.FIRED:
            assert session is not None
            metadata = {WARM_MARKER: True, "session_id": session.session_id}
            if AFFINITY_KEY in _metadata(data):
                metadata[AFFINITY_KEY] = _metadata(data)[AFFINITY_KEY]
            body = warm_request(data, target=target, metadata=metadata)
            if not self.warmer.submit(body):
                outcome = WarmOutcome.SKIPPED_BUSY
        self._count_warm(outcome, target)
        if outcome is WarmOutcome.FIRED:
            logger.info(
                "[KV-WARM] fired: est≈%dtok ≥ %.0f%% of window %d → warming %r (max_tokens=1)",
                tokens, self.settings.warm_threshold * 100, source_window, target,
            )
        elif outcome is not WarmOutcome.SKIPPED_BELOW_THRESHOLD:
            logger.info("[KV-WARM] %s: est≈%dtok, window %d, target %r", outcome.value, tokens, source_window, target)
        return outcome

    async def _warm_guard(
        self,
        user_api_key_dict: Any,
        router: Any,
        session: identity.Session | None,
        target: str,
        target_known: bool,
        target_window: int | None,
        tokens: int,
        source_window: int,
    ) -> WarmOutcome:
        if not self.settings.warm_ahead:
            return WarmOutcome.SKIPPED_DISABLED
        if tokens < self.settings.warm_threshold * source_window:
            return WarmOutcome.SKIPPED_BELOW_THRESHOLD
        if not target_known or target_window is None:
            return WarmOutcome.SKIPPED_UNKNOWN_MODEL
        if not await self._key_may_use(user_api_key_dict, target, router):
            return WarmOutcome.SKIPPED_FORBIDDEN
        if session is None:
            return WarmOutcome.SKIPPED_NO_SESSION
        step = self.settings.warm_rewarm_step
        # one warm per session, target and growth step per cooldown: a re-warm after the conversation
        # grew by `step` of the window costs only the new tokens' prefill (the earlier warm is cached)
        bucket = int(tokens // (step * source_window)) if step > 0 else 0
        key = identity.scoped_key(f"warm:{target}:{bucket}", session)
        if not await self.cooldown.acquire(key, self.settings.warm_cooldown_s):
            return WarmOutcome.SKIPPED_COOLDOWN
        return WarmOutcome.FIRED

    def _pin(self, group: str, healthy: list, request_kwargs: dict | None) -> list:
        if not self.settings.session_pinning or len(healthy) < 2 or not isinstance(request_kwargs, dict):
            return healthy
        key = None
        for meta_key in ("metadata", "litellm_metadata"):
            meta = request_kwargs.get(meta_key)
            if isinstance(meta, Mapping) and isinstance(meta.get(AFFINITY_KEY), str):
                key = meta[AFFINITY_KEY]
                break
        router = self._router_getter()
        if key is None or router is None or group not in self._target_groups(router):
            return healthy
        ids = [d.get("model_info", {}).get("id") for d in healthy if isinstance(d, Mapping)]
        chosen = identity.rendezvous_pick(key, [i for i in ids if isinstance(i, str)])
        pinned = [d for d in healthy if isinstance(d, Mapping) and d.get("model_info", {}).get("id") == chosen]
        return pinned or healthy

    def _isolate_tenant(self, user_api_key_dict: Any, data: dict) -> None:
        """With a cache-salt secret: drop any client-sent ``cache_salt`` and set the tenant's.

        Raises:
            fastapi.HTTPException(403): no tenant can be told from the key (fail closed).
        """
        secret = self.settings.cache_salt_secret
        if not secret:
            return
        data.pop("cache_salt", None)
        extra = data.get("extra_body")
        extra = dict(extra) if isinstance(extra, Mapping) else {}
        extra.pop("cache_salt", None)
        tenant = identity.tenant_of(user_api_key_dict)
        if tenant is None:
            from fastapi import HTTPException

            raise HTTPException(status_code=403, detail="litellm-kvwarm: tenant cache isolation needs a key with a team, user or token")
        extra["cache_salt"] = identity.cache_salt(secret, tenant)
        data["extra_body"] = extra

    def _session(self, user_api_key_dict: Any, data: Mapping[str, Any]) -> identity.Session | None:
        try:
            return identity.session_of(data, identity.tenant_of(user_api_key_dict))
        except identity.MissingTenantError:
            logger.debug("no tenant on this key: no per-session state")
            return None

    def _target_of(self, router: Any, group: str) -> str | None:
        return catalog.escalation_target(
            group,
            overrides=self.settings.escalation_targets,
            context_window_fallbacks=getattr(router, "context_window_fallbacks", None),
        )

    def _target_groups(self, router: Any) -> set[str]:
        groups = set()
        for name in router.model_names:
            target = self._target_of(router, name)
            if target:
                groups.add(target)
        return groups

    def _count_warm(self, outcome: WarmOutcome, target: str) -> None:
        self.warm_outcomes[outcome.value] = self.warm_outcomes.get(outcome.value, 0) + 1
        self.metrics.warms.labels(outcome.value, target).inc()

    def _count_route(self, kind: str, source: str, target: str | None) -> None:
        self.metrics.route_decisions.labels(kind, source, target or "").inc()

    def _warm_done(self, outcome: WarmOutcome, duration_s: float, target: str) -> None:
        self._count_warm(outcome, target)
        self.metrics.warm_seconds.labels(target).observe(duration_s)

    async def _arm_backstop(
        self, user_api_key_dict: Any, data: dict, router: Any, group: str, target: str | None
    ) -> bool:
        """Arm LiteLLM's fallbacks for this request: a retry slot on ``group`` and the target if
        it exists and the key may use it. Replaces any client-sent ``context_window_fallbacks``
        (a client may narrow them, never widen them). Returns whether the target is allowed.
        Fails closed: a failed access check leaves the target out."""
        allowed = False
        if target is not None and target in router.model_names:
            allowed = await self._key_may_use(user_api_key_dict, target, router)
        escalate_to = target if allowed and not narrowed_by_client(data.get("context_window_fallbacks"), group, target or "") else None
        requested = next(
            (v for k in _OUTPUT_KEYS if isinstance(v := data.get(k), int) and not isinstance(v, bool) and v > 0), None
        )
        chain = fallback_chain(group, escalate_to, requested)
        data["context_window_fallbacks"] = [{group: chain}] if chain else []
        own_generic = False
        operator_generic = catalog.escalation_target(group, overrides={}, context_window_fallbacks=getattr(router, "fallbacks", None))
        if chain and operator_generic is None and data.get("fallbacks") is None:
            # LiteLLM sends context errors it does not recognise as plain 400s down the generic
            # fallbacks; the deployment hook aborts any such hop that is not a context error.
            data["fallbacks"] = [{group: chain}]
            own_generic = True
        plan = BackstopPlan(source=group, target=escalate_to, requested=requested, own_generic_fallbacks=own_generic)
        _metadata(data)[PLAN_KEY] = plan.to_dict()
        return allowed

    async def _reactive(self, kwargs: dict[str, Any], call_type: Any) -> None:
        """On a fallback hop: read the backend's rejection and retry, skip, escalate or abort."""
        depth = kwargs.get("fallback_depth")
        meta = kwargs.get("metadata")
        if not isinstance(depth, int) or depth < 1 or not isinstance(meta, Mapping):
            return
        plan = BackstopPlan.from_dict(meta.get(PLAN_KEY))
        hop_group = meta.get("model_group")
        if plan is None or not isinstance(hop_group, str):
            return
        text = backend_error_text(meta.get("previous_models"))
        error = parse_context_error(text) if text else None
        kind = call_kind(call_type) or "chat"
        info = catalog.deployment_info(
            {"api_base": kwargs.get("api_base"), "model": kwargs.get("model")}, kwargs.get("model_info")
        )
        prompt_count = None
        known_window = info.operator_window
        if hop_group == plan.source and error is not None:
            if info.deployment is not None:
                known_window = known_window or self.windows.peek(info.deployment)
                if kind == "chat" and self.settings.exact_count:
                    prompt_count = await self.exact.count(info.deployment.api_base, info.deployment.served_model, kwargs)
            if prompt_count is None:
                prompt_count = self._estimate(kwargs, kind).safe
        decision = decide_hop(
            plan=plan,
            hop_group=hop_group,
            error=error,
            prompt_count=prompt_count,
            known_window=known_window,
            output_floor_tokens=self.settings.output_floor_tokens,
            margin_tokens=self.settings.clamp_margin_tokens,
        )
        if decision.window is not None and hop_group == plan.source and info.deployment is not None and info.operator_window is None:
            self.windows.learn(info.deployment, decision.window)
        if decision.action is HopAction.PASS:
            return
        if decision.action is HopAction.ABORT:
            logger.info("[CONTEXT-ROUTE] reactive: %r failed with a non-context error: no retry, no escalation", plan.source)
            raise _SkipHop("not a context-length error")
        if decision.action is HopAction.SKIP:
            logger.info("[CONTEXT-ROUTE] reactive: no retry on %r (%s)", plan.source, decision.reason)
            raise _SkipHop(decision.reason)
        logger.info("[CONTEXT-ROUTE] reactive: %s", decision.reason)
        self._count_route(decision.action.value, plan.source, plan.target)
        if decision.action is HopAction.ESCALATE:
            meta[ESCALATED_KEY] = "reactive"  # type: ignore[index]
        elif decision.max_tokens is not None:
            self.metrics.output_clamps.labels(plan.source, "reactive").inc()
        for key in _OUTPUT_KEYS:
            if key in kwargs or (key == "max_tokens" and decision.max_tokens is not None):
                kwargs[key] = decision.max_tokens
        if decision.max_tokens is None:
            for key in _OUTPUT_KEYS:
                kwargs.pop(key, None)

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
            group = (kwargs.get("metadata") or {}).get("model_group") or str(kwargs.get("model"))
            self.metrics.output_clamps.labels(group, "exact" if "exact" in decision.reason else "estimate").inc()

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

    def _window_updated(self, deployment: Any, window: int | None) -> None:
        label = deployment_label(deployment.api_base, deployment.served_model)
        self.metrics.window.labels(label).set(window or 0)

    def _start_background(self) -> None:
        if self.settings.backend_scrape_interval_s <= 0 or self._scraper is not None:
            return
        self._scraper = BackendScraper(
            self.http, self._scrape_targets, self._scraped, interval_s=self.settings.backend_scrape_interval_s
        )
        self._scraper.start()

    def _scrape_targets(self) -> list[tuple[str, str, str]]:
        router = self._router_getter()
        targets = {}
        for entry in getattr(router, "model_list", None) or []:
            info = catalog.group_deployments([entry])
            if info and info[0].deployment is not None:
                d = info[0].deployment
                targets[deployment_label(d.api_base, d.served_model)] = (d.api_base, d.served_model)
        return [(label, base, model) for label, (base, model) in targets.items()]

    def _scraped(self, label: str, stats: PrefixCacheStats) -> None:
        self.metrics.backend_prefix_cache_queries.labels(label).set(stats.queries)
        self.metrics.backend_prefix_cache_hits.labels(label).set(stats.hits)
        if stats.hit_ratio is not None:
            self.metrics.backend_prefix_cache_hit_ratio.labels(label).set(stats.hit_ratio)

    async def async_log_success_event(self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any) -> None:
        """Per successful backend attempt (warms included): prompt and cached tokens by request
        kind, and estimate ÷ actual for real requests. Never raises."""
        try:
            self._record_usage(kwargs, response_obj)
        except Exception:
            logger.debug("usage metrics skipped", exc_info=True)

    def _record_usage(self, kwargs: Any, response_obj: Any) -> None:
        params = kwargs.get("litellm_params") if isinstance(kwargs, Mapping) else None
        meta = (params or {}).get("metadata") if isinstance(params, Mapping) else None
        if not isinstance(meta, Mapping):
            meta = kwargs.get("metadata") if isinstance(kwargs, Mapping) else None
        if not isinstance(meta, Mapping):
            return
        usage = getattr(response_obj, "usage", None) or (response_obj.get("usage") if isinstance(response_obj, Mapping) else None)
        prompt = _field(usage, "prompt_tokens")
        if not isinstance(prompt, int) or prompt <= 0:
            return
        cached = _field(_field(usage, "prompt_tokens_details"), "cached_tokens") or 0
        group = str(meta.get("model_group") or kwargs.get("model_group") or kwargs.get("model"))
        if meta.get(WARM_MARKER):
            kind = "warm"
        elif meta.get(ESCALATED_KEY):
            kind = "escalated"
        else:
            kind = "normal"
        self.metrics.prompt_tokens.labels(group, kind).inc(prompt)
        self.metrics.cached_prompt_tokens.labels(group, kind).inc(cached if isinstance(cached, int) else 0)
        estimate = meta.get(ESTIMATE_KEY)
        if kind != "warm" and isinstance(estimate, Mapping):
            for name in ("safe", "routing"):
                value = estimate.get(name)
                if isinstance(value, int):
                    self.metrics.estimate_ratio.labels(group, name).observe(value / prompt)

    @property
    def http(self) -> httpx.AsyncClient:
        if self._http is None:
            self._http = httpx.AsyncClient(timeout=self.settings.discovery_timeout_s)
        return self._http

    @property
    def windows(self) -> WindowCache:
        if self._windows is None:
            self._windows = WindowCache(
                HttpWindowFetcher(
                    self.http,
                    on_error=lambda d, error: self.metrics.discovery_errors.labels(
                        deployment_label(d.api_base, d.served_model), error
                    ).inc(),
                ),
                on_update=self._window_updated,
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

    @property
    def cooldown(self) -> CooldownStore:
        if self._cooldown is None:
            memory = MemoryCooldownStore(capacity=self.settings.warm_memory_sessions)
            url = redis_url_from_env(self.settings.redis_url, os.environ)
            if url:
                import redis.asyncio as aioredis

                client = aioredis.Redis.from_url(url, socket_timeout=0.25, socket_connect_timeout=0.25)
                self._cooldown = FallbackCooldownStore(
                    RedisCooldownStore(client),
                    memory,
                    on_fallback=lambda error: self.metrics.cooldown_fallbacks.labels(error).inc(),
                )
            else:
                self._cooldown = memory
        return self._cooldown

    @property
    def warmer(self) -> WarmRunner:
        if self._warmer is None:
            self._warmer = WarmRunner(
                self._send_warm,
                max_concurrency=self.settings.warm_max_concurrency,
                timeout_s=self.settings.warm_timeout_s,
                on_done=self._warm_done,
            )
        return self._warmer

    async def _send_warm(self, body: dict[str, Any]) -> Any:
        router = self._router_getter()
        if router is None:
            raise RuntimeError("LiteLLM router is gone")
        return await router.acompletion(**body)

    async def aclose(self) -> None:
        """Cancel warms, scrapes and background discovery; close the HTTP client and the cooldown store."""
        if self._scraper is not None:
            await self._scraper.aclose()
        if self._warmer is not None:
            await self._warmer.aclose()
        if self._cooldown is not None:
            await self._cooldown.aclose()
        if self._windows is not None:
            await self._windows.aclose()
        if self._http is not None:
            await self._http.aclose()

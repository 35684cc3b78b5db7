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

from . import catalog, identity
from .config import Settings
from .errors import parse_context_error
from .meta import AFFINITY_KEY, ESCALATED_KEY, ESTIMATE_KEY, PLAN_KEY, request_metadata
from .metrics import Metrics, deployment_label, metrics
from .policy import RouteAction, clamp_output, decide_route, needs_exact_count
from .reactive import (
    SKIP_MESSAGE_PREFIX,
    BackstopPlan,
    HopAction,
    backend_error_text,
    decide_hop,
    fallback_chain,
    narrowed_by_client,
)
from .runtime import Services
from .tokens import Estimator, RatioEstimator, TokenEstimate, calibrated_estimator, estimate_request, family_of
from .usage import record_usage, usage_observation
from .correction import EstimateCorrection
from .windows import MISS
from .warm import WarmOutcome
from .warm_gate import WarmCandidate, WarmGate

logger = logging.getLogger("litellm_kvwarm")

_CHAT_CALL_TYPES = frozenset({"completion", "acompletion"})
_TEXT_CALL_TYPES = frozenset({"text_completion", "atext_completion"})
_OUTPUT_KEYS = ("max_tokens", "max_completion_tokens")


class _SkipHop(Exception):
    """Raised inside the deployment hook to end a fallback hop before any backend attempt."""


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
        self.settings = settings if settings is not None else Settings.from_env()
        configure_logging(self.settings.log_level)
        self.metrics = metrics_ if metrics_ is not None else metrics()
        self._router_getter = router_getter
        self.services = Services(
            self.settings,
            self.metrics,
            send_warm=self._send_warm,
            on_warm_done=self._warm_done,
            scrape_targets=self._scrape_targets,
            clock=clock,
            http_client=http_client,
        )
        self.warm_gate = WarmGate(
            self.settings,
            cooldown=lambda: self.services.cooldown,
            runner=lambda: self.services.warmer,
            count=self._count_warm,
        )
        #: warm outcomes seen by this process, by outcome value (for tests and the demo)
        self.warm_outcomes: dict[str, int] = {}
        self.correction = EstimateCorrection()

    # -- LiteLLM hooks ---------------------------------------------------------------------

    async def async_pre_call_hook(self, user_api_key_dict: Any, cache: Any, data: dict, call_type: Any) -> dict:
        """Route a request that cannot fit its group's window to the escalation target, and warm
        the target ahead for a session that nears the window. Returns ``data`` (possibly with
        ``data["model"]`` rewritten). Never raises, except that tenant cache isolation refuses a
        request without a tenant (fail closed)."""
        started = time.perf_counter()
        self._isolate_tenant(user_api_key_dict, data)
        try:
            self.services.start_background()
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
            request_metadata(data)[AFFINITY_KEY] = identity.affinity_key(session)
        target = self._target_of(router, group)
        allowed = await self._arm_backstop(user_api_key_dict, data, router, group, target)
        if target is None and not self.settings.proactive_routing:
            return
        source_window = await self._group_window(router, group)
        if source_window is None:
            logger.debug("[CONTEXT-ROUTE] untouched: window of %r unknown", group)
            self._count_route("unknown_window", group, target)
            return
        raw = self._estimate(data, kind, self._served_models(router, group))
        estimate = self.correction.apply(group, raw) if self.settings.learn_from_usage else raw
        request_metadata(data)[ESTIMATE_KEY] = {"safe": estimate.safe, "routing": estimate.routing, "group": group,
                                                "raw_safe": raw.safe, "raw_routing": raw.routing}
        target_known = target is not None and target in router.model_names
        target_window = await self._group_window(router, target) if target_known else None
        floor = self.settings.output_floor_tokens
        tokens, exact = estimate.routing, None
        if kind == "chat" and self.settings.exact_count and needs_exact_count(estimate, floor, source_window, target):
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
            exact=exact is not None,
        )
        if decision.action is RouteAction.STAY:
            logger.debug("[CONTEXT-ROUTE] %s", decision.describe())
            self._count_route("stay", group, target)
            if target is not None:
                candidate = WarmCandidate(target, target_known, target_window, tokens, source_window, session, estimate.routing)
                await self.warm_gate.consider(candidate, data, lambda: self._key_may_use(user_api_key_dict, target, router))
            return
        if decision.escalate and not self.settings.proactive_routing:
            logger.info("[CONTEXT-ROUTE] not routed (KVWARM_PROACTIVE_ROUTING=0): %s", decision.describe())
            self._count_route("stay", group, target)
            return
        if not decision.escalate:
            logger.info("[CONTEXT-ROUTE] %s", decision.describe())
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
        request_metadata(data)[ESCALATED_KEY] = "proactive"
        await self._arm_backstop(user_api_key_dict, data, router, target, self._target_of(router, target))

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
        return identity.pin_deployments(key, healthy)

    def _isolate_tenant(self, user_api_key_dict: Any, data: dict) -> None:
        """With a cache-salt secret: drop any client-sent ``cache_salt`` and set the tenant's.

        Raises:
            fastapi.HTTPException(403): no tenant can be told from the key (fail closed).
        """
        secret = self.settings.cache_salt_secret
        if not secret:
            return
        tenant = identity.tenant_of(user_api_key_dict)
        if tenant is None:
            from fastapi import HTTPException

            raise HTTPException(status_code=403, detail="litellm-kvwarm: tenant cache isolation needs a key with a team, user or token")
        identity.set_cache_salt(data, identity.cache_salt(secret, tenant))

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
        request_metadata(data)[PLAN_KEY] = plan.to_dict()
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
                known_window = known_window or self.services.windows.peek(info.deployment)
                if kind == "chat" and self.settings.exact_count:
                    prompt_count = await self.services.exact.count(info.deployment.api_base, info.deployment.served_model, kwargs)
            if prompt_count is None:
                prompt_count = self._safe_estimate(kwargs, kind, info)
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
            self.services.windows.learn(info.deployment, decision.window)
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
            window = await self.services.windows.get(info.deployment)
        if window is None:
            return
        requested = kwargs[key]
        safe = self._safe_estimate(kwargs, kind, info)
        floor = self.settings.output_floor_tokens
        decision = clamp_output(requested=requested, prompt_tokens=safe, window=window, output_floor_tokens=floor, exact=False)
        if decision.needs_exact and self.settings.exact_count and info.deployment is not None and kind == "chat":
            exact = await self.services.exact.count(info.deployment.api_base, info.deployment.served_model, kwargs)
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

    def _safe_estimate(self, kwargs: Mapping[str, Any], kind: str, info: Any) -> int:
        """The safe estimate of an attempt's prompt (tokens): the pre-call hook's (same payload on
        every hop, carried in the metadata), else estimated here for the attempt's deployment and
        raised by its group's learned factor."""
        metadata = kwargs.get("metadata") or {}
        known = metadata.get(ESTIMATE_KEY)
        if isinstance(known, Mapping) and isinstance(known.get("safe"), int):
            return known["safe"]
        served = (info.deployment.served_model,) if info.deployment is not None else ()
        fresh = self._estimate(kwargs, kind, served)
        group = metadata.get("model_group")
        if self.settings.learn_from_usage and isinstance(group, str):
            fresh = self.correction.apply(group, fresh)
        return fresh.safe

    def _estimator(self, served_models: tuple[str, ...] = ()) -> Estimator:
        """The configured estimator; calibrated weights of the deployments' family when they agree."""
        s = self.settings
        if s.estimator == "ratio":
            return RatioEstimator(s.safe_chars_per_token, s.routing_chars_per_token)
        if s.estimator_family:
            return calibrated_estimator(s.estimator_family)
        families = {family_of(m) for m in served_models}
        return calibrated_estimator(families.pop() if len(families) == 1 else "any")

    def _estimate(self, payload: Mapping[str, Any], kind: str, served_models: tuple[str, ...] = ()) -> TokenEstimate:
        return estimate_request(payload, call_kind=kind, estimator=self._estimator(served_models))

    def _served_models(self, router: Any, group: str) -> tuple[str, ...]:
        infos = catalog.group_deployments(router.get_model_list(model_name=group) or [])
        return tuple(i.deployment.served_model for i in infos if i.deployment is not None)

    async def _group_window(self, router: Any, group: str) -> int | None:
        infos = catalog.group_deployments(router.get_model_list(model_name=group) or [])
        operator = [info.operator_window for info in infos if info.operator_window is not None]
        windows = self.services.windows
        pending = [info.deployment for info in infos if info.operator_window is None and info.deployment]
        discovered = [windows.lookup(d) for d in pending]  # cached: no await, no event-loop round trip
        missed = [d for d, w in zip(pending, discovered) if w is MISS]
        if missed:
            fetched = iter(await asyncio.gather(*(windows.get(d) for d in missed)))
            discovered = [next(fetched) if w is MISS else w for w in discovered]
        return catalog.combine_windows([*operator, *discovered])

    async def _exact_count_for_group(self, router: Any, group: str, data: Mapping[str, Any]) -> int | None:
        """Exact prompt tokens on the group's smallest-window deployment that offers /tokenize."""
        infos = catalog.group_deployments(router.get_model_list(model_name=group) or [])
        candidates = [i.deployment for i in infos if i.deployment is not None]
        candidates.sort(key=lambda d: self.services.windows.peek(d) or float("inf"))
        for deployment in candidates[:1]:
            return await self.services.exact.count(deployment.api_base, deployment.served_model, data)
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

    def _scrape_targets(self) -> list[tuple[str, str, str]]:
        router = self._router_getter()
        targets = {}
        for entry in getattr(router, "model_list", None) or []:
            info = catalog.group_deployments([entry])
            if info and info[0].deployment is not None:
                d = info[0].deployment
                targets[deployment_label(d.api_base, d.served_model)] = (d.api_base, d.served_model)
        return [(label, base, model) for label, (base, model) in targets.items()]

    async def async_log_success_event(self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any) -> None:
        """Per successful backend attempt (warms included): prompt and cached tokens by request
        kind, and estimate ÷ actual for real requests. Never raises."""
        try:
            record_usage(self.metrics, kwargs, response_obj)
            if self.settings.learn_from_usage:
                self._learn(kwargs, response_obj)
        except Exception:
            logger.debug("usage metrics skipped", exc_info=True)

    def _learn(self, kwargs: Any, response_obj: Any) -> None:
        """Feed :attr:`correction` with a response its own group served (not escalated, not a warm)."""
        observation = usage_observation(kwargs, response_obj)
        if observation is None:
            return
        group, raw_routing, raw_safe, prompt = observation
        before = self.correction.factors(group)
        self.correction.observe(group, routing=raw_routing, safe=raw_safe, prompt_tokens=prompt)
        after = self.correction.factors(group)
        if after != before and after.samples >= self.correction.min_samples:
            self.metrics.estimate_correction.labels(group, "routing").set(after.routing)
            self.metrics.estimate_correction.labels(group, "safe").set(after.safe)
            if (after.routing, after.safe) != (before.routing, before.safe):
                logger.info("[CONTEXT-ROUTE] estimates of %r now × %.2f (routing) / × %.2f (safe), from %d responses",
                            group, after.routing, after.safe, after.samples)

    async def _send_warm(self, body: dict[str, Any]) -> Any:
        router = self._router_getter()
        if router is None:
            raise RuntimeError("LiteLLM router is gone")
        return await router.acompletion(**body)

    async def aclose(self) -> None:
        """Cancel every background task and close every client (see :class:`Services`)."""
        await self.services.aclose()

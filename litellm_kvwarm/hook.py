"""The LiteLLM callback: a thin adapter from LiteLLM's hooks to the plugin (with :mod:`~litellm_kvwarm.litellm_bridge`, the only module that imports LiteLLM).

Each hook: **view** (:mod:`.view`: the inputs validated once) → **facts** (:mod:`.facts`: gathered
once) → **plan** (:mod:`.planner`, pure) → **effects** (:mod:`.effects`: applied to the request).

1. ``async_pre_call_hook`` (proxy, before the Router picks a group): strip client-sent plugin metadata → tenant salt (fail
   closed) → route: stay, escalate to the first fitting step of the chain, or keep local; arm the backstop; queue a warm.
2. ``async_pre_call_deployment_hook`` (every attempt): the tenant's ``cache_salt`` → on a fallback hop, retry clamped / skip /
   escalate / abort → clamp the output on an exact count (:mod:`.attempt`).
3. ``async_post_call_failure_hook``: drop the kept reply-warm body; learn from a one-attempt refusal; answer as LiteLLM alone
   would a failed proactive target (:func:`~.litellm_bridge.target_failed`) and fallbacks it armed and declined (:mod:`.fallback_outcome`).
4. ``async_filter_deployments``: pin a session to one deployment of an escalation target (a retry: the next one).
5. ``async_log_success_event``: usage metrics, estimate corrections (:mod:`.usage`), reply-warms (:mod:`.reply_warm`).
6. ``async_post_call_streaming_iterator_hook``: count error frames in 200 streams (:mod:`.stream_errors`), decode warms.

Each hook's own time: ``kvwarm_plugin_seconds{hook}``. Fail open for speed: an internal error is logged, the request goes on
as LiteLLM alone would send it. Fail closed for security: no unchecked escalation; no request without a tenant."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncGenerator, Callable
from typing import Any

import httpx
from litellm.integrations.custom_logger import CustomLogger

from . import __version__, fallback_outcome, identity, limits, pinning, startup, stream_errors, warm_body
from . import litellm_bridge as bridge
from .attempt import Attempts, DeclineHop, SkipHop
from .config import Settings
from .correction import EstimateCorrection
from .deadline import RequestBudget
from .effects import Effects
from .facts import Facts, scrape_targets
from .meta import find_metadata, strip_client_keys
from .metrics import Metrics, metrics
from .planner import plan_route
from .reactive import SKIP_MESSAGE_PREFIX
from .runtime import Services
from .usage import record_usage
from .view import affinity_of, attempt_view, failure_view, pre_call_view
from .router_view import failed_deployments, served_model
from .warm_gate import WarmGate
from .warm_priority import WarmPriority

logger = logging.getLogger("litellm_kvwarm")


class KVWarmHandler(CustomLogger):
    """LiteLLM ``CustomLogger`` implementing proactive routing, output clamping and warm-ahead.

    Args:
        settings: plugin settings (default: :meth:`Settings.from_env`).
        router_getter: returns LiteLLM's Router (default: ``proxy_server.llm_router``).
        clock: monotonic seconds, for the window cache.
        http_client: shared client for discovery and ``/tokenize`` (default: created on first use).
        metrics_: collectors (default: the process's).
    """

    def __init__(self, settings: Settings | None = None, *, router_getter: Callable[[], Any] = bridge.proxy_router,
                 clock: Callable[[], float] = time.monotonic, http_client: httpx.AsyncClient | None = None,
                 metrics_: Metrics | None = None):
        super().__init__()
        self.settings = settings if settings is not None else Settings.from_env()
        startup.on_load(self.settings, __version__)
        self.metrics = metrics_ if metrics_ is not None else metrics()
        self._router_getter = router_getter
        self._hash_secret: bytes | None = None
        self.correction = EstimateCorrection()
        self.warm_gate = WarmGate(self.settings, runner=lambda: self.services.warmer, secret=lambda: self.hash_secret,
                                  count=lambda *o: self.effects.count_warm(*o), bridged=lambda g, k: self.facts.bridged(g, k),
                                  limited=lambda g: limits.group_limited(self._router_getter(), g, self.settings.warm_max_concurrency))
        self.effects = Effects(self.settings, self.metrics, self.warm_gate, secret=lambda: self.hash_secret, forbid=bridge.forbidden,
                               served_model=lambda group: served_model(self._router_getter(), group))
        self.priority = WarmPriority(self.settings.warm_priority, self.settings.window_ttl_s, on_refused=self.metrics.warm_priority_refused)
        self.services = Services(self.settings, self.metrics, on_warm_done=self.effects.warm_done, served_model=self.effects.served_model,
                                 send_warm=lambda kind, body: self.priority.send(lambda k, b: bridge.send_warm(self._router_getter(), k, b), kind, body),
                                 on_warm_outcome=self.effects.count_warm, clock=clock, http_client=http_client, bridged=lambda g, k: self.facts.bridged(g, k),
                                 scrape_targets=lambda: scrape_targets(self._router_getter(), bridge.resolve_secret), arrivals=self.warm_gate.arrivals)
        self.facts = Facts(self.settings, self.services, self.correction, may_use=bridge.key_may_use, to_chat=bridge.chat_payload,
                           translate=bridge.litellm_messages, secret=bridge.resolve_secret, native_messages=bridge.native_messages,
                           hash_key=lambda tenant: identity.hash_key(self.hash_secret, tenant), router_getter=router_getter)
        self.attempts = Attempts(self.facts, self.effects, native_messages=bridge.native_messages)

    @property
    def hash_secret(self) -> bytes:
        """Key of the tenant and session hashes in shared state, resolved on first use (config read): :func:`startup.hash_secret`."""
        if self._hash_secret is None:
            self._hash_secret = startup.hash_secret(self.settings, bridge.proxy_master_key)
        return self._hash_secret

    @property
    def warm_outcomes(self) -> dict[str, int]:  # by outcome value, this process (for tests and the demo)
        return self.effects.warm_outcomes

    async def async_pre_call_hook(self, user_api_key_dict: Any, cache: Any, data: dict, call_type: Any) -> dict:
        """Route a request that cannot fit its group's window to the first step of its chain that fits, arm
        the backstop, warm ahead; client-sent ``kvwarm_*`` metadata is removed first. Returns ``data``.
        Never raises, except that tenant cache isolation refuses a request without a tenant (HTTP 403)."""
        started = time.perf_counter()
        if strip_client_keys(data):
            self.metrics.client_metadata_stripped.inc()
        view = pre_call_view(data, call_type, user_api_key_dict)
        self.effects.isolate_tenant(data, view)
        budget = RequestBudget(self.settings.request_budget_ms / 1000)
        try:
            self.services.start_background()
            facts = await self.facts.route(view, self._router_getter, budget)
            await self.effects.apply_route(plan_route(view, facts, self.settings), view, data)
        except Exception:  # fail open: LiteLLM serves the request as if the plugin were absent
            logger.warning("[CONTEXT-ROUTE] routing skipped after an internal error", exc_info=True)
        finally:
            self.effects.record_budget(data, budget, only_if_spent=True, field=view.adapter.metadata_field if view.adapter is not None else "metadata")
        self.metrics.plugin_seconds.labels("pre_call").observe(time.perf_counter() - started)
        return data

    async def async_pre_call_deployment_hook(self, kwargs: dict[str, Any], call_type: Any) -> dict[str, Any] | None:
        """Per backend attempt: the tenant's ``cache_salt``, a warm's cooldown and priority, a fallback hop's decision, the output
        clamp. Returns ``kwargs`` (possibly modified); raises only to skip a hop (``ContextWindowExceededError``)."""
        started = time.perf_counter()
        view = attempt_view(kwargs, call_type)
        if (skip := self.attempts.skipped_source(view)) is not None:  # an escalation by fallback: no backend attempt
            raise bridge.context_window_error(skip, view.model)
        if self.attempts.bridged(view):
            return kwargs  # LiteLLM bridges it to chat: that attempt (``acompletion``) does the work
        try:
            self.effects.apply_cache_salt(view, kwargs)
            self.priority.strip_if_refused(kwargs, view.model_info, view.metadata_field)
            warm_body.keep_out_of_cooldown(kwargs, view.metadata_field)
        except Exception:  # fail open
            logger.warning("[CONTEXT-ROUTE] cache_salt not applied after an internal error", exc_info=True)
        budget = RequestBudget.from_metadata(view.carried.budget_spent, self.settings.request_budget_ms / 1000)
        try:
            await self.attempts.run(view, kwargs, budget)
        except SkipHop as skip:
            raise bridge.skip_error(f"{SKIP_MESSAGE_PREFIX} {skip}", view.model, declined=isinstance(skip, DeclineHop)) from None
        except Exception:  # fail open
            logger.warning("[CONTEXT-ROUTE] clamp skipped after an internal error", exc_info=True)
        finally:
            self.effects.record_budget(kwargs, budget, only_if_spent=False, field=view.metadata_field)
            self.metrics.plugin_seconds.labels("deployment").observe(time.perf_counter() - started)
        return kwargs

    async def async_post_call_failure_hook(self, request_data: dict, original_exception: Exception, user_api_key_dict: Any,
                                           traceback_str: str | None = None) -> Any:
        """Drop the kept reply-warm body; LiteLLM alone's text where its fallbacks changed it (:mod:`.fallback_outcome`); a failed proactive target: a 400."""
        with self.metrics.plugin_seconds.labels("failure").time():
            self.effects.forget_reply(request_data)  # never raises
            try:
                await self.attempts.learner.learn_final(request_data, original_exception, meta := find_metadata(request_data) or {})
                if (answer := fallback_outcome.declined_answer(original_exception, meta.get("previous_models"))) is not None:
                    return bridge.http_error(*answer)  # its own decline surfaced as the final error: the last real one's
                view = failure_view(request_data)
                if fallback_outcome.restore(original_exception, (state := view.carried).plan, state.origin, view.model):
                    return None  # fallbacks it armed and declined, a target and source that refused alike: LiteLLM alone's text
                if state.escalated != "proactive" or not bridge.target_failed(original_exception, state.origin):
                    return None
                return bridge.http_error(400, self.effects.failed_target(state.origin, view.model, original_exception))
            except Exception:
                logger.debug("failure hook skipped", exc_info=True)  # and None: LiteLLM's own error stands

    async def async_filter_deployments(self, model: str, healthy_deployments: list, messages: Any,
                                       request_kwargs: dict | None = None, parent_otel_span: Any = None) -> list:
        """Pin a session to one deployment of an escalation-target group (rendezvous hash of tenant and session over
        the deployments' ids): a warm and the escalation meet the same prefix cache. A retry takes the session's next
        choice, never a deployment that failed this request (:func:`~litellm_kvwarm.router_view.failed_deployments`)."""
        try:
            if not self.settings.session_pinning or len(healthy_deployments) < 2:
                return healthy_deployments
            key = affinity_of(request_kwargs)
            router = self._router_getter() if key is not None else None
            pin = key is not None and router is not None and model in self.facts.targets.get(router, self.settings.escalation_targets)
            return pinning.pin_within_litellm(router, model, healthy_deployments, request_kwargs, key, failed_deployments(request_kwargs)) if pin else healthy_deployments
        except Exception:  # fail open: LiteLLM's own choice stands
            logger.warning("[KV-WARM] session pinning skipped after an internal error", exc_info=True)
            return healthy_deployments

    async def async_log_success_event(self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any) -> None:
        """Per successful attempt (warms too): usage metrics, and (``learn_from_usage``) the learned correction."""
        with self.metrics.plugin_seconds.labels("success").time():
            try:
                record_usage(self.metrics, kwargs, response_obj, self.services.live_prompts.observe,  # and learn, one read
                             correction=self.correction if self.settings.learn_from_usage else None)
            except Exception:
                logger.debug("usage metrics skipped", exc_info=True)
            try:
                await self.effects.reply_warm(kwargs, response_obj)
            except Exception:  # fail open: a reply-warm never reaches a client
                logger.warning("[KV-WARM] reply-warm skipped after an internal error", exc_info=True)

    def async_post_call_streaming_iterator_hook(self, user_api_key_dict: Any, response: Any, request_data: dict) -> AsyncGenerator:
        """Every stream unchanged; an error inside one counted (:mod:`.stream_errors`); decode warms (:mod:`.decode_warm`)."""
        return stream_errors.pass_through(response, request_data, self.metrics, self.effects.decode_tap(request_data))

    async def aclose(self) -> None:
        """Cancel every background task and close every client (see :class:`Services`)."""
        await self.services.aclose()

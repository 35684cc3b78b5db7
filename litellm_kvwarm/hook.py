"""The LiteLLM callback: the only module that imports LiteLLM.

Request path, top to bottom:

1. ``async_pre_call_hook`` (proxy, before the Router picks a group): strip client-sent plugin
   metadata → tenant salt (fail closed) → the client's own invalid output budget leaves the
   request untouched → escalation chain (in the model list, allowed for the key, narrowed by the
   client) → windows (one :class:`~litellm_kvwarm.deadline.RequestBudget` for all lookups) →
   estimate → :func:`~litellm_kvwarm.chain.first_fitting` / :func:`~litellm_kvwarm.policy.decide_route`
   → rewrite ``data["model"]`` (with the step's own overrides) → arm the backstop (only with a
   chain) → queue a warm for the group the next escalation would reach.
2. ``async_pre_call_deployment_hook`` (every attempt, after a deployment is chosen): the
   tenant's ``cache_salt`` where the provider accepts it → on a fallback hop,
   :func:`~litellm_kvwarm.reactive.decide_hop` → :func:`~litellm_kvwarm.policy.clamp_output` on an
   exact ``/tokenize`` count (or the routing estimate when even that overflows), within what is
   left of the request's budget.
3. ``async_post_call_failure_hook``: a proactive escalation whose target cannot be reached is
   answered as the context-length error LiteLLM alone would give.

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
from .chain import escalation_chain, first_fitting, next_step, rest_after, step_params
from .config import Settings
from .correction import EstimateCorrection
from .deadline import RequestBudget
from .context_errors import parse_context_error
from .meta import (
    AFFINITY_KEY,
    BUDGET_KEY,
    ESCALATED_KEY,
    ESTIMATE_KEY,
    ORIGIN_KEY,
    PLAN_KEY,
    SALT_KEY,
    request_metadata,
    strip_client_keys,
)
from .metrics import Metrics, metrics
from .output_budget import OUTPUT_FIELDS, OutputBudget, cap_output, read_output_budget, set_output
from .policy import clamp_output, decide_route, needs_exact_count
from .reactive import (
    SKIP_MESSAGE_PREFIX,
    BackstopPlan,
    HopAction,
    allowed_by_client,
    backend_error_text,
    decide_hop,
    fallback_chain,
)
from .runtime import Services
from .tokens import (
    Estimator,
    RatioEstimator,
    RequestCounts,
    TokenEstimate,
    calibrated_estimator,
    estimate_request,
    family_of,
)
from .usage import record_usage, usage_observation
from .warm import WarmOutcome
from .warm_gate import WarmCandidate, WarmGate
from .windows import MISS

logger = logging.getLogger("litellm_kvwarm")

_CHAT_CALL_TYPES = frozenset({"completion", "acompletion"})
_TEXT_CALL_TYPES = frozenset({"text_completion", "atext_completion"})

#: LiteLLM providers whose servers accept vLLM's ``cache_salt`` (vLLM ≥ 0.9, SGLang): only
#: requests to these get it; OpenAI, Anthropic and other strict APIs reject unknown fields.
SALTED_PROVIDERS = frozenset({"hosted_vllm", "vllm", "sglang"})


def provider_of(kwargs: Mapping[str, Any]) -> str | None:
    """The LiteLLM provider of one attempt: ``custom_llm_provider`` if LiteLLM set it, else the
    prefix of ``model`` (``hosted_vllm/Qwen/Qwen3-8B`` → ``hosted_vllm``)."""
    provider = kwargs.get("custom_llm_provider")
    if isinstance(provider, str) and provider:
        return provider
    model = kwargs.get("model")
    if isinstance(model, str) and "/" in model:
        return model.split("/", 1)[0]
    return None


#: Words of a LiteLLM ``APIConnectionError`` / ``InternalServerError`` that mean the backend could
#: not be reached (httpx's and aiohttp's connect-failure texts); other such errors are LiteLLM's
#: own failures (e.g. "Unmapped prompt format") and stay as they are.
_UNREACHABLE_WORDS = ("connection refused", "connecterror", "connect error", "all connection attempts failed",
                      "connection reset", "connecttimeout", "name or service not known", "server disconnected",
                      "cannot connect to host", "connect call failed")


def _unreachable(exc: Exception) -> bool:
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
    return isinstance(exc, (litellm.APIConnectionError, litellm.InternalServerError)) and any(w in text for w in _UNREACHABLE_WORDS)


def litellm_messages(messages: list, provider: str, model: str = "") -> list:
    """``messages`` as LiteLLM's chat path rewrites them for ``provider`` before it sends them
    (``translate_developer_role_to_system_role`` of the provider's config); the list itself when
    LiteLLM has no config for it or nothing changes."""
    from litellm.types.utils import LlmProviders
    from litellm.utils import ProviderConfigManager

    if provider not in LlmProviders._value2member_map_:
        return messages
    config = ProviderConfigManager.get_provider_chat_config(model=model, provider=LlmProviders(provider))
    if config is None or not any(isinstance(m, Mapping) and m.get("role") == "developer" for m in messages):
        return messages
    return config.translate_developer_role_to_system_role(messages=messages)


def resolve_secret(reference: str) -> str | None:
    """A deployment's ``api_key`` as LiteLLM resolves it: ``os.environ/NAME`` (and LiteLLM's
    other secret-manager references) through ``litellm.get_secret_str``; a plain key as is."""
    if not reference.startswith("os.environ/"):
        return reference
    from litellm import get_secret_str

    return get_secret_str(reference)


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


def _proxy_master_key() -> str | None:
    try:
        from litellm.proxy import proxy_server

        key = getattr(proxy_server, "master_key", None)
    except Exception:  # not inside a proxy (tests, embedders)
        return None
    return key if isinstance(key, str) and key else None


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
            on_warm_outcome=self._count_warm,
            scrape_targets=self._scrape_targets,
            clock=clock,
            http_client=http_client,
        )
        self._hash_secret: bytes | None = None
        self.warm_gate = WarmGate(
            self.settings,
            runner=lambda: self.services.warmer,
            count=self._count_warm,
            secret=lambda: self.hash_secret,
        )
        #: warm outcomes seen by this process, by outcome value (for tests and the demo)
        self.warm_outcomes: dict[str, int] = {}
        self.correction = EstimateCorrection()

    @property
    def hash_secret(self) -> bytes:
        """Key of the tenant and session hashes kept in shared state, resolved on first use (the
        proxy has read its config by then): :func:`identity.resolve_hash_secret` over the
        environment, with the proxy's configured ``general_settings.master_key`` standing in for
        ``LITELLM_MASTER_KEY`` when the variable is not set."""
        if self._hash_secret is None:
            environ: Mapping[str, str] = os.environ
            if not environ.get("LITELLM_MASTER_KEY"):
                master = _proxy_master_key()
                if master:
                    environ = {**os.environ, "LITELLM_MASTER_KEY": master}
            self._hash_secret, source = identity.resolve_hash_secret(
                self.settings.hash_secret, self.settings.cache_salt_secret, environ
            )
            if source == "random":
                logger.warning("[KV-WARM] no KVWARM_HASH_SECRET, KVWARM_CACHE_SALT_SECRET, LITELLM_SALT_KEY or master key: "
                               "tenant and session hashes use a random key of this process (replicas do not share cooldowns)")
        return self._hash_secret

    # -- LiteLLM hooks ---------------------------------------------------------------------

    async def async_pre_call_hook(self, user_api_key_dict: Any, cache: Any, data: dict, call_type: Any) -> dict:
        """Route a request that cannot fit its group's window to the first group of its
        escalation chain that fits, arm the backstop, and warm ahead for a session that nears
        the window. Returns ``data`` (possibly with ``data["model"]`` rewritten). Never raises,
        except that tenant cache isolation refuses a request without a tenant (fail closed).

        Whatever else happens, plugin-internal metadata a client sent (``kvwarm_*``) is removed
        first, for every call type."""
        started = time.perf_counter()
        if strip_client_keys(data):
            self.metrics.client_metadata_stripped.inc()
        self._isolate_tenant(user_api_key_dict, data)
        budget = RequestBudget(self.settings.request_budget_ms / 1000)
        try:
            self.services.start_background()
            await self._route(user_api_key_dict, data, call_type, budget)
        except Exception:  # fail open: LiteLLM serves the request as if the plugin were absent
            logger.warning("[CONTEXT-ROUTE] routing skipped after an internal error", exc_info=True)
        finally:
            meta = data.get("metadata")
            if isinstance(meta, dict) and budget.spent_s > 0:
                meta[BUDGET_KEY] = budget.to_metadata()
        self.metrics.plugin_seconds.labels("pre_call").observe(time.perf_counter() - started)
        return data

    async def async_pre_call_deployment_hook(self, kwargs: dict[str, Any], call_type: Any) -> dict[str, Any] | None:
        """Per backend attempt: decide a fallback hop (retry clamped, skip, escalate), clamp
        ``max_tokens`` / ``max_completion_tokens`` to the chosen deployment's window, and set the
        tenant's ``cache_salt`` where the backend accepts it. Returns the (possibly modified)
        kwargs; raises only to skip a hop (a ``ContextWindowExceededError`` LiteLLM moves past)."""
        started = time.perf_counter()
        try:
            self._apply_cache_salt(kwargs, call_type)
        except Exception:  # fail open
            logger.warning("[CONTEXT-ROUTE] cache_salt not applied after an internal error", exc_info=True)
        meta = kwargs.get("metadata")
        budget = RequestBudget.from_metadata(
            meta.get(BUDGET_KEY) if isinstance(meta, Mapping) else None, self.settings.request_budget_ms / 1000
        )
        try:
            await self._reactive(kwargs, call_type, budget)
            await self._clamp(kwargs, call_type, budget)
        except _SkipHop as skip:
            import litellm

            raise litellm.ContextWindowExceededError(
                message=f"{SKIP_MESSAGE_PREFIX} {skip}", model=str(kwargs.get("model")), llm_provider="hosted_vllm"
            ) from None
        except Exception:  # fail open
            logger.warning("[CONTEXT-ROUTE] clamp skipped after an internal error", exc_info=True)
        finally:
            if isinstance(meta, dict):
                meta[BUDGET_KEY] = budget.to_metadata()
            self.metrics.plugin_seconds.labels("deployment").observe(time.perf_counter() - started)
        return kwargs

    async def async_post_call_failure_hook(
        self, request_data: dict, original_exception: Exception, user_api_key_dict: Any, traceback_str: str | None = None
    ) -> Any:
        """A proactively escalated request whose target could not be reached (connection error,
        timeout, 5xx) is answered as the context-length error LiteLLM alone would have given
        (HTTP 400 naming the source window), not as an opaque 500. Anything else: untouched."""
        try:
            return self._unreachable_target_error(request_data, original_exception)
        except Exception:
            logger.debug("failure hook skipped", exc_info=True)
            return None

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

    async def _route(self, user_api_key_dict: Any, data: dict, call_type: Any, budget: RequestBudget) -> None:
        kind = call_kind(call_type)
        group = data.get("model")
        if kind is None or not isinstance(group, str):
            return
        router = self._router_getter()
        if router is None or group not in router.model_names:
            return
        output = read_output_budget(data)
        if not output.valid:
            logger.debug("[CONTEXT-ROUTE] untouched: the client's own output budget is invalid")
            self._count_route("client_output_error", group, None)
            return
        session = self._session(user_api_key_dict, data)
        if session is not None and self.settings.session_pinning:
            request_metadata(data)[AFFINITY_KEY] = identity.affinity_key(session, self.hash_secret)
        chain = self._chain_of(router, group)
        allowed = await self._allowed_chain(user_api_key_dict, router, chain)
        client_fallbacks = data.get("context_window_fallbacks")
        usable = allowed_by_client(client_fallbacks, group, allowed)
        params = self._step_params(router, group, client_fallbacks)
        source_window = await self._group_window(router, group, budget)
        if source_window is None:
            logger.debug("[CONTEXT-ROUTE] untouched: window of %r unknown", group)
            self._count_route("unknown_window", group, chain[0] if chain else None)
            self._arm_backstop(data, router, group, usable, None, None, output, params)
            return
        tenant = self._tenant_hash(user_api_key_dict)
        raw = self._estimate(data, kind, self._served_models(router, group))
        estimate = self.correction.apply(group, tenant, raw) if self.settings.learn_from_usage and tenant else raw
        request_metadata(data)[ESTIMATE_KEY] = {"safe": estimate.safe, "routing": estimate.routing, "group": group,
                                                "raw_safe": raw.safe, "raw_routing": raw.routing, "tenant": tenant}
        floor = self.settings.output_floor_tokens
        tokens, exact, unsettled = estimate.routing, None, False
        if self.settings.exact_count and needs_exact_count(estimate, floor, source_window, chain or None):
            if kind == "chat":  # /tokenize counts chat messages; a text prompt is never counted here
                exact = await self._exact_count_for_group(router, group, data, budget)
            if exact is not None:
                tokens = exact
            else:
                # the estimate alone is not trusted this close to the window (code and JSON read
                # up to ~1.6x high): stay, and let the server's own numbers escalate if it must
                unsettled = tokens + floor <= 2 * source_window
        windows = await self._chain_windows(router, usable, budget)
        if tokens + floor <= source_window or unsettled:
            if unsettled:
                logger.info("[CONTEXT-ROUTE] stay: est≈%stok + %d exceeds window %d of %r but no exact count could "
                            "settle it; the backstop escalates if the server refuses", tokens, floor, source_window, group)
            else:
                logger.debug("[CONTEXT-ROUTE] stay: %stok + %d fits window %d of %r", tokens, floor, source_window, group)
            self._count_route("stay", group, chain[0] if chain else None)
            self._arm_backstop(data, router, group, usable, source_window, estimate, output, params)
            await self._consider_warm(data, kind, session, source_window, windows, tokens, estimate.routing)
            return
        target, target_window = first_fitting(windows, tokens + floor)
        decision = decide_route(
            source=group,
            target=target or (usable[0] if usable else None),
            routing_estimate=tokens,
            output_floor_tokens=floor,
            source_window=source_window,
            target_window=target_window,
            exact=exact is not None,
        )
        if target is None or not self.settings.proactive_routing:
            if chain and not usable:
                missing = all(g not in router.model_names for g in chain)
                label = "kept_local_missing" if missing else "kept_local_forbidden"
                logger.info("[CONTEXT-ROUTE] kept local: no step of %r's chain %s is in the model list and allowed for this key", group, list(chain))
            elif target is not None:
                label = "stay"
                logger.info("[CONTEXT-ROUTE] not routed (KVWARM_PROACTIVE_ROUTING=0): %s", decision.describe())
            else:
                label = decision.action.value
                logger.info("[CONTEXT-ROUTE] %s", decision.describe())
            self._count_route(label, group, chain[0] if chain else None)
            self._arm_backstop(data, router, group, usable, source_window, estimate, output, params)
            return
        logger.info("[CONTEXT-ROUTE] %s", decision.describe())
        self._count_route("proactive", group, target)
        data["model"] = target
        data.update(params.get(target, {}))  # the step's own overrides, as LiteLLM's fallback would apply them
        output = read_output_budget(data)
        meta = request_metadata(data)
        meta[ESCALATED_KEY] = "proactive"
        meta[ORIGIN_KEY] = {"source": group, "window": source_window, "tokens": tokens}
        rest = rest_after(usable, target)
        self._arm_backstop(data, router, target, rest, target_window, estimate, output, params)
        if target_window is not None:
            rest_windows = [(g, w) for g, w in windows if g in rest]
            await self._consider_warm(data, kind, session, target_window, rest_windows, tokens, estimate.routing)

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
        """With a cache-salt secret: drop any client-sent ``cache_salt`` and record the tenant's
        salt in the request's metadata; :meth:`_apply_cache_salt` sends it to each backend that
        accepts it.

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
        data.pop("cache_salt", None)
        extra = data.get("extra_body")
        if isinstance(extra, dict):
            extra.pop("cache_salt", None)
        request_metadata(data)[SALT_KEY] = identity.cache_salt(secret, tenant)

    def _apply_cache_salt(self, kwargs: dict[str, Any], call_type: Any) -> None:
        """Send the tenant's ``cache_salt`` (vLLM prefix-cache isolation) on chat and text
        completions to providers that accept it (:data:`SALTED_PROVIDERS`); nothing is added for
        other providers or call types, whose APIs may reject unknown fields."""
        meta = kwargs.get("metadata")
        salt = meta.get(SALT_KEY) if isinstance(meta, Mapping) else None
        if not isinstance(salt, str) or call_kind(call_type) is None:
            return
        if provider_of(kwargs) not in SALTED_PROVIDERS:
            return
        identity.set_cache_salt(kwargs, salt)

    def _session(self, user_api_key_dict: Any, data: Mapping[str, Any]) -> identity.Session | None:
        try:
            return identity.session_of(data, identity.tenant_of(user_api_key_dict))
        except identity.MissingTenantError:
            logger.debug("no tenant on this key: no per-session state")
            return None

    def _chain_of(self, router: Any, group: str) -> tuple[str, ...]:
        return escalation_chain(
            group,
            overrides=self.settings.escalation_targets,
            context_window_fallbacks=getattr(router, "context_window_fallbacks", None),
        )

    def _step_params(self, router: Any, group: str, client_fallbacks: object) -> dict[str, dict[str, Any]]:
        """Per-step overrides of ``group``'s chain: the client's own ``context_window_fallbacks``
        when it sent a list (LiteLLM alone would use it for this request; only its output
        budgets are taken, a client never sets anything else through the plugin), else the
        operator's (all keys but ``model``, as LiteLLM merges them)."""
        if group in self.settings.escalation_targets:
            return {}
        if isinstance(client_fallbacks, list):
            return {
                step: {k: v for k, v in extra.items() if k in OUTPUT_FIELDS}
                for step, extra in step_params(group, client_fallbacks).items()
                if any(k in OUTPUT_FIELDS for k in extra)
            }
        return step_params(group, getattr(router, "context_window_fallbacks", None))

    def _target_groups(self, router: Any) -> set[str]:
        groups: set[str] = set()
        for name in router.model_names:
            groups.update(self._chain_of(router, name))
        return groups

    async def _allowed_chain(self, user_api_key_dict: Any, router: Any, chain: tuple[str, ...]) -> tuple[str, ...]:
        """The steps of ``chain`` that exist in the model list and the caller's key may use
        (LiteLLM's own access check; fails closed)."""
        out = []
        for group in chain:
            if group in router.model_names and await self._key_may_use(user_api_key_dict, group, router):
                out.append(group)
        return tuple(out)

    async def _chain_windows(self, router: Any, chain: tuple[str, ...], budget: RequestBudget) -> list[tuple[str, int | None]]:
        windows = await asyncio.gather(*(self._group_window(router, g, budget) for g in chain))
        return list(zip(chain, windows))

    async def _consider_warm(
        self,
        data: dict,
        kind: str,
        session: identity.Session | None,
        current_window: int,
        rest: list[tuple[str, int | None]],
        tokens: int,
        routing: int,
    ) -> None:
        """Warm the group the next escalation of this session would reach (the first step of the
        remaining chain whose window is larger than the one now serving it)."""
        target, target_window = next_step(rest, current_window, self.settings.output_floor_tokens)
        if target is None:
            return
        candidate = WarmCandidate(target, True, target_window, tokens, current_window, session, routing)
        await self.warm_gate.consider(candidate, data, kind=kind)

    def _unreachable_target_error(self, request_data: Mapping[str, Any], exc: Exception) -> Any:
        meta = request_data.get("metadata")
        if not isinstance(meta, Mapping) or meta.get(ESCALATED_KEY) != "proactive":
            return None
        origin = meta.get(ORIGIN_KEY)
        if not isinstance(origin, Mapping):
            return None
        if not _unreachable(exc):
            return None
        from fastapi import HTTPException

        source, window, tokens = origin.get("source"), origin.get("window"), origin.get("tokens")
        target = request_data.get("model")
        self._count_route("target_unreachable", str(source), str(target))
        logger.warning("[CONTEXT-ROUTE] escalation target %r unreachable (%s): answering the context-length error of %r",
                       target, type(exc).__name__, source)
        return HTTPException(
            status_code=400,
            detail=(
                f"This model's maximum context length is {window} tokens. However, your request has about {tokens} "
                f"input tokens. Please reduce the length of the messages. (litellm-kvwarm: model group {source!r} "
                f"cannot hold this request and its escalation target {target!r} could not be reached: "
                f"{type(exc).__name__})"
            ),
        )

    def _tenant_hash(self, user_api_key_dict: Any) -> str | None:
        tenant = identity.tenant_of(user_api_key_dict)
        return identity.hash_key(self.hash_secret, tenant) if tenant else None

    def _count_warm(self, outcome: WarmOutcome, target: str) -> None:
        self.warm_outcomes[outcome.value] = self.warm_outcomes.get(outcome.value, 0) + 1
        self.metrics.warms.labels(outcome.value, target).inc()

    def _count_route(self, kind: str, source: str, target: str | None) -> None:
        self.metrics.route_decisions.labels(kind, source, target or "").inc()

    def _warm_done(self, outcome: WarmOutcome, duration_s: float, target: str) -> None:
        self._count_warm(outcome, target)
        self.metrics.warm_seconds.labels(target).observe(duration_s)

    def _arm_backstop(
        self,
        data: dict,
        router: Any,
        group: str,
        chain: tuple[str, ...],
        window: int | None,
        estimate: TokenEstimate | None,
        output: OutputBudget,
        params: Mapping[str, Mapping[str, Any]],
    ) -> None:
        """Arm LiteLLM's fallbacks for this request, only when ``group`` has escalation steps
        left (``chain``: in the model list, allowed for the key, not ruled out by the client):
        a retry slot on ``group`` when the client sent an output budget, then every step of the
        chain. The generic ``fallbacks`` (for context errors LiteLLM does not recognise) are
        armed only when an overflow is possible by the safe estimate and the operator set none
        for the group; otherwise non-context failures (429, 500, timeouts) go exactly as they
        would without the plugin. With no chain, nothing is armed."""
        if not chain:
            return
        entries = fallback_chain(group, chain, output.effective, params)
        data["context_window_fallbacks"] = [{group: entries}]
        own_generic = False
        possible = (
            window is not None
            and estimate is not None
            and estimate.safe + (output.effective or self.settings.output_floor_tokens) > window
        )
        operator_generic = escalation_chain(group, overrides={}, context_window_fallbacks=getattr(router, "fallbacks", None))
        if possible and not operator_generic and data.get("fallbacks") is None:
            # LiteLLM sends context errors it does not recognise as plain 400s down the generic
            # fallbacks; the deployment hook aborts any such hop that is not a context error.
            data["fallbacks"] = [{group: entries}]
            own_generic = True
        step_output = {g: out for g in chain if (out := read_output_budget(params.get(g, {})).effective) is not None}
        plan = BackstopPlan(
            source=group, chain=chain, requested=output.effective, own_generic_fallbacks=own_generic, step_output=step_output
        )
        request_metadata(data)[PLAN_KEY] = plan.to_dict()

    async def _reactive(self, kwargs: dict[str, Any], call_type: Any, budget: RequestBudget) -> None:
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
        info = self._deployment_of(kwargs)
        prompt_count = None
        known_window = info.operator_window
        hop_window = None
        if hop_group == plan.source and error is not None:
            if info.deployment is not None:
                known_window = known_window or self.services.windows.peek(info.deployment)
                if kind == "chat" and self.settings.exact_count:
                    prompt_count = await self._exact_count(info.deployment, kwargs, provider_of(kwargs), budget)
            if prompt_count is None:
                prompt_count = self._safe_estimate(kwargs, kind, info)
        elif hop_group in plan.chain and error is not None:
            hop_window = info.operator_window
            if hop_window is None and info.deployment is not None:
                hop_window = await self.services.windows.get(info.deployment, budget)
        decision = decide_hop(
            plan=plan,
            hop_group=hop_group,
            error=error,
            prompt_count=prompt_count,
            known_window=known_window,
            output_floor_tokens=self.settings.output_floor_tokens,
            margin_tokens=self.settings.clamp_margin_tokens,
            hop_window=hop_window,
        )
        if decision.window is not None and hop_group == plan.source and info.deployment is not None and info.operator_window is None:
            self.services.windows.learn(info.deployment, decision.window)
        if decision.action is HopAction.PASS:
            return
        if decision.action is HopAction.ABORT:
            logger.info("[CONTEXT-ROUTE] reactive: %r failed with a non-context error: no retry, no escalation", plan.source)
            raise _SkipHop("not a context-length error")
        if decision.action is HopAction.SKIP:
            logger.info("[CONTEXT-ROUTE] reactive: skipping %r (%s)", hop_group, decision.reason)
            raise _SkipHop(decision.reason)
        logger.info("[CONTEXT-ROUTE] reactive: %s", decision.reason)
        self._count_route(decision.action.value, plan.source, hop_group if decision.action is HopAction.ESCALATE else plan.target)
        if decision.action is HopAction.ESCALATE:
            meta[ESCALATED_KEY] = "reactive"  # type: ignore[index]
        elif decision.max_tokens is not None:
            self.metrics.output_clamps.labels(plan.source, "reactive").inc()
        set_output(kwargs, decision.max_tokens)

    async def _clamp(self, kwargs: dict[str, Any], call_type: Any, budget: RequestBudget) -> None:
        """Lower the output budget so prompt + output fits the chosen deployment's window. Cuts
        only on an exact count (``/tokenize``), asked for only when the safe estimate says a cut
        may be needed; never on an estimate, so a request that fits keeps the budget it asked
        for, and the backstop corrects the rest with the server's own numbers."""
        kind = call_kind(call_type)
        if not self.settings.clamp_output or kind is None:
            return
        output = read_output_budget(kwargs)
        if not output.valid or output.effective is None:
            return
        info = self._deployment_of(kwargs)
        window = info.operator_window
        if window is None and info.deployment is not None:
            window = await self.services.windows.get(info.deployment, budget)
        if window is None:
            return
        requested = output.effective
        estimate = self._attempt_estimate(kwargs, kind, info)
        floor = self.settings.output_floor_tokens
        decision = clamp_output(requested=requested, prompt_tokens=estimate.safe, window=window, output_floor_tokens=floor, exact=False)
        if not decision.changed:
            return
        exact = None
        if self.settings.exact_count and info.deployment is not None and kind == "chat":
            exact = await self._exact_count(info.deployment, kwargs, provider_of(kwargs), budget)
        if exact is None:
            # No cut on an estimate: the routing estimate over-counts source code and JSON by up to
            # ~1.6x (the differential suite found cuts of answers that fit). The server's own
            # numbers correct an overflow on the backstop's retry.
            logger.debug("[CONTEXT-ROUTE] clamp skipped on %s: no exact count", kwargs.get("model"))
            return
        decision = clamp_output(
            requested=requested, prompt_tokens=exact, window=window, output_floor_tokens=floor, exact=True,
            margin_tokens=self.settings.clamp_margin_tokens,
        )
        if decision.changed and decision.max_tokens is not None:
            cap_output(kwargs, decision.max_tokens)
            logger.info("[CONTEXT-ROUTE] clamp on %s: %s", kwargs.get("model"), decision.reason)
            group = (kwargs.get("metadata") or {}).get("model_group") or str(kwargs.get("model"))
            self.metrics.output_clamps.labels(group, "exact").inc()

    # -- helpers -----------------------------------------------------------------------------

    def _attempt_estimate(self, kwargs: Mapping[str, Any], kind: str, info: Any) -> TokenEstimate:
        """The estimate of an attempt's prompt: the pre-call hook's (same payload on every hop,
        carried in the metadata), else estimated here for the attempt's deployment and raised by
        the tenant's learned factors for its group."""
        metadata = kwargs.get("metadata") or {}
        known = metadata.get(ESTIMATE_KEY)
        if isinstance(known, Mapping) and isinstance(known.get("safe"), int) and isinstance(known.get("routing"), int):
            return TokenEstimate(known["safe"], known["routing"], RequestCounts(chars=0, messages=0))
        served = (info.deployment.served_model,) if info.deployment is not None else ()
        fresh = self._estimate(kwargs, kind, served)
        group = metadata.get("model_group")
        tenant = (known or {}).get("tenant") if isinstance(known, Mapping) else None
        if self.settings.learn_from_usage and isinstance(group, str) and isinstance(tenant, str):
            fresh = self.correction.apply(group, tenant, fresh)
        return fresh

    def _safe_estimate(self, kwargs: Mapping[str, Any], kind: str, info: Any) -> int:
        return self._attempt_estimate(kwargs, kind, info).safe

    def _deployment_of(self, kwargs: Mapping[str, Any]) -> Any:
        return catalog.deployment_info(
            {"api_base": kwargs.get("api_base"), "model": kwargs.get("model"), "api_key": kwargs.get("api_key")},
            kwargs.get("model_info"),
            secret=resolve_secret,
        )

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
        return tuple(i.deployment.served_model for i in self._group_infos(router, group) if i.deployment is not None)

    def _group_infos(self, router: Any, group: str) -> list[Any]:
        return catalog.group_deployments(router.get_model_list(model_name=group) or [], secret=resolve_secret)

    async def _group_window(self, router: Any, group: str, budget: RequestBudget) -> int | None:
        """Smallest window of the group's deployments (operator's ``max_input_tokens`` first),
        waiting for discovery at most what is left of the request's budget."""
        infos = self._group_infos(router, group)
        operator = [info.operator_window for info in infos if info.operator_window is not None]
        windows = self.services.windows
        pending = [info.deployment for info in infos if info.operator_window is None and info.deployment]
        discovered = [windows.lookup(d) for d in pending]  # cached: no await, no event-loop round trip
        missed = [d for d, w in zip(pending, discovered) if w is MISS]
        if missed:
            fetched = iter(await asyncio.gather(*(windows.get(d, budget) for d in missed)))
            discovered = [next(fetched) if w is MISS else w for w in discovered]
        return catalog.combine_windows([*operator, *discovered])

    async def _exact_count_for_group(self, router: Any, group: str, data: Mapping[str, Any], budget: RequestBudget) -> int | None:
        """Exact prompt tokens on the group's smallest-window deployment that offers /tokenize."""
        entries = router.get_model_list(model_name=group) or []
        infos = self._group_infos(router, group)
        candidates = [(i.deployment, provider_of(e.get("litellm_params") or {})) for i, e in zip(infos, entries)
                      if i.deployment is not None]
        candidates.sort(key=lambda c: self.services.windows.peek(c[0]) or float("inf"))
        for deployment, provider in candidates[:1]:
            return await self._exact_count(deployment, data, provider, budget)
        return None

    async def _exact_count(self, deployment: Any, payload: Mapping[str, Any], provider: str | None, budget: RequestBudget) -> int | None:
        """``/tokenize`` count of the messages as LiteLLM will send them to ``provider`` (its own
        translation: e.g. every provider but OpenAI/Azure gets ``developer`` as ``system``, which
        a chat template renders differently)."""
        messages = payload.get("messages")
        if isinstance(messages, list) and provider:
            translated = litellm_messages(messages, provider, deployment.served_model)
            if translated is not messages:
                payload = {**payload, "messages": translated}
        return await self.services.exact.count(deployment, payload, budget)

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

    def _scrape_targets(self) -> list[Any]:
        """Every deployment of the model list that has an ``api_base`` (once each, with its key)."""
        router = self._router_getter()
        infos = catalog.group_deployments(getattr(router, "model_list", None) or [], secret=resolve_secret)
        return list(dict.fromkeys(i.deployment for i in infos if i.deployment is not None))

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
        """Feed :attr:`correction` with a response its own group served (not escalated, not a
        warm), under the tenant that sent it; export each touched group's summary (no tenants)."""
        obs = usage_observation(kwargs, response_obj)
        if obs is None:
            return
        for group in self.correction.observe(
            obs.group, obs.tenant, routing=obs.raw_routing, safe=obs.raw_safe, prompt_tokens=obs.prompt_tokens
        ):
            summary = self.correction.summary(group)
            self.metrics.estimate_correction.labels(group, "routing").set(summary.routing)
            self.metrics.estimate_correction.labels(group, "safe").set(summary.safe)
            self.metrics.estimate_correction_tenants.labels(group).set(summary.tenants)

    async def _send_warm(self, kind: str, body: dict[str, Any]) -> Any:
        router = self._router_getter()
        if router is None:
            raise RuntimeError("LiteLLM router is gone")
        if kind == "completion":
            return await router.atext_completion(**body)
        return await router.acompletion(**body)

    async def aclose(self) -> None:
        """Cancel every background task and close every client (see :class:`Services`)."""
        await self.services.aclose()

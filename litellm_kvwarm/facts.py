"""Facts of one request, gathered once before anything is decided (async; I/O through injected services).

Pre-call (:meth:`Facts.route`): the group's deployments (one router read per group), the escalation chain and the
steps the caller may use (LiteLLM's access and fallback budget checks), the windows of the group and of those steps,
the estimate, and an exact ``/tokenize`` count where :func:`~litellm_kvwarm.planner.wants_exact_count` asks for one.
Per attempt (:class:`AttemptFacts`): the chosen deployment, its window, the estimate and exact counts.

The router is read through :class:`~litellm_kvwarm.router_view.RouterView` (LiteLLM 1.109's entry
points where it has them, the 1.108 members before). The window of a deployment is read in one
place, :class:`~litellm_kvwarm.facts_windows.DeploymentWindows` (operator → learned → the plugin's
cache → LiteLLM's discovered window → the plugin's own fetch); the estimator in one place too,
:mod:`~litellm_kvwarm.facts_estimator`. Nothing here imports LiteLLM: its access check, secret
resolver and message translation are injected."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import catalog
from .catalog import DeploymentInfo
from .chain import escalation_chain, step_params
from .config import Settings
from .correction import EstimateCorrection
from .deadline import RequestBudget
from .facts_estimator import EstimatorMemo
from .facts_groups import GroupFacts, GroupMemo, TargetGroupsMemo, target_groups  # noqa: F401 (target_groups re-exported)
from .facts_windows import DeploymentWindows
from .litellm_window_memo import LiteLLMWindowMemo
from .output_budget import OUTPUT_FIELDS
from .planner import wants_exact_count
from .client_fallbacks import ABSENT, operator_lists, permitted_steps
from .router_view import RouterView
from .runtime import Services
from .token_responses_items import vllm_served
from .tokens import Estimator, TokenEstimate, estimate_request
from .view import AttemptView, PreCallView, provider_of
from .windows import Deployment

#: LiteLLM's ``Router`` (1.108.x or 1.109.x), read only through :class:`RouterView`.
RouterLike = Any

#: LiteLLM's access check: may this key use that group? (``False`` also when it cannot tell.)
MayUse = Callable[[Any, str, Any], Awaitable[bool]]
#: ``messages`` as LiteLLM rewrites them for ``(provider, served model, api_base, model_info, tool_messages)`` before
#: sending; ``tool_messages``: its chat path's rewrite of tool messages applies (not a Responses body sent natively).
Translate = Callable[[list, str, str, "str | None", object, bool], list]
#: ``(kind, body)`` → the chat body LiteLLM would send for it, ``None`` when it cannot tell.
ToChat = Callable[[str, Mapping[str, Any]], "Mapping[str, Any] | None"]


@dataclass(frozen=True)
class RouteFacts:
    """Everything the pre-call planner reads besides the view (tokens; windows are ``max_model_len``).

    ``listed``: the group is in the model list (else nothing else is gathered; the same when the
    client's output budget is invalid). ``chain``: the operator's escalation chain; ``chain_missing``:
    none of its steps is in the model list; ``usable``: the steps that are, that the key may use and the client's own
    fallback choice leaves (:mod:`.client_fallbacks`; ``client_ruled_out``: it left none of some); ``step_params``: each
    step's overrides; ``operator_fallbacks``: the generic ``fallbacks`` (the key's or team's, else the router's:
    :func:`~.client_fallbacks.operator_lists`), ``request_cwf``: the ``context_window_fallbacks`` LiteLLM alone reads
    for it (the body's, else the operator's). From ``source_window`` on: ``None`` when the group's window is unknown.
    ``estimate`` is ``raw`` after the tenant's learned correction; ``exact_asked``: an exact count was wanted,
    ``exact``: its answer (``None``: not countable or no answer); ``windows``: ``(step, window)`` of ``usable``, in order."""

    listed: bool
    chain: tuple[str, ...] = ()
    chain_missing: bool = False
    usable: tuple[str, ...] = ()
    step_params: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    operator_fallbacks: object = None
    request_cwf: object = None
    client_ruled_out: bool = False
    source_window: int | None = None
    estimate: TokenEstimate | None = None
    raw_estimate: TokenEstimate | None = None
    tenant_hash: str | None = None
    exact_asked: bool = False
    exact: int | None = None
    windows: tuple[tuple[str, int | None], ...] = ()


def scrape_targets(router: RouterLike | None, secret: catalog.SecretResolver) -> list[Deployment]:
    """Every deployment of the model list that has an ``api_base`` (once each, with its key)."""
    infos = catalog.group_deployments(RouterView(router).model_list() if router is not None else [], secret=secret)
    return list(dict.fromkeys(i.deployment for i in infos if i.deployment is not None))


class Facts:
    """Gathers the facts of requests for one handler.

    Args:
        settings: plugin settings. services: the window cache and exact counter.
        correction: learned estimate factors. may_use / translate / secret: LiteLLM's access
        check, message translation and secret resolver (from the bridge). hash_key: keyed hash of a tenant.
        router_getter: LiteLLM's Router, for the per-attempt facts (LiteLLM's discovered windows).
    """

    def __init__(self, settings: Settings, services: Services, correction: EstimateCorrection, *,
                 may_use: MayUse, translate: Translate, secret: catalog.SecretResolver, hash_key: Callable[[str], str],
                 router_getter: Callable[[], RouterLike | None] | None = None, to_chat: ToChat | None = None,
                 native_messages: Callable[[str, str | None], bool] = lambda m, p: False):
        self.settings, self.services, self.correction, self.secret = settings, services, correction, secret
        self._native_messages = native_messages
        self._may_use, self._translate, self._hash_key = may_use, translate, hash_key
        self._to_chat = to_chat
        self.router_getter = router_getter
        self._estimators = EstimatorMemo()
        self._groups = GroupMemo()
        self._litellm_windows = LiteLLMWindowMemo()
        #: the groups escalations reach, for session pinning (:class:`TargetGroupsMemo`)
        self.targets = TargetGroupsMemo()

    def router(self) -> RouterLike | None:
        """LiteLLM's Router now (``None``: no getter known yet, or no router)."""
        return self.router_getter() if self.router_getter is not None else None

    def windows(self, router: RouterLike | None, tenant: str | None = None) -> DeploymentWindows:
        """The window reader of one request (:mod:`.facts_windows`) with ``tenant``'s (hashed) learned limits."""
        return DeploymentWindows(self.services.windows, router, window_ttl_s=self.settings.window_ttl_s,
                                 learned=self.services.learned, tenant=tenant, litellm_windows=self._litellm_windows)

    def bridged(self, group: str, kind: str) -> bool:
        """Whether a ``kind`` warm to ``group`` renders only what its bridge sends (the route's view, :meth:`GroupFacts.bridged`)."""
        router = self.router()
        return router is None or self.group(router, group).bridged(kind)

    def group(self, router: RouterLike, name: str) -> GroupFacts:
        """The group's deployments: one router read (:meth:`RouterView.deployments`), parsed again
        only when a field they are read from changed (:class:`GroupMemo`, compared by value)."""
        entries = [e for e in RouterView(router).deployments(name) if isinstance(e.get("litellm_params"), Mapping)]
        return self._groups.get(name, entries, lambda: GroupFacts(
            infos=tuple(catalog.group_deployments(entries, secret=self.secret)),
            providers=tuple(provider_of(e["litellm_params"]) for e in entries),
            messages_bridged=not entries or any(not self._native_messages(
                str(e["litellm_params"].get("model") or "").split("/", 1)[-1], provider_of(e["litellm_params"])) for e in entries),
            responses_bridged=not entries or any(vllm_served(provider_of(e["litellm_params"]), e["litellm_params"].get("api_base"))
                                                 for e in entries),
        ))

    def estimator(self, served_models: Sequence[str] = ()) -> Estimator:
        """The configured estimator; calibrated weights of the deployments' family when they agree;
        images priced by the served models' vision rule (:mod:`.facts_estimator`). Built once per
        set of served models (estimators are frozen) while the settings are the same object."""
        return self._estimators.get(self.settings, served_models)

    def chat_payload(self, kind: str | None, payload: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """The chat-completions body ``/tokenize`` counts for a request of ``kind``: a chat body as
        it is; Anthropic Messages and Responses bodies translated by LiteLLM's own adapters (the
        bridge); ``None`` when it cannot be counted (text completions, a failed translation)."""
        if kind == "chat":
            return payload
        if kind in ("messages", "responses") and self._to_chat is not None:
            return self._to_chat(kind, payload)
        return None

    async def exact_count(self, deployment: Deployment, payload: Mapping[str, Any], provider: str | None, budget: RequestBudget,
                          model_info: object = None, tenant: str | None = None, kind: str | None = "chat") -> int | None:
        """``/tokenize`` count of the messages as LiteLLM will send them to ``provider`` (its rewrites: ``developer`` to ``system``,
        a tool message's images moved out; not the latter for ``kind`` ``"responses"``, sent as items to ``/v1/responses``)."""
        messages = payload.get("messages")
        if isinstance(messages, list) and provider:
            translated = self._translate(messages, provider, deployment.served_model, deployment.api_base, model_info, kind != "responses")
            if translated is not messages:
                payload = {**payload, "messages": translated}
        return await self.services.exact.count(deployment, payload, budget, tenant)

    async def route(self, view: PreCallView, router_getter: Callable[[], RouterLike | None], budget: RequestBudget) -> RouteFacts:
        """The facts of a pre-call request (see :class:`RouteFacts`), in the order they were always
        gathered: access checks, the group's window, estimate, exact count, the steps' windows."""
        group, s = view.group, self.settings
        if view.adapter is None or group is None:
            return RouteFacts(listed=False)
        router = router_getter()
        rv = RouterView(router)
        names = rv.names() if router is not None else ()
        if group not in names:
            return RouteFacts(listed=False)
        if not view.output.valid:
            return RouteFacts(listed=True)
        operator_cwf, operator_fallbacks = operator_lists(view.payload, rv.context_window_fallbacks(), rv.fallbacks())
        chain = escalation_chain(group, overrides=s.escalation_targets, context_window_fallbacks=operator_cwf)
        allowed = [g for g in chain if g in names and await self._key_may_use(view.key, g, router)]
        request_cwf = operator_cwf if (own := view.fallback_choice.context_window_fallbacks) is ABSENT else own
        usable = permitted_steps(view.fallback_choice, group, allowed, operator_cwf, operator_fallbacks)  # as LiteLLM alone reads it
        chain_missing, params = all(g not in names for g in chain), self._step_params(group, view.client_fallbacks, operator_cwf)
        tenant = self._hash_key(view.tenant) if view.tenant else None
        source, windows = self.group(router, group), self.windows(router, tenant)
        window = await windows.route_window(source.infos, budget, s.output_floor_tokens)
        if window is None:
            return RouteFacts(listed=True, chain=chain, chain_missing=chain_missing, usable=usable, step_params=params, request_cwf=request_cwf,
                              operator_fallbacks=operator_fallbacks, client_ruled_out=bool(allowed) and not usable)
        raw = estimate_request(view.payload, call_kind=view.kind, estimator=self.estimator(source.served_models),
                               bridged=source.bridged(view.kind))
        estimate = self.correction.apply(group, tenant, raw) if s.learn_from_usage and tenant else raw
        # the raw estimate asks too: a learned factor alone (a tenant's other traffic) never decides an escalation a count could settle
        asked = s.exact_count and (raw.counts.template_dependent or wants_exact_count(estimate, s.output_floor_tokens, window, chain)
                                   or (estimate is not raw and wants_exact_count(raw, s.output_floor_tokens, window, chain)))
        countable = self.chat_payload(view.kind, view.payload) if asked and view.adapter.exact_countable else None
        exact = await self._exact_for_group(source, windows, countable, budget, tenant, view.kind) if countable is not None else None
        steps = await self._step_windows(router, windows, usable, budget)
        # one RouteFacts, built once (not a base then ``dataclasses.replace``: that built it twice, per request)
        return RouteFacts(listed=True, chain=chain, chain_missing=chain_missing, usable=usable, step_params=params, request_cwf=request_cwf,
                          operator_fallbacks=operator_fallbacks, client_ruled_out=bool(allowed) and not usable,
                          source_window=window, estimate=estimate, raw_estimate=raw,
                          tenant_hash=tenant, exact_asked=asked, exact=exact, windows=tuple(zip(usable, steps)))

    async def _step_windows(self, router: RouterLike, windows: DeploymentWindows, usable: Sequence[str],
                            budget: RequestBudget) -> list[int | None]:
        """The window of each usable step, discovered concurrently (one step, the usual chain: awaited
        directly, no task)."""
        floor = self.settings.output_floor_tokens
        if len(usable) == 1:
            return [await windows.route_window(self.group(router, usable[0]).infos, budget, floor)]
        return list(await asyncio.gather(*(windows.route_window(self.group(router, g).infos, budget, floor) for g in usable)))

    async def _key_may_use(self, key: Any, group: str, router: RouterLike) -> bool:
        return key is not None and await self._may_use(key, group, router)

    def _step_params(self, group: str, client_fallbacks: object, operator_cwf: object) -> dict[str, dict[str, Any]]:
        """Per-step overrides of ``group``'s chain: the client's own ``context_window_fallbacks``
        when it sent a list (LiteLLM alone would use it for this request; only its output budgets
        are taken, a client never sets anything else through the plugin), else the operator's
        (all keys but ``model``, as LiteLLM merges them)."""
        if group in self.settings.escalation_targets:
            return {}
        if isinstance(client_fallbacks, list):
            return {
                step: {k: v for k, v in extra.items() if k in OUTPUT_FIELDS}
                for step, extra in step_params(group, client_fallbacks).items()
                if any(k in OUTPUT_FIELDS for k in extra)
            }
        return step_params(group, operator_cwf)

    async def _exact_for_group(self, group: GroupFacts, windows: DeploymentWindows, payload: Mapping[str, Any],
                               budget: RequestBudget, tenant: str | None = None, kind: str | None = "chat") -> int | None:
        """Exact prompt tokens on the group's smallest-window deployment (by discovered window:
        the plugin's or LiteLLM's)."""
        candidates = [(i, p) for i, p in zip(group.infos, group.providers) if i.deployment is not None]
        candidates.sort(key=lambda c: windows.discovered(c[0]) or float("inf"))
        for info, provider in candidates[:1]:
            return await self.exact_count(info.deployment, payload, provider, budget, tenant=tenant, kind=kind)  # type: ignore[arg-type]
        return None


class AttemptFacts:
    """The facts of one backend attempt, each read at most once: its deployment and estimate."""

    def __init__(self, facts: Facts, view: AttemptView):
        self._facts, self.view = facts, view
        self._info: DeploymentInfo | None = None
        self._estimates: dict[str, TokenEstimate] = {}

    @property
    def info(self) -> DeploymentInfo:
        """The attempt's deployment (endpoint and operator window)."""
        if self._info is None:
            self._info = catalog.deployment_info(self.view.deployment_params, self.view.model_info, secret=self._facts.secret)
        return self._info

    def windows(self) -> DeploymentWindows:
        """The attempt's window reader (LiteLLM's discovered windows from the facts' router)."""
        return self._facts.windows(self._facts.router(), self.view.carried.tenant)

    async def window(self, budget: RequestBudget) -> int | None:
        """The deployment's window (tokens), discovered within ``budget`` when not known."""
        return await self.windows().get(self.info, budget)

    def known_window(self) -> int | None:
        """The deployment's window known now (tokens), without I/O (:meth:`DeploymentWindows.known`)."""
        return self.windows().known(self.info)

    def estimate(self, kind: str) -> TokenEstimate:
        """The estimate of the prompt: the pre-call hook's (the same payload on every hop), else
        estimated here for this deployment and raised by the tenant's learned factors."""
        if kind not in self._estimates:
            self._estimates[kind] = self._estimate(kind)
        return self._estimates[kind]

    def _estimate(self, kind: str) -> TokenEstimate:
        state = self.view.carried
        if state.estimate is not None:
            return state.estimate
        info, facts = self.info, self._facts
        served = (info.deployment.served_model,) if info.deployment is not None else ()
        fresh = estimate_request(self.view.payload, call_kind=kind, estimator=facts.estimator(served))
        if facts.settings.learn_from_usage and state.model_group is not None and state.estimate_tenant is not None:
            fresh = facts.correction.apply(state.model_group, state.estimate_tenant, fresh)
        return fresh

    async def exact_count(self, budget: RequestBudget) -> int | None:
        """``/tokenize`` count of the attempt's prompt on its deployment (``None``: no endpoint or no answer)."""
        payload = self._facts.chat_payload(self.view.kind, self.view.payload)
        if self.info.deployment is None or payload is None:
            return None
        return await self._facts.exact_count(self.info.deployment, payload, self.view.provider, budget, self.view.model_info,
                                             tenant=self.view.carried.tenant, kind=self.view.kind)


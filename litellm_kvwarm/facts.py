"""Facts of one request, gathered once before anything is decided (async; I/O through injected services).

Pre-call (:meth:`Facts.route`): the group's deployments (one ``router.get_model_list`` call per
group), the escalation chain and the steps the caller may use (LiteLLM's access check), the
windows of the group and of those steps, the estimate, and an exact ``/tokenize`` count where
:func:`~litellm_kvwarm.planner.wants_exact_count` asks for one. Per attempt
(:class:`AttemptFacts`): the chosen deployment, its window, the estimate and exact counts.

The window of one deployment is read in one place, :func:`cached_window` (the seam where
LiteLLM's own discovered ``model_info`` windows can be wired in); nothing here imports LiteLLM:
its access check, secret resolver and message translation are injected.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from . import catalog
from .catalog import DeploymentInfo
from .chain import escalation_chain, step_params
from .config import Settings
from .correction import EstimateCorrection
from .deadline import RequestBudget
from .output_budget import OUTPUT_FIELDS
from .planner import wants_exact_count
from .reactive import allowed_by_client
from .runtime import Services
from .tokens import Estimator, RatioEstimator, TokenEstimate, calibrated_estimator, estimate_request, family_of
from .view import AttemptView, PreCallView, provider_of
from .windows import MISS, Deployment, Miss, WindowCache


class RouterLike(Protocol):
    """What the plugin reads of LiteLLM's ``Router``."""

    model_names: Any
    model_list: Any
    context_window_fallbacks: Any
    fallbacks: Any

    def get_model_list(self, model_name: str) -> Any: ...


#: LiteLLM's access check: may this key use that group? (``False`` also when it cannot tell.)
MayUse = Callable[[Any, str, Any], Awaitable[bool]]
#: ``messages`` as LiteLLM rewrites them for ``(provider, served model)`` before sending.
Translate = Callable[[list, str, str, "str | None", object], list]


@dataclass(frozen=True)
class GroupFacts:
    """One model group's well-formed deployments and each one's LiteLLM provider."""

    infos: tuple[DeploymentInfo, ...]
    providers: tuple[str | None, ...]

    @property
    def served_models(self) -> tuple[str, ...]:
        return tuple(i.deployment.served_model for i in self.infos if i.deployment is not None)


@dataclass(frozen=True)
class RouteFacts:
    """Everything the pre-call planner reads besides the view (tokens; windows are ``max_model_len``).

    ``listed``: the group is in the model list (else nothing else is gathered; the same when the
    client's output budget is invalid). ``chain``: the operator's escalation chain; ``chain_missing``:
    none of its steps is in the model list; ``usable``: the steps that are, that the key may use
    and the client did not rule out; ``step_params``: each step's overrides; ``operator_fallbacks``:
    the router's generic ``fallbacks``. From ``source_window`` on: ``None`` when the group's window
    is unknown. ``estimate`` is ``raw`` after the tenant's learned correction; ``exact_asked``:
    an exact count was wanted, ``exact``: its answer (``None``: not countable or no answer);
    ``windows``: ``(step, window)`` of ``usable``, in order."""

    listed: bool
    chain: tuple[str, ...] = ()
    chain_missing: bool = False
    usable: tuple[str, ...] = ()
    step_params: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    operator_fallbacks: object = None
    source_window: int | None = None
    estimate: TokenEstimate | None = None
    raw_estimate: TokenEstimate | None = None
    tenant_hash: str | None = None
    exact_asked: bool = False
    exact: int | None = None
    windows: tuple[tuple[str, int | None], ...] = ()


def known_window(info: DeploymentInfo) -> int | None:
    """THE SEAM for a deployment's window known without the plugin's own discovery (tokens): today
    the operator's ``model_info.max_input_tokens``; the place to add the windows LiteLLM itself
    discovered. ``None``: discover it (:func:`deployment_window`)."""
    return info.operator_window


def cached_window(info: DeploymentInfo, cache: WindowCache) -> int | None | Miss:
    """A deployment's window without waiting: :func:`known_window`, else the discovery cache
    (:data:`MISS`: not cached); ``None`` without an endpoint."""
    window = known_window(info)
    if window is not None or info.deployment is None:
        return window
    return cache.lookup(info.deployment)


async def deployment_window(info: DeploymentInfo, cache: WindowCache, budget: RequestBudget) -> int | None:
    """A deployment's window: :func:`known_window`, else discovered within ``budget``
    (:meth:`WindowCache.get`); ``None`` when unknown or without an endpoint."""
    window = known_window(info)
    if window is not None or info.deployment is None:
        return window
    return await cache.get(info.deployment, budget)


async def group_window(group: GroupFacts, cache: WindowCache, budget: RequestBudget) -> int | None:
    """The smallest known window of the group's deployments (any may be picked); the misses are
    discovered side by side, the cached ones without an event-loop round trip."""
    known = [cached_window(i, cache) for i in group.infos]
    missed = [i for i, w in zip(group.infos, known) if w is MISS]
    if missed:
        fetched = iter(await asyncio.gather(*(deployment_window(i, cache, budget) for i in missed)))
        known = [next(fetched) if w is MISS else w for w in known]
    return catalog.combine_windows(w for w in known if not isinstance(w, Miss))


def target_groups(router: RouterLike, overrides: Mapping[str, str]) -> set[str]:
    """Every group some group of the model list escalates to."""
    groups: set[str] = set()
    for name in router.model_names:
        groups.update(escalation_chain(name, overrides=overrides, context_window_fallbacks=getattr(router, "context_window_fallbacks", None)))
    return groups


def scrape_targets(router: RouterLike | None, secret: catalog.SecretResolver) -> list[Deployment]:
    """Every deployment of the model list that has an ``api_base`` (once each, with its key)."""
    infos = catalog.group_deployments(getattr(router, "model_list", None) or [], secret=secret)
    return list(dict.fromkeys(i.deployment for i in infos if i.deployment is not None))


class Facts:
    """Gathers the facts of requests for one handler.

    Args:
        settings: plugin settings. services: the window cache and exact counter.
        correction: learned estimate factors. may_use / translate / secret: LiteLLM's access
        check, message translation and secret resolver (from the bridge). hash_key: keyed hash of a tenant.
    """

    def __init__(self, settings: Settings, services: Services, correction: EstimateCorrection, *,
                 may_use: MayUse, translate: Translate, secret: catalog.SecretResolver, hash_key: Callable[[str], str]):
        self.settings, self.services, self.correction, self.secret = settings, services, correction, secret
        self._may_use, self._translate, self._hash_key = may_use, translate, hash_key

    def group(self, router: RouterLike, name: str) -> GroupFacts:
        """The group's deployments: one ``get_model_list`` call."""
        entries = [e for e in router.get_model_list(model_name=name) or [] if isinstance(e, Mapping) and isinstance(e.get("litellm_params"), Mapping)]
        return GroupFacts(
            infos=tuple(catalog.group_deployments(entries, secret=self.secret)),
            providers=tuple(provider_of(e["litellm_params"]) for e in entries),
        )

    def estimator(self, served_models: Sequence[str] = ()) -> Estimator:
        """The configured estimator; calibrated weights of the deployments' family when they agree."""
        s = self.settings
        if s.estimator == "ratio":
            return RatioEstimator(s.safe_chars_per_token, s.routing_chars_per_token)
        if s.estimator_family:
            return calibrated_estimator(s.estimator_family)
        families = {family_of(m) for m in served_models}
        return calibrated_estimator(families.pop() if len(families) == 1 else "any")

    async def exact_count(self, deployment: Deployment, payload: Mapping[str, Any], provider: str | None, budget: RequestBudget,
                          model_info: object = None) -> int | None:
        """``/tokenize`` count of the messages as LiteLLM will send them to ``provider`` (its own
        translation: e.g. ``developer`` becomes ``system`` for all but OpenAI/Azure)."""
        messages = payload.get("messages")
        if isinstance(messages, list) and provider:
            translated = self._translate(messages, provider, deployment.served_model, deployment.api_base, model_info)
            if translated is not messages:
                payload = {**payload, "messages": translated}
        return await self.services.exact.count(deployment, payload, budget)

    async def route(self, view: PreCallView, router_getter: Callable[[], RouterLike | None], budget: RequestBudget) -> RouteFacts:
        """The facts of a pre-call request (see :class:`RouteFacts`), in the order they were always
        gathered: access checks, the group's window, estimate, exact count, the steps' windows."""
        group, s = view.group, self.settings
        if view.adapter is None or group is None:
            return RouteFacts(listed=False)
        router = router_getter()
        if router is None or group not in router.model_names:
            return RouteFacts(listed=False)
        if not view.output.valid:
            return RouteFacts(listed=True)
        operator_cwf = getattr(router, "context_window_fallbacks", None)
        chain = escalation_chain(group, overrides=s.escalation_targets, context_window_fallbacks=operator_cwf)
        allowed = [g for g in chain if g in router.model_names and await self._key_may_use(view.key, g, router)]
        usable = allowed_by_client(view.client_fallbacks, group, allowed)
        base = RouteFacts(
            listed=True, chain=chain, chain_missing=all(g not in router.model_names for g in chain), usable=usable,
            step_params=self._step_params(group, view.client_fallbacks, operator_cwf),
            operator_fallbacks=getattr(router, "fallbacks", None),
        )
        source = self.group(router, group)
        window = await group_window(source, self.services.windows, budget)
        if window is None:
            return base
        tenant = self._hash_key(view.tenant) if view.tenant else None
        raw = estimate_request(view.payload, call_kind=view.kind, estimator=self.estimator(source.served_models))
        estimate = self.correction.apply(group, tenant, raw) if s.learn_from_usage and tenant else raw
        asked = s.exact_count and wants_exact_count(estimate, s.output_floor_tokens, window, chain)
        exact = await self._exact_for_group(source, view.payload, budget) if asked and view.adapter.exact_countable else None
        windows = await asyncio.gather(*(group_window(self.group(router, g), self.services.windows, budget) for g in usable))
        return replace(base, source_window=window, estimate=estimate, raw_estimate=raw, tenant_hash=tenant,
                       exact_asked=asked, exact=exact, windows=tuple(zip(usable, windows)))

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

    async def _exact_for_group(self, group: GroupFacts, payload: Mapping[str, Any], budget: RequestBudget) -> int | None:
        """Exact prompt tokens on the group's smallest-window deployment (by discovered window)."""
        candidates = [(i.deployment, p) for i, p in zip(group.infos, group.providers) if i.deployment is not None]
        candidates.sort(key=lambda c: self.services.windows.peek(c[0]) or float("inf"))
        for deployment, provider in candidates[:1]:
            return await self.exact_count(deployment, payload, provider, budget)
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

    async def window(self, budget: RequestBudget) -> int | None:
        """The deployment's window (tokens), discovered within ``budget`` when not known."""
        return await deployment_window(self.info, self._facts.services.windows, budget)

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
        if self.info.deployment is None:
            return None
        return await self._facts.exact_count(self.info.deployment, self.view.payload, self.view.provider, budget,
                                             self.view.model_info)


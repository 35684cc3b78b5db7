"""One request as the plugin sees it, validated once at the entry of each hook (pure).

LiteLLM hands hooks loose inputs: the body (``data`` in the proxy's pre-call hook, ``kwargs`` per
backend attempt), a ``call_type``, the caller's key object and ``metadata``. Each hook turns them
into one frozen view here; nothing after that reads the raw inputs again (only the effects write
into them). The views hold:

* the call kind and its :class:`CallAdapter` (what the plugin knows about that API);
* the model group, the output budget (:mod:`~litellm_kvwarm.output_budget`), the stream flag;
* the payload the estimator and ``/tokenize`` read (a read-only shallow snapshot of the body);
* the tenant and session (:mod:`~litellm_kvwarm.identity`);
* the plugin's own state carried from earlier hooks (:class:`Carried`; keys of :mod:`~litellm_kvwarm.meta`).

**Adding an API** means one more :class:`CallAdapter` in :data:`ADAPTERS` (its LiteLLM call types,
output field, metadata field, whether ``/tokenize`` can count its prompt), a counter in
:mod:`~litellm_kvwarm.token_counts_agents` and its prompt keys in :mod:`~litellm_kvwarm.warm_body`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from . import identity
from .client_fallbacks import FallbackChoice
from .conversation_shape import body_well_formed
from .call_adapters import ADAPTERS, CallAdapter, adapter_for, call_kind
from .meta import (
    AFFINITY_KEY, BUDGET_KEY, ESCALATED_KEY, ESTIMATE_KEY, METADATA_FIELDS, ORIGIN_KEY, PLAN_KEY, SALT_KEY, ARRIVAL_KEY,
    SKIP_SOURCE_KEY, TENANT_KEY, holds_state,
)
from .output_budget import OUTPUT_FIELDS, OutputBudget, read_output_budget
from .reactive import BackstopPlan, backend_error_text, last_attempt
from .tokens import RequestCounts, TokenEstimate

__all__ = [
    "ADAPTERS", "AttemptView", "CallAdapter", "Carried", "FailureView", "PreCallView", "adapter_for", "affinity_of",
    "attempt_view", "call_kind", "carried", "failure_view", "plugin_metadata_field", "pre_call_view", "provider_of",
]


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


def _int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class Carried:
    """The plugin's own state written into ``metadata`` by earlier hooks of this request (client
    copies are stripped at entry, so these are the plugin's). Absent or malformed: ``None``.

    ``estimate``: the pre-call estimate (tokens, ``ESTIMATE_KEY``); ``estimate_tenant``: the hashed
    tenant stored with it; ``estimate_group``/``estimate_window``: the group it was routed in and that
    group's routing window then (tokens, the smallest of its deployments'); ``plan``: the armed backstop (``PLAN_KEY``); ``budget_spent``: the raw
    ``BUDGET_KEY`` value (seconds; :meth:`RequestBudget.from_metadata` validates it); ``escalated``:
    ``"proactive"`` / ``"reactive"``; ``origin``: ``ORIGIN_KEY`` (source group, its window, the
    prompt tokens); ``salt``: the tenant's ``cache_salt``; ``affinity``: the session's rendezvous
    key; ``model_group``: LiteLLM's group of this attempt; ``previous_error``: the last backend
    error of the fallback hops so far (``previous_models``); ``skip_source``: the target of a
    proactive escalation made by skipping the source group's first attempt (``SKIP_SOURCE_KEY``);
    ``tenant``: the keyed hash of the request's tenant (``TENANT_KEY``), the scope of learned limits;
    ``previous_attempt``: LiteLLM's record of the attempt that failed last (``previous_models``); ``session``: the
    request's (session hash, items) written beside its backstop (``ARRIVAL_KEY``)."""

    estimate: TokenEstimate | None = None
    estimate_tenant: str | None = None
    estimate_group: str | None = None
    estimate_window: int | None = None
    plan: BackstopPlan | None = None
    budget_spent: object = None
    escalated: str | None = None
    origin: Mapping[str, Any] | None = None
    salt: str | None = None
    affinity: str | None = None
    model_group: str | None = None
    previous_error: str | None = None
    skip_source: str | None = None
    tenant: str | None = None
    previous_attempt: Mapping[str, Any] | None = None
    session: tuple[str, int] | None = None


def _arrival(value: object) -> tuple[str, int] | None:
    if isinstance(value, Mapping) and isinstance(value.get("hash"), str) and _int(value.get("items")) and value["items"] > 0:
        return value["hash"], value["items"]
    return None


def carried(meta: object) -> Carried:
    """:class:`Carried` of one ``metadata`` mapping (anything else: all ``None``)."""
    if not isinstance(meta, Mapping):
        return Carried()
    known = meta.get(ESTIMATE_KEY)
    estimate = tenant = estimate_group = estimate_window = None
    if isinstance(known, Mapping):
        if isinstance(known.get("safe"), int) and isinstance(known.get("routing"), int):
            estimate = TokenEstimate(known["safe"], known["routing"], RequestCounts(chars=0, messages=0))
        tenant = known.get("tenant") if isinstance(known.get("tenant"), str) else None
        estimate_group = known.get("group") if isinstance(known.get("group"), str) else None
        estimate_window = known.get("window") if _int(known.get("window")) else None
    origin = meta.get(ORIGIN_KEY)
    group = meta.get("model_group")
    return Carried(
        estimate=estimate,
        estimate_tenant=tenant,
        estimate_group=estimate_group,
        estimate_window=estimate_window,
        plan=BackstopPlan.from_dict(meta.get(PLAN_KEY)),
        budget_spent=meta.get(BUDGET_KEY),
        escalated=meta[ESCALATED_KEY] if isinstance(meta.get(ESCALATED_KEY), str) else None,
        origin=MappingProxyType(dict(origin)) if isinstance(origin, Mapping) else None,
        salt=meta[SALT_KEY] if isinstance(meta.get(SALT_KEY), str) else None,
        affinity=meta[AFFINITY_KEY] if isinstance(meta.get(AFFINITY_KEY), str) else None,
        model_group=group if isinstance(group, str) else None,
        previous_error=backend_error_text(meta.get("previous_models")),
        skip_source=meta[SKIP_SOURCE_KEY] if isinstance(meta.get(SKIP_SOURCE_KEY), str) else None,
        tenant=meta[TENANT_KEY] if isinstance(meta.get(TENANT_KEY), str) else None,
        previous_attempt=last_attempt(meta.get("previous_models")),
        session=_arrival(meta.get(ARRIVAL_KEY)),
    )


def plugin_metadata_field(kwargs: Mapping[str, Any], adapter: CallAdapter | None) -> str:
    """The metadata field of an attempt's ``kwargs`` that holds the plugin's state: the first of
    :data:`METADATA_FIELDS` whose dict carries a plugin key, else the adapter's own field (an
    Anthropic Messages body bridged to chat arrives as ``acompletion`` with the state still in
    ``litellm_metadata``)."""
    for name in METADATA_FIELDS:
        meta = kwargs.get(name)
        if holds_state(meta):
            return name
    if adapter is not None and isinstance(kwargs.get(adapter.metadata_field), dict):
        return adapter.metadata_field
    return "metadata" if isinstance(kwargs.get("metadata"), dict) or "litellm_metadata" not in kwargs else "litellm_metadata"


def affinity_of(request_kwargs: object) -> str | None:
    """The session's rendezvous key in a routing request's ``metadata`` (else ``litellm_metadata``)."""
    if not isinstance(request_kwargs, dict):
        return None
    for field in METADATA_FIELDS:
        key = carried(request_kwargs.get(field)).affinity
        if key is not None:
            return key
    return None


@dataclass(frozen=True, eq=False)
class FailureView:
    """A failed request (the failure hook's ``request_data``): the plugin's carried state and the
    ``model`` (group) it was last sent to, as sent."""

    carried: Carried
    model: object


def failure_view(request_data: Mapping[str, Any]) -> FailureView:
    """Build the :class:`FailureView`. Never raises on odd input."""
    return FailureView(carried(request_data.get(plugin_metadata_field(request_data, None))), request_data.get("model"))


@dataclass(frozen=True, eq=False)
class PreCallView:
    """The proxy's pre-call inputs (``data``, ``call_type``, the key), validated once.

    ``adapter``/``group``: ``None`` when the plugin does not handle the call type, or the body
    names no model group. ``payload``: read-only snapshot of the body (what the estimator and
    ``/tokenize`` read). ``output``: the output budget (tokens) and ``output_values``: the output
    fields as sent. ``tenant``: the raw tenant id of the key (``None``: none can be told);
    ``session``: only for a handled call with a group and a tenant. ``client_fallbacks``: the
    client's ``context_window_fallbacks`` as sent (``None``: absent); ``generic_fallbacks_sent``:
    the body carries non-null ``fallbacks``. ``key``: LiteLLM's key object, opaque, for its access check.
    ``server_state``: a Responses body that continues state its server holds (``previous_response_id``,
    ``conversation``, an ``item_reference`` input item): the planner leaves it untouched; so is a
    ``malformed`` conversation (:func:`~litellm_kvwarm.conversation_shape.body_well_formed`: the client's error).
    ``fallback_choice``: the body's own fallback fields (:mod:`~litellm_kvwarm.client_fallbacks`)."""

    adapter: CallAdapter | None
    group: str | None
    payload: Mapping[str, Any]
    output: OutputBudget
    output_values: Mapping[str, Any]
    stream: bool
    tenant: str | None
    session: identity.Session | None
    client_fallbacks: object
    generic_fallbacks_sent: bool
    key: Any
    server_state: bool = False
    malformed: bool = False
    fallback_choice: FallbackChoice = FallbackChoice()

    @property
    def kind(self) -> str | None:
        return self.adapter.kind if self.adapter is not None else None


def pre_call_view(data: Mapping[str, Any], call_type: object, user_api_key_dict: object) -> PreCallView:
    """Build the :class:`PreCallView`. Never raises on odd input."""
    adapter = adapter_for(call_type)
    group = data.get("model") if isinstance(data.get("model"), str) else None
    try:
        tenant = identity.tenant_of(user_api_key_dict)
    except Exception:  # a key object that cannot be read has no tenant: no per-session state, and
        tenant = None  # tenant isolation refuses it (closed for security)
    session = identity.session_of(data, tenant) if adapter is not None and group is not None and tenant else None
    return PreCallView(
        adapter=adapter,
        group=group,
        payload=MappingProxyType(dict(data)),
        output=read_output_budget(data),
        output_values=MappingProxyType({f: data[f] for f in OUTPUT_FIELDS if f in data}),
        stream=data.get("stream") is True,
        tenant=tenant,
        session=session,
        client_fallbacks=data.get("context_window_fallbacks"),
        generic_fallbacks_sent=data.get("fallbacks") is not None,
        key=user_api_key_dict,
        server_state=adapter is not None and adapter.kind == "responses" and _server_state(data),
        malformed=adapter is not None and not body_well_formed(adapter.kind, data),
        fallback_choice=FallbackChoice.of(data),
    )


def _server_state(data: Mapping[str, Any]) -> bool:
    """A Responses body continues state its server holds: ``previous_response_id``, a
    ``conversation``, or an ``input`` item ``{"type": "item_reference", "id": ...}`` (an earlier item
    the server stored; its text is not in the body, so no estimate of the body can size it)."""
    if data.get("previous_response_id") or data.get("conversation"):
        return True
    items = data.get("input")
    return isinstance(items, list) and any(isinstance(i, Mapping) and i.get("type") == "item_reference" for i in items)


@dataclass(frozen=True, eq=False)
class AttemptView:
    """One backend attempt (the deployment hook's ``kwargs`` and ``call_type``), validated once.

    ``model``: the attempt's ``model`` as text (logs, errors); ``group_label``: its model group,
    else ``model`` (metric labels); ``provider``: see :func:`provider_of`; ``fallback_depth``:
    LiteLLM's hop number (``None``: not a fallback hop); ``deployment_params``/``model_info``:
    what :func:`litellm_kvwarm.catalog.deployment_info` reads; ``metadata_field``: where this
    attempt carries the plugin's state (:func:`plugin_metadata_field`); ``metadata_writable``: it
    is a dict later hooks can read."""

    adapter: CallAdapter | None
    model: str
    group_label: str
    provider: str | None
    fallback_depth: int | None
    output: OutputBudget
    payload: Mapping[str, Any]
    deployment_params: Mapping[str, object]
    model_info: object
    carried: Carried
    metadata_writable: bool
    metadata_field: str = "metadata"

    @property
    def kind(self) -> str | None:
        return self.adapter.kind if self.adapter is not None else None


def attempt_view(kwargs: Mapping[str, Any], call_type: object) -> AttemptView:
    """Build the :class:`AttemptView`. Never raises on odd input."""
    adapter = adapter_for(call_type)
    field = plugin_metadata_field(kwargs, adapter)
    meta = kwargs.get(field)
    state = carried(meta)
    depth = kwargs.get("fallback_depth")
    model = str(kwargs.get("model"))
    return AttemptView(
        adapter=adapter,
        model=model,
        group_label=state.model_group or model,
        provider=provider_of(kwargs),
        fallback_depth=depth if isinstance(depth, int) else None,
        output=read_output_budget(kwargs),
        payload=MappingProxyType(dict(kwargs)),
        deployment_params=MappingProxyType(
            {"api_base": kwargs.get("api_base"), "model": kwargs.get("model"), "api_key": kwargs.get("api_key")}
        ),
        model_info=kwargs.get("model_info"),
        carried=state,
        metadata_writable=isinstance(meta, dict),
        metadata_field=field,
    )

"""Session pinning that stays inside LiteLLM's own choice of deployment.

A session is pinned to one deployment of an escalation target (rendezvous hash of its affinity key over the
deployments' ids: :func:`~litellm_kvwarm.identity.pin_deployments`) so a warm and the escalated turn meet the same
prefix cache. The plugin pins in LiteLLM's ``async_filter_deployments`` callback, which LiteLLM 1.108.7 runs
*before* its own filters and strategy (``Router._async_get_healthy_deployments``: callback filters, pre-call checks,
tag filtering, routing plugins, ``order`` filtering; then the routing strategy picks). A pin chosen blindly there
overrode them (a breaker's real proxies, LiteLLM alone against the plugin): tag routing answered 401 for the 7 of 12
sessions pinned to a replica of the wrong tag; 34 of 60 sessions went to an ``order: 2`` backup while the primary was
healthy; 9:1 weights served 28:32; under usage-based routing a session's pinned replica ran out of rpm (429) while
the other had room. So :func:`pin_within_litellm` pins only where LiteLLM's choice leaves room for it:

* never where LiteLLM filters by tags for this request (``enable_tag_filtering`` on the router, on a deployment's
  ``model_info``, or on the request), nor where the group's ``rpm``/``tpm`` limits are enforced per minute
  (:func:`~litellm_kvwarm.limits.group_limited`; warms skip such groups too, so a pin would serve no warm);
* never where LiteLLM's pre-call checks (``enable_pre_call_checks``) could keep some of them and not others (a
  region of the request's own, context windows that differ: :func:`_pre_call_alike`);
* only among the deployments LiteLLM's ``order`` filter keeps (its own ``get_order_filtered_deployments``, the
  request's ``_target_order`` included);
* weighted as ``simple-shuffle`` weighs them (``weight``, else ``rpm``, else ``tpm`` of ``litellm_params``): a
  weighted rendezvous hash, so sessions spread over the replicas in those proportions; a request that carries its
  own ``_router_weights`` (LiteLLM's per-request weights) is not pinned.

Anything unreadable leaves LiteLLM's list as it is (fail open).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from . import identity
from .limits import group_limited
from .router_view import RouterView

__all__ = ["WEIGHT_FIELDS", "pin_within_litellm"]

#: ``litellm_params`` read as a deployment's weight, first set wins (LiteLLM 1.108.7 ``simple_shuffle``).
WEIGHT_FIELDS = ("weight", "rpm", "tpm")


def pin_within_litellm(router: object, group: str, healthy: list, request_kwargs: Mapping[str, Any] | None,
                       key: str, failed: Collection[str] = ()) -> list:
    """``healthy`` narrowed to the session's deployment of ``group`` (``key``: its affinity key; ``failed``: ids an
    earlier attempt of this request failed on), within what LiteLLM itself would choose from (module docstring);
    ``healthy`` unchanged where pinning does not apply."""
    kwargs = request_kwargs if isinstance(request_kwargs, Mapping) else {}
    if kwargs.get("_router_weights") or _tags_filter(router, healthy, kwargs) \
            or group_limited(router, group, warm_slots=0):
        return healthy
    preferred = _order_filtered(healthy, kwargs.get("_target_order"))
    if not _pre_call_alike(router, group, preferred, kwargs):
        return healthy
    pinned = identity.pin_deployments(key, preferred, failed, weights=_weights(router, preferred))
    return pinned if len(pinned) == 1 else healthy


def _tags_filter(router: object, healthy: list, kwargs: Mapping[str, Any]) -> bool:
    """Whether LiteLLM's tag filter runs for this request (``get_deployments_for_tag``'s effective switch)."""
    if kwargs.get("enable_tag_filtering") is True or RouterView(router).setting("enable_tag_filtering") is True:
        return True
    return any(isinstance(d, Mapping) and isinstance(d.get("model_info"), Mapping)
               and d["model_info"].get("enable_tag_filtering") is True for d in healthy)


def _pre_call_alike(router: object, group: str, deployments: list, kwargs: Mapping[str, Any]) -> bool:
    """Whether LiteLLM's own pre-call checks (``enable_pre_call_checks``, run on the list this callback returns) keep
    all of ``deployments`` or none: off, or no region of the request's own and one declared context window among them
    (the Router's ``_deployment_max_input_tokens``). Otherwise a pin could leave only a deployment the check removes
    (a breaker's proxies: a 37.7k-token prompt pinned to a 32,768-token replica, 400 where LiteLLM alone answered 200
    from the 131,072 one). Unreadable: ``False`` (no pin)."""
    if RouterView(router).setting("enable_pre_call_checks") is not True:
        return True
    limit = getattr(router, "_deployment_max_input_tokens", None)
    if kwargs.get("allowed_model_region") is not None or not callable(limit):
        return False
    try:
        return len({limit(group, d) for d in deployments}) <= 1
    except Exception:
        return False


def _order_filtered(healthy: list, target_order: object) -> list:
    """LiteLLM's own ``order`` filter (the lowest order, or the request's target order); ``healthy`` if unavailable."""
    try:
        from litellm.utils import get_order_filtered_deployments

        kept = get_order_filtered_deployments(list(healthy), target_order=target_order)  # type: ignore[arg-type]
    except Exception:
        return healthy
    return list(kept) or healthy


def _weights(router: object, deployments: list) -> dict[str, float] | None:
    """Deployment id → weight as LiteLLM 1.108.7's ``simple_shuffle`` (the default strategy) weighs them: the first of
    :data:`WEIGHT_FIELDS` that some deployment sets above 0, a deployment without it 0 (never chosen); ``None`` (all
    alike) under another strategy, with no such field, or where a deployment has no id."""
    if RouterView(router).setting("routing_strategy") not in (None, "simple-shuffle"):
        return None
    ids = [d.get("model_info", {}).get("id") if isinstance(d, Mapping) and isinstance(d.get("model_info"), Mapping)
           else None for d in deployments]
    if not all(isinstance(i, str) for i in ids):
        return None
    for name in WEIGHT_FIELDS:
        weights = [_number(d.get("litellm_params"), name) for d in deployments]
        if max(weights, default=0.0) > 0:
            return dict(zip(ids, weights))  # type: ignore[arg-type]
    return None


def _number(params: object, name: str) -> float:
    value = params.get(name) if isinstance(params, Mapping) else None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else 0.0

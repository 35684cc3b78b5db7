"""Where LiteLLM limits the traffic a warm would share (pure reads of LiteLLM's objects, duck-typed; never raise).

A warm goes through LiteLLM's router and carries the caller's key, user and team in its metadata (spend tracking
charges it to them), so LiteLLM counts it like a live request against

* a **deployment's** limits, which every tenant's requests to the group share: its ``rpm``/``tpm`` where LiteLLM
  enforces them per minute (``usage-based-routing``/``-v2``, or the ``enforce_model_rate_limits`` pre-call check;
  under ``simple-shuffle`` and the other strategies they are only routing weights), and its concurrent requests
  (LiteLLM's semaphore of ``max_parallel_requests``, else ``rpm``, else ``tpm`` × 6 / 1000, else the router's
  ``default_max_parallel_requests``: ``litellm.utils.calculate_max_parallel_requests``), where warms could hold more
  than a tenth of them (:data:`WARM_SHARE_OF_SLOTS`; a process sends at most ``warm_max_concurrency`` at once);
* the **caller's** tokens per minute: its key's, user's, team's, team member's, end user's and organization's, and
  those per model group of the target (LiteLLM 1.108.7 ``proxy/hooks/parallel_request_limiter_v3.py`` counts a
  success's tokens on every scope its metadata names, a warm's too; an organization's are shared by its teams). The
  caller's requests per minute and parallel requests are taken by the proxy's pre-call hook, which a warm sent
  through the router never passes: those do not count.

A breaker found the first (b52a711): one tenant's 11k-token session sent warm pieces whose cumulative prefixes took
a 6-rpm deployment's minute, and another tenant's requests waited until they timed out. The warm gate
(:mod:`~litellm_kvwarm.warm_gate`) sends no warm where either holds, unless ``warm_limited``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .router_view import RouterView

__all__ = ["DEPLOYMENT_LIMIT_FIELDS", "WARM_SHARE_OF_SLOTS", "caller_limited", "group_limited"]

#: Deployment fields LiteLLM limits a deployment by, read where LiteLLM reads them (1.108.7
#: ``router_strategy/lowest_latency.py`` l.441 for ``rpm``/``tpm``; ``max_parallel_requests`` in ``litellm_params``).
DEPLOYMENT_LIMIT_FIELDS = ("max_parallel_requests", "rpm", "tpm")
#: Routing strategies and pre-call checks under which LiteLLM enforces a deployment's ``rpm``/``tpm`` per minute.
ENFORCING_STRATEGIES = frozenset({"usage-based-routing", "usage-based-routing-v2"})
ENFORCING_CALLBACK = "ModelRateLimitingCheck"  # the router's callback for its ``enforce_model_rate_limits`` pre-call check
#: Warms may hold at most this share of a deployment's concurrent-request slots (else the group gets none).
WARM_SHARE_OF_SLOTS = 0.1


def _limit(value: object) -> float | None:
    """A limit as a config may spell it (a number, or a string LiteLLM reads as one); ``None`` when unset; an
    unreadable string counts as a limit of 0 (the conservative reading)."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str) and value.strip():
        try:
            return float(value)
        except ValueError:
            return 0.0
    return None


def _field(entry: Mapping[str, Any], name: str) -> float | None:
    for place in (entry.get("litellm_params"), entry, entry.get("model_info")):
        if isinstance(place, Mapping) and (found := _limit(place.get(name))) is not None:
            return found
    return None


def _enforced(view: RouterView) -> bool:
    strategies = {view.setting("routing_strategy")}
    groups = view.setting("routing_groups")
    if isinstance(groups, Mapping):
        strategies |= {getattr(g, "routing_strategy", None) for g in groups.values()}
    # LiteLLM turns the enforce_model_rate_limits check into a callback (1.108.7 router.py l.517: ModelRateLimitingCheck),
    # held by the router (1.108) or by its core (1.109.3 router_python_core.py l.3332: ``Router._core``); read from the
    # instances' own attributes, which no release wraps in a deprecation warning
    held = getattr(view.router, "__dict__", {})
    callbacks = held.get("optional_callbacks") or getattr(held.get("_core"), "__dict__", {}).get("optional_callbacks")
    enforcing_check = isinstance(callbacks, (list, tuple)) and any(type(c).__name__ == ENFORCING_CALLBACK for c in callbacks)
    return bool(strategies & ENFORCING_STRATEGIES) or enforcing_check


def group_limited(router: object, group: str, warm_slots: int = 4) -> bool:
    """Whether LiteLLM limits what a warm to ``group`` would share (module docstring): some deployment's ``rpm``/``tpm``
    enforced per minute, or concurrent-request slots of which ``warm_slots`` warms would hold more than
    :data:`WARM_SHARE_OF_SLOTS`. ``False`` for ``None`` and for anything unreadable."""
    if router is None:
        return False
    try:
        view = RouterView(router)
        enforced = _enforced(view)
        default = _limit(view.setting("default_max_parallel_requests"))
        for entry in view.deployments(group):
            parallel, rpm, tpm = (_field(entry, f) for f in DEPLOYMENT_LIMIT_FIELDS)
            if enforced and (rpm is not None or tpm is not None):
                return True
            slots = parallel if parallel is not None else rpm if rpm is not None else \
                max(1.0, int(tpm / 1000 * 6)) if tpm is not None else default  # LiteLLM's calculate_max_parallel_requests
            if slots is not None and warm_slots > WARM_SHARE_OF_SLOTS * slots:
                return True
    except Exception:
        return False
    return False


def _binds(value: object, group: str) -> bool:
    """A tokens-per-minute limit that a warm to ``group`` counts against: a scalar, or a per-model map naming ``group``."""
    if isinstance(value, Mapping):
        return value.get(group) is not None
    return _limit(value) is not None


def caller_limited(key: Any, group: str = "") -> bool:
    """Whether LiteLLM limits the tokens per minute that a warm to ``group`` would count against for the caller's key
    object (``UserAPIKeyAuth``): any of its ``*tpm_limit`` fields (key, user, team, team member, end user,
    organization), its ``tpm_limit_per_model`` for ``group``, or a ``*tpm_limit`` (``model_tpm_limit``, ``model_itpm_limit``,
    ...) for ``group`` or for every model in its ``metadata``, ``team_metadata``, ``organization_metadata`` or
    ``project_metadata``. ``False`` for ``None`` and for anything unreadable."""
    if key is None:
        return False
    try:
        fields = getattr(type(key), "model_fields", None)
        names = fields.keys() if isinstance(fields, Mapping) else vars(key).keys()
        if any((n.endswith("tpm_limit") or n.startswith("tpm_limit_per_model")) and _binds(getattr(key, n, None), group)
               for n in names):
            return True
        for meta in (getattr(key, f, None) for f in ("metadata", "team_metadata", "organization_metadata", "project_metadata")):
            if isinstance(meta, Mapping) and any(isinstance(k, str) and k.endswith("tpm_limit") and _binds(v, group)
                                                 for k, v in meta.items()):
                return True
    except Exception:
        return False
    return False

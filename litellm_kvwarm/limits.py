"""Where LiteLLM limits the traffic a warm would share (pure reads of LiteLLM's objects, duck-typed; never raise).

A warm goes through LiteLLM's router and carries the caller's key, user and team in its metadata (spend tracking
charges it to them), so LiteLLM counts it like a live request against

* a **deployment's** limits: ``rpm``, ``tpm`` and ``max_parallel_requests`` (the entry, its ``litellm_params`` or its
  ``model_info``; with ``rpm``/``tpm`` LiteLLM also holds a semaphore of concurrent requests), and the router's
  ``default_max_parallel_requests``: every tenant's requests to the group share them;
* the **caller's** tokens per minute: its key's, user's, team's, team member's, end user's and organization's, per
  model or not (LiteLLM 1.108.7 ``proxy/hooks/parallel_request_limiter_v3.py`` counts a success's tokens on every
  scope its metadata names, a warm's too; an organization's are shared by its teams). The caller's requests per
  minute and parallel requests are taken by the proxy's pre-call hook, which a warm sent through the router never
  passes: those do not count.

A breaker found the first (b52a711): one tenant's 11k-token session sent warm pieces whose cumulative prefixes took
a 6-rpm deployment's minute, and another tenant's requests waited until they timed out. The warm gate
(:mod:`~litellm_kvwarm.warm_gate`) sends no warm where either holds, unless ``warm_limited``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .router_view import RouterView

__all__ = ["DEPLOYMENT_LIMIT_FIELDS", "caller_limited", "group_limited"]

#: Deployment fields LiteLLM limits a deployment by, read where LiteLLM reads them (1.108.7
#: ``router_strategy/lowest_latency.py`` l.441 for ``rpm``/``tpm``; ``max_parallel_requests`` in ``litellm_params``).
DEPLOYMENT_LIMIT_FIELDS = ("rpm", "tpm", "max_parallel_requests")


def _number(value: object) -> bool:
    """A limit as a config may spell it: a number, or a string LiteLLM would read as one (``"6"``, ``os.environ/...``)."""
    return (isinstance(value, (int, float)) and not isinstance(value, bool)) or (isinstance(value, str) and value.strip() != "")


def group_limited(router: object, group: str) -> bool:
    """Whether LiteLLM limits some deployment of ``group`` (:data:`DEPLOYMENT_LIMIT_FIELDS` set to a number on the
    entry, its ``litellm_params`` or its ``model_info``), or every deployment (the router's
    ``default_max_parallel_requests``). ``False`` for ``None`` and for anything unreadable."""
    if router is None:
        return False
    try:
        view = RouterView(router)
        default = view._setting("default_max_parallel_requests")
        if isinstance(default, int) and not isinstance(default, bool) and default > 0:
            return True
        for entry in view.deployments(group):
            for place in (entry, entry.get("litellm_params"), entry.get("model_info")):
                if isinstance(place, Mapping) and any(_number(place.get(f)) for f in DEPLOYMENT_LIMIT_FIELDS):
                    return True
    except Exception:
        return False
    return False


def _limit_name(name: str) -> bool:
    return name.endswith("tpm_limit") or name.startswith("tpm_limit_per_model")


def _set(value: object) -> bool:
    return value is not None and value != {} and value != [] and value is not False


def caller_limited(key: Any) -> bool:
    """Whether LiteLLM limits the tokens per minute of the caller's key object (``UserAPIKeyAuth``): any of its
    ``*tpm_limit`` fields (key, user, team, team member, end user, organization) or ``tpm_limit_per_model``, or a
    ``model_tpm_limit`` in its ``metadata`` or ``team_metadata``, is set. ``False`` for ``None`` and for anything
    unreadable."""
    if key is None:
        return False
    try:
        fields = getattr(type(key), "model_fields", None)
        names = fields.keys() if isinstance(fields, Mapping) else vars(key).keys()
        if any(_limit_name(n) and _set(getattr(key, n, None)) for n in names):
            return True
        for meta in (getattr(key, "metadata", None), getattr(key, "team_metadata", None)):
            if isinstance(meta, Mapping) and any(isinstance(k, str) and _limit_name(k) and _set(v) for k, v in meta.items()):
                return True
    except Exception:
        return False
    return False

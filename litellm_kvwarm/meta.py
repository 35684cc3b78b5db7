"""Keys the plugin writes into a request's LiteLLM ``metadata`` and reads back in later hooks.

LiteLLM carries ``data["metadata"]`` from the proxy's pre-call hook through every fallback hop
(``kwargs["metadata"]`` in the deployment hook) into the logging callbacks
(``kwargs["litellm_params"]["metadata"]``). Values are hashes, numbers and group names only:
metadata may end up in LiteLLM's spend logs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

#: rendezvous key of (tenant, session): hashes only
AFFINITY_KEY = "kvwarm_affinity"
#: set on warm requests
WARM_MARKER = "kvwarm_warm"
#: LiteLLM's own flag (not the plugin's) on the success event of a stream the client left (``proxy/common_request_processing.py``):
#: it bills the partial reply, whose usage LiteLLM may have counted itself
CLIENT_DISCONNECTED = "client_disconnected"
#: the reactive backstop's plan (:class:`litellm_kvwarm.reactive.BackstopPlan` as a dict)
PLAN_KEY = "kvwarm_backstop"
#: "proactive" or "reactive" once a request was escalated
ESCALATED_KEY = "kvwarm_escalated"
#: {"safe": N, "routing": N, "group": ..., "window": N, ...}: the pre-call estimates (compared with
#: usage.prompt_tokens later) and the routing window of the group they were judged in (tokens)
ESTIMATE_KEY = "kvwarm_estimate"
#: {"source": group, "window": N, "tokens": N}: where a proactively escalated request came from
ORIGIN_KEY = "kvwarm_origin"
#: the target of a proactive escalation made by skipping the source group's first attempt
#: (Anthropic Messages: ``planner.Escalation.via_fallback``)
SKIP_SOURCE_KEY = "kvwarm_skip_source"
#: the tenant's cache_salt (an HMAC), applied per attempt to backends that accept it
SALT_KEY = "kvwarm_cache_salt"
#: the keyed hash of the request's tenant (:func:`litellm_kvwarm.identity.hash_key`): the scope of
#: what backend rejections teach (:mod:`litellm_kvwarm.learned_limits`)
TENANT_KEY = "kvwarm_tenant"
#: ``{"hash": str, "items": int}``, beside the armed backstop: the session's hash as warm metadata names it
#: (:func:`litellm_kvwarm.identity.hashed_session`) and the request's item count in its own API shape, as the
#: session's warms count theirs (a Messages or Responses request bridged to chat reaches its hops with its items
#: in another shape and count): its reactive escalation ends the warms of that session it supersedes
ARRIVAL_KEY = "kvwarm_arrival"
#: seconds of the per-request I/O budget already spent by earlier hooks of this request
BUDGET_KEY = "kvwarm_budget_spent_s"
#: Ids of the deployments earlier attempts of the request failed on, kept by session pinning across retries
#: (LiteLLM's own record keeps only its last few: :func:`~litellm_kvwarm.router_view.failed_deployments`).
FAILED_KEY = "kvwarm_failed_deployments"
#: the text of the request's last context-length refusal a fallback hop was decided on: the hops after a passing
#: failure (a step of the chain down, a 5xx) are decided on it (LiteLLM's own record keeps only its last 4 attempts)
REFUSAL_KEY = "kvwarm_length_refusal"
#: every plugin-internal key starts with this; clients cannot set them (stripped at entry)
PREFIX = "kvwarm_"
#: metadata fields LiteLLM may carry a request's metadata under
METADATA_FIELDS = ("metadata", "litellm_metadata")
#: the keys the plugin writes into a live request's metadata (a warm's own are beside them, in
#: :mod:`litellm_kvwarm.warm_body`): one of them in a metadata dict marks the plugin's state there
STATE_KEYS = (TENANT_KEY, AFFINITY_KEY, PLAN_KEY, ARRIVAL_KEY, ESTIMATE_KEY, ESCALATED_KEY, ORIGIN_KEY, SKIP_SOURCE_KEY, SALT_KEY,
              BUDGET_KEY, WARM_MARKER)


def request_metadata(data: dict, field: str = "metadata") -> dict:
    """``data[field]`` (``"metadata"``; ``"litellm_metadata"`` for the APIs whose own body has a
    ``metadata`` field: Anthropic Messages, Responses), created when absent or not a dict."""
    meta = data.get(field)
    if not isinstance(meta, dict):
        meta = {}
        data[field] = meta
    return meta


def strip_client_keys(data: dict) -> int:
    """Remove every plugin-internal key (``kvwarm_*``) a client sent in ``metadata`` /
    ``litellm_metadata``; returns how many were removed. Called first thing in the proxy's
    pre-call hook, for every call type, so later hooks only ever read what the plugin wrote."""
    removed = 0
    for field in METADATA_FIELDS:
        meta = data.get(field)
        if isinstance(meta, dict) and meta and _may_hold_prefix(meta):
            for key in [k for k in meta if isinstance(k, str) and k.startswith(PREFIX)]:
                del meta[key]
                removed += 1
    return removed


def _may_hold_prefix(meta: dict) -> bool:
    # LiteLLM's metadata holds ~50 keys by the pre-call hook; one C-level join and search instead of a
    # Python test per key (a non-str key makes the join fail: then the per-key scan decides).
    try:
        return _SEARCH in "\0" + "\0".join(meta)
    except TypeError:
        return True


_SEARCH = "\0" + PREFIX


def field(obj: Any, name: str) -> Any:
    """``obj[name]`` for mappings, ``obj.name`` otherwise (LiteLLM's response objects); ``None`` when absent."""
    if obj is None:
        return None
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)


def holds_state(meta: object) -> bool:
    """Whether a metadata mapping carries any of the plugin's :data:`STATE_KEYS` (a fixed set of
    lookups: LiteLLM's own metadata holds dozens of keys, scanned on every attempt otherwise)."""
    return isinstance(meta, Mapping) and any(key in meta for key in STATE_KEYS)


def is_warm(metadata: object) -> bool:
    """Whether a request's metadata marks it as one of the plugin's warms."""
    return isinstance(metadata, Mapping) and bool(metadata.get(WARM_MARKER))


def all_metadata(kwargs: object) -> list[Mapping[str, Any]]:
    """Every metadata mapping of LiteLLM hook kwargs (``litellm_params.metadata`` /
    ``litellm_metadata``, ``metadata``, ``litellm_metadata``), in that order, empty ones left out."""
    if not isinstance(kwargs, Mapping):
        return []
    params = kwargs.get("litellm_params")
    params = params if isinstance(params, Mapping) else {}
    found = [params.get("metadata"), params.get("litellm_metadata"), kwargs.get("metadata"), kwargs.get("litellm_metadata")]
    return [m for m in found if isinstance(m, Mapping) and m]


def client_left(metas: Iterable[Mapping[str, Any]]) -> bool:
    """Whether LiteLLM marked the call's stream as left by its client (:data:`CLIENT_DISCONNECTED` in any of ``metas``,
    :func:`all_metadata`'s mappings)."""
    return any(m.get(CLIENT_DISCONNECTED) is True for m in metas)


def find_metadata(kwargs: object) -> Mapping[str, Any] | None:
    """The metadata mapping of LiteLLM hook kwargs, wherever this hook carries it
    (``litellm_params.metadata``, ``metadata``, ``litellm_metadata``)."""
    if not isinstance(kwargs, Mapping):
        return None
    params = kwargs.get("litellm_params")
    candidates = [params.get("metadata") if isinstance(params, Mapping) else None, kwargs.get("metadata"), kwargs.get("litellm_metadata")]
    for candidate in candidates:
        if isinstance(candidate, Mapping) and candidate:
            return candidate
    return None

"""Who is asking, and which conversation: tenant and session from LiteLLM's request data (pure).

* **Tenant** comes from the caller's LiteLLM key (``UserAPIKeyAuth``): the team if the key
  has one, else the user, else the hashed key (``token`` is already LiteLLM's sha256 of the
  raw key; the raw key never reaches a hook). No tenant → :class:`MissingTenantError`:
  per-session state is never kept, or looked up, outside a tenant's scope.
* **Session** is LiteLLM's own: ``litellm_session_id`` (set from the ``x-litellm-session-id``
  header), else ``metadata.session_id`` / ``litellm_metadata.session_id`` from the body.
  Without one, a fingerprint of the conversation's start: sha256 over the canonical JSON of
  the first system message and the first user message (role and content), so every turn of
  the same conversation maps to the same session while it grows.
* Keys for shared state hold only hashes: :func:`scoped_key` never contains a raw session id,
  tenant id or text.
* ``cache_salt`` for vLLM prefix-cache isolation (CVE-2025-46570) is an HMAC-SHA256 of the
  tenant under an operator secret: the same tenant always gets the same salt (so its own
  warm is hit), tenants never share one, and the salt reveals nothing about the tenant.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping
from dataclasses import dataclass


class MissingTenantError(ValueError):
    """Raised when per-session state is asked for without a tenant."""


@dataclass(frozen=True)
class Session:
    """A conversation within a tenant. ``source`` is ``"litellm"`` (an id the client sent) or
    ``"fingerprint"``. Both ids are opaque strings; only their hashes leave this module."""

    tenant: str
    session_id: str
    source: str


def tenant_of(user_api_key_dict: object) -> str | None:
    """``"team:<id>"``, ``"user:<id>"`` or ``"key:<hashed key>"`` of a ``UserAPIKeyAuth``-like
    object (attributes ``team_id``, ``user_id``, ``token``), else ``None``."""
    for attr, kind in (("team_id", "team"), ("user_id", "user"), ("token", "key")):
        value = getattr(user_api_key_dict, attr, None)
        if isinstance(value, str) and value:
            return f"{kind}:{value}"
    return None


def client_session_id(data: Mapping[str, object]) -> str | None:
    """The session id the client gave LiteLLM, if any (header or body metadata)."""
    value = data.get("litellm_session_id")
    if isinstance(value, str) and value:
        return value
    for key in ("metadata", "litellm_metadata"):
        meta = data.get(key)
        if isinstance(meta, Mapping):
            value = meta.get("session_id")
            if isinstance(value, str) and value:
                return value
    return None


def conversation_fingerprint(messages: object) -> str | None:
    """sha256 hex of the first system and first user message (role + content), or ``None``
    when there is no user message to anchor on."""
    if not isinstance(messages, list):
        return None
    anchor: dict[str, object] = {}
    for message in messages:
        if isinstance(message, Mapping):
            role = message.get("role")
            if role in ("system", "developer", "user") and role not in anchor:
                anchor["user" if role == "user" else "system"] = message.get("content")
            if "user" in anchor:
                break
    if "user" not in anchor:
        return None
    canonical = json.dumps(anchor, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def session_of(data: Mapping[str, object], tenant: str | None) -> Session | None:
    """The :class:`Session` of a request, or ``None`` when it has neither a session id nor a
    conversation to fingerprint.

    Raises:
        MissingTenantError: ``tenant`` is empty.
    """
    if not tenant:
        raise MissingTenantError("per-session state needs a tenant (LiteLLM key team, user or hashed key)")
    sid = client_session_id(data)
    if sid is not None:
        return Session(tenant=tenant, session_id=sid, source="litellm")
    fingerprint = conversation_fingerprint(data.get("messages"))
    if fingerprint is None:
        return None
    return Session(tenant=tenant, session_id="fp:" + fingerprint, source="fingerprint")


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8")).hexdigest()[:32]


def scoped_key(prefix: str, session: Session) -> str:
    """``<prefix>:<sha256(tenant)>:<sha256(session)>`` (128-bit hex each): a storage key that
    is scoped by tenant and carries no raw id."""
    if not session.tenant:
        raise MissingTenantError("scoped_key needs a tenant")
    return f"{prefix}:{_digest(session.tenant)}:{_digest(session.session_id)}"


def cache_salt(secret: str, tenant: str) -> str:
    """vLLM ``cache_salt`` of a tenant: HMAC-SHA256(secret, tenant), hex (64 chars).

    Raises:
        MissingTenantError: ``tenant`` is empty.
        ValueError: ``secret`` is empty.
    """
    if not tenant:
        raise MissingTenantError("cache_salt needs a tenant")
    if not secret:
        raise ValueError("cache_salt needs a non-empty secret")
    return hmac.new(secret.encode("utf-8"), tenant.encode("utf-8"), hashlib.sha256).hexdigest()


def affinity_key(session: Session) -> str:
    """Stable key that pins a session to one deployment (see :func:`rendezvous_pick`)."""
    return _digest(session.tenant) + _digest(session.session_id)


def rendezvous_pick(key: str, deployment_ids: list[str]) -> str | None:
    """Highest-random-weight (rendezvous) choice of a deployment for ``key``.

    Deterministic across processes and replicas with no shared state; when a deployment
    leaves the set only the sessions that were on it move. ``None`` for an empty list.
    """
    best, best_score = None, -1
    for dep_id in deployment_ids:
        score = int.from_bytes(hashlib.sha256(f"{key}|{dep_id}".encode()).digest()[:8], "big")
        if score > best_score:
            best, best_score = dep_id, score
    return best


def set_cache_salt(data: dict, salt: str) -> None:
    """Drop any client-sent ``cache_salt`` (top level or ``extra_body``) and send ``salt`` in
    ``extra_body`` (LiteLLM forwards ``extra_body`` to OpenAI-compatible backends as is)."""
    data.pop("cache_salt", None)
    extra = data.get("extra_body")
    extra = dict(extra) if isinstance(extra, Mapping) else {}
    extra["cache_salt"] = salt
    data["extra_body"] = extra


def pin_deployments(key: str, healthy: list) -> list:
    """The one deployment of ``healthy`` (LiteLLM deployment dicts, ``model_info.id``) that
    :func:`rendezvous_pick` chooses for ``key``; all of them when none has an id."""
    def dep_id(d: object) -> object:
        info = d.get("model_info") if isinstance(d, Mapping) else None
        return info.get("id") if isinstance(info, Mapping) else None

    chosen = rendezvous_pick(key, [i for i in map(dep_id, healthy) if isinstance(i, str)])
    return [d for d in healthy if dep_id(d) == chosen] or healthy

"""Who is asking, and which conversation: tenant and session from LiteLLM's request data (pure).

* **Tenant** comes from the caller's LiteLLM key (``UserAPIKeyAuth``): the team if the key
  has one, else the user, else the hashed key (``token`` is already LiteLLM's sha256 of the
  raw key; the raw key never reaches a hook). No tenant → :class:`MissingTenantError`:
  per-session state is never kept, or looked up, outside a tenant's scope.
* **Session** is LiteLLM's own: ``litellm_session_id`` (set from the ``x-litellm-session-id``
  header), else ``metadata.session_id`` / ``litellm_metadata.session_id`` from the body.
  Without one, a fingerprint of the conversation's start: sha256 over the canonical JSON of
  the first system message and the first user message (role and content), so every turn of
  the same conversation maps to the same session while it grows. The canonical JSON is built
  without recursion (:func:`~litellm_kvwarm.tokens.json_text`): content nested thousands of
  levels deep is fingerprinted like any other.
* Keys for shared state and values written to request metadata hold only **keyed** hashes:
  :func:`hash_key` is an HMAC-SHA256 under the plugin's hash secret
  (:func:`resolve_hash_secret`), so whoever reads Redis or spend logs cannot tell which tenant
  or session a key belongs to by hashing known team ids or session ids. :func:`scoped_key`,
  :func:`affinity_key` and :func:`hashed_session` never contain a raw session id, tenant id
  or text.
* ``cache_salt`` for vLLM prefix-cache isolation (CVE-2025-46570) is an HMAC-SHA256 of the
  tenant under an operator secret: the same tenant always gets the same salt (so its own
  warm is hit), tenants never share one, and the salt reveals nothing about the tenant.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import math
import secrets
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from .tokens import json_text

#: Hex characters of every keyed hash this module returns (128 bits).
HASH_HEX_CHARS = 32
#: Longest session id kept as sent (characters); a longer one is replaced by its sha256 (:func:`client_session_id`).
MAX_SESSION_ID_CHARS = 256
#: The operator's secret is never the HMAC key itself: the key is HMAC(secret, this label), so
#: the state hashes share nothing with ``cache_salt`` (HMAC(secret, tenant), sent to backends)
#: or with LiteLLM's own use of its salt or master key.
HASH_KEY_LABEL = b"litellm-kvwarm/state-hash/v1"
# The fallback key when no secret is configured: one per process, never stored or logged.
_PROCESS_RANDOM_KEY = secrets.token_bytes(32)


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
    """The session id the client gave LiteLLM, if any (header or body metadata); one longer than
    :data:`MAX_SESSION_ID_CHARS` as ``"sha256:<hex>"`` of it, so what the plugin remembers per id (hash memos,
    cooldown keys) stays small whatever a client sends (a 5 MB id held 5 MB in a memo of 4,096)."""
    value = data.get("litellm_session_id")
    if not (isinstance(value, str) and value):
        value = None
        for key in ("metadata", "litellm_metadata"):
            meta = data.get(key)
            if isinstance(meta, Mapping) and isinstance(meta.get("session_id"), str) and meta["session_id"]:
                value = meta["session_id"]
                break
    if value is not None and len(value) > MAX_SESSION_ID_CHARS:
        return "sha256:" + hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()
    return value


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
    try:
        canonical = json_text(anchor, sort_keys=True)  # json.dumps' text, at any depth
    except (TypeError, ValueError):  # a non-JSON key or a cycle: never from a parsed body
        return None
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def conversation_of(data: Mapping[str, object]) -> object:
    """The request's conversation as chat-style messages, for :func:`conversation_fingerprint`:
    ``messages`` (chat; Anthropic Messages with its top-level ``system`` first), else a
    Responses body's ``instructions`` and ``input`` (a string is one user message)."""
    messages = data.get("messages")
    if isinstance(messages, list):
        system = data.get("system")
        return [{"role": "system", "content": system}, *messages] if system else messages
    items = data.get("input")
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    if not isinstance(items, list):
        return None
    instructions = data.get("instructions")
    return [{"role": "system", "content": instructions}, *items] if instructions else items


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
    fingerprint = conversation_fingerprint(conversation_of(data))
    if fingerprint is None:
        return None
    return Session(tenant=tenant, session_id="fp:" + fingerprint, source="fingerprint")


def resolve_hash_secret(
    settings_hash_secret: str | None, cache_salt_secret: str | None, environ: Mapping[str, str]
) -> tuple[bytes, str]:
    """The key of :func:`hash_key` (32 bytes) and where it came from.

    First non-empty of: ``settings_hash_secret`` (``KVWARM_HASH_SECRET`` / the ``hash_secret``
    setting; source ``"hash_secret"``), ``cache_salt_secret`` or ``environ["KVWARM_CACHE_SALT_SECRET"]``
    (source ``"KVWARM_CACHE_SALT_SECRET"``), ``environ["LITELLM_SALT_KEY"]``,
    ``environ["LITELLM_MASTER_KEY"]`` (source: the variable's name). The key returned is
    HMAC-SHA256(secret, :data:`HASH_KEY_LABEL`), never the secret itself.

    With none of them set: a random key drawn once per process, source ``"random"``. Hashes
    then differ between processes: LiteLLM workers and replicas that share a Redis no longer
    share cooldowns or the warm tenant rate, and session pinning may pick a different
    deployment in each; the caller should warn once. Never raises.
    """
    candidates = (
        ("hash_secret", settings_hash_secret),
        ("KVWARM_CACHE_SALT_SECRET", cache_salt_secret or environ.get("KVWARM_CACHE_SALT_SECRET")),
        ("LITELLM_SALT_KEY", environ.get("LITELLM_SALT_KEY")),
        ("LITELLM_MASTER_KEY", environ.get("LITELLM_MASTER_KEY")),
    )
    for source, secret in candidates:
        if isinstance(secret, str) and secret:
            return hmac.new(secret.encode("utf-8"), HASH_KEY_LABEL, hashlib.sha256).digest(), source
    return _PROCESS_RANDOM_KEY, "random"


def hash_key(secret: bytes | str, value: str) -> str:
    """HMAC-SHA256(``secret``, ``value``) as :data:`HASH_HEX_CHARS` (32) hex characters.

    ``secret`` is the key from :func:`resolve_hash_secret` (a ``str`` is UTF-8 encoded).
    Without the secret, a hash cannot be matched to a guessed tenant or session id.

    Raises:
        ValueError: ``secret`` is empty.
    """
    key = secret.encode("utf-8") if isinstance(secret, str) else secret
    if not key:
        raise ValueError("hash_key needs a non-empty secret")
    return _hash_key(key, value)


@functools.lru_cache(maxsize=4096)
def _hash_key(key: bytes, value: str) -> str:
    # a request hashes its tenant and session id several times (salt, warm keys, pinning, usage):
    # remembered, each costs one dict lookup instead of an HMAC
    digest = hmac.new(key, value.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()
    return digest[:HASH_HEX_CHARS]


def scoped_key(prefix: str, session: Session, secret: bytes | str) -> str:
    """``<prefix>:<hash_key(tenant)>:<hash_key(session id)>`` (32 hex chars each): a storage key
    that is scoped by tenant and carries no raw id.

    Raises:
        MissingTenantError: the session has no tenant.
        ValueError: ``secret`` is empty.
    """
    if not session.tenant:
        raise MissingTenantError("scoped_key needs a tenant")
    return f"{prefix}:{hash_key(secret, session.tenant)}:{hash_key(secret, session.session_id)}"


def key_tenant(key: str) -> str:
    """The tenant hash in a :func:`scoped_key` or :func:`hashed_session` string: its second-to-last
    ``:`` segment (a prefix may hold ``:``, e.g. a model group ``qwen3:8b``; the two hashes never do);
    ``""`` for a string with no ``:``. For bounding per-tenant state (:mod:`~litellm_kvwarm.fair_lru`)."""
    parts = key.rsplit(":", 2)
    return parts[-2] if len(parts) >= 2 else ""


def hashed_session(session: Session, secret: bytes | str) -> str:
    """The session as written to warm metadata, scoped by tenant: ``hash_key(tenant):hash_key(session id)``
    (32 hex chars each, as in :func:`scoped_key`; ``-`` for a session without a tenant), so two tenants that
    use the same session id are two sessions to whatever reads it (what a session warmed:
    :class:`~litellm_kvwarm.warm_prefixes.WarmedPrefixes`). Raises ``ValueError`` on an empty secret."""
    tenant = hash_key(secret, session.tenant) if session.tenant else "-"
    return f"{tenant}:{hash_key(secret, session.session_id)}"


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


def affinity_key(session: Session, secret: bytes | str) -> str:
    """Stable key that pins a session to one deployment (see :func:`rendezvous_pick`):
    ``hash_key(tenant) + hash_key(session id)``, 64 hex chars. Stable across processes only
    when they resolve the same secret (not with the ``"random"`` fallback). Raises
    ``ValueError`` on an empty secret."""
    return hash_key(secret, session.tenant) + hash_key(secret, session.session_id)


def rendezvous_pick(key: str, deployment_ids: list[str], weights: Mapping[str, float] | None = None) -> str | None:
    """Highest-random-weight (rendezvous) choice of a deployment for ``key``.

    Deterministic across processes and replicas with no shared state; when a deployment leaves the set only the
    sessions that were on it move. ``weights`` (id → weight; an id without one, or 0, is never chosen): each id wins
    keys in proportion to its weight (score ``w / -ln(u)``, ``u`` the key's hash in (0, 1)). ``None``: none to choose.
    """
    best, best_score = None, -1.0
    for dep_id in deployment_ids:
        draw = int.from_bytes(hashlib.sha256(f"{key}|{dep_id}".encode()).digest()[:8], "big")
        if weights is None:
            score = float(draw)
        else:
            weight = weights.get(dep_id, 0.0)
            score = weight / -math.log((draw + 0.5) / 2.0**64) if weight > 0 else -1.0
        if score > best_score:
            best, best_score = dep_id, score
    return best if best_score >= 0 else None


def set_cache_salt(data: dict, salt: str) -> bool:
    """Drop any client-sent ``cache_salt`` (top level or ``extra_body``) and send ``salt`` in
    ``extra_body`` (LiteLLM forwards ``extra_body`` to OpenAI-compatible backends as is). An
    ``extra_body`` that is neither absent, ``None`` nor an object is the client's error and is left
    as sent (LiteLLM refuses it as it would without the plugin; such a request carries no salt, so it
    can reach no salted prefix): returns ``False`` then, ``True`` when the salt was set."""
    data.pop("cache_salt", None)
    extra = data.get("extra_body")
    if extra is not None and not isinstance(extra, Mapping):
        return False
    extra = dict(extra) if extra is not None else {}
    extra["cache_salt"] = salt
    data["extra_body"] = extra
    return True


def pin_deployments(key: str, healthy: list, failed: Collection[str] = (),
                    weights: Mapping[str, float] | None = None) -> list:
    """The one deployment of ``healthy`` (LiteLLM deployment dicts, ``model_info.id``) that
    :func:`rendezvous_pick` chooses for ``key`` (with ``weights``) among those not in ``failed`` (ids of
    deployments an earlier attempt of the same request failed on: a retry goes to the session's next choice,
    as LiteLLM alone would re-pick, never back to the replica that just failed); all of ``healthy`` when
    none has an id or every one failed."""
    def dep_id(d: object) -> object:
        info = d.get("model_info") if isinstance(d, Mapping) else None
        return info.get("id") if isinstance(info, Mapping) else None

    ids = [i for i in map(dep_id, healthy) if isinstance(i, str) and i not in failed]
    chosen = rendezvous_pick(key, ids, weights) if ids else None
    return [d for d in healthy if dep_id(d) == chosen] or healthy

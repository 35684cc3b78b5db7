import hashlib
import sys
from types import SimpleNamespace

import pytest

from litellm_kvwarm import identity


SECRET = b"test hash secret"


def key(**kw):
    base = {"team_id": None, "user_id": None, "token": None}
    base.update(kw)
    return SimpleNamespace(**base)


@pytest.mark.parametrize(
    "auth, tenant",
    [
        (key(team_id="t1", user_id="u1", token="h"), "team:t1"),
        (key(user_id="u1", token="h"), "user:u1"),
        (key(token="abc123"), "key:abc123"),
        (key(), None),
        (None, None),
    ],
    ids=["team", "user", "hashed-key", "nothing", "no-auth"],
)
def test_tenant_of(auth, tenant):
    assert identity.tenant_of(auth) == tenant


def test_session_from_litellm_header_then_body_metadata():
    assert identity.session_of({"litellm_session_id": "abc"}, "team:t").session_id == "abc"
    s = identity.session_of({"metadata": {"session_id": "m1"}}, "team:t")
    assert (s.session_id, s.source) == ("m1", "litellm")


def test_fingerprint_is_stable_while_the_conversation_grows():
    first = [{"role": "system", "content": "sys"}, {"role": "user", "content": "hello"}]
    grown = first + [{"role": "assistant", "content": "hi"}, {"role": "user", "content": "more"}]
    a, b = identity.session_of({"messages": first}, "team:t"), identity.session_of({"messages": grown}, "team:t")
    assert a.source == "fingerprint" and a.session_id == b.session_id
    other = identity.session_of({"messages": [{"role": "user", "content": "different"}]}, "team:t")
    assert other.session_id != a.session_id


def test_no_user_message_means_no_session():
    assert identity.session_of({"messages": [{"role": "system", "content": "x"}]}, "team:t") is None
    assert identity.session_of({"prompt": "x"}, "team:t") is None


def test_a_query_without_tenant_is_refused():
    with pytest.raises(identity.MissingTenantError):
        identity.session_of({"litellm_session_id": "abc"}, None)
    with pytest.raises(identity.MissingTenantError):
        identity.scoped_key("warm", identity.Session(tenant="", session_id="s", source="litellm"), SECRET)
    with pytest.raises(identity.MissingTenantError):
        identity.cache_salt("secret", "")


def test_scoped_key_holds_only_hashes_and_separates_tenants():
    a = identity.scoped_key("warm", identity.Session("team:alpha", "session-secret-id", "litellm"), SECRET)
    b = identity.scoped_key("warm", identity.Session("team:beta", "session-secret-id", "litellm"), SECRET)
    assert a != b and "alpha" not in a and "session-secret-id" not in a
    assert a.startswith("warm:") and len(a.split(":")) == 3


def test_hash_key_is_a_keyed_hmac_that_a_guessed_id_does_not_reveal():
    """Issue 12, harm 11: cooldown keys held sha256(tenant), so hashing known team ids told whose
    key it was. Keyed by a secret, the hash matches neither a plain sha256 nor another secret's."""
    h = identity.hash_key(SECRET, "team:alpha")
    assert len(h) == 32 and int(h, 16) >= 0
    assert h == identity.hash_key(SECRET, "team:alpha")  # stable: shared state finds it again
    assert h == identity.hash_key(SECRET.decode(), "team:alpha")  # str secrets are UTF-8
    assert h != identity.hash_key(b"another secret", "team:alpha")
    assert h != identity.hash_key(SECRET, "team:beta")
    assert h not in (hashlib.sha256(b"team:alpha").hexdigest()[:32], hashlib.sha256(b"alpha").hexdigest()[:32])
    with pytest.raises(ValueError):
        identity.hash_key(b"", "team:alpha")


def test_every_key_for_shared_state_uses_the_keyed_hash():
    s = identity.Session("team:alpha", "session-secret-id", "litellm")
    tenant_h, session_h = identity.hash_key(SECRET, s.tenant), identity.hash_key(SECRET, s.session_id)
    assert identity.scoped_key("warm:fast:3", s, SECRET) == f"warm:fast:3:{tenant_h}:{session_h}"
    assert identity.affinity_key(s, SECRET) == tenant_h + session_h
    # tenant-scoped: two tenants with the same session id are two sessions (found by a breaker: warm state shared)
    assert identity.hashed_session(s, SECRET) == f"{tenant_h}:{session_h}" and "session-secret-id" not in session_h
    other_tenant = identity.Session("team:beta", "session-secret-id", "litellm")
    assert identity.hashed_session(other_tenant, SECRET) != identity.hashed_session(s, SECRET)
    plain = hashlib.sha256(b"team:alpha").hexdigest()[:32]
    assert plain not in identity.scoped_key("warm", s, SECRET) and plain not in identity.affinity_key(s, SECRET)
    other = b"other replica secret"
    assert identity.scoped_key("warm", s, other) != identity.scoped_key("warm", s, SECRET)
    assert identity.affinity_key(s, other) != identity.affinity_key(s, SECRET)
    assert identity.hashed_session(s, other) != identity.hashed_session(s, SECRET)


@pytest.mark.parametrize(
    "hash_secret, salt_secret, environ, source",
    [
        ("h", "c", {"KVWARM_CACHE_SALT_SECRET": "e", "LITELLM_SALT_KEY": "s", "LITELLM_MASTER_KEY": "m"}, "hash_secret"),
        ("", "c", {"KVWARM_CACHE_SALT_SECRET": "e", "LITELLM_SALT_KEY": "s", "LITELLM_MASTER_KEY": "m"}, "KVWARM_CACHE_SALT_SECRET"),
        ("", "", {"KVWARM_CACHE_SALT_SECRET": "e", "LITELLM_SALT_KEY": "s", "LITELLM_MASTER_KEY": "m"}, "KVWARM_CACHE_SALT_SECRET"),
        (None, None, {"LITELLM_SALT_KEY": "s", "LITELLM_MASTER_KEY": "m"}, "LITELLM_SALT_KEY"),
        ("", "", {"LITELLM_SALT_KEY": "", "LITELLM_MASTER_KEY": "m"}, "LITELLM_MASTER_KEY"),
        ("", "", {}, "random"),
    ],
    ids=["setting", "salt-setting", "salt-env", "litellm-salt", "master-key", "random"],
)
def test_hash_secret_resolution_order(hash_secret, salt_secret, environ, source):
    key, got = identity.resolve_hash_secret(hash_secret, salt_secret, environ)
    assert got == source
    assert isinstance(key, bytes) and len(key) == 32
    assert identity.resolve_hash_secret(hash_secret, salt_secret, dict(environ)) == (key, source)  # same in every process


def test_resolved_key_is_derived_from_the_secret_not_the_secret_itself():
    key_h, _ = identity.resolve_hash_secret("h", "", {})
    key_c, _ = identity.resolve_hash_secret("", "c", {})
    key_m, _ = identity.resolve_hash_secret("", "", {"LITELLM_MASTER_KEY": "sk-master"})
    assert len({key_h, key_c, key_m}) == 3 and b"sk-master" not in key_m
    # the same string gives the same key whichever name it came from (replicas configured alike agree)
    assert identity.resolve_hash_secret("sk-master", "", {})[0] == key_m
    # the state hash of a tenant is not (a prefix of) its cache_salt under the same secret
    assert identity.hash_key(key_c, "team:a") not in identity.cache_salt("c", "team:a")
    # the random key is one per process: every hook of this process agrees with the others
    assert identity.resolve_hash_secret("", "", {})[0] == identity.resolve_hash_secret(None, None, {})[0]


def _nested(depth: int, leaf: object) -> object:
    value = leaf
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


def test_deeply_nested_content_is_fingerprinted_without_recursion():
    """Issue 12, harm 11: content 1,000+ levels deep raised RecursionError in the fingerprint
    (json.dumps), so the request got no session. Checked with the recursion limit at 200."""
    deep = [{"role": "user", "content": [{"type": "text", "text": "hi"}, _nested(5000, "x")]}]
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(200)
    try:
        a = identity.conversation_fingerprint(deep)
        b = identity.conversation_fingerprint(deep + [{"role": "assistant", "content": "ok"}, {"role": "user", "content": "more"}])
        other = identity.conversation_fingerprint([{"role": "user", "content": [{"type": "text", "text": "hi"}, _nested(5000, "y")]}])
        session = identity.session_of({"messages": deep}, "team:t")
    finally:
        sys.setrecursionlimit(limit)
    assert a is not None and len(a) == 64 and a == b and a != other
    assert session is not None and session.session_id == "fp:" + a


def test_fingerprint_of_a_normal_conversation_is_unchanged():
    """The canonical form is still json.dumps' (sorted keys, compact): sessions keep their
    fingerprint across the upgrade, not only across turns."""
    import json

    messages = [{"role": "system", "content": "sys"}, {"role": "user", "content": [{"type": "text", "text": "héllo"}]}]
    anchor = {"system": "sys", "user": [{"type": "text", "text": "héllo"}]}
    canonical = json.dumps(anchor, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    assert identity.conversation_fingerprint(messages) == hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def test_cache_salt_is_per_tenant_hmac():
    s1, s2 = identity.cache_salt("k", "team:a"), identity.cache_salt("k", "team:b")
    assert s1 != s2 and len(s1) == 64
    assert identity.cache_salt("k", "team:a") == s1
    assert identity.cache_salt("other-secret", "team:a") != s1
    with pytest.raises(ValueError):
        identity.cache_salt("", "team:a")


def test_rendezvous_pick_is_stable_and_moves_only_lost_sessions():
    deps = ["d1", "d2", "d3"]
    keys = [f"k{i}" for i in range(300)]
    picks = {k: identity.rendezvous_pick(k, deps) for k in keys}
    assert set(picks.values()) == set(deps)  # spreads
    assert all(identity.rendezvous_pick(k, list(reversed(deps))) == picks[k] for k in keys)  # order-free
    after = {k: identity.rendezvous_pick(k, ["d1", "d3"]) for k in keys}
    moved = [k for k in keys if after[k] != picks[k]]
    assert moved and all(picks[k] == "d2" for k in moved)
    assert identity.rendezvous_pick("k", []) is None


def test_a_session_id_of_any_length_is_remembered_at_a_bounded_size():
    """Breaker (real proxy): session ids went as sent into a hash memo of 4,096 entries, so one key sending 100 ids of
    5 MB grew the proxy by 500 MB (LiteLLM alone: flat). An id longer than MAX_SESSION_ID_CHARS is its sha256."""
    from litellm_kvwarm.identity import MAX_SESSION_ID_CHARS, client_session_id, session_of

    long_id = "x" * 5_000_000
    for data in ({"litellm_session_id": long_id}, {"metadata": {"session_id": long_id}},
                 {"litellm_metadata": {"session_id": long_id}}):
        sid = client_session_id(data)
        assert sid is not None and sid.startswith("sha256:") and len(sid) == 7 + 64
        assert session_of(data, "tenant-a").session_id == sid
    assert client_session_id({"litellm_session_id": long_id + "y"}) != client_session_id({"litellm_session_id": long_id})
    short = "s" * MAX_SESSION_ID_CHARS
    assert client_session_id({"litellm_session_id": short}) == short
    assert client_session_id({"metadata": {"session_id": "abc"}}) == "abc"

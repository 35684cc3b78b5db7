from types import SimpleNamespace

import pytest

from litellm_kvwarm import identity


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
        identity.scoped_key("warm", identity.Session(tenant="", session_id="s", source="litellm"))
    with pytest.raises(identity.MissingTenantError):
        identity.cache_salt("secret", "")


def test_scoped_key_holds_only_hashes_and_separates_tenants():
    a = identity.scoped_key("warm", identity.Session("team:alpha", "session-secret-id", "litellm"))
    b = identity.scoped_key("warm", identity.Session("team:beta", "session-secret-id", "litellm"))
    assert a != b and "alpha" not in a and "session-secret-id" not in a
    assert a.startswith("warm:") and len(a.split(":")) == 3


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

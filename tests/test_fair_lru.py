"""FairLRU: a bounded LRU whose evictions are fair between tenants, and the per-session stores built on it
(a session's steps, what a session last warmed, calls waiting for their reply-warm)."""

from __future__ import annotations

import random

import pytest

from litellm_kvwarm.fair_lru import FairLRU
from litellm_kvwarm.pending_replies import PendingReplies, PendingReply
from litellm_kvwarm.session_steps import SessionSteps
from litellm_kvwarm.warm_prefixes import WarmedPrefixes


def by_prefix(key: str) -> str:
    return key.split("/")[0]


def test_one_tenant_is_a_plain_lru_of_capacity_entries():
    lru: FairLRU[str, int] = FairLRU(3, by_prefix)
    for i, key in enumerate(["t/a", "t/b", "t/c"]):
        lru[key] = i
    lru["t/a"] = 10  # a write makes it the most recently used
    assert lru.get("t/b") == 1  # a read does not
    lru["t/d"] = 3
    assert list(lru) == ["t/c", "t/a", "t/d"] and "t/b" not in lru and lru.get("t/a") == 10
    assert lru.oldest() == ("t/c", 2) and lru.pop_oldest() == ("t/c", 2) and len(lru) == 2
    assert lru.pop("t/zz", -1) == -1 and lru.pop("t/a") == 10 and list(lru) == ["t/d"]


def test_a_burst_of_one_tenants_keys_evicts_only_its_own():
    lru: FairLRU[str, int] = FairLRU(10, by_prefix)
    for i in range(3):
        lru[f"b/{i}"] = i  # tenant b: 3 entries, within its share (10 ÷ 2 tenants = 5)
    for i in range(1_000):
        lru[f"a/{i}"] = i  # tenant a opens 1,000 sessions
    assert [k for k in lru if k.startswith("b/")] == ["b/0", "b/1", "b/2"]
    assert lru.tenant_len("a") == 7 and [k for k in lru if k.startswith("a/")] == [f"a/{i}" for i in range(993, 1000)]


def test_a_tenant_over_its_share_pays_for_a_newcomer_within_it():
    lru: FairLRU[str, int] = FairLRU(4, by_prefix)
    for i in range(4):
        lru[f"a/{i}"] = i  # a holds all 4
    lru["b/0"] = 0  # share is 2 each now: a's oldest goes, though b's is the newest key
    assert list(lru) == ["a/1", "a/2", "a/3", "b/0"]
    lru["b/1"] = 1
    assert list(lru) == ["a/2", "a/3", "b/0", "b/1"]
    lru["b/2"] = 2  # b is over its share itself: its own oldest goes
    assert list(lru) == ["a/2", "a/3", "b/1", "b/2"]


def test_more_tenants_than_capacity_drop_the_oldest_overall():
    lru: FairLRU[str, int] = FairLRU(2, by_prefix)
    lru["a/0"], lru["b/0"], lru["c/0"] = 0, 1, 2
    assert list(lru) == ["b/0", "c/0"] and lru.tenant_len("a") == 0


def test_capacity_below_one_is_refused():
    with pytest.raises(ValueError):
        FairLRU(0, by_prefix)


@pytest.mark.parametrize("seed", range(30))
def test_random_writes_evict_only_the_oldest_entry_of_a_tenant_holding_the_most(seed):
    rng = random.Random(seed)
    capacity = rng.randint(1, 12)
    tenants = [f"t{i}" for i in range(rng.randint(1, 6))]
    lru: FairLRU[str, int] = FairLRU(capacity, by_prefix)
    evictions = 0
    for step in range(500):
        key = f"{rng.choice(tenants)}/{rng.randint(0, 15)}"
        if rng.random() < 0.1:
            lru.pop(key)
            continue
        before = list(lru)
        lru[key] = step
        assert len(lru) <= capacity and lru.get(key) == step and list(lru)[-1] == key
        gone = [k for k in before if k not in lru]
        if not gone:
            continue
        evictions += 1
        (victim,) = gone  # one insert evicts one entry
        counts: dict[str, int] = {}
        for k in before + ([key] if key not in before else []):
            counts[by_prefix(k)] = counts.get(by_prefix(k), 0) + 1
        most = max(counts.values())
        owner = by_prefix(victim)
        if most == 1:
            assert victim == before[0]  # every tenant held one: the oldest overall
            continue
        assert counts[owner] == most  # only a tenant holding the most loses an entry
        assert victim == next(k for k in before if by_prefix(k) == owner)  # and it loses its least recently used
        if counts[by_prefix(key)] == most:
            assert owner == by_prefix(key)  # the inserting tenant pays when it is among those holding the most
        assert sum(1 for k in lru if by_prefix(k) == owner) == lru.tenant_len(owner)
    assert evictions > 0 or capacity >= 16 * len(tenants)


# --------------------------------------------------------------------------- the stores built on it


def test_a_tenants_burst_of_sessions_keeps_another_tenants_steps():
    steps = SessionSteps(capacity=100, ttl_s=3600, clock=lambda: 0.0)
    steps.observe("steps:tenant-b:s1", 2_000)
    steps.observe("steps:tenant-b:s1", 9_000)
    for i in range(10_000):
        steps.observe(f"steps:tenant-a:s{i}", 1_000)
    assert steps.largest_step("steps:tenant-b:s1") == 7_000 and len(steps) == 100
    assert steps.seen("steps:tenant-a:s9999") and not steps.seen("steps:tenant-a:s0")


def test_a_tenants_burst_of_calls_keeps_another_tenants_pending_reply():
    pending = PendingReplies(capacity=50, ttl_s=600, clock=lambda: 0.0)
    entry = PendingReply(candidate=None, kind="chat", body={"messages": []})
    pending.put("tenant-b", "call-b", entry)
    for i in range(5_000):
        pending.put("tenant-a", f"call-{i}", entry)
    assert pending.pop("tenant-b", "call-b") is entry and len(pending) == 49


def _chat(session: str, n: int = 3) -> dict:
    messages = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i} of {session}"} for i in range(n)]
    return {"model": "slow", "messages": messages, "metadata": {"kvwarm_session": session}}


def test_a_tenants_burst_of_warms_keeps_what_another_tenants_session_warmed():
    warmed = WarmedPrefixes(capacity=20)
    warmed.remember("chat", _chat("hash-b:sess-1"))
    for i in range(2_000):
        warmed.remember("chat", _chat(f"hash-a:sess-{i}"))
    assert warmed.items("chat", _chat("hash-b:sess-1")) == 3 and len(warmed) == 20
    assert warmed.items("chat", _chat("hash-a:sess-0")) == 0 and warmed.items("chat", _chat("hash-a:sess-1999")) == 3


async def test_a_tenants_warms_keep_another_tenants_cooldown_in_the_memory_store():
    from litellm_kvwarm.cooldown import MemoryCooldownStore

    store = MemoryCooldownStore(capacity=8, clock=lambda: 1_000.0)
    assert await store.acquire("warm:qwen3:8b:ahead:3:tenant-b:s1", 300)
    for i in range(100):
        assert await store.acquire(f"warm:qwen3:8b:ahead:3:tenant-a:s{i}", 300)
    assert await store.acquire("warm:qwen3:8b:ahead:3:tenant-b:s1", 300) is False  # still cooling down
    assert await store.acquire("warm:qwen3:8b:ahead:3:tenant-a:s0", 300) is True and len(store) == 8

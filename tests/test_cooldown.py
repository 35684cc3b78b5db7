"""One contract suite for every cooldown store (memory, Redis, Redis-with-fallback), with an
injected clock: no test sleeps for a cooldown or a rate window to pass. ``acquire`` is the
session cooldown alone; ``admit`` adds the tenant's warm rate (issue 12, items 4 and 10)."""

from __future__ import annotations

import asyncio

import pytest
import redis.asyncio as aioredis

from litellm_kvwarm.cooldown import (
    REDIS_EXPIRY_SLACK_MS,
    Admission,
    CooldownStoreError,
    FallbackCooldownStore,
    MemoryCooldownStore,
    RedisCooldownStore,
    TenantRate,
)

ADMITTED, COOLDOWN, RATE = Admission.ADMITTED, Admission.COOLDOWN, Admission.RATE


class FakeClock:
    def __init__(self, now: float = 1_700_000_000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now

    def tick(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture(params=["memory", "redis", "fallback"])
async def store_and_clock(request, redis_server):
    clock = FakeClock()
    client = None
    if request.param == "memory":
        store = MemoryCooldownStore(capacity=64, clock=clock)
    else:
        client = aioredis.Redis.from_url(redis_server.url)
        await client.flushdb()
        redis_store = RedisCooldownStore(client, prefix="test", clock=clock)
        store = redis_store if request.param == "redis" else FallbackCooldownStore(
            redis_store, MemoryCooldownStore(clock=clock), clock=clock
        )
    yield store, clock
    await store.aclose()


async def test_first_acquire_wins_second_waits(store_and_clock):
    store, _ = store_and_clock
    assert await store.acquire("t:s1", 300) is True
    assert await store.acquire("t:s1", 300) is False


async def test_cooldown_ends_on_the_clock(store_and_clock):
    store, clock = store_and_clock
    assert await store.acquire("t:s1", 300) is True
    clock.tick(299.9)
    assert await store.acquire("t:s1", 300) is False
    clock.tick(0.2)
    assert await store.acquire("t:s1", 300) is True
    assert await store.acquire("t:s1", 300) is False


async def test_keys_are_independent(store_and_clock):
    store, _ = store_and_clock
    assert await store.acquire("tenantA:s", 300) is True
    assert await store.acquire("tenantB:s", 300) is True
    assert await store.acquire("tenantA:s2", 300) is True


async def test_concurrent_acquires_fire_exactly_once(store_and_clock):
    store, _ = store_and_clock
    results = await asyncio.gather(*(store.acquire("t:race", 300) for _ in range(20)))
    assert results.count(True) == 1


async def test_memory_store_is_bounded_lru():
    clock = FakeClock()
    store = MemoryCooldownStore(capacity=3, clock=clock)
    for key in ("a", "b", "c"):
        assert await store.acquire(key, 300)
    assert await store.acquire("a", 300) is False  # touch a: b is now least recent
    assert await store.acquire("d", 300) is True
    assert len(store) == 3
    assert await store.acquire("b", 300) is True  # b was dropped, so it may fire again
    assert await store.acquire("a", 300) is False


async def test_two_clients_sharing_redis_fire_once(redis_server):
    clock = FakeClock()
    c1, c2 = aioredis.Redis.from_url(redis_server.url), aioredis.Redis.from_url(redis_server.url)
    s1, s2 = RedisCooldownStore(c1, prefix="shared", clock=clock), RedisCooldownStore(c2, prefix="shared", clock=clock)
    try:
        results = await asyncio.gather(*(s.acquire("t:x", 300) for s in (s1, s2, s1, s2)))
        assert results.count(True) == 1
    finally:
        await s1.aclose()
        await s2.aclose()


async def test_redis_key_expires_in_redis_too(redis_server):
    clock = FakeClock()
    client = aioredis.Redis.from_url(redis_server.url)
    store = RedisCooldownStore(client, prefix="ttl", clock=clock)
    await store.acquire("t:y", 300)
    ttl_ms = await client.pttl("ttl:t:y")
    assert 300_000 < ttl_ms <= 305_000
    await store.aclose()


async def test_redis_down_raises_store_error():
    client = aioredis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2)
    store = RedisCooldownStore(client)
    with pytest.raises(CooldownStoreError):
        await store.acquire("t:z", 300)
    await store.aclose()


async def test_fallback_serves_from_memory_and_returns_to_redis(redis_server):
    clock = FakeClock()
    falls = []
    broken = RedisCooldownStore(aioredis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2), clock=clock)
    store = FallbackCooldownStore(broken, MemoryCooldownStore(clock=clock), clock=clock, retry_after_s=30, on_fallback=falls.append)
    assert await store.acquire("t:f", 300) is True
    assert store.backend == "memory"
    assert await store.acquire("t:f", 300) is False  # memory keeps the cooldown
    assert len(falls) == 1  # not retried within retry_after_s
    # Redis comes back (swap the primary for a working one) and is used after retry_after_s
    store._primary = RedisCooldownStore(aioredis.Redis.from_url(redis_server.url), prefix="back", clock=clock)
    clock.tick(31)
    assert await store.acquire("t:g", 300) is True
    assert store.backend == "redis"
    await store.aclose()


# -- admit: the session cooldown and the tenant's warm rate, taken together -------------------


async def test_admit_takes_the_cooldown(store_and_clock):
    store, clock = store_and_clock
    assert await store.admit("t:s1", 300) is ADMITTED
    assert await store.admit("t:s1", 300) is COOLDOWN
    assert await store.acquire("t:s1", 300) is False  # acquire and admit share the cooldown
    clock.tick(300.1)
    assert await store.admit("t:s1", 300) is ADMITTED


async def test_rate_caps_a_tenant_with_rotating_sessions(store_and_clock):
    store, _ = store_and_clock
    answers = [await store.admit(f"A:s{i}", 300, "rate:A", 3, 60) for i in range(6)]
    assert answers == [ADMITTED] * 3 + [RATE] * 3
    # another tenant has its own window
    assert [await store.admit(f"B:s{i}", 300, "rate:B", 3, 60) for i in range(3)] == [ADMITTED] * 3


async def test_refused_admission_takes_nothing(store_and_clock):
    store, clock = store_and_clock
    assert await store.admit("A:s1", 300, "rate:A", 2, 60) is ADMITTED
    # refused by the cooldown: no slot of the tenant's window is used
    assert await store.admit("A:s1", 300, "rate:A", 2, 60) is COOLDOWN
    assert await store.admit("A:s2", 300, "rate:A", 2, 60) is ADMITTED
    # refused by the rate: the session's cooldown is not started
    assert await store.admit("A:s3", 300, "rate:A", 2, 60) is RATE
    clock.tick(60.1)
    assert await store.admit("A:s3", 300, "rate:A", 2, 60) is ADMITTED
    assert await store.admit("A:s3", 300, "rate:A", 2, 60) is COOLDOWN


async def test_rate_window_slides(store_and_clock):
    store, clock = store_and_clock
    assert await store.admit("A:a", 300, "rate:A", 2, 60) is ADMITTED  # t=0
    clock.tick(30)
    assert await store.admit("A:b", 300, "rate:A", 2, 60) is ADMITTED  # t=30
    clock.tick(29.9)
    assert await store.admit("A:c", 300, "rate:A", 2, 60) is RATE  # t=59.9: both still in the window
    clock.tick(0.2)
    assert await store.admit("A:c", 300, "rate:A", 2, 60) is ADMITTED  # t=60.1: a left the window
    assert await store.admit("A:d", 300, "rate:A", 2, 60) is RATE  # b (t=30) and c (t=60.1) are in


async def test_no_rate_without_a_key_or_a_limit(store_and_clock):
    store, _ = store_and_clock
    assert [await store.admit(f"A:s{i}", 300, None, 1, 60) for i in range(5)] == [ADMITTED] * 5
    assert [await store.admit(f"A:t{i}", 300, "rate:A", 0, 60) for i in range(5)] == [ADMITTED] * 5


async def test_concurrent_admits_respect_both_limits(store_and_clock):
    store, _ = store_and_clock
    sessions = [f"A:s{i % 8}" for i in range(40)]  # 8 sessions, each tried 5 times at once
    answers = await asyncio.gather(*(store.admit(s, 300, "rate:A", 5, 60) for s in sessions))
    admitted = [s for s, a in zip(sessions, answers) if a is ADMITTED]
    assert len(admitted) == 5 and len(set(admitted)) == 5  # the tenant's 5, never one session twice
    assert answers.count(RATE) + answers.count(COOLDOWN) == 35


@pytest.mark.parametrize(
    ("per_minute", "limit", "window_s"),
    [(120, 120, 60.0), (1, 1, 60.0), (0.5, 1, 120.0), (1.5, 1, 40.0), (30.5, 30, 60 * 30 / 30.5)],
    ids=["120/min", "1/min", "0.5/min", "1.5/min", "30.5/min"],
)
def test_tenant_rate_per_minute(per_minute, limit, window_s):
    rate = TenantRate.per_minute(per_minute)
    assert rate == TenantRate(limit, pytest.approx(window_s))
    assert rate.limit * 60 / rate.window_s == pytest.approx(per_minute)  # the long-run rate is kept


def test_tenant_rate_zero_is_no_cap_and_negative_is_an_error():
    assert TenantRate.per_minute(0) is None
    with pytest.raises(ValueError):
        TenantRate.per_minute(-1)


async def test_memory_store_bounds_tenant_windows():
    clock = FakeClock()
    store = MemoryCooldownStore(capacity=100, rate_capacity=2, clock=clock)
    for tenant in ("A", "B"):
        assert await store.admit(f"{tenant}:s", 300, f"rate:{tenant}", 1, 60) is ADMITTED
    assert await store.admit("A:s2", 300, "rate:A", 1, 60) is RATE  # touch A: B is least recent
    assert await store.admit("C:s", 300, "rate:C", 1, 60) is ADMITTED  # C pushes B's window out
    assert await store.admit("B:s2", 300, "rate:B", 1, 60) is ADMITTED  # B's window was dropped (A's now)
    assert await store.admit("C:s2", 300, "rate:C", 1, 60) is RATE  # C's window is still kept


async def test_redis_rate_key_expires_with_its_window(redis_server):
    clock = FakeClock()
    client = aioredis.Redis.from_url(redis_server.url)
    store = RedisCooldownStore(client, prefix="rttl", clock=clock)
    assert await store.admit("A:s", 300, "rate:A", 5, 60) is ADMITTED
    assert 60_000 < await client.pttl("rttl:rate:A") <= 60_000 + REDIS_EXPIRY_SLACK_MS
    assert await client.zcard("rttl:rate:A") == 1
    assert await client.exists("rttl:A:s:rate") == 0  # without a rate, no rate key is written
    await store.admit("B:s", 300)
    assert await client.exists("rttl:B:s:rate") == 0
    await store.aclose()


async def test_two_clients_sharing_redis_share_the_tenant_rate(redis_server):
    clock = FakeClock()
    c1, c2 = aioredis.Redis.from_url(redis_server.url), aioredis.Redis.from_url(redis_server.url)
    s1, s2 = RedisCooldownStore(c1, prefix="shrate", clock=clock), RedisCooldownStore(c2, prefix="shrate", clock=clock)
    try:
        answers = await asyncio.gather(*((s1, s2)[i % 2].admit(f"A:s{i}", 300, "rate:A", 4, 60) for i in range(12)))
        assert answers.count(ADMITTED) == 4 and answers.count(RATE) == 8
    finally:
        await s1.aclose()
        await s2.aclose()


async def test_fallback_admits_from_memory_with_the_rate():
    clock = FakeClock()
    broken = RedisCooldownStore(aioredis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2), clock=clock)
    store = FallbackCooldownStore(broken, MemoryCooldownStore(clock=clock), clock=clock)
    assert [await store.admit(f"A:s{i}", 300, "rate:A", 2, 60) for i in range(3)] == [ADMITTED, ADMITTED, RATE]
    assert store.backend == "memory"
    await store.aclose()

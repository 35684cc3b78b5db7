"""One contract suite for every cooldown store (memory, Redis, Redis-with-fallback), with an
injected clock: no test sleeps for a cooldown to pass."""

from __future__ import annotations

import asyncio

import pytest
import redis.asyncio as aioredis

from litellm_kvwarm.cooldown import (
    CooldownStoreError,
    FallbackCooldownStore,
    MemoryCooldownStore,
    RedisCooldownStore,
)


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

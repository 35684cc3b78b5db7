"""One contract suite for every cooldown store (memory, Redis, Redis-with-fallback). ``acquire``
is the session cooldown alone; ``admit`` adds the tenant's warm rate (issue 12, items 4 and 10).

The memory store runs on an injected clock (no test sleeps for it). The Redis store reads no
clock of its own (a cooldown is ``SET key 1 NX PX``, the rate window uses Redis's ``TIME``), so
its tests that need time to pass use short durations and real sleeps, with margins of at least
200 ms either side of every boundary they assert."""

from __future__ import annotations

import asyncio
import inspect
import time

import pytest
import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from litellm_kvwarm.cooldown import (
    Admission,
    CooldownStoreError,
    FallbackCooldownStore,
    MemoryCooldownStore,
    RedisCooldownStore,
    TenantRate,
)

ADMITTED, COOLDOWN, RATE = Admission.ADMITTED, Admission.COOLDOWN, Admission.RATE
#: Seconds per test unit on a real Redis (cooldowns of 10 units = 0.5 s).
REDIS_UNIT_S = 0.05


class FakeClock:
    def __init__(self, now: float = 1_700_000_000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now

    def tick(self, seconds: float) -> None:
        self.now += seconds


async def _make_store(kind: str, redis_server, prefix: str = "test"):
    """``(store, advance, unit)``: ``await advance(units)`` lets ``units`` pass for the store."""
    if kind == "memory":
        clock = FakeClock()

        async def tick(units: float) -> None:
            clock.tick(units)

        return MemoryCooldownStore(capacity=64, clock=clock), tick, 1.0
    client = aioredis.Redis.from_url(redis_server.url)
    await client.flushdb()
    redis_store = RedisCooldownStore(client, prefix=prefix)
    store = redis_store if kind == "redis" else FallbackCooldownStore(redis_store, MemoryCooldownStore())

    async def sleep(units: float) -> None:
        await asyncio.sleep(units * REDIS_UNIT_S)

    return store, sleep, REDIS_UNIT_S


@pytest.fixture(params=["memory", "redis", "fallback"])
async def timed_store(request, redis_server):
    store, advance, unit = await _make_store(request.param, redis_server)
    yield store, advance, unit
    await store.aclose()


@pytest.fixture
async def store_and_clock(timed_store):
    """The contract tests in which no time passes."""
    store, _, _ = timed_store
    return store, None


async def test_first_acquire_wins_second_waits(store_and_clock):
    store, _ = store_and_clock
    assert await store.acquire("t:s1", 300) is True
    assert await store.acquire("t:s1", 300) is False


async def test_cooldown_ends_when_it_is_over(timed_store):
    store, advance, u = timed_store
    assert await store.acquire("t:s1", 10 * u) is True
    await advance(5)
    assert await store.acquire("t:s1", 10 * u) is False
    await advance(6)
    assert await store.acquire("t:s1", 10 * u) is True
    assert await store.acquire("t:s1", 10 * u) is False


async def test_memory_cooldown_ends_on_the_clock():
    clock = FakeClock()
    store = MemoryCooldownStore(clock=clock)
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
    c1, c2 = aioredis.Redis.from_url(redis_server.url), aioredis.Redis.from_url(redis_server.url)
    s1, s2 = RedisCooldownStore(c1, prefix="shared"), RedisCooldownStore(c2, prefix="shared")
    try:
        results = await asyncio.gather(*(s.acquire("t:x", 300) for s in (s1, s2, s1, s2)))
        assert results.count(True) == 1
    finally:
        await s1.aclose()
        await s2.aclose()


async def test_redis_key_expires_in_redis_too(redis_server):
    client = aioredis.Redis.from_url(redis_server.url)
    store = RedisCooldownStore(client, prefix="ttl")
    await store.acquire("t:y", 300)
    assert 299_000 < await client.pttl("ttl:t:y") <= 300_000  # SET NX PX: the key's expiry is the deadline
    await store.aclose()


@pytest.mark.parametrize("rate", [0, 5], ids=["set-nx-px", "script"])
async def test_redis_value_is_the_deadline_an_earlier_release_reads(redis_server, rate):
    """Rolling upgrade: replicas of the release before compared the key's value (a deadline in epoch
    seconds) with their clock; both admission paths store it, so an old replica sees the cooldown."""
    client = aioredis.Redis.from_url(redis_server.url)
    store = RedisCooldownStore(client, prefix=f"dl{rate}")
    before = time.time()
    assert await store.admit("t:y", 300, "rate:t" if rate else None, rate, 60) is Admission.ADMITTED
    deadline = float(await client.get(f"dl{rate}:t:y"))
    assert before + 299 < deadline < time.time() + 301  # the old replica's test: deadline > now → cooldown runs
    await store.aclose()


async def test_redis_down_raises_store_error():
    client = aioredis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2, retry=Retry(NoBackoff(), 0))
    store = RedisCooldownStore(client)
    with pytest.raises(CooldownStoreError):
        await store.acquire("t:z", 300)
    with pytest.raises(CooldownStoreError):
        await store.admit("t:z", 300, "rate:t", 3, 60)
    await store.aclose()


async def test_fallback_serves_from_memory_and_returns_to_redis(redis_server):
    clock = FakeClock()
    falls = []
    broken = RedisCooldownStore(aioredis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2))
    store = FallbackCooldownStore(broken, MemoryCooldownStore(clock=clock), clock=clock, retry_after_s=30, on_fallback=falls.append)
    assert await store.acquire("t:f", 300) is True
    assert store.backend == "memory"
    assert await store.acquire("t:f", 300) is False  # memory keeps the cooldown
    assert len(falls) == 1  # not retried within retry_after_s
    # Redis comes back (swap the primary for a working one) and is used after retry_after_s
    store._primary = RedisCooldownStore(aioredis.Redis.from_url(redis_server.url), prefix="back")
    clock.tick(31)
    assert await store.acquire("t:g", 300) is True
    assert store.backend == "redis"
    await store.aclose()


# -- Redis: native SET NX PX, Redis's own clock, both-or-neither -----------------------------------


@pytest.fixture
async def redis_pair(redis_server):
    client = aioredis.Redis.from_url(redis_server.url)
    await client.flushdb()
    store = RedisCooldownStore(client, prefix="nx")
    yield store, client
    await store.aclose()


def test_redis_store_reads_no_caller_clock():
    assert "clock" not in inspect.signature(RedisCooldownStore).parameters


async def test_redis_cooldown_is_set_nx(redis_pair):
    store, client = redis_pair
    # a cooldown taken by another writer (another replica) blocks this one, with or without a rate
    assert await client.set("nx:t:other", 1, nx=True, px=60_000)
    assert await store.acquire("t:other", 300) is False
    assert await store.admit("t:other", 300, "rate:t", 3, 60) is COOLDOWN
    assert await client.zcard("nx:rate:t") == 0  # refused: the tenant's window is untouched
    # a refused attempt does not restart the cooldown: NX leaves the key and its expiry alone
    assert await store.acquire("t:s", 1.0) is True
    await asyncio.sleep(0.3)
    assert await store.acquire("t:s", 1.0) is False
    assert await store.admit("t:s", 1.0, "rate:t", 3, 60) is COOLDOWN
    assert 0 < await client.pttl("nx:t:s") <= 750


async def test_redis_cooldown_ends_on_redis_clock_not_the_callers(redis_pair, monkeypatch):
    store, _ = redis_pair
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() + 10 * 365 * 86400)  # a caller ten years ahead
    assert await store.acquire("t:s", 0.5) is True
    assert await store.acquire("t:s", 0.5) is False  # the caller's clock cannot end a cooldown
    assert [await store.admit(f"A:s{i}", 300, "rate:A", 2, 60) for i in range(3)] == [ADMITTED, ADMITTED, RATE]
    monkeypatch.setattr(time, "time", lambda: real() - 10 * 365 * 86400)  # ... or ten years behind
    assert await store.acquire("t:s", 0.5) is False
    assert await store.admit("A:s9", 300, "rate:A", 2, 60) is RATE  # nor empty a tenant's window
    await asyncio.sleep(0.7)  # Redis's clock passes the cooldown: it ends, whatever the caller's says
    assert await store.acquire("t:s", 0.5) is True


async def test_redis_rate_window_uses_redis_time(redis_pair):
    store, client = redis_pair
    assert await store.admit("A:s", 300, "rate:A", 5, 60) is ADMITTED
    (score,) = [s for _, s in await client.zrange("nx:rate:A", 0, -1, withscores=True)]
    seconds, micros = await client.time()
    assert 0 <= seconds + micros / 1e6 - score < 5  # an admission time in seconds, on Redis's clock


async def test_redis_admission_is_both_or_neither(redis_pair):
    store, client = redis_pair
    assert await store.admit("A:s1", 300, "rate:A", 2, 60) is ADMITTED
    assert await client.exists("nx:A:s1") == 1 and await client.zcard("nx:rate:A") == 1  # both taken
    # refused by the cooldown: the window keeps its one admission
    assert await store.admit("A:s1", 300, "rate:A", 2, 60) is COOLDOWN
    assert await client.zcard("nx:rate:A") == 1
    assert await store.admit("A:s2", 300, "rate:A", 2, 60) is ADMITTED
    # refused by the rate: no cooldown is started for the session
    assert await store.admit("A:s3", 300, "rate:A", 2, 60) is RATE
    assert await client.exists("nx:A:s3") == 0 and await client.zcard("nx:rate:A") == 2
    # concurrent admissions of many sessions: each admitted one took both, each refused one neither
    answers = await asyncio.gather(*(store.admit(f"B:s{i}", 300, "rate:B", 3, 60) for i in range(12)))
    admitted = {i for i, a in enumerate(answers) if a is ADMITTED}
    assert len(admitted) == 3 and answers.count(RATE) == 9
    assert {i for i in range(12) if await client.exists(f"nx:B:s{i}")} == admitted
    assert await client.zcard("nx:rate:B") == 3


# -- admit: the session cooldown and the tenant's warm rate, taken together -------------------


async def test_admit_takes_the_cooldown(timed_store):
    store, advance, u = timed_store
    assert await store.admit("t:s1", 10 * u) is ADMITTED
    assert await store.admit("t:s1", 10 * u) is COOLDOWN
    assert await store.acquire("t:s1", 10 * u) is False  # acquire and admit share the cooldown
    await advance(11)
    assert await store.admit("t:s1", 10 * u) is ADMITTED


async def test_rate_caps_a_tenant_with_rotating_sessions(store_and_clock):
    store, _ = store_and_clock
    answers = [await store.admit(f"A:s{i}", 300, "rate:A", 3, 60) for i in range(6)]
    assert answers == [ADMITTED] * 3 + [RATE] * 3
    # another tenant has its own window
    assert [await store.admit(f"B:s{i}", 300, "rate:B", 3, 60) for i in range(3)] == [ADMITTED] * 3


async def test_refused_admission_takes_nothing(timed_store):
    store, advance, u = timed_store
    c, w = 100 * u, 10 * u
    assert await store.admit("A:s1", c, "rate:A", 2, w) is ADMITTED
    # refused by the cooldown: no slot of the tenant's window is used
    assert await store.admit("A:s1", c, "rate:A", 2, w) is COOLDOWN
    assert await store.admit("A:s2", c, "rate:A", 2, w) is ADMITTED
    # refused by the rate: the session's cooldown is not started
    assert await store.admit("A:s3", c, "rate:A", 2, w) is RATE
    await advance(11)
    assert await store.admit("A:s3", c, "rate:A", 2, w) is ADMITTED
    assert await store.admit("A:s3", c, "rate:A", 2, w) is COOLDOWN


async def test_rate_window_slides(timed_store):
    store, advance, u = timed_store
    c, w = 100 * u, 20 * u
    assert await store.admit("A:a", c, "rate:A", 2, w) is ADMITTED  # t=0
    await advance(8)
    assert await store.admit("A:b", c, "rate:A", 2, w) is ADMITTED  # t=8
    await advance(8)
    assert await store.admit("A:c", c, "rate:A", 2, w) is RATE  # t=16: both still in the window
    await advance(5)
    assert await store.admit("A:c", c, "rate:A", 2, w) is ADMITTED  # t=21: a left the window
    assert await store.admit("A:d", c, "rate:A", 2, w) is RATE  # b (t=8) and c (t=21) are in


async def test_memory_rate_window_slides_on_the_clock():
    clock = FakeClock()
    store = MemoryCooldownStore(clock=clock)
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


def test_memory_store_rejects_capacity_below_one():
    with pytest.raises(ValueError):
        MemoryCooldownStore(capacity=0)
    with pytest.raises(ValueError):
        MemoryCooldownStore(rate_capacity=0)


async def test_redis_rate_key_expires_with_its_window(redis_server):
    client = aioredis.Redis.from_url(redis_server.url)
    store = RedisCooldownStore(client, prefix="rttl")
    assert await store.admit("A:s", 300, "rate:A", 5, 60) is ADMITTED
    assert 59_000 < await client.pttl("rttl:rate:A") <= 60_000  # the last admission leaves the window then
    assert await client.zcard("rttl:rate:A") == 1
    assert await client.exists("rttl:A:s:rate") == 0  # without a rate, no rate key is written
    await store.admit("B:s", 300)
    assert await client.exists("rttl:B:s:rate") == 0
    await store.aclose()


async def test_two_clients_sharing_redis_share_the_tenant_rate(redis_server):
    c1, c2 = aioredis.Redis.from_url(redis_server.url), aioredis.Redis.from_url(redis_server.url)
    s1, s2 = RedisCooldownStore(c1, prefix="shrate"), RedisCooldownStore(c2, prefix="shrate")
    try:
        answers = await asyncio.gather(*((s1, s2)[i % 2].admit(f"A:s{i}", 300, "rate:A", 4, 60) for i in range(12)))
        assert answers.count(ADMITTED) == 4 and answers.count(RATE) == 8
    finally:
        await s1.aclose()
        await s2.aclose()


async def test_fallback_admits_from_memory_with_the_rate():
    clock = FakeClock()
    broken = RedisCooldownStore(aioredis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2))
    store = FallbackCooldownStore(broken, MemoryCooldownStore(clock=clock), clock=clock)
    assert [await store.admit(f"A:s{i}", 300, "rate:A", 2, 60) for i in range(3)] == [ADMITTED, ADMITTED, RATE]
    assert store.backend == "memory"
    await store.aclose()

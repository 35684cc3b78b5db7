"""The warm runner: bounded queue fair across tenants, admission when a slot takes the warm,
per-tenant rate, outcomes and drops; and the warm body and metadata (issue 12, items 4, 10, 11
and 13, and the adversarial finding that one tenant's burst delayed every tenant's warms)."""

from __future__ import annotations

import asyncio
import json
from collections import Counter

import pytest

from litellm_kvwarm.cooldown import Admission, MemoryCooldownStore
from litellm_kvwarm.meta import AFFINITY_KEY, SALT_KEY, WARM_MARKER
from litellm_kvwarm.warm import (
    PROMPT_SHAPING_KEYS,
    SESSION_KEY,
    SPEND_IDENTITY_KEYS,
    DropReason,
    WarmJob,
    WarmOutcome,
    WarmRunner,
    warm_metadata,
    warm_request,
)


class FakeClock:
    def __init__(self, now: float = 1_700_000_000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now

    def tick(self, seconds: float) -> None:
        self.now += seconds


class SpyStore(MemoryCooldownStore):
    """The real memory store, counting admissions (to show what the memo saves)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.admits = 0

    async def admit(self, *args, **kwargs):
        self.admits += 1
        return await super().admit(*args, **kwargs)


class Recorder:
    """Sender and every runner callback; the sender can be held with ``gate``."""

    def __init__(self, *, hold: bool = False, delay_s: float = 0.0):
        self.gate = asyncio.Event()
        if not hold:
            self.gate.set()
        self.delay_s = delay_s
        self.sent: list[tuple[str, dict]] = []
        self.started = asyncio.Event()
        self.now_in_flight = 0
        self.max_in_flight = 0
        self.outcomes: list[WarmOutcome] = []
        self.done: list[WarmOutcome] = []
        self.drops: list[DropReason] = []
        self.depths: list[int] = []

    async def send(self, kind, body):
        self.now_in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.now_in_flight)
        self.started.set()
        try:
            await self.gate.wait()
            if self.delay_s:
                await asyncio.sleep(self.delay_s)
            self.sent.append((kind, body))
            if body.get("fail"):
                raise RuntimeError("backend down")
        finally:
            self.now_in_flight -= 1

    def runner(self, **kwargs) -> WarmRunner:
        return WarmRunner(
            self.send,
            on_done=lambda o, d, t, g: self.done.append(o),
            on_outcome=lambda o, t, g: self.outcomes.append(o),
            on_drop=lambda r, t: self.drops.append(r),
            on_queue_depth=self.depths.append,
            **kwargs,
        )

    def sessions_sent(self) -> list[str]:
        return [body["messages"][0]["content"] for _, body in self.sent]


def job(
    session: str,
    *,
    tenant: str = "A",
    text: str | None = None,
    bucket: int = 0,
    rate: bool = True,
    kind: str = "chat",
    tenant_key: bool = False,
) -> WarmJob:
    content = text if text is not None else session
    body = {"model": "slow", "max_tokens": 1, "messages": [{"role": "user", "content": content}]}
    return WarmJob(
        key=f"q:{tenant}:{session}",
        cooldown_key=f"c:{tenant}:{session}:{bucket}",
        rate_key=f"r:{tenant}" if rate else None,
        kind=kind,
        body=body,
        tenant_key=f"t:{tenant}" if tenant_key else None,
    )


async def test_a_burst_of_100_sessions_sends_every_warm_exactly_once_four_at_a_time():
    """Pins item 4: 100 sessions crossing the threshold at once with 4 slots used to fire 19
    warms and skip the rest (skipped_busy) for good."""
    rec = Recorder(delay_s=0.002)
    clock = FakeClock()
    store = MemoryCooldownStore(capacity=1000, clock=clock)
    runner = rec.runner(cooldown=lambda: store, max_concurrency=4, queue_size=128, clock=clock)
    outcomes = [runner.submit(job(f"s{i:03d}")) for i in range(100)]
    assert outcomes == [WarmOutcome.QUEUED] * 100
    assert runner.queued == 100 and runner.in_flight == 4
    await runner.drain()
    assert sorted(rec.sessions_sent()) == [f"s{i:03d}" for i in range(100)]  # each exactly once
    assert rec.max_in_flight == 4
    assert rec.drops == []
    assert Counter(rec.outcomes) == {WarmOutcome.FIRED: 100}
    assert Counter(rec.done) == {WarmOutcome.SUCCEEDED: 100}
    assert max(rec.depths) == 100 and rec.depths[-1] == 0
    assert runner.queued == 0 and runner.in_flight == 0
    assert rec.sessions_sent()[:4] == ["s000", "s001", "s002", "s003"]  # FIFO


async def test_a_newer_state_of_a_session_replaces_its_queued_warm_in_place():
    rec = Recorder(hold=True)
    runner = rec.runner(max_concurrency=1, queue_size=8)
    runner.submit(job("blocker"))
    await rec.started.wait()
    runner.submit(job("s1", text="s1 turn 1"))
    runner.submit(job("s2"))
    assert runner.submit(job("s1", text="s1 turn 2")) is WarmOutcome.QUEUED
    assert runner.queued == 2 and rec.drops == [DropReason.STALE]
    rec.gate.set()
    await runner.drain()
    assert rec.sessions_sent() == ["blocker", "s1 turn 2", "s2"]  # kept its place, newest messages


async def test_one_warm_per_session_at_a_time_the_next_waits_for_it_and_the_newest_wins():
    """A session's next warm (a decode or reply warm after its warm-ahead) is not sent beside the running one,
    even with free slots: it would prefill the same uncached tokens again on vLLM. It waits, a newer state
    replaces it (``stale``), and it goes when the running warm ends; other sessions are not held."""
    rec = Recorder(hold=True)
    runner = rec.runner(max_concurrency=4, queue_size=8)
    runner.submit(job("s1", text="s1 ahead"))
    await rec.started.wait()
    runner.submit(job("s1", text="s1 decode 1", bucket=1))
    runner.submit(job("s2"))
    await asyncio.sleep(0.01)
    assert rec.now_in_flight == 2  # s1's first warm and s2: s1's next one waits although two slots are free
    assert runner.queued == 1 and runner.in_flight == 2
    assert runner.submit(job("s1", text="s1 decode 2", bucket=2)) is WarmOutcome.QUEUED
    assert rec.drops == [DropReason.STALE] and runner.queued == 1
    rec.gate.set()
    await runner.drain()
    assert rec.sessions_sent().count("s1 decode 2") == 1 and "s1 decode 1" not in rec.sessions_sent()
    assert rec.sessions_sent().index("s1 ahead") < rec.sessions_sent().index("s1 decode 2")
    assert rec.max_in_flight == 2 and runner.queued == 0


async def test_aclose_drops_a_session_s_waiting_warm_too():
    rec = Recorder(hold=True)
    runner = rec.runner(max_concurrency=2)
    runner.submit(job("s1"))
    await rec.started.wait()
    runner.submit(job("s1", text="next", bucket=1))
    await runner.aclose()
    assert rec.drops == [DropReason.SHUTDOWN] and runner.queued == 0 and rec.sent == []


async def test_a_full_queue_drops_the_oldest_warm_and_counts_it():
    rec = Recorder(hold=True)
    runner = rec.runner(max_concurrency=1, queue_size=2, tenant_rate=0)
    runner.submit(job("blocker"))
    await rec.started.wait()
    for name in ("s1", "s2", "s3"):
        assert runner.submit(job(name)) is WarmOutcome.QUEUED
    assert rec.drops == [DropReason.FULL] and runner.queued == 2
    assert rec.depths[-1] == 2
    rec.gate.set()
    await runner.drain()
    assert rec.sessions_sent() == ["blocker", "s2", "s3"]


async def test_a_dropped_warm_leaves_the_session_cooldown_untaken():
    """Pins item 4: a skipped warm used to use up its session's cooldown."""
    clock = FakeClock()
    store = SpyStore(clock=clock)
    rec = Recorder(hold=True)
    runner = rec.runner(cooldown=lambda: store, max_concurrency=1, queue_size=1)
    runner.submit(job("blocker"))
    await rec.started.wait()
    runner.submit(job("s1"))
    runner.submit(job("s2"))  # s1 is dropped (full) before any admission
    assert rec.drops == [DropReason.FULL]
    rec.gate.set()
    await runner.drain()
    assert rec.sessions_sent() == ["blocker", "s2"] and store.admits == 2
    # the dropped session's next turn is admitted and sent
    assert runner.submit(job("s1")) is WarmOutcome.QUEUED
    await runner.drain()
    assert rec.sessions_sent() == ["blocker", "s2", "s1"]
    assert await store.admit("c:A:s1:0", 300) is Admission.COOLDOWN  # taken now that it was sent


async def test_the_memo_skips_a_session_whose_cooldown_was_just_taken_without_io():
    clock = FakeClock()
    store = SpyStore(clock=clock)
    rec = Recorder()
    runner = rec.runner(cooldown=lambda: store, cooldown_s=300, clock=clock)
    runner.submit(job("s1"))
    await runner.drain()
    for _ in range(5):  # later turns of the same session, same growth step
        assert runner.submit(job("s1")) is WarmOutcome.SKIPPED_COOLDOWN
    assert store.admits == 1 and runner.queued == 0
    assert runner.submit(job("s1", bucket=1)) is WarmOutcome.QUEUED  # grown a step: a re-warm
    await runner.drain()
    clock.tick(300.1)
    assert runner.submit(job("s1")) is WarmOutcome.QUEUED  # memo expired with the cooldown
    await runner.drain()
    assert len(rec.sent) == 3


async def test_a_cooldown_taken_elsewhere_is_found_when_the_slot_admits():
    clock = FakeClock()
    store = SpyStore(clock=clock)
    assert await store.admit("c:A:s1:0", 300) is Admission.ADMITTED  # another process warmed s1
    rec = Recorder()
    runner = rec.runner(cooldown=lambda: store, clock=clock)
    assert runner.submit(job("s1")) is WarmOutcome.QUEUED
    await runner.drain()
    assert rec.sent == [] and rec.outcomes == [WarmOutcome.SKIPPED_COOLDOWN]
    assert runner.submit(job("s1")) is WarmOutcome.SKIPPED_COOLDOWN  # remembered for a while
    clock.tick(30.1)
    assert runner.submit(job("s1")) is WarmOutcome.QUEUED  # asked again after the recheck time


async def test_tenant_rate_caps_rotating_session_ids_and_leaves_other_tenants_alone():
    """Pins item 10: a client rotating session ids got one slow-model prefill per request."""
    clock = FakeClock()
    store = SpyStore(clock=clock)
    rec = Recorder()
    runner = rec.runner(cooldown=lambda: store, tenant_rate=3, clock=clock)
    a = []
    for i in range(10):
        a.append(runner.submit(job(f"a{i}", tenant="A")))
        await runner.drain()
    assert rec.sessions_sent() == ["a0", "a1", "a2"]
    assert a[:4] == [WarmOutcome.QUEUED] * 4  # the 4th is refused by the store when its slot admits it
    assert a[4:] == [WarmOutcome.SKIPPED_TENANT_RATE] * 6  # then the memo answers, no I/O
    assert rec.outcomes.count(WarmOutcome.SKIPPED_TENANT_RATE) == 1 and store.admits == 4
    for i in range(3):
        assert runner.submit(job(f"b{i}", tenant="B")) is WarmOutcome.QUEUED
        await runner.drain()
    assert rec.sessions_sent()[3:] == ["b0", "b1", "b2"]  # tenant B has its own 3 per minute
    clock.tick(60.1)
    runner.submit(job("a3", tenant="A"))  # refused earlier: its cooldown was never taken
    await runner.drain()
    assert rec.sessions_sent()[-1] == "a3"


async def test_one_tenant_cannot_push_the_others_out_of_the_queue():
    rec = Recorder(hold=True)
    runner = rec.runner(max_concurrency=1, queue_size=8, tenant_rate=3)
    runner.submit(job("blocker", tenant="C"))
    await rec.started.wait()
    runner.submit(job("b0", tenant="B"))
    for i in range(20):
        runner.submit(job(f"a{i}", tenant="A"))
    runner.submit(job("b1", tenant="B"))
    assert runner.queued == 5  # A holds at most its 3 per minute
    assert rec.drops == [DropReason.TENANT_CAP] * 17  # its own cap, not the (unfilled) queue bound
    rec.gate.set()
    await runner.drain()
    # round-robin: B and A alternate while both have warms queued (was FIFO: b0, a17, a18, a19, b1)
    assert rec.sessions_sent() == ["blocker", "b0", "a17", "b1", "a18", "a19"]


class DispatchLog:
    """A slow backend: each warm waits for the test to answer it; ``dispatched`` is the order
    in which warms reached the sender (the order slots took them)."""

    def __init__(self):
        self.dispatched: list[str] = []
        self.answer: dict[str, asyncio.Event] = {}
        self.arrived = asyncio.Event()

    async def send(self, kind, body):
        name = body["messages"][0]["content"]
        self.answer[name] = asyncio.Event()
        self.dispatched.append(name)
        self.arrived.set()
        await self.answer[name].wait()

    async def answer_next(self) -> None:
        """Answer the oldest unanswered warm and wait until a freed slot has taken the next one."""
        pending = next(n for n in self.dispatched if not self.answer[n].is_set())
        before = len(self.dispatched)
        self.arrived.clear()
        self.answer[pending].set()
        while len(self.dispatched) == before and any(not e.is_set() for e in self.answer.values()):
            await asyncio.wait_for(self.arrived.wait(), timeout=1)
            self.arrived.clear()


@pytest.mark.parametrize("tenant_key", [False, True], ids=["tenant-from-rate-key", "tenant-key-without-rate"])
async def test_one_tenants_burst_does_not_delay_another_tenants_warm(tenant_key):
    """Pins the adversarial finding: team-a queued 200 warms, then carol queued one; carol's warm
    was sent behind 87 of team-a's (FIFO across tenants). Now carol waits for at most one warm
    of each other tenant with queued warms: here one of A's, after the 4 already in flight."""
    log = DispatchLog()
    drops = []
    runner = WarmRunner(log.send, max_concurrency=4, queue_size=1024, tenant_rate=0, timeout_s=60,
                        on_drop=lambda r, t: drops.append(r))
    for i in range(200):
        runner.submit(job(f"a{i:03d}", tenant="A", rate=not tenant_key, tenant_key=tenant_key))
    while len(log.dispatched) < 4:
        await asyncio.wait_for(log.arrived.wait(), timeout=1)
        log.arrived.clear()
    assert log.dispatched == ["a000", "a001", "a002", "a003"] and runner.queued == 196
    runner.submit(job("carol", tenant="B", rate=not tenant_key, tenant_key=tenant_key))
    queued_at = len(log.dispatched)
    while "carol" not in log.dispatched:
        await log.answer_next()
    index = log.dispatched.index("carol") - queued_at + 1  # 1 = the first warm dispatched after it was queued
    assert index <= 5  # within the 4 slots + 1 (brief's bound)
    assert log.dispatched[queued_at:] == ["a004", "carol"]  # exactly one of A's warms went ahead (was: 196)
    assert runner.queued == 195 and drops == []
    await runner.aclose()


async def test_a_newly_queued_tenant_waits_at_most_one_round():
    """Three tenants with backlogs and one with a single warm: a slot takes one warm per tenant
    in turn, each tenant's own warms in FIFO order."""
    rec = Recorder(hold=True)
    runner = rec.runner(max_concurrency=1, queue_size=64)
    runner.submit(job("blocker", tenant="Z"))
    await rec.started.wait()
    for i in range(5):
        for tenant in ("A", "B", "C"):
            runner.submit(job(f"{tenant.lower()}{i}", tenant=tenant))
    runner.submit(job("d0", tenant="D"))
    rec.gate.set()
    await runner.drain()
    sent = rec.sessions_sent()
    assert sent[:6] == ["blocker", "a0", "b0", "c0", "d0", "a1"]  # D after one warm of each of A, B, C
    assert sent[6:] == ["b1", "c1", "a2", "b2", "c2", "a3", "b3", "c3", "a4", "b4", "c4"]


async def test_a_replaced_warm_keeps_its_tenants_turn_and_place():
    rec = Recorder(hold=True)
    runner = rec.runner(max_concurrency=1, queue_size=8)
    runner.submit(job("blocker", tenant="Z"))
    await rec.started.wait()
    for name, tenant in (("a1", "A"), ("a2", "A"), ("b1", "B")):
        runner.submit(job(name, tenant=tenant))
    runner.submit(job("a1", tenant="A", text="a1 turn 2"))
    assert runner.queued == 3 and rec.drops == [DropReason.STALE]
    rec.gate.set()
    await runner.drain()
    assert rec.sessions_sent() == ["blocker", "a1 turn 2", "b1", "a2"]


async def test_the_queue_bound_drops_the_oldest_warm_of_the_biggest_tenant():
    """A quiet tenant's warm is never pushed out by a noisy one: past ``queue_size`` the tenant
    with the most queued warms loses its own oldest, whoever submits."""
    rec = Recorder(hold=True)
    targets = []
    runner = WarmRunner(rec.send, max_concurrency=1, queue_size=4, on_drop=lambda r, t: (rec.drops.append(r), targets.append(t)))
    runner.submit(job("blocker", tenant="Z"))
    await rec.started.wait()
    runner.submit(job("b0", tenant="B"))  # the oldest queued warm overall
    for i in range(3):
        runner.submit(job(f"a{i}", tenant="A"))
    assert runner.queued == 4 and rec.drops == []
    runner.submit(job("a3", tenant="A"))  # A (3 queued) is the biggest: its own a0 goes, not b0
    runner.submit(job("c0", tenant="C"))  # a newcomer pushes out A's oldest too (a1), not B's only warm
    assert rec.drops == [DropReason.FULL, DropReason.FULL] and runner.queued == 4
    runner.submit(job("c1", tenant="C"))  # A 2, B 1, C 1 → A loses a2
    runner.submit(job("c2", tenant="C"))  # A 1, B 1, C 2 → C is the biggest now, loses c0
    assert rec.drops == [DropReason.FULL] * 4 and runner.queued == 4
    rec.gate.set()
    await runner.drain()
    assert sorted(rec.sessions_sent()) == sorted(["blocker", "b0", "a3", "c1", "c2"])
    assert rec.sessions_sent()[:2] == ["blocker", "b0"]  # B's turn came first: it queued first


async def test_tenant_cap_drops_are_counted_as_tenant_cap_not_full():
    """Pins the mislabel: drops at a tenant's own cap were counted ``full`` with the queue far
    from its bound."""
    rec = Recorder(hold=True)
    runner = rec.runner(max_concurrency=1, queue_size=1024, tenant_rate=2)
    runner.submit(job("blocker", tenant="Z"))
    await rec.started.wait()
    for i in range(5):
        runner.submit(job(f"a{i}", tenant="A"))
    runner.submit(job("b0", tenant="B"))
    runner.submit(job("a4", tenant="A", text="a4 turn 2"))  # a newer state replaces, no cap drop
    assert rec.drops == [DropReason.TENANT_CAP] * 3 + [DropReason.STALE]
    assert runner.queued == 3 and rec.depths[-1] == 3
    rec.gate.set()
    await runner.drain()
    assert rec.sessions_sent() == ["blocker", "a3", "b0", "a4 turn 2"]


async def test_a_tenant_key_without_a_rate_takes_no_cap():
    rec = Recorder(hold=True)
    runner = rec.runner(max_concurrency=1, queue_size=8, tenant_rate=2)
    runner.submit(job("blocker", tenant="Z"))
    await rec.started.wait()
    for i in range(4):
        runner.submit(job(f"a{i}", tenant="A", rate=False, tenant_key=True))
    assert runner.queued == 4 and rec.drops == []  # no rate key: no per-tenant cap applies
    await runner.aclose()
    assert rec.drops == [DropReason.SHUTDOWN] * 4 and runner.queued == 0


def test_fair_queue_bookkeeping_matches_a_recount_under_random_operations():
    """The O(1) indexes (size, biggest tenant, rotation) against a plain recount, 5,000 seeded
    random pushes, replacements, turns and evictions over 6 tenants."""
    import random

    from litellm_kvwarm.warm import _FairQueue

    rnd = random.Random(12)
    q = _FairQueue()
    model: dict[str, list[str]] = {}  # tenant → its queued keys, oldest first
    for step in range(5_000):
        op = rnd.random()
        if op < 0.5 or not len(q):
            tenant, session = f"T{rnd.randrange(6)}", f"s{rnd.randrange(40)}"
            j = job(session, tenant=tenant)
            if q.replace(j) is None:
                q.push(j)
                model.setdefault(j.tenant, []).append(j.key)
            else:
                assert j.key in model[j.tenant]
        elif op < 0.8:
            popped = q.pop_next()
            assert model[popped.tenant][0] == popped.key
            model[popped.tenant].pop(0)
        else:
            victim = q.biggest()
            assert len(model[victim]) == max(len(keys) for keys in model.values())
            assert q.pop_oldest(victim).key == model[victim].pop(0)
        model = {t: keys for t, keys in model.items() if keys}
        assert len(q) == sum(len(keys) for keys in model.values()), step
        for tenant, keys in model.items():
            assert q.count(tenant) == len(keys)
    assert sorted(j.key for j in q.clear()) == sorted(k for keys in model.values() for k in keys)
    assert len(q) == 0 and q.count("r:T0") == 0


def test_memo_is_bounded_and_drops_the_least_recently_remembered():
    from litellm_kvwarm.warm import _Memo
    from litellm_kvwarm.warm_queue import Memo

    assert _Memo is Memo  # the old private name stays importable
    memo = Memo(3)
    for key in ("a", "b", "c"):
        memo.remember(key, 100.0)
    assert memo.active("a", 50.0)  # a lookup does not refresh: a stays the oldest
    memo.remember("b", 200.0)  # remembering again does: order is now a, c, b
    memo.remember("d", 100.0)
    assert len(memo) == 3
    assert not memo.active("a", 50.0)  # a was dropped
    assert memo.active("c", 50.0) and memo.active("b", 150.0) and memo.active("d", 50.0)
    assert not memo.active("d", 100.0)  # until has come: inactive and forgotten
    assert len(memo) == 2
    assert not memo.active(None, 0.0)
    with pytest.raises(ValueError):
        Memo(0)


def test_drop_reasons_are_the_metric_labels():
    assert [r.value for r in DropReason] == ["stale", "full", "tenant_cap", "shutdown"]


async def test_runner_reports_failed_and_timed_out_warms():
    rec = Recorder()
    runner = rec.runner(max_concurrency=2, timeout_s=5)
    fail = job("s-fail")
    fail.body["fail"] = True
    runner.submit(fail)
    runner.submit(job("s-ok"))
    await runner.drain()
    assert sorted(rec.done) == sorted([WarmOutcome.SUCCEEDED, WarmOutcome.FAILED])

    async def slow(kind, body):
        await asyncio.sleep(10)

    done = []
    runner = WarmRunner(slow, max_concurrency=1, timeout_s=0.05, on_done=lambda o, d, t, g: done.append(o))
    runner.submit(job("s"))
    await runner.drain()
    assert done == [WarmOutcome.TIMED_OUT]


async def test_a_store_that_raises_sends_nothing():
    class Broken(MemoryCooldownStore):
        async def admit(self, *args, **kwargs):
            raise ConnectionError("redis gone")

    rec = Recorder()
    runner = rec.runner(cooldown=lambda: Broken())
    runner.submit(job("s1"))
    await runner.drain()
    assert rec.sent == [] and rec.outcomes == [WarmOutcome.FAILED]


async def test_the_sender_gets_the_request_kind():
    rec = Recorder()
    runner = rec.runner()
    runner.submit(job("s1", kind="completion"))
    runner.submit(job("s2"))
    await runner.drain()
    assert sorted(kind for kind, _ in rec.sent) == ["chat", "completion"]


async def test_aclose_cancels_warms_in_flight_and_drops_the_queued_ones():
    started = asyncio.Event()
    cancelled = []

    async def send(kind, body):
        started.set()
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.append(body["messages"][0]["content"])
            raise

    drops = []
    runner = WarmRunner(send, max_concurrency=2, timeout_s=30, on_drop=lambda r, t: drops.append(r))
    for name in ("a", "b", "c"):
        runner.submit(job(name))
    await started.wait()
    await asyncio.sleep(0.01)
    await runner.aclose()
    assert sorted(cancelled) == ["a", "b"] and drops == [DropReason.SHUTDOWN]
    assert runner.in_flight == 0 and runner.queued == 0
    runner.submit(job("late"))
    assert drops == [DropReason.SHUTDOWN] * 2 and runner.queued == 0


def test_runner_rejects_bounds_below_one():
    async def send(kind, body):
        return None

    for bad in ({"max_concurrency": 0}, {"queue_size": 0}, {"cooldown_s": 0}):
        with pytest.raises(ValueError):
            WarmRunner(send, **bad)
    with pytest.raises(ValueError):
        WarmRunner(send, tenant_rate=-1)


# -- warm bodies ------------------------------------------------------------------------------


def test_chat_warm_copies_prompt_shaping_keys_and_sets_one_token():
    data = {
        "model": "fast",
        "messages": [{"role": "user", "content": "x"}],
        "tools": [{"type": "function", "function": {"name": "f"}}],
        "tool_choice": "auto",
        "response_format": {"type": "json_object"},
        "chat_template_kwargs": {"enable_thinking": False},
        "max_tokens": 4096,
        "stream": True,
        "temperature": 0.3,
        "user": "someone",
    }
    body = warm_request(data, target="slow", metadata={"kvwarm_warm": True})
    assert body["model"] == "slow" and body["max_tokens"] == 1 and body["stream"] is False
    for key in ("messages", "tools", "tool_choice", "response_format", "chat_template_kwargs"):
        assert body[key] is data[key]
    assert "temperature" not in body and "user" not in body and "max_completion_tokens" not in body
    assert body["fallbacks"] == [] and body["context_window_fallbacks"] == [] and body["num_retries"] == 0
    assert "messages" in PROMPT_SHAPING_KEYS
    # a refused warm never cools the deployment down for live requests (LiteLLM's per-call cooldown, seconds)
    for kind, given in (("chat", data), ("completion", {"prompt": "x"}), ("messages", {"messages": []}), ("responses", {"input": "x"})):
        assert warm_request(given, target="slow", metadata={}, kind=kind)["cooldown_time"] == 0


def test_text_completion_warm_carries_its_prompt():
    """Pins item 11: a /v1/completions warm was built without its prompt and always failed."""
    data = {"model": "fast", "prompt": "def f(x):\n    return", "suffix": "\n", "echo": True, "max_tokens": 200, "temperature": 0}
    body = warm_request(data, target="slow", metadata={}, kind="completion")
    assert body["prompt"] == "def f(x):\n    return" and body["suffix"] == "\n"
    assert body["max_tokens"] == 1 and "messages" not in body and "echo" not in body and "temperature" not in body
    ids = warm_request({"prompt": [[1, 2, 3]]}, target="slow", metadata={}, kind="completion")
    assert ids["prompt"] == [[1, 2, 3]]
    with pytest.raises(ValueError):
        warm_request(data, target="slow", metadata={}, kind="embedding")


def test_every_output_field_of_a_warm_is_one():
    """Pins item 13: with both fields sent, vLLM reads max_completion_tokens."""
    data = {
        "messages": [{"role": "user", "content": "x"}],
        "max_tokens": 500,
        "max_completion_tokens": 800,
        "extra_body": {"cache_salt": "s", "max_completion_tokens": 900, "min_tokens": 50, "top_k": 5},
    }
    body = warm_request(data, target="slow", metadata={})
    assert body["max_tokens"] == 1 and body["max_completion_tokens"] == 1
    assert body["extra_body"] == {"cache_salt": "s", "max_completion_tokens": 1, "top_k": 5}
    assert data["extra_body"]["max_completion_tokens"] == 900  # the live request is untouched


def test_a_warm_never_carries_the_live_requests_own_id_or_kv_transfer_handle():
    """A client's extra_body request_id (vLLM's engine id) or kv_transfer_params (disaggregated prefill/decode) was
    copied into every warm and piece: the warm named the live request, not only its prompt."""
    extra = {"request_id": "trace-42", "kv_transfer_params": {"do_remote_prefill": True, "remote_block_ids": [1, 2]},
             "chat_template_kwargs": {"enable_thinking": False}, "cache_salt": "s"}
    for kind, given in (("chat", {"messages": [{"role": "user", "content": "x"}]}), ("responses", {"input": "x"}),
                        ("messages", {"messages": [{"role": "user", "content": "x"}]}), ("completion", {"prompt": "x"})):
        body = warm_request({**given, "extra_body": extra}, target="slow", metadata={}, kind=kind)
        assert body["extra_body"] == {"chat_template_kwargs": {"enable_thinking": False}, "cache_salt": "s"}, kind


def test_warm_metadata_carries_the_callers_identity_and_no_raw_session_id():
    """Pins item 10: warms carried no key identity (spend unattributed) and the raw session id."""
    identity_meta = {
        "user_api_key": "a" * 64,
        "user_api_key_hash": "a" * 64,
        "user_api_key_alias": "ci-key",
        "user_api_key_user_id": "alice",
        "user_api_key_team_id": "team-a",
        "user_api_key_team_alias": "Team A",
        "user_api_key_org_id": "org-1",
        "user_api_key_end_user_id": "customer-7",
        "tags": ["prod"],
    }
    data = {
        "litellm_session_id": "raw-session-42",
        "metadata": {
            **identity_meta,
            "session_id": "raw-session-42",
            "user_api_key_project_id": None,
            "user_api_key_spend": 12.5,
            "user_api_key_user_email": "alice@example.com",
            "user_api_key_budget_reservation": {"id": "r1"},
            "client_note": "free text",
            AFFINITY_KEY: "aff",
            SALT_KEY: "salt",
            "kvwarm_estimate": {"safe": 1},
        },
    }
    meta = warm_metadata(data, session_hash="h" * 32)
    assert meta == {WARM_MARKER: True, SESSION_KEY: "h" * 32, AFFINITY_KEY: "aff", SALT_KEY: "salt", **identity_meta}
    assert "raw-session-42" not in json.dumps(meta)
    assert set(identity_meta) <= set(SPEND_IDENTITY_KEYS)
    body = warm_request({"messages": [{"role": "user", "content": "x"}], **data}, target="slow", metadata=meta)
    assert "raw-session-42" not in json.dumps(body) and "litellm_session_id" not in body


def test_warm_metadata_reads_litellm_metadata_for_messages_and_responses():
    meta = warm_metadata({"litellm_metadata": {"user_api_key_team_id": "team-b"}}, session_hash="h", kind="messages")
    assert meta["user_api_key_team_id"] == "team-b"


@pytest.mark.parametrize("kind", ["messages", "responses"])
def test_a_clients_own_metadata_never_names_who_pays_for_its_warms(kind):
    """Breaker (real proxy): on /v1/messages and /v1/responses LiteLLM writes the caller's identity into
    ``litellm_metadata`` and leaves the client's ``metadata`` as sent; a warm read ``metadata`` first, so key A's
    warms were logged (and charged) under the key hash A wrote there, another key's. Only LiteLLM's field counts."""
    spoofed = {"user_api_key": "b" * 64, "user_api_key_hash": "b" * 64, "user_api_key_team_id": "team-b"}
    own = {"user_api_key": "a" * 64, "user_api_key_hash": "a" * 64, "user_api_key_team_id": "team-a", SALT_KEY: "salt-a"}
    data = {"metadata": {**spoofed, SALT_KEY: "salt-b"}, "litellm_metadata": own}
    meta = warm_metadata(data, session_hash="h", kind=kind)
    assert {k: meta.get(k) for k in own} == own
    assert warm_metadata({"metadata": spoofed}, session_hash="h", kind=kind) == {WARM_MARKER: True, SESSION_KEY: "h"}
    # chat: LiteLLM's own field is ``metadata`` (it overwrites the client's identity keys there)
    assert warm_metadata(data, session_hash="h")["user_api_key_hash"] == "b" * 64


def test_every_name_of_the_old_warm_module_is_still_importable_from_it():
    """warm.py was split into warm_body / warm_job / warm_queue (issue 13); its names stay."""
    import litellm_kvwarm.warm as warm

    names = """DEFAULT_COOLDOWN_S DEFAULT_MAX_CONCURRENCY DEFAULT_MEMO_CAPACITY DEFAULT_MEMO_RECHECK_S
    DEFAULT_QUEUE_SIZE DEFAULT_TIMEOUT_S DoneCallback DropReason METADATA_FIELDS OUTPUT_FIELDS
    OUTPUT_FLOOR_FIELDS OutcomeCallback PLUGIN_KEYS PROMPT_KEYS PROMPT_SHAPING_KEYS SESSION_KEY
    SPEND_IDENTITY_KEYS Sender TEXT_PROMPT_KEYS WarmJob WarmOutcome WarmRunner _FairQueue _Memo
    warm_metadata warm_request""".split()
    assert [name for name in names if not hasattr(warm, name)] == []


def test_a_warm_attempt_never_takes_the_operator_s_cooldown_time():
    """LiteLLM reads a deployment's ``model_info.cooldown_time`` before the call's own ``cooldown_time=0``: a failed warm
    (a 404 from a server without the API) put the target in cooldown for every tenant's live requests (a breaker's
    proxies: 429 for the deployment's 60 s). A warm attempt carries the deployment's ``model_info`` with 0 (a copy)."""
    from litellm_kvwarm.warm_body import keep_out_of_cooldown

    shared = {"id": "slow-0", "cooldown_time": 60}
    warm = {"metadata": {"kvwarm_warm": True}, "model_info": shared}
    keep_out_of_cooldown(warm)
    assert warm["model_info"] == {"id": "slow-0", "cooldown_time": 0} and shared["cooldown_time"] == 60
    live = {"metadata": {}, "model_info": shared}
    keep_out_of_cooldown(live)
    assert live["model_info"] is shared  # a live request keeps the operator's cooldown
    messages = {"litellm_metadata": {"kvwarm_warm": True}, "model_info": dict(shared)}
    keep_out_of_cooldown(messages, "litellm_metadata")
    assert messages["model_info"]["cooldown_time"] == 0
    unset = {"metadata": {"kvwarm_warm": True}, "model_info": {"id": "slow-0"}}
    keep_out_of_cooldown(unset)
    assert unset["model_info"] == {"id": "slow-0"}  # nothing set: the call's own cooldown_time=0 applies

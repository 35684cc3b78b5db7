"""Queued and in-flight warms hold their bodies; ``KVWARM_WARM_QUEUE_BYTES`` bounds the bytes they hold together.
Breaker B (2026-12): with slow hanging, warm-zone requests carrying 5 MB images grew the plugin's proxy by ~5.5 MB
each (+548 MB for 100; LiteLLM alone flat): the queue was bounded by count only (1024 × body size at worst)."""

from __future__ import annotations

import base64
import random
from dataclasses import replace

from litellm_kvwarm.config import Settings
from litellm_kvwarm.warm import DEFAULT_QUEUE_BYTES, DropReason, WarmOutcome
from litellm_kvwarm.warm_bytes import body_bytes
from litellm_kvwarm.warm_gate import WarmGate

from test_warm_gate import SECRET, candidate, chat_data, session
from test_warm_runner import Recorder, job

MB = 1_000_000


def image_body(mb: float, seed: int = 0) -> dict:
    data = base64.b64encode(random.Random(seed).randbytes(int(mb * MB))).decode()
    return {"model": "slow", "max_tokens": 1, "messages": [{"role": "user", "content": [
        {"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "data:image/png;base64," + data}}]}]}


def test_body_bytes_counts_what_the_body_holds_without_serialising_it():
    body = image_body(5)
    url = body["messages"][0]["content"][1]["image_url"]["url"]
    assert len(url) < body_bytes(body) < len(url) + 4_000  # the data URL, plus the structure around it
    wide = {"messages": [{"role": "user", "content": "数" * 1_000}]}
    assert body_bytes(wide) >= 2 * 1_000  # 2 bytes a character in CPython: bytes, not characters
    loop: dict = {"a": "x" * 100}
    loop["self"] = loop
    assert 100 < body_bytes(loop) < 1_000  # a cycle ends


def sized(name: str, size: int, **kw):
    return replace(job(name, **kw), size=size)


async def test_the_runner_holds_at_most_queue_bytes_queued_and_in_flight():
    rec = Recorder(hold=True)  # the target hangs: the first warm stays in flight
    runner = rec.runner(max_concurrency=1, queue_size=1024, queue_bytes=3 * MB + 10_000)
    assert runner.submit(sized("s0", MB)) is WarmOutcome.QUEUED
    await rec.started.wait()
    assert runner.in_flight == 1 and runner.held_bytes == MB  # in flight: its body is still held
    assert [runner.submit(sized(f"s{i}", MB)) for i in (1, 2, 3)] == [WarmOutcome.QUEUED, WarmOutcome.QUEUED,
                                                                      WarmOutcome.SKIPPED_QUEUE_BYTES]
    assert runner.held_bytes == 3 * MB and runner.queued == 2 and rec.drops == []
    assert runner.submit(sized("s1", MB, text="s1 turn 2")) is WarmOutcome.QUEUED  # replaces its own: same bytes
    assert rec.drops == [DropReason.STALE] and runner.held_bytes == 3 * MB
    assert runner.submit(sized("s2", 2 * MB)) is WarmOutcome.SKIPPED_QUEUE_BYTES  # a larger replacement would not fit
    assert runner.submit(sized("s0", MB, bucket=1)) is WarmOutcome.SKIPPED_QUEUE_BYTES  # would wait behind its running warm
    assert runner.submit(sized("s0", 1_000, bucket=1)) is WarmOutcome.QUEUED  # parked: held and counted too
    assert runner.held_bytes == 3 * MB + 1_000 and runner.queued == 3
    rec.gate.set()
    await runner.drain()
    assert runner.held_bytes == 0 and runner.in_flight == 0 and runner.queued == 0
    assert runner.submit(sized("s9", 3 * MB)) is WarmOutcome.QUEUED  # room again
    await runner.drain()
    assert runner.held_bytes == 0


async def test_without_the_byte_bound_the_count_bound_alone_would_hold_every_body():
    rec = Recorder(hold=True)
    runner = rec.runner(max_concurrency=1, queue_size=1024)  # the default byte bound
    assert DEFAULT_QUEUE_BYTES == 256 * 1024 * 1024
    outcomes = [runner.submit(sized(f"s{i}", 5 * MB)) for i in range(100)]
    assert outcomes.count(WarmOutcome.QUEUED) == 53 and runner.held_bytes == 53 * 5 * MB <= DEFAULT_QUEUE_BYTES
    assert outcomes[53:] == [WarmOutcome.SKIPPED_QUEUE_BYTES] * 47
    await runner.aclose()
    assert runner.held_bytes == 0


async def test_the_gate_sizes_each_warm_and_counts_the_skip():
    counted: list = []
    rec = Recorder(hold=True)
    runner = rec.runner(max_concurrency=1, queue_bytes=9 * MB)
    gate = WarmGate(Settings(warm_queue_bytes=9 * MB), runner=lambda: runner, count=lambda o, t, g: counted.append(o), secret=SECRET)
    for i in range(3):
        data = chat_data(f"sess-{i}")
        data["messages"] = image_body(3, seed=i)["messages"]
        await gate.consider(candidate(session(f"sess-{i}")), data, kind="chat")
    assert counted == [WarmOutcome.QUEUED, WarmOutcome.QUEUED, WarmOutcome.SKIPPED_QUEUE_BYTES]
    assert 2 * 4 * MB < runner.held_bytes <= 9 * MB  # two bodies with a 3 MB image as base64 (4 MB) each
    await runner.aclose()


async def test_one_tenant_s_large_bodies_never_keep_another_tenant_s_warms_out():
    """Breaker finding (2026-12): the byte bound was first come, first served across tenants: tenant A's queued
    image warms filled it and tenant B's warms were skipped. Now the tenant holding the most queued bytes makes room
    (its oldest queued warms dropped, ``full``) for a tenant holding less, max-min fair; A never sheds B."""
    rec = Recorder(hold=True)
    runner = rec.runner(max_concurrency=1, queue_size=1024, queue_bytes=10 * MB)
    assert runner.submit(sized("a0", MB, tenant="A")) is WarmOutcome.QUEUED
    await rec.started.wait()  # a0 in flight: held, never shed
    assert [runner.submit(sized(f"a{i}", 3 * MB, tenant="A")) for i in (1, 2, 3, 4)] == [WarmOutcome.QUEUED] * 3 + [
        WarmOutcome.SKIPPED_QUEUE_BYTES]  # A alone: its own warms are not shed for it
    assert runner.held_bytes == 10 * MB and rec.drops == []
    assert runner.submit(sized("b1", 2 * MB, tenant="B")) is WarmOutcome.QUEUED  # A's oldest queued (a1) makes room
    assert rec.drops == [DropReason.FULL] and runner.held_bytes == 9 * MB and runner.queued == 3
    assert runner.submit(sized("b2", 2 * MB, tenant="B")) is WarmOutcome.QUEUED  # A still holds 6 MB queued > B's 4
    assert rec.drops == [DropReason.FULL] * 2 and runner.held_bytes == 8 * MB
    assert runner.submit(sized("b3", 4 * MB, tenant="B")) is WarmOutcome.SKIPPED_QUEUE_BYTES  # B would hold 8 > A's 3
    assert runner.submit(sized("a5", 3 * MB, tenant="A")) is WarmOutcome.SKIPPED_QUEUE_BYTES  # A never sheds B
    assert rec.drops == [DropReason.FULL] * 2 and runner.held_bytes == 8 * MB
    rec.gate.set()
    await runner.drain()
    assert sorted(body["messages"][0]["content"] for _, body in rec.sent) == ["a0", "a3", "b1", "b2"]
    assert runner.held_bytes == 0

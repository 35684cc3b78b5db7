"""Priority scheduling and chunked prefill (``--scheduling-policy``, ``--max-num-batched-tokens``):
the engine on a ManualClock (exact times), the HTTP refusal under fcfs, and a real process."""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from litellm_kvwarm.lab.emulator.clock import ManualClock
from litellm_kvwarm.lab.emulator.config import EmulatorConfig
from litellm_kvwarm.lab.emulator.engine import Engine
from litellm_kvwarm.lab.emulator.scheduler import PrefillScheduler, priority_not_enabled
from litellm_kvwarm.lab.emulator.vllm_metrics import EmulatorMetrics
from litellm_kvwarm.lab.processes import start_emulator

# 1000 tokens/s: a chunk of 100 tokens takes 0.1 s of simulated time.
LONG = list(range(1000, 2000))  # 1000 tokens: 10 chunks
SHORT = list(range(5000, 5200))  # 200 tokens: 2 chunks


def make_engine(**overrides) -> tuple[Engine, ManualClock]:
    settings = {"served_model_name": "m", "max_model_len": 4096, "prefill_tokens_per_s": 1000.0, **overrides}
    config = EmulatorConfig(**settings)
    clock = ManualClock()
    return Engine(config, clock, EmulatorMetrics("m")), clock


async def long_then_short(engine: Engine, clock: ManualClock, long_priority: int, short_priority: int,
                          short_prompt=SHORT):
    """Start the long prefill, let it run one chunk, then send the short one; both results."""
    long_task = asyncio.create_task(engine.prefill(LONG, None, clock.now(), priority=long_priority))
    while clock.now() < 0.1:  # the long prefill's first chunk is under way
        await asyncio.sleep(0)
    arrived = clock.now()
    short = await engine.prefill(short_prompt, None, arrived, priority=short_priority)
    short_done = clock.now()
    return await long_task, short, arrived, short_done


async def test_priority_a_better_request_waits_at_most_one_chunk_of_a_long_prefill():
    engine, clock = make_engine(scheduling_policy="priority", max_num_batched_tokens=100)
    long, short, arrived, short_done = await long_then_short(engine, clock, long_priority=10, short_priority=0)
    # simulated time jumps a whole chunk at once, so it arrived at the end of the long one's first
    # chunk, and got the GPU right there (mid-chunk arrivals: the real-process test below)
    assert arrived == pytest.approx(0.1)
    assert short.queue_wait_s == 0
    assert short.ttft_s == pytest.approx(0.2)  # its own 200 tokens only
    assert short_done == pytest.approx(0.3)
    assert long.ttft_s == pytest.approx(1.2)  # its own 1.0 s plus the short one's 0.2 s
    assert long.queue_wait_s == pytest.approx(0.2)


async def test_priority_ties_and_worse_priorities_go_by_arrival():
    engine, clock = make_engine(scheduling_policy="priority", max_num_batched_tokens=100)
    long, short, _, _ = await long_then_short(engine, clock, long_priority=0, short_priority=0)
    assert (long.ttft_s, short.ttft_s) == (pytest.approx(1.0), pytest.approx(1.1))
    engine, clock = make_engine(scheduling_policy="priority", max_num_batched_tokens=100)
    long, short, _, _ = await long_then_short(engine, clock, long_priority=-5, short_priority=3)
    assert (long.ttft_s, short.ttft_s) == (pytest.approx(1.0), pytest.approx(1.1))
    assert short.queue_wait_s == pytest.approx(0.9)


async def test_fcfs_keeps_the_gpu_with_the_first_request_even_when_chunked():
    engine, clock = make_engine(max_num_batched_tokens=100)
    long, short, _, short_done = await long_then_short(engine, clock, 0, 0)
    assert long.ttft_s == pytest.approx(1.0) and long.queue_wait_s == 0
    assert short_done == pytest.approx(1.2) and short.queue_wait_s == pytest.approx(0.9)


async def test_without_a_chunk_size_a_prefill_is_one_piece_and_priority_cannot_cut_in():
    engine, clock = make_engine(scheduling_policy="priority")
    long, short, _, short_done = await long_then_short(engine, clock, long_priority=10, short_priority=-10)
    assert long.ttft_s == pytest.approx(1.0) and short_done == pytest.approx(1.2)


async def test_running_first_a_started_prefill_keeps_the_gpu_whatever_the_priority_as_in_vllm_v1():
    engine, clock = make_engine(scheduling_policy="priority", max_num_batched_tokens=100, prefill_order="running-first")
    long, short, arrived, short_done = await long_then_short(engine, clock, long_priority=10, short_priority=0)
    assert arrived == pytest.approx(0.1)
    assert long.ttft_s == pytest.approx(1.0) and long.queue_wait_s == 0  # never interrupted
    assert short.queue_wait_s == pytest.approx(0.9) and short_done == pytest.approx(1.2)  # waited for all of it


async def test_running_first_still_orders_the_waiting_queue_by_priority():
    """Two requests wait behind a started one: the better one goes next, then the one that came first."""
    engine, clock = make_engine(scheduling_policy="priority", max_num_batched_tokens=100, prefill_order="running-first")
    first = asyncio.create_task(engine.prefill(LONG, None, clock.now(), priority=0))
    while clock.now() < 0.1:
        await asyncio.sleep(0)
    arrivals = [0.0, clock.now()]
    worse = asyncio.create_task(engine.prefill(SHORT, None, arrivals[1], priority=10))
    await asyncio.sleep(0)
    arrivals.append(clock.now())  # both arrived while the first one's prefill was under way
    better = asyncio.create_task(engine.prefill(list(range(7000, 7100)), None, arrivals[2], priority=0))
    done = await asyncio.gather(first, worse, better)
    assert arrivals[1] < arrivals[2] < 1.0
    finished = [round(a + r.ttft_s, 6) for a, r in zip(arrivals, done)]
    assert finished == [1.0, 1.3, 1.1]  # first to its end, then the better one (100 tokens), then the worse (200)


async def test_chunks_cache_their_full_blocks_as_they_complete():
    """A better request with the same prompt, arriving mid-prefill, finds the blocks computed so far."""
    engine, clock = make_engine(scheduling_policy="priority", max_num_batched_tokens=100)
    long, same, _, _ = await long_then_short(engine, clock, long_priority=5, short_priority=0, short_prompt=LONG)
    # it took the GPU after the long one's first chunk: 100 tokens done, 96 of them in full 16-token blocks
    assert same.cached_tokens == 96
    assert same.ttft_s == pytest.approx((1000 - 96) / 1000)
    assert long.cached_tokens == 0


async def test_a_cancelled_waiter_leaves_the_queue():
    clock = ManualClock()
    scheduler = PrefillScheduler("priority", clock)
    first = scheduler.enter(0)
    await scheduler.turn(first)
    waiter = scheduler.enter(-1)
    task = asyncio.create_task(scheduler.turn(waiter))
    await asyncio.sleep(0)
    task.cancel()
    scheduler.leave(waiter)
    assert scheduler.waiting == 0
    third = scheduler.enter(0)
    scheduler.leave(first)
    await asyncio.wait_for(scheduler.turn(third), 1)  # the GPU went to the next one, not the cancelled


def test_invalid_settings_name_their_flags():
    with pytest.raises(ValueError, match="--scheduling-policy"):
        EmulatorConfig(served_model_name="m", max_model_len=10, scheduling_policy="lifo")
    with pytest.raises(ValueError, match="--max-num-batched-tokens"):
        EmulatorConfig(served_model_name="m", max_model_len=10, max_num_batched_tokens=0)
    with pytest.raises(ValueError, match="--prefill-order"):
        EmulatorConfig(served_model_name="m", max_model_len=10, prefill_order="lifo")
    with pytest.raises(ValueError, match="--prefill-order"):
        PrefillScheduler("fcfs", ManualClock(), "lifo")


MESSAGES = [{"role": "user", "content": "hello there"}]


async def test_fcfs_refuses_a_nonzero_priority_with_vllms_400(emulator_factory):
    async with emulator_factory() as emu:
        refused = await emu.chat(MESSAGES, priority=5)
        assert refused.status_code == 400
        assert refused.json() == {"error": {"message": "Got priority 5 but Priority scheduling is not enabled.",
                                            "type": "BadRequestError", "param": None, "code": 400}}
        assert priority_not_enabled(-3) == "Got priority -3 but Priority scheduling is not enabled."
        for accepted in ({"priority": 0}, {}):
            assert (await emu.chat(MESSAGES, **accepted)).status_code == 200
        completions = await emu.client.post("/v1/completions", json={"model": "fast", "prompt": "hi", "priority": -1})
        assert completions.status_code == 400 and "Got priority -1 but" in completions.json()["error"]["message"]
        responses = await emu.client.post("/v1/responses", json={"model": "fast", "input": "hi", "priority": 2})
        assert responses.status_code == 400 and responses.json()["error"]["message"] == priority_not_enabled(2)
        wrong_type = await emu.chat(MESSAGES, priority="high")
        assert wrong_type.status_code == 400 and "body.priority" in wrong_type.json()["error"]["message"]
        log = await emu.requests()
        assert [(e["status"], e["priority"]) for e in log] == [
            (400, 5), (200, 0), (200, 0), (400, -1), (400, 2), (400, "high")]
        assert log[1]["queue_wait_s"] == 0


async def test_priority_policy_accepts_any_priority_and_logs_it(emulator_factory):
    async with emulator_factory(scheduling_policy="priority") as emu:
        for priority in (5, -5, 0):
            assert (await emu.chat(MESSAGES, priority=priority)).status_code == 200
        assert [e["priority"] for e in await emu.requests()] == [5, -5, 0]


def test_a_real_process_serves_the_better_priority_first(tmp_path):
    """Two concurrent long prefills over HTTP: the better one, sent second, finishes first."""
    flags = ["--scheduling-policy", "priority", "--max-num-batched-tokens", "256"]
    with start_emulator("m", 32_768, workdir=tmp_path, prefill_tokens_per_s=4000, extra_args=flags) as emulator:
        base = emulator.base_url
        words = " ".join(f"w{i}" for i in range(2400))  # ~4800 tokens: ~1.2 s of prefill

        def ask(prefix: str, priority: int) -> float:
            body = {"model": "m", "messages": [{"role": "user", "content": prefix + words}], "max_tokens": 1,
                    "priority": priority}
            started = time.monotonic()
            response = httpx.post(base + "/v1/chat/completions", json=body, timeout=30, trust_env=False)
            assert response.status_code == 200, response.text
            return time.monotonic() - started

        with ThreadPoolExecutor(2) as pool:
            low = pool.submit(ask, "a ", 10)
            time.sleep(0.3)
            high = pool.submit(ask, "b ", 0)
            low_s, high_s = low.result(), high.result()
        log = httpx.get(base + "/emulator/requests", trust_env=False).json()["requests"]
        by_priority = {e["priority"]: e for e in log}
        assert high_s < low_s
        # the better one waited for one 256-token chunk at most (64 ms at 4000 tokens/s; slack for a
        # busy machine), not for the rest of the other's prefill (~0.9 s under fcfs)
        assert by_priority[0]["queue_wait_s"] < 0.3
        assert by_priority[10]["queue_wait_s"] > 0.9  # it waited out the other's whole prefill
        assert by_priority[0]["ttft_s"] < by_priority[10]["ttft_s"]

import asyncio
import math
import time

import pytest

from litellm_kvwarm.deadline import RequestBudget


class FakeClock:
    def __init__(self, now: float = 100.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


def resolve_later(future: asyncio.Future, value, *, clock: FakeClock | None = None, advance: float = 0.0, delay: float = 0.0):
    """Advance the fake clock by ``advance`` and resolve ``future`` after ``delay`` real seconds."""

    def fire():
        if clock is not None:
            clock.now += advance
        future.set_result(value)

    asyncio.get_running_loop().call_later(delay, fire)


async def test_wait_books_the_time_waited_on_the_injected_clock():
    clock = FakeClock()
    budget = RequestBudget(0.3, clock=clock)
    future = asyncio.get_running_loop().create_future()
    resolve_later(future, 7, clock=clock, advance=0.1)
    assert await budget.wait(future, None) == 7
    assert budget.spent_s == pytest.approx(0.1)
    assert budget.remaining_s == pytest.approx(0.2)


async def test_second_wait_only_gets_what_the_first_left():
    budget = RequestBudget(0.3)
    loop = asyncio.get_running_loop()
    first = loop.create_future()
    resolve_later(first, "window", delay=0.2)
    assert await budget.wait(first, None) == "window"
    assert 0.19 <= budget.spent_s <= 0.26

    hung = loop.create_future()
    started = time.monotonic()
    assert await budget.wait(hung, "default") == "default"
    waited = time.monotonic() - started
    assert 0.03 <= waited <= 0.13  # what was left of 0.3 s, not a fresh 0.3 s
    assert budget.spent_s == pytest.approx(0.3, abs=0.03)
    assert budget.exhausted and budget.remaining_s == 0.0

    started = time.monotonic()
    assert await budget.wait(hung, "default") == "default"
    assert time.monotonic() - started < 0.03  # nothing left: no wait at all
    hung.cancel()


async def test_overlapping_waits_book_their_union_not_their_sum():
    clock = FakeClock()
    budget = RequestBudget(1.0, clock=clock)
    loop = asyncio.get_running_loop()
    a, b = loop.create_future(), loop.create_future()
    resolve_later(a, 1, clock=clock, advance=0.1, delay=0.01)
    resolve_later(b, 2, clock=clock, advance=0.05, delay=0.02)
    assert await asyncio.gather(budget.wait(a, None), budget.wait(b, None)) == [1, 2]
    assert budget.spent_s == pytest.approx(0.15)  # 0.1 + 0.05 of wall time, not 0.1 + 0.15


async def test_spent_counts_a_wait_in_progress():
    clock = FakeClock()
    budget = RequestBudget(0.3, clock=clock)
    future = asyncio.get_running_loop().create_future()
    waiting = asyncio.ensure_future(budget.wait(future, None))
    await asyncio.sleep(0)
    clock.now += 0.2
    assert budget.spent_s == pytest.approx(0.2) and budget.remaining_s == pytest.approx(0.1)
    future.set_result("x")
    assert await waiting == "x"


async def test_the_awaited_work_keeps_running_after_the_budget_gives_up():
    budget = RequestBudget(0.02)
    finished = []

    async def slow():
        await asyncio.sleep(0.05)
        finished.append(True)
        return 5

    task = asyncio.ensure_future(slow())
    assert await budget.wait(task, None) is None
    assert not task.cancelled()
    assert await task == 5 and finished == [True]


async def test_a_bare_coroutine_past_the_budget_runs_to_completion_in_the_background():
    budget = RequestBudget(0.0)
    finished = asyncio.Event()

    async def work():
        await asyncio.sleep(0.01)
        finished.set()

    assert await budget.wait(work(), "skipped") == "skipped"
    await asyncio.wait_for(finished.wait(), 1.0)


async def test_an_exception_within_the_budget_is_raised():
    budget = RequestBudget(0.3)

    async def broken():
        raise ValueError("backend bug")

    with pytest.raises(ValueError, match="backend bug"):
        await budget.wait(broken(), None)


async def test_a_done_awaitable_answers_even_from_an_exhausted_budget():
    budget = RequestBudget(0.3, spent_s=0.3)
    future = asyncio.get_running_loop().create_future()
    future.set_result(16384)
    assert budget.exhausted
    assert await budget.wait(future, None) == 16384


def test_metadata_round_trip_continues_the_same_budget():
    clock = FakeClock()
    first = RequestBudget(0.3, spent_s=0.25, clock=clock)
    value = first.to_metadata()
    assert value == 0.25 and isinstance(value, float)
    second = RequestBudget.from_metadata(value, 0.3, clock=clock)
    assert second.spent_s == pytest.approx(0.25)
    assert second.remaining_s == pytest.approx(0.05)


@pytest.mark.parametrize(
    "value",
    [None, "0.2", -1.0, math.nan, math.inf, True, {"spent": 1}],
    ids=["absent", "string", "negative", "nan", "inf", "bool", "dict"],
)
def test_metadata_that_is_not_a_finite_non_negative_number_counts_as_nothing_spent(value):
    budget = RequestBudget.from_metadata(value, 0.3)
    assert budget.spent_s == 0.0 and budget.remaining_s == pytest.approx(0.3)


def test_spent_beyond_the_total_leaves_nothing():
    budget = RequestBudget(0.3, spent_s=5.0)
    assert budget.remaining_s == 0.0 and budget.exhausted


def test_zero_or_negative_total_never_waits():
    assert RequestBudget(0).exhausted
    assert RequestBudget(-1).total_s == 0.0


async def test_a_caller_cancelled_as_the_work_finishes_is_still_cancelled():
    """asyncio.wait_for (Python 3.11) swallows a cancel that arrives in the loop step where the
    awaited work finishes; a budget wait must not."""
    loop = asyncio.get_running_loop()

    async def request_forever():
        budget = RequestBudget(1.0)
        while True:
            work = loop.create_future()
            loop.call_soon(work.set_result, 1)
            await budget.wait(work, None)
            await asyncio.sleep(3600)

    for i in range(100):
        task = loop.create_task(request_forever())
        for _ in range(i % 4):
            await asyncio.sleep(0)
        task.cancel()
        done, _ = await asyncio.wait({task}, timeout=1.0)
        assert done, f"cancel {i} was swallowed"

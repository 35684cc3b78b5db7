import asyncio

from litellm_kvwarm.warm import PROMPT_SHAPING_KEYS, WarmOutcome, WarmRunner, warm_request


def test_warm_request_copies_prompt_shaping_keys_and_sets_one_token():
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
    assert "temperature" not in body and "user" not in body
    assert body["fallbacks"] == [] and body["context_window_fallbacks"] == [] and body["num_retries"] == 0
    assert "messages" in PROMPT_SHAPING_KEYS


async def test_runner_bounds_concurrency_and_reports_outcomes():
    gate = asyncio.Event()
    done = []

    async def send(body):
        await gate.wait()
        if body.get("fail"):
            raise RuntimeError("backend down")

    runner = WarmRunner(send, max_concurrency=2, timeout_s=5, on_done=lambda o, d, t: done.append(o))
    assert runner.submit({"model": "slow"}) is True
    assert runner.submit({"model": "slow", "fail": True}) is True
    assert runner.submit({"model": "slow"}) is False  # at the bound: skipped, not queued
    assert runner.in_flight == 2
    gate.set()
    await runner.drain()
    assert sorted(done) == sorted([WarmOutcome.SUCCEEDED, WarmOutcome.FAILED])
    assert runner.in_flight == 0


async def test_runner_times_out_slow_warms():
    done = []

    async def send(body):
        await asyncio.sleep(10)

    runner = WarmRunner(send, max_concurrency=1, timeout_s=0.05, on_done=lambda o, d, t: done.append(o))
    runner.submit({"model": "slow"})
    await runner.drain()
    assert done == [WarmOutcome.TIMED_OUT]


async def test_aclose_cancels_every_task():
    started = asyncio.Event()
    cancelled = []

    async def send(body):
        started.set()
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.append(body["model"])
            raise

    runner = WarmRunner(send, max_concurrency=4, timeout_s=30)
    runner.submit({"model": "a"})
    runner.submit({"model": "b"})
    await started.wait()
    await runner.aclose()
    assert sorted(cancelled) == ["a", "b"] and runner.in_flight == 0

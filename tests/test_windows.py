import asyncio

import httpx
import pytest

from litellm_kvwarm.windows import Deployment, HttpWindowFetcher, WindowCache, models_url, parse_models_response

DEP = Deployment("http://127.0.0.1:9/v1", "fast-8b")


class FakeClock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


class ScriptedFetch:
    """Answers from a list, records calls; an optional gate holds the fetch open."""

    def __init__(self, *answers, gate: asyncio.Event | None = None):
        self.answers = list(answers)
        self.calls = 0
        self.gate = gate

    async def __call__(self, deployment):
        self.calls += 1
        if self.gate is not None:
            await self.gate.wait()
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, Exception):
            raise answer
        return answer


def cache(fetch, clock, ttl=900.0, budget=0.25, unknown=30.0):
    return WindowCache(fetch, ttl_s=ttl, budget_s=budget, unknown_retry_s=unknown, clock=clock)


async def test_first_get_fetches_then_serves_from_cache():
    clock, fetch = FakeClock(), ScriptedFetch(16384)
    c = cache(fetch, clock)
    assert await c.get(DEP) == 16384
    clock.now += 100
    assert await c.get(DEP) == 16384
    assert fetch.calls == 1


async def test_expired_entry_is_read_again_after_ttl():
    clock, fetch = FakeClock(), ScriptedFetch(16384, 8192)
    c = cache(fetch, clock, ttl=10)
    assert await c.get(DEP) == 16384
    clock.now += 10.01
    assert c.peek(DEP) is None
    assert await c.get(DEP) == 8192
    assert fetch.calls == 2


async def test_refresh_ahead_serves_old_value_and_refreshes_in_background():
    clock, fetch = FakeClock(), ScriptedFetch(16384, 32768)
    c = cache(fetch, clock, ttl=10)
    await c.get(DEP)
    clock.now += 8.5  # past 80% of the TTL
    assert await c.get(DEP) == 16384  # not held
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert fetch.calls == 2
    assert c.peek(DEP) == 32768


async def test_slow_fetch_does_not_hold_the_request_past_budget():
    gate = asyncio.Event()
    clock, fetch = FakeClock(), ScriptedFetch(16384, gate=gate)
    c = cache(fetch, clock, budget=0.05)
    loop = asyncio.get_running_loop()
    started = loop.time()
    assert await c.get(DEP) is None
    assert loop.time() - started < 0.5
    assert await c.get(DEP) is None  # still in flight: not fetched twice
    assert fetch.calls == 1
    gate.set()
    await asyncio.sleep(0.01)
    assert c.peek(DEP) == 16384
    await c.aclose()


async def test_zero_budget_never_waits_but_fetches():
    clock, fetch = FakeClock(), ScriptedFetch(4096)
    c = cache(fetch, clock, budget=0)
    assert await c.get(DEP) is None
    await asyncio.sleep(0)
    assert c.peek(DEP) == 4096


async def test_unknown_is_retried_after_unknown_retry_period():
    clock, fetch = FakeClock(), ScriptedFetch(None, 16384)
    c = cache(fetch, clock, unknown=30)
    assert await c.get(DEP) is None
    clock.now += 29
    assert await c.get(DEP) is None and fetch.calls == 1
    clock.now += 2
    assert await c.get(DEP) == 16384 and fetch.calls == 2


async def test_fetcher_exception_means_unknown_not_failure():
    clock, fetch = FakeClock(), ScriptedFetch(RuntimeError("bug"))
    c = cache(fetch, clock)
    assert await c.get(DEP) is None


async def test_learned_window_replaces_entry_at_once():
    clock, fetch = FakeClock(), ScriptedFetch(16384)
    c = cache(fetch, clock)
    await c.get(DEP)
    c.learn(DEP, 8192)
    assert await c.get(DEP) == 8192 and fetch.calls == 1


@pytest.mark.parametrize(
    "base, url",
    [
        ("http://h:8000/v1", "http://h:8000/v1/models"),
        ("http://h:8000/v1/", "http://h:8000/v1/models"),
        ("http://h:8000", "http://h:8000/v1/models"),
    ],
)
def test_models_url(base, url):
    assert models_url(base) == url


@pytest.mark.parametrize(
    "body, window",
    [
        ({"data": [{"id": "fast-8b", "max_model_len": 16384}]}, 16384),
        ({"data": [{"id": "other", "max_model_len": 4096}, {"id": "fast-8b", "max_model_len": 16384}]}, 16384),
        ({"data": [{"id": "alias", "root": "fast-8b", "max_model_len": 2048}]}, 2048),
        ({"data": [{"id": "fast-8b", "context_length": 32768}]}, 32768),
        ({"data": [{"id": "other-model", "max_model_len": 4096}]}, None),  # swap slot now serves another model
        ({"data": [{"id": "fast-8b", "max_model_len": "16384"}]}, None),
        ({"data": [{"id": "fast-8b", "max_model_len": True}]}, None),
        ({"data": [{"id": "fast-8b", "max_model_len": -5}]}, None),
        ({"data": "nope"}, None),
        ([1, 2], None),
        ("garbage", None),
    ],
    ids=["one", "many", "root", "sglang-field", "swapped", "string", "bool", "negative", "data-not-list", "list", "str"],
)
def test_parse_models_response(body, window):
    assert parse_models_response(body, "fast-8b") == window


@pytest.mark.parametrize(
    "handler, expected, error",
    [
        (lambda r: httpx.Response(200, json={"data": [{"id": "fast-8b", "max_model_len": 16384}]}), 16384, None),
        (lambda r: httpx.Response(500, text="down"), None, "HTTPStatusError"),
        (lambda r: httpx.Response(200, text="<html>not json"), None, "JSONDecodeError"),
        (lambda r: httpx.Response(200, json={"data": []}), None, "no_window"),
    ],
    ids=["ok", "500", "garbage", "not-listed"],
)
async def test_http_fetcher(handler, expected, error):
    # httpx.MockTransport stands in for the network here; real servers are exercised in tests/e2e.
    seen = []
    errors = []
    def record(request):
        seen.append(str(request.url))
        return handler(request)
    async with httpx.AsyncClient(transport=httpx.MockTransport(record)) as client:
        fetch = HttpWindowFetcher(client, on_error=lambda d, kind: errors.append(kind))
        assert await fetch(DEP) == expected
    assert seen == ["http://127.0.0.1:9/v1/models"]
    assert errors == ([error] if error else [])


def test_lookup_answers_from_the_cache_without_awaiting_and_misses_otherwise():
    from litellm_kvwarm.windows import MISS

    clock = [0.0]
    calls = []

    async def fetch(deployment):
        calls.append(deployment)
        return 4096

    cache = WindowCache(fetch, ttl_s=100.0, budget_s=1.0, clock=lambda: clock[0])
    d = Deployment("http://a", "m")
    assert cache.lookup(d) is MISS and calls == []  # a miss starts nothing: get() does
    assert asyncio.run(cache.get(d)) == 4096
    assert cache.lookup(d) == 4096 and len(calls) == 1
    clock[0] = 100.0  # past the TTL: a miss again
    assert cache.lookup(d) is MISS

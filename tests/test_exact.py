import json
import logging
import time

import httpx
import pytest

from litellm_kvwarm.deadline import RequestBudget
from litellm_kvwarm.exact import ExactCounter, tokenize_url
from litellm_kvwarm.windows import Deployment
from test_windows import Answer, FakeClock, StubBackend, const

CHAT = {"model": "fast", "messages": [{"role": "user", "content": "hello"}], "max_tokens": 64}
COUNT = {"count": 17, "max_model_len": 4096, "tokens": list(range(17))}


class Harness:
    """An ExactCounter on a real stub backend, with its errors, budget skips and clock."""

    def __init__(self, stub: StubBackend, client: httpx.AsyncClient, *, api_key: str | None = None, timeout_s: float = 2.0):
        self.clock = FakeClock()
        self.errors: list[str] = []
        self.exhausted = 0
        self.deployment = Deployment(stub.base_url + "/v1", "fast-8b", api_key=api_key)
        self.counter = ExactCounter(
            client,
            timeout_s=timeout_s,
            retry_s=30.0,
            clock=self.clock,
            on_error=lambda d, kind: self.errors.append(kind),
            on_budget_exhausted=self._exhausted,
        )

    def _exhausted(self):
        self.exhausted += 1

    async def count(self, payload=CHAT, budget_s: float = 5.0):
        # A generous default: these tests classify answers, and a loaded CI machine once took longer than
        # 0.3 s to serve the stub's first answer, so the budget, not the answer, decided the outcome.
        # The tests about the budget pass their own.
        return await self.counter.count(self.deployment, payload, RequestBudget(budget_s))


@pytest.mark.parametrize("base, url", [("http://h:8000/v1", "http://h:8000/tokenize"), ("http://h:8000", "http://h:8000/tokenize")])
def test_tokenize_url(base, url):
    assert tokenize_url(base) == url


async def test_count_forwards_the_prompt_fields_and_the_key():
    async with StubBackend() as stub, httpx.AsyncClient() as client:
        bodies = []

        def tokenize(request):
            bodies.append(json.loads(request["body"]))
            return Answer.json(200, COUNT)

        stub.route("POST", "/tokenize", tokenize)
        h = Harness(stub, client, api_key="sk-backend")
        payload = {**CHAT, "tools": [{"type": "function", "function": {"name": "f"}}]}
        assert await h.count(payload) == 17
    assert bodies == [{"model": "fast-8b", "messages": CHAT["messages"], "tools": payload["tools"], "add_generation_prompt": True}]
    assert stub.requests[0][2]["authorization"] == "Bearer sk-backend"
    assert h.errors == [] and h.exhausted == 0


async def test_not_a_chat_payload_is_not_counted():
    async with StubBackend() as stub, httpx.AsyncClient() as client:
        h = Harness(stub, client)
        assert await h.count({"model": "fast", "prompt": "hi"}) is None
    assert stub.requests == []


@pytest.mark.parametrize("answer", [Answer(hang=True), Answer.json(200, COUNT, drip_s=0.5)], ids=["hang", "drip"])
async def test_a_hung_tokenize_costs_one_budget_per_interval(answer):
    """Issue 12 item 3: a hanging /tokenize added 0.25 s to every request near the window, again
    and again. Now the first request waits its budget, the next ones nothing, until the interval ends."""
    async with StubBackend() as stub, httpx.AsyncClient(timeout=5.0) as client:
        stub.route("POST", "/tokenize", const(answer))
        h = Harness(stub, client, timeout_s=5.0)
        started = time.monotonic()
        assert await h.count(budget_s=0.3) is None
        assert time.monotonic() - started < 0.3 + 0.05
        started = time.monotonic()
        assert await h.count(budget_s=0.3) is None
        assert time.monotonic() - started < 0.03
        assert len(stub.requests) == 1 and h.exhausted == 2
        h.clock.now += 31  # the retry interval is over: asked (and waited for) again
        started = time.monotonic()
        assert await h.count(budget_s=0.05) is None
        assert 0.04 <= time.monotonic() - started < 0.2
        assert len(stub.requests) == 2
        await h.counter.aclose()


async def test_one_tenant_s_overrun_never_turns_counts_off_for_another():
    """Found by a breaker: a tenant's request of large images made /tokenize overrun the budget, and the
    deployment's backoff then left every tenant without exact counts for 30 s (routing and clamping moved).
    The failure memory is per (tenant, deployment): the tenant that overran backs off, the other is counted."""
    async with StubBackend() as stub, httpx.AsyncClient(timeout=5.0) as client:
        stub.route("POST", "/tokenize", const(Answer.json(200, COUNT, drip_s=0.5)))
        h = Harness(stub, client, timeout_s=5.0)
        assert await h.counter.count(h.deployment, CHAT, RequestBudget(0.05), "tenant-a") is None  # overran
        assert await h.counter.count(h.deployment, CHAT, RequestBudget(0.05), "tenant-a") is None  # backs off: not asked
        assert len(stub.requests) == 1
        stub.route("POST", "/tokenize", const(Answer.json(200, COUNT)))
        assert await h.counter.count(h.deployment, CHAT, RequestBudget(2.0), "tenant-b") == COUNT["count"]
        assert len(stub.requests) == 2
        await h.counter.aclose()


@pytest.mark.parametrize(
    "answer, error, remembered",
    [
        (Answer(500, b"boom"), "http_500", True),
        (Answer(503, b""), "http_503", True),
        (Answer.json(429, {"error": "slow down"}), "http_429", True),
        (Answer(200, b"<html>"), "invalid_json", True),
        (Answer.json(200, {"count": "17"}), "invalid_count", True),
        (Answer.json(200, [17]), "invalid_count", True),
        (Answer.json(401, {"error": "Unauthorized"}), "unauthorized", True),
        (Answer.json(400, {"error": "bad chat template input"}), "http_400", False),
    ],
    ids=["500", "503", "429", "junk", "string-count", "list", "401", "400-request-specific"],
)
async def test_failures_are_counted_and_remembered_for_the_interval(answer, error, remembered):
    async with StubBackend() as stub, httpx.AsyncClient() as client:
        stub.route("POST", "/tokenize", const(answer))
        h = Harness(stub, client)
        assert await h.count() is None
        assert await h.count() is None
    assert h.errors == [error] * (1 if remembered else 2)
    assert len(stub.requests) == (1 if remembered else 2)


async def test_a_backend_that_recovers_is_asked_again_after_the_interval():
    async with StubBackend() as stub, httpx.AsyncClient() as client:
        stub.route("POST", "/tokenize", const(Answer(500, b"boom")))
        h = Harness(stub, client)
        assert await h.count() is None
        stub.route("POST", "/tokenize", const(Answer.json(200, COUNT)))
        h.clock.now += 29
        assert await h.count() is None  # still inside the interval
        h.clock.now += 2
        assert await h.count() == 17


async def test_no_tokenize_is_never_asked_again():
    async with StubBackend() as stub, httpx.AsyncClient() as client:  # the stub answers 404 for unknown routes
        h = Harness(stub, client)
        assert await h.count() is None
        h.clock.now += 3600
        assert await h.count() is None
    assert len(stub.requests) == 1 and h.errors == [] and h.exhausted == 0


async def test_unauthorized_tokenize_is_logged_once(caplog):
    async with StubBackend() as stub, httpx.AsyncClient() as client:
        stub.route("POST", "/tokenize", const(Answer.json(401, {"error": "Unauthorized"})))
        h = Harness(stub, client, api_key="sk-not-this-one")
        with caplog.at_level(logging.DEBUG, logger="litellm_kvwarm"):
            for _ in range(3):
                assert await h.count() is None
                h.clock.now += 31
    assert h.errors == ["unauthorized"] * 3
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "/tokenize answered 401" in warnings[0]
    assert not any("sk-not-this-one" in r.getMessage() for r in caplog.records)


async def test_an_exhausted_budget_sends_nothing():
    async with StubBackend() as stub, httpx.AsyncClient() as client:
        stub.route("POST", "/tokenize", const(Answer.json(200, COUNT)))
        h = Harness(stub, client)
        assert await h.counter.count(h.deployment, CHAT, RequestBudget(0.3, spent_s=0.3)) is None
    assert stub.requests == [] and h.exhausted == 1


async def test_the_wait_is_booked_on_the_request_budget():
    async with StubBackend() as stub, httpx.AsyncClient() as client:
        stub.route("POST", "/tokenize", const(Answer.json(200, COUNT)))
        h = Harness(stub, client)
        budget = RequestBudget(5.0)
        assert await h.counter.count(h.deployment, CHAT, budget) == 17
    assert 0.0 < budget.spent_s < 5.0

import asyncio
import json
import logging
import time

import httpx
import pytest

from litellm_kvwarm import catalog
from litellm_kvwarm.deadline import RequestBudget
from litellm_kvwarm.windows import (
    MISS,
    BackendCallError,
    Deployment,
    HttpWindowFetcher,
    WindowCache,
    bounded_request,
    models_url,
    parse_models_response,
    redact_url,
    status_error,
)

DEP = Deployment("http://127.0.0.1:9/v1", "fast-8b")
MODELS = {"object": "list", "data": [{"id": "fast-8b", "object": "model", "max_model_len": 16384}]}


# -- a real HTTP server whose answers tests script (drip, hang, junk, 401) ------------------------


class StubBackend:
    """A real HTTP/1.1 server on a free local port (asyncio streams, one request per connection).

    ``route(method, path, behaviour)``: ``behaviour(request)`` returns an :class:`Answer`.
    Requests are recorded as ``(method, path, headers)`` with lower-case header names. With
    ``api_key`` set it guards ``/v1/*`` as ``vllm --api-key`` does (401 without the bearer key).
    Used by tests/test_exact.py and tests/test_runtime.py too.
    """

    def __init__(self, api_key: str | None = None):
        self.api_key = api_key
        self.routes: dict[tuple[str, str], object] = {}
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self._handlers: set[asyncio.Task] = set()
        self._server: asyncio.AbstractServer | None = None
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def route(self, method: str, path: str, behaviour) -> None:
        self.routes[(method, path)] = behaviour

    async def __aenter__(self) -> "StubBackend":
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc) -> None:
        self._server.close()
        for task in list(self._handlers):
            task.cancel()
        await asyncio.gather(*self._handlers, return_exceptions=True)
        await self._server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        self._handlers.add(task)
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, target, _ = lines[0].split(" ", 2)
            headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            path = target.split("?", 1)[0]
            self.requests.append((method, path, headers))
            if self.api_key and path.startswith("/v1/") and headers.get("authorization") != f"Bearer {self.api_key}":
                answer = Answer.json(401, {"error": "Unauthorized"})
            else:
                behaviour = self.routes.get((method, path))
                answer = behaviour({"method": method, "path": path, "headers": headers, "body": body}) if behaviour else Answer.json(404, {"detail": "Not Found"})
            await answer.send(writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()
            self._handlers.discard(task)


class Answer:
    """What the stub sends: ``status`` and ``body``, all at once, one byte per ``drip_s``, or
    nothing at all (``hang``)."""

    def __init__(self, status: int = 200, body: bytes = b"", *, drip_s: float = 0.0, hang: bool = False):
        self.status, self.body, self.drip_s, self.hang = status, body, drip_s, hang

    @classmethod
    def json(cls, status: int, obj, **kw) -> "Answer":
        return cls(status, json.dumps(obj).encode(), **kw)

    async def send(self, writer: asyncio.StreamWriter) -> None:
        if self.hang:
            await asyncio.Event().wait()
        head = f"HTTP/1.1 {self.status} X\r\nContent-Type: application/json\r\nContent-Length: {len(self.body)}\r\nConnection: close\r\n\r\n"
        writer.write(head.encode())
        await writer.drain()
        if not self.drip_s:
            writer.write(self.body)
            await writer.drain()
            return
        for i in range(len(self.body)):
            await asyncio.sleep(self.drip_s)
            writer.write(self.body[i : i + 1])
            await writer.drain()


def const(answer: Answer):
    return lambda request: answer


# -- the cache ----------------------------------------------------------------------------------


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


def cache(fetch, clock, ttl=900.0, unknown=30.0, exhausted=None):
    on_exhausted = (lambda: exhausted.append(1)) if exhausted is not None else None
    return WindowCache(fetch, ttl_s=ttl, unknown_retry_s=unknown, clock=clock, on_budget_exhausted=on_exhausted)


def budget(seconds=0.25):
    return RequestBudget(seconds)


async def test_first_get_fetches_then_serves_from_cache():
    clock, fetch = FakeClock(), ScriptedFetch(16384)
    c = cache(fetch, clock)
    assert await c.get(DEP, budget()) == 16384
    clock.now += 100
    assert await c.get(DEP, budget()) == 16384
    assert fetch.calls == 1


async def test_expired_entry_is_read_again_after_ttl():
    clock, fetch = FakeClock(), ScriptedFetch(16384, 8192)
    c = cache(fetch, clock, ttl=10)
    assert await c.get(DEP, budget()) == 16384
    clock.now += 10.01
    assert c.peek(DEP) is None
    assert await c.get(DEP, budget()) == 8192
    assert fetch.calls == 2


async def test_refresh_ahead_serves_old_value_and_refreshes_in_background():
    clock, fetch = FakeClock(), ScriptedFetch(16384, 32768)
    c = cache(fetch, clock, ttl=10)
    await c.get(DEP, budget())
    clock.now += 8.5  # past 80% of the TTL
    assert await c.get(DEP, budget()) == 16384  # not held
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert fetch.calls == 2
    assert c.peek(DEP) == 32768


async def test_an_overrun_fetch_is_not_waited_for_again_until_it_finishes():
    gate = asyncio.Event()
    clock, fetch, exhausted = FakeClock(), ScriptedFetch(16384, gate=gate), []
    c = cache(fetch, clock, exhausted=exhausted)
    first = budget(0.05)
    started = time.monotonic()
    assert await c.get(DEP, first) is None
    assert 0.04 <= time.monotonic() - started < 0.2
    assert first.spent_s == pytest.approx(0.05, abs=0.02)
    second = budget(0.05)
    started = time.monotonic()
    assert await c.get(DEP, second) is None  # still in flight and overran: not waited for
    assert time.monotonic() - started < 0.03 and second.spent_s == 0.0
    assert fetch.calls == 1 and len(exhausted) == 2
    gate.set()
    await asyncio.sleep(0.01)
    assert c.peek(DEP) == 16384
    assert await c.get(DEP, budget()) == 16384
    await c.aclose()


async def test_an_overrun_fetch_is_waited_for_again_after_the_retry_interval():
    gate = asyncio.Event()
    clock, fetch = FakeClock(), ScriptedFetch(16384, gate=gate)
    c = cache(fetch, clock, unknown=30)
    assert await c.get(DEP, budget(0.02)) is None
    clock.now += 31  # the fetch still hangs (a fetcher's own timeout would have ended it by now)
    again = budget(0.02)
    assert await c.get(DEP, again) is None
    assert again.spent_s == pytest.approx(0.02, abs=0.015)  # one more budget for the new interval
    assert fetch.calls == 1  # the same fetch, not a second one
    await c.aclose()


async def test_exhausted_budget_never_waits_but_fetches():
    clock, fetch, exhausted = FakeClock(), ScriptedFetch(4096), []
    c = cache(fetch, clock, exhausted=exhausted)
    assert await c.get(DEP, RequestBudget(0.3, spent_s=0.3)) is None
    await asyncio.sleep(0)
    assert c.peek(DEP) == 4096 and exhausted == [1]


async def test_a_fetch_started_on_a_spent_budget_is_not_waited_for_by_the_next_request():
    # two hung endpoints cost one budget together: the one started without a wait (the budget
    # was already spent on the other) does not make the next request wait for it either
    gate = asyncio.Event()
    clock, fetch = FakeClock(), ScriptedFetch(16384, gate=gate)
    c = cache(fetch, clock)
    assert await c.get(DEP, RequestBudget(0.3, spent_s=0.3)) is None
    nxt = budget(0.05)
    started = time.monotonic()
    assert await c.get(DEP, nxt) is None
    assert time.monotonic() - started < 0.03 and nxt.spent_s == 0.0
    gate.set()
    await asyncio.sleep(0.01)
    assert await c.get(DEP, budget()) == 16384  # done: served, and the marker is gone
    await c.aclose()


async def test_unknown_is_retried_after_unknown_retry_period():
    clock, fetch = FakeClock(), ScriptedFetch(None, 16384)
    c = cache(fetch, clock, unknown=30)
    assert await c.get(DEP, budget()) is None
    clock.now += 29
    assert await c.get(DEP, budget()) is None and fetch.calls == 1
    clock.now += 2
    assert await c.get(DEP, budget()) == 16384 and fetch.calls == 2


async def test_fetcher_exception_means_unknown_not_failure():
    clock, fetch = FakeClock(), ScriptedFetch(RuntimeError("bug"))
    c = cache(fetch, clock)
    assert await c.get(DEP, budget()) is None


def test_lookup_answers_from_the_cache_without_awaiting_and_misses_otherwise():
    clock = [0.0]
    calls = []

    async def fetch(deployment):
        calls.append(deployment)
        return 4096

    c = WindowCache(fetch, ttl_s=100.0, clock=lambda: clock[0])
    d = Deployment("http://a", "m")
    assert c.lookup(d) is MISS and calls == []  # a miss starts nothing: get() does
    assert asyncio.run(c.get(d, budget(1.0))) == 4096
    assert c.lookup(d) == 4096 and len(calls) == 1
    clock[0] = 100.0  # past the TTL: a miss again
    assert c.lookup(d) is MISS


# -- parsing --------------------------------------------------------------------------------------


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


# vLLM's /v1/models with `--enable-lora --lora-modules sql-lora=/adapters/sql`:
# the adapter is listed with max_model_len null and parent = the base model's id.
VLLM_LORA_MODELS = {
    "object": "list",
    "data": [
        {"id": "Qwen/Qwen3-8B", "object": "model", "root": "Qwen/Qwen3-8B", "parent": None, "max_model_len": 40960},
        {"id": "sql-lora", "object": "model", "root": "/adapters/sql", "parent": "Qwen/Qwen3-8B", "max_model_len": None},
        {"id": "orphan-lora", "object": "model", "root": "/adapters/o", "parent": "gone/Model", "max_model_len": None},
        {"id": "own-lora", "object": "model", "root": "/adapters/own", "parent": "Qwen/Qwen3-8B", "max_model_len": 8192},
    ],
}


@pytest.mark.parametrize(
    "served, window",
    [("sql-lora", 40960), ("Qwen/Qwen3-8B", 40960), ("orphan-lora", None), ("own-lora", 8192)],
    ids=["adapter-gets-parent-window", "base", "parent-not-listed", "adapter-with-own-window"],
)
def test_lora_adapter_window_is_its_parents(served, window):
    assert parse_models_response(VLLM_LORA_MODELS, served) == window


# -- redaction -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url, redacted",
    [
        ("http://user:pa55@h:8000/v1", "http://***@h:8000/v1"),
        ("http://tok@h/v1/models", "http://***@h/v1/models"),
        ("https://h/v1?api-key=sk-1&x=2", "https://h/v1?api-key=***&x=***"),
        ("https://h/v1?sk-bare-token", "https://h/v1?***"),
        ("http://h:8000/v1#frag", "http://h:8000/v1"),
        ("http://h:8000/v1", "http://h:8000/v1"),
    ],
    ids=["userinfo", "user-only", "query-values", "bare-query", "fragment", "clean"],
)
def test_redact_url(url, redacted):
    assert redact_url(url) == redacted


def test_deployment_key_is_neither_identity_nor_repr():
    a = Deployment("http://u:secretpw@h:1/v1", "m", api_key="sk-abc")
    b = Deployment("http://u:secretpw@h:1/v1", "m", api_key="sk-other")
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    assert "sk-abc" not in repr(a) and "secretpw" not in repr(a) and "secretpw" not in str(a)
    assert a.auth_headers() == {"Authorization": "Bearer sk-abc"}
    assert Deployment("http://h", "m").auth_headers() == {} and Deployment("http://h", "m", api_key="").auth_headers() == {}


# -- the HTTP fetcher against a real local server ---------------------------------------------------


@pytest.mark.parametrize(
    "answer, expected, error",
    [
        (Answer.json(200, MODELS), 16384, None),
        (Answer(500, b"down"), None, "http_500"),
        (Answer(502, b"<html>bad gateway</html>"), None, "http_502"),
        (Answer(200, b"<html>not json"), None, "invalid_json"),
        (Answer(200, b"\xff\xfe junk"), None, "invalid_json"),
        (Answer.json(200, {"data": []}), None, "no_window"),
        (Answer.json(401, {"error": "Unauthorized"}), None, "unauthorized"),
        (Answer.json(403, {"error": "Forbidden"}), None, "unauthorized"),
    ],
    ids=["ok", "500", "502-html", "junk", "bad-utf8", "not-listed", "401", "403"],
)
async def test_http_fetcher_classifies_answers(answer, expected, error):
    errors = []
    async with StubBackend() as stub, httpx.AsyncClient() as client:
        stub.route("GET", "/v1/models", const(answer))
        fetch = HttpWindowFetcher(client, timeout_s=2.0, on_error=lambda d, kind: errors.append(kind))
        assert await fetch(Deployment(stub.base_url + "/v1", "fast-8b")) == expected
    assert [(m, p) for m, p, _ in stub.requests] == [("GET", "/v1/models")]
    assert errors == ([error] if error else [])


async def test_http_fetcher_connection_refused_is_connect_error():
    async with StubBackend() as stub:
        base = stub.base_url  # closed once the block ends
    errors = []
    async with httpx.AsyncClient() as client:
        fetch = HttpWindowFetcher(client, timeout_s=2.0, on_error=lambda d, kind: errors.append(kind))
        assert await fetch(Deployment(base + "/v1", "fast-8b")) is None
    assert errors == ["connect_error"]


async def test_a_dripping_body_ends_at_the_total_timeout_not_the_read_timeout():
    # one byte per 0.5 s never trips httpx's 5 s per-read timeout; the total bound ends it
    errors = []
    async with StubBackend() as stub, httpx.AsyncClient(timeout=5.0) as client:
        stub.route("GET", "/v1/models", const(Answer.json(200, MODELS, drip_s=0.5)))
        fetch = HttpWindowFetcher(client, timeout_s=1.0, on_error=lambda d, kind: errors.append(kind))
        started = time.monotonic()
        assert await fetch(Deployment(stub.base_url + "/v1", "fast-8b")) is None
        assert 0.95 <= time.monotonic() - started < 1.3
    assert errors == ["timeout"]


async def test_bounded_request_refuses_a_body_over_the_cap():
    async with StubBackend() as stub, httpx.AsyncClient() as client:
        stub.route("GET", "/big", const(Answer(200, b"x" * 5000)))
        with pytest.raises(BackendCallError) as raised:
            await bounded_request(client, "GET", stub.base_url + "/big", timeout_s=2.0, max_bytes=1000)
    assert raised.value.kind == "too_large"


@pytest.mark.parametrize("status, label", [(200, None), (204, None), (401, "unauthorized"), (403, "unauthorized"), (404, "http_404"), (503, "http_503")])
def test_status_error(status, label):
    assert status_error(status) == label


async def test_drip_server_costs_one_budget_then_nothing():
    """Issue 12 item 3: a /v1/models dripping one byte per 0.5 s held every request 0.5-0.85 s.
    Now the first request waits its budget (0.3 s) at most and the next ones do not wait."""
    async with StubBackend() as stub, httpx.AsyncClient(timeout=5.0) as client:
        stub.route("GET", "/v1/models", const(Answer.json(200, MODELS, drip_s=0.5)))
        exhausted = []
        c = WindowCache(
            HttpWindowFetcher(client, timeout_s=5.0), ttl_s=900, unknown_retry_s=30, on_budget_exhausted=lambda: exhausted.append(1)
        )
        d = Deployment(stub.base_url + "/v1", "fast-8b")
        first = RequestBudget(0.3)
        started = time.monotonic()
        assert await c.get(d, first) is None
        assert time.monotonic() - started < 0.3 + 0.05
        second = RequestBudget(0.3)
        started = time.monotonic()
        assert await c.get(d, second) is None
        assert time.monotonic() - started < 0.03
        assert second.remaining_s == pytest.approx(0.3)  # the next lookup of this request gets it all
        assert len(stub.requests) == 1 and len(exhausted) == 2
        await c.aclose()


async def test_unauthorized_is_counted_every_time_and_logged_once(caplog):
    errors = []
    async with StubBackend(api_key="sk-right") as stub, httpx.AsyncClient() as client:
        stub.route("GET", "/v1/models", const(Answer.json(200, MODELS)))
        fetch = HttpWindowFetcher(client, timeout_s=2.0, on_error=lambda d, kind: errors.append(kind))
        keyless = Deployment(stub.base_url + "/v1", "fast-8b")
        with caplog.at_level(logging.DEBUG, logger="litellm_kvwarm"):
            for _ in range(3):
                assert await fetch(keyless) is None
            wrong = Deployment(stub.base_url + "/v1", "other-model", api_key="sk-wrong")
            assert await fetch(wrong) is None
    assert errors == ["unauthorized"] * 4
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2  # once per deployment
    assert "/v1/models answered 401" in warnings[0] and "set the deployment's api_key" in warnings[0]
    assert "api_key was refused" in warnings[1]
    assert not any("sk-wrong" in r.getMessage() or "sk-right" in r.getMessage() for r in caplog.records)


async def test_the_key_is_sent_as_bearer_and_opens_an_api_key_backend(monkeypatch):
    """Issue 12 item 8: discovery behind `vllm --api-key` sent no Authorization. The key comes
    from the deployment as LiteLLM resolves it, an os.environ/ reference included."""
    monkeypatch.setenv("KVWARM_TEST_BACKEND_KEY", "sk-right")
    async with StubBackend(api_key="sk-right") as stub, httpx.AsyncClient() as client:
        stub.route("GET", "/v1/models", const(Answer.json(200, MODELS)))
        info = catalog.deployment_info(
            {"model": "hosted_vllm/fast-8b", "api_base": stub.base_url + "/v1", "api_key": "os.environ/KVWARM_TEST_BACKEND_KEY"}, None
        )
        assert await HttpWindowFetcher(client, timeout_s=2.0)(info.deployment) == 16384
    assert stub.requests[0][2]["authorization"] == "Bearer sk-right"


async def test_no_authorization_header_without_a_key():
    async with StubBackend() as stub, httpx.AsyncClient() as client:
        stub.route("GET", "/v1/models", const(Answer.json(200, MODELS)))
        assert await HttpWindowFetcher(client, timeout_s=2.0)(Deployment(stub.base_url + "/v1", "fast-8b")) == 16384
    assert "authorization" not in stub.requests[0][2]


async def test_credentials_in_api_base_never_reach_a_log_line(caplog):
    """Issue 12 item 10: an api_base with credentials was logged raw."""
    async with StubBackend() as stub, httpx.AsyncClient() as client:
        stub.route("GET", "/v1/models", const(Answer(500, b"down")))
        secret_base = f"http://admin:hunter2@127.0.0.1:{stub.port}/v1?token=qs-secret"
        d = Deployment(secret_base, "fast-8b", api_key="sk-key-secret")
        c = WindowCache(HttpWindowFetcher(client, timeout_s=2.0), ttl_s=900)
        with caplog.at_level(logging.DEBUG, logger="litellm_kvwarm"):
            assert await c.get(d, RequestBudget(1.0)) is None
            c.adopt(d, 4096)
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "127.0.0.1" in text  # the lines are there, redacted
    for secret in ("hunter2", "admin", "qs-secret", "sk-key-secret"):
        assert secret not in text


async def test_a_caller_cancelled_as_the_exchange_finishes_is_still_cancelled():
    """The scraper's aclose() hung forever: asyncio.wait_for (Python 3.11) swallowed a cancel
    that arrived in the loop step where the exchange finished, and the loop went back to sleep."""
    async with StubBackend() as stub, httpx.AsyncClient() as client:
        stub.route("GET", "/metrics", const(Answer(200, b"ok")))

        async def poll_forever():
            while True:
                await bounded_request(client, "GET", stub.base_url + "/metrics", timeout_s=2.0)
                await asyncio.sleep(3600)

        loop = asyncio.get_running_loop()
        for i in range(150):
            task = loop.create_task(poll_forever())
            # cancel at every point of the exchange: the one where it completes included
            await asyncio.sleep(i * 0.00002)
            task.cancel()
            done, _ = await asyncio.wait({task}, timeout=1.0)
            assert done, f"cancel {i} was swallowed"


def test_every_name_of_the_old_windows_module_is_still_importable_from_it():
    """windows.py was split into backend_call / window_fetch / windows (issue 13); its names stay."""
    import litellm_kvwarm.windows as windows
    from litellm_kvwarm import backend_call, window_fetch

    names = """BackendCallError BackendResponse Clock DEFAULT_TIMEOUT_S Deployment Fetcher HttpWindowFetcher
    MAX_BODY_BYTES MISS Miss UnauthorizedWarnings WINDOW_FIELDS WindowCache WindowEntry bounded_request
    models_url parse_models_response redact_url status_error""".split()
    assert [name for name in names if not hasattr(windows, name)] == []
    assert windows.Deployment is backend_call.Deployment and windows.HttpWindowFetcher is window_fetch.HttpWindowFetcher

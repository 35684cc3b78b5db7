import asyncio
import time

import httpx
import pytest
import redis.asyncio as aioredis
from prometheus_client import CollectorRegistry
from redis.asyncio.connection import parse_url

from litellm_kvwarm.config import Settings
from litellm_kvwarm.cooldown import FallbackCooldownStore, MemoryCooldownStore, RedisCooldownStore
from litellm_kvwarm.metrics import Metrics
from litellm_kvwarm.runtime import Services, redis_client, redis_url_from_env, without_pool_options
from litellm_kvwarm.windows import Deployment
from test_windows import MODELS, Answer, StubBackend, const

# -- Redis settings as LiteLLM reads them (issue 12 item 13) ---------------------------------------


@pytest.mark.parametrize(
    "settings_url, environ, url",
    [
        ("redis://plugin:6379/1", {"REDIS_URL": "redis://other:6379/0"}, "redis://plugin:6379/1"),
        ("", {"REDIS_URL": "rediss://u:p@cache:6380/2", "REDIS_HOST": "ignored"}, "rediss://u:p@cache:6380/2"),
        ("", {"REDIS_HOST": "cache"}, "redis://cache:6379/0"),
        ("", {"REDIS_HOST": "cache", "REDIS_PORT": "6380", "REDIS_DB": "3"}, "redis://cache:6380/3"),
        ("", {"REDIS_HOST": "cache", "REDIS_PASSWORD": "plain"}, "redis://:plain@cache:6379/0"),
        ("", {"REDIS_HOST": "cache", "REDIS_PASSWORD": "p@ss#w:rd/%?"}, "redis://:p%40ss%23w%3Ard%2F%25%3F@cache:6379/0"),
        ("", {"REDIS_HOST": "cache", "REDIS_USERNAME": "app:x", "REDIS_PASSWORD": "s@"}, "redis://app%3Ax:s%40@cache:6379/0"),
        ("", {"REDIS_HOST": "cache", "REDIS_USERNAME": "default"}, "redis://default@cache:6379/0"),
        ("", {"REDIS_HOST": "cache", "REDIS_SSL": "True"}, "rediss://cache:6379/0"),
        ("", {"REDIS_HOST": "cache", "REDIS_SSL": "1"}, "rediss://cache:6379/0"),
        ("", {"REDIS_HOST": "cache", "REDIS_SSL": "yes"}, "rediss://cache:6379/0"),
        ("", {"REDIS_HOST": "cache", "REDIS_SSL": "false"}, "redis://cache:6379/0"),
        ("", {"REDIS_HOST": "::1", "REDIS_PORT": "7000"}, "redis://[::1]:7000/0"),
        ("", {"REDIS_HOST": "  ", "REDIS_PASSWORD": "x"}, None),
        ("", {"REDIS_URL": ""}, None),
        ("", {}, None),
    ],
    ids=[
        "plugin-setting-wins", "redis-url-wins", "host", "port-db", "password", "password-special", "username-special",
        "username-only", "ssl-true", "ssl-1", "ssl-yes", "ssl-false", "ipv6", "blank-host", "blank-url", "none",
    ],
)
def test_redis_url_from_env(settings_url, environ, url):
    assert redis_url_from_env(settings_url, environ) == url


@pytest.mark.parametrize("password", ["p@ss#w:rd/%?", "plain", "ünï cödé", "a&b=c"])
def test_a_quoted_password_reaches_redis_py_unchanged(password):
    options = parse_url(redis_url_from_env("", {"REDIS_HOST": "cache", "REDIS_USERNAME": "u@1", "REDIS_PASSWORD": password}))
    assert options["password"] == password and options["username"] == "u@1"
    assert options["host"] == "cache" and options["port"] == 6379 and options["db"] == 0


def test_ssl_selects_redis_py_ssl_connection():
    pool = aioredis.BlockingConnectionPool.from_url(redis_url_from_env("", {"REDIS_HOST": "cache", "REDIS_SSL": "true"}))
    assert pool.connection_class is aioredis.SSLConnection


def test_url_pool_options_cannot_unbind_the_pool():
    url = "redis://cache:6379/0?max_connections=500&timeout=20&socket_timeout=9&db=4"
    assert without_pool_options(url) == "redis://cache:6379/0?db=4"
    client = redis_client(url, max_connections=2, timeout_s=0.25)
    pool = client.connection_pool
    assert pool.max_connections == 2 and pool.timeout == 0.25
    assert pool.connection_kwargs["socket_timeout"] == 0.25 and pool.connection_kwargs["db"] == 4


async def test_litellm_password_with_special_characters_authenticates(redis_server):
    """REDIS_PASSWORD with @ and # was spliced into the URL unquoted and never authenticated."""
    password = "p@ss#w:rd/%?"
    admin = aioredis.Redis.from_url(redis_server.url)
    await admin.config_set("requirepass", password)
    try:
        url = redis_url_from_env("", {"REDIS_HOST": "127.0.0.1", "REDIS_PORT": str(redis_server.port), "REDIS_PASSWORD": password})
        client = redis_client(url, max_connections=2)
        assert await client.ping() is True
        await client.aclose()
    finally:
        await admin.execute_command("AUTH", password)
        await admin.config_set("requirepass", "")
        await admin.aclose()


# -- the bounded pool (issue 12 item 11) -----------------------------------------------------------


async def pool_connections(admin: aioredis.Redis, name: str) -> int:
    return sum(1 for entry in await admin.client_list() if entry.get("name") == name)


async def test_the_pool_never_opens_more_than_max_connections(redis_server):
    name = "kvwarm-pool-bound"
    client = redis_client(redis_server.url, max_connections=2)
    client.connection_pool.connection_kwargs["client_name"] = name
    admin = aioredis.Redis.from_url(redis_server.url)
    seen = []

    async def sample():
        while True:
            seen.append(await pool_connections(admin, name))
            await asyncio.sleep(0.005)

    sampler = asyncio.ensure_future(sample())
    try:
        # 10 concurrent commands, each holding its connection 20 ms server-side
        results = await asyncio.gather(*(client.blpop([f"kvwarm-test-empty-{i}"], timeout=0.02) for i in range(10)))
    finally:
        sampler.cancel()
        await asyncio.gather(sampler, return_exceptions=True)
    assert results == [None] * 10
    assert max(seen) == 2  # the burst used the whole bound and no more
    assert await pool_connections(admin, name) == 2  # idle after the burst: still 2, not 10
    await client.aclose()
    await asyncio.sleep(0.05)
    assert await pool_connections(admin, name) == 0
    await admin.aclose()


async def test_a_full_pool_fails_fast_into_the_memory_store(redis_server):
    client = redis_client(redis_server.url, max_connections=1, timeout_s=0.25)
    fallbacks = []
    store = FallbackCooldownStore(RedisCooldownStore(client), MemoryCooldownStore(), on_fallback=fallbacks.append)
    held = await client.connection_pool.get_connection()  # the only connection, busy
    started = time.monotonic()
    assert await store.acquire("tenant:session", 300) is True  # answered from memory
    assert time.monotonic() - started < 0.25 + 0.1
    assert fallbacks == ["ConnectionError"]
    await client.connection_pool.release(held)
    await store.aclose()


# -- Services wiring ---------------------------------------------------------------------------------


async def no_warm(body):
    raise AssertionError("no warm expected")


def services(settings: Settings, client: httpx.AsyncClient, *, targets=(), environ=None) -> tuple[Services, CollectorRegistry]:
    registry = CollectorRegistry()
    built = Services(
        settings,
        Metrics.create(registry),
        send_warm=no_warm,
        on_warm_done=lambda *a: None,
        scrape_targets=lambda: list(targets),
        http_client=client,
        environ=environ or {},
    )
    return built, registry


async def test_services_discover_with_the_key_and_count_what_fails():
    async with StubBackend(api_key="sk-right") as stub:
        stub.route("GET", "/v1/models", const(Answer.json(200, MODELS)))
        settings = Settings(request_budget_ms=300)
        svc, registry = services(settings, httpx.AsyncClient())
        label = f"127.0.0.1:{stub.port}/fast-8b"
        keyed = Deployment(stub.base_url + "/v1", "fast-8b", api_key="sk-right")
        assert await svc.windows.get(keyed, svc.request_budget()) == 16384
        assert registry.get_sample_value("kvwarm_discovered_window_tokens", {"deployment": label}) == 16384

        keyless = Deployment(stub.base_url + "/v1", "other")
        assert await svc.windows.get(keyless, svc.request_budget()) is None
        assert registry.get_sample_value("kvwarm_discovery_errors_total", {"deployment": f"127.0.0.1:{stub.port}/other", "error": "unauthorized"}) == 1

        # the exact counter's failures are labelled apart (this stub has no /tokenize: 404, not an error)
        stub.route("POST", "/tokenize", const(Answer(500, b"boom")))
        chat = {"messages": [{"role": "user", "content": "hi"}]}
        assert await svc.exact.count(keyed, chat, svc.request_budget()) is None
        assert await svc.exact.count(keyed, chat, svc.request_budget()) is None  # remembered: skipped
        assert registry.get_sample_value("kvwarm_discovery_errors_total", {"deployment": label, "error": "tokenize_http_500"}) == 1
        assert registry.get_sample_value("kvwarm_budget_exhausted_total", {"lookup": "exact_count"}) == 1
        await svc.aclose()


async def test_services_budget_continues_from_metadata():
    svc, _ = services(Settings(request_budget_ms=300), httpx.AsyncClient())
    assert svc.request_budget().remaining_s == pytest.approx(0.3)
    assert svc.request_budget(0.2).remaining_s == pytest.approx(0.1)
    assert svc.request_budget("forged").remaining_s == pytest.approx(0.3)
    await svc.aclose()


async def test_services_budget_exhaustion_is_counted_per_lookup():
    async with StubBackend() as stub:
        stub.route("GET", "/v1/models", const(Answer(hang=True)))
        svc, registry = services(Settings(request_budget_ms=20), httpx.AsyncClient())
        d = Deployment(stub.base_url + "/v1", "fast-8b")
        assert await svc.windows.get(d, svc.request_budget()) is None
        assert await svc.windows.get(d, svc.request_budget()) is None
        assert registry.get_sample_value("kvwarm_budget_exhausted_total", {"lookup": "window"}) == 2
        await svc.aclose()


async def test_services_cooldown_uses_litellm_redis_settings_and_a_bounded_pool(redis_server):
    environ = {"REDIS_HOST": "127.0.0.1", "REDIS_PORT": str(redis_server.port)}
    svc, _ = services(Settings(redis_max_connections=3), httpx.AsyncClient(), environ=environ)
    store = svc.cooldown
    assert isinstance(store, FallbackCooldownStore)
    assert await store.acquire("t:s", 300) is True and await store.acquire("t:s", 300) is False
    assert store.backend == "redis"
    pool = store._primary._client.connection_pool
    assert pool.max_connections == 3 and pool.timeout == 0.25
    await svc.aclose()


async def test_services_scrape_sends_the_key():
    page = "\n".join(
        [
            "# TYPE vllm:prefix_cache_queries_total counter",
            'vllm:prefix_cache_queries_total{model_name="fast-8b"} 1000.0',
            "# TYPE vllm:prefix_cache_hits_total counter",
            'vllm:prefix_cache_hits_total{model_name="fast-8b"} 250.0',
            "",
        ]
    )
    async with StubBackend() as stub:

        def metrics_page(request):
            ok = request["headers"].get("authorization") == "Bearer sk-right"
            return Answer(200, page.encode()) if ok else Answer(401, b"")

        stub.route("GET", "/metrics", metrics_page)
        keyed = Deployment(stub.base_url + "/v1", "fast-8b", api_key="sk-right")
        keyless = Deployment(stub.base_url + "/v1", "other")
        svc, registry = services(Settings(backend_scrape_interval_s=3600), httpx.AsyncClient(), targets=[keyed, keyless, keyed])
        svc.start_background()
        refused = {"deployment": f"127.0.0.1:{stub.port}/other", "error": "scrape_unauthorized"}
        for _ in range(200):  # one round scrapes both targets, in order
            if registry.get_sample_value("kvwarm_discovery_errors_total", refused):
                break
            await asyncio.sleep(0.01)
        label = f"127.0.0.1:{stub.port}/fast-8b"
        assert registry.get_sample_value("kvwarm_backend_prefix_cache_hit_ratio", {"deployment": label}) == 0.25
        assert registry.get_sample_value("kvwarm_discovery_errors_total", refused) == 1
        assert len(stub.requests) == 2  # the duplicate target was scraped once
        await svc.aclose()

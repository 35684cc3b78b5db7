"""litellm_kvwarm.litellm_model_info against a real ``litellm.Router`` whose refresh (the proxy's own
scheduled job, ``ProxyStartupEvent.refresh_model_info``) reads a real local ``/v1/models`` server.
Runs on whichever LiteLLM the venv holds: CI runs it on 1.108.7 (.venv) and 1.109.3 (.venv-newest)."""

from __future__ import annotations

import http.server
import importlib.metadata
import json
import threading
import warnings

import litellm
import pytest

from litellm_kvwarm.litellm_model_info import deployment_id, discovered_limits, discovered_window

LITELLM_VERSION = importlib.metadata.version("litellm")


class _Models:
    """A tiny OpenAI-compatible ``/v1/models`` server whose cards a test can change."""

    def __init__(self, cards: list[dict]):
        self.cards = cards
        self.hits = 0
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                owner.hits += 1
                body = json.dumps({"object": "list", "data": owner.cards}).encode()
                code = 200 if self.path == "/v1/models" else 404
                self.send_response(code)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def models():
    server = _Models([
        {"id": "small", "object": "model", "max_model_len": 16_384},
        {"id": "big", "object": "model", "max_model_len": 131_072},
        {"id": "adapter", "object": "model", "max_model_len": None, "parent": "big"},
    ])
    yield server
    server.close()


def _router(entries: list[dict]) -> litellm.Router:
    return litellm.Router(model_list=entries)


def _entries(router: litellm.Router, group: str) -> list[dict]:
    registry = getattr(router, "registry", None)
    if callable(registry):  # 1.109.x (get_model_list warns there)
        return list(registry().deployments(group))
    return router.get_model_list(model_name=group) or []


async def _refresh(router: litellm.Router, monkeypatch) -> None:
    """What the proxy's scheduler runs at start-up and every 300 s."""
    from litellm.proxy import proxy_server

    monkeypatch.setattr(proxy_server, "llm_router", router)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # the proxy's own path must not be a shim
        await proxy_server.ProxyStartupEvent.refresh_model_info()


def _deployment(group: str, served: str, base: str, **model_info) -> dict:
    return {
        "model_name": group,
        "litellm_params": {"model": f"hosted_vllm/{served}", "api_base": base, "api_key": "sk-backend"},
        "model_info": model_info,
    }


async def test_discovered_window_after_the_proxy_refresh(models, monkeypatch):
    router = _router([_deployment("fast", "small", models.base), _deployment("slow", "big", models.base)])
    fast, slow = _entries(router, "fast")[0], _entries(router, "slow")[0]
    assert deployment_id(fast) and deployment_id(slow)
    assert discovered_window(fast, router) is None  # nothing before the first refresh
    await _refresh(router, monkeypatch)
    assert models.hits >= 1
    assert discovered_window(fast, router) == 16_384
    assert discovered_window(slow, router) == 131_072
    assert discovered_limits(fast, router) == {"max_tokens": 16_384, "max_input_tokens": 16_384, "max_output_tokens": 16_384}
    # stored beside the entry, never in it, nor in litellm.model_cost under the deployment's id
    assert "max_input_tokens" not in (fast.get("model_info") or {})
    assert deployment_id(fast) not in litellm.model_cost or "max_tokens" not in litellm.model_cost[deployment_id(fast)]


async def test_operator_window_is_told_apart_from_the_discovered_one(models, monkeypatch):
    router = _router([_deployment("fast", "small", models.base, max_input_tokens=4_000)])
    await _refresh(router, monkeypatch)
    entry = _entries(router, "fast")[0]
    assert entry["model_info"]["max_input_tokens"] == 4_000  # the operator's, unchanged
    limits = discovered_limits(entry, router)
    assert "max_input_tokens" not in limits  # LiteLLM hides a discovered key the operator set ...
    assert discovered_window(entry, router) == 16_384  # ... but the card's max_model_len stays readable


async def test_operator_max_tokens_leaves_the_discovered_input_limit(models, monkeypatch):
    router = _router([_deployment("fast", "small", models.base, max_tokens=512)])
    await _refresh(router, monkeypatch)
    entry = _entries(router, "fast")[0]
    assert discovered_limits(entry, router).get("max_tokens") is None
    assert discovered_window(entry, router) == 16_384  # from max_input_tokens


async def test_nothing_discovered_is_none(models, monkeypatch):
    router = _router([
        _deployment("lora", "adapter", models.base),  # LiteLLM matches id only: no parent lookup
        _deployment("gone", "not-served", models.base),
        _deployment("down", "small", "http://127.0.0.1:9/v1"),  # refused
        {"model_name": "claude", "litellm_params": {"model": "anthropic/claude-x", "api_key": "k"}},  # not covered
    ])
    await _refresh(router, monkeypatch)
    for group in ("lora", "gone", "down", "claude"):
        assert discovered_window(_entries(router, group)[0], router) is None, group


async def test_a_swapped_card_is_seen_only_after_litellm_s_300_s_response_cache(models, monkeypatch):
    router = _router([_deployment("fast", "small", models.base)])
    await _refresh(router, monkeypatch)
    models.cards = [{"id": "small", "object": "model", "max_model_len": 8_192}]
    hits = models.hits
    await _refresh(router, monkeypatch)
    assert models.hits == hits  # the /v1/models answer is cached (MODEL_INFO_REFRESH_SECONDS = 300)
    assert discovered_window(_entries(router, "fast")[0], router) == 16_384


class _ShiftedTime:
    """``time`` for litellm's InMemoryCache with its clock moved ``offset`` seconds ahead."""

    def __init__(self, real, offset: float):
        self._real, self.offset = real, offset

    def time(self) -> float:
        return self._real.time() + self.offset

    def __getattr__(self, name):
        return getattr(self._real, name)


async def test_a_model_gone_from_its_slot_keeps_its_window_until_litellm_s_600_s_ttl(models, monkeypatch):
    """Why the plugin keeps its own re-read for swap slots: a refresh that finds no card for the
    model (or fails) leaves LiteLLM's last value in place until the entry's TTL (2 x 300 s)."""
    import time as real_time

    from litellm.caching import in_memory_cache

    router = _router([_deployment("fast", "small", models.base)])
    await _refresh(router, monkeypatch)
    models.cards = [{"id": "other", "object": "model", "max_model_len": 4_096}]  # the slot now serves "other"
    clock = _ShiftedTime(real_time, 301.0)  # past the /v1/models answer's cache: the next refresh re-reads
    monkeypatch.setattr(in_memory_cache, "time", clock)
    hits = models.hits
    await _refresh(router, monkeypatch)
    assert models.hits > hits
    entry = _entries(router, "fast")[0]
    assert discovered_window(entry, router) == 16_384  # stale: "small" is no longer served
    clock.offset = 601.0
    assert discovered_window(entry, router) is None  # gone with the entry's TTL


def test_unknown_shapes_are_none():
    entry = {"model_name": "g", "litellm_params": {"model": "hosted_vllm/x"}, "model_info": {"id": "abc"}}
    assert discovered_window(entry, None) is None
    assert discovered_window(entry, object()) is None
    assert discovered_window({"model_info": {}}, object()) is None
    assert discovered_window("junk", object()) is None

    class Weird:
        def get_discovered_model_info(self, model_id):
            return {"max_tokens": True, "max_input_tokens": -1, 3: 5}

    assert discovered_window(entry, Weird()) is None


def test_runs_on_a_release_of_the_declared_range():
    major, minor, patch = (int(p) for p in LITELLM_VERSION.split(".")[:3])
    assert (1, 108, 7) <= (major, minor, patch) < (1, 110, 0), LITELLM_VERSION

"""The hooks with LiteLLM's own discovered windows and with LiteLLM 1.109's Router shape (fake
routers, no proxy, no network): the order operator → learned → plugin cache → LiteLLM → own fetch,
seen from the hooks; the 1.109 entry points used instead of the deprecated members."""

from __future__ import annotations

import json

import httpx
import pytest
from prometheus_client import CollectorRegistry

from litellm_kvwarm.meta import ESCALATED_KEY, PLAN_KEY, TENANT_KEY
from litellm_kvwarm.windows import Deployment

from test_hook_adapters import CHAIN, OVERFLOW, FakeNewRouter, FakeRouter, Key, attempt, body, decisions, handler

SHAPES = [pytest.param(FakeRouter, id="litellm-1.108"), pytest.param(FakeNewRouter, id="litellm-1.109")]


class Backends:
    """The plugin's own HTTP calls, recorded; ``/v1/models`` answers ``cards`` (served model → window)."""

    def __init__(self, cards: dict[str, int] | None = None, tokenize: int | None = None):
        self.cards, self.tokenize, self.paths = cards or {}, tokenize, []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.paths.append(request.url.path)
        if request.url.path.endswith("/models"):
            data = [{"id": m, "object": "model", "max_model_len": w} for m, w in self.cards.items()]
            return httpx.Response(200, json={"object": "list", "data": data})
        if request.url.path == "/tokenize" and self.tokenize is not None:
            return httpx.Response(200, json={"count": self.tokenize, "max_model_len": 4096, "tokens": []})
        return httpx.Response(404, json={"error": "not found"})

    @property
    def models_reads(self) -> int:
        return sum(p.endswith("/models") for p in self.paths)


def gauge(registry: CollectorRegistry, served: str) -> float | None:
    for metric in registry.collect():
        for s in metric.samples:
            if s.name == "kvwarm_discovered_window_tokens" and served in s.labels.get("deployment", ""):
                return s.value
    return None


@pytest.mark.parametrize("shape", SHAPES)
async def test_hook_litellm_s_windows_route_without_the_plugin_reading_the_cards(monkeypatch, shape):
    router = shape({"fast": None, "slow": None}, chains=CHAIN, discovered={"fast": 4096, "slow": 32768})
    backends = Backends({"fast-model": 4096, "slow-model": 32768})
    h, registry = handler(router, monkeypatch, transport=backends)
    data = await h.async_pre_call_hook(Key(), None, body(24000), "acompletion")
    assert data["model"] == "slow" and data["metadata"][ESCALATED_KEY] == "proactive"
    assert decisions(registry) == {("proactive", "fast", "slow"): 1}
    assert backends.models_reads == 0
    assert gauge(registry, "fast-model") == 4096 and gauge(registry, "slow-model") == 32768  # still shown


@pytest.mark.parametrize("shape", SHAPES)
async def test_hook_a_ttl_under_litellm_s_refresh_interval_reads_the_cards_itself(monkeypatch, shape):
    router = shape({"fast": None, "slow": None}, chains=CHAIN, discovered={"fast": 32768, "slow": 32768})
    backends = Backends({"fast-model": 4096, "slow-model": 32768})
    h, registry = handler(router, monkeypatch, transport=backends, window_ttl_s=3)
    data = await h.async_pre_call_hook(Key(), None, body(24000), "acompletion")
    assert data["model"] == "slow"  # on the cards' 4,096, not LiteLLM's (stale) 32,768
    assert backends.models_reads == 2


@pytest.mark.parametrize("shape", SHAPES)
async def test_nothing_discovered_by_litellm_falls_back_to_the_plugin_s_fetch(monkeypatch, shape):
    router = shape({"fast": None, "slow": None}, chains=CHAIN, discovered={"slow": 32768})  # fast: e.g. a LoRA adapter
    backends = Backends({"fast-model": 4096})
    h, _ = handler(router, monkeypatch, transport=backends)
    data = await h.async_pre_call_hook(Key(), None, body(24000), "acompletion")
    assert data["model"] == "slow"
    assert backends.paths == ["/v1/models"] and backends.models_reads == 1  # fast's only


@pytest.mark.parametrize("shape", SHAPES)
async def test_the_operator_s_window_wins_over_litellm_s(monkeypatch, shape):
    router = shape({"fast": 4096, "slow": None}, chains=CHAIN, discovered={"fast": 32768, "slow": 32768})
    h, _ = handler(router, monkeypatch, transport=Backends())
    assert (await h.async_pre_call_hook(Key(), None, body(24000), "acompletion"))["model"] == "slow"


@pytest.mark.parametrize("shape", SHAPES)
async def test_the_clamp_reads_litellm_s_window_by_the_attempt_s_model_id(monkeypatch, shape):
    router = shape({"fast": None}, discovered={"fast": 4096})
    backends = Backends(tokenize=3500)
    h, registry = handler(router, monkeypatch, transport=backends, exact_count=True)
    h.facts.router_getter = lambda: router  # the hook hands its getter to the facts (pre-call does too)
    kwargs = attempt({}, max_tokens=3000, messages=body(9000)["messages"], model_info={"id": "fast-0"})
    out = await h.async_pre_call_deployment_hook(kwargs, "acompletion")
    assert out["max_tokens"] == 4096 - 3500
    assert backends.paths == ["/tokenize"]  # no /v1/models
    assert registry.get_sample_value("kvwarm_output_clamps_total", {"model_group": "fast", "basis": "exact"}) == 1


@pytest.mark.parametrize("shape", SHAPES)
async def test_hook_a_learned_window_keeps_winning_over_litellm_s(monkeypatch, shape):
    """The server rejected 3,000 + 2,000 on a 4,096 window while LiteLLM's card read says 32,768:
    the retry is clamped on 4,096; the failure callback learns 4,096 for the tenant, and the
    tenant's next request routes on it (another tenant's does not)."""
    router = shape({"fast": None, "slow": None}, chains=CHAIN, discovered={"fast": 32768, "slow": 131072})
    backends = Backends()
    h, registry = handler(router, monkeypatch, transport=backends)
    h.facts.router_getter = lambda: router
    first = await h.async_pre_call_hook(Key(), None, body(3000, max_tokens=2000), "acompletion")
    tenant = first["metadata"][TENANT_KEY]
    plan = {"source": "fast", "chain": ["slow"], "requested": 2000, "own_generic_fallbacks": False}
    # LiteLLM's record of the failed attempt: its deployment's id and error (Router.log_retry)
    record = {"deployment_id": "fast-0", "exception_string": OVERFLOW, "exception_type": "ContextWindowExceededError"}
    kwargs = attempt({PLAN_KEY: plan, TENANT_KEY: tenant, "previous_models": [record]}, fallback_depth=1,
                     max_tokens=2000, model_info={"id": "fast-0"}, messages=body(9000)["messages"])
    out = await h.async_pre_call_deployment_hook(kwargs, "acompletion")
    assert out["max_tokens"] == 4096 - 3000
    assert h.services.learned.get(tenant, Deployment("http://fast.test/v1", "fast-model")).total == 4096
    assert registry.get_sample_value("kvwarm_learned_limit_tokens",
                                     {"deployment": "fast.test/fast-model", "limit": "total"}) == 4096
    data = await h.async_pre_call_hook(Key(), None, body(24000), "acompletion")
    assert data["model"] == "slow" and data["metadata"][ESCALATED_KEY] == "proactive"
    assert decisions(registry)[("proactive", "fast", "slow")] == 1
    other = await h.async_pre_call_hook(Key(team_id="team-other"), None, body(24000), "acompletion")
    assert other["model"] == "fast"  # another tenant still routes on 32,768
    assert backends.models_reads == 0


async def test_litellm_1_109_shape_covers_every_route_outcome(monkeypatch):
    """The outcomes of test_hook_adapters on the 1.109 shape, whose deprecated members raise here."""
    router = FakeNewRouter({"fast": 4096, "slow": 8192}, chains=CHAIN)
    h, registry = handler(router, monkeypatch)
    data = await h.async_pre_call_hook(Key(), None, body(60000), "acompletion")
    assert data["context_window_fallbacks"] == [{"fast": ["slow"]}] and data["fallbacks"] == [{"fast": ["slow"]}]
    router = FakeNewRouter({"fast": 4096, "slow": 32768}, chains=CHAIN, fallbacks=[{"fast": ["other"]}])
    h, registry = handler(router, monkeypatch)
    data = await h.async_pre_call_hook(Key(), None, body(4000, max_tokens=300), "acompletion")
    assert data["model"] == "fast" and data["metadata"][PLAN_KEY]["chain"] == ["slow"] and "fallbacks" not in data
    assert (await h.async_pre_call_hook(Key(), None, body(24000), "acompletion"))["model"] == "slow"
    healthy = [{"model_info": {"id": f"d{i}"}} for i in range(4)]
    pinned = await h.async_filter_deployments("slow", healthy, None, {"metadata": {"kvwarm_affinity": "k1"}})
    assert len(pinned) == 1
    h, registry = handler(FakeNewRouter({"fast": 4096}, chains={"fast": ["gone"]}), monkeypatch)
    await h.async_pre_call_hook(Key(), None, body(24000), "acompletion")
    assert decisions(registry) == {("kept_local_missing", "fast", "gone"): 1}
    assert json.dumps(data)  # the rewritten body stays JSON

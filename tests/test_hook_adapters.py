"""The hooks of KVWarmHandler against a fake Router (no proxy, no network): route outcomes asserted
directly on the returned body, its metadata and the counters."""

from __future__ import annotations

import json
import logging
from types import SimpleNamespace

import httpx
import litellm
import pytest
from fastapi import HTTPException
from prometheus_client import CollectorRegistry

from litellm_kvwarm import litellm_bridge
from litellm_kvwarm.config import Settings
from litellm_kvwarm.hook import KVWarmHandler
from litellm_kvwarm.meta import BUDGET_KEY, ESCALATED_KEY, ESTIMATE_KEY, ORIGIN_KEY, PLAN_KEY, SALT_KEY, TENANT_KEY
from litellm_kvwarm.metrics import Metrics

TEXT = "The quick brown fox jumps over the lazy dog while the river keeps running to the sea. "


class Key:
    """A LiteLLM key object as the proxy hands it over (team, user, token)."""

    def __init__(self, team_id: str | None = "team-a", token: str | None = "hashed-key"):
        self.team_id, self.user_id, self.token = team_id, None, token


class FakeRouter:
    """The parts of LiteLLM 1.108's Router the plugin reads. ``discovered``: the windows LiteLLM's
    own ``/v1/models`` refresh found, by group (its ``get_discovered_model_info``)."""

    def __init__(self, groups: dict[str, int | None], *, chains: dict[str, list] | None = None, fallbacks=None,
                 discovered: dict[str, int] | None = None):
        entries = []
        for name, window in groups.items():
            params = {"model": f"hosted_vllm/{name}-model", "api_base": f"http://{name}.test/v1"}
            info = {"id": f"{name}-0", **({"max_input_tokens": window} if window else {})}
            entries.append({"model_name": name, "litellm_params": params, "model_info": info})
        self._state = {"model_list": entries, "model_names": list(groups), "fallbacks": fallbacks,
                       "context_window_fallbacks": [{g: steps} for g, steps in (chains or {}).items()]}
        self.discovered = {f"{g}-0": w for g, w in (discovered or {}).items()}
        self.model_list_calls = 0

    model_list = property(lambda self: self._state["model_list"])
    model_names = property(lambda self: self._state["model_names"])
    context_window_fallbacks = property(lambda self: self._state["context_window_fallbacks"])
    fallbacks = property(lambda self: self._state["fallbacks"])

    def get_model_list(self, model_name: str):
        self.model_list_calls += 1
        return [e for e in self._state["model_list"] if e["model_name"] == model_name]

    def get_discovered_model_info(self, model_id):
        window = self.discovered.get(model_id)
        return {"max_tokens": window, "max_input_tokens": window, "max_output_tokens": window} if window else {}


class FakeRegistry:
    def __init__(self, router: "FakeNewRouter"):
        self.router = router

    def deployments(self, model_name):
        return FakeRouter.get_model_list(self.router, model_name)

    def all(self):
        return self.router._state["model_list"]

    def names(self, *, kind="groups"):
        assert kind == "group_set"
        return set(self.router._state["model_names"])

    def discovered_model_info(self, id):
        return FakeRouter.get_discovered_model_info(self.router, id)


class FakeNewRouter(FakeRouter):
    """LiteLLM 1.109's shape: ``registry()`` / ``settings()``; every old member raises (it warns there)."""

    def registry(self):
        return FakeRegistry(self)

    def settings(self):
        return SimpleNamespace(context_window_fallbacks=self._state["context_window_fallbacks"], fallbacks=self._state["fallbacks"])

    def _deprecated(self, *args, **kwargs):
        raise AssertionError("a deprecated Router member was read")

    model_list = model_names = context_window_fallbacks = fallbacks = property(_deprecated)
    get_model_list = get_discovered_model_info = _deprecated


def no_network(request: httpx.Request) -> httpx.Response:
    return httpx.Response(404, json={"error": "not found"})


def handler(router: FakeRouter, monkeypatch, *, allowed=None, transport=no_network, **settings) -> tuple[KVWarmHandler, CollectorRegistry]:
    async def may_use(key, group, _router):  # LiteLLM's access check, decided by the test
        return allowed is None or group in allowed

    monkeypatch.setattr(litellm_bridge, "key_may_use", may_use)
    registry = CollectorRegistry()
    options = {"estimator": "ratio", "exact_count": False, "warm_ahead": False, "hash_secret": "s" * 32, **settings}
    h = KVWarmHandler(Settings(**options), router_getter=lambda: router, metrics_=Metrics.create(registry),
                      http_client=httpx.AsyncClient(transport=httpx.MockTransport(transport)))
    return h, registry


def body(chars: int, **extra) -> dict:
    return {"model": "fast", "messages": [{"role": "user", "content": (TEXT * (chars // len(TEXT) + 1))[:chars]}], **extra}


def decisions(registry: CollectorRegistry) -> dict[tuple[str, str, str], float]:
    out = {}
    for metric in registry.collect():
        for s in metric.samples:
            if s.name == "kvwarm_route_decisions_total" and s.value:
                out[(s.labels["kind"], s.labels["source"], s.labels["target"])] = s.value
    return out


CHAIN = {"fast": ["slow"]}


async def test_stay_arms_the_backstop_without_generic_fallbacks(monkeypatch):
    router = FakeRouter({"fast": 4096, "slow": 32768}, chains=CHAIN)
    h, registry = handler(router, monkeypatch)
    data = await h.async_pre_call_hook(Key(), None, body(4000, max_tokens=300), "acompletion")
    assert data["model"] == "fast"
    assert data["context_window_fallbacks"] == [{"fast": [{"model": "fast", "max_tokens": 300}, "slow"]}]
    assert "fallbacks" not in data
    plan = data["metadata"][PLAN_KEY]
    assert plan == {"source": "fast", "chain": ["slow"], "requested": 300, "own_generic_fallbacks": False, "step_output": {},
                    "step_windows": {}, "walks_chain": False, "generic_retry": False}  # KVWARM_KEEP_OUTPUT_BUDGET off: no step window carried
    estimate = data["metadata"][ESTIMATE_KEY]
    assert estimate["group"] == "fast" and 1000 <= estimate["routing"] <= estimate["safe"] <= 1400
    assert decisions(registry) == {("stay", "fast", "slow"): 1}
    assert router.model_list_calls == 2  # once per group: the source and its one step


async def test_proactive_escalation_rewrites_the_group(monkeypatch):
    router = FakeRouter({"fast": 4096, "slow": 32768}, chains=CHAIN)
    h, registry = handler(router, monkeypatch)
    data = await h.async_pre_call_hook(Key(), None, body(24000), "acompletion")
    assert data["model"] == "slow"
    meta = data["metadata"]
    assert meta[ESCALATED_KEY] == "proactive"
    assert meta[ORIGIN_KEY]["source"] == "fast" and meta[ORIGIN_KEY]["window"] == 4096 and meta[ORIGIN_KEY]["tokens"] > 4096
    assert PLAN_KEY not in meta and "context_window_fallbacks" not in data  # "slow" has no steps left
    assert decisions(registry) == {("proactive", "fast", "slow"): 1}


async def test_no_target(monkeypatch):
    router = FakeRouter({"fast": 4096})
    h, registry = handler(router, monkeypatch)
    data = await h.async_pre_call_hook(Key(), None, body(24000), "acompletion")
    assert data["model"] == "fast" and "context_window_fallbacks" not in data and "fallbacks" not in data
    assert PLAN_KEY not in data["metadata"] and data["metadata"][ESTIMATE_KEY]["routing"] > 4096
    assert decisions(registry) == {("no_target", "fast", ""): 1}


async def test_target_too_small_keeps_local_and_arms_generic_fallbacks(monkeypatch):
    router = FakeRouter({"fast": 4096, "slow": 8192}, chains=CHAIN)
    h, registry = handler(router, monkeypatch)
    data = await h.async_pre_call_hook(Key(), None, body(60000), "acompletion")
    assert data["model"] == "fast"
    assert data["context_window_fallbacks"] == [{"fast": ["slow"]}]
    assert data["fallbacks"] == [{"fast": ["slow"]}]  # an overflow is possible and the operator set none
    assert data["metadata"][PLAN_KEY]["own_generic_fallbacks"] is True
    assert decisions(registry) == {("target_too_small", "fast", "slow"): 1}


async def test_the_router_s_own_generic_fallbacks_are_kept_as_litellm_reads_them(monkeypatch):
    """A breaker's proxies: ``default_fallbacks`` (``[{"*": [...]}]``) read as none, the plugin's own per-request
    ``fallbacks`` then replaced the router's, and a 503 from fast, or from slow after an escalation, ended the request
    where LiteLLM alone went on to slow, or to ``backup``."""
    wildcard = FakeRouter({"fast": 4096, "slow": 8192, "backup": 8192}, chains=CHAIN, fallbacks=[{"*": ["backup"]}])
    h, _ = handler(wildcard, monkeypatch)
    near = await h.async_pre_call_hook(Key(), None, body(60000), "acompletion")
    assert "fallbacks" not in near and near["metadata"][PLAN_KEY]["own_generic_fallbacks"] is False  # the operator's "*" stands
    big = FakeRouter({"fast": 4096, "slow": 32768, "backup": 32768}, chains=CHAIN, fallbacks=[{"*": ["backup"]}])
    h, _ = handler(big, monkeypatch)
    escalated = await h.async_pre_call_hook(Key(), None, body(24000), "acompletion")
    assert escalated["model"] == "slow"
    assert escalated["fallbacks"] == [{"slow": ["backup", "fast"]}, {"*": ["backup"]}]  # slow's "*" step, then the source
    others = FakeRouter({"fast": 4096, "slow": 8192}, chains=CHAIN, fallbacks=[{"slow": ["backup"]}, {"backup": ["last"]}])
    h, _ = handler(others, monkeypatch)
    own = await h.async_pre_call_hook(Key(), None, body(60000), "acompletion")
    assert own["fallbacks"] == [{"fast": ["slow"]}, {"slow": ["backup"]}, {"backup": ["last"]}]  # the plugin's for fast, the router's for the rest


async def test_forbidden_target_is_never_routed_to_or_armed(monkeypatch):
    router = FakeRouter({"fast": 4096, "slow": 32768}, chains=CHAIN)
    h, registry = handler(router, monkeypatch, allowed={"fast"})
    data = await h.async_pre_call_hook(Key(), None, body(24000), "acompletion")
    assert data["model"] == "fast" and "context_window_fallbacks" not in data and "fallbacks" not in data
    assert decisions(registry) == {("kept_local_forbidden", "fast", "slow"): 1}


async def test_missing_target(monkeypatch):
    router = FakeRouter({"fast": 4096}, chains={"fast": ["gone"]})
    h, registry = handler(router, monkeypatch)
    data = await h.async_pre_call_hook(Key(), None, body(24000), "acompletion")
    assert data["model"] == "fast" and "context_window_fallbacks" not in data
    assert decisions(registry) == {("kept_local_missing", "fast", "gone"): 1}


async def test_unknown_window_leaves_the_route_and_arms_the_backstop(monkeypatch):
    router = FakeRouter({"fast": None, "slow": 32768}, chains=CHAIN)  # discovery answers 404
    h, registry = handler(router, monkeypatch)
    data = await h.async_pre_call_hook(Key(), None, body(24000), "acompletion")
    assert data["model"] == "fast"
    assert data["context_window_fallbacks"] == [{"fast": ["slow"]}] and "fallbacks" not in data
    assert ESTIMATE_KEY not in data["metadata"]
    assert decisions(registry) == {("unknown_window", "fast", "slow"): 1}


async def test_invalid_client_budget_and_other_call_types_are_untouched(monkeypatch):
    router = FakeRouter({"fast": 4096, "slow": 32768}, chains=CHAIN)
    h, registry = handler(router, monkeypatch)
    data = await h.async_pre_call_hook(Key(), None, body(24000, max_tokens=0), "acompletion")
    assert data["model"] == "fast" and "context_window_fallbacks" not in data
    assert decisions(registry) == {("client_output_error", "fast", ""): 1}
    data = await h.async_pre_call_hook(Key(), None, {"model": "fast", "input": "x" * 24000}, "aembedding")
    assert data == {"model": "fast", "input": "x" * 24000}
    assert decisions(registry) == {("client_output_error", "fast", ""): 1}


async def test_client_plugin_metadata_is_stripped_and_a_tenantless_key_refused_under_isolation(monkeypatch):
    router = FakeRouter({"fast": 4096})
    h, _ = handler(router, monkeypatch, cache_salt_secret="c" * 32)
    data = await h.async_pre_call_hook(Key(), None, body(100, cache_salt="mine", metadata={PLAN_KEY: {"source": "x"}}), "acompletion")
    assert "cache_salt" not in data and PLAN_KEY not in data["metadata"] and len(data["metadata"][SALT_KEY]) > 16
    with pytest.raises(HTTPException) as refused:
        await h.async_pre_call_hook(Key(team_id=None, token=None), None, body(100), "acompletion")
    assert refused.value.status_code == 403


def attempt(meta: dict, **kwargs) -> dict:
    return {"model": "hosted_vllm/fast-model", "api_base": "http://fast.test/v1", "model_info": {"max_input_tokens": 4096},
            "messages": body(2000)["messages"], "metadata": {"model_group": "fast", **meta}} | kwargs


OVERFLOW = ("This model's maximum context length is 4096 tokens. However, you requested 5000 tokens "
            "(3000 in the messages, 2000 in the completion). Please reduce the length of the messages or completion.")


async def test_hop_retries_the_source_clamped_on_the_servers_numbers(monkeypatch):
    h, registry = handler(FakeRouter({"fast": 4096, "slow": 32768}, chains=CHAIN), monkeypatch)
    plan = {"source": "fast", "chain": ["slow"], "requested": 2000, "own_generic_fallbacks": False}
    kwargs = attempt({PLAN_KEY: plan, "previous_models": [{"exception_string": OVERFLOW}]}, fallback_depth=1, max_tokens=2000)
    out = await h.async_pre_call_deployment_hook(kwargs, "acompletion")
    assert out["max_tokens"] == 4096 - 3000
    assert decisions(registry) == {("reactive_retry", "fast", "slow"): 1}
    assert BUDGET_KEY in out["metadata"]


async def test_hop_skips_a_step_too_small_and_aborts_a_non_context_error(monkeypatch):
    h, _ = handler(FakeRouter({"fast": 4096, "mid": 2048, "slow": 32768}, chains={"fast": ["mid", "slow"]}), monkeypatch)
    plan = {"source": "fast", "chain": ["mid", "slow"], "requested": None, "own_generic_fallbacks": True}
    kwargs = attempt({PLAN_KEY: plan, "previous_models": [{"exception_string": OVERFLOW}]}, fallback_depth=2,
                     model_info={"max_input_tokens": 2048})
    kwargs["metadata"]["model_group"] = "mid"
    with pytest.raises(litellm.ContextWindowExceededError, match="litellm-kvwarm: prompt ≥3000tok"):
        await h.async_pre_call_deployment_hook(kwargs, "acompletion")
    kwargs = attempt({PLAN_KEY: plan, "previous_models": [{"exception_string": "rate limited"}], "model_group": "slow"}, fallback_depth=1,
                     model="hosted_vllm/slow-model", api_base="http://slow.test/v1", model_info={"max_input_tokens": 32768})
    # a generic hop after a failure that is not about length ends as a plain 400 no client reads as a
    # context error (the client then gets the original error)
    with pytest.raises(litellm.BadRequestError, match="fallback not used") as declined:
        await h.async_pre_call_deployment_hook(kwargs, "acompletion")
    assert not isinstance(declined.value, litellm.ContextWindowExceededError)
    # LiteLLM's own retry of that hop (a retry_policy retries a 400) is declined again, never sent to slow
    kwargs["metadata"]["attempted_retries"] = 1
    with pytest.raises(litellm.BadRequestError, match="fallback not used"):
        await h.async_pre_call_deployment_hook(kwargs, "acompletion")
    # a hop back to fast itself is LiteLLM's own failover inside the group (order levels, weighted): no slot of the plugin's
    same_group = attempt({PLAN_KEY: plan, "previous_models": [{"exception_string": "rate limited"}]}, fallback_depth=1, max_tokens=77)
    assert (await h.async_pre_call_deployment_hook(same_group, "acompletion"))["max_tokens"] == 77


async def test_a_hop_after_a_passing_failure_is_decided_on_the_request_s_last_length_refusal(monkeypatch):
    """fast → mid → slow, own generic fallbacks armed. A hop decided on fast's length refusal keeps its text in the
    request's metadata; after mid fails with a 503 (LiteLLM's record then holds only mid's last 4 attempts), the hop to
    slow is decided on that refusal: escalated, not refused as a generic hop after a non-context error (before: the
    client got fast's 400 where LiteLLM alone's walk reached slow). LiteLLM's own retry of a hop gets its output
    decision again and is counted once; a hop with no refusal behind it is still refused."""
    from litellm_kvwarm.meta import REFUSAL_KEY

    h, registry = handler(FakeRouter({"fast": 4096, "mid": 8192, "slow": 32768}, chains={"fast": ["mid", "slow"]}), monkeypatch)
    plan = {"source": "fast", "chain": ["mid", "slow"], "requested": 2000, "own_generic_fallbacks": True}
    down = [{"exception_type": "ServiceUnavailableError", "exception_string": "litellm.ServiceUnavailableError: 503"}] * 4
    mid = attempt({PLAN_KEY: plan, "previous_models": [{"exception_string": OVERFLOW}], "model_group": "mid"}, fallback_depth=2,
                  model="hosted_vllm/mid-model", api_base="http://mid.test/v1", model_info={"max_input_tokens": 8192}, max_tokens=2000)
    out = await h.async_pre_call_deployment_hook(mid, "acompletion")
    assert out["metadata"][REFUSAL_KEY] == OVERFLOW and out["max_tokens"] == 2000
    slow = attempt({**out["metadata"], "model_group": "slow", "previous_models": down}, fallback_depth=3, max_tokens=2000,
                   model="hosted_vllm/slow-model", api_base="http://slow.test/v1", model_info={"max_input_tokens": 32768})
    out = await h.async_pre_call_deployment_hook(slow, "acompletion")
    assert out["max_tokens"] == 2000
    assert decisions(registry) == {("reactive_escalation", "fast", "mid"): 1, ("reactive_escalation", "fast", "slow"): 1}
    retry = attempt({**out["metadata"], "previous_models": [*down[:3], {"exception_type": "ServiceUnavailableError"}], "attempted_retries": 1},
                    fallback_depth=3, max_tokens=2000, model="hosted_vllm/slow-model", api_base="http://slow.test/v1",
                    model_info={"max_input_tokens": 32768})
    await h.async_pre_call_deployment_hook(retry, "acompletion")
    assert decisions(registry) == {("reactive_escalation", "fast", "mid"): 1, ("reactive_escalation", "fast", "slow"): 1}
    source = attempt({PLAN_KEY: plan, "previous_models": down, "model_group": "mid"}, fallback_depth=1, model="hosted_vllm/mid-model",
                     api_base="http://mid.test/v1", model_info={"max_input_tokens": 8192})
    with pytest.raises(litellm.BadRequestError, match="fallback not used"):
        await h.async_pre_call_deployment_hook(source, "acompletion")
    data = await h.async_pre_call_hook(Key(), None, body(6000, max_tokens=2000, metadata={REFUSAL_KEY: OVERFLOW}), "acompletion")
    assert REFUSAL_KEY not in data["metadata"]  # a client's own is stripped


async def test_clamp_cuts_only_on_an_exact_count(monkeypatch):
    def tokenize(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/tokenize"
        assert json.loads(request.content)["messages"][0]["role"] == "system"  # LiteLLM's developer → system
        return httpx.Response(200, json={"count": 3500, "max_model_len": 4096, "tokens": []})

    h, registry = handler(FakeRouter({"fast": 4096}), monkeypatch, transport=tokenize, exact_count=True)
    kwargs = attempt({}, max_tokens=3000, max_completion_tokens=2000)
    kwargs["messages"] = [{"role": "developer", "content": "be brief"}, *body(9000)["messages"]]  # safe ≈ 3000
    out = await h.async_pre_call_deployment_hook(kwargs, "acompletion")
    assert out["max_tokens"] == out["max_completion_tokens"] == 4096 - 3500
    clamps = registry.get_sample_value("kvwarm_output_clamps_total", {"model_group": "fast", "basis": "exact"})
    assert clamps == 1
    h, _ = handler(FakeRouter({"fast": 4096}), monkeypatch)  # no exact count: no cut
    out = await h.async_pre_call_deployment_hook(attempt({}, max_tokens=3000, messages=body(9000)["messages"]), "acompletion")
    assert out["max_tokens"] == 3000


async def test_cache_salt_goes_only_to_providers_that_accept_it(monkeypatch):
    h, _ = handler(FakeRouter({"fast": 4096}), monkeypatch)
    out = await h.async_pre_call_deployment_hook(attempt({SALT_KEY: "salt-1"}), "acompletion")
    assert out["extra_body"] == {"cache_salt": "salt-1"}
    out = await h.async_pre_call_deployment_hook(attempt({SALT_KEY: "salt-1"}, model="openai/gpt-4o"), "acompletion")
    assert "extra_body" not in out and "cache_salt" not in out
    out = await h.async_pre_call_deployment_hook(attempt({SALT_KEY: "salt-1"}), "aembedding")
    assert "extra_body" not in out


async def test_a_client_s_malformed_extra_body_stays_the_client_s_error(monkeypatch):
    """Not replaced by the salt: LiteLLM refuses a string or list ``extra_body`` with or without the
    plugin (found by a breaker: the plugin had turned that client error into a success)."""
    h, _ = handler(FakeRouter({"fast": 4096}), monkeypatch)
    for junk in ("junk", ["a", "b"], 7):
        out = await h.async_pre_call_deployment_hook(attempt({SALT_KEY: "salt-1"}, extra_body=junk), "acompletion")
        assert out["extra_body"] == junk
    out = await h.async_pre_call_deployment_hook(attempt({SALT_KEY: "salt-1"}, extra_body=None), "acompletion")
    assert out["extra_body"] == {"cache_salt": "salt-1"}
    out = await h.async_pre_call_deployment_hook(attempt({SALT_KEY: "salt-1"}, extra_body={"top_k": 5, "cache_salt": "x"}),
                                                 "acompletion")
    assert out["extra_body"] == {"top_k": 5, "cache_salt": "salt-1"}


async def test_unreachable_target_answers_the_context_error(monkeypatch):
    h, registry = handler(FakeRouter({"fast": 4096, "slow": 32768}, chains=CHAIN), monkeypatch)
    request = {"model": "slow", "metadata": {ESCALATED_KEY: "proactive", ORIGIN_KEY: {"source": "fast", "window": 4096, "tokens": 6000}}}
    error = litellm.APIConnectionError("All connection attempts failed", "hosted_vllm", "x")
    answer = await h.async_post_call_failure_hook(request, error, Key())
    assert isinstance(answer, HTTPException) and answer.status_code == 400
    assert "maximum context length is 4096 tokens" in answer.detail and "about 6000" in answer.detail
    assert decisions(registry) == {("target_unreachable", "fast", "slow"): 1}
    assert await h.async_post_call_failure_hook({"model": "fast", "metadata": {}}, error, Key()) is None


async def test_filter_pins_a_session_only_on_escalation_targets(monkeypatch):
    h, _ = handler(FakeRouter({"fast": 4096, "slow": 32768}, chains=CHAIN), monkeypatch)
    healthy = [{"model_info": {"id": f"d{i}"}} for i in range(4)]
    kwargs = {"metadata": {"kvwarm_affinity": "k1"}}
    pinned = await h.async_filter_deployments("slow", healthy, None, kwargs)
    assert len(pinned) == 1 and pinned == await h.async_filter_deployments("slow", healthy, None, kwargs)
    assert await h.async_filter_deployments("fast", healthy, None, kwargs) == healthy
    assert await h.async_filter_deployments("slow", healthy, None, {"metadata": {}}) == healthy
    # a retry after the pinned deployment failed (LiteLLM's own record): the session's next choice, never the failed one
    first = pinned[0]["model_info"]["id"]
    retry = {"metadata": {"kvwarm_affinity": "k1", "previous_models": [{"deployment_id": first, "model_group": "slow"}]}}
    second = await h.async_filter_deployments("slow", healthy, None, retry)
    assert len(second) == 1 and second[0]["model_info"]["id"] != first
    assert second == await h.async_filter_deployments("slow", healthy, None, retry)  # deterministic
    both = {"litellm_metadata": {"kvwarm_affinity": "k1", "previous_models": [
        {"deployment_id": f"d{i}"} for i in range(4)]}}
    assert await h.async_filter_deployments("slow", healthy, None, both) == healthy  # every one failed: LiteLLM's choice


def test_the_start_line_names_the_settings_and_hides_secrets(monkeypatch, caplog):
    import logging

    from litellm_kvwarm import startup

    line = startup.settings_line(Settings(hash_secret="h" * 32, redis_url="redis://user:pw-123@cache:6380/0", output_floor_tokens=300), "9.9")
    assert line.startswith("[KV-WARM] litellm-kvwarm 9.9 loaded: proactive_routing=True ")
    assert "output_floor_tokens=300" in line and "hash_secret=***" in line and "cache_salt_secret=(unset)" in line and "escalation_targets=(from context_window_fallbacks)" in line
    assert "redis_url=redis://user:***@cache:6380/0" in line and "pw-123" not in line and "h" * 32 not in line
    logger = logging.getLogger("litellm_kvwarm")
    logger.addHandler(caplog.handler)  # the plugin's logger does not propagate to the root
    try:
        handler(FakeRouter({"fast": 4096}), monkeypatch, cache_salt_secret="c" * 32)
    finally:
        logger.removeHandler(caplog.handler)
    loaded = sorted({r.getMessage() for r in caplog.records if "loaded:" in r.getMessage()})
    assert len(loaded) == 1 and "c" * 32 not in loaded[0] and "cache_salt_secret=***" in loaded[0]


async def test_a_failed_request_drops_its_kept_reply_warm_body(monkeypatch):
    """The pre-call hook keeps a reply-warm body for a request that stays on its group; the proxy's
    failure hook of that request drops it (no reply will come), for that tenant's call only."""
    h, _ = handler(FakeRouter({"fast": 4096, "slow": 32768}, chains=CHAIN), monkeypatch, warm_ahead=True)
    kept = []
    for call_id in ("call-1", "call-2"):
        data = await h.async_pre_call_hook(Key(), None, body(6000, litellm_call_id=call_id), "acompletion")
        assert data["model"] == "fast"
        kept.append(data)
    assert len(h.effects.pending) == 2
    await h.async_post_call_failure_hook(kept[0], RuntimeError("backend 500"), Key())
    assert len(h.effects.pending) == 1
    other_tenant = {**kept[1], "metadata": {**kept[1]["metadata"], TENANT_KEY: "someone-else"}}
    await h.async_post_call_failure_hook(other_tenant, RuntimeError("backend 500"), Key())
    assert len(h.effects.pending) == 1  # another tenant's failure with the same call id drops nothing
    await h.async_post_call_failure_hook(kept[1], RuntimeError("backend 500"), Key())
    assert len(h.effects.pending) == 0


async def test_a_learned_factor_alone_never_escalates_what_an_exact_count_says_fits(monkeypatch):
    """A breaker's case: a tenant's other traffic taught a routing factor of 3; its next prompt, which fits,
    was corrected past 2x the window, where no exact count is asked, and escalated on the factor alone.
    Now the raw estimate asks too (it disagrees with itself: routing fits, safe does not), and the count decides."""
    counted = []

    def tokenize(request: httpx.Request) -> httpx.Response:
        counted.append(request.url.path)
        return httpx.Response(200, json={"count": 3000, "max_model_len": 4096, "tokens": []})

    router = FakeRouter({"fast": 4096, "slow": 32768}, chains=CHAIN)
    h, registry = handler(router, monkeypatch, transport=tokenize, exact_count=True, learn_from_usage=True)
    first = await h.async_pre_call_hook(Key(), None, body(12000, max_tokens=50), "acompletion")  # ratio: routing 3000, safe 4000
    assert first["model"] == "fast" and counted == ["/tokenize"]  # raw safe + floor is over the window: counted
    tenant = first["metadata"][ESTIMATE_KEY]["tenant"]
    for _ in range(8):  # the tenant's other traffic: truth 3x its routing estimate
        h.correction.observe("fast", tenant, routing=1000, safe=1300, prompt_tokens=3000)
    assert h.correction.factors("fast", tenant).routing == 3.0
    data = await h.async_pre_call_hook(Key(), None, body(12000, max_tokens=50), "acompletion")
    estimate = data["metadata"][ESTIMATE_KEY]
    assert estimate["routing"] == 3 * estimate["raw_routing"] > 2 * 4096  # corrected far past the window
    assert estimate["raw_routing"] + 256 <= 4096 < estimate["raw_safe"] + 256  # the raw estimates disagree
    assert counted == ["/tokenize"] * 2  # asked anyway: the raw estimate wants a count
    assert data["model"] == "fast"  # 3,000 counted + 50 fits 4,096: stays, as LiteLLM alone would serve it
    assert decisions(registry) == {("stay", "fast", "slow"): 2}


async def test_a_hop_to_the_warm_target_ends_decode_warms_and_the_reply_warm_of_what_it_holds(monkeypatch):
    """A request kept for a reply-warm of slow is escalated to slow by the backstop: slow computes the reply
    itself, so no decode warm follows (differential 20261207: a 100,000-token stream escalated to slow queued ~390
    decode warms of slow), nor a reply-warm of a text reply; a reply with tool calls (rendered again from the
    client's JSON) is still warmed. A retry on fast leaves the kept body as it was."""
    h, _ = handler(FakeRouter({"fast": 4096, "slow": 32768}, chains=CHAIN), monkeypatch, warm_ahead=True)
    for call_id in ("call-1", "call-2"):
        data = await h.async_pre_call_hook(Key(), None, body(6000, max_tokens=2000, litellm_call_id=call_id), "acompletion")
        assert data["model"] == "fast" and data["metadata"][PLAN_KEY]["chain"] == ["slow"]
        meta = {**data["metadata"], "previous_models": [{"exception_string": OVERFLOW}]}
        retry = attempt(meta, fallback_depth=1, max_tokens=2000, litellm_call_id=call_id)
        assert (await h.async_pre_call_deployment_hook(retry, "acompletion"))["max_tokens"] == 4096 - 3000
        tenant = data["metadata"][TENANT_KEY]
        assert not h.effects.pending.get(tenant, call_id).served_by_target  # the retry on fast: still fast's reply
        escalated = attempt({**meta, "model_group": "slow"}, fallback_depth=2, litellm_call_id=call_id,
                            model="hosted_vllm/slow-model", api_base="http://slow.test/v1", model_info={"max_input_tokens": 32768})
        await h.async_pre_call_deployment_hook(escalated, "acompletion")
        assert h.effects.pending.get(tenant, call_id).served_by_target
        assert h.effects.decode_tap({**data, "stream": True}) is None
    queued = []

    async def consider(candidate, data, *args, **kwargs):
        queued.append(kwargs["trigger"].value)
    monkeypatch.setattr(h.effects.warm_gate, "consider", consider)
    text = {"choices": [{"message": {"role": "assistant", "content": "the answer " * 300}}], "usage": {"completion_tokens": 600}}
    await h.effects.reply_warm({"litellm_call_id": "call-1", "metadata": {TENANT_KEY: tenant}}, text)
    assert queued == [] and h.effects.pending.get(tenant, "call-1") is None
    call = {"id": "c1", "type": "function", "function": {"name": "search", "arguments": "{\"q\": \"x\"}"}}
    tools = {"choices": [{"message": {"role": "assistant", "content": None, "tool_calls": [call]}}], "usage": {"completion_tokens": 600}}
    await h.effects.reply_warm({"litellm_call_id": "call-2", "metadata": {TENANT_KEY: tenant}}, tools)
    assert queued == ["reply"]


async def test_a_reactive_escalation_records_its_session_s_arrival_at_the_target(monkeypatch):
    """The pre-call writes the session hash (as warm metadata names the session) and the request's item count in its
    own API shape beside the armed backstop (``ARRIVAL_KEY``); the hop that escalates to slow records them there, so
    the session's warms of slow holding no more items stop; a retry on fast records nothing, nor does a hop whose
    metadata lacks the plugin's record (a client's own is stripped). A Messages request bridged to chat reaches its
    hop with chat-shaped messages (its system prompt one more): the carried count is the Anthropic one, as its warms
    count theirs (before: a bridged request carried no session, and its warms went on after the escalation)."""
    from litellm_kvwarm import identity
    from litellm_kvwarm.meta import ARRIVAL_KEY

    h, _ = handler(FakeRouter({"fast": 4096, "slow": 32768}, chains=CHAIN), monkeypatch)
    sent = body(6000, max_tokens=2000, metadata={ARRIVAL_KEY: {"hash": "forged", "items": 99}}, litellm_session_id="s-1")
    data = await h.async_pre_call_hook(Key(), None, sent, "acompletion")
    session = identity.hashed_session(identity.session_of(sent, "team:team-a"), h.hash_secret)  # as warm metadata names it
    assert data["metadata"][ARRIVAL_KEY] == {"hash": session, "items": 1} and session != "forged"
    arrivals = h.warm_gate.arrivals
    meta = {**data["metadata"], "previous_models": [{"exception_string": OVERFLOW}]}
    await h.async_pre_call_deployment_hook(attempt(meta, fallback_depth=1, max_tokens=2000), "acompletion")
    assert len(arrivals) == 0  # the retry on fast
    slow = {"model": "hosted_vllm/slow-model", "api_base": "http://slow.test/v1", "model_info": {"max_input_tokens": 32768}}
    without = {k: v for k, v in meta.items() if k != ARRIVAL_KEY}
    await h.async_pre_call_deployment_hook(attempt({**without, "model_group": "slow"}, fallback_depth=2, **slow), "acompletion")
    assert len(arrivals) == 0
    await h.async_pre_call_deployment_hook(attempt({**meta, "model_group": "slow"}, fallback_depth=2, **slow), "acompletion")
    assert arrivals.covers(session, "slow", 1) and not arrivals.covers(session, "slow", 2)  # body() holds one message
    assert not arrivals.covers(session, "fast", 1)

    text = sent["messages"][0]["content"]
    turns = [{"role": "user", "content": [{"type": "text", "text": text[:2000]}]}, {"role": "assistant", "content": "ok"},
             {"role": "user", "content": [{"type": "text", "text": text[2000:]}]}]
    anthropic = {"model": "fast", "max_tokens": 2000, "litellm_session_id": "s-2", "system": "Be brief.", "messages": turns}
    data = await h.async_pre_call_hook(Key(), None, anthropic, "anthropic_messages")
    bridged = identity.hashed_session(identity.session_of(anthropic, "team:team-a"), h.hash_secret)
    assert PLAN_KEY in data["litellm_metadata"] and data["litellm_metadata"][ARRIVAL_KEY] == {"hash": bridged, "items": 3}
    chat = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": text[:2000]}, {"role": "assistant", "content": "ok"},
            {"role": "user", "content": text[2000:]}]  # what LiteLLM's bridge sends: 4 chat messages
    hop = {"model": "hosted_vllm/slow-model", "api_base": "http://slow.test/v1", "model_info": {"max_input_tokens": 32768},
           "messages": chat, "fallback_depth": 2, "max_tokens": 2000, "metadata": {"model_group": "slow"},
           "litellm_metadata": {**data["litellm_metadata"], "model_group": "slow", "previous_models": [{"exception_string": OVERFLOW}]}}
    await h.async_pre_call_deployment_hook(hop, "acompletion")
    assert arrivals.covers(bridged, "slow", 3) and not arrivals.covers(bridged, "slow", 4)


def test_cache_isolation_without_a_master_key_is_named_once_at_the_first_request(caplog):
    """Found by the breaker: with ``KVWARM_CACHE_SALT_SECRET`` set and no master key every request is refused
    (no virtual key names a tenant: closed for security); the log now says why, where LiteLLM's proxy log shows it."""
    from litellm_kvwarm import startup

    logger = logging.getLogger("litellm_kvwarm")
    logger.addHandler(caplog.handler)  # the plugin's logger does not propagate to the root
    try:
        startup.hash_secret(Settings(cache_salt_secret="c" * 32), lambda: None, environ={})
        startup.hash_secret(Settings(cache_salt_secret="c" * 32), lambda: "sk-master", environ={})
        startup.hash_secret(Settings(cache_salt_secret="c" * 32), lambda: None, environ={"LITELLM_MASTER_KEY": "sk-1"})
        startup.hash_secret(Settings(hash_secret="h" * 32), lambda: None, environ={})
    finally:
        logger.removeHandler(caplog.handler)
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and "no master key" in errors[0] and "HTTP 403" in errors[0] and "c" * 32 not in errors[0]


def test_loading_the_handler_imports_what_its_http_client_would_import_on_a_request():
    """A cold proxy's first request paid anyio's import of its asyncio backend (httpcore asks for it on the first
    connection) inside the exact count's wait: 0.4-0.6 s on 2 cores, past the 300 ms request budget, so the first
    overflowing request stayed on fast and was escalated only after its 400. Loading the handler imports it now."""
    import subprocess
    import sys

    code = ("import sys; from litellm_kvwarm.hook import KVWarmHandler; from litellm_kvwarm.config import Settings; "
            "before = 'anyio._backends._asyncio' in sys.modules; KVWarmHandler(Settings(hash_secret='h' * 32)); "
            "print(before, 'anyio._backends._asyncio' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**__import__("os").environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    assert out.stdout.split() == ["False", "True"], out.stderr[-2000:]

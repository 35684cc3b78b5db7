"""Session pinning inside LiteLLM's own choice (litellm_kvwarm.pinning), through a real LiteLLM Router: its
``async_get_available_deployment`` runs the callback filter (the plugin's pin), then its own tag filter, order filter
and strategy, as the proxy does. No network: deployments are only chosen, never called.

A breaker's real proxies (LiteLLM alone against the plugin) found the pin overriding LiteLLM: tag routing answered
401 for 7 of 12 sessions, 34 of 60 sessions went to an ``order: 2`` backup, 9:1 weights served 28:32, and under
usage-based routing a pinned replica ran out of rpm while the other had room."""

from __future__ import annotations

import asyncio

import litellm
import pytest
from litellm.integrations.custom_logger import CustomLogger

from litellm_kvwarm import identity
from litellm_kvwarm.pinning import pin_within_litellm


def _dep(dep_id: str, **params) -> dict:
    info = {"id": dep_id, **params.pop("model_info", {})}
    return {"model_name": "slow", "litellm_params": {"model": "hosted_vllm/big", "api_base": f"http://{dep_id}/v1",
                                                      **params}, "model_info": info}


class _Pin(CustomLogger):
    """The plugin's filter step alone: pin each request by the affinity key it carries."""

    def __init__(self, router_box: list) -> None:
        super().__init__()
        self.router_box = router_box

    async def async_filter_deployments(self, model, healthy_deployments, messages, request_kwargs=None,
                                       parent_otel_span=None):
        key = (request_kwargs or {}).get("metadata", {}).get("affinity")
        return pin_within_litellm(self.router_box[0], model, healthy_deployments, request_kwargs, key)


def _chosen(deployments: list[dict], keys: list[str], tags: list[str] | None = None, **settings) -> list[str]:
    """The deployment id LiteLLM's router picks for each affinity key, the pin registered as a callback."""
    box: list = []
    pin = _Pin(box)
    router = litellm.Router(model_list=deployments, **settings)
    box.append(router)
    saved = list(litellm.callbacks)
    litellm.callbacks = [*saved, pin]

    async def pick(key: str) -> str:
        metadata = {"affinity": key, **({"tags": tags} if tags else {})}
        # Router.select since LiteLLM 1.109 (which deprecates async_get_available_deployment), the old name in 1.108
        pick_one = getattr(router, "select", None) or router.async_get_available_deployment
        chosen = await pick_one(model="slow", messages=[{"role": "user", "content": "hi"}], request_kwargs={"metadata": metadata})
        return chosen["model_info"]["id"]

    try:
        return [asyncio.run(pick(k)) for k in keys]
    finally:
        litellm.callbacks = saved


KEYS = [f"tenant:session-{i}" for i in range(60)]


def test_without_preferences_each_session_keeps_one_replica_and_sessions_spread():
    picks = _chosen([_dep("a"), _dep("b")], KEYS)
    assert picks == _chosen([_dep("a"), _dep("b")], KEYS)  # the same replica every time
    assert 20 <= picks.count("a") <= 40


def test_tag_routing_keeps_every_session_on_a_replica_of_its_tag():
    """Before: the pin took the 'us' replica for some sessions and LiteLLM's tag filter then refused them."""
    deps = [_dep("eu", tags=["eu"]), _dep("us", tags=["us"])]
    assert set(_chosen(deps, KEYS[:12], tags=["eu"], enable_tag_filtering=True)) == {"eu"}


def test_a_backup_of_a_higher_order_is_never_pinned_while_the_primary_is_there():
    """Before: 34 of 60 sessions were pinned to the order-2 backup."""
    deps = [_dep("primary", order=1), _dep("backup", order=2)]
    assert set(_chosen(deps, KEYS)) == {"primary"}


@pytest.mark.parametrize("field", ["weight", "rpm", "tpm"])
def test_sessions_spread_over_replicas_as_their_weights_say(field):
    """Before: 9:1 weights served 28:32 (the pin ignored them). simple-shuffle's weights: weight, else rpm, else tpm."""
    keys = [f"tenant:s{i}" for i in range(1000)]
    picks = _chosen([_dep("big", **{field: 900}), _dep("small", **{field: 100})], keys)
    assert 0.86 <= picks.count("big") / len(keys) <= 0.94


def test_a_group_whose_rate_limits_litellm_enforces_is_not_pinned():
    """usage-based routing enforces rpm: LiteLLM picks the replica with room, not the session's."""
    deps = [_dep("a", rpm=3), _dep("b", rpm=3)]
    router = litellm.Router(model_list=deps, routing_strategy="usage-based-routing-v2")
    healthy = [{**d} for d in deps]
    assert pin_within_litellm(router, "slow", healthy, {}, "tenant:s1") is healthy


def test_weighted_rendezvous_keeps_sessions_when_a_replica_leaves():
    ids, weights = ["a", "b", "c"], {"a": 1.0, "b": 2.0, "c": 1.0}
    before = {k: identity.rendezvous_pick(k, ids, weights) for k in KEYS}
    after = {k: identity.rendezvous_pick(k, ["a", "b"], weights) for k in KEYS}
    assert all(after[k] == before[k] for k in KEYS if before[k] != "c")
    assert identity.rendezvous_pick("k", ["a", "b"], {"a": 0.0, "b": 0.0}) is None


def test_replicas_of_different_windows_under_pre_call_checks_are_not_pinned():
    """``enable_pre_call_checks`` removes, after the pin, a replica whose window cannot hold the prompt. Before: a
    session pinned to the 32,768-token replica got LiteLLM's "Context Window exceeded" 400 (a breaker's proxies: 4 of 6
    sessions) where LiteLLM alone served it from the 131,072-token one. Replicas of one window are still pinned."""
    deps = [_dep("big", model_info={"max_input_tokens": 131_072}), _dep("small", model_info={"max_input_tokens": 32_768})]
    box: list = []
    pin = _Pin(box)
    router = litellm.Router(model_list=deps, enable_pre_call_checks=True)
    box.append(router)
    saved = list(litellm.callbacks)
    litellm.callbacks = [*saved, pin]
    long_prompt = [{"role": "user", "content": "hello " * 40_000}]  # ~40k tokens by LiteLLM's own count

    async def pick(key: str) -> str:
        pick_one = getattr(router, "select", None) or router.async_get_available_deployment
        chosen = await pick_one(model="slow", messages=long_prompt, request_kwargs={"metadata": {"affinity": key}})
        return chosen["model_info"]["id"]

    try:
        assert [asyncio.run(pick(k)) for k in KEYS[:8]] == ["big"] * 8
    finally:
        litellm.callbacks = saved
    alike = [_dep("a", model_info={"max_input_tokens": 131_072}), _dep("b", model_info={"max_input_tokens": 131_072})]
    same = litellm.Router(model_list=alike, enable_pre_call_checks=True)
    assert len(pin_within_litellm(same, "slow", list(alike), {}, "tenant:s1")) == 1  # one window: pinned as before
    assert pin_within_litellm(same, "slow", list(alike), {"allowed_model_region": "eu"}, "tenant:s1") == alike  # a region of its own

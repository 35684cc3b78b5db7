"""RouterView's remembered answer of LiteLLM 1.108's ``get_discovered_model_info`` (which builds a
pydantic ``TypeAdapter`` per call, ~150 µs): on a real ``litellm.Router`` after LiteLLM's own
refresh, the same answer as asking LiteLLM each time; LiteLLM asked again once its entry expired
or a refresh replaced it."""

from __future__ import annotations

import importlib.metadata

import pytest

from litellm_kvwarm.router_view import RouterView

from test_litellm_model_info import _deployment, _entries, _refresh, _router, models  # noqa: F401  (models: a fixture)

pytestmark = pytest.mark.skipif(importlib.metadata.version("litellm") >= "1.109",
                                reason="1.109 reads the registry; the remembered path is 1.108's")


def _id(router, group: str) -> str:
    return _entries(router, group)[0]["model_info"]["id"]


async def test_remembered_answer_equals_litellms_and_follows_each_refresh(models, monkeypatch):
    router = _router([_deployment("fast", "small", models.base), _deployment("slow", "big", models.base)])
    fast = _id(router, "fast")
    assert dict(RouterView(router).discovered_model_info(fast)) == {}  # nothing discovered yet
    await _refresh(router, monkeypatch)
    first = RouterView(router).discovered_model_info(fast)
    assert dict(first) == dict(router.get_discovered_model_info(fast)) and first["max_tokens"] == 16_384
    calls = []
    real = router.get_discovered_model_info
    monkeypatch.setattr(router, "get_discovered_model_info", lambda model_id: calls.append(model_id) or real(model_id))
    assert RouterView(router).discovered_model_info(fast) is first and calls == []  # remembered
    assert dict(RouterView(router).discovered_model_info(_id(router, "slow")))["max_tokens"] == 131_072
    calls.clear()
    router._discovered_model_info_cache.flush_cache()  # what expiry does: LiteLLM has nothing again
    assert dict(RouterView(router).discovered_model_info(fast)) == {} and calls == [fast]
    await _refresh(router, monkeypatch)  # a new entry object: LiteLLM is asked again, then remembered
    again = RouterView(router).discovered_model_info(fast)
    assert again is not first and dict(again) == dict(first) and calls == [fast, fast]
    assert RouterView(router).discovered_model_info(fast) is again and calls == [fast, fast]


def test_a_router_without_litellms_cache_is_asked_every_time():
    class Double:
        def __init__(self):
            self.calls = 0

        def get_discovered_model_info(self, model_id):
            self.calls += 1
            return {"max_tokens": 4_096}

    router = Double()
    for _ in range(3):
        assert RouterView(router).discovered_model_info("x") == {"max_tokens": 4_096}
    assert router.calls == 3

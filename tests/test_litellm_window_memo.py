"""LiteLLMWindowMemo: LiteLLM's discovered window reused for its TTL on the injected clock, asked
again after it, per router and model id, bounded; a router that cannot be weakly referenced is
asked every time."""

from __future__ import annotations

import gc

from litellm_kvwarm.litellm_window_memo import LiteLLMWindowMemo


class Router:
    """A router whose discovered windows a test changes (what LiteLLM's refresh does)."""

    def __init__(self, windows: dict[str, int]):
        self.windows = windows


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _counting():
    calls: list[str | None] = []

    def lookup(model_id, router):
        calls.append(model_id)
        return router.windows.get(model_id) if router is not None else None

    return calls, lookup


def test_an_answer_is_reused_for_its_ttl_then_asked_again():
    calls, lookup = _counting()
    clock, router = Clock(), Router({"fast-0": 16_384})
    memo = LiteLLMWindowMemo(ttl_s=1.0, clock=clock, lookup=lookup)
    assert memo.get("fast-0", router) == 16_384 and calls == ["fast-0"]
    router.windows["fast-0"] = 8_192  # LiteLLM refreshed: the held answer stands until the TTL ends
    clock.now += 0.99
    assert memo.get("fast-0", router) == 16_384 and calls == ["fast-0"]
    clock.now += 0.02
    assert memo.get("fast-0", router) == 8_192 and calls == ["fast-0", "fast-0"]


def test_none_is_remembered_too_and_ids_and_routers_are_apart():
    calls, lookup = _counting()
    clock = Clock()
    memo = LiteLLMWindowMemo(clock=clock, lookup=lookup)
    one, two = Router({"a": 4_096}), Router({"a": 32_768})
    assert memo.get("b", one) is None and memo.get("b", one) is None and calls == ["b"]
    assert memo.get("a", one) == 4_096 and memo.get("a", two) == 32_768 and calls == ["b", "a", "a"]


def test_ttl_zero_and_a_missing_id_ask_every_time():
    calls, lookup = _counting()
    router = Router({"a": 4_096})
    off = LiteLLMWindowMemo(ttl_s=0, clock=Clock(), lookup=lookup)
    assert [off.get("a", router) for _ in range(3)] == [4_096] * 3 and calls == ["a"] * 3
    on = LiteLLMWindowMemo(clock=Clock(), lookup=lookup)
    assert on.get(None, router) is None and on.get(None, router) is None and calls == ["a"] * 3 + [None, None]


def test_bounded_per_router_oldest_dropped():
    calls, lookup = _counting()
    router = Router({f"id-{i}": 1_000 + i for i in range(5)})
    memo = LiteLLMWindowMemo(clock=Clock(), capacity=3, lookup=lookup)
    for i in range(4):
        assert memo.get(f"id-{i}", router) == 1_000 + i
    assert memo.get("id-3", router) == 1_003 and calls.count("id-3") == 1  # kept
    assert memo.get("id-0", router) == 1_000 and calls.count("id-0") == 2  # dropped when id-3 came in


def test_a_router_gone_leaves_nothing_and_an_unreferenceable_one_is_asked_each_time():
    calls, lookup = _counting()
    memo = LiteLLMWindowMemo(clock=Clock(), lookup=lookup)
    router = Router({"a": 4_096})
    assert memo.get("a", router) == 4_096
    del router
    gc.collect()
    assert len(memo._by_router) == 0

    class Slotted:
        __slots__ = ("windows",)

        def __init__(self):
            self.windows = {"a": 2_048}

    plain = Slotted()
    assert memo.get("a", plain) == 2_048 and memo.get("a", plain) == 2_048 and calls == ["a", "a", "a"]


def test_an_id_whose_endpoint_changed_is_asked_again():
    """``/model/update`` keeps a deployment's id and may move its ``api_base``: LiteLLM has nothing discovered for the
    new server yet, and the old server's window must not be answered for it (a breaker: a 21k-token request went to
    slow for up to a second after fast moved from a 16,384-token server to a 32,768 one)."""
    calls, lookup = _counting()
    router = Router({"fast-0": 16_384})
    memo = LiteLLMWindowMemo(clock=Clock(), lookup=lookup)
    assert memo.get("fast-0", router, ("http://a:8001/v1", "fast-8b")) == 16_384
    del router.windows["fast-0"]  # the replaced deployment: LiteLLM's accessor answers nothing for it
    assert memo.get("fast-0", router, ("http://b:8001/v1", "fast-8b")) is None and len(calls) == 2
    assert memo.get("fast-0", router, ("http://b:8001/v1", "fast-8b")) is None and len(calls) == 2  # then held
    assert memo.get("fast-0", router, ["unhashable"]) is None and len(calls) == 3  # asked, never raises

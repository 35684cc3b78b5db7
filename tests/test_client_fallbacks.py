"""The request's own fallback choice narrows the escalation chain as LiteLLM 1.108.7's Router reads it
(``router.py`` ``async_function_with_fallbacks`` / ``..._common_utils``): breaker finding A (2026-12),
``disable_fallbacks`` and a client's ``fallbacks: ["fast"]`` were ignored and a 30k prompt went to slow."""

from __future__ import annotations

import pytest

from litellm_kvwarm.client_fallbacks import ABSENT, FallbackChoice, client_side_format, permitted_steps
from litellm_kvwarm.view import pre_call_view

CWF = [{"fast": ["mid", "slow"]}]
CHAIN = ("mid", "slow")


def steps(body, operator_cwf=CWF, operator_fallbacks=None, chain=CHAIN):
    return permitted_steps(FallbackChoice.of(body), "fast", chain, operator_cwf, operator_fallbacks)


@pytest.mark.parametrize("body, expected", [
    ({}, CHAIN),  # no choice of its own: the operator's chain
    ({"disable_fallbacks": True}, ()),
    ({"disable_fallbacks": "true"}, CHAIN),  # LiteLLM reads `is True` only
    ({"disable_fallbacks": False}, CHAIN),
    ({"fallbacks": ["fast"]}, ()),  # client-side fallbacks replace the context-window ones, for any error
    ({"fallbacks": ["slow"]}, ("slow",)),
    ({"fallbacks": [{"model": "slow"}, {"model": "mid", "messages": [{"role": "user", "content": "hi"}]}]}, ("slow",)),
    ({"fallbacks": [{"fast": ["other"]}]}, CHAIN),  # a standard map: a context error still walks the context-window list
    ({"fallbacks": None}, CHAIN),
    ({"context_window_fallbacks": []}, ()),
    ({"context_window_fallbacks": [{"fast": ["slow", "elsewhere"]}]}, ("slow",)),  # narrows, never widens
    ({"context_window_fallbacks": None, "fallbacks": [{"fast": ["slow"]}]}, ("slow",)),  # no list: the generic map decides
    ({"context_window_fallbacks": None, "fallbacks": [{"*": ["mid"]}]}, ("mid",)),
    ({"context_window_fallbacks": None}, ()),  # nor the router's generic ones name a step
    ({"disable_fallbacks": True, "fallbacks": ["slow"]}, ()),
    ({"max_fallbacks": 0}, ()),  # LiteLLM keeps the body's value: fallback depth 0 >= 0, the original error at once
    ({"max_fallbacks": -1}, ()),
    ({"max_fallbacks": 0.0}, ()),
    ({"max_fallbacks": False}, ()),  # 0 >= False in Python, as LiteLLM compares it
    ({"max_fallbacks": 1}, CHAIN),  # one level: the whole context-window list of the first
    ({"max_fallbacks": None}, CHAIN),
    ({"context_window_fallbacks": [{"fast": "slow"}]}, ()),  # a string: LiteLLM iterates its characters, no group named
])
def test_permitted_steps(body, expected):
    assert steps(body) == expected


def test_a_standard_map_decides_where_no_context_window_list_applies():
    # the chain from KVWARM_ESCALATION_TARGETS, no router context_window_fallbacks: LiteLLM alone reads the generic map
    assert steps({"fallbacks": [{"fast": ["other"]}]}, operator_cwf=None, chain=("slow",)) == ()
    assert steps({"fallbacks": [{"fast": ["slow"]}]}, operator_cwf=None, chain=("slow",)) == ("slow",)
    assert steps({"context_window_fallbacks": None}, operator_fallbacks=[{"fast": ["slow"]}]) == ("slow",)


def test_client_side_format_matches_litellm():
    assert client_side_format(["a", "b"]) and client_side_format([{"model": "a", "messages": []}])
    assert not client_side_format([{"fast": ["slow"]}]) and not client_side_format([]) and not client_side_format(None)
    assert not client_side_format([{"model": ["a"]}])  # a list value: a standard map of a group named "model"


def test_the_view_reads_the_body_as_sent():
    view = pre_call_view({"model": "fast", "messages": [], "disable_fallbacks": True, "fallbacks": ["fast"]}, "acompletion", None)
    assert view.fallback_choice == FallbackChoice(True, ["fast"], ABSENT)
    assert pre_call_view({"model": "fast", "messages": []}, "acompletion", None).fallback_choice.narrows is False


# -- the hook (a fake Router, no network): no escalation, no backstop, no warm toward a step the client ruled out --

from test_hook_adapters import CHAIN, FakeRouter, Key, body, decisions, handler  # noqa: E402

OPT_OUTS = [{"disable_fallbacks": True}, {"fallbacks": ["fast"]}, {"context_window_fallbacks": []}, {"max_fallbacks": 0}]
OPT_OUT_IDS = ["disable_fallbacks", "client-side-fallbacks", "empty-cwf", "max_fallbacks-0"]


@pytest.mark.parametrize("extra", OPT_OUTS, ids=OPT_OUT_IDS)
@pytest.mark.parametrize("call_type, make", [
    ("acompletion", lambda chars, extra: body(chars, max_tokens=16, **extra)),
    ("aresponses", lambda chars, extra: {"model": "fast", "input": "word " * (chars // 5), "max_output_tokens": 16, **extra}),
    ("anthropic_messages", lambda chars, extra: body(chars, max_tokens=16, **extra)),
])
async def test_an_opted_out_request_over_the_window_stays_as_sent(monkeypatch, extra, call_type, make):
    router = FakeRouter({"fast": 4096, "slow": 32768}, chains=CHAIN)
    h, registry = handler(router, monkeypatch)
    data = await h.async_pre_call_hook(Key(), None, make(24000, extra), call_type)
    assert data["model"] == "fast"
    assert "context_window_fallbacks" not in data or data["context_window_fallbacks"] == extra.get("context_window_fallbacks")
    assert data.get("fallbacks") == extra.get("fallbacks")
    assert decisions(registry) == {("kept_local_client", "fast", "slow"): 1}
    plain = await h.async_pre_call_hook(Key(), None, make(24000, {}), call_type)  # the same request without the opt-out
    assert plain["model"] == "slow" or plain.get("context_window_fallbacks") == [{"fast": ["slow"]}]


@pytest.mark.parametrize("extra", OPT_OUTS, ids=OPT_OUT_IDS)
async def test_an_opted_out_request_in_the_warm_zone_queues_no_warm_and_arms_no_backstop(monkeypatch, extra):
    router = FakeRouter({"fast": 4096, "slow": 32768}, chains=CHAIN)
    h, registry = handler(router, monkeypatch, warm_ahead=True)
    considered = []

    async def consider(candidate, data, *args, **kwargs):
        considered.append(candidate.target)
    monkeypatch.setattr(h.effects.warm_gate, "consider", consider)
    data = await h.async_pre_call_hook(Key(), None, body(12000, max_tokens=16, **extra), "acompletion")
    assert data["model"] == "fast" and "kvwarm_backstop" not in data["metadata"] and considered == []
    assert decisions(registry) == {("stay", "fast", "slow"): 1}
    await h.async_pre_call_hook(Key(), None, body(12000, max_tokens=16), "acompletion")
    assert considered == ["slow"]  # without the opt-out: warmed


async def test_a_client_side_list_naming_the_target_still_routes(monkeypatch):
    router = FakeRouter({"fast": 4096, "slow": 32768}, chains=CHAIN)
    h, registry = handler(router, monkeypatch)
    data = await h.async_pre_call_hook(Key(), None, body(24000, max_tokens=16, fallbacks=["slow"]), "acompletion")
    assert data["model"] == "slow" and decisions(registry) == {("proactive", "fast", "slow"): 1}


def test_the_operator_s_lists_are_the_key_s_or_team_s_router_settings_where_set():
    """LiteLLM carries a key's (else its team's) ``router_settings`` as ``router_settings_override`` and applies each list
    that is not None; the router's otherwise (a breaker's proxies: the plugin read only the router's)."""
    from litellm_kvwarm.client_fallbacks import operator_lists

    router = ([{"fast": ["slow"]}], [{"*": ["backup"]}])
    assert operator_lists({}, *router) == router
    assert operator_lists({"router_settings_override": {"context_window_fallbacks": []}}, *router) == ([], router[1])
    assert operator_lists({"router_settings_override": {"fallbacks": [{"fast": ["b"]}], "context_window_fallbacks": None}}, *router) \
        == (router[0], [{"fast": ["b"]}])
    assert operator_lists({"router_settings_override": "junk"}, *router) == router

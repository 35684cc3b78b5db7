"""Issue 12's harms, one test each, with the plugin and without it on the same backends.

Two real proxies (plugin / LiteLLM alone) share the emulated backends:

* ``fast`` (16,384) → ``slow`` (131,072): the usual pair;
* ``c-fast`` (4,096) → ``c-mid`` (8,192) → ``c-large`` (131,072): an operator's three-step chain;
* ``strict``: an OpenAI-compatible backend configured as ``openai/`` that rejects unknown fields;
* ``keyed`` (16,384, behind ``--api-key``, key given as ``os.environ/…``) → ``slow``;
* ``lora``: a LoRA adapter of an 8,192-token base (``max_model_len: null`` in ``/v1/models``) → ``slow``.

Each test names the fault of today's main it pins.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from litellm_kvwarm.lab.processes import BackendSpec, clear_faults, proxy_config, set_faults, start_emulator, start_proxy
from litellm_kvwarm.tokens import calibrated_estimator, estimate_request

from e2e_support import backend_requests, clear_backends, long_text, messages_with_exact_tokens, tokenize_count

pytestmark = pytest.mark.e2e

HERE = Path(__file__).resolve().parent
KEYS = {"sk-team-a": {"team_id": "team-a", "user_id": "alice"}, "sk-team-b": {"team_id": "team-b", "user_id": "bob"}}
BACKEND_KEY = "backend-secret-key"


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    work = tmp_path_factory.mktemp("harms")
    em: dict = {}
    specs = {
        "fast": ("fast-8b", 16_384, {}),
        "slow": ("slow-27b", 131_072, {}),
        "c_fast": ("c-fast-1b", 4_096, {}),
        "c_mid": ("c-mid-8b", 8_192, {}),
        "strict": ("strict-8b", 16_384, {"strict_fields": True}),
        "keyed": ("keyed-8b", 16_384, {"api_key": BACKEND_KEY}),
        "lora": ("base-8b", 8_192, {"lora_modules": ["sql-adapter=/adapters/sql"]}),
        "old": ("old-8b", 16_384, {"vllm_version": "0.30.0"}),  # refuses prompt + max_tokens over the window
        "notok": ("notok-8b", 16_384, {"vllm_version": "0.30.0", "faults": {"tokenize": "status:404"}}),  # the same, no /tokenize
    }
    try:
        with ThreadPoolExecutor(4) as pool:
            futures = {k: pool.submit(start_emulator, name, window, workdir=work, time_scale=0, **flags)
                       for k, (name, window, flags) in specs.items()}
            em = {k: f.result() for k, f in futures.items()}
        strict = BackendSpec.of(em["strict"], "strict-8b")
        groups = {
            "fast": [BackendSpec.of(em["fast"], "fast-8b")],
            "slow": [BackendSpec.of(em["slow"], "slow-27b")],
            "c-fast": [BackendSpec.of(em["c_fast"], "c-fast-1b")],
            "c-mid": [BackendSpec.of(em["c_mid"], "c-mid-8b")],
            "c-large": [BackendSpec.of(em["slow"], "slow-27b")],
            "cap-fast": [BackendSpec.of(em["fast"], "fast-8b")],
            "strict": [strict],
            "keyed": [BackendSpec(served_model_name="keyed-8b", api_base=em["keyed"].base_url + "/v1",
                                 api_key="os.environ/KEYED_BACKEND_KEY")],
            "lora": [BackendSpec.of(em["lora"], "sql-adapter")],
            "old": [BackendSpec.of(em["old"], "old-8b")],
            "notok": [BackendSpec.of(em["notok"], "notok-8b")],
        }
        fallbacks = [{"fast": ["slow"]}, {"c-fast": ["c-mid", "c-large"]}, {"keyed": ["slow"]}, {"lora": ["slow"]}, {"old": ["slow"]}, {"notok": ["slow"]},
                     {"cap-fast": [{"model": "slow", "max_tokens": 512}]}]
        env = {"KVWARM_CACHE_SALT_SECRET": "harms-secret", "KVWARM_REQUEST_BUDGET_MS": 2000, "KVWARM_WARM_AHEAD": 1,
               "KVWARM_REPLY_WARM": 0, "KVWARM_WARM_PRIORITY": 0,
               "KVWARM_WARM_PIECE_TOKENS": 0}  # warm-ahead alone, one request each (reply-warms: test_reply_warm.py)
        child_env = {"KVWARM_TEST_KEYS": json.dumps(KEYS), "KEYED_BACKEND_KEY": BACKEND_KEY}

        def launch(name, callbacks):
            pdir = work / name
            pdir.mkdir()
            shutil.copy(HERE / "auth_fixture.py", pdir / "auth_fixture.py")
            shutil.copy(HERE / "spend_fixture.py", pdir / "spend_fixture.py")
            config = proxy_config(groups, fallbacks=fallbacks, env_vars=env, callbacks=callbacks,
                                  general_settings={"custom_auth": "auth_fixture.user_api_key_auth"},
                                  litellm_settings={"require_auth_for_metrics_endpoint": False})
            for entry in config["model_list"]:
                if entry["model_name"] == "strict":  # a strict OpenAI-compatible API, not vLLM
                    entry["litellm_params"]["model"] = "openai/strict-8b"
            return start_proxy(config, workdir=pdir, env=child_env)

        with ThreadPoolExecutor(2) as pool:
            plugin = pool.submit(launch, "with", ["litellm_kvwarm.proxy_handler_instance", "prometheus", "spend_fixture.proxy_handler"])
            alone = pool.submit(launch, "without", False)
            proxies = {"with": plugin.result(), "without": alone.result()}
    except Exception:
        for proc in em.values():
            proc.stop()
        raise
    yield {**em, **proxies}
    for proc in [*proxies.values(), *em.values()]:
        proc.stop()


@pytest.fixture(autouse=True)
def _clean(stack):
    names = ("fast", "slow", "c_fast", "c_mid", "strict", "keyed", "lora", "old", "notok")
    clear_backends(*(stack[n] for n in names))
    for n in ("fast", "slow"):
        clear_faults(stack[n])


def send(proxy, body, key="sk-team-a", path="/v1/chat/completions", headers=None):
    return httpx.post(proxy.base_url + path, json=body, timeout=60,
                      headers={"Authorization": f"Bearer {key}", **(headers or {})})


def received(emulator, endpoint="/v1/chat/completions", warms=False):
    """What a backend received (warms, ``max_tokens == 1``, left out unless asked for)."""
    return [r for r in backend_requests(emulator, endpoint) if warms or r["max_tokens"] != 1]


def user(chars, tag="x"):
    return [{"role": "user", "content": f"[{tag}] " + long_text(chars)}]


@pytest.mark.parametrize("value", [0, -5])
def test_client_max_tokens_below_one_stays_the_clients_error(stack, value):
    """Fault: vLLM's "max_tokens must be at least 1, got 0" was read as an overflow and escalated to
    slow without max_tokens (an unbounded answer from the most expensive backend)."""
    body = {"model": "fast", "messages": user(400, f"zero{value}"), "max_tokens": value}
    alone = send(stack["without"], body)
    plugin = send(stack["with"], body)
    assert alone.status_code == 400
    assert plugin.status_code == alone.status_code
    assert plugin.json()["error"]["message"] == alone.json()["error"]["message"]
    assert received(stack["slow"]) == []  # never escalated
    assert [r["max_tokens"] for r in received(stack["fast"])] == [value, value]


@pytest.mark.parametrize("min_tokens", [-1, 100])
def test_a_refused_min_tokens_in_the_warm_zone_warms_nothing(stack, min_tokens):
    """Fault (breaker, 2026-12): a request past fast's warm threshold whose ``min_tokens`` vLLM refuses (negative, or
    above ``max_tokens``: the client's own 400, as from LiteLLM alone) still warmed slow: 12.2k tokens prefilled
    there for a request that failed, where LiteLLM alone sends slow nothing."""
    body = {"model": "fast", "messages": user(55_000, f"min-tokens{min_tokens}"), "max_tokens": 50, "min_tokens": min_tokens}
    alone = send(stack["without"], body)
    plugin = send(stack["with"], body)
    assert alone.status_code == 400 and plugin.status_code == alone.status_code
    assert plugin.json()["error"]["message"] == alone.json()["error"]["message"]
    time.sleep(1.5)  # a warm is sent off the request path
    assert received(stack["slow"], warms=True) == []
    fine = send(stack["with"], {**body, "min_tokens": 10, "messages": user(55_000, f"min-ok{min_tokens}")})
    assert fine.status_code == 200
    wait = time.monotonic() + 10
    while not received(stack["slow"], warms=True) and time.monotonic() < wait:
        time.sleep(0.2)
    assert [w["max_tokens"] for w in received(stack["slow"], warms=True)] == [1]  # a valid one still warms


@pytest.mark.parametrize("bad", [{"role": "user", "content": 123}, {"role": "user", "content": ["bare"]}], ids=["int", "bare-part"])
def test_a_malformed_conversation_over_the_window_stays_the_clients_error(stack, bad):
    """Fault (breaker, 2026-12): a malformed message in a conversation too large for fast was escalated: the
    same 500 as LiteLLM alone, after LiteLLM's retries on slow and then on fast (twice the time), naming 'slow'."""
    body = {"model": "fast", "messages": [bad, *user(90_000, "malformed")], "max_tokens": 8}
    alone = send(stack["without"], body)
    plugin = send(stack["with"], body)
    assert alone.status_code >= 400
    assert plugin.status_code == alone.status_code
    assert "slow" not in plugin.json()["error"]["message"]
    assert received(stack["slow"], warms=True) == []  # neither moved nor warmed


@pytest.mark.parametrize("field", [{"tools": {"type": "function"}}, {"tools": ["junk"]}, {"tool_choice": 5},
                                   {"response_format": "json"}], ids=["tools-dict", "tools-str", "tool-choice-int", "response-format-str"])
def test_a_malformed_chat_field_over_the_window_stays_the_clients_error(stack, field):
    """Fault (breaker, 2026-12): a chat request too large for fast whose ``tools``, ``tool_choice`` or ``response_format``
    LiteLLM refuses before any backend attempt was moved to slow: the same status, its message naming 'slow' and
    "Fallback to fast also failed"; with ``response_format: "json"`` (hosted_vllm's 500 after LiteLLM's retries) it
    took twice the time (9.6 s against 4.9 s), LiteLLM's retries on slow and then on fast."""
    body = {"model": "fast", "messages": user(90_000, "badfield"), "max_tokens": 8, **field}
    started = time.monotonic()
    alone = send(stack["without"], body)
    alone_s, started = time.monotonic() - started, time.monotonic()
    plugin = send(stack["with"], body)
    plugin_s = time.monotonic() - started
    assert alone.status_code in (400, 500)
    assert plugin.status_code == alone.status_code
    assert plugin.json()["error"]["message"] == alone.json()["error"]["message"]
    assert plugin_s < alone_s + 1.5, (plugin_s, alone_s)
    assert received(stack["slow"], warms=True) == []


@pytest.mark.parametrize("path, field", [("/v1/messages", {"tools": {"name": "x"}}), ("/v1/messages", {"tool_choice": 5}),
                                         ("/v1/responses", {"tools": {"type": "function"}})],
                         ids=["messages-tools-dict", "messages-tool-choice-int", "responses-tools-dict"])
def test_a_malformed_tool_field_of_an_agent_api_over_the_window_stays_the_clients_error(stack, path, field):
    """Fault (breaker, 2026-12): the same on /v1/messages and /v1/responses: the message gained "Fallback to ... also
    failed", and a Messages ``tool_choice: 5`` (the bridge's 500 after LiteLLM's retries) took 15.6 s against 4.7 s."""
    budget = {"max_output_tokens": 16} if path == "/v1/responses" else {"max_tokens": 8}
    text = {"input": user(90_000, "agentfield")[0]["content"]} if path == "/v1/responses" else {"messages": user(90_000, "agentfield")}
    body = {"model": "fast", **text, **budget, **field}
    started = time.monotonic()
    alone = send(stack["without"], body, path=path)
    alone_s, started = time.monotonic() - started, time.monotonic()
    plugin = send(stack["with"], body, path=path)
    plugin_s = time.monotonic() - started
    assert alone.status_code in (400, 500) and plugin.status_code == alone.status_code
    assert plugin.json()["error"]["message"] == alone.json()["error"]["message"]
    assert plugin_s < alone_s + 1.5, (plugin_s, alone_s)
    assert received(stack["slow"], warms=True) == [] and received(stack["slow"], "/v1/responses", warms=True) == []


@pytest.mark.parametrize("path, field", [
    ("/v1/messages", {"thinking": {"type": "enabled", "budget_tokens": "lots"}}), ("/v1/messages", {"thinking": {"type": "enabled", "budget_tokens": None}}),
    ("/v1/messages", {"thinking": "yes"}), ("/v1/messages", {"tool_choice": {"type": 5}}),
    ("/v1/chat/completions", {"thinking": {"type": "enabled", "budget_tokens": "x"}})],
    ids=["budget-str", "budget-null", "thinking-str", "messages-tool-choice-type-int", "chat-budget-str"])
@pytest.mark.parametrize("chars, max_tokens", [(52_000, 4_000), (90_000, 64)], ids=["near-the-window", "over-the-window"])
def test_a_malformed_messages_thinking_budget_stays_the_clients_error(stack, chars, max_tokens, path, field):
    """Fault (breaker, 2026-12): a /v1/messages request with ``thinking: {"type": "enabled", "budget_tokens": "lots"}``
    (a client's malformed field; LiteLLM's Messages bridge raises "'>=' not supported between instances of 'str' and
    'int'", a 500 after its retries). Near fast's window (prompt ~10.9k, max_tokens 4,000) LiteLLM alone answered the
    500 in 4.2-5.0 s, the plugin the same 500 in 13.2-14.8 s (the retries ran again on the fallbacks it armed); over
    the window LiteLLM alone answered that 500, the plugin a 400 "maximum context length is 16384 ... sent to 'slow'"
    (no backend was called by either). The same with ``budget_tokens: null`` and ``thinking: "yes"`` (LiteLLM: "'str'
    object has no attribute 'get'"): 14.5-15.0 s against 4.6-5.0 s near the window, 400 against 500 over it. A Messages
    ``tool_choice: {"type": 5}``: the same 500 in 13.3 s (near) / 15.2 s (over) against 4.2 / 5.9 s. A chat
    ``thinking.budget_tokens: "x"`` over the window: the same 500 in 8.7 s against 4.9 s, its message "model group
    'slow' failed ... Fallback to fast also failed" against "model group 'fast' failed ... No fallback was attempted."."""
    body = {"model": "fast", "max_tokens": max_tokens, "messages": user(chars, f"thinking-{chars}"), **field}
    started = time.monotonic()
    alone = send(stack["without"], body, path=path)
    alone_s, started = time.monotonic() - started, time.monotonic()
    plugin = send(stack["with"], body, path=path)
    plugin_s = time.monotonic() - started
    assert alone.status_code in (400, 500)  # LiteLLM 1.108.7's bridge raises a 500; 1.109.3 refuses some with a 400
    assert plugin.status_code == alone.status_code, plugin.text[:500]
    assert plugin.json()["error"]["message"] == alone.json()["error"]["message"]
    assert plugin_s < alone_s + 1.5, (plugin_s, alone_s)
    assert received(stack["slow"]) == []


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_a_responses_item_the_backend_refuses_over_the_window_keeps_litellm_alones_message(stack, stream):
    """Fault (breaker, 2026-12): a /v1/responses request over fast's window (~18.9k tokens, max_output_tokens 64) whose
    ``input`` holds an item of an unknown type (``{"type": "hologram"}``): vLLM refuses it, 400 "Unsupported input item
    type: hologram", whatever its length. LiteLLM alone: fast's 400, "model group 'fast' failed with the error above.
    No fallback was attempted." (fast called once). With the plugin: the same status, but the request went to slow
    (a 400 there), then its source fallback fast, and the message reads "model group 'slow' failed with the error
    above. Fallback to fast also failed: ...". Now LiteLLM alone's status and message (fast's error: the failure hook,
    :mod:`litellm_kvwarm.fallback_outcome`); slow's one refusal stays (the plugin cannot know it before slow answers)."""
    body = {"model": "fast", "max_output_tokens": 64, "stream": stream,
            "input": [{"type": "hologram"}, {"role": "user", "content": user(90_000, f"hologram-{stream}")[0]["content"]}]}
    alone = send(stack["without"], body, path="/v1/responses")
    plugin = send(stack["with"], body, path="/v1/responses")
    assert alone.status_code == 400 and "Unsupported input item type" in alone.text
    assert plugin.status_code == alone.status_code, plugin.text[:500]
    assert plugin.json()["error"]["message"] == alone.json()["error"]["message"]
    assert [r["status"] for r in backend_requests(stack["fast"], "/v1/responses")] == [400, 400]  # alone's, the plugin's
    assert [r["status"] for r in backend_requests(stack["slow"], "/v1/responses") if r["max_tokens"] == 64] == [400]


def test_a_chat_field_the_backend_refuses_over_the_window_keeps_litellm_alones_message(stack):
    """Fault (breaker, 2026-12): the same on chat: ``stream_options: 5`` without ``stream`` over fast's window (~18.9k
    tokens, max_tokens 64), which vLLM refuses whatever the length (400 "Stream options can only be defined when
    `stream=True`."). LiteLLM alone: fast's 400, "... No fallback was attempted."; with the plugin: slow's 400, then
    fast's, and "model group 'slow' failed with the error above. Fallback to fast also failed: ...". Now LiteLLM
    alone's status and message; slow's one refusal stays."""
    body = {"model": "fast", "max_tokens": 64, "stream_options": 5, "messages": user(90_000, "stream-options")}
    alone, plugin = send(stack["without"], body), send(stack["with"], body)
    assert alone.status_code == 400 and "Stream options" in alone.text
    assert plugin.status_code == alone.status_code, plugin.text[:500]
    assert plugin.json()["error"]["message"] == alone.json()["error"]["message"]
    assert [r["status"] for r in received(stack["fast"])] == [400, 400]  # alone's, the plugin's
    assert [r["status"] for r in received(stack["slow"]) if r["max_tokens"] == 64] == [400]


def _metric(proxy, name, **labels) -> float:
    text = httpx.get(proxy.base_url + "/metrics", timeout=30, follow_redirects=True,
                     headers={"Authorization": f"Bearer {proxy.master_key}"}).text
    return sum(s.value for f in text_string_to_metric_families(text) for s in f.samples
               if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()))


def test_forged_plugin_metadata_changes_nothing(stack):
    """Fault: a client could send kvwarm_* metadata: relabel itself as a warm in the hit-rate
    metrics, feed its own estimate to the clamp, choose a replica."""
    forged = {
        "kvwarm_warm": True,
        "kvwarm_estimate": {"safe": 16_000, "routing": 1, "group": "fast", "raw_safe": 16_000, "raw_routing": 1},
        "kvwarm_affinity": "f" * 64,
        "kvwarm_backstop": {"source": "fast", "chain": ["slow"], "requested": None, "own_generic_fallbacks": True},
        "kvwarm_escalated": "proactive",
        "kvwarm_cache_salt": "chosen-by-client",
    }
    warm_before = _metric(stack["with"], "kvwarm_prompt_tokens_total", model_group="fast", request_kind="warm")
    body = {"model": "fast", "messages": user(2_000, "forged"), "max_tokens": 1_000, "metadata": forged}
    assert send(stack["with"], body).status_code == 200
    (row,) = received(stack["fast"])
    assert row["max_tokens"] == 1_000  # the forged safe estimate (16,000) would have clamped it to the floor
    assert row["cache_salt"] is not None and received(stack["slow"]) == []
    clear_backends(stack["fast"])
    assert send(stack["with"], {**body, "metadata": {}}).status_code == 200
    assert received(stack["fast"])[0]["cache_salt"] == row["cache_salt"]  # the tenant's salt, not the client's
    assert _metric(stack["with"], "kvwarm_prompt_tokens_total", model_group="fast", request_kind="warm") == warm_before
    assert _metric(stack["with"], "kvwarm_client_metadata_stripped_total") >= 1


def test_fitting_request_without_tokenize_keeps_its_full_budget(stack):
    """Fault: without an exact count the clamp cut max_tokens on the safe estimate (≈1.4× the
    truth), so a request that fits got a shorter answer than LiteLLM alone gives."""
    messages = user(44_000, "fits")
    prompt = tokenize_count(stack["fast"], "fast-8b", messages)
    max_tokens = 16_384 - prompt - 64  # fits, by the server's own count
    assert 5_000 < max_tokens < 8_000
    set_faults(stack["fast"], {"tokenize": "status:404"})
    for name in ("with", "without"):
        response = send(stack[name], {"model": "fast", "messages": messages, "max_tokens": max_tokens})
        assert response.status_code == 200, response.text
    assert [r["max_tokens"] for r in received(stack["fast"])] == [max_tokens, max_tokens]
    assert received(stack["slow"]) == []


@pytest.mark.parametrize("path", ["/v1/completions", "/v1/chat/completions", "/v1/messages"])
def test_an_overflow_without_an_exact_count_is_served_whole_not_cut_on_the_estimate(stack, path):
    """Fault (a breaker's): a prompt of ~12.6k tokens asking 4,000 on vLLM 0.30 (16,384), no exact count (a text
    completion has none; chat and Messages here on a server without ``/tokenize``). The server refuses with "at least
    12,385 input tokens" (its count stops at window − budget + 1); the backstop took its safe estimate (~1.3× the truth)
    as the prompt and retried the same group with ~300 output tokens: a 200 cut short where LiteLLM alone's fallback
    serves all 4,000 from ``slow``. Now: no cut on an estimate; the next step serves the whole budget."""
    text = "[whole] " + long_text(60_000)
    body = ({"prompt": text} if path == "/v1/completions" else {"messages": [{"role": "user", "content": text}]})
    got = {}
    for name in ("without", "with"):
        clear_backends(stack["notok"], stack["slow"])
        response = send(stack[name], {"model": "notok", "max_tokens": 4000, **body}, path=path)
        assert response.status_code == 200, (name, response.text[:300])
        usage = response.json()["usage"]
        got[name] = (usage.get("completion_tokens", usage.get("output_tokens")),
                     [(r["status"], r["max_tokens"]) for r in received(stack["slow"], None)])
    assert got["with"] == got["without"] == (4000, [(200, 4000)]), got
    assert [r["max_tokens"] for r in received(stack["notok"], None)] == [4000]  # no retry with less on the source


def test_strict_openai_compatible_backend_with_the_salt_secret(stack):
    """Fault: with KVWARM_CACHE_SALT_SECRET set, cache_salt went to every provider and call type;
    strict APIs reject unknown fields."""
    body = {"model": "strict", "messages": user(200, "strict"), "max_tokens": 8}
    alone, plugin = send(stack["without"], body), send(stack["with"], body)
    assert alone.status_code == 200 and plugin.status_code == 200, plugin.text
    assert all(r["status"] == 200 for r in received(stack["strict"]))
    # vLLM deployments still get the tenant's salt
    assert send(stack["with"], {"model": "fast", "messages": user(200, "salted"), "max_tokens": 8}).status_code == 200
    assert received(stack["fast"])[0]["cache_salt"] is not None


def test_chain_goes_to_the_first_step_that_fits(stack):
    """Fault: with context_window_fallbacks fast → [mid, large] the plugin replaced the chain with
    its first step: a 10,000-token request answered 400 where LiteLLM alone answered 200."""
    big = {"model": "c-fast", "messages": user(46_000, "chain-big"), "max_tokens": 64}
    assert 9_000 < tokenize_count(stack["slow"], "slow-27b", big["messages"]) < 11_000
    response = send(stack["with"], big)
    assert response.status_code == 200, response.text
    assert received(stack["c_fast"]) == [] and received(stack["c_mid"]) == []  # routed before dispatch
    assert [r["status"] for r in received(stack["slow"])] == [200]
    clear_backends(stack["slow"])
    mid = {"model": "c-fast", "messages": user(27_000, "chain-mid"), "max_tokens": 64}
    assert 5_000 < tokenize_count(stack["c_mid"], "c-mid-8b", mid["messages"]) < 7_000
    assert send(stack["with"], mid).status_code == 200
    assert received(stack["c_fast"]) == [] and received(stack["slow"]) == []
    assert [r["status"] for r in received(stack["c_mid"])] == [200]
    # LiteLLM alone gets there too, after failed attempts
    clear_backends(stack["c_fast"], stack["c_mid"], stack["slow"])
    assert send(stack["without"], big).status_code == 200
    assert [r["status"] for r in received(stack["slow"])] == [200]


def test_backend_behind_an_api_key_is_discovered_and_routed(stack):
    """Fault: discovery and /tokenize sent no Authorization: behind `vllm --api-key` the plugin
    silently did nothing proactive."""
    body = {"model": "keyed", "messages": user(90_000, "keyed"), "max_tokens": 64}
    response = send(stack["with"], body)
    assert response.status_code == 200, response.text
    assert received(stack["keyed"]) == []  # no failed attempt: routed to slow before dispatch
    assert [r["status"] for r in received(stack["slow"])] == [200]
    window = _metric(stack["with"], "kvwarm_discovered_window_tokens")
    assert window > 0


def test_lora_adapter_has_its_parents_window(stack):
    """Fault: a LoRA adapter is listed with max_model_len null; its window is its parent's."""
    body = {"model": "lora", "messages": user(46_000, "lora"), "max_tokens": 64}
    response = send(stack["with"], body)
    assert response.status_code == 200, response.text
    assert received(stack["lora"]) == []  # 10k tokens over the base's 8,192: routed before dispatch
    assert [r["status"] for r in received(stack["slow"])] == [200]


@pytest.mark.parametrize("path, status", [("/v1/chat/completions", 400), ("/v1/chat/completions", 401), ("/v1/chat/completions", 404),
                                          ("/v1/chat/completions", 429), ("/v1/messages", 401), ("/v1/responses", 404)],
                         ids=["chat-400", "chat-401", "chat-404", "chat-429", "messages-401", "responses-404"])
def test_an_error_near_the_window_keeps_litellm_alones_status_and_message(stack, path, status):
    """Fault (breaker, 2026-12): a request whose safe estimate + budget may overflow fast's window (prompt 10.9k,
    max_tokens 4,000) gets the generic fallbacks the plugin arms itself, with the retry slot on fast; every hop is
    declined after an error that is not about length, but LiteLLM appends the hops' outcome to the client's error. A 401
    or 404 (which put fast's only deployment in cooldown) came back as 429: the retry slot met "No deployments
    available", and the proxy answers 429 to any message holding those words; any other error gained "Fallback to
    slow also failed: litellm-kvwarm: fallback not used". LiteLLM alone: the status and "No fallback was attempted."."""
    text = user(52_000, f"near{status}{path[4:]}")
    budget = {"max_output_tokens": 4_000} if path == "/v1/responses" else {"max_tokens": 4_000}
    body = {"model": "fast", **({"input": text[0]["content"]} if path == "/v1/responses" else {"messages": text}), **budget}
    set_faults(stack["fast"], {"completions": {"status": status}})
    try:
        started = time.monotonic()
        alone = send(stack["without"], body, path=path)
        alone_s = time.monotonic() - started
        time.sleep(5.5)  # fast out of the cooldown LiteLLM alone's 401/404/429 put it in, as the plugin's proxy shares it
        started = time.monotonic()
        plugin = send(stack["with"], body, path=path)
        plugin_s = time.monotonic() - started
    finally:
        clear_faults(stack["fast"])
        time.sleep(5.5)  # leave fast out of cooldown for the next test
    assert alone.status_code == status
    assert plugin.status_code == alone.status_code, plugin.text
    assert plugin.json()["error"]["message"] == alone.json()["error"]["message"]
    assert "No fallback was attempted." in plugin.json()["error"]["message"]
    assert plugin_s < alone_s + 1.5, (plugin_s, alone_s)
    assert [r for r in backend_requests(stack["slow"], None) if r["max_tokens"] == 4_000] == []  # not moved (warms are)


def test_proactive_escalation_to_a_dead_target_answers_the_context_error(stack):
    """Fault: with the escalation target unreachable, an overflowing request got an opaque 500
    where LiteLLM alone gives the context-length 400."""
    set_faults(stack["slow"], {"completions": {"status": 503}})
    body = {"model": "fast", "messages": user(90_000, "dead-target"), "max_tokens": 64}
    alone, plugin = send(stack["without"], body), send(stack["with"], body)
    assert alone.status_code == 400
    assert plugin.status_code == 400, plugin.text
    assert "maximum context length is 16384" in plugin.text and "slow" in plugin.text


@pytest.mark.parametrize("max_tokens", [None, 100], ids=["no-budget", "a-budget-that-fits"])
def test_a_prompt_that_fits_only_without_the_floor_is_served_when_the_target_is_down(stack, max_tokens):
    """Fault (a breaker): an exact 16,200-token prompt fits fast's 16,384 (LiteLLM alone answers 200 from fast)
    but not with the 256-token output floor; the plugin escalated it, and with slow down answered a 400 "maximum
    context length" (or slow's 429). A client budget under the floor is all the room it needs (100: it stays);
    without one, the escalated request falls back to fast, as LiteLLM alone sends it."""
    messages = messages_with_exact_tokens(stack["fast"], "fast-8b", 16_200)
    set_faults(stack["slow"], {"completions": {"status": 503}})
    body = {"model": "fast", "messages": messages, **({"max_tokens": max_tokens} if max_tokens else {})}
    alone, plugin = send(stack["without"], body), send(stack["with"], body)
    assert alone.status_code == 200 and plugin.status_code == 200, plugin.text
    assert [r["status"] for r in received(stack["fast"])] == [200, 200]
    # the floor's escalation (with LiteLLM's retries, or none while LiteLLM holds slow in cooldown), then fast
    tried = [r["status"] for r in received(stack["slow"])]
    assert set(tried) <= {503} if max_tokens is None else tried == []


def test_keep_output_budget_serves_the_whole_budget_where_litellm_alone_serves_it(stack, tmp_path):
    """A breaker: 15,000 exact + max_tokens 2,048 over fast's 16,384. LiteLLM alone: vLLM 0.30 refuses it and
    context_window_fallbacks serve all 2,048 from slow; vLLM 0.32 trims it itself on fast. The plugin, by design
    (issues 4 and 14: served on the first attempt), clamps it on fast to 1,384 on its exact count. With
    KVWARM_KEEP_OUTPUT_BUDGET=1 it cuts nothing where a step holds prompt + budget: each server does what it does
    without the plugin, and the backstop escalates with the whole budget."""
    groups = {"old": [BackendSpec.of(stack["old"], "old-8b")], "fast": [BackendSpec.of(stack["fast"], "fast-8b")],
              "slow": [BackendSpec.of(stack["slow"], "slow-27b")]}
    config = proxy_config(groups, fallbacks=[{"old": ["slow"]}, {"fast": ["slow"]}],
                          env_vars={"KVWARM_KEEP_OUTPUT_BUDGET": 1, "KVWARM_REQUEST_BUDGET_MS": 2000, "KVWARM_WARM_AHEAD": 0,
                                    "KVWARM_REPLY_WARM": 0})
    keep = start_proxy(config, workdir=tmp_path / "keep")
    try:
        for group, emulator, served in (("old", "old", "old-8b"), ("fast", "fast", "fast-8b")):
            body = {"model": group, "messages": messages_with_exact_tokens(stack[emulator], served, 15_000), "max_tokens": 2048}
            seen = {}
            for side in ("without", "with", "keep"):
                clear_backends(stack[emulator], stack["slow"])
                if side == "keep":
                    response = httpx.post(keep.base_url + "/v1/chat/completions", json=body, timeout=60,
                                          headers={"Authorization": f"Bearer {keep.master_key}"})
                else:
                    response = send(stack[side], body)
                assert response.status_code == 200, (group, side, response.text)
                seen[side] = ([(r["status"], r["max_tokens"]) for r in received(stack[emulator])],
                              [(r["status"], r["max_tokens"]) for r in received(stack["slow"])])
            assert seen["keep"] == seen["without"], (group, seen)
            if group == "old":  # refused on the source, the whole budget on slow; by default: cut on the source
                assert seen["keep"] == ([(400, 2048)], [(200, 2048)]), seen
                assert seen["with"] == ([(200, 16_384 - 15_000)], []), seen
            else:  # the server trims it itself: the plugin sends the budget as asked, with the setting or not
                assert seen["keep"] == ([(200, 2048)], []), seen
                assert seen["with"][1] == [], seen
    finally:
        keep.stop()


def test_warms_carry_the_callers_key_and_team(stack, tmp_path):
    """Fault: warms carried no key identity (spend unattributed) and the raw client session id."""
    session = "raw-session-id-visible"
    messages = [{"role": "system", "content": "identity"}, *user(50_000, "identity")]
    response = send(stack["with"], {"model": "fast", "messages": messages, "max_tokens": 16},
                    key="sk-team-b", headers={"x-litellm-session-id": session})
    assert response.status_code == 200
    rows = wait_for_warm(stack["slow"])
    assert len(rows) == 1
    logged = spend_rows(stack["with"])
    warm_rows = [r for r in logged if r.get("kvwarm_warm")]
    assert warm_rows, logged
    row = warm_rows[-1]
    assert row["user_api_key_hash"] == hashlib.sha256(b"sk-team-b").hexdigest()
    assert row["user_api_key_team_id"] == "team-b"
    assert session not in json.dumps(row)


def wait_for_warm(emulator, timeout_s=20.0):
    import time

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        rows = [r for r in received(emulator, warms=True) if r["max_tokens"] == 1]
        if rows:
            return rows
        time.sleep(0.2)
    return []


def spend_rows(proxy):
    """What LiteLLM's spend tracking reads for each call: the standard logging payload's metadata,
    written by the test logger (spend_fixture.py) in the proxy's working directory."""
    path = Path(proxy.config_path).parent / "spend-log.jsonl"
    import time

    for _ in range(50):
        if path.exists():
            break
        time.sleep(0.1)
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("client_budget", [4_000, None], ids=["client-4000", "no-client-budget"])
def test_an_operators_per_step_output_cap_holds(stack, client_budget):
    """Fault (adversarial review): a fallback entry {"model": "slow", "max_tokens": 512} was reduced
    to its name, so the plugin's escalation sent slow 4,000 (or no cap at all) where LiteLLM
    alone sends 512."""
    # over twice the window: routed on the estimate alone, whatever /tokenize does (another test faults it)
    body = {"model": "cap-fast", "messages": user(200_000, f"cap{client_budget}")}
    if client_budget:
        body["max_tokens"] = client_budget
    for name in ("without", "with"):
        clear_backends(stack["fast"], stack["slow"])
        response = send(stack[name], body)
        assert response.status_code == 200, response.text
        assert [r["max_tokens"] for r in received(stack["slow"])] == [512], name
    assert received(stack["fast"]) == []  # the plugin routed before dispatch


def test_a_clients_per_step_output_cap_holds(stack):
    """Fault (adversarial review): a client's own {"model": "c-large", "max_tokens": 10} fallback entry
    was reduced to its name: slow answered with the client's 100 instead of 10."""
    body = {"model": "c-fast", "messages": user(27_000, "client-cap"), "max_tokens": 100,
            "context_window_fallbacks": [{"c-fast": [{"model": "c-large", "max_tokens": 10}]}]}
    for name in ("without", "with"):
        clear_backends(stack["c_fast"], stack["c_mid"], stack["slow"])
        response = send(stack[name], body)
        assert response.status_code == 200, response.text
        assert [r["max_tokens"] for r in received(stack["slow"])] == [10], name
        assert received(stack["c_mid"]) == []  # the client narrowed the chain to c-large


def test_text_completion_warm_carries_its_prompt_through_the_proxy(stack):
    """Fault: a warm for a /v1/completions request was built without its prompt and always failed
    (TypeError), using up the session's cooldown."""
    prompt = "[text-warm] " + long_text(56_000)  # ~12k tokens: over 60% of fast's 16,384, under its window
    # precondition on the plugin's own estimator: in the warm zone and still fitting fast (floor 256)
    estimate = estimate_request({"model": "fast", "prompt": prompt, "max_tokens": 8}, call_kind="completion",
                                estimator=calibrated_estimator("fast-8b")).routing
    assert 0.6 * 16_384 <= estimate <= 16_384 - 256, estimate
    response = send(stack["with"], {"model": "fast", "prompt": prompt, "max_tokens": 8}, path="/v1/completions",
                    headers={"x-litellm-session-id": "text-warm-session"})
    assert response.status_code == 200, response.text
    import time

    deadline, warms = time.monotonic() + 20, []
    while time.monotonic() < deadline and not warms:
        warms = [r for r in backend_requests(stack["slow"], "/v1/completions") if r["max_tokens"] == 1]
        time.sleep(0.2)
    assert len(warms) == 1 and warms[0]["status"] == 200
    (served,) = [r for r in backend_requests(stack["fast"], "/v1/completions")]
    assert warms[0]["prompt_tokens"] == served["prompt_tokens"]  # the same prompt, token for token


def _schema(properties: int) -> dict:
    description = " ".join(["the", "value", "of", "this", "field", "as", "written", "on", "the", "form"] * 3)
    return {"type": "object", "properties": {f"field_{i}": {"type": "string", "description": description} for i in range(properties)}}


def test_a_structured_output_schema_is_not_routed_as_prompt(stack):
    """Found by a breaker: a 1,000-property ``response_format`` (Responses: ``text.format``) schema with a
    one-line prompt was routed to slow as a ~46k-token request; vLLM renders none of it (guided decoding:
    54 prompt tokens) and LiteLLM alone serves it on fast. Routing no longer counts the schema (safe does)."""
    schema = _schema(1000)
    chat = {"model": "fast", "messages": [{"role": "user", "content": "Fill the form."}], "max_tokens": 200,
            "response_format": {"type": "json_schema", "json_schema": {"name": "form", "schema": schema}}}
    responses = {"model": "fast", "input": "Fill the form.", "max_output_tokens": 200,
                 "text": {"format": {"type": "json_schema", "name": "form", "schema": schema}}}
    for name in ("with", "without"):
        assert send(stack[name], chat).status_code == 200
        assert send(stack[name], responses, path="/v1/responses").status_code == 200
    assert [r["max_tokens"] for r in received(stack["fast"])] == [200, 200]
    assert [r["max_tokens"] for r in received(stack["fast"], "/v1/responses")] == [200, 200]
    assert received(stack["slow"]) == [] and received(stack["slow"], "/v1/responses") == []


def test_a_tenants_short_requests_never_move_its_long_prompts(stack):
    """Found by a breaker: ten "hi" requests taught a tenant a routing factor of ~3.4 (a short prompt's
    truth is mostly the template's fixed tokens); its next 14k-token CSV prompt, which fits 16,384 and
    which LiteLLM alone serves on fast, was corrected to 47k tokens and routed to slow without an exact
    count. Short prompts teach nothing now, and a corrected estimate never skips the count the raw one asks for."""
    for _ in range(10):
        assert send(stack["with"], {"model": "fast", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 5},
                    key="sk-team-b").status_code == 200

    def csv(rows: int) -> list[dict]:
        lines = "\n".join(",".join(str((i * 7919 + j * 104729) % 1000003) for j in range(8)) for i in range(rows))
        return [{"role": "user", "content": "Sum column 3:\n" + lines}]

    lo, hi = 100, 1000  # the largest CSV that is at most 14,000 tokens by the backend's own count
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if tokenize_count(stack["fast"], "fast-8b", csv(mid)) <= 14_000 else (lo, mid - 1)
    body = {"model": "fast", "messages": csv(lo), "max_tokens": 100}
    clear_backends(stack["fast"])
    for name in ("with", "without"):
        assert send(stack[name], body, key="sk-team-b").status_code == 200
    assert [r["max_tokens"] for r in received(stack["fast"])] == [100, 100]
    assert received(stack["slow"]) == []


OPT_OUT_PATHS = [
    ("/v1/chat/completions", lambda text: {"model": "fast", "max_tokens": 16, "messages": [{"role": "user", "content": text}]}),
    ("/v1/responses", lambda text: {"model": "fast", "max_output_tokens": 16, "input": text}),
    ("/v1/messages", lambda text: {"model": "fast", "max_tokens": 16, "messages": [{"role": "user", "content": text}]}),
]


@pytest.mark.parametrize("opt_out", [{"disable_fallbacks": True}, {"fallbacks": ["fast"]}], ids=["disable_fallbacks", "fallbacks-fast"])
@pytest.mark.parametrize("path, make", OPT_OUT_PATHS, ids=["chat", "responses", "messages"])
def test_a_clients_fallback_opt_out_keeps_fasts_context_error(stack, opt_out, path, make):
    """Fault (breaker B, 2026-12): a ~30k-token request to fast (16,384) with ``disable_fallbacks: true``, or its own
    client-side ``fallbacks: ["fast"]``, got fast's context-length 400 from LiteLLM alone but a 200 from the expensive
    slow group with the plugin (proactive routing); on /v1/messages a 400 with no backend attempt at all."""
    body = {**make(f"[opt-out {path}] " + long_text(135_000)), **opt_out}
    alone = send(stack["without"], body, path=path)
    seen_alone = [r["max_tokens"] for r in backend_requests(stack["fast"], None)]
    clear_backends(stack["fast"])
    plugin = send(stack["with"], body, path=path)
    assert alone.status_code == 400 and "context" in alone.text.lower()
    assert plugin.status_code == alone.status_code, plugin.text[:500]
    assert [r["max_tokens"] for r in backend_requests(stack["fast"], None)] == seen_alone == [16]  # fast answered, as alone
    assert backend_requests(stack["slow"], None) == []  # never moved, never warmed


@pytest.mark.parametrize("opt_out", [{"disable_fallbacks": True}, {"fallbacks": ["fast"]}], ids=["disable_fallbacks", "fallbacks-fast"])
def test_a_clients_fallback_opt_out_gets_no_warm_of_slow(stack, opt_out):
    """The same opt-out in the warm zone (~12k of fast's 16,384): served by fast as by LiteLLM alone, and no warm of
    slow, a group this request may not fall back to (the same request without the opt-out warms slow)."""
    import time

    for i, extra in enumerate((opt_out, {})):
        body = {"model": "fast", "max_tokens": 16, "messages": user(52_000, f"opt-out-warm-{i}-{sorted(opt_out)}"), **extra}
        assert send(stack["with"], body).status_code == 200
        deadline = time.monotonic() + (3 if extra else 15)
        while time.monotonic() < deadline and not received(stack["slow"], warms=True):
            time.sleep(0.2)
        warms = received(stack["slow"], warms=True)
        assert (warms == []) if extra else ([r["max_tokens"] for r in warms] == [1]), warms
        clear_backends(stack["slow"])

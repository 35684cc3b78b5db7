"""LiteLLM Router features the plugin must leave as LiteLLM alone leaves them (a breaker's findings, 2026-12-07), each
request sent to a proxy with the plugin and to one without it, over the same emulators:

* ``order`` levels in a group: a 503 from the order-1 deployment goes to the order-2 one (before: the plugin refused that
  hop as a fallback of its own after a non-context error: 400 where LiteLLM alone answered 200);
* ``enable_weighted_failover``: a 503 re-picks another deployment of the group (before: 3 of 6 requests 503);
* ``retry_policy`` retrying a 400: the plugin's declined hop is declined again on LiteLLM's retry (before: a client's own
  400, or a 503, became a 200 from slow);
* ``default_fallbacks`` (the router's ``"*"``): read as the operator's generic fallbacks, and kept for the walk's other
  groups (before: a 503 from fast, or from slow after an escalation, ended the request where LiteLLM alone went on);
* a client's ``max_fallbacks: 0``: no fallback at all, so no escalation either (before: 200 from slow where LiteLLM alone
  answered fast's 400);
* ``enable_pre_call_checks`` with replicas of different windows: no session pin LiteLLM's check then removes (before:
  sessions pinned to the 32,768-token replica got a 400);
* a deployment's ``model_info.cooldown_time``: a failed warm does not take it out of rotation (before: 429 for 60 s);
* a key over its ``max_budget``, on a free fast group: no escalation to a paid group, which LiteLLM alone's fallback budget
  check skips (before: served and billed on slow where LiteLLM alone answered fast's 400);
* a key's ``router_settings`` (``context_window_fallbacks``, ``fallbacks``): read as the operator's lists for its
  requests (before: a key with no escalation was escalated, one naming ``backup`` went to ``slow``, and a key's own
  generic step was lost after a 503);
* an operator's ``model_info`` splitting a window into ``max_input_tokens`` and ``max_output_tokens``: the first is the
  prompt's limit (before: taken as the whole window, a 4,000-token answer that fit was cut to 2,401);
* a chain that goes on through another group's entry (``[{"fast": ["mid"]}, {"mid": ["slow"]}]``): kept in the list the
  plugin writes (before: 400 where LiteLLM alone answered from slow).

Real processes: emulators, two ``litellm --config`` proxies per stack; nothing mocked."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest

from e2e_support import CUSTOM_AUTH, backend_requests, clear_backends, long_text, post_read, start_proxy_with_keys, stopped_at_exit
from litellm_kvwarm.lab.processes import BackendSpec, ManagedProcess, proxy_config, start_emulator, start_proxy
from litellm_kvwarm.lab.processes.emulators import clear_faults, set_faults

pytestmark = pytest.mark.e2e

NEAR, FAR = 56_000, 200_000  # ~11.8k tokens (the plugin arms generic fallbacks of its own), ~42k (escalated before dispatch)


def _spec(emulator: ManagedProcess, served: str, **kwargs: Any) -> BackendSpec:
    return BackendSpec(served_model_name=served, api_base=emulator.base_url + "/v1", **kwargs)


def _stack(tmp_path_factory: Any, name: str, emulators: dict[str, dict[str, Any]], groups: Any, processes: dict[str, ManagedProcess],
           router_settings: dict[str, Any] | None = None, env: dict[str, Any] | None = None) -> None:
    """Into ``processes``: ``emulators`` (name → start_emulator kwargs, time scale 0, 16-token blocks), then ``"with"`` and
    ``"without"`` proxies over ``groups(processes)`` (group → specs), fallbacks fast → slow, warm-ahead off unless ``env``."""
    work = tmp_path_factory.mktemp(name)
    for emu, kwargs in emulators.items():
        processes[emu] = start_emulator(workdir=work, time_scale=0, block_size=16, **{"vllm_version": "0.31.0", **kwargs})
    for proxy, callbacks in (("with", ["litellm_kvwarm.proxy_handler_instance"]), ("without", False)):
        config = proxy_config(groups(processes), fallbacks=[{"fast": ["slow"]}], callbacks=callbacks, router_settings=router_settings,
                              env_vars={"KVWARM_WARM_AHEAD": "false", "KVWARM_REQUEST_BUDGET_MS": 3000, **(env or {})})
        processes[proxy] = start_proxy(config, workdir=tmp_path_factory.mktemp(f"{name}-{proxy}"))


def _post(proxy: ManagedProcess, path: str, body: dict[str, Any], session: str) -> tuple[int, str]:
    """``body`` to ``path`` with the master key, in LiteLLM's session ``x-litellm-session-id``: (status, text)."""
    headers = {"Authorization": f"Bearer {proxy.master_key}", "x-litellm-session-id": session}
    response = httpx.post(proxy.base_url + path, json=body, headers=headers, timeout=90)
    return response.status_code, response.text


def _chat(chars: int, **extra: Any) -> dict[str, Any]:
    return {"model": "fast", "max_tokens": 64, "messages": [{"role": "user", "content": long_text(chars)}], **extra}


@contextmanager
def _faulted(processes: dict[str, ManagedProcess], emulators: tuple[str, ...], faults: dict[str, Any] | None) -> Iterator[None]:
    """``emulators``' request logs cleared and ``faults`` (emulator → fault) set for the block, cleared after it."""
    clear_backends(*(processes[e] for e in emulators))
    for emu, fault in (faults or {}).items():
        set_faults(processes[emu], fault)
    try:
        yield
    finally:
        for emu in faults or {}:
            clear_faults(processes[emu])


def _both(processes: dict[str, ManagedProcess], body: dict[str, Any], emulators: tuple[str, ...], faults: dict[str, Any] | None = None,
          path: str = "/v1/chat/completions") -> dict[str, tuple[int, dict[str, list[int]]]]:
    """``body`` through each proxy: (status, emulator → statuses of the completions it answered)."""
    out = {}
    for proxy in ("without", "with"):
        with _faulted(processes, emulators, faults):
            status, _ = post_read(processes[proxy], path, body, timeout=90)
        out[proxy] = (status, {e: [r["status"] for r in backend_requests(processes[e])] for e in emulators})
    return out


SERVICE_DOWN = {"completions": {"status": 503}}


def test_order_levels_and_weighted_failover_inside_a_group_are_litellm_s(tmp_path_factory):
    order = {}
    with stopped_at_exit(order):
        _stack(tmp_path_factory, "order", {"f1": {"served_model_name": "fast-8b", "max_model_len": 16384},
                                           "f2": {"served_model_name": "fast-8b", "max_model_len": 16384},
                                           "slow": {"served_model_name": "slow-27b", "max_model_len": 131072}},
               lambda p: {"fast": [_spec(p["f1"], "fast-8b", extra_params={"order": 1}), _spec(p["f2"], "fast-8b", extra_params={"order": 2})],
                          "slow": [_spec(p["slow"], "slow-27b")]}, order, router_settings={"num_retries": 0})
        for body in (_chat(8_000), _chat(NEAR), _chat(NEAR, max_tokens=4000)):  # the last: over the window with its budget (a retry slot of the plugin's)
            got = _both(order, body, ("f1", "f2", "slow"), faults={"f1": SERVICE_DOWN})
            assert got["without"] == got["with"] == (200, {"f1": [503], "f2": [200], "slow": []}), (len(str(body)), got)
        down = _both(order, _chat(NEAR), ("f1", "f2", "slow"), faults={"f1": SERVICE_DOWN, "f2": SERVICE_DOWN})
        assert down["without"] == down["with"] == (503, {"f1": [503], "f2": [503], "slow": []})  # before: the plugin's decline, a 400
    weighted = {}
    with stopped_at_exit(weighted):
        _stack(tmp_path_factory, "weighted", {"fa": {"served_model_name": "fast-8b", "max_model_len": 16384, "faults": SERVICE_DOWN},
                                              "fb": {"served_model_name": "fast-8b", "max_model_len": 16384},
                                              "slow": {"served_model_name": "slow-27b", "max_model_len": 131072}},
               lambda p: {"fast": [_spec(p["fa"], "fast-8b"), _spec(p["fb"], "fast-8b")], "slow": [_spec(p["slow"], "slow-27b")]}, weighted,
               router_settings={"num_retries": 0, "enable_weighted_failover": True, "disable_cooldowns": True})
        statuses = {"without": [], "with": []}
        for i in range(6):  # simple-shuffle: some land on fa first
            for proxy, (status, served) in _both(weighted, _chat(NEAR), ("fa", "fb", "slow")).items():
                statuses[proxy].append((status, served["fb"], served["slow"]))
        assert statuses["without"] == statuses["with"] == [(200, [200], [])] * 6


def test_a_retry_policy_never_retries_a_declined_hop_through(tmp_path_factory):
    processes = {}
    with stopped_at_exit(processes):
        _stack(tmp_path_factory, "policy", {"fast": {"served_model_name": "fast-8b", "max_model_len": 16384, "strict_fields": True},
                                            "slow": {"served_model_name": "slow-27b", "max_model_len": 131072}},
               lambda p: {"fast": [_spec(p["fast"], "fast-8b")], "slow": [_spec(p["slow"], "slow-27b")]}, processes,
               router_settings={"num_retries": 0, "disable_cooldowns": True, "retry_policy": {"BadRequestErrorRetries": 1}})
        client_error = _both(processes, _chat(NEAR, extra_body={"bogus_field": 1}), ("fast", "slow"))
        assert client_error["with"] == client_error["without"] == (400, {"fast": [400, 400], "slow": []})  # the client's own 400
        down = _both(processes, _chat(NEAR), ("fast", "slow"), faults={"fast": SERVICE_DOWN})
        assert down["with"] == down["without"] == (503, {"fast": [503], "slow": []})


def test_the_router_s_wildcard_fallbacks_and_a_client_s_max_fallbacks_are_honoured(tmp_path_factory):
    processes = {}
    with stopped_at_exit(processes):
        _stack(tmp_path_factory, "wildcard", {"fast": {"served_model_name": "fast-8b", "max_model_len": 16384},
                                              "slow": {"served_model_name": "slow-27b", "max_model_len": 131072},
                                              "backup": {"served_model_name": "backup-27b", "max_model_len": 131072}},
               lambda p: {"fast": [_spec(p["fast"], "fast-8b")], "slow": [_spec(p["slow"], "slow-27b")],
                          "backup": [_spec(p["backup"], "backup-27b")]}, processes,
               router_settings={"num_retries": 0, "disable_cooldowns": True, "default_fallbacks": ["backup"]})
        names = ("fast", "slow", "backup")
        near = _both(processes, _chat(NEAR), names, faults={"fast": SERVICE_DOWN})
        assert near["with"] == near["without"] == (200, {"fast": [503], "slow": [], "backup": [200]})
        far = _both(processes, _chat(FAR), names, faults={"slow": SERVICE_DOWN})
        assert far["without"] == (200, {"fast": [400], "slow": [503], "backup": [200]})
        assert far["with"] == (200, {"fast": [], "slow": [503], "backup": [200]})  # escalated before dispatch, then as LiteLLM alone
        for chars in (80_000, FAR):  # over fast's window: LiteLLM alone answers fast's 400, no fallback tried
            capped = _both(processes, _chat(chars, max_fallbacks=0), names)
            assert capped["without"] == capped["with"] == (400, {"fast": [400], "slow": [], "backup": []}), (chars, capped)


def test_pins_stay_within_pre_call_checks_and_failed_warms_never_cool_a_deployment_down(tmp_path_factory):
    processes = {}
    with stopped_at_exit(processes):
        _stack(tmp_path_factory, "pin", {"fast": {"served_model_name": "fast-8b", "max_model_len": 16384},
                                         "slow_a": {"served_model_name": "slow-27b", "max_model_len": 131072},
                                         "slow_b": {"served_model_name": "slow-27b", "max_model_len": 32768}},
               lambda p: {"fast": [_spec(p["fast"], "fast-8b")],
                          "slow": [_spec(p["slow_a"], "slow-27b", model_info={"id": "slow-a"}), _spec(p["slow_b"], "slow-27b", model_info={"id": "slow-b"})]},
               processes, router_settings={"enable_pre_call_checks": True})
        body = _chat(180_000)  # ~37.7k tokens: only slow-a holds it
        statuses = {"without": [], "with": []}
        for i in range(6):
            for proxy in statuses:
                status, _ = _post(processes[proxy], "/v1/chat/completions", body, f"pin-{i}")
                statuses[proxy].append(status)
        assert statuses["without"] == statuses["with"] == [200] * 6
    cooled = {}
    with stopped_at_exit(cooled):
        _stack(tmp_path_factory, "cooldown", {"fast": {"served_model_name": "fast-8b", "max_model_len": 16384},
                                              "slow": {"served_model_name": "slow-27b", "max_model_len": 131072, "vllm_version": "0.32.0"}},
               lambda p: {"fast": [_spec(p["fast"], "fast-8b")], "slow": [_spec(p["slow"], "slow-27b", model_info={"cooldown_time": 60})]},
               cooled, env={"KVWARM_WARM_AHEAD": "true"})
        set_faults(cooled["slow"], {"responses": "status:404"})  # a server without the Responses API refuses the warm
        for proxy in ("without", "with"):
            session = {"model": "fast", "max_output_tokens": 64, "input": long_text(48_000)}
            assert _post(cooled[proxy], "/v1/responses", session, f"cool-{proxy}")[0] == 200
        deadline = time.monotonic() + 20
        while not backend_requests(cooled["slow"], "/v1/responses") and time.monotonic() < deadline:
            time.sleep(0.2)
        assert [r["status"] for r in backend_requests(cooled["slow"], "/v1/responses")][:1] == [404]  # the warm failed
        time.sleep(1)
        for proxy in ("without", "with"):
            status, text = post_read(cooled[proxy], "/v1/chat/completions", _chat(80_000), timeout=90)
            assert status == 200, (proxy, json.loads(text).get("error", text) if text.startswith("{") else text[:300])


def test_an_operator_s_split_of_the_window_into_input_and_output_limits_is_read_as_litellm_reads_it(tmp_path_factory):
    """``model_info: {max_input_tokens: 12288, max_output_tokens: 4096}`` on a 16,384-token server (a breaker's config):
    LiteLLM reads the first as the prompt's limit alone. Before: the plugin took 12,288 as the whole window, cut a
    ~9.9k-token prompt's 4,000-token answer to 2,401 and sent a 12.2k-token prompt (under the limit) to slow. The same
    two fields as LiteLLM's own model map writes them (``capped``: 16,384 / 4,096, the whole window and the output cap)
    are not a 20,480-token window either (a second breaker: a budget "clamped" to 18,336, still over the window): with
    both set the window is the server's, discovered, and the clamp cuts to the real room on its first attempt."""
    processes = {}
    with stopped_at_exit(processes):
        _stack(tmp_path_factory, "split", {"fast": {"served_model_name": "fast-8b", "max_model_len": 16384},
                                           "slow": {"served_model_name": "slow-27b", "max_model_len": 131072}},
               lambda p: {"fast": [_spec(p["fast"], "fast-8b", model_info={"max_input_tokens": 12288, "max_output_tokens": 4096})],
                          "capped": [_spec(p["fast"], "fast-8b", model_info={"max_input_tokens": 16384, "max_output_tokens": 4096})],
                          "slow": [_spec(p["slow"], "slow-27b")]}, processes, router_settings={"num_retries": 0})
        for chars in (47_000, 58_000):  # ~9.9k and ~12.2k tokens, each with 4,000 output tokens: both fit the server
            got = {}
            for proxy in ("without", "with"):
                clear_backends(processes["fast"], processes["slow"])
                status, text = post_read(processes[proxy], "/v1/chat/completions", _chat(chars, max_tokens=4000), timeout=90)
                got[proxy] = (status, json.loads(text)["usage"]["completion_tokens"],
                              [r["max_tokens"] for r in backend_requests(processes["fast"])], len(backend_requests(processes["slow"])))
            assert got["with"] == got["without"] == (200, 4000, [4000], 0), (chars, got)
        for chars, budget in ((10_000, 20_000), (67_000, 4_000)):  # a budget over the window; ~14k tokens + 4,000 over it
            clear_backends(processes["fast"])
            status, text = post_read(processes["with"], "/v1/chat/completions", _chat(chars, model="capped", max_tokens=budget), timeout=90)
            prompt = json.loads(text)["usage"]["prompt_tokens"] if status == 200 else None
            sent = [(r["status"], r["max_tokens"]) for r in backend_requests(processes["fast"])]
            assert status == 200 and sent == [(200, 16_384 - prompt)], (chars, status, text[:300], sent)  # one attempt, the real room


KEYS = {
    "k-plain": {"team_id": "t1", "models": []},
    "k-broke": {"team_id": "t1", "user_id": "u1", "models": [], "max_budget": 1.0, "spend": 5.0},
    "k-cwf-none": {"team_id": "t1", "models": [], "router_settings": {"context_window_fallbacks": []}},
    "k-cwf-backup": {"team_id": "t1", "models": [], "router_settings": {"context_window_fallbacks": [{"fast": ["backup"]}]}},
    "k-fb": {"team_id": "t1", "models": [], "router_settings": {"fallbacks": [{"fast": ["backup"]}]}},
}


def test_keys_budgets_key_router_settings_and_chains_through_other_entries(tmp_path_factory):
    processes: dict[str, ManagedProcess] = {}
    free, paid = {"input_cost_per_token": 0.0, "output_cost_per_token": 0.0}, {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6}
    with stopped_at_exit(processes):
        work = tmp_path_factory.mktemp("keys")
        for name, served, window in (("fast", "fast-8b", 16384), ("mid", "mid-14b", 32768), ("slow", "slow-27b", 131072),
                                     ("backup", "backup-27b", 131072)):
            processes[name] = start_emulator(served, window, workdir=work, time_scale=0, block_size=16, vllm_version="0.31.0")
        groups = {"fast": [_spec(processes["fast"], "fast-8b", model_info=free)], "mid": [_spec(processes["mid"], "mid-14b", model_info=free)],
                  "slow": [_spec(processes["slow"], "slow-27b", model_info=paid)], "backup": [_spec(processes["backup"], "backup-27b", model_info=paid)]}
        for proxy, callbacks in (("with", ["litellm_kvwarm.proxy_handler_instance"]), ("without", False)):
            config = proxy_config(groups, fallbacks=[{"fast": ["mid"]}, {"mid": ["slow"]}], callbacks=callbacks, general_settings=CUSTOM_AUTH,
                                  router_settings={"num_retries": 0, "disable_cooldowns": True},
                                  env_vars={"KVWARM_WARM_AHEAD": "false", "KVWARM_REQUEST_BUDGET_MS": 3000})
            processes[proxy] = start_proxy_with_keys(config, tmp_path_factory.mktemp(f"keys-{proxy}"), KEYS)
        names = ("fast", "mid", "slow", "backup")

        def both(key: str, chars: int, faults: dict[str, Any] | None = None) -> dict[str, tuple[int, str | None]]:
            """(status, the group that answered: the one emulator that returned 200) through each proxy."""
            out = {}
            for proxy in ("without", "with"):
                with _faulted(processes, names, faults):
                    response = httpx.post(processes[proxy].base_url + "/v1/chat/completions", json=_chat(chars),
                                          headers={"Authorization": f"Bearer {key}"}, timeout=90)
                answered = [n for n in names if any(r["status"] == 200 for r in backend_requests(processes[n]))]
                out[proxy] = (response.status_code, answered[0] if answered else None)
            return out

        assert both("k-plain", FAR) == {"without": (200, "slow"), "with": (200, "slow")}  # fast → mid → (mid's own entry) slow
        assert both("k-broke", FAR) == {"without": (400, None), "with": (400, None)}  # slow is paid, the key over budget
        assert both("k-broke", 80_000) == {"without": (200, "mid"), "with": (200, "mid")}  # mid is free: no budget gate
        assert both("k-cwf-none", 80_000) == {"without": (400, None), "with": (400, None)}
        assert both("k-cwf-backup", 80_000) == {"without": (200, "backup"), "with": (200, "backup")}
        assert both("k-fb", FAR, faults={"slow": SERVICE_DOWN}) == {"without": (200, "backup"), "with": (200, "backup")}
        assert both("k-fb", NEAR, faults={"fast": SERVICE_DOWN}) == {"without": (200, "backup"), "with": (200, "backup")}

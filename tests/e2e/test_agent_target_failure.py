"""An escalation target that fails, on the agent routes: the plugin's proxy against LiteLLM alone,
over the same emulated vLLM backends (fast 16,384, slow 131,072).

Found by the breaker session of issue 14: a proactive escalation of an Anthropic Messages request
whose target answers 503 reached the client as that 503, where LiteLLM alone answers with the
context-length 400 of the source group. The plugin's ``async_post_call_failure_hook`` returns
that 400, but LiteLLM 1.108.7's ``/v1/messages`` endpoint (``proxy/anthropic_endpoints/endpoints.py``)
awaits ``post_call_failure_hook`` and discards its return value. Fixed by escalating Messages
requests through LiteLLM's own ``context_window_fallbacks`` (``planner.Escalation.via_fallback``):
the source's first attempt is skipped with its context-length error, which stays the request's
error when the target fails. ``/v1/responses`` (the common handler, which honours the failure
hook) is the control case.
"""

from __future__ import annotations

import time

import pytest

from e2e_support import backend_requests, clear_backends, long_text, post_read
from litellm_kvwarm.lab.processes import BackendSpec, proxy_config, start_emulator, start_proxy
from litellm_kvwarm.lab.processes.emulators import clear_faults, set_faults

pytestmark = pytest.mark.e2e

CHAT, MESSAGES, RESPONSES = "/v1/chat/completions", "/v1/messages", "/v1/responses"


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    work = tmp_path_factory.mktemp("break-agents")
    procs = {
        "fast": start_emulator("fast-8b", 16_384, workdir=work, vllm_version="0.31.0", time_scale=0, block_size=16),
        "slow": start_emulator("slow-27b", 131_072, workdir=work, vllm_version="0.32.0", time_scale=0, block_size=16),
    }
    groups = {"fast": [BackendSpec.of(procs["fast"], "fast-8b")], "slow": [BackendSpec.of(procs["slow"], "slow-27b")]}
    try:
        for name, callbacks in (("with", ["litellm_kvwarm.proxy_handler_instance"]), ("without", False)):
            config = proxy_config(groups, fallbacks=[{"fast": ["slow"]}], callbacks=callbacks,
                                  env_vars={"KVWARM_REQUEST_BUDGET_MS": 3000})
            procs[name] = start_proxy(config, workdir=tmp_path_factory.mktemp(f"proxy-{name}"))
    except Exception:
        for proc in procs.values():
            proc.stop()
        raise
    yield procs
    for proc in procs.values():
        proc.stop()


def overflow_body(api: str, stream: bool) -> tuple[str, str, dict]:
    """(proxy path, backend path, body): ~16,800 prompt tokens, over fast's 16,384 window."""
    text = long_text(80_000)
    if api == "messages":
        return MESSAGES, CHAT, {"model": "fast", "max_tokens": 256, "stream": stream,
                                "messages": [{"role": "user", "content": text}]}
    return RESPONSES, RESPONSES, {"model": "fast", "max_output_tokens": 256, "stream": stream, "input": text}


@pytest.mark.parametrize("api,stream", [("messages", False), ("messages", True), ("responses", False)],
                         ids=["messages-json", "messages-stream", "responses-json-control"])
def test_unreachable_escalation_target_answers_like_litellm_alone(stack, api, stream):
    """LiteLLM alone answers 400 (the context-length error of ``fast``, after the fallback to a
    failing ``slow``); so does the plugin's proxy, which never tried ``fast``."""
    path, backend_path, body = overflow_body(api, stream)
    outcomes = {}
    set_faults(stack["slow"], {"completions": {"status": 503}})
    try:
        for name in ("without", "with"):
            clear_backends(stack["fast"], stack["slow"])
            status, text = post_read(stack[name], path, body)
            outcomes[name] = (status, text[:300], [r["status"] for r in backend_requests(stack["slow"], backend_path)])
    finally:
        clear_faults(stack["slow"])
    # LiteLLM alone: fast's context-length 400, then the fallback to slow fails: the client gets the 400
    assert outcomes["without"][0] == 400, outcomes
    # the plugin went to slow first (proactive) and slow answered 503 on every attempt
    assert outcomes["with"][2] and set(outcomes["with"][2]) == {503}, outcomes
    # never worse than LiteLLM alone: the client's error is the same context-length 400
    assert outcomes["with"][0] == outcomes["without"][0], outcomes
    assert "maximum context length" in outcomes["with"][1], outcomes


@pytest.mark.parametrize("status", [500, 429, 413])
@pytest.mark.parametrize("api", ["chat", "responses", "messages"])
def test_a_target_that_answers_an_error_leaves_the_client_the_same_status_as_litellm_alone(stack, api, status):
    """Found by the breaker: only an unreachable target (connection error, timeout, 502-504) was answered with the
    source's context-length 400. A target that answers 500, 429 or 413 reached the client as that status on
    ``/v1/chat/completions`` and ``/v1/responses``, where LiteLLM alone answers 400: it tries ``fast`` first, which
    refuses the overflow, falls back to the failing ``slow`` and re-raises ``fast``'s error. The plugin's request
    made the same backend attempts (``slow``, then its source fallback ``fast``, which refused on length)."""
    if api == "chat":
        path, backend_path = CHAT, CHAT
        body = {"model": "fast", "max_tokens": 256, "messages": [{"role": "user", "content": long_text(80_000)}]}
    else:
        path, backend_path, body = overflow_body(api, False)
    outcomes = {}
    set_faults(stack["slow"], {"completions": {"status": status}})
    try:
        for name in ("without", "with"):
            clear_backends(stack["fast"], stack["slow"])
            answer, text = post_read(stack[name], path, body)
            outcomes[name] = (answer, text[:300], sorted({r["status"] for r in backend_requests(stack["slow"], backend_path)}),
                              [r["status"] for r in backend_requests(stack["fast"], backend_path)])
    finally:
        clear_faults(stack["slow"])
    assert outcomes["without"][0] == 400 and outcomes["without"][2] == [status], outcomes
    assert outcomes["with"][2] == [status], outcomes  # the plugin's request reached the failing target
    assert outcomes["with"][0] == 400, outcomes  # the same status as LiteLLM alone
    assert "maximum context length" in outcomes["with"][1], outcomes


def test_a_warm_the_target_refuses_never_takes_it_out_for_live_requests(stack):
    """Found by the breaker: a warm's failure went through LiteLLM's Router like a live request's, so a
    status the Router cools a deployment down for (404, 401, 408, 429) took the escalation target out of
    rotation for live requests (every tenant's) for the cooldown. Here ``slow`` has no Responses API (vLLM
    before 0.10, TGI: 404) while ``fast`` has one: a Responses session past the warm threshold is served by
    ``fast`` and its warm (sent as Responses) is refused by ``slow``; a chat request that then needs ``slow``
    failed with the Router's "No deployments available", where LiteLLM alone (no warm) serves it from ``slow``."""
    session = {"model": "fast", "max_output_tokens": 64, "input": long_text(48_000)}  # ~10.3k tokens: past 60%, fits fast
    overflow = {"model": "fast", "max_tokens": 64, "messages": [{"role": "user", "content": long_text(80_000)}]}
    outcomes = {}
    set_faults(stack["slow"], {"responses": "status:404"})
    try:
        for name in ("without", "with"):
            clear_backends(stack["fast"], stack["slow"])
            first, _ = post_read(stack[name], RESPONSES, session)
            deadline = time.monotonic() + 10
            while name == "with" and not backend_requests(stack["slow"], RESPONSES) and time.monotonic() < deadline:
                time.sleep(0.1)
            time.sleep(0.5)
            refused = [r["status"] for r in backend_requests(stack["slow"], RESPONSES)]
            second, text = post_read(stack[name], CHAT, overflow)
            outcomes[name] = (first, refused, second, text[:300], [r["status"] for r in backend_requests(stack["slow"], CHAT)])
    finally:
        clear_faults(stack["slow"])
    assert outcomes["without"][:3] == (200, [], 200), outcomes  # LiteLLM alone: fast serves the session, slow the overflow
    assert outcomes["with"][0] == 200 and outcomes["with"][1] and set(outcomes["with"][1]) == {404}, outcomes  # the warm was refused
    assert outcomes["with"][2] == 200, outcomes  # never worse than LiteLLM alone: slow still serves the live request
    assert 200 in outcomes["with"][4], outcomes


@pytest.mark.parametrize("where,counted", [("extra_body", True), ("top-level", True), ("extra_body", False), ("thinking", True),
                                           ("thinking", False), ("messages-thinking", True)],
                         ids=["extra_body", "top-level", "backstop-retry", "thinking", "thinking-backstop-retry", "messages-thinking"])
def test_a_clamp_never_goes_below_the_request_s_min_tokens(stack, where, counted):
    """Found by the breaker: the clamp cut ``max_tokens`` to the room left in ``fast``'s window without looking
    at vLLM's ``min_tokens``, which a server refuses above ``max_tokens`` ("min_tokens must be less than or equal
    to max_tokens=..."; not a context-length error, so nothing escalated it). LiteLLM alone sends the request as it
    came: ``fast`` (vLLM 0.31) refuses prompt + max_tokens over its window, and ``slow`` serves the whole budget.
    ``backstop-retry``: no exact count (``/tokenize`` fails), so no clamp; the backstop's retry on ``fast`` after its
    refusal was cut to the room the server printed, below ``min_tokens`` as well. ``thinking``: an extended-thinking
    budget of 2,999 tokens (LiteLLM's chat ``thinking`` parameter) asks for the same least output: a cut under it can
    leave the reasoning with no answer; ``messages-thinking``: the same as an Anthropic Messages body on /v1/messages."""
    min_tokens = {"min_tokens": 3000} if "thinking" not in where else {"thinking": {"type": "enabled", "budget_tokens": 2999}}
    body = {"model": "fast", "max_tokens": 4000, "messages": [{"role": "user", "content": long_text(66_000)}],
            **({"extra_body": min_tokens} if where == "extra_body" else min_tokens)}
    outcomes = {}
    if not counted:
        set_faults(stack["fast"], {"tokenize": "status:500"})
        body["messages"][0]["content"] += " (no count)"  # a new session: its exact count was never remembered
    try:
        for name in ("without", "with"):
            clear_backends(stack["fast"], stack["slow"])
            status, text = post_read(stack[name], MESSAGES if where.startswith("messages") else CHAT, body)
            outcomes[name] = (status, text[:300],
                              [(r["max_tokens"], r["status"]) for r in backend_requests(stack["slow"], CHAT) if r["max_tokens"] != 1],
                              [(r["max_tokens"], r["status"], r["error"]) for r in backend_requests(stack["fast"], CHAT)])
    finally:
        clear_faults(stack["fast"])
    assert outcomes["without"][0] == 200 and outcomes["without"][2] == [(4000, 200)], outcomes
    assert outcomes["with"][0] == 200, outcomes  # never worse than LiteLLM alone
    assert outcomes["with"][2] == [(4000, 200)], outcomes  # served by slow with the whole budget
    assert all(max_tokens >= 3000 for max_tokens, _, _ in outcomes["with"][3]), outcomes  # never cut below min_tokens


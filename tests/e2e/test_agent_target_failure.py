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

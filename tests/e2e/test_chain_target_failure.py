"""A three-group chain whose middle step fails, the plugin's proxy against LiteLLM alone over the same
emulated vLLM backends (fast 16,384, mid 32,768, slow 131,072; ``context_window_fallbacks: [{fast: [mid, slow]}]``).

Found by the breaker session of this stop: a ~25k-token request escalated ahead of time to ``mid`` while ``mid``
answers 500 (or 429) reached the client as that 500, where LiteLLM alone (fast's context-length 400, then its
context-window fallbacks: mid fails, slow answers) answers 200 from ``slow``. The escalated request's fallbacks
went from ``mid`` straight back to ``fast``, and its backstop aborted the hop to ``slow`` as "not a context-length
error". Now an escalated request's fallbacks hold the rest of the chain before the source, and its backstop plan
walks the chain on any error (``BackstopPlan.walks_chain``), as LiteLLM alone's walk does.
"""

from __future__ import annotations

import pytest

from e2e_support import backend_requests, clear_backends, long_text, post_read, stopped_at_exit
from litellm_kvwarm.lab.processes import BackendSpec, proxy_config, start_emulator, start_proxy
from litellm_kvwarm.lab.processes.emulators import clear_faults, set_faults

pytestmark = pytest.mark.e2e

CHAT, RESPONSES, MESSAGES = "/v1/chat/completions", "/v1/responses", "/v1/messages"


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    work = tmp_path_factory.mktemp("chain-failure")
    with stopped_at_exit({}) as procs:
        for name, model, window in (("fast", "fast-8b", 16_384), ("mid", "mid-14b", 32_768), ("slow", "slow-27b", 131_072)):
            procs[name] = start_emulator(model, window, workdir=work, time_scale=0, block_size=16)
        groups = {"fast": [BackendSpec.of(procs["fast"], "fast-8b")], "mid": [BackendSpec.of(procs["mid"], "mid-14b")],
                  "slow": [BackendSpec.of(procs["slow"], "slow-27b")]}
        for name, callbacks in (("with", ["litellm_kvwarm.proxy_handler_instance"]), ("without", False)):
            config = proxy_config(groups, fallbacks=[{"fast": ["mid", "slow"]}], callbacks=callbacks,
                                  env_vars={"KVWARM_REQUEST_BUDGET_MS": 3000})
            procs[name] = start_proxy(config, workdir=tmp_path_factory.mktemp(f"proxy-{name}"))
        yield procs


def _body(api: str, stream: bool) -> tuple[str, str, dict]:
    """(proxy path, backend path, body): ~25k prompt tokens, over fast's window, inside mid's."""
    text = long_text(120_000)
    if api == "responses":
        return RESPONSES, RESPONSES, {"model": "fast", "max_output_tokens": 1000, "stream": stream, "input": text}
    if api == "messages":
        return MESSAGES, CHAT, {"model": "fast", "max_tokens": 1000, "stream": stream, "messages": [{"role": "user", "content": text}]}
    return CHAT, CHAT, {"model": "fast", "max_tokens": 1000, "stream": stream, "messages": [{"role": "user", "content": text}]}


@pytest.mark.parametrize("api,stream,status", [("chat", False, 500), ("chat", True, 500), ("chat", False, 429),
                                               ("responses", False, 500), ("messages", False, 500)],
                         ids=["chat-500", "chat-stream-500", "chat-429", "responses-500", "messages-500"])
def test_a_failing_middle_step_leaves_the_request_to_the_next_one_as_litellm_alone(stack, api, stream, status):
    path, backend_path, body = _body(api, stream)
    outcomes = {}
    set_faults(stack["mid"], {"completions": {"status": status}, "responses": f"status:{status}"})
    try:
        for name in ("without", "with"):
            clear_backends(stack["fast"], stack["mid"], stack["slow"])
            code, text = post_read(stack[name], path, body)
            served = [r for r in backend_requests(stack["slow"], backend_path) if r.get("max_tokens") != 1]
            outcomes[name] = (code, text[:200], [r["status"] for r in served],
                              [r["status"] for r in backend_requests(stack["mid"], backend_path)])
    finally:
        clear_faults(stack["mid"])
    # LiteLLM alone: fast refuses on length, mid fails, slow answers
    assert outcomes["without"][0] == 200 and outcomes["without"][2] == [200], outcomes
    # the plugin: mid first (ahead of time), it fails, then slow answers: the same 200
    assert outcomes["with"][0] == 200 and outcomes["with"][2] == [200], outcomes
    assert outcomes["with"][3] and set(outcomes["with"][3]) == {status}, outcomes


def test_a_streamed_messages_error_before_content_near_the_window_stays_a_streamed_error(stack):
    """Found by this stop's breaker: a streamed ``/v1/messages`` request near fast's window (~14,700 tokens,
    ``max_tokens`` 2,000, which vLLM 0.32 trims to fit) whose backend fails before any content. LiteLLM alone
    answers 200 and streams the error event; the plugin had armed generic fallbacks of its own (an overflow was
    possible by the safe estimate), so LiteLLM's Messages stream read ahead, the hop declined, and the client got
    a 500 JSON body. The plugin arms none on a streamed Messages request now: the same 200 stream and error event."""
    body = {"model": "fast", "max_tokens": 2_000, "stream": True, "messages": [{"role": "user", "content": long_text(70_000)}]}
    outcomes = {}
    set_faults(stack["fast"], {"completions": {"stream_error_after_tokens": 0, "stream_error_message": "Internal server error"}})
    try:
        for name in ("without", "with"):
            clear_backends(stack["fast"], stack["mid"], stack["slow"])
            status, text = post_read(stack[name], MESSAGES, body)
            moved = [r for g in ("mid", "slow") for r in backend_requests(stack[g], CHAT) if r.get("max_tokens") != 1]
            outcomes[name] = (status, "event: error" in text, text[:200], len(moved))
    finally:
        clear_faults(stack["fast"])
    assert outcomes["without"][:2] == (200, True), outcomes
    assert outcomes["with"][:2] == (200, True), outcomes
    assert outcomes["with"][3] == outcomes["without"][3] == 0, outcomes  # neither moved it to another group

"""An escalation target's passing failure, retried as LiteLLM alone retries it: the plugin's proxy against
LiteLLM alone over the same emulated vLLM backends (fast 16,384, slow 131,072).

Found in the differential run (``test_differential.py``, its dead-baseline case 20261131:1, 2 of 4 full CI
runs): a Messages request just over fast's window that the plugin could not settle by an exact count (its
``/tokenize`` over the request budget on a loaded machine) stayed on fast, was refused, and was escalated to
slow by the backstop; its first attempt at slow failed on a pooled keep-alive connection the tap had closed
(the proxy's event loop had been busy for 10 s with a long stream), and LiteLLM's own retry of that attempt
was refused by the plugin's deployment hook, which read the retry as the hop of its generic ``fallbacks``
after a non-context error ("fallback not used: the original error is not about the request's length").
LiteLLM alone, on the same failure, retries and answers 200. Here the target's failure is an injected 503 on
its first request; the source's ``/tokenize`` fails, so every request takes the reactive path.
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
    work = tmp_path_factory.mktemp("escalation-retry")
    procs = {
        "fast": start_emulator("fast-8b", 16_384, workdir=work, vllm_version="0.32.0", time_scale=0, block_size=16),
        "slow": start_emulator("slow-27b", 131_072, workdir=work, vllm_version="0.32.0", time_scale=0, block_size=16),
    }
    groups = {"fast": [BackendSpec.of(procs["fast"], "fast-8b")], "slow": [BackendSpec.of(procs["slow"], "slow-27b")]}
    try:
        for name, callbacks in (("with", ["litellm_kvwarm.proxy_handler_instance"]), ("without", False)):
            config = proxy_config(groups, fallbacks=[{"fast": ["slow"]}], callbacks=callbacks,
                                  env_vars={"KVWARM_WARM_AHEAD": "false"})
            procs[name] = start_proxy(config, workdir=tmp_path_factory.mktemp(f"proxy-{name}"))
    except Exception:
        for proc in procs.values():
            proc.stop()
        raise
    yield procs
    for proc in procs.values():
        proc.stop()


def over(api: str, chars: int) -> tuple[str, str, dict]:
    """(proxy path, backend path, body) of ``chars`` characters of prose: 80,000 (~16,800 prompt tokens) is over fast's
    window and within twice it (the plugin stays on fast when no exact count settles such a request, and the
    backstop escalates it); 200,000 (~42,000) is past twice it (the plugin escalates before fast is tried)."""
    text = long_text(chars)
    if api == "messages":
        return MESSAGES, CHAT, {"model": "fast", "max_tokens": 64, "messages": [{"role": "user", "content": text}]}
    if api == "responses":
        return RESPONSES, RESPONSES, {"model": "fast", "max_output_tokens": 64, "input": text}
    return CHAT, CHAT, {"model": "fast", "max_tokens": 64, "messages": [{"role": "user", "content": text}]}


@pytest.mark.parametrize("status", [503, 500])
@pytest.mark.parametrize("api", ["chat", "messages", "responses"])
@pytest.mark.parametrize("chars, escalation", [(80_000, "reactive"), (200_000, "proactive")], ids=["reactive", "proactive"])
def test_a_target_that_fails_once_is_retried_as_litellm_alone_retries_it(stack, api, status, chars, escalation):
    path, backend_path, body = over(api, chars)
    outcomes = {}
    set_faults(stack["fast"], {"tokenize": "status:500"})
    try:
        for name in ("without", "with"):
            clear_backends(stack["fast"], stack["slow"])
            set_faults(stack["slow"], {"completions": {"status": status, "count": 1}})
            answer, text = post_read(stack[name], path, body)
            outcomes[name] = (answer, text[:300], [r["status"] for r in backend_requests(stack["fast"], backend_path)],
                              [r["status"] for r in backend_requests(stack["slow"], backend_path)])
    finally:
        clear_faults(stack["fast"])
        clear_faults(stack["slow"])
    # LiteLLM alone: fast refuses the overflow, its context-window fallback reaches slow, which fails once and is retried
    assert outcomes["without"][0] == 200 and outcomes["without"][3] == [status, 200], outcomes
    # the plugin: the same retry of slow's passing failure, after the backstop's escalation or its own
    assert outcomes["with"][0] == 200 and outcomes["with"][3] == [status, 200], outcomes
    assert outcomes["with"][2] == ([400] if escalation == "reactive" else []), outcomes

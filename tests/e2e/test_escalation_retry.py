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

from e2e_support import api_request, backend_requests, clear_backends, post_read, start_beside_litellm_alone, stopped_at_exit
from litellm_kvwarm.lab.processes.emulators import clear_faults, set_faults

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    with stopped_at_exit({}) as procs:
        start_beside_litellm_alone(tmp_path_factory, "escalation-retry", {"fast": ("fast-8b", 16_384, "0.32.0"),
                                                                          "slow": ("slow-27b", 131_072, "0.32.0")}, ["slow"], procs)
        yield procs


@pytest.mark.parametrize("status", [503, 500])
@pytest.mark.parametrize("api", ["chat", "messages", "responses"])
@pytest.mark.parametrize("chars, escalation", [(80_000, "reactive"), (200_000, "proactive")], ids=["reactive", "proactive"])
def test_a_target_that_fails_once_is_retried_as_litellm_alone_retries_it(stack, api, status, chars, escalation):
    # 80,000 characters (~16,800 prompt tokens) are over fast's window and within twice it: with no exact count the
    # plugin stays on fast and the backstop escalates; 200,000 (~42,000) are past twice it: escalated before fast
    path, backend_path, body = api_request(api, chars, 64)
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

"""A passing failure inside the backstop's fallback walk: the plugin's proxy against LiteLLM alone over the same
emulated vLLM backends, with the same injected faults.

Found by the breaker after e3433bb (2026-12-06), the same kind as ``test_escalation_retry.py``: the deployment hook
decided each hop on the latest error only, so after a step of the walk failed with an error that is not about
length (a 503, a 429, a timeout), the next hop read as a hop of the plugin's own generic ``fallbacks`` after a
non-context error and was refused ("fallback not used: the original error is not about the request's length").
LiteLLM alone's ``context_window_fallbacks`` walk goes on to its next step. Now a hop is decided on the request's
last length refusal (``reactive.last_length_refusal``), and LiteLLM's own retry of a hop gets that hop's output
decision again (its clamp), counted once.

In every case the source's ``/tokenize`` fails, so the plugin cannot settle the request before dispatch: the source
refuses it and the backstop acts, as LiteLLM alone's fallbacks do.
"""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from e2e_support import api_request, backend_requests, clear_backends, post_read, start_beside_litellm_alone, stopped_at_exit
from litellm_kvwarm.lab.processes.emulators import clear_faults, set_faults

pytestmark = pytest.mark.e2e

PROXIES = ("without", "with")


@pytest.fixture(scope="module")
def chain_stack(tmp_path_factory):
    with stopped_at_exit({}) as procs:
        start_beside_litellm_alone(tmp_path_factory, "walk-chain", {"fast": ("fast-8b", 16_384, "0.32.0"), "mid": ("mid-14b", 32_768, "0.32.0"),
                                                                    "slow": ("slow-27b", 131_072, "0.32.0")}, ["mid", "slow"], procs, {"timeout": 3})
        yield procs


@pytest.fixture(scope="module")
def slot_stack(tmp_path_factory):
    # fast speaks vLLM 0.25: a prompt that fits with a max_tokens that does not is refused naming both numbers,
    # and the plugin's backstop retries fast with the output cut (its retry slot)
    with stopped_at_exit({}) as procs:
        start_beside_litellm_alone(tmp_path_factory, "walk-slot", {"fast": ("fast-8b", 16_384, "0.25.0"), "slow": ("slow-27b", 131_072, "0.32.0")},
                                   ["slow"], procs)
        yield procs


@pytest.mark.parametrize("api, stream, fault", [
    ("chat", False, {"status": 503}), ("messages", False, {"status": 503}), ("responses", False, {"status": 503}),
    ("chat", True, {"status": 503}), ("responses", False, {"status": 429}), ("chat", False, {"hang": True}),
], ids=["chat-503", "messages-503", "responses-503", "chat-stream-503", "responses-429", "chat-hang"])
def test_a_step_of_the_chain_that_is_down_leaves_the_walk_to_the_next_step(chain_stack, api, stream, fault):
    """fast (16,384) → mid (32,768) → slow (131,072); mid fails every request. A request just over fast's window:
    LiteLLM alone walks fast (400), mid (its retries), slow (200). Before, the plugin's walk stopped at mid and the
    client got fast's 400."""
    path, backend_path, body = api_request(api, 80_000, 64, stream)
    outcomes = {}
    for proxy in PROXIES:
        clear_backends(chain_stack["fast"], chain_stack["mid"], chain_stack["slow"])
        set_faults(chain_stack["fast"], {"tokenize": "status:500"})
        set_faults(chain_stack["mid"], {"completions": fault})
        try:
            status, text = post_read(chain_stack[proxy], path, body)
        finally:
            for group in ("fast", "mid", "slow"):
                clear_faults(chain_stack[group])
        outcomes[proxy] = (status, text[:200], *[[r["status"] for r in backend_requests(chain_stack[g], backend_path)] for g in ("fast", "mid", "slow")])
    assert outcomes["without"][0] == 200 and outcomes["without"][4] == [200], outcomes
    assert outcomes["with"][0] == 200 and outcomes["with"][4] == [200], outcomes
    assert outcomes["with"][2:4] == outcomes["without"][2:4], outcomes  # fast refused once, mid's attempts alike


def _after_first(emulator, faults: dict, stop: threading.Event) -> None:
    """Set ``faults`` once the emulator's first request took its counted fault (fast's length 400)."""
    while not stop.is_set():
        if (httpx.get(emulator.base_url + "/emulator/faults", timeout=10).json().get("completions") or {}).get("remaining") == 0:
            set_faults(emulator, faults)
            return
        time.sleep(0.02)


@pytest.mark.parametrize("api", ["chat", "messages", "responses"])
@pytest.mark.parametrize("later", [{"status": 503}, {"status": 503, "count": 1}], ids=["503-after", "503-once"])
def test_without_a_count_the_walk_after_a_refusal_is_litellm_alone_s(slot_stack, api, later):
    """~10.5k prompt tokens asking 8,000 output: fast refuses (prompt + output over 16,384: vLLM's "at least N",
    a lower bound), then fails the requests after that one (every one, or once); its ``/tokenize`` fails. LiteLLM
    alone never sends fast a second request: slow answers with the whole budget. Before (b5e518e), the plugin retried
    fast with the output cut on its safe estimate, and after that retry's passing failure the walk had to go on to
    slow; now a retry with less needs a count of the prompt (``test_harms.py``), so the plugin's walk is LiteLLM
    alone's. The walk after a passing failure of a counted retry: ``test_hook_adapters.py``."""
    path, backend_path, body = api_request(api, 50_000, 8_000)
    outcomes = {}
    for proxy in PROXIES:
        clear_backends(slot_stack["fast"], slot_stack["slow"])
        set_faults(slot_stack["fast"], {"tokenize": "status:500", "completions": {"delay_s": 1.0, "count": 1}})
        stop = threading.Event()
        timer = threading.Thread(target=_after_first, args=(slot_stack["fast"], {"tokenize": "status:500", "completions": later}, stop))
        timer.start()
        try:
            status, text = post_read(slot_stack[proxy], path, body)
        finally:
            stop.set()
            timer.join()
            clear_faults(slot_stack["fast"])
        outcomes[proxy] = (status, *[[(r["status"], r.get("max_tokens")) for r in backend_requests(slot_stack[g], backend_path)]
                                     for g in ("fast", "slow")])
    assert outcomes["without"] == outcomes["with"] == (200, [(400, 8000)], [(200, 8000)]), outcomes

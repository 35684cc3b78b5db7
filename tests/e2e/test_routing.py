"""Proactive routing and output clamping in a real ``litellm --config`` proxy.

Backends are emulated vLLM servers (real HTTP processes); the proof of where a request
went, and with which ``max_tokens``, is each backend's own request log.
"""

from __future__ import annotations

import time

import httpx
import pytest

from litellm_kvwarm.lab.processes import BackendSpec, ProcessError, proxy_config, start_emulator, start_proxy
from litellm_kvwarm.tokens import calibrated_estimator, estimate_request

from e2e_support import backend_requests, chat, clear_backends, long_text, messages_with_exact_tokens

pytestmark = pytest.mark.e2e

FAST_WINDOW, SLOW_WINDOW = 16_384, 131_072
TTL_S = 3.0


@pytest.fixture(scope="module")
def backends(tmp_path_factory):
    work = tmp_path_factory.mktemp("backends")
    # fast rejects prompt + max_tokens over the window, as vLLM 0.18-0.31 does
    fast = start_emulator("fast-8b", FAST_WINDOW, workdir=work, vllm_version="0.25.0", time_scale=0)
    slow = start_emulator("slow-27b", SLOW_WINDOW, workdir=work, vllm_version="0.32.0", time_scale=0)
    swap = start_emulator("swap-slot", 8_192, workdir=work, time_scale=0)
    opaque = start_emulator("opaque", FAST_WINDOW, workdir=work, time_scale=0, extra_args=["--hide-max-model-len"])
    procs = {"fast": fast, "slow": slow, "swap": swap, "opaque": opaque, "work": work}
    yield procs
    for name in ("fast", "slow", "swap", "opaque"):
        procs[name].stop()


@pytest.fixture(scope="module")
def proxy(backends, tmp_path_factory):
    groups = {
        "fast": [BackendSpec.of(backends["fast"], "fast-8b")],
        "slow": [BackendSpec.of(backends["slow"], "slow-27b")],
        "swap": [BackendSpec.of(backends["swap"], "swap-slot")],
        "opaque": [BackendSpec.of(backends["opaque"], "opaque")],
    }
    config = proxy_config(
        groups,
        fallbacks=[{"fast": ["slow"]}, {"swap": ["slow"]}, {"opaque": ["slow"]}],
        # warm-ahead off: these tests count every request a backend receives (warms are tested in test_warm)
        # a 3 s TTL (under LiteLLM's 300 s refresh): the plugin reads every window itself, so a swap
        # slot's new max_model_len is seen after the TTL (LiteLLM's own windows: test_litellm_discovery)
        env_vars={"KVWARM_WINDOW_TTL_S": TTL_S, "KVWARM_REQUEST_BUDGET_MS": 2000, "KVWARM_WARM_AHEAD": 0},
    )
    proc = start_proxy(config, workdir=tmp_path_factory.mktemp("proxy"))
    yield proc
    proc.stop()


@pytest.fixture(autouse=True)
def _clean_logs(backends):
    clear_backends(*(backends[n] for n in ("fast", "slow", "swap", "opaque")))


def routing_estimate(body, served: str) -> int:
    """The plugin's routing estimate of ``body`` for a deployment serving ``served``."""
    return estimate_request(body, estimator=calibrated_estimator(served)).routing


def test_the_bodies_mean_what_the_tests_rely_on():
    """Preconditions on the plugin's own estimator (output floor 256): a retuned estimator fails
    here instead of turning a routing test into one that tests something else."""
    floor = 256
    overflow = {"model": "fast", "messages": [{"role": "user", "content": long_text(120_000)}], "max_tokens": 64}
    assert FAST_WINDOW < routing_estimate(overflow, "fast-8b") + floor <= SLOW_WINDOW
    swap = {"model": "swap", "messages": [{"role": "user", "content": long_text(48_000)}], "max_tokens": 32}
    assert 8_192 < routing_estimate(swap, "swap-slot") + floor <= 32_768  # over the old window, inside the new
    short = {"model": "fast", "messages": [{"role": "user", "content": "Hello there"}], "max_tokens": 8}
    assert routing_estimate(short, "fast-8b") + floor <= FAST_WINDOW


def test_short_request_stays_on_fast(proxy, backends):
    response = chat(proxy, {"model": "fast", "messages": [{"role": "user", "content": "Hello there"}], "max_tokens": 8})
    assert response.status_code == 200, response.text
    fast_log, slow_log = backend_requests(backends["fast"]), backend_requests(backends["slow"])
    assert len(fast_log) == 1 and fast_log[0]["status"] == 200 and fast_log[0]["max_tokens"] == 8
    assert slow_log == []


def test_request_that_cannot_fit_reaches_only_slow(proxy, backends):
    body = {"model": "fast", "messages": [{"role": "user", "content": long_text(120_000)}], "max_tokens": 64}
    response = chat(proxy, body)
    assert response.status_code == 200, response.text
    assert backend_requests(backends["fast"]) == []  # zero attempts on fast
    slow_log = backend_requests(backends["slow"])
    assert len(slow_log) == 1 and slow_log[0]["status"] == 200
    assert slow_log[0]["prompt_tokens"] > FAST_WINDOW


def test_overflowing_output_budget_is_clamped_on_fast_at_first_attempt(proxy, backends):
    """The issue's case: 12,289 input + 4,096 output on a 16,384 window, fast in 0.18-0.31 behaviour."""
    messages = messages_with_exact_tokens(backends["fast"], "fast-8b", 12_289)
    response = chat(proxy, {"model": "fast", "messages": messages, "max_tokens": 4_096})
    assert response.status_code == 200, response.text
    fast_log = backend_requests(backends["fast"])
    assert len(fast_log) == 1, fast_log  # first attempt, no rejection
    sent = fast_log[0]
    assert sent["status"] == 200 and sent["prompt_tokens"] == 12_289
    assert 4_000 <= sent["max_tokens"] < 4_096
    assert sent["prompt_tokens"] + sent["max_tokens"] <= FAST_WINDOW
    assert backend_requests(backends["slow"]) == []


def test_without_plugin_the_same_request_is_rejected_by_fast(backends, tmp_path_factory):
    """Control: the 0.18-0.31 backend really rejects 12,289 + 4,096, so the clamp above is what saved it."""
    messages = messages_with_exact_tokens(backends["fast"], "fast-8b", 12_289)
    config = proxy_config({"fast": [BackendSpec.of(backends["fast"], "fast-8b")]}, callbacks=False, fallbacks=[])
    bare = start_proxy(config, workdir=tmp_path_factory.mktemp("bare"))
    try:
        response = chat(bare, {"model": "fast", "messages": messages, "max_tokens": 4_096})
    finally:
        bare.stop()
    assert response.status_code == 400
    assert "maximum context length is 16384 tokens" in response.text
    assert [r["status"] for r in backend_requests(backends["fast"])] == [400]


def test_max_model_len_change_is_read_again_after_ttl(proxy, backends):
    body = {"model": "swap", "messages": [{"role": "user", "content": long_text(48_000)}], "max_tokens": 32}
    assert chat(proxy, body).status_code == 200
    assert backend_requests(backends["swap"]) == [] and len(backend_requests(backends["slow"])) == 1

    # the swap slot is reloaded with a larger window on the same port
    old = backends["swap"]
    port = old.port
    old.stop()
    backends["swap"] = start_emulator("swap-slot", 32_768, port=port, workdir=backends["work"], time_scale=0)
    clear_backends(backends["slow"])
    time.sleep(TTL_S + 0.5)

    assert chat(proxy, body).status_code == 200
    swap_log = backend_requests(backends["swap"])
    assert len(swap_log) == 1 and swap_log[0]["status"] == 200
    assert backend_requests(backends["slow"]) == []


def test_unknown_window_leaves_request_untouched(proxy, backends):
    body = {"model": "opaque", "messages": [{"role": "user", "content": long_text(20_000)}], "max_tokens": 900}
    response = chat(proxy, body)
    assert response.status_code == 200, response.text
    opaque_log = backend_requests(backends["opaque"])
    assert len(opaque_log) == 1 and opaque_log[0]["max_tokens"] == 900
    assert backend_requests(backends["slow"]) == []


def test_routing_log_line_has_numbers_and_no_prompt_text(proxy, backends):
    marker = "ZEBRA-MARKER-" + "q" * 30
    text = marker + long_text(120_000)
    assert chat(proxy, {"model": "fast", "messages": [{"role": "user", "content": text}], "max_tokens": 16}).status_code == 200
    log = proxy.log_path.read_text(errors="replace")
    lines = [line for line in log.splitlines() if "[CONTEXT-ROUTE] proactive:" in line]
    assert lines, "no proactive log line"
    assert "exceeds window 16384 of 'fast'" in lines[-1] and "routing to 'slow'" in lines[-1]
    assert "ZEBRA-MARKER" not in log


def test_invalid_setting_stops_the_proxy_with_its_name(backends, tmp_path_factory):
    config = proxy_config(
        {"fast": [BackendSpec.of(backends["fast"], "fast-8b")]},
        env_vars={"KVWARM_OUTPUT_FLOOR_TOKENS": "plenty"},
    )
    with pytest.raises(ProcessError) as info:
        start_proxy(config, workdir=tmp_path_factory.mktemp("badcfg"), health_timeout_s=60)
    assert "KVWARM_OUTPUT_FLOOR_TOKENS" in str(info.value)

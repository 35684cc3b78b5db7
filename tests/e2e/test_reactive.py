"""The reactive backstop in a real proxy: the backend's own rejection is read, then the request
is retried once on the same group with a clamped budget, or escalated, or (when the catalog or
the key says no) the client gets the original error and nothing reaches the slow backend.

Proactive routing and clamping are switched off in this proxy, so every request reaches the
backend that will reject it: this isolates the backstop (in production it sits underneath)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import httpx
import pytest

from litellm_kvwarm.lab.processes import BackendSpec, proxy_config, start_emulator, start_proxy

from e2e_support import backend_requests, clear_backends, long_text, messages_with_exact_tokens

pytestmark = pytest.mark.e2e

WINDOW, SLOW_WINDOW = 4_096, 16_384
KEYS = {
    "sk-all": {"team_id": "team-a"},
    "sk-fast-only": {"team_id": "team-c", "models": ["fast", "fast32", "lonely"]},
}
HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    work = tmp_path_factory.mktemp("reactive")
    procs = {
        "fast": start_emulator("fast-8b", WINDOW, workdir=work, vllm_version="0.25.0", time_scale=0),
        "fast32": start_emulator("fast-32", WINDOW, workdir=work, vllm_version="0.32.0", time_scale=0),
        "slow": start_emulator("slow-27b", SLOW_WINDOW, workdir=work, time_scale=0),
    }
    groups = {
        "fast": [BackendSpec.of(procs["fast"], "fast-8b")],
        "fast32": [BackendSpec.of(procs["fast32"], "fast-32")],
        "lonely": [BackendSpec.of(procs["fast"], "fast-8b")],
        "slow": [BackendSpec.of(procs["slow"], "slow-27b")],
    }
    pdir = work / "proxy"
    pdir.mkdir()
    shutil.copy(HERE / "auth_fixture.py", pdir / "auth_fixture.py")
    config = proxy_config(
        groups,
        fallbacks=[{"fast": ["slow"]}, {"fast32": ["slow"]}, {"lonely": ["ghost"]}],
        env_vars={"KVWARM_PROACTIVE_ROUTING": 0, "KVWARM_CLAMP_OUTPUT": 0, "KVWARM_WARM_AHEAD": 0, "KVWARM_REQUEST_BUDGET_MS": 2000},
        general_settings={"custom_auth": "auth_fixture.user_api_key_auth"},
    )
    try:
        procs["proxy"] = start_proxy(config, workdir=pdir, env={"KVWARM_TEST_KEYS": json.dumps(KEYS)})
    except Exception:
        for p in procs.values():
            p.stop()
        raise
    yield procs
    for p in procs.values():
        p.stop()


@pytest.fixture(autouse=True)
def _clean(stack):
    clear_backends(stack["fast"], stack["fast32"], stack["slow"])


def send(stack, body, key="sk-all"):
    return httpx.post(
        stack["proxy"].base_url + "/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {key}"}, timeout=60
    )


def attempts(stack):
    return {n: [(r["status"], r["max_tokens"]) for r in backend_requests(stack[n])] for n in ("fast", "fast32", "slow")}


def test_prompt_plus_output_rejection_is_retried_on_same_group_with_clamped_budget(stack):
    messages = messages_with_exact_tokens(stack["fast"], "fast-8b", 3_000)
    response = send(stack, {"model": "fast", "messages": messages, "max_tokens": 2_000})
    assert response.status_code == 200, response.text
    seen = attempts(stack)
    assert seen["slow"] == []
    (first, retry) = seen["fast"]
    assert first == (400, 2_000)
    assert retry[0] == 200 and 256 <= retry[1] <= WINDOW - 3_000
    assert retry[1] == WINDOW - 3_000  # clamped on the exact count: the whole remaining window


def test_prompt_alone_over_window_is_escalated(stack):
    body = {"model": "fast32", "messages": [{"role": "user", "content": long_text(30_000)}], "max_tokens": 300}
    response = send(stack, body)
    assert response.status_code == 200, response.text
    seen = attempts(stack)
    assert seen["fast32"] == [(400, 300)]  # no pointless retry: the prompt alone does not fit
    assert seen["slow"] == [(200, 300)]  # the original budget, not a retry's leftover


def test_escalation_restores_original_budget_after_a_failed_retry_slot(stack):
    body = {"model": "fast", "messages": [{"role": "user", "content": long_text(30_000)}], "max_tokens": 1_500}
    response = send(stack, body)
    assert response.status_code == 200, response.text
    seen = attempts(stack)
    assert seen["fast"] == [(400, 1_500)]
    assert seen["slow"] == [(200, 1_500)]


def test_wording_litellm_does_not_classify_is_still_handled(stack):
    """vLLM 0.32 answers a prompt that exactly fills the window with "max_tokens must be at least 1,
    got 0": LiteLLM sees a plain BadRequestError, not a context-window error."""
    messages = messages_with_exact_tokens(stack["fast32"], "fast-32", WINDOW)
    response = send(stack, {"model": "fast32", "messages": messages})
    assert response.status_code == 200, response.text
    seen = attempts(stack)
    assert seen["fast32"] == [(400, None)]
    assert [s for s, _ in seen["slow"]] == [200]
    fast_error = backend_requests(stack["fast32"])[0]["error"]
    assert "max_tokens must be at least 1, got 0" in fast_error


def test_missing_target_returns_original_error_and_nothing_reaches_slow(stack):
    body = {"model": "lonely", "messages": [{"role": "user", "content": long_text(30_000)}], "max_tokens": 100}
    response = send(stack, body)
    assert response.status_code == 400
    assert "maximum context length is 4096 tokens" in response.text
    seen = attempts(stack)
    assert seen["slow"] == [] and len(seen["fast"]) == 1


def test_key_limited_to_fast_gets_original_error_and_nothing_reaches_slow(stack):
    body = {"model": "fast", "messages": [{"role": "user", "content": long_text(30_000)}], "max_tokens": 100}
    response = send(stack, body, key="sk-fast-only")
    assert response.status_code == 400
    assert "maximum context length is 4096 tokens" in response.text
    seen = attempts(stack)
    assert seen["slow"] == [] and seen["fast"] == [(400, 100)]


def test_client_fallbacks_cannot_widen_but_can_narrow(stack):
    body = {"model": "fast", "messages": [{"role": "user", "content": long_text(30_000)}], "max_tokens": 100}
    widened = dict(body, context_window_fallbacks=[{"fast": ["slow"]}])
    assert send(stack, widened, key="sk-fast-only").status_code == 400
    assert attempts(stack)["slow"] == []
    narrowed = dict(body, context_window_fallbacks=[])
    assert send(stack, narrowed).status_code == 400
    assert attempts(stack)["slow"] == []


def test_no_request_makes_more_than_three_backend_attempts(stack):
    cases = [
        ("fast", messages_with_exact_tokens(stack["fast"], "fast-8b", 3_900), 3_000),
        ("fast", [{"role": "user", "content": long_text(200_000)}], 100),  # too long even for slow
        ("fast32", [{"role": "user", "content": long_text(30_000)}], 5_000),
    ]
    for group, messages, max_tokens in cases:
        clear_backends(stack["fast"], stack["fast32"], stack["slow"])
        send(stack, {"model": group, "messages": messages, "max_tokens": max_tokens})
        total = sum(len(v) for v in attempts(stack).values())
        assert 0 < total <= 3, attempts(stack)  # at least the first attempt, at most retry + escalation


def test_reactive_log_lines_have_no_prompt_text(stack):
    marker = "SECRET-MARKER-" + "z" * 20
    send(stack, {"model": "fast32", "messages": [{"role": "user", "content": marker + long_text(30_000)}], "max_tokens": 50})
    log = stack["proxy"].log_path.read_text(errors="replace")
    assert "[CONTEXT-ROUTE] reactive:" in log
    assert "SECRET-MARKER" not in log


@pytest.mark.parametrize("group", ["fast", "fast32"], ids=["vllm-0.25", "vllm-0.32"])
def test_max_tokens_over_the_window_is_retried_with_a_budget_that_fits(stack, group):
    """'max_tokens=N cannot be greater than max_model_len=M' (or the 0.18-0.31 wording): the
    prompt is short, so the same group is retried with max_tokens = window - prompt."""
    served = "fast-8b" if group == "fast" else "fast-32"
    messages = messages_with_exact_tokens(stack[group], served, 500)
    response = send(stack, {"model": group, "messages": messages, "max_tokens": 5_000})
    assert response.status_code == 200, response.text
    seen = attempts(stack)
    assert seen["slow"] == []
    first, retry = seen[group]
    assert first == (400, 5_000)
    assert retry == (200, WINDOW - 500)

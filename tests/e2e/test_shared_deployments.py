"""What the plugin adds to traffic on deployments every tenant shares must not cost another request its
answer (breaker round on b52a711, both found with a real proxy; both pass only with the fix):

* **Session pinning and a failing replica.** The escalation target ``slow`` has two deployments; ``slow-b``
  answers 500 to every completion. LiteLLM alone retries on a re-picked replica (20 of 20 answered); the plugin
  pinned every retry of a session to its replica, so the sessions pinned to ``slow-b`` got a 500 (16 of 20
  answered). Now a retry takes the session's next replica (LiteLLM's own ``previous_models`` record).
* **Warms and LiteLLM's deployment limits.** Warms go through LiteLLM's router, so they count against a
  deployment's ``rpm``: one tenant's 11k-token session's warm pieces took a 6-rpm deployment's whole minute, and
  another tenant's requests to that group waited and timed out. Now a group LiteLLM limits gets no warm
  (``outcome="skipped_rate_limited"``) unless ``KVWARM_WARM_LIMITED=1``; nor does a caller whose key LiteLLM
  limits (its warms would count against the key's tokens per minute).

Real processes: one ``litellm --config`` proxy with the plugin (and LiteLLM's ``prometheus`` callback for
``/metrics``), emulated vLLM backends (one with an injected fault), two virtual keys on two teams
(``auth_fixture.py``, the tests' one mock).
"""

from __future__ import annotations

import time

import httpx
import pytest

from litellm_kvwarm.lab.processes import BackendSpec, proxy_config, start_emulator

from e2e_support import CUSTOM_AUTH, backend_requests, long_text, start_proxy_with_keys, stopped_at_exit
from test_metrics import scrape, value

pytestmark = pytest.mark.e2e

FAST_WINDOW, SLOW_WINDOW = 16_384, 131_072
KEYS = {"sk-a": {"team_id": "team-a", "user_id": "user-a"}, "sk-b": {"team_id": "team-b", "user_id": "user-b"},
        # a key LiteLLM limits to 200k tokens a minute: its warms would count against it (cumulative warm pieces)
        "sk-c": {"team_id": "team-c", "user_id": "user-c", "tpm_limit": 200_000}}
SESSIONS = 8


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    work = tmp_path_factory.mktemp("shared")
    with stopped_at_exit({}) as procs:
        procs["fast"] = start_emulator("fast-8b", FAST_WINDOW, workdir=work, time_scale=0)
        procs["slow_a"] = start_emulator("slow-27b", SLOW_WINDOW, workdir=work, time_scale=0)
        procs["slow_b"] = start_emulator("slow-27b", SLOW_WINDOW, workdir=work, time_scale=0, faults={"completions": {"status": 500}})
        procs["limited"] = start_emulator("slow-27b", SLOW_WINDOW, workdir=work, time_scale=0)
        groups = {
            "fast": [BackendSpec.of(procs["fast"], "fast-8b")],
            "slow": [BackendSpec(served_model_name="slow-27b", api_base=procs["slow_a"].base_url + "/v1", model_info={"id": "slow-a"}),
                     BackendSpec(served_model_name="slow-27b", api_base=procs["slow_b"].base_url + "/v1", model_info={"id": "slow-b"})],
            "fastl": [BackendSpec.of(procs["fast"], "fast-8b")],
            # LiteLLM's own deployment limit: rpm 6, under the default simple-shuffle a semaphore of 6 concurrent
            # requests (4 warms would hold two thirds of it); enforced per minute under usage-based routing
            "slowl": [BackendSpec(served_model_name="slow-27b", api_base=procs["limited"].base_url + "/v1", extra_params={"rpm": 6})],
        }
        config = proxy_config(
            groups, callbacks=["litellm_kvwarm.proxy_handler_instance", "prometheus"],
            fallbacks=[{"fast": ["slow"]}, {"fastl": ["slowl"]}], general_settings=CUSTOM_AUTH,
            litellm_settings={"require_auth_for_metrics_endpoint": False},  # the custom auth knows no master key
            # whole warms (one request per warm) keep the count of what reached a backend simple
            env_vars={"KVWARM_HASH_SECRET": "s" * 32, "KVWARM_WARM_PIECE_TOKENS": 0},
        )
        procs["proxy"] = start_proxy_with_keys(config, work, KEYS)
        yield procs


def _post(proxy, key: str, body: dict, session: str | None = None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {key}"}
    if session is not None:
        headers["x-litellm-session-id"] = session
    return httpx.post(proxy.base_url + "/v1/chat/completions", json=body, headers=headers, timeout=60, trust_env=False)


def test_a_retry_leaves_the_pinned_replica_that_failed(stack):
    statuses, by_session = [], {}
    for i in range(SESSIONS):
        before = len(backend_requests(stack["slow_b"]))
        body = {"model": "slow", "messages": [{"role": "user", "content": f"question {i}: " + "word " * 50}], "max_tokens": 8}
        statuses.append(_post(stack["proxy"], "sk-a", body, session=f"pinned-{i}").status_code)
        by_session[i] = len(backend_requests(stack["slow_b"])) - before
    assert statuses == [200] * SESSIONS, statuses
    # sessions pinned to slow-b were tried there once (and LiteLLM may cool it down after that): the test is not vacuous
    assert sum(by_session.values()) >= 1, by_session
    assert all(n <= 1 for n in by_session.values()), by_session  # never retried on the replica that failed
    served = backend_requests(stack["slow_a"])
    assert len(served) == SESSIONS and all(r.get("status", 200) == 200 for r in served)


def test_a_limited_group_gets_no_warm_and_another_tenant_keeps_its_requests(stack):
    proxy = stack["proxy"]
    near = {"model": "fastl", "messages": [{"role": "user", "content": long_text(52_000) + "\nSummarize."}], "max_tokens": 8}
    assert _post(proxy, "sk-a", near, session="tenant-a-long").status_code == 200  # ~11k tokens: past 60% of 16,384
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not value(scrape(proxy), "kvwarm_warms_total", outcome="skipped_rate_limited",
                                                     target="slowl", trigger="ahead"):
        time.sleep(0.2)
    samples = scrape(proxy)
    assert value(samples, "kvwarm_warms_total", outcome="skipped_rate_limited", target="slowl", trigger="ahead") >= 1
    assert value(samples, "kvwarm_warms_total", outcome="queued", target="slowl", trigger="ahead") == 0
    time.sleep(1.0)  # a warm would have been sent by now (it is queued at once, sent by a free slot)
    assert backend_requests(stack["limited"]) == []  # tenant A's session used nothing of slowl's minute
    answers = [_post(proxy, "sk-b", {"model": "slowl", "messages": [{"role": "user", "content": f"B {i}"}], "max_tokens": 4}).status_code
               for i in range(5)]
    assert answers == [200] * 5
    assert len(backend_requests(stack["limited"])) == 5


def test_a_caller_litellm_limits_gets_no_warm_and_an_unlimited_one_does(stack):
    proxy = stack["proxy"]
    before = len(backend_requests(stack["fast"]))
    # sk-c (limited) first, then sk-b (not limited, the control) with a longer conversation, both past 60% of fast
    for key, session, chars in (("sk-c", "tenant-c-long", 50_000), ("sk-b", "tenant-b-long", 56_000)):
        body = {"model": "fast", "messages": [{"role": "user", "content": f"{session}: " + long_text(chars)}], "max_tokens": 8}
        assert _post(proxy, key, body, session=session).status_code == 200
    limited_prompt, control_prompt = (r["prompt_tokens"] for r in backend_requests(stack["fast"])[before:])
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and not value(scrape(proxy), "kvwarm_warms_total", outcome="succeeded", target="slow",
                                                     trigger="ahead"):
        time.sleep(0.2)
    samples = scrape(proxy)
    assert value(samples, "kvwarm_warms_total", outcome="skipped_rate_limited", target="slow", trigger="ahead") == 1  # sk-c's
    assert value(samples, "kvwarm_warms_total", outcome="succeeded", target="slow", trigger="ahead") >= 1  # sk-b's
    warms = [r for r in backend_requests(stack["slow_a"]) + backend_requests(stack["slow_b"]) if r.get("max_tokens") == 1]
    assert warms and limited_prompt < control_prompt - 500
    assert min(r["prompt_tokens"] for r in warms) >= control_prompt - 16, (limited_prompt, control_prompt, warms)  # none is sk-c's

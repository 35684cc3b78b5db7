"""Learning from usage.prompt_tokens through a real proxy: when the estimator under-counts the
served tokenizer (here forced: ratio estimator at 12 / 16 characters per token against the
emulator's ~4.6), the first overflow costs a failed attempt on fast; after eight responses the
plugin has learned the factor and routes the same overflow to slow before dispatch. With
``KVWARM_LEARN_FROM_USAGE=0`` it keeps failing on fast first (the control)."""

from __future__ import annotations

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from litellm_kvwarm.lab.processes import BackendSpec, proxy_config, start_emulator, start_proxy

from e2e_support import backend_requests, clear_backends, long_text

pytestmark = pytest.mark.e2e

FAST_WINDOW, SLOW_WINDOW = 4_096, 16_384
UNDER_COUNTING = {  # estimates ~3–4× below the emulator's own count
    "KVWARM_ESTIMATOR": "ratio", "KVWARM_SAFE_CHARS_PER_TOKEN": 12, "KVWARM_ROUTING_CHARS_PER_TOKEN": 16,
    "KVWARM_EXACT_COUNT": 0, "KVWARM_WARM_AHEAD": 0, "KVWARM_REQUEST_BUDGET_MS": 2000,
}


@pytest.fixture(scope="module")
def backends(tmp_path_factory):
    work = tmp_path_factory.mktemp("learning")
    fast = start_emulator("fast-8b", FAST_WINDOW, workdir=work, time_scale=0)
    slow = start_emulator("slow-27b", SLOW_WINDOW, workdir=work, time_scale=0)
    yield {"fast": fast, "slow": slow, "work": work}
    fast.stop()
    slow.stop()


def _proxy(backends, name, learn):
    groups = {"fast": [BackendSpec.of(backends["fast"], "fast-8b")], "slow": [BackendSpec.of(backends["slow"], "slow-27b")]}
    env = dict(UNDER_COUNTING, KVWARM_LEARN_FROM_USAGE=int(learn))
    config = proxy_config(groups, callbacks=["litellm_kvwarm.proxy_handler_instance", "prometheus"], env_vars=env)
    return start_proxy(config, workdir=backends["work"] / name)


def _chat(proxy, chars):
    return httpx.post(
        proxy.base_url + "/v1/chat/completions",
        json={"model": "fast", "messages": [{"role": "user", "content": long_text(chars)}], "max_tokens": 16},
        headers={"Authorization": f"Bearer {proxy.master_key}"}, timeout=60,
    )


def _overflow_attempts(backends, proxy) -> tuple[list[int], list[int]]:
    """Send one request of ~4,600 true tokens (over fast's 4,096); the statuses fast and slow saw for it."""
    clear_backends(backends["fast"], backends["slow"])
    assert _chat(proxy, 21_000).status_code == 200
    return ([r["status"] for r in backend_requests(backends["fast"])], [r["status"] for r in backend_requests(backends["slow"])])


def _correction(proxy) -> dict[str, float]:
    text = httpx.get(proxy.base_url + "/metrics", headers={"Authorization": f"Bearer {proxy.master_key}"},
                     timeout=30, follow_redirects=True).text
    return {s.labels["estimate"]: s.value for f in text_string_to_metric_families(text) for s in f.samples
            if s.name == "kvwarm_estimate_correction" and s.labels.get("model_group") == "fast"}


@pytest.mark.parametrize("learn", [True, False], ids=["learning", "control"])
def test_after_eight_responses_the_overflow_goes_to_slow_first(backends, learn):
    proxy = _proxy(backends, f"proxy-{learn}", learn)
    try:
        fast_first, slow_first = _overflow_attempts(backends, proxy)
        assert fast_first == [400] and slow_first == [200]  # under-counted: tried on fast, escalated by the backstop
        clear_backends(backends["fast"], backends["slow"])
        for _ in range(8):  # ~440 true tokens each, estimated at ~130: each response is a lesson
            assert _chat(proxy, 2_000).status_code == 200
        truths = [r["prompt_tokens"] for r in backend_requests(backends["fast"])]
        assert len(truths) == 8 and min(truths) > 400
        fast_after, slow_after = _overflow_attempts(backends, proxy)
        if learn:
            factors = _correction(proxy)
            assert factors["routing"] > 3.0 and factors["safe"] > 2.0  # truth ÷ estimate, learned
            assert fast_after == [] and slow_after == [200]  # routed before dispatch: no failed attempt
        else:
            assert _correction(proxy) == {}
            assert fast_after == [400] and slow_after == [200]
    finally:
        proxy.stop()


KEYS = {"sk-team-a": {"team_id": "team-a"}, "sk-team-b": {"team_id": "team-b"}}


def test_one_tenants_skewed_traffic_leaves_another_tenants_routing_unchanged(backends):
    """Fault (issue 12): the learned factor was per model group, shared by every tenant: 64
    requests of one team whose text the estimator under-counts moved everyone's routing."""
    import json
    import shutil
    from pathlib import Path

    pdir = backends["work"] / "proxy-tenants"
    pdir.mkdir()
    shutil.copy(Path(__file__).resolve().parent / "auth_fixture.py", pdir / "auth_fixture.py")
    groups = {"fast": [BackendSpec.of(backends["fast"], "fast-8b")], "slow": [BackendSpec.of(backends["slow"], "slow-27b")]}
    config = proxy_config(groups, callbacks=["litellm_kvwarm.proxy_handler_instance", "prometheus"],
                          env_vars=dict(UNDER_COUNTING, KVWARM_LEARN_FROM_USAGE=1),
                          general_settings={"custom_auth": "auth_fixture.user_api_key_auth"},
                          litellm_settings={"require_auth_for_metrics_endpoint": False})
    proxy = start_proxy(config, workdir=pdir, env={"KVWARM_TEST_KEYS": json.dumps(KEYS)})

    def as_team(key, chars):
        return httpx.post(proxy.base_url + "/v1/chat/completions", timeout=60, headers={"Authorization": f"Bearer {key}"},
                          json={"model": "fast", "messages": [{"role": "user", "content": long_text(chars)}], "max_tokens": 16})

    def overflow(key):
        clear_backends(backends["fast"], backends["slow"])
        assert as_team(key, 21_000).status_code == 200
        return [r["status"] for r in backend_requests(backends["fast"])], [r["status"] for r in backend_requests(backends["slow"])]

    try:
        assert overflow("sk-team-a") == ([400], [200])  # team A before: under-counted, caught by the backstop
        for _ in range(64):  # team B's skewed traffic: every response says "more tokens than estimated"
            assert as_team("sk-team-b", 2_000).status_code == 200
        assert overflow("sk-team-b") == ([], [200])  # team B learned its own factor: routed before dispatch
        assert overflow("sk-team-a") == ([400], [200])  # team A's routing is what it was
        factors = _correction(proxy)
        assert factors["routing"] > 3.0  # visible per group: the largest factor among its tenants
    finally:
        proxy.stop()

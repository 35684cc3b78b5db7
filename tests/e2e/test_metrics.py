"""The plugin's Prometheus metrics on LiteLLM's own /metrics, after a scripted session, and
under two proxy workers sharing PROMETHEUS_MULTIPROC_DIR."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from litellm_kvwarm.lab.processes import BackendSpec, proxy_config, start_emulator, start_proxy
from litellm_kvwarm.tokens import calibrated_estimator, estimate_request

from e2e_support import backend_requests, long_text

pytestmark = pytest.mark.e2e

FAST_WINDOW, SLOW_WINDOW = 4_096, 16_384
CALLBACKS = ["litellm_kvwarm.proxy_handler_instance", "prometheus"]


def scrape(proxy) -> dict[tuple[str, tuple], float]:
    response = httpx.get(
        proxy.base_url + "/metrics", headers={"Authorization": f"Bearer {proxy.master_key}"}, timeout=30, follow_redirects=True
    )
    assert response.status_code == 200, response.text[:300]
    text = response.text
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def value(samples, name, **labels) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def total(samples, name, **labels) -> float:
    return sum(v for (n, lab), v in samples.items() if n == name and all(dict(lab).get(k) == x for k, x in labels.items()))


def wait_until(proxy, ready, timeout_s: float = 15.0) -> dict[tuple[str, tuple], float]:
    """Scrape until ``ready(samples)`` or the deadline; returns the last scrape (the test's
    asserts then say what is missing)."""
    deadline = time.monotonic() + timeout_s
    samples = scrape(proxy)
    while not ready(samples) and time.monotonic() < deadline:
        time.sleep(0.1)
        samples = scrape(proxy)
    return samples


@pytest.fixture(scope="module")
def backends(tmp_path_factory):
    work = tmp_path_factory.mktemp("metrics")
    fast = start_emulator("fast-8b", FAST_WINDOW, workdir=work, time_scale=0)
    slow = start_emulator("slow-27b", SLOW_WINDOW, workdir=work, time_scale=0)
    yield {"fast": fast, "slow": slow, "work": work}
    fast.stop()
    slow.stop()


def groups(backends):
    return {"fast": [BackendSpec.of(backends["fast"], "fast-8b")], "slow": [BackendSpec.of(backends["slow"], "slow-27b")]}


def chat(proxy, messages, session="s-1", max_tokens=16):
    return httpx.post(
        proxy.base_url + "/v1/chat/completions",
        json={"model": "fast", "messages": messages, "max_tokens": max_tokens},
        headers={"Authorization": f"Bearer {proxy.master_key}", "x-litellm-session-id": session},
        timeout=60,
    )


def test_scripted_session_exact_counts_and_escalated_cached_fraction(backends):
    config = proxy_config(
        groups(backends), callbacks=CALLBACKS,
        env_vars={"KVWARM_REQUEST_BUDGET_MS": 2000, "KVWARM_BACKEND_SCRAPE_INTERVAL_S": 0.5,
                  "KVWARM_REPLY_WARM": 0, "KVWARM_WARM_PRIORITY": 0,
                  "KVWARM_WARM_PIECE_TOKENS": 0},  # warm-ahead alone, one request each (reply-warms: test_reply_warm.py)
    )
    proxy = start_proxy(config, workdir=backends["work"] / "single")
    try:
        system = {"role": "system", "content": "You are helpful."}
        below = [system, {"role": "user", "content": long_text(2_000)}]
        crossing = below + [{"role": "assistant", "content": "ok"}, {"role": "user", "content": long_text(12_000)}]  # ≈2,980 tokens: past 60% of 4,096
        escalating = crossing + [{"role": "assistant", "content": "ok"}, {"role": "user", "content": long_text(20_000)}]
        # preconditions, on the plugin's own estimator: below stays under the warm threshold,
        # crossing passes it and still fits fast, escalating cannot fit fast
        estimate = lambda m: estimate_request({"model": "fast", "messages": m, "max_tokens": 16},  # noqa: E731
                                              estimator=calibrated_estimator("fast-8b")).routing
        assert estimate(below) < 0.6 * FAST_WINDOW <= estimate(crossing) <= FAST_WINDOW - 256 < estimate(escalating)
        for messages in (below, crossing):
            assert chat(proxy, messages).status_code == 200
        # the warm has finished (counted) before the escalated request, so it finds the cache
        wait_until(proxy, lambda s: value(s, "kvwarm_warms_total", outcome="succeeded", target="slow") >= 1)
        assert chat(proxy, escalating).status_code == 200
        # success callbacks and one scrape round of the backends run after the response
        slow_label = f"127.0.0.1:{backends['slow'].port}/slow-27b"
        samples = wait_until(proxy, lambda s: (
            value(s, "kvwarm_prompt_tokens_total", model_group="slow", request_kind="escalated") > 0
            and value(s, "kvwarm_estimate_ratio_count", model_group="fast", estimate="routing") >= 2
            and value(s, "kvwarm_backend_prefix_cache_hit_ratio", deployment=slow_label) > 0
        ))
    finally:
        proxy.stop()

    decisions = "kvwarm_route_decisions_total"
    assert value(samples, decisions, kind="stay", source="fast", target="slow") == 2
    assert value(samples, decisions, kind="proactive", source="fast", target="slow") == 1
    assert total(samples, decisions) == 3 + total(samples, decisions, source="slow")
    warms = "kvwarm_warms_total"
    assert value(samples, warms, outcome="skipped_below_threshold", target="slow", trigger="ahead") == 1
    assert value(samples, warms, outcome="fired", target="slow", trigger="ahead") == 1
    assert value(samples, warms, outcome="succeeded", target="slow", trigger="ahead") == 1
    assert value(samples, "kvwarm_warm_duration_seconds_count", target="slow") == 1
    assert value(samples, "kvwarm_discovered_window_tokens", deployment=f"127.0.0.1:{backends['fast'].port}/fast-8b") == FAST_WINDOW

    slow_rows = backend_requests(backends["slow"])
    (warm,) = [r for r in slow_rows if r["max_tokens"] == 1]
    (escalated,) = [r for r in slow_rows if r["max_tokens"] != 1]
    assert value(samples, "kvwarm_prompt_tokens_total", model_group="slow", request_kind="escalated") == escalated["prompt_tokens"]
    assert value(samples, "kvwarm_cached_prompt_tokens_total", model_group="slow", request_kind="escalated") == escalated["cached_tokens"]
    assert value(samples, "kvwarm_prompt_tokens_total", model_group="slow", request_kind="warm") == warm["prompt_tokens"]
    fast_prompt = sum(r["prompt_tokens"] for r in backend_requests(backends["fast"]))
    assert value(samples, "kvwarm_prompt_tokens_total", model_group="fast", request_kind="normal") == fast_prompt
    assert escalated["cached_tokens"] > 0.3 * escalated["prompt_tokens"]
    # the escalated request's cached fraction, as an operator's histogram
    assert value(samples, "kvwarm_escalation_cached_ratio_count", model_group="slow") == 1
    assert value(samples, "kvwarm_escalation_cached_ratio_sum", model_group="slow") == pytest.approx(
        escalated["cached_tokens"] / escalated["prompt_tokens"])
    assert value(samples, "kvwarm_estimate_ratio_count", model_group="fast", estimate="routing") == 2
    assert value(samples, "kvwarm_plugin_seconds_count", hook="pre_call") == 3
    # one success-hook call per successful attempt: the three client requests and the warm
    assert value(samples, "kvwarm_plugin_seconds_count", hook="success") == 4
    # the backend's own counters, scraped (warms included)
    assert 0 < value(samples, "kvwarm_backend_prefix_cache_hit_ratio", deployment=slow_label) < 1


def test_two_workers_totals_equal_requests_sent(backends, tmp_path):
    multiproc = tmp_path / "prom"
    multiproc.mkdir()
    config = proxy_config(groups(backends), callbacks=CALLBACKS, env_vars={"KVWARM_WARM_AHEAD": 0})
    proxy = start_proxy(
        config, workdir=tmp_path / "proxy", env={"PROMETHEUS_MULTIPROC_DIR": str(multiproc)},
        # two workers import LiteLLM at once on 2 cores: slower than uvicorn's 5 s worker health check
        extra_args=["--num_workers", "2", "--timeout_worker_healthcheck", "120"],
        health_timeout_s=180,
    )
    sent = 24
    try:
        with ThreadPoolExecutor(6) as pool:
            codes = list(pool.map(lambda i: chat(proxy, [{"role": "user", "content": f"hello {i}"}], session=f"w{i}").status_code, range(sent)))
        assert codes == [200] * sent
        # the pre-call hook counts before each response; the other worker's file may lag a scrape
        samples = wait_until(proxy, lambda s: total(s, "kvwarm_route_decisions_total") >= sent)
    finally:
        proxy.stop()
    assert total(samples, "kvwarm_route_decisions_total") == sent
    assert total(samples, "kvwarm_plugin_seconds_count", hook="pre_call") == sent
    pids = {p.name.split("_")[-1] for p in multiproc.glob("*.db")}
    assert len(pids) >= 2, f"expected files from two worker processes, found {sorted(p.name for p in multiproc.glob('*.db'))}"

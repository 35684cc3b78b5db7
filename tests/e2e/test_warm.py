"""Warm-ahead end to end: real proxies (two sharing a real Redis, one with the switch off),
emulated backends (fast, two slow replicas, a slow group of unknown window), custom auth that
attaches tenant identities as virtual keys would."""

from __future__ import annotations

import json
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from prometheus_client.parser import text_string_to_metric_families

from litellm_kvwarm.lab.processes import BackendSpec, proxy_config, start_emulator, start_proxy
from litellm_kvwarm.tokens import calibrated_estimator, estimate_request
from redis_support import RedisServer

from e2e_support import backend_requests, clear_backends, long_text

pytestmark = pytest.mark.e2e

FAST_WINDOW, SLOW_WINDOW, BLOCK = 4_096, 16_384, 16
KEYS = {
    "sk-team-a": {"team_id": "team-a", "user_id": "alice"},
    "sk-team-b": {"team_id": "team-b", "user_id": "bob"},
    "sk-fast-only": {"team_id": "team-c", "models": ["fast", "fast-u"]},
}
HERE = Path(__file__).resolve().parent
# the plugin, and LiteLLM's Prometheus callback so the tests read the plugin's own outcome counters
CALLBACKS = ["litellm_kvwarm.proxy_handler_instance", "prometheus"]
WARM_THRESHOLD, OUTPUT_FLOOR = 0.6, 256  # the plugin's defaults (KVWARM_WARM_THRESHOLD, KVWARM_OUTPUT_FLOOR_TOKENS)


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    work = tmp_path_factory.mktemp("warm")
    redis = RedisServer(work).start()
    emulators = {}
    try:
        emulators["fast"] = start_emulator("fast-8b", FAST_WINDOW, workdir=work, time_scale=0, block_size=BLOCK)
        emulators["slow_a"] = start_emulator("slow-27b", SLOW_WINDOW, workdir=work, time_scale=0, block_size=BLOCK)
        emulators["slow_b"] = start_emulator("slow-27b", SLOW_WINDOW, workdir=work, time_scale=0, block_size=BLOCK)
        emulators["slow_u"] = start_emulator("slow-u", SLOW_WINDOW, workdir=work, time_scale=0, extra_args=["--hide-max-model-len"])
        groups = {
            "fast": [BackendSpec.of(emulators["fast"], "fast-8b")],
            "slow": [BackendSpec.of(emulators["slow_a"], "slow-27b"), BackendSpec.of(emulators["slow_b"], "slow-27b")],
            "fast-u": [BackendSpec.of(emulators["fast"], "fast-8b")],
            "slow-u": [BackendSpec.of(emulators["slow_u"], "slow-u")],
        }
        env = {
            "KVWARM_REDIS_URL": redis.url,
            "KVWARM_CACHE_SALT_SECRET": "test-secret-not-for-production",
            "KVWARM_REQUEST_BUDGET_MS": 2000,
            # warm-ahead alone, counted warm by warm (reply-warms and the warm priority: test_reply_warm.py)
            "KVWARM_REPLY_WARM": 0,
            "KVWARM_WARM_PRIORITY": 0,
            # each warm as one request, so a request on slow is a warm (pieces: tests/e2e/test_warm_in_pieces.py)
            "KVWARM_WARM_PIECE_TOKENS": 0,
        }
        general = {"custom_auth": "auth_fixture.user_api_key_auth"}
        child_env = {"KVWARM_TEST_KEYS": json.dumps(KEYS)}

        def launch(name, extra_env):
            pdir = work / name
            pdir.mkdir()
            shutil.copy(HERE / "auth_fixture.py", pdir / "auth_fixture.py")
            config = proxy_config(
                groups,
                fallbacks=[{"fast": ["slow"]}, {"fast-u": ["slow-u"]}],
                env_vars={**env, **extra_env},
                general_settings=general,
                callbacks=CALLBACKS,
            )
            return start_proxy(config, workdir=pdir, env=child_env)

        with ThreadPoolExecutor(3) as pool:
            futures = {
                "a": pool.submit(launch, "proxy-a", {}),
                "b": pool.submit(launch, "proxy-b", {}),
                "off": pool.submit(launch, "proxy-off", {"KVWARM_WARM_AHEAD": "0"}),
            }
            proxies = {k: f.result() for k, f in futures.items()}
    except Exception:
        for proc in emulators.values():
            proc.stop()
        redis.stop()
        raise
    yield {"redis": redis, **emulators, "proxies": proxies}
    for proc in [*proxies.values(), *emulators.values()]:
        proc.stop()
    redis.stop()


@pytest.fixture(autouse=True)
def _clean(stack):
    clear_backends(stack["fast"], stack["slow_a"], stack["slow_b"], stack["slow_u"])


def send(proxy, key, session, messages, group="fast", max_tokens=16):
    return httpx.post(
        proxy.base_url + "/v1/chat/completions",
        json={"model": group, "messages": messages, "max_tokens": max_tokens},
        headers={"Authorization": f"Bearer {key}", "x-litellm-session-id": session},
        timeout=60,
    )


def conversation(tag: str, chars: int) -> list[dict]:
    return [
        {"role": "system", "content": f"You are assistant {tag}."},
        {"role": "user", "content": long_text(chars)},
    ]


def warms(stack, *names) -> list[dict]:
    names = names or ("slow_a", "slow_b")
    return [dict(r, replica=n) for n in names for r in backend_requests(stack[n]) if r["max_tokens"] == 1]


def wait_for_warms(stack, count, *names, timeout=10.0) -> list[dict]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = warms(stack, *names)
        if len(found) >= count:
            return found
        time.sleep(0.05)
    return warms(stack, *names)


NEAR = 14_000  # chars: ≈2,970 tokens (routing estimate ≈2,950) ≥ 60% of 4,096, still fits fast
FAR = 30_000  # chars: cannot fit fast
BELOW = 4_000  # chars: ≈850 tokens, under 60% of 4,096


def routing_estimate(messages) -> int:
    """The plugin's routing estimate of a request to ``fast`` (served model ``fast-8b``: the
    calibrated ``any`` weights, as the proxy picks them)."""
    return estimate_request({"model": "fast", "messages": messages, "max_tokens": 16},
                            estimator=calibrated_estimator("fast-8b")).routing


def test_the_sizes_mean_what_the_tests_rely_on():
    """Preconditions of every test below, on the plugin's own estimator: a retuned estimator
    fails here instead of letting a warm test pass without a warm being considered."""
    near, below = routing_estimate(conversation("near", NEAR)), routing_estimate(conversation("below", BELOW))
    assert WARM_THRESHOLD * FAST_WINDOW <= near and near + OUTPUT_FLOOR <= FAST_WINDOW, near
    assert below < WARM_THRESHOLD * FAST_WINDOW, below
    grown = conversation("far", NEAR) + [{"role": "assistant", "content": "Noted."}, {"role": "user", "content": long_text(FAR)}]
    assert routing_estimate(grown) + OUTPUT_FLOOR > FAST_WINDOW


TERMINAL = ("fired", "skipped_cooldown", "skipped_tenant_rate")  # a warm candidate's last outcome before sending


def counters(proxy) -> dict[tuple[str, tuple], float]:
    """The proxy's /metrics samples: {(name, sorted labels): value}."""
    response = httpx.get(proxy.base_url + "/metrics", headers={"Authorization": "Bearer sk-team-a"}, timeout=30,
                         follow_redirects=True)
    assert response.status_code == 200, response.text[:300]
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def total(samples, name: str, **labels: str) -> float:
    return sum(v for (n, lab), v in samples.items() if n == name and all(dict(lab).get(k) == x for k, x in labels.items()))


class Outcomes:
    """Deltas of the plugin's warm counters on some proxies since construction.

    Every outcome of the warm gate (``queued`` or ``skipped_*``) is counted inside the pre-call
    hook, before the response is sent; a queued warm ends ``fired``, ``skipped_cooldown``,
    ``skipped_tenant_rate`` or in ``kvwarm_warm_queue_drops_total``. So "no warm" is proven by
    counters, not by waiting and seeing nothing."""

    def __init__(self, stack, *proxies: str):
        self.proxies = [stack["proxies"][p] for p in proxies]
        self.before = [counters(p) for p in self.proxies]

    def delta(self, name: str, **labels: str) -> float:
        return sum(total(counters(p), name, **labels) - total(b, name, **labels) for p, b in zip(self.proxies, self.before))

    def warms(self, outcome: str) -> float:
        return self.delta("kvwarm_warms_total", outcome=outcome)

    def settled(self, candidates: int, timeout: float = 10.0) -> None:
        """Wait until ``candidates`` warm candidates reached their last outcome before sending."""
        deadline, done = time.monotonic() + timeout, -1.0
        while time.monotonic() < deadline:
            done = sum(self.warms(o) for o in TERMINAL) + self.delta("kvwarm_warm_queue_drops_total")
            if done >= candidates:
                break
            time.sleep(0.05)
        assert done == candidates, f"{done} of {candidates} warm candidates settled"


def test_below_threshold_does_not_warm(stack):
    outcomes = Outcomes(stack, "a")
    response = send(stack["proxies"]["a"], "sk-team-a", "s-below", conversation("below", BELOW))
    assert response.status_code == 200
    assert outcomes.warms("skipped_below_threshold") == 1 and outcomes.warms("queued") == 0
    assert warms(stack) == []


def test_crossing_threshold_warms_once_then_cooldown_holds_across_proxies(stack):
    msgs = conversation("cross", NEAR)
    outcomes = Outcomes(stack, "a", "b")
    assert send(stack["proxies"]["a"], "sk-team-a", "s-cross", msgs).status_code == 200
    fired = wait_for_warms(stack, 1)
    assert len(fired) == 1 and fired[0]["status"] == 200 and fired[0]["stream"] is False
    assert [r["status"] for r in backend_requests(stack["fast"])] == [200]  # the request itself stayed on fast
    # the same session again, through both proxies (they share Redis): no second warm
    for proxy in ("a", "b", "b"):
        assert send(stack["proxies"][proxy], "sk-team-a", "s-cross", msgs).status_code == 200
    outcomes.settled(4)
    assert outcomes.warms("fired") == 1 and outcomes.warms("skipped_cooldown") >= 2
    assert len(warms(stack)) == 1


def test_two_proxies_sharing_redis_fire_exactly_one_warm_for_a_new_session(stack):
    msgs = conversation("race", NEAR)
    outcomes = Outcomes(stack, "a", "b")
    with ThreadPoolExecutor(4) as pool:
        codes = list(pool.map(lambda p: send(stack["proxies"][p], "sk-team-a", "s-race", msgs).status_code, ["a", "b", "a", "b"]))
    assert codes == [200] * 4
    assert len(wait_for_warms(stack, 1)) >= 1
    outcomes.settled(4)
    assert outcomes.warms("fired") == 1
    assert len(warms(stack)) == 1


def test_switch_off_does_not_warm(stack):
    outcomes = Outcomes(stack, "off")
    assert send(stack["proxies"]["off"], "sk-team-a", "s-off", conversation("off", NEAR)).status_code == 200
    assert outcomes.warms("skipped_disabled") == 1 and outcomes.warms("queued") == 0
    assert warms(stack) == []


def test_unknown_target_model_does_not_warm(stack):
    outcomes = Outcomes(stack, "a")
    response = send(stack["proxies"]["a"], "sk-team-a", "s-unknown", conversation("unknown", NEAR), group="fast-u")
    assert response.status_code == 200
    assert outcomes.warms("skipped_unknown_model") == 1 and outcomes.warms("queued") == 0
    assert backend_requests(stack["slow_u"]) == []


def test_key_that_may_not_use_target_does_not_warm(stack):
    outcomes = Outcomes(stack, "a")
    response = send(stack["proxies"]["a"], "sk-fast-only", "s-forbidden", conversation("forbidden", NEAR))
    assert response.status_code == 200
    # the key's chain has no step it may use: the request stays, and no warm candidate exists at all
    # (every candidate is counted, queued or skipped, before the response is sent)
    assert outcomes.delta("kvwarm_route_decisions_total", kind="stay", source="fast") == 1
    assert outcomes.delta("kvwarm_warms_total") == 0
    assert warms(stack) == []


@pytest.mark.parametrize("trial", range(4))
def test_escalated_request_hits_the_warmed_replica(stack, trial):
    session = f"s-hit-{trial}"
    first = conversation(f"hit-{trial}", NEAR)
    assert send(stack["proxies"]["a"], "sk-team-a", session, first).status_code == 200
    fired = wait_for_warms(stack, 1)
    assert len(fired) == 1
    warm = fired[0]
    # the conversation grows past the fast window: escalated proactively (through the other proxy)
    grown = first + [{"role": "assistant", "content": "Noted."}, {"role": "user", "content": long_text(FAR)}]
    assert send(stack["proxies"]["b"], "sk-team-a", session, grown).status_code == 200
    escalated = [dict(r, replica=n) for n in ("slow_a", "slow_b") for r in backend_requests(stack[n]) if r["max_tokens"] != 1]
    assert len(escalated) == 1
    hit = escalated[0]
    assert hit["replica"] == warm["replica"], "escalated request went to the other replica"
    warmed_blocks = (warm["prompt_tokens"] // BLOCK) * BLOCK
    assert hit["cached_tokens"] >= warmed_blocks - BLOCK  # the whole warmed prefix, to block granularity
    assert hit["cached_tokens"] > 0.9 * warm["prompt_tokens"] - BLOCK


def test_escalated_prompt_starts_with_the_warm_prompt_token_for_token(stack):
    first = conversation("tokens", NEAR)
    grown = first + [{"role": "assistant", "content": "Noted."}, {"role": "user", "content": "more"}]
    def ids(messages):
        r = httpx.post(stack["slow_a"].base_url + "/tokenize", json={"model": "slow-27b", "messages": messages}, timeout=30)
        return r.json()["tokens"]
    warm_ids, grown_ids = ids(first), ids(grown)
    assert grown_ids[: len(warm_ids)] == warm_ids


def test_tenants_never_share_cache_but_own_warm_hits(stack):
    shared = conversation("tenants", NEAR)
    grown = shared + [{"role": "assistant", "content": "Noted."}, {"role": "user", "content": long_text(FAR)}]
    assert send(stack["proxies"]["a"], "sk-team-a", "s-tenant", shared).status_code == 200
    assert len(wait_for_warms(stack, 1)) == 1
    # tenant B sends tenant A's exact escalated conversation: no hit on A's warmed blocks
    assert send(stack["proxies"]["a"], "sk-team-b", "s-tenant", grown).status_code == 200
    # tenant A's escalation hits its own warm
    assert send(stack["proxies"]["a"], "sk-team-a", "s-tenant", grown).status_code == 200
    real = [r for n in ("slow_a", "slow_b") for r in backend_requests(stack[n]) if r["max_tokens"] != 1]
    by_salt = {}
    for r in real:
        by_salt.setdefault(r["cache_salt"], []).append(r)
    assert len(by_salt) == 2 and None not in by_salt
    warm_salt = warms(stack)[0]["cache_salt"]
    (b_request,) = [r for salt, rows in by_salt.items() if salt != warm_salt for r in rows]
    (a_request,) = by_salt[warm_salt]
    assert b_request["cached_tokens"] == 0
    assert a_request["cached_tokens"] > 0.9 * warms(stack)[0]["prompt_tokens"] - BLOCK


def test_client_sent_cache_salt_is_replaced(stack):
    body = {"model": "fast", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4, "cache_salt": "evil"}
    r = httpx.post(stack["proxies"]["a"].base_url + "/v1/chat/completions", json=body, headers={"Authorization": "Bearer sk-team-a"}, timeout=30)
    assert r.status_code == 200
    import hashlib
    (row,) = backend_requests(stack["fast"])
    assert row["cache_salt"] is not None and row["cache_salt"] != hashlib.sha256(b"evil").hexdigest()[:16]


def test_redis_stopped_mid_run_requests_succeed_and_warms_continue(stack):
    outcomes = Outcomes(stack, "a")
    stack["redis"].stop()
    try:
        for i in range(3):
            r = send(stack["proxies"]["a"], "sk-team-a", f"s-noredis-{i}", conversation(f"noredis-{i}", NEAR))
            assert r.status_code == 200
        assert len(wait_for_warms(stack, 3)) == 3  # one warm per new session, from the memory store
        assert send(stack["proxies"]["a"], "sk-team-a", "s-noredis-0", conversation("noredis-0", NEAR)).status_code == 200
        outcomes.settled(4)
        assert outcomes.warms("fired") == 3 and outcomes.warms("skipped_cooldown") == 1
        assert len(warms(stack)) == 3  # the memory store keeps the cooldown
    finally:
        stack["redis"].start()

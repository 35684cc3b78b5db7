"""A burst of sessions crossing the warm threshold at once, end to end (issue 12, item 4).

Real processes: a ``litellm --config`` proxy with the plugin (default warm settings: 4 warms in
flight, a queue of 1,024, 120 warms per tenant per minute), a real Redis for the shared
cooldown, emulated backends (``fast`` with a 4,096-token window, ``slow`` with 16,384 whose
prefill takes real time). 100 sessions each send one request of 60–75% of ``fast``'s window,
all at once. Before the queue, 19 warms fired and the other sessions were never warmed; now
every session's warm must reach ``slow`` exactly once, none dropped.

Each session's conversation renders to a different prompt length on ``slow`` (checked with
its ``/tokenize``), so a warm in ``slow``'s request log (``max_tokens == 1``) names its session
by its ``prompt_tokens``.

The same stack shows who a warm is charged to (item 10): a logging callback in the proxy
records LiteLLM's standard logging payload of every call; a warm's carries the caller's key
hash, team and user (what spend tracking reads) and never the raw session id.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
import time
from collections import Counter
from pathlib import Path

import httpx
import pytest

from litellm_kvwarm.config import Settings
from litellm_kvwarm.lab.processes import BackendSpec, proxy_config, start_emulator, start_proxy
from redis_support import RedisServer

from e2e_support import backend_requests, long_text, tokenize_count

pytestmark = pytest.mark.e2e

FAST_WINDOW, SLOW_WINDOW = 4_096, 16_384
SESSIONS = 100
BASE_CHARS, STEP_CHARS = 12_800, 20  # ≈2,700 … 3,140 tokens: past 60% of fast's window, still fitting it
WARM_WAIT_S = 60.0
KEYS = {"sk-team-a": {"team_id": "team-a", "user_id": "alice"}}
HERE = Path(__file__).resolve().parent
PROBE = '''"""Records each successful call's standard logging metadata (test probe)."""
import json
import os

from litellm.integrations.custom_logger import CustomLogger


class Probe(CustomLogger):
    async def async_log_success_event(self, kwargs, response_obj, start_time, end_time):
        meta = (kwargs.get("litellm_params") or {}).get("metadata") or {}
        standard = kwargs.get("standard_logging_object") or {}
        row = {"warm": bool(meta.get("kvwarm_warm")), "model_group": standard.get("model_group"),
               "standard_metadata": standard.get("metadata"), "metadata": meta}
        with open(os.environ["KVWARM_TEST_PROBE_LOG"], "a", encoding="utf-8") as out:
            out.write(json.dumps(row, default=str) + "\\n")


probe = Probe()
'''


def conversation(i: int) -> list[dict]:
    return [
        {"role": "system", "content": f"You are assistant number {i}."},
        {"role": "user", "content": long_text(BASE_CHARS + STEP_CHARS * i)},
    ]


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    assert Settings().warm_tenant_rate == 0 or Settings().warm_tenant_rate >= SESSIONS, "default tenant rate below the burst"
    work = tmp_path_factory.mktemp("warm-burst")
    redis = RedisServer(work).start()
    procs = []
    try:
        fast = start_emulator("fast-8b", FAST_WINDOW, workdir=work, time_scale=0)
        procs.append(fast)
        # 5,000 prompt tokens/s × 0.1: a 3,000-token warm takes ≈0.06 s of prefill, so warms overlap
        slow = start_emulator("slow-27b", SLOW_WINDOW, workdir=work, time_scale=0.1)
        procs.append(slow)
        pdir = work / "proxy"
        pdir.mkdir()
        shutil.copy(HERE / "auth_fixture.py", pdir / "auth_fixture.py")
        (pdir / "spend_probe.py").write_text(PROBE)
        probe_log = work / "probe.jsonl"
        config = proxy_config(
            {"fast": [BackendSpec.of(fast, "fast-8b")], "slow": [BackendSpec.of(slow, "slow-27b")]},
            callbacks=["litellm_kvwarm.proxy_handler_instance", "prometheus", "spend_probe.probe"],
            env_vars={"KVWARM_REDIS_URL": redis.url, "KVWARM_HASH_SECRET": "burst-test-secret", "KVWARM_REQUEST_BUDGET_MS": 2000,
                      "KVWARM_REPLY_WARM": 0, "KVWARM_WARM_PRIORITY": 0,
                      "KVWARM_WARM_PIECE_TOKENS": 0},  # one request per warm and session (reply-warms: test_reply_warm.py, pieces: test_warm_in_pieces.py)
            general_settings={"custom_auth": "auth_fixture.user_api_key_auth"},
            litellm_settings={"require_auth_for_metrics_endpoint": False},  # custom auth knows no master key
        )
        proxy = start_proxy(config, workdir=pdir, env={"KVWARM_TEST_KEYS": json.dumps(KEYS), "KVWARM_TEST_PROBE_LOG": str(probe_log)})
        procs.append(proxy)
    except Exception:
        for proc in procs:
            proc.stop()
        redis.stop()
        raise
    yield {"fast": fast, "slow": slow, "proxy": proxy, "redis": redis, "probe_log": probe_log}
    for proc in reversed(procs):
        proc.stop()
    redis.stop()


def warm_rows(slow) -> list[dict]:
    return [r for r in backend_requests(slow) if r["max_tokens"] == 1]


def metric_total(proxy, name: str, **labels: str) -> float:
    from prometheus_client.parser import text_string_to_metric_families

    response = httpx.get(proxy.base_url + "/metrics", timeout=30, follow_redirects=True)
    assert response.status_code == 200, response.text[:300]
    text = response.text
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items())
    )


async def send_all(proxy) -> list[int]:
    limits = httpx.Limits(max_connections=SESSIONS, max_keepalive_connections=SESSIONS)
    async with httpx.AsyncClient(base_url=proxy.base_url, limits=limits, timeout=120) as client:
        async def one(i: int) -> int:
            response = await client.post(
                "/v1/chat/completions",
                json={"model": "fast", "messages": conversation(i), "max_tokens": 16},
                headers={"Authorization": "Bearer sk-team-a", "x-litellm-session-id": f"burst-{i:03d}"},
            )
            return response.status_code

        return await asyncio.gather(*(one(i) for i in range(SESSIONS)))


def test_a_burst_of_100_sessions_gets_exactly_one_warm_each(stack):
    fast, slow, proxy = stack["fast"], stack["slow"], stack["proxy"]
    # every session: past the threshold on fast, and a prompt length of its own on slow
    fast_tokens = [tokenize_count(fast, "fast-8b", conversation(i)) for i in range(SESSIONS)]
    assert min(fast_tokens) >= 0.6 * FAST_WINDOW and max(fast_tokens) + 16 <= FAST_WINDOW
    expected = {tokenize_count(slow, "slow-27b", conversation(i)): i for i in range(SESSIONS)}
    assert len(expected) == SESSIONS, "two sessions render to the same length: the log could not tell their warms apart"

    started = time.monotonic()
    codes = asyncio.run(send_all(proxy))
    assert codes == [200] * SESSIONS
    served = [r for r in backend_requests(fast) if r["max_tokens"] != 1]
    assert len(served) == SESSIONS and all(r["status"] == 200 for r in served)  # every request stayed on fast

    deadline = time.monotonic() + WARM_WAIT_S
    while time.monotonic() < deadline and len(warm_rows(slow)) < SESSIONS:
        time.sleep(0.2)
    all_warmed_s = time.monotonic() - started
    # every candidate has a counted end: each of the 100 was queued once, and all fired warms
    # finished (a late or duplicated warm would show as more than 100 queued or fired)
    while time.monotonic() < deadline and metric_total(proxy, "kvwarm_warms_total", outcome="succeeded") < SESSIONS:
        time.sleep(0.2)
    assert metric_total(proxy, "kvwarm_warms_total", outcome="queued") == SESSIONS
    warms = warm_rows(slow)
    per_session = Counter(expected.get(r["prompt_tokens"], -1) for r in warms)
    missing = sorted(set(range(SESSIONS)) - set(per_session))
    assert missing == [], f"{len(missing)} sessions never warmed within {WARM_WAIT_S:.0f}s: {missing[:10]}…"
    assert per_session == Counter(range(SESSIONS)), f"duplicate or unknown warms: {per_session.most_common(3)}"
    assert all(r["status"] == 200 and r["stream"] is False for r in warms)
    print(f"\n100 sessions: all warmed {all_warmed_s:.1f}s after the burst started")

    assert metric_total(proxy, "kvwarm_warm_queue_drops_total") == 0
    assert metric_total(proxy, "kvwarm_warms_total", outcome="fired") == SESSIONS
    assert metric_total(proxy, "kvwarm_warms_total", outcome="succeeded") == SESSIONS
    assert metric_total(proxy, "kvwarm_warm_queue_depth") == 0


def probe_rows(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_a_warm_is_charged_to_the_caller_and_carries_no_raw_session_id(stack):
    """Item 10: warms carried no key identity (spend unattributed) and the raw session id."""
    proxy = stack["proxy"]
    before = len([r for r in probe_rows(stack["probe_log"]) if r["warm"]])
    raw_session = "identity-check-7f3a"
    response = httpx.post(
        proxy.base_url + "/v1/chat/completions",
        json={"model": "fast", "messages": conversation(SESSIONS + 1), "max_tokens": 16},
        headers={"Authorization": "Bearer sk-team-a", "x-litellm-session-id": raw_session},
        timeout=60,
    )
    assert response.status_code == 200
    deadline = time.monotonic() + 30
    warms: list[dict] = []
    while time.monotonic() < deadline and len(warms) <= before:
        warms = [r for r in probe_rows(stack["probe_log"]) if r["warm"]]
        time.sleep(0.2)
    assert len(warms) == before + 1, "the warm's success was never logged"
    warm = warms[-1]
    assert warm["model_group"] == "slow"
    standard = warm["standard_metadata"]
    assert standard["user_api_key_hash"] == hashlib.sha256(b"sk-team-a").hexdigest()
    assert standard["user_api_key_team_id"] == "team-a" and standard["user_api_key_user_id"] == "alice"
    assert warm["metadata"]["user_api_key"] == standard["user_api_key_hash"]
    tenant_hash, session_hash = warm["metadata"]["kvwarm_session"].split(":")  # tenant-scoped: two keyed hashes
    assert len(tenant_hash) == len(session_hash) == 32
    assert raw_session not in json.dumps(warm)
    # the live request itself carried the raw id (the probe would have seen it): the check is real
    live = [r for r in probe_rows(stack["probe_log"]) if not r["warm"] and raw_session in json.dumps(r)]
    assert live, "the probe never saw the live request's session id"

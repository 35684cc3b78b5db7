"""``KVWARM_WARM_QUEUE_BYTES`` through a real proxy (breaker B, 2026-12): with slow hanging, warm-zone requests
carrying 5 MB images grew the plugin's proxy by ~5.5 MB each (+548 MB for 100; LiteLLM alone flat), each queued
warm holding its whole body and the queue bounded by count only. Here the bound is 10 MB: warms of ~4 MB bodies
(a 3 MB image as base64) past it are skipped (``kvwarm_warms_total{outcome="skipped_queue_bytes"}``) while every
request is answered by fast as before."""

from __future__ import annotations

import base64
import json
import random
import shutil
import time
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from litellm_kvwarm.lab.processes import BackendSpec, clear_faults, proxy_config, set_faults, start_emulator, start_proxy

from e2e_support import backend_requests, long_text

pytestmark = pytest.mark.e2e

HERE = Path(__file__).resolve().parent
KEYS = {"sk-team-a": {"team_id": "team-a", "user_id": "alice"}}
BOUND = 10_000_000


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    work = tmp_path_factory.mktemp("warm-bytes")
    fast = start_emulator("fast-8b", 16_384, workdir=work, time_scale=0)
    slow = start_emulator("slow-27b", 131_072, workdir=work, time_scale=0)
    try:
        groups = {"fast": [BackendSpec.of(fast, "fast-8b")], "slow": [BackendSpec.of(slow, "slow-27b")]}
        env = {"KVWARM_WARM_AHEAD": 1, "KVWARM_REPLY_WARM": 0, "KVWARM_WARM_PRIORITY": 0, "KVWARM_WARM_PIECE_TOKENS": 0,
               "KVWARM_WARM_MAX_CONCURRENCY": 1, "KVWARM_WARM_QUEUE_BYTES": BOUND, "KVWARM_REQUEST_BUDGET_MS": 2000,
               "KVWARM_WARM_TIMEOUT_S": 600}
        pdir = work / "proxy"
        pdir.mkdir()
        shutil.copy(HERE / "auth_fixture.py", pdir / "auth_fixture.py")
        config = proxy_config(groups, fallbacks=[{"fast": ["slow"]}], env_vars=env,
                              callbacks=["litellm_kvwarm.proxy_handler_instance", "prometheus"],
                              general_settings={"custom_auth": "auth_fixture.user_api_key_auth"},
                              litellm_settings={"require_auth_for_metrics_endpoint": False})
        proxy = start_proxy(config, workdir=pdir, env={"KVWARM_TEST_KEYS": json.dumps(KEYS)})
    except Exception:
        fast.stop(), slow.stop()
        raise
    yield {"fast": fast, "slow": slow, "proxy": proxy}
    clear_faults(slow)
    for proc in (proxy, fast, slow):
        proc.stop()


def warms(proxy, outcome: str) -> float:
    text = httpx.get(proxy.base_url + "/metrics", timeout=30, follow_redirects=True,
                     headers={"Authorization": f"Bearer {proxy.master_key}"}).text
    return sum(s.value for f in text_string_to_metric_families(text) for s in f.samples
               if s.name == "kvwarm_warms_total" and s.labels.get("outcome") == outcome and s.labels.get("target") == "slow")


def test_warms_past_the_byte_bound_are_skipped_while_the_target_hangs(stack):
    set_faults(stack["slow"], {"completions": {"hang": True}})
    for i in range(6):  # ~11k tokens of fast's 16,384 (the warm zone) + a 3 MB image (4 MB as base64) each
        image = base64.b64encode(random.Random(i).randbytes(3_000_000)).decode()
        content = [{"type": "text", "text": f"[bytes {i}] " + long_text(48_000)},
                   {"type": "image_url", "image_url": {"url": "data:image/png;base64," + image}}]
        response = httpx.post(stack["proxy"].base_url + "/v1/chat/completions", timeout=60, headers={"Authorization": "Bearer sk-team-a"},
                              json={"model": "fast", "max_tokens": 4, "messages": [{"role": "user", "content": content}]})
        assert response.status_code == 200, response.text[:300]  # answered by fast, as LiteLLM alone answers it
    time.sleep(1)
    queued, skipped = warms(stack["proxy"], "queued"), warms(stack["proxy"], "skipped_queue_bytes")
    assert queued + skipped == 6
    assert queued == 2 and skipped == 4  # two ~4 MB bodies held (one in flight, one queued), then the 10 MB bound
    assert len(backend_requests(stack["fast"])) == 6

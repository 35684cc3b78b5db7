"""Fixtures of the real-vLLM tier: two real vLLM CPU servers (fast: window 4,096 on core 0;
slow: 16,384 on core 1), real ``litellm --config`` proxies with the plugin, and emulators in
vLLM 0.32 mode for the contract tests.

The servers run from ``.venv-vllm`` (made by ``scripts/vllm_tier.sh``) and serve the tiny
Llama built by ``tiny_model.py`` with dummy weights: their tokenizer is not the emulator's,
so token counts are compared as relations, never as values. Every process is started on a
free port, waited for on its health URL while its exit is watched, and stopped at the end
(``ManagedProcess``; an ``atexit`` hook stops whatever a crash leaves).
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from litellm_kvwarm.lab.processes import BackendSpec, ManagedProcess, proxy_config, start_emulator, start_proxy
from litellm_kvwarm.lab.vllm_server import (  # noqa: F401  (re-exported to the tier's tests)
    CPU_BLOCK,
    FAST_NAME,
    FAST_WINDOW,
    MODEL_DIR,
    SLOW_NAME,
    SLOW_WINDOW,
    VLLM_PYTHON,
    reset_prefix_cache,
    start_pair,
)

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tiny_model  # noqa: E402

KEYS = {
    "sk-tenant-a": {"team_id": "team-a", "user_id": "alice"},
    "sk-tenant-b": {"team_id": "team-b", "user_id": "bob"},
}
HERE = Path(__file__).resolve().parent
AUTH_FIXTURE = HERE.parent / "e2e" / "auth_fixture.py"


@pytest.fixture(scope="session")
def run_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("vllm-tier")


@pytest.fixture(scope="session")
def vllm(run_dir):
    """``{"fast": ManagedProcess, "slow": ManagedProcess}``: the two real servers."""
    if not VLLM_PYTHON.exists():
        pytest.fail(f"{VLLM_PYTHON} is missing: run `bash scripts/vllm_tier.sh` (it installs vLLM and runs this tier)")
    tiny_model.build(MODEL_DIR)
    pair = start_pair(run_dir)
    servers = {"fast": pair.fast, "slow": pair.slow}
    print(f"\n[vllm-tier] two vLLM servers healthy in {pair.startup_s:.1f}s")
    yield servers
    pair.stop()


@pytest.fixture(scope="session")
def proxies(vllm, run_dir):
    """Real proxies with the plugin, all with tenant cache isolation and custom-auth tenants:
    ``main`` (defaults), ``reactive_only`` (KVWARM_PROACTIVE_ROUTING=0), ``no_warm``
    (KVWARM_WARM_AHEAD=0)."""
    groups = {
        "fast": [BackendSpec(FAST_NAME, vllm["fast"].base_url + "/v1")],
        "slow": [BackendSpec(SLOW_NAME, vllm["slow"].base_url + "/v1")],
    }
    env = {
        "KVWARM_CACHE_SALT_SECRET": "vllm-tier-secret-not-for-production",
        # vLLM answers /v1/models and /tokenize from the same busy CPU as its engine
        "KVWARM_REQUEST_BUDGET_MS": 5000,
        "KVWARM_DISCOVERY_TIMEOUT_S": 10.0,
        "KVWARM_WARM_COOLDOWN_S": 600,
    }
    child_env = {"KVWARM_TEST_KEYS": json.dumps(KEYS)}

    def launch(name: str, extra: dict[str, Any]) -> ManagedProcess:
        pdir = run_dir / name
        pdir.mkdir()
        shutil.copy(AUTH_FIXTURE, pdir / "auth_fixture.py")
        config = proxy_config(
            groups,
            callbacks=["litellm_kvwarm.proxy_handler_instance", "prometheus"],  # /metrics: the plugin's counters
            env_vars={**env, **extra},
            general_settings={"custom_auth": "auth_fixture.user_api_key_auth"},
            router_settings={"num_retries": 0, "timeout": 300},
        )
        return start_proxy(config, workdir=pdir, env=child_env, health_timeout_s=120)

    began = time.monotonic()
    with ThreadPoolExecutor(3) as pool:
        futures = {
            "main": pool.submit(launch, "proxy-main", {}),
            "reactive_only": pool.submit(launch, "proxy-reactive", {"KVWARM_PROACTIVE_ROUTING": "0"}),
            "no_warm": pool.submit(launch, "proxy-nowarm", {"KVWARM_WARM_AHEAD": "0"}),
        }
        started: dict[str, ManagedProcess] = {}
        errors = []
        for key, future in futures.items():
            try:
                started[key] = future.result()
            except Exception as exc:  # noqa: BLE001
                errors.append(exc)
    if errors:
        for proc in started.values():
            proc.stop()
        raise errors[0]
    print(f"\n[vllm-tier] three proxies healthy in {time.monotonic() - began:.1f}s")
    yield started
    for proc in started.values():
        proc.stop()


@pytest.fixture(scope="session")
def emulator(run_dir):
    """The emulator in vLLM 0.32 mode, shaped like the real fast server (window, block size)."""
    proc = start_emulator(FAST_NAME, FAST_WINDOW, workdir=run_dir, time_scale=0, block_size=CPU_BLOCK, vllm_version="0.32.0")
    yield proc
    proc.stop()


# ----------------------------------------------------------------------------- helpers


def metric_sum(server: ManagedProcess, name: str) -> float:
    """Sum of every sample of one counter/gauge on a server's /metrics (``_total`` included in ``name``)."""
    from prometheus_client.parser import text_string_to_metric_families

    text = httpx.get(server.base_url + "/metrics", timeout=30).text
    total = 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name:
                total += sample.value
    return total


def successes(server: ManagedProcess) -> float:
    return metric_sum(server, "vllm:request_success_total")


def tokenize(server: ManagedProcess, model: str, messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    response = httpx.post(server.base_url + "/tokenize", json={"model": model, "messages": messages, **extra}, timeout=60)
    response.raise_for_status()
    return response.json()


def wait_idle(server: ManagedProcess, timeout: float = 120.0) -> None:
    """Until the server runs and queues nothing (a warm in flight has finished)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if metric_sum(server, "vllm:num_requests_running") == 0 and metric_sum(server, "vllm:num_requests_waiting") == 0:
            return
        time.sleep(0.1)
    raise AssertionError(f"{server.name} still busy after {timeout}s")


def proxy_log(proxy: ManagedProcess) -> str:
    return proxy.log_path.read_text(errors="replace")

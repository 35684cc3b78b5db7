"""The repository's own ``litellm_config.yaml`` (what the README tells users to start from)
loads in a real proxy and routes with the plugin."""

from __future__ import annotations

import shutil

import httpx
import pytest
import yaml

from litellm_kvwarm.lab.processes import REPO_ROOT, ManagedProcess, free_port, litellm_executable, new_master_key, start_emulator

from e2e_support import backend_requests, long_text

pytestmark = pytest.mark.e2e


def test_example_config_routes_long_request_to_slow(tmp_path):
    fast = start_emulator("fast-8b", 16_384, workdir=tmp_path, time_scale=0)
    slow = start_emulator("slow-27b", 131_072, workdir=tmp_path, time_scale=0)
    config = tmp_path / "litellm_config.yaml"
    shutil.copy(REPO_ROOT / "litellm_config.yaml", config)
    assert yaml.safe_load(config.read_text())["litellm_settings"]["callbacks"] == ["litellm_kvwarm.proxy_handler_instance"]
    key, port = new_master_key(), free_port()
    env = {
        "FAST_API_BASE": fast.base_url + "/v1",
        "SLOW_API_BASE": slow.base_url + "/v1",
        "LITELLM_MASTER_KEY": key,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "PYTHONPATH": str(REPO_ROOT),
        "PATH": __import__("os").environ.get("PATH", ""),
    }
    proxy = ManagedProcess(
        "example-proxy",
        [litellm_executable(), "--config", str(config), "--port", str(port), "--host", "127.0.0.1"],
        health_url=f"http://127.0.0.1:{port}/health/liveliness",
        log_path=tmp_path / "proxy.log",
        env=env,
        cwd=tmp_path,
    )
    try:
        proxy.start()
        # one short request first (as tests/e2e/test_wheel_install.py): a cold proxy's first request can hold the event
        # loop past the exact count's 300 ms budget, and the plugin then fails open (stays; the backstop escalates)
        warm_up = httpx.post(f"http://127.0.0.1:{port}/v1/chat/completions", headers={"Authorization": f"Bearer {key}"},
                             json={"model": "fast", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}, timeout=60)
        assert warm_up.status_code == 200, warm_up.text
        seen = len(backend_requests(fast))
        body = {"model": "fast", "messages": [{"role": "user", "content": long_text(100_000)}], "max_tokens": 16}
        r = httpx.post(f"http://127.0.0.1:{port}/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {key}"}, timeout=60)
        assert r.status_code == 200, r.text
        assert backend_requests(fast)[seen:] == [] and len(backend_requests(slow)) == 1
    finally:
        proxy.stop()
        fast.stop()
        slow.stop()

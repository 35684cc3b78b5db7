"""The real-process harness: fail fast with output, time out, stop for sure, build proxy configs."""

from __future__ import annotations

import os
import socket
import sys
import time

import httpx
import pytest
import yaml

from litellm_kvwarm.lab import processes
from litellm_kvwarm.lab.processes import (
    REPO_ROOT,
    BackendSpec,
    ManagedProcess,
    ProcessError,
    child_env,
    free_port,
    managed,
    proxy_config,
    start_emulator,
    start_proxy,
)


def test_package_reexports_the_harness_names():
    names = {
        "DEFAULT_HEALTH_TIMEOUT_S", "DEFAULT_STOP_TIMEOUT_S", "PROXY_HEALTH_PATH", "REPO_ROOT", "BackendSpec",
        "ManagedProcess", "ProcessError", "clear_faults", "free_port", "litellm_executable", "new_master_key",
        "proxy_config", "set_faults", "start_emulator", "start_proxy", "start_tap",
    }
    assert names <= set(processes.__all__)
    assert all(getattr(processes, name) is not None for name in processes.__all__)


def test_repo_root_holds_the_package_and_goes_first_on_childrens_pythonpath():
    assert (REPO_ROOT / "litellm_kvwarm" / "__init__.py").is_file()
    assert (REPO_ROOT / "pyproject.toml").is_file()
    env = child_env({"PYTHONPATH": "/elsewhere"})
    assert env["PYTHONPATH"].split(os.pathsep) == [str(REPO_ROOT), "/elsewhere"]


def test_free_port_is_bindable():
    port = free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))


def test_process_that_dies_immediately_raises_with_its_output(tmp_path):
    cmd = [sys.executable, "-c", "import sys; print('boom: no config file'); sys.exit(3)"]
    process = ManagedProcess(
        "dies", cmd, health_url=f"http://127.0.0.1:{free_port()}/health",
        log_path=tmp_path / "dies.log", health_timeout_s=20,
    )
    began = time.monotonic()
    with pytest.raises(ProcessError) as info:
        process.start()
    assert time.monotonic() - began < 10, "a dead process must fail fast, not wait for the timeout"
    message = str(info.value)
    assert "exited with code 3" in message
    assert "boom: no config file" in message
    assert not process.running


def test_process_that_never_gets_healthy_times_out_and_is_stopped(tmp_path):
    cmd = [sys.executable, "-c", "import time; print('sleeping', flush=True); time.sleep(600)"]
    process = ManagedProcess(
        "sleeper", cmd, health_url=f"http://127.0.0.1:{free_port()}/health",
        log_path=tmp_path / "sleeper.log", health_timeout_s=1.5, stop_timeout_s=5,
    )
    with pytest.raises(ProcessError) as info:
        process.start()
    assert "not healthy" in str(info.value)
    assert "sleeping" in str(info.value)
    assert not process.running
    assert process.returncode is not None
    assert process not in managed._LIVE


def test_stop_kills_a_process_that_ignores_sigterm(tmp_path):
    port = free_port()
    script = (
        "import signal, http.server, socketserver\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "class H(http.server.BaseHTTPRequestHandler):\n"
        "    def do_GET(self):\n"
        "        self.send_response(200); self.end_headers(); self.wfile.write(b'ok')\n"
        f"socketserver.TCPServer(('127.0.0.1', {port}), H).serve_forever()\n"
    )
    process = ManagedProcess(
        "stubborn", [sys.executable, "-c", script], health_url=f"http://127.0.0.1:{port}/",
        log_path=tmp_path / "stubborn.log", stop_timeout_s=1,
    )
    with process:
        assert process.running
        assert process in managed._LIVE
    assert not process.running
    assert process.returncode == -9


def test_proxy_config_standard_two_groups():
    config = proxy_config(
        {
            "fast": [BackendSpec("fast-8b", "http://127.0.0.1:1/v1")],
            "slow": [BackendSpec("slow-27b", "http://127.0.0.1:2/v1"), BackendSpec("slow-27b", "http://127.0.0.1:3/v1")],
        },
        env_vars={"KVWARM_WARM_AHEAD": "false"},
        router_settings={"num_retries": 0},
    )
    assert [(e["model_name"], e["litellm_params"]["model"]) for e in config["model_list"]] == [
        ("fast", "hosted_vllm/fast-8b"), ("slow", "hosted_vllm/slow-27b"), ("slow", "hosted_vllm/slow-27b"),
    ]
    assert config["litellm_settings"]["callbacks"] == ["litellm_kvwarm.proxy_handler_instance"]
    assert config["router_settings"] == {"context_window_fallbacks": [{"fast": ["slow"]}], "num_retries": 0}
    key = config["general_settings"]["master_key"]
    assert key.startswith("sk-") and key != "sk-1234" and len(key) > 20
    assert config["environment_variables"] == {"KVWARM_WARM_AHEAD": "false"}
    assert yaml.safe_load(yaml.safe_dump(config)) == config
    assert proxy_config({"fast": []})["general_settings"]["master_key"] != key


def test_proxy_config_without_callbacks_has_no_callback_line():
    config = proxy_config({"fast": [BackendSpec("m", "http://x/v1")]}, callbacks=False)
    assert "litellm_settings" not in config
    assert "router_settings" not in config


def test_start_emulator_rejects_unknown_flags():
    with pytest.raises(TypeError, match="prefil_tokens"):
        start_emulator("m", 1024, prefil_tokens_per_s=1)


@pytest.mark.e2e
def test_real_proxy_starts_answers_and_stops(tmp_path):
    config = proxy_config({"fast": [BackendSpec("fast-8b", f"http://127.0.0.1:{free_port()}/v1")]}, callbacks=False)
    with start_proxy(config, workdir=tmp_path) as proxy:
        assert proxy.startup_s is not None and proxy.startup_s < processes.DEFAULT_HEALTH_TIMEOUT_S
        response = httpx.get(proxy.base_url + "/v1/models", headers={"Authorization": f"Bearer {proxy.master_key}"})
        assert response.status_code == 200
        assert [m["id"] for m in response.json()["data"]] == ["fast"]
        # LiteLLM 1.108.7 answers a missing key with 401 or, on some routes, 500: never 200.
        assert httpx.get(proxy.base_url + "/v1/models").status_code != 200
    assert not proxy.running
    assert (tmp_path / proxy.config_path.name).exists()


@pytest.mark.e2e
def test_real_emulator_serves_models_and_records_requests(tmp_path):
    with start_emulator("fast-8b", 16384, workdir=tmp_path, time_scale=0.01) as emulator:
        models = httpx.get(emulator.base_url + "/v1/models").json()["data"]
        assert [(m["id"], m["max_model_len"]) for m in models] == [("fast-8b", 16384)]
        response = httpx.post(
            emulator.base_url + "/v1/chat/completions",
            json={"model": "fast-8b", "messages": [{"role": "user", "content": "hello there"}], "max_tokens": 5},
        )
        assert response.status_code == 200, response.text
        requests = httpx.get(emulator.base_url + "/emulator/requests").json()["requests"]
        assert len(requests) == 1
        assert requests[0]["model"] == "fast-8b"
        assert requests[0]["max_tokens"] == 5
        assert requests[0]["prompt_tokens"] > 0
        assert httpx.delete(emulator.base_url + "/emulator/requests").status_code in (200, 204)
        assert httpx.get(emulator.base_url + "/emulator/requests").json()["requests"] == []
    assert not emulator.running

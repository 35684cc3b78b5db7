"""The real server process: ``python -m litellm_kvwarm.lab.emulator`` serves, logs, and stops."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

REPO_ROOT = Path(__file__).resolve().parents[3]
SECRET_PROMPT = "the launch code is swordfish"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_healthy(process: subprocess.Popen, url: str, output: Path, timeout_s: float = 30.0) -> None:
    """Poll ``url`` until 200, failing fast (with the server's output) if the process dies."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"emulator exited with {process.returncode}:\n{output.read_text()}")
        try:
            if httpx.get(url, timeout=1.0).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    pytest.fail(f"emulator not healthy after {timeout_s}s:\n{output.read_text()}")


def stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


@pytest.mark.e2e
def test_real_process_serves_a_request_and_stops(tmp_path):
    port = free_port()
    output = tmp_path / "emulator.out"
    log_path = tmp_path / "requests.jsonl"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
    command = [
        sys.executable, "-m", "litellm_kvwarm.lab.emulator", "--served-model-name", "slow-70b", "--max-model-len", "32768",
        "--port", str(port), "--time-scale", "0.01", "--vllm-version", "0.25.0", "--request-log", str(log_path),
    ]
    with output.open("w") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, cwd=tmp_path, env=env)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_healthy(process, base + "/health", output)
        assert httpx.get(base + "/version").json() == {"version": "0.25.0"}
        assert httpx.get(base + "/v1/models").json()["data"][0]["max_model_len"] == 32768
        messages = [{"role": "user", "content": SECRET_PROMPT}]
        count = httpx.post(base + "/tokenize", json={"messages": messages}).json()["count"]
        response = httpx.post(base + "/v1/chat/completions",
                              json={"model": "slow-70b", "messages": messages, "max_tokens": 4}, timeout=10)
        assert response.status_code == 200, response.text
        assert response.json()["usage"]["prompt_tokens"] == count
        assert response.json()["usage"]["completion_tokens"] == 4
        [entry] = [json.loads(line) for line in log_path.read_text().splitlines()]
        assert (entry["model"], entry["prompt_tokens"], entry["completion_tokens"]) == ("slow-70b", count, 4)
    finally:
        stop(process)
    assert process.returncode is not None
    server_output = output.read_text()
    assert f"/v1/chat/completions model=slow-70b status=200 prompt={count}" in server_output
    assert SECRET_PROMPT not in server_output

"""The new flags and the fault switch on a real emulator process (``start_emulator``,
``set_faults``, ``clear_faults``): real sockets, real time (drip timing, clients that leave)."""

from __future__ import annotations

import json
import threading
import time

import httpx
import pytest

from litellm_kvwarm.lab.processes import clear_faults, set_faults, start_emulator

pytestmark = pytest.mark.e2e

KEY = "sk-emulator-test"
AUTH = {"Authorization": f"Bearer {KEY}"}
HELLO = [{"role": "user", "content": "hello there"}]


@pytest.fixture(scope="module")
def emulator(tmp_path_factory):
    process = start_emulator(
        "fast-8b", 4096, workdir=tmp_path_factory.mktemp("emulator"), time_scale=0,
        api_key=KEY, strict_fields=True, lora_modules=["sql-lora=/adapters/sql"],
        faults={"tokenize": "status:500"},
    )
    yield process
    process.stop()


@pytest.fixture
def client(emulator):
    clear_faults(emulator)
    with httpx.Client(base_url=emulator.base_url, timeout=10.0, trust_env=False) as client:
        client.delete("/emulator/requests")
        yield client
    clear_faults(emulator)


def faults_now(client: httpx.Client) -> dict:
    return client.get("/emulator/faults").json()


def wait_for(predicate, timeout_s: float = 5.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    pytest.fail(f"timed out waiting for {what}")


def test_start_flags_reach_the_process(emulator):
    with httpx.Client(base_url=emulator.base_url, timeout=10.0, trust_env=False) as client:
        # --faults: the start-up fault is in force until cleared
        shown = faults_now(client)
        assert shown["tokenize"] == "status:500"
        assert client.post("/tokenize", json={"prompt": "hi"}).status_code == 500
        # --api-key
        assert client.get("/v1/models").json() == {"error": "Unauthorized"}
        data = client.get("/v1/models", headers=AUTH).json()["data"]
        # --lora-modules
        assert [(m["id"], m["root"], m["parent"], m["max_model_len"]) for m in data] == [
            ("fast-8b", "fast-8b", None, 4096), ("sql-lora", "/adapters/sql", "fast-8b", None)]
        # --strict-fields
        salted = client.post("/v1/chat/completions", headers=AUTH,
                             json={"model": "sql-lora", "messages": HELLO, "max_tokens": 2, "cache_salt": "t"})
        assert salted.status_code == 400
        assert salted.json()["error"]["message"] == "Unrecognized request argument supplied: cache_salt"
        served = client.post("/v1/chat/completions", headers=AUTH,
                             json={"model": "sql-lora", "messages": HELLO, "max_tokens": 2})
        assert served.status_code == 200 and served.json()["model"] == "sql-lora"


def test_set_and_clear_faults_helpers(emulator, client):
    set_faults(emulator, {"completions": {"status": 429, "count": 1}, "models": "status:500"})
    body = {"model": "fast-8b", "messages": HELLO, "max_tokens": 1}
    assert client.post("/v1/chat/completions", json=body, headers=AUTH).status_code == 429
    assert client.post("/v1/chat/completions", json=body, headers=AUTH).status_code == 200
    assert client.get("/v1/models", headers=AUTH).status_code == 500
    clear_faults(emulator.base_url)  # a base URL works as well as the process
    assert faults_now(client)["models"] is None
    assert client.get("/v1/models", headers=AUTH).status_code == 200
    with pytest.raises(httpx.HTTPStatusError) as refused:
        set_faults(emulator, {"models": "sometimes"})
    assert refused.value.response.status_code == 400
    assert [(e["status"], e["fault"]) for e in client.get("/emulator/requests").json()["requests"]] == [
        (429, "status:429"), (200, None)]


def test_drip_sends_headers_at_once_then_a_byte_per_interval(emulator, client):
    set_faults(emulator, {"models": "drip", "drip_interval_s": 0.5})
    began = time.monotonic()
    arrivals: list[float] = []
    received = b""
    with client.stream("GET", "/v1/models", headers=AUTH) as response:
        headers_after = time.monotonic() - began
        assert response.status_code == 200
        for chunk in response.iter_raw():
            received += chunk
            arrivals.append(time.monotonic() - began)
            if arrivals[-1] >= 1.2:
                break
    assert headers_after < 0.4
    assert 1 <= len(received) < 5, (received, arrivals)
    assert arrivals[0] >= 0.4  # the first byte waits one interval
    with pytest.raises(json.JSONDecodeError):
        json.loads(received)  # far from complete: the padded body lasts over DRIP_MIN_DURATION_S


def test_hang_ends_when_the_client_goes_away(emulator, client):
    set_faults(emulator, {"models": "hang"})
    outcome: list[BaseException] = []

    def impatient() -> None:
        try:
            httpx.get(emulator.base_url + "/v1/models", headers=AUTH, timeout=1.0, trust_env=False)
        except httpx.HTTPError as exc:
            outcome.append(exc)

    thread = threading.Thread(target=impatient)
    thread.start()
    wait_for(lambda: faults_now(client)["hanging"]["models"] == 1, what="the request to be held")
    thread.join(5)
    assert [type(e) for e in outcome] == [httpx.ReadTimeout]
    wait_for(lambda: faults_now(client)["hanging"]["models"] == 0, what="the server to notice the client left")


def test_completion_hang_with_client_gone_is_logged_499(emulator, client):
    set_faults(emulator, {"completions": {"hang": True}})
    with pytest.raises(httpx.ReadTimeout):
        client.post("/v1/chat/completions", headers=AUTH, timeout=0.5,
                    json={"model": "fast-8b", "messages": HELLO, "max_tokens": 1})

    def logged() -> list:
        return client.get("/emulator/requests").json()["requests"]

    wait_for(lambda: len(logged()) == 1, what="the abandoned request to be logged")
    [entry] = logged()
    assert (entry["status"], entry["fault"], entry["error"], entry["model"]) == (499, "hang", "client disconnected", "fast-8b")
    assert faults_now(client)["hanging"]["completions"] == 0


def test_a_held_request_never_delays_a_stop(tmp_path):
    process = start_emulator("m", 1024, workdir=tmp_path, time_scale=0, faults={"models": "hang"})
    outcome: list[object] = []

    def held() -> None:
        try:
            outcome.append(httpx.get(process.base_url + "/v1/models", timeout=30.0, trust_env=False).status_code)
        except httpx.HTTPError as exc:
            outcome.append(type(exc))

    thread = threading.Thread(target=held, daemon=True)
    thread.start()
    with httpx.Client(base_url=process.base_url, timeout=5.0, trust_env=False) as client:
        wait_for(lambda: faults_now(client)["hanging"]["models"] == 1, what="the request to be held")
    began = time.monotonic()
    process.stop()
    assert time.monotonic() - began < 5.0  # SHUTDOWN_GRACE_S, not the 10 s SIGKILL fallback
    thread.join(5)
    # cut by the server, never answered normally (uvicorn sends a 500 for a request it cancels)
    assert outcome in ([500], [httpx.RemoteProtocolError]), outcome

"""The recording tap (``litellm_kvwarm.lab.bench.tap``) against the emulator, real processes: the tap must
pass every answer through unchanged and keep a request log that agrees with the emulator's own,
entry by entry, wherever the tap can know the value (``usage``), and say ``null`` where it cannot."""

from __future__ import annotations

import json

import httpx
import pytest

from litellm_kvwarm.lab.processes import start_emulator, start_tap
from litellm_kvwarm.lab.sse import read_stream
from reset_upstream import ResetsReusedConnections

pytestmark = pytest.mark.e2e

MODEL = "fast-tap"
WINDOW = 4_096
#: Fields the tap takes from the request or the upstream's status/usage: equal to the emulator's.
COMPARED = ("endpoint", "model", "status", "stream", "max_tokens", "prompt_tokens", "cached_tokens",
            "completion_tokens", "cache_salt")


def _messages(words: int, tag: str = "tap") -> list[dict[str, str]]:
    return [{"role": "system", "content": "You are terse."},
            {"role": "user", "content": " ".join(f"{tag}{i % 97} word" for i in range(words))}]


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    work = tmp_path_factory.mktemp("tap")
    emulator = start_emulator(MODEL, WINDOW, workdir=work, time_scale=0, block_size=16)
    try:
        tap = start_tap(emulator, "fast", workdir=work, request_log=work / "tap.jsonl")
    except BaseException:
        emulator.stop()
        raise
    yield {"emulator": emulator, "tap": tap, "work": work}
    tap.stop()
    emulator.stop()


def _log(base_url: str, client: httpx.Client) -> list[dict]:
    response = client.get(base_url + "/emulator/requests")
    response.raise_for_status()
    return response.json()["requests"]


def _stream_text(client: httpx.Client, url: str, body: dict) -> tuple[int, str, list[dict]]:
    """Status, concatenated delta content and every parsed event of one streamed chat completion."""
    with client.stream("POST", url + "/v1/chat/completions", json=body) as response:
        if response.status_code != 200:
            return response.status_code, response.read().decode(), []
        result = read_stream(response.iter_lines())
    return 200, result.text, result.events


@pytest.fixture(scope="module")
def exchanged(servers):
    """Send a mix of requests through the tap; returns (tap log, emulator log, answers)."""
    tap, emulator = servers["tap"].base_url, servers["emulator"].base_url
    client = httpx.Client(timeout=60, trust_env=False)
    client.delete(tap + "/emulator/requests")
    client.delete(emulator + "/emulator/requests")
    answers: dict[str, object] = {}
    streamed = {"model": MODEL, "messages": _messages(300), "max_tokens": 24, "stream": True,
                "stream_options": {"include_usage": True}, "cache_salt": "tenant-a"}
    answers["streamed"] = _stream_text(client, tap, streamed)
    answers["plain"] = client.post(tap + "/v1/chat/completions", json={
        "model": MODEL, "messages": _messages(300), "max_completion_tokens": 7, "cache_salt": "tenant-a"})
    answers["no_usage"] = _stream_text(client, tap, {"model": MODEL, "messages": _messages(50, "nu"), "max_tokens": 5,
                                                      "stream": True})
    answers["too_long"] = client.post(tap + "/v1/chat/completions", json={
        "model": MODEL, "messages": _messages(3_000, "long"), "max_tokens": 16, "stream": True})
    answers["bad_salt"] = client.post(tap + "/v1/chat/completions", json={
        "model": MODEL, "messages": _messages(10), "max_tokens": 4, "cache_salt": ""})
    answers["wrong_model"] = client.post(tap + "/v1/chat/completions", json={
        "model": "nope", "messages": _messages(10), "max_tokens": 4})
    answers["text"] = client.post(tap + "/v1/completions", json={"model": MODEL, "prompt": "once upon a time",
                                                                 "max_tokens": 3})
    tap_log, emu_log = _log(tap, client), _log(emulator, client)
    # the same streamed request straight to the emulator, for the pass-through comparison (after the logs)
    answers["direct_streamed"] = _stream_text(client, emulator, streamed)
    client.close()
    return tap_log, emu_log, answers


def test_tap_log_matches_the_emulator_log_entry_by_entry(exchanged):
    tap_log, emu_log, _ = exchanged
    assert len(tap_log) == len(emu_log) == 7
    assert [e["status"] for e in tap_log] == [200, 200, 200, 400, 400, 404, 200]
    for index, (tapped, own) in enumerate(zip(tap_log, emu_log)):
        assert set(tapped) == set(own), index  # the same keys: make_entry's
        # Where the tap has no usage (a stream without include_usage, every error), it says null
        # instead of counting the prompt itself; every other field agrees.
        no_usage = index == 2 or own["status"] >= 400
        for key in COMPARED:
            if no_usage and key in ("prompt_tokens", "cached_tokens", "completion_tokens"):
                assert tapped[key] is None, (index, key)
            else:
                assert tapped[key] == own[key], (index, key, tapped[key], own[key])
        assert tapped["error"] == own["error"], index


def test_tap_log_holds_real_numbers(exchanged):
    tap_log, emu_log, _ = exchanged
    streamed, plain, no_usage, too_long, bad_salt, wrong_model, text = tap_log
    assert streamed["prompt_tokens"] > 300 and streamed["cached_tokens"] == 0 and streamed["completion_tokens"] == 24
    assert streamed["stream"] is True and streamed["max_tokens"] == 24 and streamed["cache_salt"] is not None
    assert streamed["ttft_s"] > 0
    # the same prompt again, non-streamed: the emulator found it cached (whole 16-token blocks)
    assert plain["cached_tokens"] >= plain["prompt_tokens"] - 16 > 0 and plain["max_tokens"] == 7
    assert plain["stream"] is False and plain["ttft_s"] is None
    assert no_usage["status"] == 200 and no_usage["ttft_s"] > 0 and emu_log[2]["prompt_tokens"] > 50
    assert too_long["stream"] is True and "maximum context length is 4096" in too_long["error"]
    assert emu_log[3]["prompt_tokens"] > WINDOW  # what the tap cannot know: no count in vLLM's error body
    assert "cache_salt" in bad_salt["error"] and "nope" in wrong_model["error"]
    assert text["endpoint"] == "/v1/completions" and text["completion_tokens"] == 3


def test_tap_passes_answers_through_unchanged(servers, exchanged):
    _, _, answers = exchanged
    status, text, events = answers["streamed"]
    direct_status, direct_text, direct_events = answers["direct_streamed"]
    assert status == direct_status == 200
    assert text == direct_text and len(text) > 0
    assert len(events) == len(direct_events)
    assert events[-1]["usage"]["prompt_tokens"] == direct_events[-1]["usage"]["prompt_tokens"]
    assert answers["plain"].status_code == 200 and answers["plain"].json()["usage"]["completion_tokens"] == 7
    too_long = answers["too_long"]
    assert too_long.status_code == 400 and too_long.json()["error"]["type"] == "BadRequestError"
    assert answers["wrong_model"].status_code == 404
    tap, emulator = servers["tap"].base_url, servers["emulator"].base_url
    with httpx.Client(timeout=30, trust_env=False) as client:
        body = {"model": MODEL, "messages": _messages(20)}
        assert client.post(tap + "/tokenize", json=body).json() == client.post(emulator + "/tokenize", json=body).json()
        models = client.get(tap + "/v1/models").json()["data"][0]
        assert (models["id"], models["max_model_len"]) == (MODEL, WINDOW)
        assert client.get(tap + "/health").status_code == 200
        assert "vllm:" in client.get(tap + "/metrics").text


def test_tap_mirrors_its_log_to_the_jsonl_file(servers, exchanged):
    tap_log, _, _ = exchanged
    lines = [json.loads(line) for line in (servers["work"] / "tap.jsonl").read_text().splitlines()]
    assert lines[-len(tap_log):] == tap_log


def test_tap_sends_a_request_again_when_its_reused_connection_was_reset(tmp_path):
    chat = json.dumps({"id": "x", "object": "chat.completion", "choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 1}})
    with ResetsReusedConnections(chat.encode()) as upstream:
        tap = start_tap(upstream.base_url, "resets", workdir=tmp_path)
        try:
            with httpx.Client(timeout=30, trust_env=False) as client:
                statuses = [client.post(tap.base_url + "/v1/chat/completions",
                                        json={"model": MODEL, "messages": _messages(5), "max_tokens": 1}).status_code
                            for _ in range(3)]
                log = _log(tap.base_url, client)
        finally:
            tap.stop()
    chats = [outcome for path, outcome in upstream.seen if path == "/v1/chat/completions"]
    # each request after the tap's health check reused a pooled connection first, was reset there,
    # and was answered on a new one; before, the tap answered 502 "upstream unreachable: ReadError"
    assert statuses == [200, 200, 200]
    assert "reset" in chats and chats.count("answered") == 3
    assert [(e["status"], e["prompt_tokens"], e["error"]) for e in log] == [(200, 5, None)] * 3

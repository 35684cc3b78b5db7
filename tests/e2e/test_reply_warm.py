"""The escalated turn at the floor, end to end: a real ``litellm --config`` proxy with the plugin in
front of real emulator processes (fast 4,096 / slow 16,384, slow as two replicas).

* reply-warm: after the fast model answers a session past the warm threshold, the plugin warms
  slow with the conversation plus that reply (streamed and not); the client sends the reply back
  with a new message that overflows fast; the escalated request lands on the replica and under the
  cache salt the reply-warm filled, and finds all but the new message cached;
* a template that drops the reasoning of past assistant turns (the emulator's ``qwen3`` mode):
  the reply-warm sends the history as the next request renders it, so the escalated turn after a
  new user message is ≥ 80% cached;
* warm priority: a server with ``--scheduling-policy priority`` gets warms at priority 10; one
  without it refuses the field, then gets its warms without it; no client request ever fails for it.
"""

from __future__ import annotations

import json
import time

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from litellm_kvwarm.lab.processes import BackendSpec, proxy_config, start_emulator

from e2e_support import CUSTOM_AUTH, backend_requests, clear_backends, long_text, start_proxy_with_keys, tokenize_count

pytestmark = pytest.mark.e2e

FAST_WINDOW, SLOW_WINDOW, BLOCK = 4_096, 16_384, 16
KEYS = {"sk-a": {"team_id": "team-a"}}
FIRST_CHARS = 11_000  # ≈ 2,700 tokens by the routing estimate: past 60% of fast's window, fits it
NEW_CHARS = 10_000  # with it the conversation no longer fits fast (+ the output floor)
REPLY_TOKENS = 200


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    work = tmp_path_factory.mktemp("reply-warm")
    procs = {}
    try:
        common = {"workdir": work, "time_scale": 0, "block_size": BLOCK}
        policy = ["--scheduling-policy", "priority"]
        procs["fast"] = start_emulator("fast-8b", FAST_WINDOW, **common)
        procs["slow_a"] = start_emulator("slow-27b", SLOW_WINDOW, extra_args=policy, **common)
        procs["slow_b"] = start_emulator("slow-27b", SLOW_WINDOW, extra_args=policy, **common)
        procs["slow_f1"] = start_emulator("slow-f", SLOW_WINDOW, **common)  # fcfs: refuses a priority
        procs["slow_f2"] = start_emulator("slow-f", SLOW_WINDOW, **common)
        procs["slow_s"] = start_emulator("slow-s", SLOW_WINDOW, strict_fields=True, **common)  # knows no priority field
        qwen = ["--chat-template-mode", "qwen3"]
        procs["q_fast"] = start_emulator("Qwen/Qwen3-8B", FAST_WINDOW, extra_args=qwen, **common)
        procs["q_slow"] = start_emulator("Qwen/Qwen3-32B", SLOW_WINDOW, extra_args=[*qwen, *policy], **common)
        groups = {
            "fast": [BackendSpec.of(procs["fast"], "fast-8b")],
            "slow": [BackendSpec.of(procs["slow_a"], "slow-27b"), BackendSpec.of(procs["slow_b"], "slow-27b")],
            "fast-f": [BackendSpec.of(procs["fast"], "fast-8b")],
            "slow-f": [BackendSpec.of(procs["slow_f1"], "slow-f"), BackendSpec.of(procs["slow_f2"], "slow-f")],
            "fast-s": [BackendSpec.of(procs["fast"], "fast-8b")],
            "slow-s": [BackendSpec.of(procs["slow_s"], "slow-s")],
            "q-fast": [BackendSpec.of(procs["q_fast"], "Qwen/Qwen3-8B")],
            "q-slow": [BackendSpec.of(procs["q_slow"], "Qwen/Qwen3-32B")],
        }
        config = proxy_config(
            groups, fallbacks=[{"fast": ["slow"]}, {"fast-f": ["slow-f"]}, {"fast-s": ["slow-s"]}, {"q-fast": ["q-slow"]}],
            env_vars={"KVWARM_CACHE_SALT_SECRET": "test-secret-not-for-production", "KVWARM_REQUEST_BUDGET_MS": 2000},
            general_settings=CUSTOM_AUTH, callbacks=["litellm_kvwarm.proxy_handler_instance", "prometheus"],
        )
        for entry in config["model_list"]:
            if entry["model_name"] == "slow-s":  # a strict OpenAI-compatible API, not vLLM
                entry["litellm_params"]["model"] = "openai/slow-s"
        procs["proxy"] = start_proxy_with_keys(config, work, KEYS)
    except Exception:
        for proc in procs.values():
            proc.stop()
        raise
    yield procs
    for proc in procs.values():
        proc.stop()


def send(stack, group, session, messages, *, stream=False, max_tokens=REPLY_TOKENS):
    """One client request; returns (status, the assistant message as the client sends it back)."""
    body = {"model": group, "messages": messages, "max_tokens": max_tokens, "stream": stream}
    headers = {"Authorization": "Bearer sk-a", "x-litellm-session-id": session}
    if not stream:
        r = httpx.post(stack["proxy"].base_url + "/v1/chat/completions", json=body, headers=headers, timeout=60)
        if r.status_code != 200:
            return r.status_code, r.text
        message = r.json()["choices"][0]["message"]
        return 200, {k: message[k] for k in ("role", "content", "reasoning_content") if message.get(k) is not None}
    content, reasoning = [], []
    with httpx.stream("POST", stack["proxy"].base_url + "/v1/chat/completions", json=body, headers=headers, timeout=60) as r:
        if r.status_code != 200:
            return r.status_code, r.read().decode()
        for line in r.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            choices = json.loads(line[6:]).get("choices") or [{}]
            delta = choices[0].get("delta") or {}
            content.append(delta.get("content") or "")
            reasoning.append(delta.get("reasoning_content") or "")
    message = {"role": "assistant", "content": "".join(content)}
    if "".join(reasoning):
        message["reasoning_content"] = "".join(reasoning)
    return 200, message


def warm_entries(stack, *names):
    return [dict(r, replica=n) for n in names for r in backend_requests(stack[n]) if r["max_tokens"] == 1]


def wait_for(predicate, timeout=15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    return predicate()


def metric(stack, name, **labels):
    text = httpx.get(stack["proxy"].base_url + "/metrics", headers={"Authorization": "Bearer sk-a"}, timeout=10, follow_redirects=True).text
    return sum(s.value for f in text_string_to_metric_families(text) for s in f.samples
               if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()))


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_reply_warm_meets_the_escalation_on_its_replica_and_salt(stack, stream):
    clear_backends(stack["fast"], stack["slow_a"], stack["slow_b"])
    session = f"reply-warm-{stream}"
    first = [{"role": "system", "content": "You are a helpful assistant."}, {"role": "user", "content": long_text(FIRST_CHARS)}]
    before = metric(stack, "kvwarm_warms_total", trigger="reply", outcome="succeeded")
    status, reply = send(stack, "fast", session, first, stream=stream)
    assert status == 200 and reply["content"]
    assert [r["status"] for r in backend_requests(stack["fast"])] == [200]
    # the reply-warm: slow received the conversation plus exactly that reply
    with_reply = [*first, reply]
    expected_prompt = tokenize_count(stack["slow_a"], "slow-27b", with_reply)
    warmed = wait_for(lambda: [w for w in warm_entries(stack, "slow_a", "slow_b")
                               if w["status"] == 200 and w["prompt_tokens"] >= expected_prompt])
    assert len(warmed) == 1, warm_entries(stack, "slow_a", "slow_b")
    assert warmed[0]["priority"] == 10  # the server runs --scheduling-policy priority: warms go behind live requests
    assert wait_for(lambda: metric(stack, "kvwarm_warms_total", trigger="reply", outcome="succeeded") >= before + 1)
    # the next turn: the reply sent back, a new message that no longer fits fast → escalated to slow
    second = [*with_reply, {"role": "user", "content": "Now this: " + long_text(NEW_CHARS)}]
    status, _ = send(stack, "fast", session, second, stream=stream)
    assert status == 200
    served = [dict(r, replica=n) for n in ("slow_a", "slow_b") for r in backend_requests(stack[n]) if r["max_tokens"] != 1]
    assert len(served) == 1, served
    escalated = served[0]
    assert escalated["status"] == 200
    assert escalated["replica"] == warmed[0]["replica"]  # the session's pinned replica
    assert escalated["cache_salt"] is not None and escalated["cache_salt"] == warmed[0]["cache_salt"]
    new_tokens = escalated["prompt_tokens"] - tokenize_count(stack["slow_a"], "slow-27b", with_reply)
    assert 0 < new_tokens < escalated["prompt_tokens"] // 2
    # everything but the new message (and the warm's last partial block) was in the prefix cache
    assert escalated["cached_tokens"] >= escalated["prompt_tokens"] - new_tokens - BLOCK
    assert escalated["cached_tokens"] / escalated["prompt_tokens"] >= 0.5


def test_reasoning_dropping_template_escalated_turn_mostly_cached(stack):
    clear_backends(stack["q_fast"], stack["q_slow"])
    session = "qwen3-template"
    # a conversation near fast's window, a long reply, then a short new message that no longer fits
    first = [{"role": "system", "content": "You are a helpful assistant."}, {"role": "user", "content": long_text(15_000)}]
    status, reply = send(stack, "q-fast", session, first, max_tokens=400)
    assert status == 200 and reply.get("reasoning_content"), reply  # the qwen3 mode answers with reasoning
    with_reply = [*first, reply]  # sent back with its reasoning, as Qwen agents do
    # the reply-warm: the reply without its reasoning (the template drops it once a user message follows),
    # then the next turn's empty user message
    without = [*first, {"role": "assistant", "content": reply["content"]}, {"role": "user", "content": ""}]
    expected_prompt = tokenize_count(stack["q_slow"], "Qwen/Qwen3-32B", without)
    assert wait_for(lambda: [w for w in warm_entries(stack, "q_slow") if w["status"] == 200 and w["prompt_tokens"] >= expected_prompt])
    second = [*with_reply, {"role": "user", "content": "And now: " + long_text(3_000)}]
    status, _ = send(stack, "q-fast", session, second)
    assert status == 200
    served = [r for r in backend_requests(stack["q_slow"]) if r["max_tokens"] != 1]
    assert len(served) == 1 and served[0]["status"] == 200, (served, backend_requests(stack["q_fast"]), warm_entries(stack, "q_slow"))
    assert served[0]["cached_tokens"] / served[0]["prompt_tokens"] >= 0.8, served[0]


def test_warm_priority_refused_then_dropped_per_deployment_and_no_client_request_fails(stack):
    clear_backends(stack["fast"], stack["slow_f1"], stack["slow_f2"])
    refused_before = metric(stack, "kvwarm_warm_priority_refused_total")
    # slow-f's replicas run without the policy (fcfs): a replica's first warms are refused (each resent at once
    # without the field; the warms of one session may be in flight together), every later one goes without it
    for i in range(6):
        first = [{"role": "user", "content": f"Session {i}. " + long_text(FIRST_CHARS)}]
        assert send(stack, "fast-f", f"fcfs-{i}", first)[0] == 200
        time.sleep(0.3)
    assert wait_for(lambda: len([w for w in warm_entries(stack, "slow_f1", "slow_f2") if w["status"] == 200]) >= 6)
    time.sleep(1.0)
    entries = warm_entries(stack, "slow_f1", "slow_f2")
    refused = [w for w in entries if w["status"] == 400]
    assert refused and all("Priority scheduling is not enabled" in (w.get("error") or "") for w in refused), entries
    later = 0
    for replica in ("slow_f1", "slow_f2"):
        mine = [w for w in entries if w["replica"] == replica]
        first_refusal = min((w["ts"] for w in mine if w["status"] == 400), default=None)
        if first_refusal is None:
            continue  # no warm reached it
        assert len([w for w in mine if w["status"] == 400]) <= 2, mine
        after = [w for w in mine if w["ts"] > first_refusal + 0.25]
        assert all(w["status"] == 200 and not w.get("priority") for w in after), after
        later += len(after)
    assert later >= 3  # warms sent after a refusal was learned
    assert all(not w.get("priority") for w in entries if w["status"] == 200)  # every refused warm resent without it
    assert metric(stack, "kvwarm_warm_priority_refused_total") - refused_before == len(refused)
    assert [r["status"] for r in backend_requests(stack["fast"])] == [200] * 6  # no client request failed


def test_a_target_that_knows_no_priority_field_gets_warms_without_it_after_the_first_refusal(stack):
    """A breaker's find: a strict OpenAI-compatible target refuses ``priority`` as an unknown argument
    ("Unrecognized request argument supplied: priority"), a wording the refusal learning did not know, so
    every warm to it failed. Now the first refusal is learned like vLLM's and each refused warm is resent
    without the field."""
    clear_backends(stack["fast"], stack["slow_s"])
    refused_before = metric(stack, "kvwarm_warm_priority_refused_total")
    for i in range(4):
        first = [{"role": "user", "content": f"Strict session {i}. " + long_text(FIRST_CHARS)}]
        assert send(stack, "fast-s", f"strict-{i}", first)[0] == 200
        time.sleep(0.3)
    assert wait_for(lambda: len([w for w in warm_entries(stack, "slow_s") if w["status"] == 200]) >= 4), warm_entries(stack, "slow_s")
    time.sleep(1.0)
    entries = warm_entries(stack, "slow_s")
    refused = [w for w in entries if w["status"] == 400]
    assert 1 <= len(refused) <= 2 and all("Unrecognized request argument supplied: priority" in (w.get("error") or "") for w in refused), entries
    first_refusal = min(w["ts"] for w in refused)
    after = [w for w in entries if w["ts"] > first_refusal + 0.25]
    assert len(after) >= 3 and all(w["status"] == 200 and not w.get("priority") for w in after), after
    assert metric(stack, "kvwarm_warm_priority_refused_total") - refused_before == len(refused)
    assert [r["status"] for r in backend_requests(stack["fast"])] == [200] * 4  # no client request failed


def test_reply_warm_of_an_anthropic_messages_session(stack):
    """Claude Code's API: the reply comes back as Anthropic content blocks and is warmed as an ``assistant``
    message of those blocks (LiteLLM bridges both to the backend's chat endpoint)."""
    clear_backends(stack["fast"], stack["slow_a"], stack["slow_b"])
    first = [{"role": "user", "content": long_text(FIRST_CHARS)}]
    r = httpx.post(stack["proxy"].base_url + "/v1/messages", json={"model": "fast", "messages": first, "max_tokens": REPLY_TOKENS},
                   headers={"Authorization": "Bearer sk-a", "x-litellm-session-id": "reply-warm-messages"}, timeout=60)
    assert r.status_code == 200, r.text
    text = "".join(b["text"] for b in r.json()["content"] if b["type"] == "text")
    assert text
    expected = tokenize_count(stack["slow_a"], "slow-27b", [*first, {"role": "assistant", "content": text}])
    warmed = wait_for(lambda: [w for w in warm_entries(stack, "slow_a", "slow_b")
                               if w["status"] == 200 and w["prompt_tokens"] >= expected - BLOCK])
    assert len(warmed) == 1, (expected, warm_entries(stack, "slow_a", "slow_b"))


LS = {"name": "ls", "description": "List a directory.", "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}


@pytest.mark.parametrize("tool_loop", [True, False], ids=["tool-loop", "final-answer"])
def test_a_messages_session_on_a_reasoning_template_is_warmed_as_the_client_sends_it_back(stack, tool_loop):
    """Claude Code on a Qwen3-family backend: LiteLLM bridges its Messages requests to chat, the reply comes back with a
    ``thinking`` block, and the client sends the blocks back. In a tool loop the template renders that reasoning: the
    reply-warm carries it (and is sized with it); after a final answer it opens the next user turn, as the template
    renders the history then. The escalated turn finds everything before the new tool result or message cached (a
    breaker: a Messages reply-warm dropped the thinking, so a reply of ~1k reasoning tokens never reached the warm
    threshold and the escalated turn found nothing cached; the final answer's warm ended on the assistant turn)."""
    clear_backends(stack["q_fast"], stack["q_slow"])
    session = f"qwen3-messages-{tool_loop}"
    headers = {"Authorization": "Bearer sk-a", "x-litellm-session-id": session}
    reasoning = "Let me think about which directory to list first and why it matters for the user. " * 60  # ~1,000 tokens
    recorded = {"content": "I will list it." if tool_loop else "The answer is a long explanation. " * 120,
                "reasoning_content": reasoning,
                "tool_calls": [{"id": "toolu_ls1", "function": {"name": "ls", "arguments": '{"path": "/repo"}'}}] if tool_loop else []}
    first = [{"role": "user", "content": long_text(9_500)}]  # ~2,200 tokens: with the reply past 60% of fast's 4,096
    body = {"model": "q-fast", "system": "You are a coding agent.", "tools": [LS], "messages": first, "max_tokens": 1_500}
    r = httpx.post(stack["proxy"].base_url + "/v1/messages", json={**body, "kvwarm_bench_reply": recorded}, headers=headers, timeout=60)
    assert r.status_code == 200, r.text
    blocks = r.json()["content"]
    assert blocks[0]["type"] == "thinking" and ("tool_use" in [b["type"] for b in blocks]) is tool_loop, blocks
    assert wait_for(lambda: [w for w in warm_entries(stack, "q_slow") if w["status"] == 200 and w["prompt_tokens"] > 2_000])
    time.sleep(1.0)  # the reply-warm's pieces
    if tool_loop:
        use = next(b for b in blocks if b["type"] == "tool_use")
        new = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use["id"], "content": long_text(8_000)}]}
    else:
        new = {"role": "user", "content": "And now: " + long_text(8_000)}
    r = httpx.post(stack["proxy"].base_url + "/v1/messages", headers=headers, timeout=60,
                   json={**body, "max_tokens": 200, "messages": [*first, {"role": "assistant", "content": blocks}, new]})
    assert r.status_code == 200, r.text
    served = [x for x in backend_requests(stack["q_slow"]) if x["max_tokens"] != 1]
    assert len(served) == 1, (served, warm_entries(stack, "q_slow"))
    new_tokens = tokenize_count(stack["q_slow"], "Qwen/Qwen3-32B", [{"role": "user", "content": long_text(8_000)}])
    assert served[0]["cached_tokens"] >= served[0]["prompt_tokens"] - new_tokens - 2 * BLOCK, (served[0], new_tokens)

"""Warms in pieces and decode warms, end to end: a real ``litellm --config`` proxy with the plugin at
its defaults (``KVWARM_WARM_PIECE_TOKENS`` 512, not sized from the live prompts: ``KVWARM_WARM_PIECE_SHARE=0``;
``KVWARM_DECODE_WARM_TOKENS`` 256) in front of real
emulator processes (fast 4,096 / slow 16,384 as two replicas run with ``--scheduling-policy priority``;
``fast-paced`` decodes at 100 tokens/s of real time).

A session of several turns crosses the warm threshold on fast: slow receives its warm as successive
prefixes, each cut at a message boundary, each adding at most a piece, each finding the previous one
cached (so it was sent after the previous returned), all on the session's pinned replica, under its
cache salt and at priority 10; the last is the whole conversation. The escalated turn then finds all of
it cached. Chat and Anthropic Messages (LiteLLM bridges Messages to the backend's chat endpoint).

Decode warms: while ``fast-paced`` streams an 800-token reply to a session past the threshold, slow
receives the conversation plus the reply so far, every ~256 tokens, each finding the previous one cached;
the reply-warm at the end prefills only the reply's last stretch, and the escalated turn that sends the
reply back finds all of it cached.
"""

from __future__ import annotations

import json
import time

import httpx
import pytest

from litellm_kvwarm.lab.processes import BackendSpec, proxy_config, start_emulator

from e2e_support import CUSTOM_AUTH, backend_requests, clear_backends, long_text, start_proxy_with_keys, tokenize_count
from test_reply_warm import metric, wait_for

pytestmark = pytest.mark.e2e

FAST_WINDOW, SLOW_WINDOW, BLOCK, PIECE = 4_096, 16_384, 16, 512
OVERSTATED_WINDOW = 5_000  # its 60% (3,000) is below conversation()'s routing estimate (~3,240)
KEYS = {"sk-a": {"team_id": "team-a"}}
TURN_CHARS = 1_400  # ≈ 350 tokens a message by the routing estimate: a turn (question + answer) ≈ 700


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    work = tmp_path_factory.mktemp("warm-pieces")
    procs = {}
    try:
        common = {"workdir": work, "time_scale": 0, "block_size": BLOCK}
        policy = ["--scheduling-policy", "priority"]
        procs["fast"] = start_emulator("fast-8b", FAST_WINDOW, **common)
        procs["paced"] = start_emulator("fast-8b", FAST_WINDOW, workdir=work, block_size=BLOCK, time_scale=1.0,
                                        decode_tokens_per_s=100, prefill_tokens_per_s=1_000_000)
        procs["slow_a"] = start_emulator("slow-27b", SLOW_WINDOW, extra_args=policy, **common)
        procs["slow_b"] = start_emulator("slow-27b", SLOW_WINDOW, extra_args=policy, **common)
        # a slow group whose prefill takes real time (2,000 tokens/s): a warm's pieces are still going when the
        # session's escalated turn arrives
        procs["slow_paced"] = start_emulator("slow-27b", SLOW_WINDOW, extra_args=policy, workdir=work, block_size=BLOCK,
                                             time_scale=1.0, prefill_tokens_per_s=2_000, decode_tokens_per_s=1_000)
        groups = {"fast": [BackendSpec.of(procs["fast"], "fast-8b")],
                  "fast-paced": [BackendSpec.of(procs["paced"], "fast-8b")],
                  "slow": [BackendSpec.of(procs["slow_a"], "slow-27b"), BackendSpec.of(procs["slow_b"], "slow-27b")],
                  "fast-to-paced": [BackendSpec.of(procs["fast"], "fast-8b")],
                  "slow-paced": [BackendSpec.of(procs["slow_paced"], "slow-27b")],
                  # fast, declared by the operator with a larger window than it has (model_info.max_input_tokens is
                  # trusted over the server's): a request between the two routes there and fast refuses it
                  "fast-overstated": [BackendSpec(served_model_name="fast-8b", api_base=procs["fast"].base_url + "/v1",
                                                  model_info={"max_input_tokens": OVERSTATED_WINDOW})]}
        config = proxy_config(
            groups, fallbacks=[{"fast": ["slow"]}, {"fast-paced": ["slow"]}, {"fast-to-paced": ["slow-paced"]},
                               {"fast-overstated": ["slow-paced"]}],
            # pieces of a fixed 512 tokens here (not sized from slow's live prompts: test_warm_pieces_sized.py)
            env_vars={"KVWARM_CACHE_SALT_SECRET": "test-secret-not-for-production", "KVWARM_REQUEST_BUDGET_MS": 2000,
                      "KVWARM_WARM_PIECE_SHARE": 0},
            general_settings=CUSTOM_AUTH, callbacks=["litellm_kvwarm.proxy_handler_instance", "prometheus"],
        )
        procs["proxy"] = start_proxy_with_keys(config, work, KEYS)
    except Exception:
        for proc in procs.values():
            proc.stop()
        raise
    yield procs
    for proc in procs.values():
        proc.stop()


def conversation(tag: str, turns: int = 4) -> list[dict]:
    """A system prompt, ``turns`` question/answer pairs and a last question: ≈ 3,000 tokens, past 60% of fast's window."""
    out = [{"role": "system", "content": f"You are a helpful assistant ({tag})."}]
    for i in range(turns):
        out += [{"role": "user", "content": f"Question {i} of {tag}: " + long_text(TURN_CHARS)},
                {"role": "assistant", "content": f"Answer {i}: " + long_text(TURN_CHARS)}]
    return out + [{"role": "user", "content": f"And the last one of {tag}: " + long_text(TURN_CHARS)}]


def post(stack, api: str, session: str, messages: list[dict], max_tokens: int = 16, model: str = "fast") -> httpx.Response:
    headers = {"Authorization": "Bearer sk-a", "x-litellm-session-id": session}
    if api == "messages":
        system, rest = messages[0]["content"], messages[1:]
        body = {"model": model, "system": system, "messages": rest, "max_tokens": max_tokens}
        return httpx.post(stack["proxy"].base_url + "/v1/messages", json=body, headers=headers, timeout=60)
    if api == "responses":
        body = {"model": model, "input": messages, "max_output_tokens": max_tokens}
        return httpx.post(stack["proxy"].base_url + "/v1/responses", json=body, headers=headers, timeout=60)
    body = {"model": model, "messages": messages, "max_tokens": max_tokens}
    return httpx.post(stack["proxy"].base_url + "/v1/chat/completions", json=body, headers=headers, timeout=60)


def warms(stack) -> list[dict]:
    return sorted((dict(r, replica=n) for n in ("slow_a", "slow_b") for r in backend_requests(stack[n]) if r["max_tokens"] == 1),
                  key=lambda r: r["ts"])


@pytest.mark.parametrize("api", ["chat", "messages"])
def test_a_large_warm_reaches_slow_in_pieces_each_finding_the_last_cached(stack, api):
    clear_backends(stack["fast"], stack["slow_a"], stack["slow_b"])
    pieces_before = metric(stack, "kvwarm_warm_pieces_total", outcome="succeeded")
    messages = conversation(api)
    assert post(stack, api, f"pieces-{api}", messages).status_code == 200
    whole = tokenize_count(stack["slow_a"], "slow-27b", messages)
    wait_for(lambda: any(w["prompt_tokens"] > whole for w in warms(stack)))  # the reply-warm comes last
    time.sleep(0.3)
    sent = [w for w in warms(stack) if w["prompt_tokens"] <= whole]  # the warm-ahead's (the reply-warm adds 16 tokens)
    # a message is ~350 estimated tokens (312 here): one fits a piece, two do not → a piece at each of the 8
    # message boundaries after the first question, then the whole
    assert len(sent) == 9, sent
    assert all(w["status"] == 200 for w in sent)
    prompts = [w["prompt_tokens"] for w in sent]
    assert prompts == sorted(set(prompts)) and prompts[-1] == whole
    steps = [b - a for a, b in zip(prompts, prompts[1:])]
    assert all(250 <= step <= PIECE for step in steps), prompts  # no piece holds slow for more than a piece
    # each piece found the previous one in the prefix cache: it was sent after the previous returned,
    # on the same replica and under the same salt; nothing but a piece's last partial block was prefilled twice
    assert len({w["replica"] for w in sent}) == 1 and len({w["cache_salt"] for w in sent}) == 1
    assert sent[0]["cache_salt"] is not None
    for before, after in zip(sent, sent[1:]):
        assert after["cached_tokens"] >= before["prompt_tokens"] - BLOCK, sent
    # (each piece prefills again at most its last partial block: its generation prompt is not the next turn's)
    assert whole <= sum(w["prompt_tokens"] - w["cached_tokens"] for w in sent) <= whole + BLOCK * (len(sent) - 1)
    assert all(w["priority"] == 10 for w in sent)
    assert wait_for(lambda: metric(stack, "kvwarm_warm_pieces_total", outcome="succeeded") - pieces_before == len(sent) - 1)
    # the escalated turn: the whole conversation was warmed, only the new message is prefilled
    grown = [*messages, {"role": "assistant", "content": "Sure."}, {"role": "user", "content": "More: " + long_text(6_000)}]
    assert post(stack, api, f"pieces-{api}", grown).status_code == 200
    served = [dict(r, replica=n) for n in ("slow_a", "slow_b") for r in backend_requests(stack[n]) if r["max_tokens"] != 1]
    assert len(served) == 1 and served[0]["status"] == 200, served
    assert served[0]["replica"] == sent[0]["replica"] and served[0]["cache_salt"] == sent[0]["cache_salt"]
    assert served[0]["cached_tokens"] >= whole - BLOCK, (served, sent)
    assert [r["status"] for r in backend_requests(stack["fast"])] == [200]


def test_a_streamed_reply_is_warmed_while_it_decodes(stack):
    clear_backends(stack["paced"], stack["slow_a"], stack["slow_b"])
    decode_before = metric(stack, "kvwarm_warms_total", trigger="decode", outcome="succeeded")
    messages = conversation("decode")
    body = {"model": "fast-paced", "messages": messages, "max_tokens": 800, "stream": True}
    headers = {"Authorization": "Bearer sk-a", "x-litellm-session-id": "decode-warms"}
    parts = []
    with httpx.stream("POST", stack["proxy"].base_url + "/v1/chat/completions", json=body, headers=headers, timeout=60) as r:
        assert r.status_code == 200
        for line in r.iter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                choices = json.loads(line[6:]).get("choices") or [{}]
                parts.append((choices[0].get("delta") or {}).get("content") or "")
    reply = {"role": "assistant", "content": "".join(parts)}
    whole = tokenize_count(stack["slow_a"], "slow-27b", messages)
    with_reply = tokenize_count(stack["slow_a"], "slow-27b", [*messages, reply])
    assert with_reply - whole > 700  # an ~800-token reply, decoded over ~8 s
    wait_for(lambda: any(w["prompt_tokens"] >= with_reply for w in warms(stack)))
    time.sleep(0.3)
    sent = [w for w in warms(stack) if w["status"] == 200]
    during = [w for w in sent if whole < w["prompt_tokens"] < with_reply]
    # the reply so far reached slow while it was decoding, every ~256 tokens, on the session's replica and salt
    assert len(during) >= 2, sent
    assert len({w["replica"] for w in sent}) == 1 and len({w["cache_salt"] for w in sent}) == 1
    prompts = [w["prompt_tokens"] for w in during]
    assert prompts == sorted(prompts)
    last = sent[-1]
    assert last["prompt_tokens"] >= with_reply  # the reply-warm: the whole reply
    # each decode warm found the one before cached; the reply-warm prefilled only the reply's last stretch
    for before, after in zip(sent, sent[1:]):
        assert after["cached_tokens"] >= min(before["prompt_tokens"], after["prompt_tokens"]) - 2 * BLOCK, sent
    assert last["prompt_tokens"] - last["cached_tokens"] <= 256 + 4 * BLOCK, sent
    assert wait_for(lambda: metric(stack, "kvwarm_warms_total", trigger="decode", outcome="succeeded") - decode_before >= 2)
    # the escalated turn: the reply sent back with a message that no longer fits fast
    grown = [*messages, reply, {"role": "user", "content": "More: " + long_text(4_000)}]
    r = httpx.post(stack["proxy"].base_url + "/v1/chat/completions", json={"model": "fast-paced", "messages": grown, "max_tokens": 16},
                   headers=headers, timeout=60)
    assert r.status_code == 200, r.text
    served = [w for n in ("slow_a", "slow_b") for w in backend_requests(stack[n]) if w["max_tokens"] != 1]
    assert len(served) == 1 and served[0]["cached_tokens"] >= with_reply - 2 * BLOCK, (served, sent)


def test_one_long_message_is_warmed_in_pieces_cut_inside_its_text(stack):
    """A pasted document (or a tool result) of ~2,800 tokens is the whole uncached part: it reaches slow as
    prefixes ending inside its text, each finding the one before cached but for the block holding the cut."""
    clear_backends(stack["fast"], stack["slow_a"], stack["slow_b"])
    messages = [{"role": "system", "content": "You summarise documents."},
                {"role": "user", "content": "Summarise this document:\n" + long_text(11_600)}]
    assert post(stack, "chat", "pieces-one-message", messages).status_code == 200
    whole = tokenize_count(stack["slow_a"], "slow-27b", messages)
    wait_for(lambda: any(w["prompt_tokens"] > whole for w in warms(stack)))  # the reply-warm comes last
    time.sleep(0.3)
    sent = [w for w in warms(stack) if w["prompt_tokens"] <= whole]
    assert len(sent) >= 6 and sent[-1]["prompt_tokens"] == whole, sent
    steps = [b["prompt_tokens"] - a["prompt_tokens"] for a, b in zip(sent, sent[1:])]
    assert all(step <= PIECE for step in steps), steps  # no piece held slow for more than one
    for before, after in zip(sent, sent[1:]):
        assert after["cached_tokens"] >= before["prompt_tokens"] - 2 * BLOCK, sent  # the cut's block, and its last word
    assert len({w["replica"] for w in sent}) == 1 and all(w["priority"] == 10 for w in sent)


def test_an_agent_s_long_tool_result_is_warmed_in_pieces_cut_inside_it(stack):
    """Claude Code's API: a tool_result block of ~2,700 tokens (a file the agent read) is the uncached part; the
    warm reaches slow (through LiteLLM's Messages bridge) as prefixes ending inside that block's text, the block
    keeping its tool_use_id, each finding the one before cached."""
    clear_backends(stack["fast"], stack["slow_a"], stack["slow_b"])
    messages = [
        {"role": "user", "content": "Read config.py and tell me what it does."},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_01", "name": "read_file", "input": {"path": "config.py"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": long_text(11_000)}]},
    ]
    body = {"model": "fast", "system": "You are a coding agent.", "messages": messages, "max_tokens": 16,
            "tools": [{"name": "read_file", "description": "Read a file", "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}]}
    headers = {"Authorization": "Bearer sk-a", "x-litellm-session-id": "pieces-tool-result"}
    r = httpx.post(stack["proxy"].base_url + "/v1/messages", json=body, headers=headers, timeout=60)
    assert r.status_code == 200, r.text
    wait_for(lambda: len(warms(stack)) >= 4)
    time.sleep(1.0)
    sent = [w for w in warms(stack) if w["status"] == 200]
    prompts = [w["prompt_tokens"] for w in sent]
    ahead = [p for p in prompts if p <= prompts[0] + 3_000]  # the warm-ahead's pieces and whole (the reply-warm follows)
    assert len(ahead) >= 5, prompts
    steps = [b - a for a, b in zip(ahead, ahead[1:])]
    assert all(0 < step <= PIECE + 2 * BLOCK for step in steps[:4]), prompts  # no piece held slow for more than one
    for before, after in zip(sent[:4], sent[1:5]):
        assert after["cached_tokens"] >= before["prompt_tokens"] - 2 * BLOCK, sent
    assert len({w["replica"] for w in sent}) == 1 and all(w["priority"] == 10 for w in sent)


@pytest.mark.parametrize("leave", [True, False], ids=["client-leaves", "control-reads-to-the-end"])
def test_a_messages_stream_the_client_leaves_gets_no_reply_warm_of_its_partial_reply(stack, leave):
    """LiteLLM bills a stream the client left with a disconnect-time success event of the partial reply
    (metadata ``client_disconnected``); a Messages stream has no decode tap to drop the kept body. Before: that
    event queued a reply-warm of the partial reply (``kvwarm_warms_total{trigger="reply"}`` +1, a warm of a
    conversation the client never has). Now: none; a stream read to the end still gets its reply-warm."""
    messages = conversation(f"leave-{leave}")
    body = {"model": "fast-paced", "system": messages[0]["content"], "messages": messages[1:], "max_tokens": 400, "stream": True}
    headers = {"Authorization": "Bearer sk-a", "x-litellm-session-id": f"leaves-{leave}"}
    before = metric(stack, "kvwarm_warms_total", trigger="reply")
    events = 0
    with httpx.stream("POST", stack["proxy"].base_url + "/v1/messages", json=body, headers=headers, timeout=60) as r:
        assert r.status_code == 200
        for line in r.iter_lines():
            events += line.startswith("data: ")
            if leave and events >= 8:
                break  # the client leaves mid-reply (~4 s of decoding left)
    if leave:
        time.sleep(3.0)  # the disconnect-time success event has run by now
        assert metric(stack, "kvwarm_warms_total", trigger="reply") == before
    else:
        assert wait_for(lambda: metric(stack, "kvwarm_warms_total", trigger="reply") > before)


@pytest.mark.parametrize("skip", [{"prompt_logprobs": 1}, {"skip_reading_prefix_cache": True}], ids=["prompt_logprobs", "skip"])
def test_a_request_that_skips_the_prefix_cache_is_warmed_in_pieces_that_read_it(stack, skip):
    """Fault (breaker, 2026-12): a client's ``extra_body`` with ``prompt_logprobs`` (vLLM then reads no prefix-cache
    hit) or ``skip_reading_prefix_cache`` went into every warm piece, so each piece prefilled its whole prefix again:
    an 11.5k-token session put 215,539 prefilled tokens on slow (12,717 for the same session without the field),
    where LiteLLM alone puts none there. The pieces now leave them out and read what the one before cached."""
    clear_backends(stack["fast"], stack["slow_a"], stack["slow_b"])
    messages = conversation(f"skip-{next(iter(skip))}")
    headers = {"Authorization": "Bearer sk-a", "x-litellm-session-id": f"skip-{next(iter(skip))}"}
    body = {"model": "fast", "messages": messages, "max_tokens": 16, "extra_body": dict(skip)}
    response = httpx.post(stack["proxy"].base_url + "/v1/chat/completions", json=body, headers=headers, timeout=60)
    assert response.status_code == 200, response.text
    whole = tokenize_count(stack["slow_a"], "slow-27b", messages)
    wait_for(lambda: any(w["prompt_tokens"] > whole for w in warms(stack)))  # the reply-warm comes last
    time.sleep(0.3)
    sent = [w for w in warms(stack) if w["prompt_tokens"] <= whole]
    assert len(sent) == 9 and all(w["status"] == 200 for w in sent), sent
    for before, after in zip(sent, sent[1:]):
        assert after["cached_tokens"] >= before["prompt_tokens"] - BLOCK, sent
    assert whole <= sum(w["prompt_tokens"] - w["cached_tokens"] for w in sent) <= whole + BLOCK * (len(sent) - 1)
    (live,) = backend_requests(stack["fast"])
    assert live["status"] == 200 and live["cached_tokens"] == 0  # the client's own request keeps its field


@pytest.mark.parametrize(("api", "group", "fast_statuses"), [
    ("chat", "fast-to-paced", [200]), ("messages", "fast-to-paced", [200]),
    # the backstop's path: fast's window is overstated by the operator (5,000), so the grown turn (~4,150 tokens) is
    # sent to fast, refused there (4,096), and escalated by LiteLLM's fallback (chat; before: 13 warm requests)
    ("chat", "fast-overstated", [200, 400]),
    # bridged to chat, its hop carries chat-shaped messages (the system prompt one more): the pre-call's own count
    # of Anthropic messages travels with the session (before: a bridged request's warms went on, 12 requests)
    ("messages", "fast-overstated", [200, 400]),
    # the backend's own /v1/responses: LiteLLM sends a warm's max_output_tokens 1 as 16 (OpenAI's least), so warms are
    # told apart from live requests by their priority (before: 12 warm requests, as for Messages)
    ("responses", "fast-overstated", [200, 400])], ids=["chat", "messages", "chat-reactive", "messages-reactive", "responses-reactive"])
def test_a_warm_sends_nothing_more_once_its_session_s_escalated_turn_reached_the_target(stack, api, group, fast_statuses):
    """The session overflows fast while its warm's pieces are still prefilling on slow: the escalated turn holds the
    whole conversation, so the pieces not yet sent, the warm's whole body and the first turn's reply-warm are not sent
    (before: every one of them, each a proxy request finding the escalated turn's prefix cached)."""
    clear_backends(stack["fast"], stack["slow_paced"])
    superseded = metric(stack, "kvwarm_warm_pieces_total", outcome="superseded")
    session = f"superseded-{api}-{group}"
    messages = conversation(session)
    assert post(stack, api, session, messages, model=group).status_code == 200
    whole = tokenize_count(stack["slow_paced"], "slow-27b", messages)
    wait_for(lambda: any(r["priority"] == 10 for r in backend_requests(stack["slow_paced"], None)))  # the first piece is in
    grown = [*messages, {"role": "assistant", "content": "Sure."}, {"role": "user", "content": "More: " + long_text(6_000)}]
    assert FAST_WINDOW < tokenize_count(stack["slow_paced"], "slow-27b", grown) + 16 < OVERSTATED_WINDOW - 256
    assert post(stack, api, session, grown, model=group).status_code == 200
    time.sleep(3.0)  # what the warm would still send: 8 more pieces of ~0.15 s each, the whole body, the reply-warm
    rows = backend_requests(stack["slow_paced"], None)  # chat completions, or the backend's own /v1/responses
    served = [r for r in rows if r["priority"] != 10]
    assert len(served) == 1 and served[0]["status"] == 200, rows
    warmed = [r for r in rows if r["priority"] == 10]  # warms are sent at KVWARM_WARM_PRIORITY's 10
    # at most the pieces sent before the escalated turn's pre-call, and the one then in flight; never the whole body
    assert 1 <= len(warmed) <= 3 and all(r["prompt_tokens"] < whole for r in warmed), warmed
    assert wait_for(lambda: metric(stack, "kvwarm_warm_pieces_total", outcome="superseded") - superseded >= 8 - len(warmed))
    assert [r["status"] for r in backend_requests(stack["fast"], None)] == fast_statuses

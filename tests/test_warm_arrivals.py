"""A warm superseded by its session's live request (:mod:`litellm_kvwarm.warm_arrivals`): the registry, the piece
sender that stops (its ``send`` is a recording function), and the gate's record of an escalated request. The proxy
path is exercised in tests/e2e/test_warm_in_pieces.py."""

from __future__ import annotations

import asyncio

import pytest

from litellm_kvwarm import identity
from litellm_kvwarm.config import Settings
from litellm_kvwarm.warm_arrivals import LiveArrivals
from litellm_kvwarm.warm_gate import WarmGate
from litellm_kvwarm.warm_pieces import PieceSender

SESSION = "tenant-a:session-1"  # as warm metadata writes it: <tenant hash>:<session hash>


def chat_body(turns: int, session: str = SESSION, model: str = "slow") -> dict:
    messages = [{"role": "system", "content": "You are terse."}]
    for i in range(turns):
        messages += [{"role": "user", "content": f"question {i} " + "x" * 2_000},
                     {"role": "assistant", "content": f"answer {i} " + "y" * 2_000}]
    messages.append({"role": "user", "content": "last"})
    return {"model": model, "messages": messages, "max_tokens": 1,
            "metadata": {"kvwarm_warm": True, "kvwarm_session": session}}


def test_a_live_request_covers_warms_of_its_session_and_target_with_no_more_items():
    arrivals = LiveArrivals()
    assert not arrivals.covers(SESSION, "slow", 5)
    arrivals.arrive(SESSION, "slow", 8)
    arrivals.arrive(SESSION, "slow", 6)  # an older request arriving late never lowers what is held
    assert [arrivals.covers(SESSION, "slow", n) for n in (1, 7, 8, 9)] == [True, True, True, False]
    assert not arrivals.covers(SESSION, "medium", 3)  # another target
    assert not arrivals.covers("tenant-b:session-1", "slow", 3)  # the same session id of another tenant
    assert not arrivals.covers(SESSION, "slow", 0)
    body = chat_body(3)  # 8 messages
    assert arrivals.covers_warm("chat", body)
    assert not arrivals.covers_warm("chat", chat_body(4))  # a reply-warm: the live request's items plus more
    assert not arrivals.covers_warm("chat", {**body, "metadata": {}})  # a body without its session
    assert not arrivals.covers_warm("responses", body)  # no "input" items


def test_the_registry_is_bounded_fairly_between_tenants():
    arrivals = LiveArrivals(capacity=4)
    arrivals.arrive("tenant-a:s0", "slow", 3)
    for i in range(10):  # tenant b's burst of sessions pays for itself
        arrivals.arrive(f"tenant-b:s{i}", "slow", 3)
    assert len(arrivals) == 4
    assert arrivals.covers("tenant-a:s0", "slow", 3)
    assert arrivals.covers("tenant-b:s9", "slow", 3) and not arrivals.covers("tenant-b:s0", "slow", 3)
    with pytest.raises(ValueError):
        LiveArrivals(capacity=0)


def _sender(arrive_after: int | None, items: int):
    """A piece sender whose session's live request (``items`` items) reaches the target after ``arrive_after`` sends."""
    sent, counted, arrivals = [], [], LiveArrivals()

    async def send(kind, body):
        sent.append(len(body["messages"]))
        if arrive_after is not None and len(sent) == arrive_after:
            arrivals.arrive(SESSION, "slow", items)
        return "ok"

    return PieceSender(1_000, send, on_piece=lambda target, outcome: counted.append(outcome), arrivals=arrivals,
                       max_pieces=0), sent, counted, arrivals


def test_the_pieces_after_the_session_s_live_request_are_not_sent():
    sender, sent, counted, _ = _sender(arrive_after=2, items=21)
    body = chat_body(10)  # 22 messages, ~11k tokens: pieces of ~1k
    pieces = sender.plan("chat", body)
    assert len(pieces) >= 8
    assert asyncio.run(sender.send("chat", body)) == "ok"  # the live request held 21 items: not this warm's 22
    assert len(sent) == len(pieces) + 1 and counted == ["succeeded"] * len(pieces)

    sender, sent, counted, _ = _sender(arrive_after=2, items=22)
    assert asyncio.run(sender.send("chat", body)) is None
    assert sent == [p.items for p in pieces[:2]]  # two pieces, then nothing: neither the rest nor the whole body
    assert counted == ["succeeded", "succeeded"] + ["superseded"] * (len(pieces) - 2)
    assert sender.warmed.items("chat", body) == pieces[1].items  # what the warm itself sent


def test_a_warm_queued_before_its_session_s_live_request_sends_nothing_and_a_whole_warm_neither():
    sender, sent, counted, arrivals = _sender(arrive_after=None, items=0)
    arrivals.arrive(SESSION, "slow", 30)
    assert asyncio.run(sender.send("chat", chat_body(10))) is None
    assert sent == [] and counted.count("superseded") >= 8

    whole = PieceSender(0, sender._send, arrivals=arrivals)  # KVWARM_WARM_PIECE_TOKENS=0: whole warms
    assert asyncio.run(whole.send("chat", chat_body(10))) is None and sent == []
    assert asyncio.run(whole.send("chat", chat_body(10, session="tenant-b:session-1"))) == "ok" and sent == [22]


def test_the_gate_records_an_escalated_request_under_its_tenant_scoped_session():
    gate = WarmGate(Settings(), runner=lambda: None, count=lambda *a: None, secret="k")
    session = identity.Session("team-a", "conv-1", "litellm")
    body = {"model": "slow", "messages": [{"role": "user", "content": "hi"}] * 5}
    hashed = identity.hashed_session(session, "k")
    assert gate.arrival(session, "chat", body) == (hashed, 5)
    gate.arrived(gate.arrival(session, "chat", body), "slow")
    assert gate.arrivals.covers(hashed, "slow", 5) and not gate.arrivals.covers(hashed, "slow", 6)
    other = identity.hashed_session(identity.Session("team-b", "conv-1", "litellm"), "k")
    assert not gate.arrivals.covers(other, "slow", 1)
    assert gate.arrival(identity.Session("", "conv-2", "litellm"), "chat", body) is None  # no tenant: nothing kept
    assert gate.arrival(session, "responses", {"input": "a string"}) is None  # no items: nothing kept
    assert gate.arrival(session, "completion", {"prompt": ["a", "b"]}) is None and gate.arrival(None, "chat", body) is None
    # each API's own items: Anthropic's system is no item, a Responses input list is
    assert gate.arrival(session, "messages", {"system": "s", "messages": body["messages"][:3]}) == (hashed, 3)
    assert gate.arrival(session, "responses", {"instructions": "s", "input": body["messages"][:2]}) == (hashed, 2)
    gate.arrived(None, "slow")
    assert len(gate.arrivals) == 1

"""Warms in pieces, pure parts: where a conversation may be cut in each API shape, which prefixes are
sent for a piece size, what a session already warmed, and the sender's order and fallback (its
``send`` is a recording function: the Router call is exercised in tests/e2e/test_warm_pieces.py)."""

from __future__ import annotations

import asyncio
import logging

import pytest

from litellm_kvwarm.config import Settings
from litellm_kvwarm.meta import SALT_KEY
import functools

from litellm_kvwarm import warm_pieces
from litellm_kvwarm.warm_pieces import Warmed, WarmedPrefixes, cut_points, item_tokens, prefix_digest

# Most tests here are about piece sizes and cuts: unbounded in number (KVWARM_WARM_MAX_PIECES=0); the bound
# on their number has its own tests (test_the_number_of_pieces_is_bounded...).
plan_pieces = functools.partial(warm_pieces.plan_pieces, max_pieces=0)
PieceSender = functools.partial(warm_pieces.PieceSender, max_pieces=0)

SYSTEM = {"role": "system", "content": "You are terse."}


def turn(i: int, chars: int = 2_000) -> list[dict]:
    return [{"role": "user", "content": f"question {i} " + "x" * chars},
            {"role": "assistant", "content": f"answer {i} " + "y" * chars}]


def chat_body(turns: int, chars: int = 2_000, session: str = "s-hash", salt: str | None = "salt-a") -> dict:
    messages = [SYSTEM] + [m for i in range(turns) for m in turn(i, chars)] + [{"role": "user", "content": "last"}]
    metadata = {"kvwarm_warm": True, "kvwarm_session": session}
    if salt:
        metadata[SALT_KEY] = salt
    return {"model": "slow", "messages": messages, "max_tokens": 1, "stream": False, "metadata": metadata,
            "extra_body": {"priority": 10}}


@pytest.mark.parametrize("kind, items, expected", [
    ("chat", [SYSTEM, {"role": "user"}, {"role": "assistant"}, {"role": "tool"}, {"role": "assistant"}, {"role": "user"}],
     [1, 2, 3, 4, 5]),
    ("chat", [{"role": "user"}, {"role": "assistant"}, {"role": "function"}, {"role": "system"}], [1, 2]),
    ("messages", [{"role": "user"}, {"role": "assistant"}, {"role": "user", "content": [{"type": "tool_result"}]}], [1, 2]),
    ("responses", [{"role": "user", "content": "a"}, {"type": "function_call", "call_id": "c"},
                   {"type": "function_call", "call_id": "d"}, {"type": "function_call_output", "call_id": "c"},
                   {"type": "message", "role": "assistant"}, {"type": "message", "role": "user"}], [3, 4, 5]),
    ("completion", [{"role": "user"}, {"role": "user"}], []),
    ("chat", ["not a message", {"role": "user"}, 3], [1]),
], ids=["chat", "chat-legacy-function-not-before-system", "anthropic", "responses-not-between-calls", "completion",
        "odd-items"])
def test_cuts_at_message_boundaries(kind, items, expected):
    assert cut_points(kind, items) == expected


def test_each_piece_adds_at_most_a_piece_and_as_few_pieces_as_that_allows():
    body = chat_body(turns=10)  # ~505 tokens a message by the routing estimate
    sizes = item_tokens("chat", body["messages"])
    assert 450 <= sizes[1] <= 560 and sizes[0] < 20
    pieces = plan_pieces("chat", body, 1_100)
    assert [p.items for p in pieces] == [3, 5, 7, 9, 11, 13, 15, 17, 19]  # two messages fit a piece, three do not
    total = sum(sizes) + 5
    steps = [b.tokens - a.tokens for a, b in zip(pieces, pieces[1:])] + [total - pieces[-1].tokens]
    assert all(900 <= step <= 1_100 for step in steps), steps  # the last: what the whole warm adds
    for piece in pieces:
        assert piece.body["messages"] == body["messages"][:piece.items]
        assert piece.body["metadata"] == body["metadata"] and piece.body["metadata"] is not body["metadata"]
        assert piece.body["extra_body"] == {"priority": 10} and piece.body["max_tokens"] == 1
    assert [p.items for p in plan_pieces("chat", body, 2_100)] == [5, 9, 13, 17]
    assert [p.items for p in plan_pieces("chat", body, 1_000)] == list(range(2, 21))  # two messages are 1,010: one each


@pytest.mark.parametrize("piece_tokens, body, kind", [
    (0, chat_body(10), "chat"),
    (512, {"model": "slow", "prompt": "x" * 40_000}, "completion"),
    (512, {"model": "slow", "input": "x" * 40_000}, "responses"),
    (512, {"model": "slow", "messages": [{"role": "user", "content": "x" * 40_000}]}, "chat"),  # no whitespace to cut at
    (5_000, chat_body(2), "chat"),
], ids=["off", "text-completion", "responses-string", "one-word", "smaller-than-a-piece"])
def test_whole_warm_when_there_is_nothing_to_cut(piece_tokens, body, kind):
    assert plan_pieces(kind, body, piece_tokens) == []


def test_a_long_message_is_cut_inside_its_text_so_no_piece_holds_the_server_long():
    """A 10k-token tool result (or pasted document) would otherwise be one piece: it is cut at whitespace every
    half piece, each piece adding at most a piece; the prefix ends with the message's text up to the cut."""
    words = " ".join(f"word{i % 97}" for i in range(8_000))  # ~47k characters, ~11.7k routing tokens
    body = {"model": "slow", "metadata": {"kvwarm_session": "s"}, "messages": [
        SYSTEM, {"role": "user", "content": "read this"}, {"role": "assistant", "content": "ok"},
        {"role": "tool", "tool_call_id": "c1", "content": words}, {"role": "user", "content": "summarise"}]}
    pieces = plan_pieces("chat", body, 512)
    assert len(pieces) >= 15
    sizes = [b.tokens - a.tokens for a, b in zip(pieces, pieces[1:])]
    assert all(256 <= size <= 512 for size in sizes), sizes  # cuts half a piece apart: the farthest within a piece
    inside = [p for p in pieces if p.items == 3]
    assert inside and all(p.body["messages"][:3] == body["messages"][:3] for p in inside)
    for piece in inside:
        cut = piece.body["messages"][3]
        assert cut["role"] == "tool" and cut["tool_call_id"] == "c1" and words.startswith(cut["content"])
        assert len(cut["content"]) < len(words) and words[len(cut["content"])] == " "
    assert body["messages"][3]["content"] == words  # the warm's own body is left whole
    # not inside a content list that ends with an image (the text before it is cut only at message boundaries)
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    parts = dict(body, messages=body["messages"][:3] + [{"role": "user", "content": [{"type": "text", "text": words}, image]}])
    assert plan_pieces("chat", parts, 512) == []


def test_pieces_start_after_what_the_session_warmed():
    body = chat_body(10)
    assert [p.items for p in plan_pieces("chat", body, 1_100, warmed_items=13)] == [15, 17, 19]
    assert plan_pieces("chat", body, 1_100, warmed_items=19) == []


def test_warmed_prefix_is_recognised_only_for_the_same_history_salt_and_target():
    warmed = WarmedPrefixes()
    old = chat_body(6)
    warmed.remember("chat", old, len(old["messages"]))
    grown = chat_body(6)
    grown["messages"] = old["messages"] + [{"role": "assistant", "content": "reply"}, {"role": "user", "content": "more"}]
    assert warmed.items("chat", grown) == len(old["messages"])
    edited = dict(grown, messages=[SYSTEM, {"role": "user", "content": "edited"}] + grown["messages"][2:])
    assert warmed.items("chat", edited) == 0  # a branch at the first question: older than the checkpoints kept
    other_salt = dict(grown, metadata={**grown["metadata"], SALT_KEY: "salt-b"})
    assert warmed.items("chat", other_salt) == 0
    other_target = dict(grown, model="slow-2")
    assert warmed.items("chat", other_target) == 0
    other_tools = dict(grown, tools=[{"type": "function", "function": {"name": "f"}}])
    assert warmed.items("chat", other_tools) == 0
    other_session = chat_body(6, session="other")
    assert warmed.items("chat", other_session) == 0
    # the priority field (dropped after a refusal) is not part of what renders
    unprioritised = {k: v for k, v in grown.items() if k != "extra_body"}
    assert prefix_digest("chat", grown, 5) == prefix_digest("chat", unprioritised, 5)
    assert prefix_digest("chat", grown, 5) == prefix_digest("chat", dict(grown, extra_body={}), 5)
    assert prefix_digest("chat", grown, 5) != prefix_digest("chat", dict(grown, extra_body={"cache_salt": "x"}), 5)
    thinking = dict(grown, extra_body={"chat_template_kwargs": {"enable_thinking": False}})
    assert prefix_digest("chat", grown, 5) != prefix_digest("chat", thinking, 5)
    # a client's own per-request fields in extra_body (a seed, a benchmark's reply id) do not shape the prompt
    assert prefix_digest("chat", grown, 5) == prefix_digest("chat", dict(grown, extra_body={"seed": 7, "kvwarm_bench_reply": 3}), 5)


def test_the_longest_shared_prefix_is_found_when_the_last_message_grew_or_was_edited():
    warmed = WarmedPrefixes()
    conversation = chat_body(6)
    partial = dict(conversation, messages=conversation["messages"] + [{"role": "assistant", "content": "The answer so"}])
    warmed.remember("chat", partial, len(partial["messages"]))  # a decode warm: the reply so far
    longer = dict(conversation, messages=conversation["messages"] + [{"role": "assistant", "content": "The answer so far is"}])
    assert warmed.items("chat", longer) == len(conversation["messages"])  # all but the grown reply
    # a reply-warm of a reasoning family closes with an empty user message; the next request edits it
    closed = dict(longer, messages=longer["messages"] + [{"role": "user", "content": ""}])
    warmed.remember("chat", closed, len(closed["messages"]))
    asked = dict(longer, messages=longer["messages"] + [{"role": "user", "content": "and then?"}])
    assert warmed.items("chat", asked) == len(longer["messages"])
    # the client rewrote its last question: everything before it (a cut point) is still warm
    rewritten = dict(conversation, messages=conversation["messages"][:-1] + [{"role": "user", "content": "other"}])
    assert warmed.items("chat", rewritten) == len(conversation["messages"]) - 1


def test_warmed_prefixes_are_bounded():
    warmed = WarmedPrefixes(capacity=2)
    for i in range(3):
        warmed.remember("chat", chat_body(2, session=f"s{i}"), 3)
    assert len(warmed) == 2
    assert warmed.items("chat", chat_body(2, session="s0")) == 0
    assert warmed.items("chat", chat_body(2, session="s2")) == 3


class Recorder:
    def __init__(self, fail_at: int | None = None):
        self.sent: list[int] = []
        self.fail_at = fail_at

    async def __call__(self, kind: str, body: dict) -> str:
        self.sent.append(len(body["messages"]))
        if self.fail_at is not None and len(self.sent) == self.fail_at:
            raise RuntimeError("backend said no")
        return "ok"


def test_sender_sends_pieces_in_order_then_the_whole_warm_and_remembers():
    send, counted = Recorder(), []
    sender = PieceSender(1_000, send, on_piece=lambda target, outcome: counted.append((target, outcome)))
    body = chat_body(10)
    assert asyncio.run(sender.send("chat", body)) == "ok"
    assert send.sent == [*range(2, 21), 22]
    assert counted == [("slow", "succeeded")] * 19
    # the next turn of the session: two more messages (~1,500 tokens) → one piece after what was warmed, the whole
    send.sent.clear()
    grown = dict(body, messages=body["messages"] + turn(99)[1:] + [{"role": "user", "content": "z " * 2_000}])
    asyncio.run(sender.send("chat", grown))
    assert send.sent == [23, 24, 24]  # the new question (~1,000 tokens) is cut inside once, then the whole


class HTTPError(Exception):
    def __init__(self, status_code: int):
        super().__init__(f"HTTP {status_code}")
        self.status_code = status_code


@pytest.mark.parametrize("status, whole_sent", [(400, True), (422, True), (404, True), (429, False), (500, False),
                                                (503, False), (None, False)])
def test_a_refused_piece_leaves_the_whole_warm_a_server_in_trouble_ends_it(status, whole_sent):
    """A prefix the server refuses as sent (a strict server and a prefix ending with a tool call) must not cost the
    warm: the whole body goes at once. A server in trouble (429, 5xx, a timeout) gets no second, larger request
    right after (found by a breaker: a 429 on a piece was answered with the whole 2,858-token warm)."""
    sent: list[int] = []
    counted: list[str] = []

    async def send(kind, body):
        sent.append(len(body["messages"]))
        if len(sent) == 2:
            raise HTTPError(status) if status is not None else TimeoutError()

    sender = PieceSender(1_000, send, on_piece=lambda target, outcome: counted.append(outcome))
    if whole_sent:
        asyncio.run(sender.send("chat", chat_body(10)))
        assert sent == [2, 3, 22]
    else:
        with pytest.raises((HTTPError, TimeoutError)):
            asyncio.run(sender.send("chat", chat_body(10)))
        assert sent == [2, 3]
    assert counted == ["succeeded", "failed"]

    async def refuse(kind, body):
        raise ValueError("the whole warm failed")

    with pytest.raises(ValueError, match="whole warm failed"):
        asyncio.run(PieceSender(1_000, refuse).send("chat", chat_body(10)))


@pytest.mark.parametrize("bad", ["just a string", None, {"role": "user", "content": 12345}, {"content": "no role"},
                                 {"role": "robot", "content": "hi"}], ids=["string", "none", "int-content", "no-role", "odd-role"])
def test_a_malformed_conversation_is_not_cut(bad):
    """LiteLLM refuses the whole request; its valid prefixes must not reach the server as pieces (found by a
    breaker: 7 pieces reached slow for a request LiteLLM answered 400)."""
    body = chat_body(10)
    body["messages"] = body["messages"][:-1] + [bad, body["messages"][-1]]
    assert plan_pieces("chat", body, 512) == []
    fine = chat_body(10)
    fine["messages"] = fine["messages"][:-1] + [{"role": "assistant", "content": None, "tool_calls": []}, fine["messages"][-1]]
    assert plan_pieces("chat", fine, 512) != []


def test_an_unreadable_body_is_warmed_whole():
    def broken(kind, body):
        raise TypeError("estimator cannot read this")

    send = Recorder()
    asyncio.run(PieceSender(1_000, send, estimate=broken).send("chat", chat_body(10)))
    assert send.sent == [22]


def test_setting_default_and_env():
    assert Settings().warm_piece_tokens == 512
    assert Settings.from_env({"KVWARM_WARM_PIECE_TOKENS": "0"}).warm_piece_tokens == 0
    with pytest.raises(ValueError, match="KVWARM_WARM_PIECE_TOKENS"):
        Settings.from_env({"KVWARM_WARM_PIECE_TOKENS": "-1"})


# ------------------------------------------------------------------------------------------- decode warms

def chunk(content=None, tool_calls=None, reasoning=None) -> dict:
    delta = {k: v for k, v in (("content", content), ("tool_calls", tool_calls), ("reasoning_content", reasoning)) if v}
    return {"choices": [{"index": 0, "delta": delta}]}


def test_decode_tap_submits_the_reply_so_far_every_n_tokens():
    from litellm_kvwarm.decode_warm import DecodeTap

    got: list[str] = []

    async def submit(text):
        got.append(text)

    async def run():
        tap = DecodeTap(10, submit)  # 40 characters
        for i in range(25):
            await tap.feed(chunk(content=f"w{i:02d} "))  # 4 characters each
            await tap.feed(chunk(reasoning="thinking..."))  # not text the next request sends back
        await tap.feed({"choices": []})
        await tap.feed(b"data: not a chat chunk")
        return tap

    tap = asyncio.run(run())
    assert [len(t) for t in got] == [40, 80]
    assert got[1] == "".join(f"w{i:02d} " for i in range(20)) and tap.submitted == 2


def test_decode_tap_stops_at_a_tool_call_and_after_a_failure():
    from litellm_kvwarm.decode_warm import DecodeTap

    got: list[str] = []

    async def submit(text):
        got.append(text)

    async def calls():
        tap = DecodeTap(1, submit)
        await tap.feed(chunk(content="abcd"))
        await tap.feed(chunk(tool_calls=[{"index": 0, "function": {"name": "ls"}}]))
        await tap.feed(chunk(content="efgh"))
        return tap

    assert asyncio.run(calls()).stopped and got == ["abcd"]

    async def broken(text):
        raise RuntimeError("gate failed")

    async def failing():
        tap = DecodeTap(1, broken)
        await tap.feed(chunk(content="abcd"))  # never raises into the stream
        await tap.feed(chunk(content="efgh"))
        return tap

    tap = asyncio.run(failing())
    assert tap.stopped and tap.submitted == 0
    with pytest.raises(ValueError):
        DecodeTap(0, broken)


def test_what_returned_is_remembered_when_the_whole_warm_fails_or_is_cancelled():
    calls: list[int] = []

    async def whole_fails(kind, body):
        calls.append(len(body["messages"]))
        if len(body["messages"]) == 22:
            raise RuntimeError("timeout at the whole warm")

    sender = PieceSender(1_000, whole_fails)
    with pytest.raises(RuntimeError):
        asyncio.run(sender.send("chat", chat_body(10)))
    assert calls == [*range(2, 21), 22]
    assert sender.warmed.items("chat", chat_body(10)) == 20  # the next warm of the session starts after the last piece
    calls.clear()
    with pytest.raises(RuntimeError):  # the whole body fails again: only it is tried, no piece again
        asyncio.run(sender.send("chat", chat_body(10)))
    assert calls == [22]

    async def cancelled(kind, body):
        if len(body["messages"]) > 5:
            raise asyncio.CancelledError

    sender = PieceSender(1_000, cancelled)
    with pytest.raises(asyncio.CancelledError):
        asyncio.run(sender.send("chat", chat_body(10)))
    assert sender.warmed.items("chat", chat_body(10)) == 5


def test_no_cut_inside_an_assistant_message_where_the_template_renders_a_last_one_differently():
    """Qwen3-family templates give a last assistant message a <think> block it does not have once more follows:
    a piece ending inside one would warm nothing the next request reuses."""
    words = " ".join(f"word{i % 97}" for i in range(3_000))
    body = {"model": "slow", "metadata": {"kvwarm_session": "s"}, "messages": [
        SYSTEM, {"role": "user", "content": "tell me"}, {"role": "assistant", "content": words}, {"role": "user", "content": "more"}]}
    assert any(p.items == 2 for p in plan_pieces("chat", body, 512))
    assert not any(p.items == 2 for p in plan_pieces("chat", body, 512, split_assistant=False))
    sent: list[int] = []

    async def send(kind, b):
        sent.append(len(b["messages"][-1]["content"]) if b["messages"][-1]["role"] == "assistant" else -1)

    qwen = PieceSender(512, send, served_model=lambda group: "Qwen/Qwen3-32B" if group == "slow" else None)
    asyncio.run(qwen.send("chat", body))
    assert all(n in (-1, len(words)) for n in sent) and len(sent) >= 2  # whole messages only
    sent.clear()
    asyncio.run(PieceSender(512, send, served_model=lambda group: "meta-llama/Llama-3.1-70B").send("chat", body))
    assert any(0 < n < len(words) for n in sent)


def test_a_decode_warm_skips_what_the_one_before_sent_of_the_growing_reply():
    """Each decode warm holds the reply so far; the next one finds that text warmed and cuts nothing inside it
    again (otherwise every decode warm would resend the reply's earlier pieces, cached but each a round trip)."""
    reply = " ".join(f"tok{i}" for i in range(1_600))  # ~2,900 routing tokens of reply so far
    conversation = [SYSTEM, {"role": "user", "content": "go"}]
    first = {"model": "slow", "metadata": {"kvwarm_session": "s"},
             "messages": conversation + [{"role": "assistant", "content": reply[:6_000]}]}
    later = dict(first, messages=conversation + [{"role": "assistant", "content": reply}])
    sent: list[int] = []

    async def send(kind, b):
        sent.append(len(b["messages"][-1]["content"]))

    sender = PieceSender(512, send)
    asyncio.run(sender.send("chat", first))
    assert sender.warmed.held("chat", later) == Warmed(2, 6_000)
    sent.clear()
    asyncio.run(sender.send("chat", later))
    assert sent and all(n > 6_000 for n in sent)  # pieces only past what was warmed, then the whole
    assert sent[-1] == len(reply)
    # a different reply at the same place is not taken for the warmed one
    other = dict(first, messages=conversation + [{"role": "assistant", "content": "x " + reply}])
    assert sender.warmed.held("chat", other) == Warmed(2, 0)


def test_a_client_that_leaves_mid_stream_gets_no_warm_of_the_reply_it_never_got():
    """The stream's generator is closed when the client disconnects: the tap stops and drops the kept reply-warm
    body (found by a breaker: a decode warm and a reply-warm of a partial reply were sent after a disconnect)."""
    from litellm_kvwarm.decode_warm import DecodeTap
    from litellm_kvwarm.metrics import Metrics
    from litellm_kvwarm.stream_errors import pass_through
    from prometheus_client import CollectorRegistry

    dropped: list[str] = []
    got: list[str] = []

    async def submit(text):
        got.append(text)

    async def stream():
        for i in range(100):
            yield chunk(content=f"w{i:02d} ")

    async def run():
        tap = DecodeTap(2, submit, abandon=lambda: dropped.append("kept body"))
        gen = pass_through(stream(), {"model": "fast"}, Metrics.create(CollectorRegistry()), tap)
        async for i, _ in _enumerate(gen):
            if i == 5:
                break
        await gen.aclose()
        return tap

    async def _enumerate(gen):
        i = 0
        async for item in gen:
            yield i, item
            i += 1

    tap = asyncio.run(run())
    assert dropped == ["kept body"] and tap.stopped and len(got) == 2  # 8 characters a warm: 2 warms in 6 chunks


@pytest.mark.parametrize("kind, item, path", [
    ("messages", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "WORDS"}]},
     lambda i: i["content"][0]["content"]),
    ("messages", {"role": "user", "content": [{"type": "image", "source": {"type": "url", "url": "u"}},
                                              {"type": "text", "text": "WORDS"}]}, lambda i: i["content"][-1]["text"]),
    ("responses", {"type": "function_call_output", "call_id": "c1", "output": "WORDS"}, lambda i: i["output"]),
    ("responses", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "WORDS"}]},
     lambda i: i["content"][0]["text"]),
    ("chat", {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "u"}}, {"type": "text", "text": "WORDS"}]},
     lambda i: i["content"][-1]["text"]),
], ids=["anthropic-tool-result", "anthropic-text-after-image", "responses-tool-output", "responses-input-text", "chat-parts"])
def test_an_agent_s_long_tool_result_is_cut_inside_its_text_in_its_own_api_shape(kind, item, path):
    """Agents on /v1/messages and /v1/responses outgrow windows with tool results: those are cut inside too,
    the item keeping its shape (ids, blocks before the text) and only its text shortened."""
    words = " ".join(f"line{i} = value{i % 13}" for i in range(2_500))
    def fill(node):
        if isinstance(node, dict):
            return {k: fill(v) for k, v in node.items()}
        if isinstance(node, list):
            return [fill(v) for v in node]
        return words if node == "WORDS" else node
    field = "input" if kind == "responses" else "messages"
    opener = {"role": "user", "content": "run the tool"} if kind != "responses" else {"role": "user", "content": "run the tool"}
    body = {"model": "slow", "metadata": {"kvwarm_session": "s"}, field: [opener, fill(item)]}
    pieces = plan_pieces(kind, body, 512)
    inside = [p for p in pieces if len(p.body[field]) == 2]
    assert len(inside) >= 8
    for piece in inside:
        cut = piece.body[field][1]
        text = path(cut)
        assert words.startswith(text) and len(text) < len(words)
        assert {k: v for k, v in cut.items() if k not in ("content", "output")} == {k: v for k, v in fill(item).items()
                                                                                if k not in ("content", "output")}
    assert path(body[field][1]) == words  # the warm's own body is left whole


# ------------------------------------------------------------- no piece leaves a tool call unanswered

def _last_piece_items(kind: str, piece) -> list:
    return piece.body["messages" if kind != "responses" else "input"]


@pytest.mark.parametrize("kind, items, expected", [
    ("chat", [{"role": "user"}, {"role": "assistant", "tool_calls": [{"id": "a"}, {"id": "b"}]},
              {"role": "tool", "tool_call_id": "a"}, {"role": "tool", "tool_call_id": "b"}, {"role": "assistant"}],
     [True, True, False, False, True, True]),
    ("chat", [{"role": "assistant", "function_call": {"name": "f"}}, {"role": "function", "name": "f"}], [True, False, True]),
    ("messages", [{"role": "user", "content": "q"},
                  {"role": "assistant", "content": [{"type": "text", "text": "t"}, {"type": "tool_use", "id": "u1"},
                                                    {"type": "server_tool_use", "id": "s1"}]},
                  {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "u1"}]}],
     [True, True, False, True]),
    ("responses", [{"role": "user", "content": "q"}, {"type": "web_search_call", "id": "ws"},
                   {"type": "function_call", "call_id": "c"}, {"type": "computer_call", "call_id": "d"},
                   {"type": "function_call_output", "call_id": "c"}, {"type": "computer_call_output", "call_id": "d"}],
     [True, True, True, False, False, False, True]),
    ("chat", [{"role": "assistant", "tool_calls": [{"id": ["odd"]}, "x", {"id": None}]}, 3, {"role": "tool"}], [True, True, True, True]),
], ids=["chat-parallel", "chat-legacy-function", "anthropic-client-tools-only", "responses-by-call-id", "odd-shapes"])
def test_closed_prefixes_track_every_call_to_its_answer(kind, items, expected):
    from litellm_kvwarm.warm_prefixes import closed_prefixes

    assert closed_prefixes(kind, items) == expected


def _agent_bodies() -> dict[str, dict]:
    """One conversation per API shape: long text, then an assistant turn calling two tools in parallel, two
    long results, a reply and a long user message; every stretch several pieces long at 300 tokens."""
    long = "word " * 1_200  # ~1.2k tokens by the routing estimate
    chat = [SYSTEM, {"role": "user", "content": "task " + long},
            {"role": "assistant", "content": "calling " + long,
             "tool_calls": [{"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                            {"id": "b", "type": "function", "function": {"name": "g", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "a", "content": "result a " + long},
            {"role": "tool", "tool_call_id": "b", "content": "result b " + long},
            {"role": "assistant", "content": "done " + long}, {"role": "user", "content": "next " + long}]
    anthropic = [{"role": "user", "content": "task " + long},
                 {"role": "assistant", "content": [{"type": "text", "text": "calling " + long},
                                                   {"type": "tool_use", "id": "a", "name": "f", "input": {}},
                                                   {"type": "tool_use", "id": "b", "name": "g", "input": {}}]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "result a " + long},
                                              {"type": "tool_result", "tool_use_id": "b", "content": "result b " + long}]},
                 {"role": "assistant", "content": "done " + long}, {"role": "user", "content": "next " + long}]
    responses = [{"role": "user", "content": "task " + long},
                 {"type": "function_call", "call_id": "a", "name": "f", "arguments": "{}"},
                 {"type": "function_call", "call_id": "b", "name": "g", "arguments": "{}"},
                 {"type": "function_call_output", "call_id": "a", "output": "result a " + long},
                 {"type": "function_call_output", "call_id": "b", "output": "result b " + long},
                 {"role": "assistant", "content": "done " + long}, {"role": "user", "content": "next " + long}]
    return {"chat": {"model": "slow", "messages": chat}, "messages": {"model": "slow", "messages": anthropic, "max_tokens": 1},
            "responses": {"model": "slow", "input": responses}}


@pytest.mark.parametrize("kind", ["chat", "messages", "responses"])
def test_no_piece_leaves_a_tool_call_unanswered(kind):
    from litellm_kvwarm.warm_prefixes import closed_prefixes

    body = _agent_bodies()[kind]
    pieces = plan_pieces(kind, body, 300)
    assert len(pieces) >= 8, [p.items for p in pieces]  # the long stretches are still cut
    for piece in pieces:
        items = _last_piece_items(kind, piece)
        assert closed_prefixes(kind, items)[-1], (piece.items, items[-1])
    # the first result of the parallel pair is never cut inside (its sibling would be unanswered); the last is
    at_pair = {"chat": 3, "messages": 2, "responses": 3}[kind]
    partial = [p for p in pieces if p.items == at_pair and len(_last_piece_items(kind, p)) == at_pair + 1]
    if kind == "messages":  # both results are blocks of one user message: cut inside its last block only
        assert partial and all(len(_last_piece_items(kind, p)[-1]["content"]) == 2 for p in partial)
    else:
        assert partial == []
        assert any(p.items == at_pair + 1 and len(_last_piece_items(kind, p)) == at_pair + 2 for p in pieces)


def test_an_anthropic_body_with_thinking_gets_no_piece_ending_with_an_assistant_message():
    body = _agent_bodies()["messages"]
    plain = plan_pieces("messages", body, 300)
    assert any(_last_piece_items("messages", p)[-1]["role"] == "assistant" for p in plain)  # allowed without thinking
    for thinking in ({"type": "enabled", "budget_tokens": 2048}, {"type": "adaptive"}):
        pieces = plan_pieces("messages", {**body, "thinking": thinking}, 300)
        assert pieces and all(_last_piece_items("messages", p)[-1]["role"] == "user" for p in pieces)
    disabled = plan_pieces("messages", {**body, "thinking": {"type": "disabled"}}, 300)
    assert [(p.items, p.tokens) for p in disabled] == [(p.items, p.tokens) for p in plain]


def test_the_number_of_pieces_is_bounded_and_the_pieces_grow_instead():
    body = chat_body(turns=40)  # 81 messages of ~505 tokens: ~40k tokens
    unbounded = warm_pieces.plan_pieces("chat", body, 512, max_pieces=0)
    assert len(unbounded) == 79  # one message a piece (two are over 512)
    for cap in (16, 8, 3):
        pieces = warm_pieces.plan_pieces("chat", body, 512, max_pieces=cap)
        assert cap * 0.6 <= len(pieces) <= cap, (cap, [p.items for p in pieces])
        total = sum(item_tokens("chat", body["messages"])) + 5
        steps = [b.tokens - a.tokens for a, b in zip(pieces, pieces[1:])] + [total - pieces[-1].tokens]
        assert max(steps) <= 2.3 * total / (cap + 1), (cap, steps)  # about even: no stretch left for the whole warm
        for piece in pieces:
            assert piece.body["messages"] == body["messages"][:piece.items]
    assert [p.items for p in warm_pieces.plan_pieces("chat", chat_body(turns=3), 512)] == \
        [p.items for p in plan_pieces("chat", chat_body(turns=3), 512)]  # under the bound: the same pieces
    assert warm_pieces.DEFAULT_MAX_PIECES == Settings().warm_max_pieces == 64


def test_the_sender_sends_at_most_the_bound_then_the_whole_warm():
    sent: list[int] = []

    async def send(kind, body):
        sent.append(len(body["messages"]))
        return "ok"

    sender = warm_pieces.PieceSender(512, send, max_pieces=4)
    assert asyncio.run(sender.send("chat", chat_body(turns=40))) == "ok"
    assert 2 <= len(sent) - 1 <= 4 and sent[-1] == 82 and sent == sorted(sent)


def test_pieces_the_bound_makes_larger_than_asked_are_counted_and_logged_once_per_target(caplog):
    """An operator who sized KVWARM_WARM_PIECE_TOKENS for a slow server sees when KVWARM_WARM_MAX_PIECES overrides it:
    a counter per target, and one INFO line per target saying which setting to raise."""
    from prometheus_client import CollectorRegistry

    from litellm_kvwarm.metrics import Metrics

    metrics = Metrics.create(CollectorRegistry())
    sent: list[int] = []

    async def send(kind, body):
        sent.append(len(body["messages"]))
        return "ok"

    enlarged: list[int] = []
    pieces = warm_pieces.plan_pieces("chat", chat_body(turns=40), 256, max_pieces=16, on_enlarged=enlarged.append)
    assert len(pieces) <= 16 and len(enlarged) == 1 and enlarged[0] > 256
    assert max(b.tokens - a.tokens for a, b in zip(pieces, pieces[1:])) <= enlarged[0]
    none: list[int] = []
    warm_pieces.plan_pieces("chat", chat_body(turns=40), 256, max_pieces=0, on_enlarged=none.append)
    warm_pieces.plan_pieces("chat", chat_body(turns=3), 512, max_pieces=16, on_enlarged=none.append)
    uncut = chat_body(turns=4, chars=1_150)  # messages a little over a piece each: 8 pieces, at message boundaries
    warm_pieces.plan_pieces("chat", uncut, 256, max_pieces=8, on_enlarged=none.append)
    assert none == []  # no bound, or a bound the plan stays under (its pieces are what no bound gives): not reported
    assert [p.tokens for p in warm_pieces.plan_pieces("chat", uncut, 256, max_pieces=8)] == \
        [p.tokens for p in warm_pieces.plan_pieces("chat", uncut, 256, max_pieces=0)]

    sender = warm_pieces.PieceSender(256, send, max_pieces=16, on_enlarged=metrics.warm_pieces_enlarged)
    with caplog.at_level(logging.INFO, logger="litellm_kvwarm.warm"):
        for target in ("slow", "slow", "other"):
            asyncio.run(sender.send("chat", dict(chat_body(turns=40), model=target)))
            sender.warmed = WarmedPrefixes(8)  # forget the warm: the next one is cut from the start again
        asyncio.run(sender.send("chat", dict(chat_body(turns=3), model="small")))
    value = lambda target: metrics.warm_pieces_enlarged.labels(target)._value.get()  # noqa: E731
    assert (value("slow"), value("other"), value("small")) == (2, 1, 0)
    lines = [r.getMessage() for r in caplog.records if "KVWARM_WARM_MAX_PIECES=16" in r.getMessage()]
    assert len(lines) == 2 and "'slow'" in lines[0] and "'other'" in lines[1]
    assert "not KVWARM_WARM_PIECE_TOKENS=256" in lines[0]

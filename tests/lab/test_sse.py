"""The one SSE reader (``litellm_kvwarm.lab.sse``) on real stream shapes: LiteLLM's and vLLM's chat
chunks, keep-alive comments, ``[DONE]``, a mid-stream error event, and bodies split across network
chunks at awkward places (inside a line, inside a UTF-8 character, between the two newlines)."""

from __future__ import annotations

import json

import httpx
import pytest

from litellm_kvwarm.lab.sse import DONE, SseError, decode_payload, iter_events, iter_payloads, read_stream

ROLE = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "fast-8b",
        "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]}


def _chunk(text: str, finish: str | None = None) -> dict:
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "fast-8b",
            "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": finish}]}


USAGE = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "fast-8b", "choices": [],
         "usage": {"prompt_tokens": 17_000, "completion_tokens": 2, "total_tokens": 17_002,
                   "prompt_tokens_details": {"cached_tokens": 16_384}}}
# What LiteLLM streams when the backend fails after the 200 status line was sent.
ERROR = {"error": {"message": "litellm.ContextWindowExceededError: ...", "type": None, "param": None, "code": "400"}}


def _body(*events: object, done: bool = True) -> str:
    text = "".join(f"data: {json.dumps(e, ensure_ascii=False)}\n\n" for e in events)  # raw UTF-8, as pydantic (vLLM, LiteLLM) writes it
    return text + ("data: [DONE]\n\n" if done else "")


def _lines(body: str, *pieces: int) -> list[str]:
    """``body`` as an httpx streaming response cut into byte chunks at ``pieces`` (offsets), read
    back with ``iter_lines()``: what the callers hand to the reader."""
    raw = body.encode("utf-8")
    cuts = [0, *pieces, len(raw)]
    chunks = [raw[a:b] for a, b in zip(cuts, cuts[1:])]
    return list(httpx.Response(200, content=iter(chunks)).iter_lines())


class Clock:
    """A clock that advances 0.25 s every time it is read."""

    def __init__(self) -> None:
        self.now = 10.0

    def __call__(self) -> float:
        self.now += 0.25
        return self.now


def test_a_chat_stream_with_usage_reads_into_events_usage_text_and_done():
    body = _body(ROLE, _chunk("Hel"), _chunk("lo", "length"), USAGE)
    result = read_stream(_lines(body), began=10.0, clock=Clock())
    assert result.events == [ROLE, _chunk("Hel"), _chunk("lo", "length"), USAGE]
    assert result.text == "Hello"
    assert result.usage == USAGE["usage"]
    assert result.done is True and result.errors == []
    assert result.ttft_s == pytest.approx(0.25)  # the role chunk is the first with choices: one clock read


def test_chunk_boundaries_inside_a_line_a_utf8_character_and_between_newlines():
    body = _body(ROLE, _chunk("naïve café ✓"), USAGE)
    encoded = body.encode("utf-8")
    inside_char = encoded.index("✓".encode("utf-8")) + 1  # splits the 3-byte character
    between_newlines = encoded.index(b"\n\n") + 1
    inside_line = 7
    for cuts in [(inside_line,), (inside_char,), (between_newlines,), tuple(range(1, len(encoded)))]:
        result = read_stream(_lines(body, *cuts))
        assert result.text == "naïve café ✓", cuts
        assert result.usage == USAGE["usage"] and result.done


def test_comments_and_other_fields_are_ignored_and_multi_line_data_is_joined():
    lines = [": keep-alive", "", "event: message", "id: 7", "retry: 1000", 'data: {"choices":', 'data: []}', "",
             ":another comment", "data:[DONE]", ""]
    assert list(iter_payloads(lines)) == ['{"choices":\n[]}', "[DONE]"]
    assert list(iter_events(lines)) == [{"choices": []}]


def test_done_ends_the_events_and_what_follows_is_read_but_ignored():
    lines = _lines(_body(_chunk("a")) + "data: " + json.dumps(_chunk("after")) + "\n\n")
    assert list(iter_payloads(lines))[-2:] == [DONE, json.dumps(_chunk("after"))]
    assert list(iter_events(lines)) == [_chunk("a")]
    result = read_stream(iter(lines))
    assert result.text == "a" and result.done


def test_a_stream_cut_before_done_keeps_its_last_open_event():
    lines = ["data: " + json.dumps(_chunk("a")), "", "data: " + json.dumps(_chunk("b"))]  # no blank line, no [DONE]
    result = read_stream(lines)
    assert result.text == "ab" and result.done is False


def test_an_error_event_is_kept_apart_and_is_not_the_first_token():
    body = _body(ERROR, done=False)
    result = read_stream(_lines(body), began=0.0, clock=Clock())
    assert result.errors == [ERROR] and result.events == [ERROR]
    assert result.ttft_s is None and result.usage is None and result.text == "" and not result.done


def test_an_error_after_some_tokens_keeps_both():
    result = read_stream(_lines(_body(ROLE, _chunk("par"), ERROR)))
    assert result.text == "par" and result.errors == [ERROR] and result.done


def test_a_payload_that_is_not_json_raises_unless_skipped():
    lines = ["data: {not json", "", "data: " + json.dumps(_chunk("x")), "", "data: [DONE]", ""]
    with pytest.raises(SseError) as info:
        read_stream(lines)
    assert info.value.payload == "{not json" and isinstance(info.value, ValueError)
    assert read_stream(lines, skip_invalid=True).text == "x"
    assert list(iter_events(lines, skip_invalid=True)) == [_chunk("x")]
    with pytest.raises(SseError):
        decode_payload("")


def test_a_completions_stream_reads_its_text():
    chunk = {"id": "cmpl-1", "object": "text_completion", "choices": [{"index": 0, "text": " quick"}]}
    assert read_stream(_lines(_body({**chunk, "choices": [{"index": 0, "text": "the"}]}, chunk))).text == "the quick"


def test_ttft_defaults_to_the_call_start():
    clock = Clock()
    result = read_stream(["data: " + json.dumps(_chunk("x")), ""], clock=clock)
    assert result.ttft_s == pytest.approx(0.25)


# ------------------------------------------------------- agent APIs: Anthropic Messages and Responses


def _named_body(*events: dict) -> str:
    """Events as Anthropic and OpenAI Responses streams send them: an ``event:`` line naming the type."""
    return "".join(f"event: {e.get('type', 'x')}\ndata: {json.dumps(e)}\n\n" for e in events)


# LiteLLM's /v1/messages stream for a bridged chat backend: message_start (placeholder zero usage)
# before the backend's first chunk, the first block opened with the first non-blank token.
MESSAGES_STREAM = [
    {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [],
                                          "model": "fast-8b", "usage": {"input_tokens": 0, "output_tokens": 0,
                                                                        "cache_read_input_tokens": 0}}},
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hel"}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "lo"}},
    {"type": "content_block_stop", "index": 0},
    {"type": "message_delta", "delta": {"stop_reason": "max_tokens"},
     "usage": {"input_tokens": 616, "output_tokens": 2, "cache_read_input_tokens": 16_384}},
    {"type": "message_stop"},
]
RESPONSES_STREAM = [
    {"type": "response.created", "sequence_number": 0, "response": {"id": "resp_1", "status": "in_progress", "usage": None}},
    {"type": "response.in_progress", "sequence_number": 1, "response": {"id": "resp_1", "status": "in_progress"}},
    {"type": "response.output_item.added", "sequence_number": 2, "output_index": 0,
     "item": {"type": "message", "id": "msg_1", "role": "assistant", "content": []}},
    {"type": "response.output_text.delta", "sequence_number": 3, "item_id": "msg_1", "delta": "Hel"},
    {"type": "response.output_text.delta", "sequence_number": 4, "item_id": "msg_1", "delta": "lo"},
    {"type": "response.completed", "sequence_number": 5, "response": {
        "id": "resp_1", "status": "completed",
        "usage": {"input_tokens": 17_000, "input_tokens_details": {"cached_tokens": 16_384},
                  "output_tokens": 2, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 17_002}}},
]
CHAT_SHAPE = {"prompt_tokens": 17_000, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": 16_384}}


@pytest.mark.parametrize(("api", "events", "first_token"), [
    ("messages", MESSAGES_STREAM, 1), ("responses", RESPONSES_STREAM, 3),
], ids=["anthropic-messages", "responses"])
def test_an_agent_api_stream_reads_usage_in_the_chat_shape_and_ttft_at_the_first_token(api, events, first_token):
    result = read_stream(_lines(_named_body(*events), 9, 200), api=api)
    assert result.events == events and result.errors == []
    assert result.usage == CHAT_SHAPE  # Messages: 616 uncached + 16,384 read from the cache
    assert result.done is True  # message_stop / response.completed

    class EventClock:  # reads as the index of the event being delivered
        now = 0.0

    def paced():
        for index, event in enumerate(events):
            EventClock.now = float(index)
            yield from _named_body(event).splitlines()

    timed = read_stream(paced(), began=0.0, clock=lambda: EventClock.now, api=api)
    assert timed.ttft_s == first_token  # not message_start / response.created: the first token event


@pytest.mark.parametrize(("api", "events"), [
    ("messages", MESSAGES_STREAM[:1]), ("responses", RESPONSES_STREAM[:3]),
], ids=["messages-only-message-start", "responses-only-created"])
def test_an_agent_stream_cut_before_its_first_token_has_no_ttft_no_usage_and_is_not_done(api, events):
    result = read_stream(_lines(_named_body(*events)), api=api)
    assert result.ttft_s is None and result.usage is None and result.done is False


@pytest.mark.parametrize(("api", "event"), [
    ("messages", {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}),
    ("messages", {"error": {"message": "litellm.ContextWindowExceededError", "code": "400"}}),
    ("responses", {"type": "error", "code": "server_error", "message": "boom", "sequence_number": 3}),
    ("responses", {"type": "response.failed", "response": {"id": "r", "status": "failed", "error": {"message": "x"}}}),
], ids=["messages-error-event", "litellm-error-object", "responses-error-event", "responses-failed"])
def test_agent_stream_errors_are_kept_apart(api, event):
    result = read_stream(_lines(_named_body(event)), api=api)
    assert result.errors == [event] and result.ttft_s is None and result.done is False

"""What the plugin reads off a client's stream (decode warms, the stream-error count) against streams that
are not one plain text choice: ``n`` > 1 choices interleaved chunk by chunk, chunks the content check cannot
read. The client's stream must arrive exactly as LiteLLM alone hands it over; a decode warm must carry only
the reply the client will send back (the first choice, as the reply-warm reads it)."""

from __future__ import annotations

import asyncio

import pytest
from prometheus_client import CollectorRegistry

from litellm_kvwarm.decode_warm import DecodeTap
from litellm_kvwarm.metrics import Metrics
from litellm_kvwarm.stream_errors import pass_through


def _choice_chunk(index: int, content: str | None = None, tool_calls: list | None = None) -> dict:
    delta = {k: v for k, v in (("content", content), ("tool_calls", tool_calls)) if v}
    return {"choices": [{"index": index, "delta": delta}]}


def _feed_all(tap: DecodeTap, chunks: list) -> None:
    async def run():
        for c in chunks:
            await tap.feed(c)

    asyncio.run(run())


def test_an_n2_stream_decode_warms_only_the_first_choice_text():
    """``n=2``: vLLM (and LiteLLM's stream wrapper, which keeps each choice's ``index``) sends one choice per
    chunk, the two choices interleaved. Before: the tap read ``choices[0]`` of every chunk whatever its index,
    so the decode warm carried 'AaBbCcDd...' (both replies woven together, a conversation no client ever
    sends back: 24 characters warmed after 6 chunks of 4). Now: only index 0's text, 'AAAA' 'BBBB' 'CCCC'."""
    got: list[str] = []

    async def submit(text):
        got.append(text)

    tap = DecodeTap(3, submit)  # 12 characters a warm
    chunks = []
    for letter in "ABCDEF":
        chunks += [_choice_chunk(0, letter * 4), _choice_chunk(1, letter.lower() * 4)]
    _feed_all(tap, chunks)
    assert got == ["AAAABBBBCCCC", "AAAABBBBCCCCDDDDEEEEFFFF"]


def test_an_n2_stream_whose_second_choice_calls_a_tool_keeps_warming_the_first():
    """Before: a tool-call delta of choice 1 stopped the decode warms of choice 0 (0 warms); now only a tool
    call of the first choice ends them."""
    got: list[str] = []

    async def submit(text):
        got.append(text)

    tap = DecodeTap(1, submit)  # 4 characters a warm
    _feed_all(tap, [_choice_chunk(0, "abcd"), _choice_chunk(1, tool_calls=[{"index": 0, "function": {"name": "ls"}}]),
                    _choice_chunk(0, "efgh"), _choice_chunk(0, tool_calls=[{"index": 0, "function": {"name": "ls"}}]),
                    _choice_chunk(0, "ijkl")])
    assert got == ["abcd", "abcdefgh"] and tap.stopped


def test_a_chunk_without_an_index_is_the_first_choice():
    got: list[str] = []

    async def submit(text):
        got.append(text)

    tap = DecodeTap(1, submit)
    _feed_all(tap, [{"choices": [{"delta": {"content": "abcd"}}]}])
    assert got == ["abcd"]


class _Unreadable:
    """A stream item whose ``choices`` cannot be read (a provider's or guardrail's own chunk object)."""

    @property
    def choices(self):
        raise ValueError("no choices on this event")


@pytest.mark.parametrize("odd", [{"choices": 5}, _Unreadable()], ids=["choices-not-a-list", "choices-raises"])
def test_a_stream_item_the_content_check_cannot_read_reaches_the_client_unchanged(odd):
    """Before: the content check (``stream_item_has_content``, for the stream-error metric) raised on an item it
    could not read before any content (``{"choices": 5}``: TypeError; an object whose ``choices`` raises),
    inside the stream: the client's stream broke at that item (1 item of 3 received, the plugin's own
    exception raised to the client) and was counted as a stream error. Now every item reaches the client,
    in order, and no stream error is counted."""
    role = {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}
    items = [role, odd, _choice_chunk(0, "Hello")]

    async def stream():
        for item in items:
            yield item

    registry = CollectorRegistry()

    async def consume():
        return [item async for item in pass_through(stream(), {"model": "fast"}, Metrics.create(registry))]

    got = asyncio.run(consume())
    assert len(got) == 3 and all(a is b for a, b in zip(got, items))
    for flag in ("true", "false"):
        assert registry.get_sample_value("kvwarm_stream_errors_total", {"model_group": "fast", "after_content": flag}) is None

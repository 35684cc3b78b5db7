"""One reader of OpenAI-style server-sent events (``text/event-stream``), for the demo, the benchmarks
and the tests: what LiteLLM, vLLM and the emulator stream for ``"stream": true``.

The wire format (the WHATWG "server-sent events" rules, reduced to what OpenAI-style servers send):
each event is one or more ``data:`` lines ended by a blank line; several ``data:`` lines of one event
are joined with ``"\\n"``; one optional space after ``data:`` is dropped; lines starting with ``:``
are comments (keep-alives) and ``event:`` / ``id:`` / ``retry:`` lines are ignored.  An event still
open when the stream ends is delivered too (the standard drops it; a reader of a cut stream wants
it).  The payload ``[DONE]`` ends an OpenAI stream; every other payload is one JSON document: a
``chat.completion.chunk`` / ``text_completion`` chunk, or ``{"error": {...}}`` when the server
fails mid-stream (LiteLLM does this after the 200 status line).

The layers, from pure to I/O:

* :func:`iter_payloads`: the data payloads (strings) of a line iterable, ``[DONE]`` included;
* :func:`iter_events`: JSON-decoded payloads up to (not including) ``[DONE]``;
* :func:`read_stream`: reads a whole stream (``response.iter_lines()``) into a :class:`StreamResult`:
  every event, the error events, the last ``usage``, whether ``[DONE]`` came, and the time to the
  first chunk carrying choices, measured on an injected clock.  With ``api="messages"`` /
  ``"responses"`` it reads an Anthropic Messages or a Responses stream instead, by the rules of
  :mod:`litellm_kvwarm.lab.sse_apis` (first token, usage in the chat shape, errors, the end event).

Chunk boundaries are the line iterable's business: ``httpx.Response.iter_lines()`` joins lines
(and UTF-8 characters) split across network chunks before they reach this module.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .sse_apis import is_end, is_error, is_first_token, usage_of

__all__ = ["DONE", "ChunkedDataLines", "SseError", "StreamResult", "decode_payload", "iter_events", "iter_payloads", "read_stream"]

#: the payload that ends an OpenAI-style stream
DONE = "[DONE]"


class SseError(ValueError):
    """A ``data:`` payload that is neither ``[DONE]`` nor JSON; ``payload`` holds it (as received)."""

    def __init__(self, payload: str, reason: str) -> None:
        super().__init__(f"SSE data is not JSON ({reason}): {payload[:200]!r}")
        self.payload = payload


class ChunkedDataLines:
    """Split a byte stream's network chunks into the payloads of its ``data:`` lines, in order (a line,
    or a UTF-8 character, may span chunks): for a pass-through that relays bytes and reads the events it
    passes on. Line by line, not event by event: an event of several ``data:`` lines gives each."""

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, data: bytes) -> list[str]:
        """The payloads of the lines ``data`` completes (``[DONE]`` included), without ``data:`` and spaces."""
        self._buffer += data
        *lines, self._buffer = self._buffer.split(b"\n")
        out = []
        for line in lines:
            line = line.rstrip(b"\r")
            if line.startswith(b"data:"):
                out.append(line[5:].strip().decode("utf-8", errors="replace"))
        return out


def iter_payloads(lines: Iterable[str]) -> Iterator[str]:
    """The data payload of every event in ``lines`` (lines without their line ending), in order.

    ``[DONE]`` is yielded like any other payload, and so is anything after it; events without a
    ``data:`` line (comments only, ``event:`` only) yield nothing.
    """
    data: list[str] | None = None
    for raw in lines:
        line = raw.rstrip("\r\n")
        if not line:
            if data is not None:
                yield "\n".join(data)
            data = None
            continue
        name, _, value = line.partition(":")
        if name != "data":  # a comment (":..."; name "") or another field (event, id, retry)
            continue
        data = (data or []) + [value[1:] if value.startswith(" ") else value]
    if data is not None:
        yield "\n".join(data)


def decode_payload(payload: str) -> Any:
    """One payload as JSON (an object for every OpenAI chunk); :class:`SseError` if it is not JSON."""
    try:
        return json.loads(payload)
    except ValueError as exc:
        raise SseError(payload, str(exc)) from None


def iter_events(lines: Iterable[str], *, skip_invalid: bool = False) -> Iterator[Any]:
    """The JSON-decoded events of ``lines``, stopping at ``[DONE]`` (not yielded).

    A payload that is not JSON raises :class:`SseError`, or is skipped with ``skip_invalid``.
    """
    for payload in iter_payloads(lines):
        if payload.strip() == DONE:
            return
        try:
            yield decode_payload(payload)
        except SseError:
            if not skip_invalid:
                raise


@dataclass
class StreamResult:
    """What one stream carried.

    ``events``: every decoded event before ``[DONE]``, error events included, in order.
    ``errors``: the events that are ``{"error": ...}`` objects, in order.
    ``usage``: the last non-empty ``usage`` of a non-error event (``stream_options.include_usage``), or
    ``None``.  ``done``: ``[DONE]`` was received.  ``ttft_s``: seconds from ``began`` to the first
    non-error event with a non-empty ``choices`` list (the first chunk, role-only included), on the
    clock passed to :func:`read_stream`; ``None`` when no such event came.  For a Messages or
    Responses stream (``api``) the same fields follow :mod:`~litellm_kvwarm.lab.sse_apis`: ``usage`` in
    the chat shape, ``done`` when the end event came, ``ttft_s`` to the first token event.
    """

    events: list[Any] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, Any] | None = None
    done: bool = False
    ttft_s: float | None = None

    @property
    def text(self) -> str:
        """The streamed text: every choice's ``delta.content`` (chat) or ``text`` (completions), joined."""
        parts = []
        for event in self.events:
            for choice in (event.get("choices") or []) if isinstance(event, dict) else []:
                parts.append((choice.get("delta") or {}).get("content") or choice.get("text") or "")
        return "".join(parts)


def read_stream(lines: Iterable[str], *, began: float | None = None, clock: Callable[[], float] = time.monotonic,
                skip_invalid: bool = False, api: str = "chat") -> StreamResult:
    """Read ``lines`` (e.g. ``response.iter_lines()``) to their end into a :class:`StreamResult`.

    ``began`` is the request's start on ``clock`` (default: when this call starts); ``ttft_s`` is
    measured from it when the first event with choices is decoded.  Lines after ``[DONE]`` are read
    and ignored, so the response is consumed and its connection can be reused.  A payload that is not
    JSON raises :class:`SseError` (or is skipped with ``skip_invalid``).  ``api`` (``"chat"``,
    ``"messages"``, ``"responses"``) chooses the event rules (:mod:`~litellm_kvwarm.lab.sse_apis`).
    """
    start = clock() if began is None else began
    result = StreamResult()
    payloads = iter_payloads(lines)
    for payload in payloads:
        if payload.strip() == DONE:
            result.done = True
            break
        try:
            event = decode_payload(payload)
        except SseError:
            if skip_invalid:
                continue
            raise
        result.events.append(event)
        if not isinstance(event, dict):
            continue
        if is_error(api, event):
            result.errors.append(event)
            continue
        if result.ttft_s is None and is_first_token(api, event):
            result.ttft_s = clock() - start
        usage = usage_of(api, event)
        if usage:
            result.usage = usage
        if is_end(api, event):
            result.done = True
    for _ in payloads:  # drain what follows [DONE]
        pass
    return result

"""Decode warms: while the source group streams a reply to a session near its window, the reply so far
is warmed on the target every ``every_tokens`` tokens, so that when the client sends the reply back with
its next message (at once: an agent has no think time), the target has only the reply's last stretch
and the new message to prefill, not the whole reply.

Why: a reply-warm (:mod:`~litellm_kvwarm.reply_warm`) can only start when the reply has ended, the
moment the client sends its next request; if that request is the escalated turn, it waits on the target
for the reply's prefill either way (measured: a 1,440-token ShareGPT reply cost its escalated turn
1.9 s of the emulated 750 tok/s prefill). Decoding is slower than prefill (50 against 750 tokens/s in
the benchmark's calibration), so warms sent during the decode keep up with it.

A decode warm is the reply-warm's body with the reply's text so far as the assistant message (chat
completions streams only; reasoning deltas are not text and are left out, as the next request leaves
them out; the first tool-call delta ends the decode warms of that stream: the reply-warm carries the
calls). Its rendering diverges from the next request's only after that text (the message's end
marker), so the prefix cache keeps all but the last partial block. Same guards as any warm
(``trigger="decode"``: the session's cooldown per state, the tenant's warm rate, a newer state of the
session replacing a queued one). Pure accumulation here; the warm itself is built and queued by the
injected ``submit``.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from .meta import field

__all__ = ["CHARS_PER_TOKEN", "DecodeTap"]

logger = logging.getLogger("litellm_kvwarm.warm")

#: Characters per token used to pace decode warms (the routing estimate's ratio).
CHARS_PER_TOKEN = 4


def _delta(item: Any) -> tuple[str, bool]:
    """(content text, whether a tool call started) of the first choice (``index`` 0 or none) in one streamed
    chat chunk (object or dict). With ``n`` > 1 the choices arrive interleaved, one per chunk, each with its
    ``index`` (LiteLLM's stream wrapper keeps it): the others' chunks are not the reply the client sends back
    (the reply-warm reads the first choice too)."""
    choices = field(item, "choices")
    if not choices:
        return "", False
    first = next((c for c in choices if field(c, "index") in (None, 0)), None)
    delta = field(first, "delta")
    if delta is None:
        return "", False
    content = field(delta, "content")
    return (content if isinstance(content, str) else ""), bool(field(delta, "tool_calls"))


class DecodeTap:
    """Reads one stream's chunks; every ``every_tokens`` tokens of new reply text (characters ÷
    :data:`CHARS_PER_TOKEN`) awaits ``submit(text so far)``. Stops for good at the first tool-call delta,
    after ``submit`` raised (logged), or when the client leaves (:meth:`abandon`). :meth:`feed` never raises."""

    def __init__(self, every_tokens: int, submit: Callable[[str], Awaitable[Any]],
                 abandon: Callable[[], Any] = lambda: None):
        if every_tokens < 1:
            raise ValueError(f"every_tokens must be >= 1, got {every_tokens!r}")
        self._every_chars = every_tokens * CHARS_PER_TOKEN
        self._submit = submit
        self._abandon = abandon
        self._parts: list[str] = []
        self._chars = 0
        self._warmed_chars = 0
        self.stopped = False
        #: decode warms submitted by this tap
        self.submitted = 0

    def abandon(self) -> None:
        """The client left before the reply ended: no more decode warms, and ``abandon()`` (the proxy: the
        request's kept reply-warm body is dropped, so the partial reply the client never got is not warmed).
        Never raises."""
        self.stopped = True
        try:
            self._abandon()
        except Exception:
            logger.debug("abandoned stream not cleaned up", exc_info=True)

    async def feed(self, item: Any) -> None:
        if self.stopped:
            return
        try:
            text, tool_call = _delta(item)
        except Exception:
            text, tool_call = "", False
        if tool_call:
            self.stopped = True
            return
        if not text:
            return
        self._parts.append(text)
        self._chars += len(text)
        if self._chars - self._warmed_chars < self._every_chars:
            return
        self._warmed_chars = self._chars
        try:
            await self._submit("".join(self._parts))
            self.submitted += 1
        except Exception:  # a decode warm never reaches the client's stream
            self.stopped = True
            logger.warning("[KV-WARM] decode warm skipped after an internal error", exc_info=True)

"""The faults one running emulator applies now, and the waits they impose.

Contract: one :class:`FaultState` per app holds the current :class:`FaultSet` (replaced
whole by :meth:`FaultState.replace`, as ``PUT /emulator/faults`` does; emptied by
:meth:`FaultState.clear`), how many requests a counted completions fault still applies to,
and how many requests are being held by a hang right now. A replace or clear wakes every
held request, which then re-checks whether its fault still holds it. Time is read only
through the injected :class:`Clock` (drip intervals, ``delay_s``).
"""

from __future__ import annotations

import asyncio
import math
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from .clock import Clock
from .faults import DRIP_MIN_DURATION_S, CompletionFault, FaultSet

__all__ = ["FaultState", "drip_body"]


class FaultState:
    """The current faults of one server (``targets``: ``"models"``, ``"tokenize"``, ``"completions"``)."""

    def __init__(self, faults: FaultSet | None = None) -> None:
        self._faults = FaultSet()
        self._remaining: int | None = None
        self._changed = asyncio.Event()
        self._held: Counter[str] = Counter()
        self.replace(faults or FaultSet())

    @property
    def current(self) -> FaultSet:
        return self._faults

    def replace(self, faults: FaultSet) -> None:
        """Apply ``faults`` instead of the current ones (a fresh ``count``) and wake held requests."""
        self._faults = faults
        self._remaining = None if faults.completions is None else faults.completions.count
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    def clear(self) -> None:
        """No faults: a healthy server; held requests go on normally."""
        self.replace(FaultSet())

    def take_completion_fault(self) -> CompletionFault | None:
        """The fault the arriving generation request meets, counting it against ``count``."""
        fault = self._faults.completions
        if fault is None or self._remaining is None:
            return fault
        if self._remaining <= 0:
            return None
        self._remaining -= 1
        return fault

    def to_json(self) -> dict[str, Any]:
        """``GET /emulator/faults``: :meth:`FaultSet.to_json`, plus ``completions.remaining``
        (requests the counted fault still applies to, ``null`` = unlimited) and ``hanging``
        (requests held by a hang now, per target)."""
        shown = self._faults.to_json()
        if shown["completions"] is not None:
            shown["completions"]["remaining"] = self._remaining
        shown["hanging"] = {target: self._held[target] for target in ("models", "tokenize", "completions")}
        return shown

    async def hold(self, target: str, released: Callable[[FaultSet], bool], client_gone: Awaitable[None]) -> bool:
        """Hold a request until a replace/clear makes ``released(current)`` true (returns
        ``True``: answer it now) or ``client_gone`` completes (returns ``False``: nobody to answer)."""
        gone = asyncio.ensure_future(client_gone)
        changed: asyncio.Future[Any] | None = None
        self._held[target] += 1
        try:
            while True:
                changed = asyncio.ensure_future(self._changed.wait())
                done, _ = await asyncio.wait({changed, gone}, return_when=asyncio.FIRST_COMPLETED)
                if gone in done:
                    return False
                if released(self._faults):
                    return True
        finally:
            self._held[target] -= 1
            for task in (gone, changed):
                if task is not None and not task.done():
                    task.cancel()


async def drip_body(
    body: bytes, interval_s: float, clock: Clock, still_dripping: Callable[[], bool]
) -> AsyncIterator[bytes]:
    """Send ``body`` one byte every ``interval_s`` seconds (the first after one interval).

    ``body`` is left-padded with spaces (still valid JSON once complete) so it takes at least
    :data:`DRIP_MIN_DURATION_S`. When ``still_dripping()`` turns false (the fault was changed)
    the rest is sent at once.
    """
    minimum = math.ceil(DRIP_MIN_DURATION_S / interval_s) + 1
    data = b" " * max(minimum - len(body), 0) + body
    for index in range(len(data)):
        if not still_dripping():
            yield data[index:]
            return
        await clock.sleep(interval_s)
        yield data[index : index + 1]

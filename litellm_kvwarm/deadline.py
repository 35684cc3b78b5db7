"""One wall-clock budget per request for all of the plugin's waits (``KVWARM_REQUEST_BUDGET_MS``).

Every lookup the plugin awaits on the request path (window discovery, exact count, cooldown
store) waits through :meth:`RequestBudget.wait`, which waits at most what is left and books the
wall time actually waited. Past the budget the request goes on as LiteLLM alone would send it;
the lookup itself keeps running in the background (it is shielded, never cancelled by the
budget), so its answer serves later requests.

A request crosses several hooks (the proxy's pre-call hook, then one deployment hook per
attempt): :meth:`RequestBudget.to_metadata` / :meth:`RequestBudget.from_metadata` carry the
seconds spent in the request's metadata, so all hooks of one request together never wait more
than the budget. Time spent outside :meth:`wait` (LiteLLM's own work, the backend call) is not
booked. Overlapping waits (``asyncio.gather`` of several lookups) book their union, not their
sum: two lookups waited for side by side for 0.1 s spend 0.1 s.

Pure except for the injected clock.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")
D = TypeVar("D")

Clock = Callable[[], float]

#: Tasks started by :meth:`RequestBudget.wait` from a bare coroutine that outlived the wait:
#: kept referenced until they finish (an unreferenced task may be garbage-collected mid-flight).
_BACKGROUND: set[asyncio.Future[Any]] = set()


class RequestBudget:
    """What is left of one request's I/O budget.

    Args:
        total_s: the whole budget, seconds (``settings.request_budget_ms / 1000``); ``<= 0``
            means the plugin never waits.
        spent_s: seconds already spent by earlier hooks of the same request.
        clock: monotonic seconds (injected for tests).
    """

    def __init__(self, total_s: float, spent_s: float = 0.0, *, clock: Clock = time.monotonic):
        self.total_s = max(0.0, float(total_s))
        self._spent_s = _clean_seconds(spent_s)
        self._clock = clock
        self._active = 0
        self._since = 0.0

    @property
    def spent_s(self) -> float:
        """Seconds waited so far (earlier hooks included), counting a wait in progress."""
        if self._active:
            return self._spent_s + max(0.0, self._clock() - self._since)
        return self._spent_s

    @property
    def remaining_s(self) -> float:
        """Seconds still available to wait, ``>= 0``."""
        return max(0.0, self.total_s - self.spent_s)

    @property
    def exhausted(self) -> bool:
        return self.remaining_s <= 0.0

    async def wait(self, awaitable: Awaitable[T], default: D) -> T | D:
        """Wait for ``awaitable`` at most :attr:`remaining_s` seconds; its result, or ``default``
        when the budget ran out first (the awaitable keeps running in the background: a bare
        coroutine becomes a task held until it finishes). The wall time waited is booked.

        Raises what the awaitable raises if it fails within the budget. An awaitable already
        done is answered without waiting, even from an exhausted budget.
        """
        future = asyncio.ensure_future(awaitable)
        if future.done():
            return future.result()
        remaining = self.remaining_s
        if remaining <= 0.0:
            _keep(future)
            return default
        self._begin()
        try:
            # asyncio.wait, not wait_for: it never cancels the awaited work, and (unlike
            # wait_for on Python 3.10/3.11) never swallows a cancellation of the caller that
            # coincides with the work finishing
            done, _ = await asyncio.wait({future}, timeout=remaining)
        finally:
            self._end()
            if not future.done():
                _keep(future)
        return future.result() if done else default

    def to_metadata(self) -> float:
        """Seconds spent, for the request's metadata (``meta.BUDGET_KEY``)."""
        return round(self.spent_s, 6)

    @classmethod
    def from_metadata(cls, value: object, total_s: float, *, clock: Clock = time.monotonic) -> RequestBudget:
        """Continue a request's budget from :meth:`to_metadata`'s value; anything that is not a
        finite non-negative number (absent, forged, garbage) counts as nothing spent."""
        return cls(total_s, _clean_seconds(value), clock=clock)

    def __repr__(self) -> str:
        return f"RequestBudget(total_s={self.total_s:.3f}, spent_s={self.spent_s:.3f})"

    def _begin(self) -> None:
        if self._active == 0:
            self._since = self._clock()
        self._active += 1

    def _end(self) -> None:
        self._active -= 1
        if self._active == 0:
            self._spent_s += max(0.0, self._clock() - self._since)


def _clean_seconds(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0.0
    value = float(value)
    return value if math.isfinite(value) and value > 0 else 0.0


def _keep(future: asyncio.Future[Any]) -> None:
    if future.done():
        return
    _BACKGROUND.add(future)
    future.add_done_callback(_forget)


def _forget(future: asyncio.Future[Any]) -> None:
    _BACKGROUND.discard(future)
    if not future.cancelled():
        future.exception()  # retrieved: a late failure nobody waits for is not an "unretrieved" error

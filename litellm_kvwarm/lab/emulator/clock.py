"""Time for the emulator, injectable so tests never really sleep.

Contract: the emulator reads time only through ``Clock.now()`` (seconds, monotonic) and
waits only through ``await Clock.sleep(seconds)``. :class:`RealClock` uses the event loop;
:class:`ManualClock` advances its own time by exactly the requested amount, records every
sleep, and only yields to the event loop, so a test runs at full speed while the timings
the emulator reports (TTFT, log ``ttft_s``) stay exact.
"""

from __future__ import annotations

import asyncio
import time
from typing import Protocol

__all__ = ["Clock", "ManualClock", "RealClock"]


class Clock(Protocol):
    def now(self) -> float:
        """Monotonic time in seconds."""

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds``."""


class RealClock:
    """Wall-clock time: ``time.monotonic`` and ``asyncio.sleep``."""

    def now(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class ManualClock:
    """Simulated time: ``sleep(d)`` adds ``d`` to ``now()`` and appends ``d`` to ``sleeps``."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = start
        self.sleeps: list[float] = []

    def now(self) -> float:
        return self._now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self._now += seconds
        await asyncio.sleep(0)

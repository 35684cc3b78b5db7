"""How far a session has grown in one step: the largest growth between two of its consecutive
requests seen by this process (tokens, on the routing-estimate scale). Sessions that grow in
jumps (an agent's tool result of thousands of tokens) are warmed before they reach the threshold
(:func:`jump_due`). Bounded (least recently seen session dropped, fairly between tenants:
:class:`~litellm_kvwarm.fair_lru.FairLRU`, so one tenant's burst of sessions does not push out another's) and
keyed by the tenant-scoped session hash only; a session served by several proxy replicas is known by each from the requests
it saw. Clock injected; no I/O.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from .fair_lru import FairLRU
from .identity import key_tenant

__all__ = ["SessionSteps", "Steps", "jump_due", "lead_due"]

#: Sessions remembered per process.
DEFAULT_CAPACITY = 8192
#: A session not seen for this long starts over, seconds (an agent's steps are minutes apart at most).
DEFAULT_TTL_S = 3600.0


@dataclass(frozen=True)
class Steps:
    """A session's last size and the largest growth between two of its requests (tokens)."""

    last_tokens: int
    largest_step: int


class SessionSteps:
    """Per-session growth, bounded: ``capacity`` sessions, each forgotten ``ttl_s`` after it was last seen.
    Keys are :func:`~litellm_kvwarm.identity.scoped_key` strings (``<prefix>:<tenant hash>:<session hash>``):
    the tenant hash in it (:func:`~litellm_kvwarm.identity.key_tenant`) names the tenant it counts for when the store is full."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY, ttl_s: float = DEFAULT_TTL_S,
                 clock: Callable[[], float] = time.monotonic):
        if capacity < 1 or ttl_s <= 0:
            raise ValueError("capacity must be >= 1 and ttl_s > 0")
        self._ttl_s, self._clock = ttl_s, clock
        self._entries: FairLRU[str, tuple[float, Steps]] = FairLRU(capacity, key_tenant)

    def __len__(self) -> int:
        return len(self._entries)

    def observe(self, key: str, tokens: int) -> Steps:
        """Record a request of ``tokens`` for the session ``key``; returns the session's steps
        including this request. A request smaller than the last (a new branch, a trimmed history)
        is a new size, not a step."""
        now = self._clock()
        found = self._entries.pop(key, None)
        largest = 0
        if found is not None and now - found[0] <= self._ttl_s:
            last = found[1]
            largest = max(last.largest_step, tokens - last.last_tokens)
        steps = Steps(tokens, largest)
        self._entries[key] = (now, steps)
        return steps

    def seen(self, key: str) -> bool:
        """Whether the session ``key`` was seen by this process within ``ttl_s``."""
        found = self._entries.get(key)
        return found is not None and self._clock() - found[0] <= self._ttl_s

    def largest_step(self, key: str) -> int:
        """The session's largest step so far (0: unknown or none)."""
        found = self._entries.get(key)
        if found is None or self._clock() - found[0] > self._ttl_s:
            return 0
        return found[1].largest_step


def jump_due(tokens: int, largest_step: int, window: int, floor: int) -> bool:
    """Whether a session of ``tokens`` that has grown by ``largest_step`` in one step could
    overflow ``window`` with its next step (tokens + step + output floor > window)."""
    return largest_step > 0 and tokens + largest_step + floor > window


def lead_due(tokens: int, largest_step: int, window: int, floor: int, steps: int) -> bool:
    """Whether a session of ``tokens`` whose largest growth step so far is ``largest_step`` could
    overflow ``window`` within ``steps`` more such steps (tokens + steps × step + output floor > window).
    ``True`` when nothing is known (``largest_step`` ≤ 0) or ``steps`` ≤ 0 (no lead rule): the warm is
    not held back on a guess."""
    if steps <= 0 or largest_step <= 0:
        return True
    return tokens + steps * largest_step + floor > window

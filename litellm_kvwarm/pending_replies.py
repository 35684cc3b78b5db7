"""Requests waiting for their reply to be warmed: what the pre-call hook decided (target, sizes,
the warm body built from the live request) kept until the success hook of the same call reads the
finished reply (:mod:`~litellm_kvwarm.reply_warm`). In-process (the two hooks of one request run
in one proxy process), bounded and expiring: a call that fails is dropped by the failure hook
(:meth:`PendingReplies.discard`), one that never ends after ``ttl_s`` (expired entries are purged
on every insert, oldest first) or when ``capacity`` newer calls are waiting (the oldest of the tenant holding
the most: :class:`~litellm_kvwarm.fair_lru.FairLRU`, so one tenant's burst of calls does not drop another's
replies). An entry holds the
request's whole conversation (images included), so nothing may outlive its call for long. Keyed by
the tenant's keyed hash and LiteLLM's call id (``litellm_call_id``, which a client may choose: the
tenant keeps one tenant's ids from reaching another's entries). Clock injected; no I/O.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from .fair_lru import FairLRU

__all__ = ["PendingReplies", "PendingReply"]

DEFAULT_CAPACITY = 4096
#: A reply not finished within this long is not warmed, seconds (a long decode is rare past it).
DEFAULT_TTL_S = 600.0


@dataclass(frozen=True)
class PendingReply:
    """One request served by its source group: its warm ``candidate`` (``warm_gate.WarmCandidate``,
    sizes in tokens), its request ``kind`` and ``body`` (the warm body built from the live request,
    without the reply); ``served_by_target``: a fallback hop took it to the warm's target (:meth:`PendingReplies.served_by`)."""

    candidate: Any
    kind: str
    body: dict[str, Any]
    served_by_target: bool = False


def _tenant(key: tuple[str, str]) -> str:
    return key[0]


class PendingReplies:
    def __init__(self, capacity: int = DEFAULT_CAPACITY, ttl_s: float = DEFAULT_TTL_S,
                 clock: Callable[[], float] = time.monotonic):
        if capacity < 1 or ttl_s <= 0:
            raise ValueError("capacity must be >= 1 and ttl_s > 0")
        self._ttl_s, self._clock = ttl_s, clock
        self._entries: FairLRU[tuple[str, str], tuple[float, PendingReply]] = FairLRU(capacity, _tenant)

    def __len__(self) -> int:
        return len(self._entries)

    def put(self, tenant: str, call_id: str, pending: PendingReply) -> None:
        """Keep ``pending`` for that call; first drop every expired entry (oldest first: entries are
        in insertion order), then, beyond ``capacity``, the oldest of the tenant holding the most."""
        now = self._clock()
        oldest = self._entries.oldest()
        while oldest is not None and now - oldest[1][0] > self._ttl_s:
            self._entries.pop_oldest()
            oldest = self._entries.oldest()
        key = (tenant, call_id)
        self._entries.pop(key, None)
        self._entries[key] = (now, pending)

    def discard(self, tenant: str, call_id: str) -> bool:
        """Drop that call's entry (its request failed); whether there was one."""
        return self._entries.pop((tenant, call_id), None) is not None

    def served_by(self, tenant: str, call_id: str, group: object) -> bool:
        """A fallback hop takes that call to ``group``: when it is the call's warm target, the entry is marked
        :attr:`PendingReply.served_by_target` (the target computes the reply itself: no decode warms; a
        reply-warm only where the next request renders the reply otherwise). Whether one was marked."""
        found = self._entries.get((tenant, call_id))
        if found is None or found[1].served_by_target or getattr(found[1].candidate, "target", None) != group:
            return False
        # re-put at the end (the store moves a replaced key there) with the time now: entries stay in time order for the purge
        self._entries[(tenant, call_id)] = (self._clock(), replace(found[1], served_by_target=True))
        return True

    def get(self, tenant: str, call_id: str) -> PendingReply | None:
        """The entry of that call (kept), ``None`` when absent or expired."""
        found = self._entries.get((tenant, call_id))
        if found is None or self._clock() - found[0] > self._ttl_s:
            return None
        return found[1]

    def pop(self, tenant: str, call_id: str) -> PendingReply | None:
        """The entry of that call (removed), ``None`` when absent or expired."""
        found = self._entries.pop((tenant, call_id), None)
        if found is None or self._clock() - found[0] > self._ttl_s:
            return None
        return found[1]

"""Live requests that reached a warm's target first: a warm of a session is superseded once a live
request of the same session has been sent to the warm's target group with at least as many items.

Why: a session's warm-ahead is sent in pieces (:mod:`~litellm_kvwarm.warm_pieces`), one proxy request
after another; when the conversation overflows the fast window meanwhile, its escalated request goes to
the target with the whole conversation, and prefills (and caches) everything the warm's remaining
pieces would. Those pieces then find their prefix cached and prefill 0-16 tokens each, but each is still
a request through the proxy and the server. Here the effects record each proactive escalation, and the
backstop each reactive escalation (its hop carries the session's hash and items, ``meta.ARRIVAL_KEY``)
(:meth:`LiveArrivals.arrive`); the piece sender asks before each piece and before the whole body
(:meth:`LiveArrivals.covers`) and stops when the live request holds at least the warm's items.

Items (messages, Responses ``input`` items) count, not time: a warm queued before the escalated request
and started after it is superseded as well, while the reply-warm of the escalated turn (its items plus
the reply) is not. Keys are ``(session hash, target group)`` as in warm metadata
(:func:`~litellm_kvwarm.identity.hashed_session`: tenant-scoped), so one tenant's requests never stop
another tenant's warms; bounded, fairly between tenants (:class:`~litellm_kvwarm.fair_lru.FairLRU`).
Pure; no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .fair_lru import FairLRU
from .warm_prefixes import ITEMS_FIELD, WarmedPrefixes, session_tenant

__all__ = ["DEFAULT_CAPACITY", "LiveArrivals"]

#: (session, target) pairs remembered per process (a few dozen bytes each).
DEFAULT_CAPACITY = 8192


class LiveArrivals:
    """The most items a live request of each (session hash, target group) was sent with; ``capacity`` pairs
    at most (``ValueError`` below 1)."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY):
        self._items: FairLRU[tuple[str, str], int] = FairLRU(capacity, session_tenant)

    def __len__(self) -> int:
        return len(self._items)

    def arrive(self, session_hash: str, target: str, items: int) -> None:
        """A live request of ``session_hash`` with ``items`` items was sent to ``target``."""
        key = (session_hash, target)
        self._items[key] = max(items, self._items.get(key) or 0)

    def covers(self, session_hash: str, target: str, items: int) -> bool:
        """Whether a live request of ``session_hash`` was sent to ``target`` with at least ``items`` items (≥ 1)."""
        held = self._items.get((session_hash, target))
        return held is not None and items >= 1 and held >= items

    def covers_warm(self, kind: str, body: Mapping[str, Any]) -> bool:
        """Whether a live request of the session of the warm ``body`` (a ``kind`` request whose metadata names its
        session, :func:`~litellm_kvwarm.warm_body.warm_metadata`) was sent to its target with at least its items."""
        key, items = WarmedPrefixes.key(body), body.get(ITEMS_FIELD.get(kind, ""))
        return key is not None and isinstance(items, list) and self.covers(key[0], key[1], len(items))

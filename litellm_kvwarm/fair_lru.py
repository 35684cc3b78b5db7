"""A bounded least-recently-used map whose evictions are fair between tenants (pure; no I/O, no clock).

Why: per-session state the plugin keeps in process (a session's growth steps, what a session last warmed, a
request waiting for its reply to be warmed, the in-memory cooldowns) is bounded, and one tenant can open
sessions without limit. With one LRU over all tenants, a tenant sending a burst of new sessions pushes every
other tenant's sessions out: their warms then start over (steps unknown, pieces from the start, a reply not
warmed), so what one tenant sends changes what another gets. Here each key belongs to a tenant
(``tenant_of(key)``); when an insert takes the map past ``capacity``, **the tenant holding the most entries
loses its least recently used one** (the inserting tenant itself when it is among those holding the most; the
oldest entry overall when every tenant holds one; the rule of the warm queue, :mod:`~litellm_kvwarm.warm_queue`). A tenant holding fewer entries than another never
loses one to another tenant's insert; a burst makes the bursting tenant pay for itself once it holds the most;
with a single tenant this is a plain LRU of ``capacity`` entries.

Cost: O(1) per operation: a get is a dict lookup; a set moves the key to the end of two ordered dicts; the
tenant holding the most is found through buckets of tenants by entry count.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from typing import Generic, TypeVar

__all__ = ["FairLRU"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class FairLRU(Generic[K, V]):
    """``capacity`` entries at most; ``tenant_of(key)`` names the tenant a key belongs to (a string).

    Mapping subset: ``get``, ``pop``, ``clear``, ``[key] = value`` (insert or replace; either makes the key the
    most recently used), ``in``, ``len``, iteration (least recently used first), ``oldest()`` / ``pop_oldest()``
    (the least recently used overall, for a caller's expiry), ``tenant_len(tenant)``. Reads do not reorder.

    Raises ``ValueError`` when ``capacity`` is below 1.
    """

    def __init__(self, capacity: int, tenant_of: Callable[[K], str]):
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity!r}")
        self._capacity, self._tenant_of = capacity, tenant_of
        self._entries: OrderedDict[K, V] = OrderedDict()
        self._owners: dict[K, str] = {}
        self._by_tenant: dict[str, OrderedDict[K, None]] = {}
        #: entry count → the tenants holding exactly that many (insertion-ordered), and the largest count held
        self._buckets: dict[int, dict[str, None]] = {}
        self._most = 0

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def __iter__(self) -> Iterator[K]:
        return iter(self._entries)

    def tenant_len(self, tenant: str) -> int:
        """Entries held for ``tenant``."""
        held = self._by_tenant.get(tenant)
        return len(held) if held is not None else 0

    def get(self, key: K, default: V | None = None) -> V | None:
        return self._entries.get(key, default)

    def pop(self, key: K, default: V | None = None) -> V | None:
        if key not in self._entries:
            return default
        self._forget(key)
        return self._entries.pop(key)

    def clear(self) -> None:
        for store in (self._entries, self._owners, self._by_tenant, self._buckets):
            store.clear()
        self._most = 0

    def oldest(self) -> tuple[K, V] | None:
        """The least recently used entry overall, or ``None`` when empty."""
        for key, value in self._entries.items():
            return key, value
        return None

    def pop_oldest(self) -> tuple[K, V] | None:
        """Remove and return the least recently used entry overall (``None`` when empty)."""
        found = self.oldest()
        if found is not None:
            self.pop(found[0])
        return found

    def __setitem__(self, key: K, value: V) -> None:
        if key in self._entries:
            self._entries.move_to_end(key)
            self._by_tenant[self._owners[key]].move_to_end(key)
            self._entries[key] = value
            return
        tenant = self._tenant_of(key)
        self._entries[key] = value
        self._owners[key] = tenant
        held = self._by_tenant.setdefault(tenant, OrderedDict())
        held[key] = None
        self._move(tenant, len(held) - 1, len(held))
        while len(self._entries) > self._capacity:
            if self._most == 1:  # every tenant holds one entry: the oldest overall goes
                self.pop(next(iter(self._entries)))
                continue
            most = self._buckets[self._most]
            victim = tenant if tenant in most else next(iter(most))
            self.pop(next(iter(self._by_tenant[victim])))

    def _move(self, tenant: str, old: int, new: int) -> None:
        """Re-bucket ``tenant`` from ``old`` to ``new`` entries (counts differ by one)."""
        if old:
            bucket = self._buckets[old]
            del bucket[tenant]
            if not bucket:
                del self._buckets[old]
                if self._most == old and new < old:
                    self._most = new
        if new:
            self._buckets.setdefault(new, {})[tenant] = None
            self._most = max(self._most, new)

    def _forget(self, key: K) -> None:
        tenant = self._owners.pop(key)
        held = self._by_tenant[tenant]
        del held[key]
        self._move(tenant, len(held) + 1, len(held))
        if not held:
            del self._by_tenant[tenant]

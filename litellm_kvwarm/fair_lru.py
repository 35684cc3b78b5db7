"""A bounded least-recently-used map whose evictions are fair between tenants (pure; no I/O, no clock).

Why: per-session state the plugin keeps in process (a session's growth steps, what a session last warmed, a
request waiting for its reply to be warmed) is bounded, and one tenant can open sessions without limit. With one
LRU over all tenants, a tenant sending a burst of new sessions pushes every other tenant's sessions out: their
warms then start over (steps unknown, pieces from the start, a reply not warmed), so what one tenant sends
changes what another gets. Here each key belongs to a tenant (``tenant_of(key)``); when an insert takes the map
past ``capacity``, the entry dropped is the least recently used one **of a tenant holding more than its fair
share** (``capacity ÷ tenants held``, at least 1): the inserting tenant's own oldest when it holds more than
that, else the oldest entry overall whose tenant does. A tenant within its share loses entries only to its own
inserts (or the caller's expiry); with a single tenant this is a plain LRU of ``capacity`` entries.

Cost: a get is a dict lookup; a set moves the key to the end of two ordered dicts. An eviction is O(1) when
the inserting tenant pays; otherwise a walk from the oldest entry past those of tenants within their share
(at most all of them; a flood makes the flooding tenant pay for itself).
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

    Mapping subset: ``get``, ``pop``, ``clear``, ``[key] = value`` (insert or replace; either makes the key the most
    recently used), ``in``, ``len``, ``oldest()`` / ``pop_oldest()`` (the least recently used overall, for a
    caller's expiry), ``tenant_len(tenant)``. Reads do not reorder.

    Raises ``ValueError`` when ``capacity`` is below 1.
    """

    def __init__(self, capacity: int, tenant_of: Callable[[K], str]):
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity!r}")
        self._capacity, self._tenant_of = capacity, tenant_of
        self._entries: OrderedDict[K, V] = OrderedDict()
        self._owners: dict[K, str] = {}
        self._by_tenant: dict[str, OrderedDict[K, None]] = {}

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
        self._entries.clear()
        self._owners.clear()
        self._by_tenant.clear()

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
        self._by_tenant.setdefault(tenant, OrderedDict())[key] = None
        while len(self._entries) > self._capacity:
            self.pop(self._victim(tenant))

    def _victim(self, inserting: str) -> K:
        share = max(1, self._capacity // len(self._by_tenant))
        own = self._by_tenant[inserting]
        if len(own) > share:
            return next(iter(own))
        for key in self._entries:
            if len(self._by_tenant[self._owners[key]]) > share:
                return key
        # every tenant within its share: only when more tenants than ``capacity`` hold one entry each
        return next(iter(self._entries))

    def _forget(self, key: K) -> None:
        tenant = self._owners.pop(key)
        held = self._by_tenant[tenant]
        del held[key]
        if not held:
            del self._by_tenant[tenant]

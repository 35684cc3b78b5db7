"""The warm runner's in-process state: the per-tenant fair queue of warms waiting for a slot
(:class:`FairQueue`) and the memo of refusals already known (:class:`Memo`). No I/O, no clock
of their own (the runner passes its monotonic seconds).

Fairness (:class:`FairQueue`): a tenant is :attr:`WarmJob.tenant_key
<litellm_kvwarm.warm_job.WarmJob.tenant>`, else its ``rate_key``; warms with neither share one
tenant. Each tenant's warms wait in their own FIFO, and a freed slot takes the next warm
round-robin over the tenants with queued warms. A warm queued by a tenant with nothing queued
waits for at most one warm of each other tenant with queued warms (one round), never for
another tenant's backlog, so one tenant's burst does not delay another tenant's warm-ahead.
Submit and dispatch are O(1): tenants in an ordered dict (the rotation) of per-tenant ordered
dicts, and tenants indexed by their queued count for the runner's ``full`` victim.

One warm per session at a time (:class:`Running`): the admission keys admitted or in flight, and for
each at most one next warm waiting for it to end (a newer one replaces it).

The memo (:class:`Memo`) remembers, per key, until when a refusal holds (a cooldown this
process took or found running, a tenant found at its rate), so the runner skips those without
any I/O and without queueing.
"""

from __future__ import annotations

from collections import OrderedDict

from cachetools import FIFOCache

from .warm_job import WarmJob


class Memo:
    """Bounded map ``key → until`` (runner clock seconds): at most ``capacity`` keys, the least
    recently remembered dropped first; a lookup does not refresh a key.

    Raises:
        ValueError: ``capacity`` below 1.
    """

    def __init__(self, capacity: int):
        if capacity < 1:
            raise ValueError(f"memo capacity must be >= 1, got {capacity!r}")
        # cachetools' FIFOCache moves a key to the end on every write and never on a read:
        # eviction in order of the last ``remember``.
        self._until: FIFOCache[str, float] = FIFOCache(maxsize=capacity)

    def active(self, key: str | None, now: float) -> bool:
        """``True`` while ``key`` was remembered until a time after ``now`` (an expired key is forgotten)."""
        if key is None:
            return False
        until = self._until.get(key)
        if until is None:
            return False
        if until <= now:
            del self._until[key]
            return False
        return True

    def remember(self, key: str, until: float) -> None:
        """Hold ``key`` until ``until`` (replacing what it held); it becomes the newest key."""
        self._until[key] = until

    def __len__(self) -> int:
        return len(self._until)


class FairQueue:
    """Queued warms: one FIFO per tenant, taken round-robin across tenants. O(1) per operation.

    ``_turns`` is the rotation: tenant → its warms (admission key → job, oldest first), in the
    order the tenants get their next turn; a tenant is in it exactly while it has queued warms.
    ``_by_count`` indexes tenants by how many warms they have queued (count → tenants, in the
    order they reached that count) and ``_max`` is the highest count, so the biggest tenant is
    found without a scan (counts only move by one, so ``_max`` is kept exactly)."""

    def __init__(self) -> None:
        self._turns: OrderedDict[str | None, OrderedDict[str, WarmJob]] = OrderedDict()
        self._by_count: dict[int, dict[str | None, None]] = {}
        self._max = 0
        self._size = 0
        #: bytes the queued warms' bodies hold (the sum of their :attr:`WarmJob.size`), in all and per tenant
        self.bytes = 0
        self._bytes_of: dict[str | None, int] = {}

    def __len__(self) -> int:
        return self._size

    def size_of(self, job: WarmJob) -> int:
        """Bytes of the queued warm ``job`` would replace (its tenant's of the same key), 0 when none."""
        own = self._turns.get(job.tenant)
        old = own.get(job.key) if own is not None else None
        return old.size if old is not None else 0

    def count(self, tenant: str | None) -> int:
        """Warms ``tenant`` has queued."""
        own = self._turns.get(tenant)
        return len(own) if own is not None else 0

    def replace(self, job: WarmJob) -> WarmJob | None:
        """Put ``job`` in the place of its tenant's queued warm of the same key and return the
        replaced warm; ``None`` (nothing changed) when that key is not queued."""
        own = self._turns.get(job.tenant)
        if own is None or job.key not in own:
            return None
        old = own[job.key]
        own[job.key] = job  # in place: the session keeps its turn, the newest body wins
        self.bytes += job.size - old.size
        self._bytes_of[job.tenant] += job.size - old.size
        return old

    def push(self, job: WarmJob) -> None:
        """Queue ``job`` last of its tenant's warms; a tenant with nothing queued takes the last turn."""
        own = self._turns.get(job.tenant)
        if own is None:
            own = self._turns[job.tenant] = OrderedDict()
        own[job.key] = job
        self._size += 1
        self.bytes += job.size
        self._bytes_of[job.tenant] = self._bytes_of.get(job.tenant, 0) + job.size
        self._recount(job.tenant, len(own) - 1, len(own))

    def pop_next(self) -> WarmJob:
        """The oldest warm of the tenant whose turn it is; that tenant's next turn is the last.
        Raises ``KeyError`` when empty."""
        tenant, own = next(iter(self._turns.items()))
        _, job = own.popitem(last=False)
        if own:
            self._turns.move_to_end(tenant)
        self._removed(tenant, own, job)
        return job

    def pop_oldest(self, tenant: str | None) -> WarmJob:
        """Drop and return ``tenant``'s oldest queued warm (``KeyError`` if it has none)."""
        own = self._turns[tenant]
        _, job = own.popitem(last=False)
        self._removed(tenant, own, job)
        return job

    def biggest(self) -> str | None:
        """The tenant with the most queued warms (ties: the one that reached the count first).
        Raises ``KeyError`` when empty."""
        return next(iter(self._by_count[self._max]))

    def shed(self, job: WarmJob, over: int) -> list[WarmJob]:
        """Make ``over`` bytes of room for ``job`` from other tenants' queued warms, max-min fair: each time the
        oldest warm of the tenant holding the most queued bytes, while that tenant holds more than ``job``'s tenant
        would with ``job`` queued. All or nothing: when that frees less than ``over``, nothing is dropped and ``[]``
        is returned (the caller skips ``job``). One tenant's large bodies thus never keep another tenant's warms out
        while it has warms queued. O(tenants) per warm dropped: only on the byte bound's path."""
        mine = self._bytes_of.get(job.tenant, 0) - self.size_of(job) + job.size
        left, plan, oldest = dict(self._bytes_of), [], {}
        while over > 0:
            victim = max(left, key=left.__getitem__, default=None)
            if victim is None or victim == job.tenant or left[victim] <= mine:
                return []
            dropped = next(oldest.setdefault(victim, iter(self._turns[victim].values())), None)
            if dropped is None:
                return []
            plan.append(dropped)
            left[victim] -= dropped.size
            over -= dropped.size
        return [self.pop_oldest(j.tenant) for j in plan]

    def clear(self) -> list[WarmJob]:
        """Empty the queue; the warms it held."""
        jobs = [job for own in self._turns.values() for job in own.values()]
        self._turns.clear()
        self._bytes_of.clear()
        self._by_count.clear()
        self._max = self._size = self.bytes = 0
        return jobs

    def _removed(self, tenant: str | None, own: OrderedDict[str, WarmJob], job: WarmJob) -> None:
        self.bytes -= job.size
        self._bytes_of[tenant] -= job.size
        if not own:
            del self._turns[tenant]
            del self._bytes_of[tenant]
        self._size -= 1
        self._recount(tenant, len(own) + 1, len(own))

    def _recount(self, tenant: str | None, old: int, new: int) -> None:
        if old:
            same = self._by_count[old]
            del same[tenant]
            if not same:
                del self._by_count[old]
        if new:
            self._by_count.setdefault(new, {})[tenant] = None
        if new > self._max:
            self._max = new
        elif old == self._max and old not in self._by_count:
            self._max = new  # the last tenant at the top moved one down


class Running:
    """Admission keys admitted or in flight, each with at most one parked next warm; ``bytes``: the parked warms' sizes."""

    def __init__(self) -> None:
        self._keys: set[str] = set()
        self._parked: dict[str, WarmJob] = {}
        self.bytes = 0

    def size_of(self, key: str) -> int:
        """Bytes of the warm parked for ``key`` (0: none)."""
        old = self._parked.get(key)
        return old.size if old is not None else 0

    def __contains__(self, key: str) -> bool:
        return key in self._keys

    def __len__(self) -> int:
        """Parked warms."""
        return len(self._parked)

    def park(self, job: WarmJob) -> WarmJob | None:
        """Keep ``job`` until its key's running warm ends; returns the parked warm it replaced."""
        old = self._parked.get(job.key)
        self._parked[job.key] = job
        self.bytes += job.size - (old.size if old is not None else 0)
        return old

    def start(self, key: str) -> None:
        self._keys.add(key)

    def finish(self, key: str) -> WarmJob | None:
        """``key``'s warm ended: its parked warm (removed), if any."""
        self._keys.discard(key)
        job = self._parked.pop(key, None)
        self.bytes -= job.size if job is not None else 0
        return job

    def clear(self) -> list[WarmJob]:
        """Forget the parked warms; the warms they were."""
        jobs = list(self._parked.values())
        self._parked.clear()
        self.bytes = 0
        return jobs

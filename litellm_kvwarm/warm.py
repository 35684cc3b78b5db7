"""Warm-ahead: ``max_tokens=1`` requests, sent in the background, that leave a conversation's prefix in the
escalation target's prefix cache. This module is the runner (:class:`WarmRunner`); the names of :mod:`~litellm_kvwarm.warm_body`
(body, metadata), :mod:`~litellm_kvwarm.warm_job` (job, outcomes, drop reasons) and :mod:`~litellm_kvwarm.warm_queue` are importable here too.

:class:`WarmRunner` queues warms and sends them in owned background tasks:

* at most ``max_concurrency`` warms are admitted or in flight at once; the rest wait in a queue of at most ``queue_size``
  warms, one per admission key (tenant + session + target): a newer state of a session replaces its queued warm in place
  (the replaced one is dropped, ``stale``);
* the warms held (queued, parked, in flight) hold at most ``queue_bytes`` of bodies (:func:`~litellm_kvwarm.warm_bytes.body_bytes`):
  past it, tenants holding more queued bytes make room (``full``, :meth:`FairQueue.shed`), else it is ``skipped_queue_bytes``;
* the queue is fair across tenants (:class:`~litellm_kvwarm.warm_queue.FairQueue`): a freed slot takes the next warm round-robin;
* with a tenant rate, a tenant holds at most ``limit`` queued warms: past it its own oldest queued warm is dropped
  (``tenant_cap``); past ``queue_size`` the oldest queued warm of the tenant with the most queued warms is dropped
  (``full``; ties: the tenant that reached that count first), so a quiet tenant is never pushed out by a noisy one;
* one warm per admission key at a time: the next warm of a session whose warm is running waits
  for it (a newer one replacing it, ``stale``), then finds it cached instead of prefilling beside it;
* a warm is admitted when a slot takes it, right before it is sent: one :meth:`~litellm_kvwarm.cooldown.CooldownStore.admit`
  call checks and takes the session's cooldown and the tenant's warm rate together. A queued or dropped warm takes nothing;
* a bounded memo (monotonic clock) remembers cooldowns this process took or found running, and tenants found at their
  rate: :meth:`WarmRunner.submit` skips those without I/O or queueing;
* each warm runs under ``timeout_s``; every task is kept in a set and cancelled and awaited by :meth:`WarmRunner.aclose`
  (queued warms are dropped as ``shutdown``). A failed or timed-out warm is logged and reported; it never reaches a client.

The outcome life of one warm is told in :mod:`~litellm_kvwarm.warm_job`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import replace

from .config_defaults import DEFAULT_WARM_QUEUE_BYTES
from .cooldown import RATE_PERIOD_S, Admission, CooldownStore, MemoryCooldownStore, TenantRate
from .warm_body import (  # noqa: F401  (re-exported: the warm's body and metadata)
    METADATA_FIELDS, OUTPUT_FIELDS, OUTPUT_FLOOR_FIELDS, PLUGIN_KEYS, PROMPT_KEYS, PROMPT_SHAPING_KEYS, SESSION_KEY,
    SPEND_IDENTITY_KEYS, TEXT_PROMPT_KEYS, warm_metadata, warm_request,
)
from .warm_job import DoneCallback, DropCallback, DropReason, OutcomeCallback, Sender, WarmJob, WarmOutcome, WarmTrigger  # noqa: F401
from .warm_queue import FairQueue, Memo, Running

_FairQueue, _Memo = FairQueue, Memo  # old private names, kept importable
logger = logging.getLogger("litellm_kvwarm.warm")

DEFAULT_MAX_CONCURRENCY = 4
DEFAULT_TIMEOUT_S = 120.0
DEFAULT_QUEUE_SIZE = 1024
DEFAULT_QUEUE_BYTES = DEFAULT_WARM_QUEUE_BYTES  # 256 MiB, the reason in config_defaults
DEFAULT_COOLDOWN_S = 300.0
#: Cooldowns and rate-capped tenants remembered by one runner (least recently remembered dropped).
DEFAULT_MEMO_CAPACITY = 4096
#: How long a cooldown found running (taken by another process) is remembered, seconds: its remaining time is unknown.
DEFAULT_MEMO_RECHECK_S = 30.0


def _noop(*_: object) -> None:
    return None


class WarmRunner:
    """Queues warms and sends them in owned background tasks (see the module docstring).

    Args:
        send: performs one warm, ``await send(kind, body)``.
        cooldown: returns the admission store (called when a warm is admitted, so the proxy
            can build it lazily); default: a private :class:`MemoryCooldownStore`.
        cooldown_s: a session's cooldown, seconds (``KVWARM_WARM_COOLDOWN_S``).
        tenant_rate: warms per tenant per minute (``KVWARM_WARM_TENANT_RATE``); 0 = no cap.
        max_concurrency: warms being admitted or sent at once (``KVWARM_WARM_MAX_CONCURRENCY``).
        queue_size: warms waiting for a slot at most, all tenants together (``KVWARM_WARM_QUEUE_SIZE``); with a
            ``tenant_rate``, one tenant holds at most its per-window limit of them.
        queue_bytes: bytes the bodies of the warms held (queued, parked, in flight) hold at most (``KVWARM_WARM_QUEUE_BYTES``).
        timeout_s: a warm running longer is cancelled (``TIMED_OUT``).
        on_done: ``(outcome, duration_s, target, trigger)`` when a fired warm ends.
        on_outcome: ``(outcome, target, trigger)`` when a slot fires or skips a warm.
        on_queue_depth: the queue's length after every change (``warm_queue_depth``).
        on_drop: ``(reason, target)`` for each queued warm dropped (``warm_queue_drops``;
            reasons: :class:`DropReason`).
        clock: monotonic seconds (durations, queue wait, the memo).
        memo_capacity: cooldown keys and tenants the memo keeps.

    Raises:
        ValueError: a bound below 1, a negative ``tenant_rate`` or a non-positive ``cooldown_s``.
    """

    def __init__(
        self,
        send: Sender,
        *,
        cooldown: Callable[[], CooldownStore] | None = None,
        cooldown_s: float = DEFAULT_COOLDOWN_S,
        tenant_rate: float = 0.0,
        max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
        queue_size: int = DEFAULT_QUEUE_SIZE,
        queue_bytes: int = DEFAULT_QUEUE_BYTES,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        on_done: DoneCallback | None = None,
        on_outcome: OutcomeCallback | None = None,
        on_queue_depth: Callable[[int], None] | None = None,
        on_drop: DropCallback | None = None,
        clock: Callable[[], float] = time.monotonic,
        memo_capacity: int = DEFAULT_MEMO_CAPACITY,
    ):
        if max_concurrency < 1 or queue_size < 1 or memo_capacity < 1:
            raise ValueError("max_concurrency, queue_size and memo_capacity must be >= 1")
        if cooldown_s <= 0:
            raise ValueError(f"cooldown_s must be > 0, got {cooldown_s!r}")
        self._send = send
        if cooldown is None:
            private = MemoryCooldownStore()
            cooldown = lambda: private  # noqa: E731
        self._store = cooldown
        self._cooldown_s = cooldown_s
        self._rate = TenantRate.per_minute(tenant_rate)
        self._max = max_concurrency
        self._queue_size, self._queue_bytes, self._flying = queue_size, queue_bytes, 0  # _flying: bytes of warms taken by slots
        self._timeout_s = timeout_s
        self._on_done = on_done or _noop
        self._on_outcome = on_outcome or _noop
        self._on_queue_depth = on_queue_depth or _noop
        self._on_drop = on_drop or _noop
        self._clock = clock
        self._queue = FairQueue()
        self._cooldowns = Memo(memo_capacity)
        self._rated = Memo(memo_capacity)
        # Slots in use, counted synchronously (the task set shrinks only on a later loop turn):
        # a worker is created for a queued warm and holds its slot until the queue is empty.
        self._active = 0
        self._unstarted = 0  # workers created that have not taken their first warm yet
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed = False
        self._running = Running()  # keys admitted or in flight, each with its parked next warm

    @property
    def in_flight(self) -> int:
        """Slots in use: warms being admitted or sent."""
        return self._active

    @property
    def held_bytes(self) -> int:
        """Bytes the bodies of the warms held hold: queued, parked and taken by a slot (admitted or in flight)."""
        return self._queue.bytes + self._running.bytes + self._flying

    @property
    def queued(self) -> int:
        """Warms waiting: for a slot, or for their session's running warm."""
        return len(self._queue) + len(self._running)

    def submit(self, job: WarmJob) -> WarmOutcome:
        """Queue ``job`` last of its tenant's warms, or in place of the tenant's queued warm of
        the same key (that one dropped ``stale``); to make room, drop the tenant's own oldest
        (``tenant_cap``) or the biggest tenant's oldest (``full``). No I/O. Returns ``QUEUED``
        (also when dropped at once as ``shutdown`` after :meth:`aclose`), or
        ``SKIPPED_COOLDOWN`` / ``SKIPPED_TENANT_RATE`` when the memo already knows the answer, ``SKIPPED_QUEUE_BYTES``
        when the warms held and ``job`` (less a warm of its key it replaces) would hold over ``queue_bytes`` (nothing queued)."""
        now = self._clock()
        if self._cooldowns.active(job.cooldown_key, now):
            return WarmOutcome.SKIPPED_COOLDOWN
        if self._rated.active(job.rate_key, now):
            return WarmOutcome.SKIPPED_TENANT_RATE
        replaced = self._running.size_of(job.key) if job.key in self._running else self._queue.size_of(job)
        for dropped in self._queue.shed(job, self.held_bytes - replaced + job.size - self._queue_bytes):
            self._on_drop(DropReason.FULL, dropped.target)  # another tenant's, holding more queued bytes (fair)
        if self.held_bytes - replaced + job.size > self._queue_bytes:
            return WarmOutcome.SKIPPED_QUEUE_BYTES
        job = replace(job, queued_at=now)
        if self._closed:
            self._on_drop(DropReason.SHUTDOWN, job.target)
            return WarmOutcome.QUEUED
        if job.key in self._running:
            if (old := self._running.park(job)) is not None:
                self._on_drop(DropReason.STALE, old.target)
            self._on_queue_depth(self.queued)
            return WarmOutcome.QUEUED
        self._enqueue(job)
        self._start_workers()
        return WarmOutcome.QUEUED

    def _enqueue(self, job: WarmJob) -> None:
        old = self._queue.replace(job)
        if old is not None:
            self._on_drop(DropReason.STALE, old.target)
        else:
            self._make_room(job)
            self._queue.push(job)
        self._on_queue_depth(self.queued)

    def _make_room(self, job: WarmJob) -> None:
        if self._rate is not None and job.rate_key is not None and self._queue.count(job.tenant) >= self._rate.limit:
            dropped, reason = self._queue.pop_oldest(job.tenant), DropReason.TENANT_CAP
        elif len(self._queue) >= self._queue_size:
            dropped, reason = self._queue.pop_oldest(self._queue.biggest()), DropReason.FULL
        else:
            return
        logger.debug("[KV-WARM] queued warm of %r dropped: %s", dropped.target, reason.value)
        self._on_drop(reason, dropped.target)

    def _start_workers(self) -> None:
        loop = asyncio.get_running_loop()
        while self._active < self._max and len(self._queue) > self._unstarted:
            self._active += 1
            self._unstarted += 1
            task = loop.create_task(self._worker(), name="kvwarm-warm-worker")
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _worker(self) -> None:
        self._unstarted -= 1
        try:
            while self._queue and not self._closed:
                job = self._queue.pop_next()
                self._on_queue_depth(self.queued)
                self._running.start(job.key)
                self._flying += job.size
                try:
                    await self._admit_and_send(job)
                finally:
                    self._flying -= job.size
                    if (parked := self._running.finish(job.key)) is not None and not self._closed:
                        self._enqueue(parked)  # this worker takes it: the loop goes on
        finally:
            self._active -= 1  # synchronously with the empty-queue check: submit() starts a new worker

    async def _admit_and_send(self, job: WarmJob) -> None:
        now = self._clock()
        if self._rated.active(job.rate_key, now):
            self._on_outcome(WarmOutcome.SKIPPED_TENANT_RATE, job.target, job.trigger)
            return
        rate = self._rate if job.rate_key is not None else None
        try:
            admission = await self._store().admit(
                job.cooldown_key,
                self._cooldown_s,
                job.rate_key,
                rate.limit if rate else 0,
                rate.window_s if rate else RATE_PERIOD_S,
            )
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the store is the fallback store in the proxy; any other is not trusted to admit
            logger.warning("[KV-WARM] warm of %r not sent: admission failed: %s", job.target, type(exc).__name__)
            self._on_outcome(WarmOutcome.FAILED, job.target, job.trigger)
            return
        now = self._clock()
        if admission is Admission.COOLDOWN:
            self._cooldowns.remember(job.cooldown_key, now + min(DEFAULT_MEMO_RECHECK_S, self._cooldown_s))
            self._on_outcome(WarmOutcome.SKIPPED_COOLDOWN, job.target, job.trigger)
            return
        if admission is Admission.RATE:
            assert rate is not None and job.rate_key is not None
            self._rated.remember(job.rate_key, now + rate.window_s / rate.limit)
            logger.info("[KV-WARM] warm of %r skipped: tenant at its warm rate (%d per %.0fs)", job.target, rate.limit, rate.window_s)
            self._on_outcome(WarmOutcome.SKIPPED_TENANT_RATE, job.target, job.trigger)
            return
        self._cooldowns.remember(job.cooldown_key, now + self._cooldown_s)
        logger.info("[KV-WARM] fired: warming %r (max_tokens=1) after %.2fs in the queue", job.target, now - job.queued_at)
        self._on_outcome(WarmOutcome.FIRED, job.target, job.trigger)
        await self._run(job)

    async def _run(self, job: WarmJob) -> None:
        target = job.target
        started = self._clock()
        try:
            await asyncio.wait_for(self._send(job.kind, job.body), timeout=self._timeout_s)
        except asyncio.TimeoutError:
            outcome = WarmOutcome.TIMED_OUT
            logger.warning("[KV-WARM] warm of %r timed out after %.1fs", target, self._timeout_s)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a failed warm is counted and logged, never surfaced to a client
            outcome = WarmOutcome.FAILED
            logger.warning("[KV-WARM] warm of %r failed: %s", target, type(exc).__name__)
            logger.debug("warm failure detail", exc_info=True)
        else:
            outcome = WarmOutcome.SUCCEEDED
        duration = self._clock() - started
        if outcome is WarmOutcome.SUCCEEDED:
            logger.info("[KV-WARM] warm of %r done in %.2fs", target, duration)
        self._on_done(outcome, duration, target, job.trigger)

    async def drain(self) -> None:
        """Wait until the queue is empty and no warm is in flight (tests and orderly shutdown)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def aclose(self) -> None:
        """Drop every queued warm (``shutdown``), cancel every warm in flight and wait until
        they are gone. Later submits are dropped as ``shutdown`` too."""
        self._closed = True
        for job in [*self._queue.clear(), *self._running.clear()]:
            self._on_drop(DropReason.SHUTDOWN, job.target)
        self._on_queue_depth(0)
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._tasks.clear()

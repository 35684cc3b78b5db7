"""Who prefills next on the emulated GPU: vLLM's ``--scheduling-policy`` over one prefill slot.

Contract: the GPU prefills one request's chunk at a time. A request is queued by
:meth:`PrefillScheduler.enter`, waits for its turn with :meth:`PrefillScheduler.turn`, computes
one chunk, and gives the GPU back with :meth:`PrefillScheduler.release` (queued again when it has
more to do) or :meth:`PrefillScheduler.leave`; when the GPU is free the scheduler hands it to the
best waiting request:

* ``"fcfs"`` (vLLM's default): by arrival (a request's first :meth:`enter`);
* ``"priority"``: by ``(priority, arrival)``; as in vLLM a LOWER ``priority`` goes EARLIER,
  ties by arrival.

What happens between two chunks of a prefill is the *prefill order* (emulator only,
``--prefill-order``):

* ``"between-chunks"`` (the default): the request waits again with its original key, so under
  ``"priority"`` a better request that arrived meanwhile takes the GPU at the next chunk boundary
  (a long low-priority prefill delays it by at most one chunk); under ``"fcfs"`` the request that
  started first keeps it.
* ``"running-first"``: vLLM V1's rule. ``Scheduler.schedule()`` (``vllm/v1/core/sched/scheduler.py``)
  schedules the RUNNING requests before any WAITING one, each up to the step's token budget, and
  preempts a running request only when KV blocks run out; ``priority`` orders the waiting queue
  only. So a request whose prefill has started keeps the GPU until it is done, whatever its
  priority; a better request that arrives meanwhile waits for all of it.

vLLM batches several prefills' chunks into one step (``--max-num-batched-tokens`` per step; a
waiting request gets what the running ones leave); the emulator runs one chunk at a time.

Nothing here sleeps: waits and their lengths are the engine's. Time spent waiting for a turn is
measured on the injected clock (:attr:`Ticket.queue_wait_s`, seconds).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from dataclasses import dataclass, field

from .clock import Clock

__all__ = ["POLICIES", "PREFILL_ORDERS", "PrefillScheduler", "Ticket", "priority_not_enabled"]

#: vLLM's ``--scheduling-policy`` values.
POLICIES = ("fcfs", "priority")
#: the emulator's ``--prefill-order`` values (see the module docstring).
PREFILL_ORDERS = ("between-chunks", "running-first")


def priority_not_enabled(priority: int) -> str:
    """vLLM's refusal of a non-zero ``priority`` under ``fcfs``, verbatim: the ``ValueError`` of
    ``LLMEngine.add_request`` (``vllm/engine/llm_engine.py``) and ``_AsyncLLMEngine.add_request_async``
    (``vllm/engine/async_llm_engine.py``), which the OpenAI server answers as a 400 ``BadRequestError``.
    (The V1 ``vllm/v1/engine/processor.py`` read for this carries no such check.)"""
    return f"Got priority {priority} but Priority scheduling is not enabled."


@dataclass(eq=False)
class Ticket:
    """One request's place in the prefill queue (``priority``: lower goes first)."""

    priority: int
    seq: int
    queue_wait_s: float = 0.0
    started: bool = False
    _granted: asyncio.Event = field(default_factory=asyncio.Event, repr=False)
    _since: float = 0.0

    def key(self, policy: str, running_first: bool = False) -> tuple[int, int, int]:
        """Queue order (smallest first): started prefills first under ``running_first``, then
        ``(priority, arrival)`` under ``"priority"``, else arrival."""
        return (0 if running_first and self.started else 1, self.priority if policy == "priority" else 0, self.seq)


class PrefillScheduler:
    """The queue of one emulated GPU's prefills (see the module docstring)."""

    def __init__(self, policy: str, clock: Clock, prefill_order: str = "between-chunks") -> None:
        if policy not in POLICIES:
            raise ValueError(f"scheduling_policy (--scheduling-policy) must be one of {', '.join(POLICIES)}, got {policy!r}")
        if prefill_order not in PREFILL_ORDERS:
            raise ValueError(f"prefill_order (--prefill-order) must be one of {', '.join(PREFILL_ORDERS)}, got {prefill_order!r}")
        self.policy = policy
        self.running_first = prefill_order == "running-first"
        self.clock = clock
        self._seq = itertools.count()
        self._waiting: list[tuple[tuple[int, int, int], int, Ticket]] = []
        self._running: Ticket | None = None

    def enter(self, priority: int = 0) -> Ticket:
        """A new request's ticket, queued; its arrival order is fixed here."""
        ticket = Ticket(priority, next(self._seq))
        self._queue(ticket)
        return ticket

    @property
    def waiting(self) -> int:
        """Requests waiting for the GPU (tokens not counted)."""
        return len(self._waiting)

    async def turn(self, ticket: Ticket) -> None:
        """Wait until ``ticket`` (queued by :meth:`enter` or :meth:`release`) holds the GPU."""
        try:
            await ticket._granted.wait()
        finally:
            ticket.queue_wait_s += self.clock.now() - ticket._since

    def release(self, ticket: Ticket, *, again: bool) -> None:
        """``ticket`` gives the GPU back after a chunk; ``again``: it has more to prefill and waits
        with its original key (queued before the GPU is handed on, so FCFS keeps it)."""
        if self._running is ticket:
            self._running = None
        if again:
            self._queue(ticket)
        self._dispatch()

    def leave(self, ticket: Ticket) -> None:
        """``ticket`` is done (finished, failed or cancelled): out of the queue, GPU handed on."""
        if self._running is ticket:
            self._running = None
        elif any(entry[2] is ticket for entry in self._waiting):
            self._waiting = [entry for entry in self._waiting if entry[2] is not ticket]
            heapq.heapify(self._waiting)
        self._dispatch()

    def _queue(self, ticket: Ticket) -> None:
        ticket._granted.clear()
        ticket._since = self.clock.now()
        heapq.heappush(self._waiting, (ticket.key(self.policy, self.running_first), ticket.seq, ticket))
        self._dispatch()

    def _dispatch(self) -> None:
        if self._running is None and self._waiting:
            _, _, ticket = heapq.heappop(self._waiting)
            self._running = ticket
            ticket.started = True
            ticket._granted.set()

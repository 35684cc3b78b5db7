"""The emulated GPU: scheduled, chunked prefill with prefix-cache reuse, timed decoding.

Contract (times in seconds, lengths in tokens; every wait is multiplied by
``config.time_scale`` and skipped when that is 0):

* **Prefill is serial and scheduled.** One prefill chunk runs at a time, standing in for a
  single GPU; decoding runs concurrently for any number of requests. Which waiting request
  runs next is vLLM's ``--scheduling-policy`` (:mod:`.scheduler`): ``fcfs`` by arrival, or
  ``priority`` by ``(priority, arrival)`` with a LOWER ``priority`` first.
* **Chunked prefill** (``--max-num-batched-tokens N``): a prompt's uncached tokens are
  computed N at a time, and between chunks the scheduler hands the GPU to the best waiting
  request, so under ``priority`` a long low-priority prefill delays a better one by at most one
  chunk; with ``--prefill-order running-first`` (vLLM V1's rule) a started prefill keeps the GPU
  to its end instead. Without N the whole prompt is one chunk (no preemption). Real vLLM packs
  chunks of several requests into one step of N tokens; here chunks run one request at a time.
* **Cache lookup happens inside the slot**, just before the first chunk. A request that
  arrives while another request is prefilling the same prefix therefore waits for the GPU and
  then finds the blocks computed so far: it joins the in-flight work rather than recomputing
  it, as observed on real vLLM (a warm request and the real one). The full blocks of each
  chunk are cached as the chunk completes (without chunking: when the prefill completes).
* A chunk of ``c`` tokens waits ``c / prefill_tokens_per_s``. TTFT = arrival → end of the
  last chunk (the first token leaves right after it); ``queue_wait_s`` = the time spent
  waiting for the GPU, all chunks together.
* Each further output token takes ``1 / decode_tokens_per_s``. When a request finishes, the
  full blocks of prompt + output are cached too (vLLM caches generated blocks as well, which
  is what makes the next turn of a conversation hit).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

from .clock import Clock
from .config import EmulatorConfig
from .vllm_metrics import EmulatorMetrics
from .prefix_cache import PrefixCache
from .scheduler import PrefillScheduler

__all__ = ["Engine", "PrefillResult"]


@dataclass(frozen=True)
class PrefillResult:
    """Outcome of one prefill: ``cached_tokens`` reused, ``ttft_s`` from arrival and
    ``queue_wait_s`` spent waiting for the GPU (seconds)."""

    cached_tokens: int
    ttft_s: float
    queue_wait_s: float = 0.0


class Engine:
    """Prefix cache, prefill slot and timing of one emulated server."""

    def __init__(self, config: EmulatorConfig, clock: Clock, metrics: EmulatorMetrics) -> None:
        self.config = config
        self.clock = clock
        self.metrics = metrics
        self.cache = PrefixCache(config.block_size, config.kv_capacity_blocks)
        self.scheduler = PrefillScheduler(config.scheduling_policy, clock, config.prefill_order)

    async def _wait(self, seconds: float) -> None:
        scaled = seconds * self.config.time_scale
        if scaled > 0:
            await self.clock.sleep(scaled)

    async def prefill(
        self, prompt_ids: Sequence[int], salt: str | None, arrived_at: float, adapter: str | None = None,
        *, priority: int = 0, skip_reading: bool = False,
    ) -> PrefillResult:
        """Prefill ``prompt_ids`` chunk by chunk, each chunk once the scheduler gives this request
        the GPU; ``arrived_at`` is ``clock.now()`` at arrival; ``adapter`` keys the cache for a
        LoRA request (see ``prefix_cache``); ``priority`` orders it under the ``priority`` policy;
        ``skip_reading``: no cache hit is read (vLLM's ``skip_reading_prefix_cache``), what it prefills is still cached."""
        chunk = self.config.max_num_batched_tokens
        ticket = self.scheduler.enter(priority)
        self.metrics.waiting.inc()
        waiting = True
        cached = done = 0
        try:
            while True:
                await self.scheduler.turn(ticket)
                if waiting:
                    self.metrics.waiting.dec()
                    waiting = False
                    cached = done = 0 if skip_reading else self.cache.lookup(prompt_ids, salt, adapter)
                step = len(prompt_ids) - done if chunk is None else min(chunk, len(prompt_ids) - done)
                await self._wait(step / self.config.prefill_tokens_per_s)
                done += step
                self.cache.insert(prompt_ids[:done], salt, adapter)
                if done >= len(prompt_ids):
                    break
                self.scheduler.release(ticket, again=True)
        finally:
            self.scheduler.leave(ticket)
            if waiting:
                self.metrics.waiting.dec()
        ttft_s = self.clock.now() - arrived_at
        self.metrics.record_prefill(len(prompt_ids), cached, ttft_s)
        return PrefillResult(cached, ttft_s, ticket.queue_wait_s)

    async def decode(self, n: int) -> AsyncIterator[int]:
        """Yield token indices ``0..n-1`` as each is decoded (the first without delay)."""
        for index in range(n):
            if index:
                await self._wait(1 / self.config.decode_tokens_per_s)
            yield index

    async def decode_all(self, n: int) -> None:
        """Wait as long as decoding ``n`` tokens takes (non-streaming responses)."""
        await self._wait(max(n - 1, 0) / self.config.decode_tokens_per_s)

    def finish(
        self, prompt_ids: Sequence[int], output_ids: Sequence[int], salt: str | None, finish_reason: str,
        adapter: str | None = None,
    ) -> None:
        """Record a completed request and cache the full blocks of prompt + output."""
        self.cache.insert(list(prompt_ids) + list(output_ids), salt, adapter)
        self.metrics.record_finished(len(output_ids), finish_reason)

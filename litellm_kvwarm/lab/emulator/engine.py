"""The emulated GPU: one prefill at a time, prefix-cache reuse, timed decoding.

Contract (times in seconds, lengths in tokens; every wait is multiplied by
``config.time_scale`` and skipped when that is 0):

* **Prefill is serial.** :meth:`Engine.prefill` holds one ``asyncio.Lock`` (FIFO) for the
  whole prefill, standing in for a single GPU that prefills one prompt at a time; decoding
  runs concurrently for any number of requests.
* **Cache lookup happens inside the slot**, just before computing. A request that arrives
  while another request is prefilling the same prefix therefore waits for that prefill to
  finish and then finds its blocks: it joins the in-flight work rather than recomputing it,
  as observed on real vLLM (a warm request and the real one). Real vLLM computes blocks in
  chunks and can share them earlier; here a prefill's blocks appear all at once when it
  completes.
* Prefill waits ``(prompt - cached) / prefill_tokens_per_s``; the prompt's full blocks are
  then cached. TTFT = arrival → end of prefill (the first token leaves right after it).
* Each further output token takes ``1 / decode_tokens_per_s``. When a request finishes, the
  full blocks of prompt + output are cached too (vLLM caches generated blocks as well, which
  is what makes the next turn of a conversation hit).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

from .clock import Clock
from .config import EmulatorConfig
from .vllm_metrics import EmulatorMetrics
from .prefix_cache import PrefixCache

__all__ = ["Engine", "PrefillResult"]


@dataclass(frozen=True)
class PrefillResult:
    """Outcome of one prefill: ``cached_tokens`` reused, ``ttft_s`` from arrival (seconds)."""

    cached_tokens: int
    ttft_s: float


class Engine:
    """Prefix cache, prefill slot and timing of one emulated server."""

    def __init__(self, config: EmulatorConfig, clock: Clock, metrics: EmulatorMetrics) -> None:
        self.config = config
        self.clock = clock
        self.metrics = metrics
        self.cache = PrefixCache(config.block_size, config.kv_capacity_blocks)
        self._prefill_slot = asyncio.Lock()

    async def _wait(self, seconds: float) -> None:
        scaled = seconds * self.config.time_scale
        if scaled > 0:
            await self.clock.sleep(scaled)

    async def prefill(
        self, prompt_ids: Sequence[int], salt: str | None, arrived_at: float, adapter: str | None = None
    ) -> PrefillResult:
        """Prefill ``prompt_ids`` (waiting for the slot first); ``arrived_at`` is ``clock.now()`` at
        arrival; ``adapter`` keys the cache for a LoRA request (see ``prefix_cache``)."""
        self.metrics.waiting.inc()
        waiting = True
        try:
            async with self._prefill_slot:
                self.metrics.waiting.dec()
                waiting = False
                cached = self.cache.lookup(prompt_ids, salt, adapter)
                await self._wait((len(prompt_ids) - cached) / self.config.prefill_tokens_per_s)
                self.cache.insert(prompt_ids, salt, adapter)
        finally:
            if waiting:
                self.metrics.waiting.dec()
        ttft_s = self.clock.now() - arrived_at
        self.metrics.record_prefill(len(prompt_ids), cached, ttft_s)
        return PrefillResult(cached, ttft_s)

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

"""Automatic prefix caching as vLLM's V1 engine does it, on token ids (pure, no I/O).

Contract:

* A prompt is cut into blocks of ``block_size`` tokens; only *full* blocks are hashed,
  cached and reused. Block ``i``'s hash covers (hash of block ``i-1``, block ``i``'s tokens)
  and, for the first block only, the ``cache_salt`` and the LoRA adapter (vLLM's
  ``_gen_lora_extra_hash_keys``: name and path); so a hit on block ``i`` implies hits on all
  blocks before it, and prompts under different salts or adapters never share a block (a
  LoRA request does not hit blocks the base model computed, nor the reverse).
* :meth:`PrefixCache.lookup` returns the longest cached prefix in tokens (a multiple of
  ``block_size``), capped like vLLM at ``len(tokens) - 1``: at least one prompt token is
  always computed, so a fully cached prompt still recomputes its last block.
* :meth:`PrefixCache.insert` adds a sequence's full blocks. Capacity is
  ``capacity_blocks``; the least recently used block is evicted first. Blocks of one
  sequence are touched tail first, so its *last* blocks age first and a shared head
  outlives its tails (vLLM frees a request's blocks in reverse order for the same reason).
"""

from __future__ import annotations

import hashlib
from array import array
from collections import OrderedDict
from collections.abc import Sequence

__all__ = ["PrefixCache", "block_hashes"]


def block_hashes(
    tokens: Sequence[int], block_size: int, salt: str | None = None, adapter: str | None = None
) -> list[bytes]:
    """Chained hashes of the full blocks of ``tokens`` (``len(tokens) // block_size`` of them);
    ``adapter`` identifies a LoRA adapter (``None`` = the base model)."""
    hashes: list[bytes] = []
    parent = b""
    for start in range(0, len(tokens) - block_size + 1, block_size):
        digest = hashlib.sha256(parent)
        digest.update(array("q", tokens[start : start + block_size]).tobytes())
        if start == 0 and salt:
            digest.update(b"\x00salt\x00" + salt.encode("utf-8"))
        if start == 0 and adapter:
            digest.update(b"\x00lora\x00" + adapter.encode("utf-8"))
        parent = digest.digest()
        hashes.append(parent)
    return hashes


class PrefixCache:
    """LRU set of block hashes standing in for vLLM's GPU KV blocks.

    Args:
        block_size: tokens per block (vLLM: 16 on GPU, 128 on CPU).
        capacity_blocks: blocks the cache holds; 0 disables caching.
    """

    def __init__(self, block_size: int, capacity_blocks: int) -> None:
        if block_size < 1:
            raise ValueError(f"block_size must be >= 1, got {block_size}")
        if capacity_blocks < 0:
            raise ValueError(f"capacity_blocks must be >= 0, got {capacity_blocks}")
        self.block_size = block_size
        self.capacity_blocks = capacity_blocks
        self._blocks: OrderedDict[bytes, None] = OrderedDict()

    def __len__(self) -> int:
        """Blocks currently cached."""
        return len(self._blocks)

    def __contains__(self, block_hash: object) -> bool:
        return block_hash in self._blocks

    def lookup(self, tokens: Sequence[int], salt: str | None = None, adapter: str | None = None) -> int:
        """Cached prefix length of ``tokens`` in tokens; touches the blocks it hits."""
        usable = max(len(tokens) - 1, 0) // self.block_size  # never hit the whole prompt
        hit: list[bytes] = []
        for block_hash in block_hashes(tokens[: usable * self.block_size], self.block_size, salt, adapter):
            if block_hash not in self._blocks:
                break
            hit.append(block_hash)
        self._touch(hit)
        return len(hit) * self.block_size

    def insert(self, tokens: Sequence[int], salt: str | None = None, adapter: str | None = None) -> int:
        """Cache the full blocks of ``tokens``; returns how many were new. Evicts LRU blocks."""
        if self.capacity_blocks == 0:
            return 0
        hashes = block_hashes(tokens, self.block_size, salt, adapter)
        new = sum(1 for h in hashes if h not in self._blocks)
        self._touch(hashes)
        while len(self._blocks) > self.capacity_blocks:
            self._blocks.popitem(last=False)
        return new

    def clear(self) -> None:
        """Drop every block."""
        self._blocks.clear()

    def _touch(self, hashes: list[bytes]) -> None:
        for block_hash in reversed(hashes):  # tail first: the head ends up most recent
            self._blocks[block_hash] = None
            self._blocks.move_to_end(block_hash)

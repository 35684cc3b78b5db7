"""Prefix cache: whole blocks, hash chaining, salt isolation, LRU eviction (pure)."""

from __future__ import annotations

import pytest

from litellm_kvwarm.lab.emulator.prefix_cache import PrefixCache, block_hashes

BS = 16


def seq(n: int, start: int = 0) -> list[int]:
    return list(range(start, start + n))


def test_only_full_blocks_are_hashed():
    assert len(block_hashes(seq(47), BS)) == 2
    assert len(block_hashes(seq(48), BS)) == 3
    assert block_hashes(seq(15), BS) == []


def test_hit_is_counted_in_whole_blocks():
    cache = PrefixCache(BS, 100)
    assert cache.insert(seq(40)) == 2
    assert cache.lookup(seq(40)) == 32
    assert cache.lookup(seq(40) + [999] * 30) == 32  # longer prompt, same prefix
    assert cache.lookup(seq(20)) == 16


def test_a_fully_cached_prompt_still_recomputes_its_last_block():
    cache = PrefixCache(BS, 100)
    cache.insert(seq(32))
    assert cache.lookup(seq(32)) == 16  # hit capped at len - 1 = 31 tokens -> one block
    assert cache.lookup(seq(33)) == 32


def test_blocks_are_chained_to_their_prefix():
    cache = PrefixCache(BS, 100)
    cache.insert(seq(33))
    other_head = [7] * 16 + seq(16, 16) + [0]  # same second block, different first block
    assert cache.lookup(other_head) == 0
    diverging = seq(16) + [5] * 17  # same first block only
    assert cache.lookup(diverging) == 16


def test_salts_never_share_blocks():
    cache = PrefixCache(BS, 100)
    cache.insert(seq(33), salt="tenant-a")
    assert cache.lookup(seq(33), salt="tenant-b") == 0
    assert cache.lookup(seq(33)) == 0
    assert cache.lookup(seq(33), salt="tenant-a") == 32


def test_least_recently_used_sequence_is_evicted():
    cache = PrefixCache(BS, 4)
    cache.insert(seq(33, 0))  # A: 2 blocks
    cache.insert(seq(33, 1000))  # B: 2 blocks
    assert cache.lookup(seq(33, 0)) == 32  # touch A: B is now the oldest
    cache.insert(seq(33, 2000))  # C: 2 blocks, evicts B
    assert len(cache) == 4
    assert cache.lookup(seq(33, 1000)) == 0
    assert cache.lookup(seq(33, 0)) == 32
    assert cache.lookup(seq(33, 2000)) == 32


def test_eviction_takes_a_sequences_tail_before_its_head():
    cache = PrefixCache(BS, 3)
    cache.insert(seq(33, 0))  # A: 2 blocks
    cache.insert(seq(33, 1000))  # B: 2 blocks; one block of A must go: its tail
    assert cache.lookup(seq(33, 0)) == 16
    assert cache.lookup(seq(33, 1000)) == 32


def test_a_sequence_longer_than_the_cache_keeps_its_head():
    cache = PrefixCache(BS, 2)
    cache.insert(seq(16 * 5 + 1))
    assert len(cache) == 2
    assert cache.lookup(seq(16 * 5 + 1)) == 32


def test_zero_capacity_caches_nothing():
    cache = PrefixCache(BS, 0)
    assert cache.insert(seq(64)) == 0
    assert cache.lookup(seq(64)) == 0


def test_insert_counts_only_new_blocks_and_clear_empties():
    cache = PrefixCache(BS, 100)
    assert cache.insert(seq(32)) == 2
    assert cache.insert(seq(64)) == 2
    cache.clear()
    assert len(cache) == 0 and cache.lookup(seq(64)) == 0


@pytest.mark.parametrize("block_size, capacity", [(0, 1), (16, -1)])
def test_invalid_geometry_is_refused(block_size, capacity):
    with pytest.raises(ValueError):
        PrefixCache(block_size, capacity)

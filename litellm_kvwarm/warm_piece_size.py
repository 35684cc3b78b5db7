"""The size of a warm's pieces for one target group, from the live prompts that group serves (pure).

Why: a live request that reaches a server while a warm piece is prefilling waits for that piece
(:mod:`~litellm_kvwarm.warm_pieces`: vLLM V1 finishes a started prefill first), so it waits about
``piece ÷ prefill rate`` seconds, while its own time to first token is about ``its prompt ÷ prefill rate``.
Both are prefill on the same server, so the share a piece adds to a live TTFT is about
``piece tokens ÷ live prompt tokens``, whatever the hardware: pieces of ``share`` × the group's median
live prompt add about ``share`` to a median live request (and less to the larger ones a p99 is made of).
A slow group that serves escalated conversations (16k+ tokens) takes the configured size
(``KVWARM_WARM_PIECE_TOKENS``, the most a piece ever is); one that also serves short direct traffic
(4k-token prompts) gets smaller pieces, so that traffic keeps its latency. Measured in the benchmark's
interference section (``docs/benchmarks.md`` §5).

What is read: ``usage.prompt_tokens`` of every successful attempt of the group that is not a warm
(:func:`~litellm_kvwarm.usage.record_usage`'s ``normal`` and ``escalated`` kinds), the last
:data:`DEFAULT_WINDOW` per group, across tenants: the size is a property of the server's traffic, not of
one tenant's. What one tenant's traffic can do to another's warms is bounded: pieces stay within
[:data:`DEFAULT_FLOOR_TOKENS`, the configured size], so a flood of tiny prompts makes others' warms at
most ``configured ÷ floor`` times as many requests (still bounded by ``KVWARM_WARM_MAX_PIECES``), and never
changes what a warm sends in all, nor any route. Below :data:`DEFAULT_MIN_SAMPLES` prompts (a group
with no live traffic yet) the configured size holds.
"""

from __future__ import annotations

from array import array

from cachetools import LRUCache

__all__ = ["DEFAULT_FLOOR_TOKENS", "DEFAULT_MIN_SAMPLES", "DEFAULT_WINDOW", "LivePromptSizes"]

#: Live prompts kept per group (the median is over these).
DEFAULT_WINDOW = 64
#: Live prompts a group must have served before its pieces are sized from them.
DEFAULT_MIN_SAMPLES = 8
#: The smallest piece (tokens): 8 vLLM blocks of 16. Below it a piece's fixed cost per request (the proxy's
#: handling of its whole body, the server's scheduling) outweighs the prefill it spreads.
DEFAULT_FLOOR_TOKENS = 128
#: Groups kept (least recently observed dropped).
DEFAULT_GROUPS = 1024
_BLOCK = 16


class _Ring:
    __slots__ = ("values", "count", "next")

    def __init__(self, size: int) -> None:
        self.values = array("q", bytes(8 * size))
        self.count = 0
        self.next = 0

    def add(self, value: int) -> None:
        self.values[self.next] = value
        self.next = (self.next + 1) % len(self.values)
        self.count = min(self.count + 1, len(self.values))

    def median(self) -> int:
        held = sorted(self.values[: self.count])
        return held[len(held) // 2]


class LivePromptSizes:
    """Recent live prompt sizes per model group → that group's warm piece size (tokens).

    Args:
        share: a piece's size as a share of the group's median live prompt (``KVWARM_WARM_PIECE_SHARE``,
            0.05); 0: the configured size always.
        floor_tokens: the smallest piece (tokens).
        window: live prompts kept per group.
        min_samples: live prompts needed before the size follows them.
        groups: groups kept at most.

    Raises ``ValueError`` when ``share`` is negative or ``window``, ``min_samples`` or ``groups`` is below 1.
    """

    def __init__(self, share: float, *, floor_tokens: int = DEFAULT_FLOOR_TOKENS, window: int = DEFAULT_WINDOW,
                 min_samples: int = DEFAULT_MIN_SAMPLES, groups: int = DEFAULT_GROUPS):
        if share < 0 or window < 1 or min_samples < 1 or groups < 1:
            raise ValueError(f"share must be ≥ 0 and window, min_samples, groups ≥ 1; got {share}, {window}, {min_samples}, {groups}")
        self.share, self.floor_tokens, self.window, self.min_samples = share, floor_tokens, window, min(min_samples, window)
        self._groups: LRUCache[str, _Ring] = LRUCache(groups)

    def observe(self, group: str, prompt_tokens: int) -> None:
        """One live (not warm) attempt that ``group`` served with ``prompt_tokens`` (its ``usage``)."""
        if self.share <= 0 or not isinstance(prompt_tokens, int) or prompt_tokens <= 0:
            return
        ring = self._groups.get(group)
        if ring is None:
            ring = self._groups[group] = _Ring(self.window)
        ring.add(prompt_tokens)

    def piece_tokens(self, group: str, configured: int) -> int:
        """The piece size for warms of ``group`` (tokens): ``share`` × its median live prompt, rounded down
        to a 16-token block, within [``floor_tokens``, ``configured``]; ``configured`` itself when it is 0
        (whole warms), when sizing is off, or before :attr:`min_samples` live prompts."""
        if configured <= 0 or self.share <= 0:
            return configured
        ring = self._groups.get(group)
        if ring is None or ring.count < self.min_samples:
            return configured
        sized = int(self.share * ring.median()) // _BLOCK * _BLOCK
        return min(configured, max(self.floor_tokens, sized))

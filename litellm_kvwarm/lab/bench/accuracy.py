"""Estimator accuracy in the replay (pure): both estimates of every replayed request against the
backend's own ``usage.prompt_tokens``.

A request replayed in several arms is the same request (same messages, same tokenizer on both
backends), so it is counted once. ``safe`` must not fall below the truth (it clamps output);
``routing`` should not exceed it (it escalates). The truth here is the emulator's tokenizer
(tiktoken ``cl100k_base`` under a Qwen2.5-style chat template), not a production model's; the
calibration study itself is ``docs/estimator.md``'s.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..demo import TurnRow
from .stats import distribution, share

__all__ = ["estimator_accuracy", "unique_requests"]

WORST = 3


def unique_requests(rows: Iterable[TurnRow]) -> list[TurnRow]:
    """First row per (conversation, request) that has the backend's prompt count."""
    seen: dict[tuple[str, int], TurnRow] = {}
    for row in rows:
        key = (row.conversation, row.request)
        if key not in seen and row.prompt_tokens:
            seen[key] = row
    return list(seen.values())


def _summary(rows: list[TurnRow]) -> dict[str, Any]:
    safe = [r.estimate_safe / r.prompt_tokens for r in rows]  # type: ignore[operator]
    routing = [r.estimate_routing / r.prompt_tokens for r in rows]  # type: ignore[operator]
    by_safe = sorted(rows, key=lambda r: r.estimate_safe / r.prompt_tokens)  # type: ignore[operator]
    return {
        "requests": len(rows),
        "safe_over_truth": distribution(safe).as_dict(),
        "routing_over_truth": distribution(routing).as_dict(),
        "safe_below_truth_share": share([r.estimate_safe < r.prompt_tokens for r in rows]),  # type: ignore[operator]
        "routing_above_truth_share": share([r.estimate_routing > r.prompt_tokens for r in rows]),  # type: ignore[operator]
        "safe_below_truth_tokens_max": max((r.prompt_tokens - r.estimate_safe for r in rows), default=None),  # type: ignore[operator]
        "lowest_safe": [{"conversation": r.conversation, "request": r.request, "truth": r.prompt_tokens,
                         "safe": r.estimate_safe, "routing": r.estimate_routing} for r in by_safe[:WORST]],
        "points": [[r.prompt_tokens, r.estimate_safe, r.estimate_routing, r.source] for r in rows],
    }


def estimator_accuracy(rows: Iterable[TurnRow]) -> dict[str, Any]:
    """Overall and per source ("sharegpt", "bfcl"): distributions of estimate ÷ truth and the shares."""
    unique = unique_requests(rows)
    out = {"all": _summary(unique)}
    for source in sorted({r.source.split(":")[0] for r in unique}):
        out[source] = _summary([r for r in unique if r.source.split(":")[0] == source])
    return out

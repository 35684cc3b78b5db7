"""Held-out metrics of a pair of estimates against the true counts (pure).

The issue's acceptance criteria, per tokenizer family (:data:`TARGETS`):

* safe below the truth on < 0.1% of requests of ≥ 1,000 tokens and < 1% of all;
* routing at or below the truth on ≥ 80% of requests, median routing/truth ≥ 0.9.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

__all__ = ["Metrics", "TARGETS", "meets_targets", "metrics"]

LARGE_TOKENS = 1000
TARGETS = {
    "safe_below_large": 0.001,
    "safe_below_all": 0.01,
    "routing_at_or_below": 0.80,
    "routing_median_ratio": 0.90,
}


@dataclass(frozen=True)
class Metrics:
    """Shares are fractions of requests; ratios are estimate / truth."""

    n: int
    n_large: int
    safe_below_all: float
    safe_below_large: float
    safe_median_ratio: float
    routing_above: float
    routing_at_or_below: float
    routing_median_ratio: float

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


def metrics(safe: Sequence[float], routing: Sequence[float], truth: Sequence[float]) -> Metrics:
    """Metrics of one estimator on one set of requests (all arrays aligned, tokens)."""
    s, r, y = (np.asarray(v, dtype=float) for v in (safe, routing, truth))
    if len(y) == 0:
        nan = float("nan")
        return Metrics(0, 0, nan, nan, nan, nan, nan, nan)
    large = y >= LARGE_TOKENS
    y1 = np.maximum(y, 1.0)
    return Metrics(
        n=len(y),
        n_large=int(large.sum()),
        safe_below_all=float(np.mean(s < y)),
        safe_below_large=float(np.mean(s[large] < y[large])) if large.any() else float("nan"),
        safe_median_ratio=float(np.median(s / y1)),
        routing_above=float(np.mean(r > y)),
        routing_at_or_below=float(np.mean(r <= y)),
        routing_median_ratio=float(np.median(r / y1)),
    )


def meets_targets(m: Metrics) -> dict[str, bool]:
    """Which acceptance criteria ``m`` meets (a criterion without data counts as met)."""
    return {
        "safe_below_large": not (m.safe_below_large >= TARGETS["safe_below_large"]),
        "safe_below_all": m.safe_below_all < TARGETS["safe_below_all"],
        "routing_at_or_below": m.routing_at_or_below >= TARGETS["routing_at_or_below"],
        "routing_median_ratio": m.routing_median_ratio >= TARGETS["routing_median_ratio"],
    }

"""Small, pure statistics for the benchmark: percentiles, ratios, distributions.

No I/O and no third-party imports. Percentiles interpolate linearly between closest ranks
(numpy's default), so a median of an even count is the mean of the two middle values; an
empty input gives ``None`` rather than raising, because a benchmark arm that escalated nothing
is a result to report, not an error.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["Distribution", "distribution", "percentile", "ratio", "share"]


def percentile(values: Iterable[float | None], q: float) -> float | None:
    """The ``q``-th percentile (0-100) of the present values, linear interpolation; ``None`` if empty."""
    if not 0 <= q <= 100:
        raise ValueError(f"percentile: q must be within 0..100, got {q}")
    data = sorted(v for v in values if v is not None and not math.isnan(v))
    if not data:
        return None
    position = (len(data) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(data) - 1)
    return data[low] + (data[high] - data[low]) * (position - low)


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    """``numerator / denominator``, or ``None`` when either is missing or the denominator is 0."""
    if numerator is None or denominator is None or denominator == 0:
        return None
    return numerator / denominator


def share(flags: Sequence[bool]) -> float | None:
    """Fraction of true flags; ``None`` for no flags."""
    return sum(1 for f in flags if f) / len(flags) if flags else None


@dataclass(frozen=True)
class Distribution:
    """Summary of one sample: count and the usual quantiles (same unit as the sample)."""

    n: int
    min: float | None
    p10: float | None
    p50: float | None
    p90: float | None
    p99: float | None
    max: float | None
    mean: float | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def distribution(values: Iterable[float | None]) -> Distribution:
    data = [v for v in values if v is not None]
    return Distribution(
        n=len(data),
        min=min(data, default=None),
        p10=percentile(data, 10),
        p50=percentile(data, 50),
        p90=percentile(data, 90),
        p99=percentile(data, 99),
        max=max(data, default=None),
        mean=sum(data) / len(data) if data else None,
    )

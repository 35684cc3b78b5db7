"""The comparison the demo is for (pure): per conversation, the *escalated turn* (the first request
served by ``slow``) in the ``warm-on`` arm against the same turn in the ``warm-off`` arm.

The ratio is client TTFT warm-off / warm-on (> 1: warm-ahead is faster); ``server_ratio`` is the same
on the slow emulator's own TTFT, without the proxy's latency.  :func:`explain` says, in words, why a
ratio is below :data:`~.settings.TARGET_TTFT_RATIO` (5x); token counts are the backends' ``usage``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from .rows import ArmResult, TurnRow
from .settings import FAST_WINDOW, SLOW_GROUP, SLOW_PREFILL_TPS, TARGET_TTFT_RATIO, WARM_OFF, WARM_ON, WARM_THRESHOLD

__all__ = ["EscalatedTurn", "EscalationComparison", "compare", "comparison_totals", "escalated_turn", "explain"]


@dataclass(frozen=True)
class EscalatedTurn:
    """The first request of a conversation served by ``slow``, in one arm."""

    request: int
    turn: str
    prompt_tokens: int | None
    cached_tokens: int | None
    ttft_s: float | None
    server_ttft_s: float | None
    warms_landed: int  # warms of this conversation that landed on slow up to this request
    largest_warm_tokens: int | None  # prompt tokens of the largest of them
    previous_estimate: int | None  # routing estimate of the request before it (None: it was the first)

    @property
    def cached_fraction(self) -> float | None:
        if not self.prompt_tokens or self.cached_tokens is None:
            return None
        return self.cached_tokens / self.prompt_tokens


@dataclass(frozen=True)
class EscalationComparison:
    conversation: str
    source: str
    warm_on: EscalatedTurn | None
    warm_off: EscalatedTurn | None
    api: str = "chat"  # the API the conversation was replayed through

    @property
    def ratio(self) -> float | None:
        """Client TTFT warm-off / warm-on of the escalated turn (> 1: warm-ahead is faster)."""
        return _ratio(self.warm_off and self.warm_off.ttft_s, self.warm_on and self.warm_on.ttft_s)

    @property
    def server_ratio(self) -> float | None:
        """The same on the slow backend's own TTFT (without the proxy's latency)."""
        return _ratio(self.warm_off and self.warm_off.server_ttft_s, self.warm_on and self.warm_on.server_ttft_s)



def _ratio(numerator: float | None, denominator: float | None) -> float | None:
    """``numerator / denominator``; ``None`` when either is missing or the denominator is 0."""
    if numerator is None or not denominator:
        return None
    return numerator / denominator


def escalated_turn(rows: Sequence[TurnRow]) -> EscalatedTurn | None:
    """The escalated turn of one conversation's rows (in replay order); ``None`` if none reached slow."""
    warm_sizes: list[int] = []
    previous: TurnRow | None = None
    for row in rows:
        warm_sizes += [w["prompt_tokens"] or 0 for w in row.warms if w["status"] == 200]
        if row.group == SLOW_GROUP:
            return EscalatedTurn(
                request=row.request, turn=row.turn, prompt_tokens=row.prompt_tokens,
                cached_tokens=row.cached_tokens, ttft_s=row.ttft_s, server_ttft_s=row.server_ttft_s,
                warms_landed=len(warm_sizes), largest_warm_tokens=max(warm_sizes, default=None),
                previous_estimate=previous.estimate_routing if previous else None,
            )
        previous = row
    return None


def compare(warm_on_rows: Sequence[TurnRow], warm_off_rows: Sequence[TurnRow]) -> list[EscalationComparison]:
    """Pair the escalated turns of each conversation (in the warm-on arm's order)."""
    def by_conversation(rows: Sequence[TurnRow]) -> dict[str, list[TurnRow]]:
        grouped: dict[str, list[TurnRow]] = {}
        for row in rows:
            grouped.setdefault(row.conversation, []).append(row)
        return grouped

    on, off = by_conversation(warm_on_rows), by_conversation(warm_off_rows)
    sources = {r.conversation: r.source for r in [*warm_on_rows, *warm_off_rows]}
    apis = {r.conversation: r.api for r in [*warm_on_rows, *warm_off_rows]}
    return [
        EscalationComparison(conversation=cid, source=sources[cid], api=apis[cid], warm_on=escalated_turn(on.get(cid, [])),
                             warm_off=escalated_turn(off.get(cid, [])))
        for cid in [*on, *(c for c in off if c not in on)]
    ]


def explain(item: EscalationComparison, *, time_scale: float, target: float = TARGET_TTFT_RATIO) -> str | None:
    """Why the escalated turn's ratio is below ``target`` (``None`` when it is not)."""
    on, off = item.warm_on, item.warm_off
    if on is None or off is None:
        missing = [name for name, turn in ((WARM_ON, on), (WARM_OFF, off)) if turn is None]
        return f"no request was served by slow in {' and '.join(missing)}"
    if item.ratio is not None and item.ratio >= target:
        return None
    parts = []
    if on.request != off.request:
        parts.append(f"the arms escalated at different requests ({on.request} vs {off.request})")
    prompt = on.prompt_tokens or 0
    cached = on.cached_tokens or 0
    threshold = int(WARM_THRESHOLD * FAST_WINDOW)
    if on.warms_landed == 0:
        if on.previous_estimate is not None and on.previous_estimate < threshold:
            parts.append(
                f"no warm could fire: the request before was estimated at {on.previous_estimate:,} tokens, below the "
                f"warm threshold ({threshold:,}), and this one jumped to {prompt:,} tokens, past the fast window"
            )
        else:
            parts.append("no warm landed on slow before this request")
    uncached = max(prompt - cached, 0)
    emulated_s = uncached / SLOW_PREFILL_TPS
    parts.append(
        f"{cached:,} of {prompt:,} prompt tokens ({cached / prompt:.0%}) were cached with warm-ahead"
        + (f" (largest warm: {on.largest_warm_tokens:,} tokens)" if on.largest_warm_tokens else "")
        + f"; {uncached:,} still prefilled on slow: {emulated_s:.1f}s emulated, {emulated_s * time_scale:.2f}s real"
        if prompt else "no usage reported"
    )
    if item.server_ratio is not None and item.ratio is not None and item.server_ratio >= target > item.ratio:
        parts.append(f"the slow backend's own TTFT ratio is {item.server_ratio:.1f}x: the rest is proxy latency")
    return "; ".join(parts)


def comparison_totals(items: Sequence[EscalationComparison], on: ArmResult, off: ArmResult) -> dict[str, Any]:
    """The comparison's totals (the JSON's ``comparison.totals``): TTFT sums over the paired turns
    (seconds), their ratio, how many met the target, and both arms' warms, failures and errors."""
    paired = [i for i in items if i.ratio is not None]
    sum_on = sum(i.warm_on.ttft_s for i in paired)  # type: ignore[union-attr]
    sum_off = sum(i.warm_off.ttft_s for i in paired)  # type: ignore[union-attr]
    return {
        "conversations": len(items),
        "paired": len(paired),
        "ttft_sum_warm_on_s": sum_on,
        "ttft_sum_warm_off_s": sum_off,
        "ratio_of_sums": _ratio(sum_off, sum_on),
        "min_ratio": min((i.ratio for i in paired), default=None),
        "target_ratio": TARGET_TTFT_RATIO,
        "target_met": sum(1 for i in paired if i.ratio >= TARGET_TTFT_RATIO),  # type: ignore[operator]
        "warms_fired_warm_on": on.backend.warms,
        "warm_prefilled_tokens_warm_on": on.backend.warm_prefilled_tokens,
        "warms_warm_off": off.backend.warms,
        "failed_attempts_warm_on": on.backend.failed_attempts,
        "failed_attempts_warm_off": off.backend.failed_attempts,
        "client_errors_warm_on": on.summary.client_errors,
        "client_errors_warm_off": off.summary.client_errors,
    }

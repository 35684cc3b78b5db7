"""The closed-loop arm's escalated turns (pure): what reply-warm left to prefill, and what the warms
cost that the escalated turn never read.

Per conversation that escalated in an arm (its rows in replay order; the escalated turn is the first
request served by ``slow``):

* ``prompt_tokens`` / ``cached_tokens``: the slow backend's ``usage`` of the escalated request;
  ``prefilled_tokens`` = prompt − cached: what was still computed when the user was waiting;
* ``warms`` / ``warm_prefill_tokens``: the warms (slow, ``max_tokens=1``, not streamed:
  :func:`litellm_kvwarm.lab.demo.is_warm`) logged up to and including the escalated request's row,
  and the prompt tokens they made slow compute (prompt − cached of each warm that succeeded: a
  re-warm computes only its growth);
* ``unpaid_tokens``: warm prefill the escalated turn did not read from the cache,
  ``warm_prefill − min(cached, warm_prefill)`` (slow has seen nothing else of the conversation, so
  its cached tokens are the warms'; a prefix shared with another conversation, e.g. identical tool
  schemas, would make this an underestimate).

:func:`escalated_warm_costs` returns those rows and the totals; ``unpaid_share`` = Σ unpaid ÷ Σ warm
prefill over the escalated conversations; ``unpaid_share_all`` counts as well every warm of the
conversations that never escalated in the replay (all of their warm prefill never paid off): the
issue's target (≤ 10% of all warm prefill). :func:`floor_ratio` is the
(f)-over-floor comparison restricted to one source (the issue's target: ShareGPT, emulated clock).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..demo import SLOW_GROUP, TurnRow
from .stats import percentile, ratio

__all__ = ["escalated_warm_costs", "floor_ratio"]


def _warm_prefill(warms: Sequence[Mapping[str, Any]]) -> int:
    return sum((w.get("prompt_tokens") or 0) - (w.get("cached_tokens") or 0) for w in warms if w.get("status") == 200)


def _conversation(rows: Sequence[TurnRow]) -> dict[str, Any] | None:
    index = next((i for i, r in enumerate(rows) if r.group == SLOW_GROUP), None)
    if index is None:
        return None
    turn = rows[index]
    warms = [w for r in rows[: index + 1] for w in r.warms]
    prefill = _warm_prefill(warms)
    prompt, cached = turn.prompt_tokens or 0, turn.cached_tokens or 0
    return {
        "conversation": turn.conversation, "source": turn.source, "api": turn.api, "request": turn.request,
        "prompt_tokens": prompt, "cached_tokens": cached, "cached_fraction": cached / prompt if prompt else None,
        "prefilled_tokens": max(prompt - cached, 0),
        "warms": sum(1 for w in warms if w.get("status") == 200), "warm_prefill_tokens": prefill,
        "unpaid_tokens": prefill - min(cached, prefill),
        "replies_diverged": sum(1 for r in rows[:index] if r.reply_diverged),
    }


def escalated_warm_costs(rows: Sequence[TurnRow]) -> dict[str, Any]:
    """Per escalated conversation of one arm's ``rows`` (see module docstring), and the totals:
    ``turns``, ``prompt_tokens``, ``cached_tokens``, ``prefilled_tokens``, ``warm_prefill_tokens``,
    ``unpaid_tokens``, ``unpaid_share`` (``None`` without warm prefill), ``replies_diverged``
    (requests before the escalated ones whose streamed reply differed from the recorded one)."""
    by_conv: dict[str, list[TurnRow]] = {}
    for row in rows:
        by_conv.setdefault(row.conversation, []).append(row)
    turns = [t for t in (_conversation(r) for r in by_conv.values()) if t is not None]
    total = {key: sum(t[key] for t in turns) for key in
             ("prompt_tokens", "cached_tokens", "prefilled_tokens", "warm_prefill_tokens", "unpaid_tokens",
              "replies_diverged")}
    total["turns"] = len(turns)
    total["unpaid_share"] = ratio(total["unpaid_tokens"], total["warm_prefill_tokens"])
    # conversations that never escalated in the replay: every warm they made slow compute never paid off
    idle = [r for r in by_conv.values() if all(row.group != SLOW_GROUP for row in r)]
    total["never_escalated_conversations"] = len(idle)
    total["never_escalated_warm_prefill_tokens"] = sum(_warm_prefill([w for row in r for w in row.warms]) for r in idle)
    total["unpaid_share_all"] = ratio(total["unpaid_tokens"] + total["never_escalated_warm_prefill_tokens"],
                                      total["warm_prefill_tokens"] + total["never_escalated_warm_prefill_tokens"])
    return {"turns": turns, "totals": total}


def floor_ratio(arm: Mapping[str, Any], floor: Mapping[str, Any], source: str = "sharegpt",
                attr: str = "emulated_ttft_s") -> dict[str, Any]:
    """``arm`` ÷ ``floor`` on the samples (``ArmTtft.as_dict()["samples"]``) of conversations whose
    source starts with ``source``: the ratio of the medians, and the median of per-conversation ratios
    (paired by conversation); ``sessions`` = how many were paired. ``None`` values when nothing is."""
    def pick(samples: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        return {s["conversation"]: s.get(attr) for s in samples if str(s.get("source", "")).startswith(source)}

    mine, theirs = pick(arm.get("samples") or []), pick(floor.get("samples") or [])
    paired = [ratio(mine[c], theirs[c]) for c in mine if c in theirs]
    paired = [p for p in paired if p is not None]
    both = [c for c in mine if c in theirs]
    return {
        "source": source, "clock": attr, "sessions": len(paired),
        "of_medians": ratio(percentile([mine[c] for c in both], 50), percentile([theirs[c] for c in both], 50)),
        "paired_median": percentile(paired, 50),
    }

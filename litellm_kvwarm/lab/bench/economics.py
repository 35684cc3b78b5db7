"""Warm economics of the warm-ahead arm (pure): what the warms cost and what they bought.

Per session (one replayed conversation in arm ``d``):

* ``warms``: warms fired (slow requests with ``max_tokens=1``, not streamed) that landed during
  its replay, and how many failed;
* ``warm_prefilled_tokens``: prompt tokens the warms made the slow engine compute
  (prompt − cached of each warm: a re-warm computes only the growth);
* ``found_warm``: the escalated turn came after at least one warm and found cached tokens;
* ``unpaid_tokens``: warm prefill that never paid off: all of it for a session that never
  escalated; otherwise what the warms computed beyond the tokens the escalated prompt reused
  (the escalated turn's cached tokens, all of which the warms put there: slow has seen nothing
  else of this session).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..demo import TurnRow, escalated_turn

__all__ = ["warm_economics"]


def _session(rows: Sequence[TurnRow]) -> dict[str, Any]:
    turn = escalated_turn(rows)
    before = rows if turn is None else [r for r in rows if r.request < turn.request]
    warms = [w for r in rows for w in r.warms]
    paid_warms = [w for r in before for w in r.warms]
    ok = [w for w in warms if w["status"] == 200]
    prefilled = sum((w["prompt_tokens"] or 0) - (w["cached_tokens"] or 0) for w in ok)
    prefilled_before = sum((w["prompt_tokens"] or 0) - (w["cached_tokens"] or 0)
                           for w in paid_warms if w["status"] == 200)
    reused = (turn.cached_tokens or 0) if turn is not None else 0
    found = turn is not None and turn.warms_landed > 0 and reused > 0
    unpaid = prefilled if turn is None else max(prefilled - min(reused, prefilled_before), 0)
    return {
        "conversation": rows[0].conversation,
        "source": rows[0].source,
        "escalated": turn is not None,
        "escalated_request": turn.request if turn else None,
        "escalated_prompt_tokens": turn.prompt_tokens if turn else None,
        "warms": len(warms),
        "warms_failed": len(warms) - len(ok),
        "warm_prefilled_tokens": prefilled,
        "reused_tokens": reused if found else 0,
        "found_warm": found,
        "unpaid_tokens": unpaid,
    }


def warm_economics(rows: Sequence[TurnRow]) -> dict[str, Any]:
    by_conv: dict[str, list[TurnRow]] = {}
    for row in rows:
        by_conv.setdefault(row.conversation, []).append(row)
    sessions = [_session(conv_rows) for conv_rows in by_conv.values()]
    escalated = [s for s in sessions if s["escalated"]]
    prefilled = sum(s["warm_prefilled_tokens"] for s in sessions)
    unpaid = sum(s["unpaid_tokens"] for s in sessions)
    return {
        "sessions": sessions,
        "totals": {
            "sessions": len(sessions),
            "escalated_sessions": len(escalated),
            "warms_fired": sum(s["warms"] for s in sessions),
            "warms_failed": sum(s["warms_failed"] for s in sessions),
            "escalations_that_found_a_warm": sum(1 for s in escalated if s["found_warm"]),
            "warm_prefilled_tokens": prefilled,
            "reused_tokens": sum(s["reused_tokens"] for s in sessions),
            "unpaid_tokens": unpaid,
            "unpaid_in_sessions_that_never_escalated": sum(s["unpaid_tokens"] for s in sessions if not s["escalated"]),
            "unpaid_share": unpaid / prefilled if prefilled else None,
        },
    }

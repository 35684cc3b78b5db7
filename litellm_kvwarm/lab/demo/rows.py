"""What a replay records: one :class:`TurnRow` per request, and the totals over an arm (pure).

The backend fields come from the emulators' request logs (``GET /emulator/requests``): which group
served a request, with what ``max_tokens``, how many prompt tokens were cached, which attempts
failed, and which warms (:func:`is_warm`: ``slow`` requests, not streamed, ``max_tokens=1``) landed meanwhile.
Token counts are the backends' own ``usage``; times are seconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from .settings import FAST_GROUP, SLOW_GROUP, Arm

__all__ = ["ArmResult", "BackendTotals", "Summary", "TurnRow", "backend_totals", "is_warm", "summarize"]


@dataclass
class TurnRow:
    """One replayed request.  ``turn`` is ``"7"`` (ShareGPT) or ``"2.3"`` (BFCL turn.step);
    ``request`` is the request's number in the whole conversation (the replay may start later);
    ``api`` is the API it was sent through (``"chat"``, ``"messages"``, ``"responses"``; the backend
    rows are ``/v1/chat/completions`` for the first two, ``/v1/responses`` for the third)."""

    arm: str
    conversation: str
    source: str
    request: int
    turn: str
    messages: int
    estimate_routing: int
    estimate_safe: int
    max_tokens_requested: int
    api: str = "chat"
    crossed_threshold: bool = False  # first replayed row whose estimate >= the warm threshold
    status: int = 0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    group: str | None = None  # group whose backend served it (from the emulator logs)
    header_group: str | None = None  # x-litellm-model-group response header
    max_tokens_backend: int | None = None  # as received by the serving backend
    attempts: list[dict[str, Any]] = field(default_factory=list)  # backend attempts for this request, in order
    warms: list[dict[str, Any]] = field(default_factory=list)  # warms (is_warm) that landed meanwhile
    failed_attempts: int = 0  # attempts and warms with HTTP >= 400
    ttft_s: float | None = None  # client-side, from request start to the first streamed chunk
    server_ttft_s: float | None = None  # the serving backend's own TTFT (arrival to end of prefill)
    total_s: float | None = None
    error: str | None = None
    reply_diverged: bool | None = None  # closed loop: the streamed reply differed from the recorded one

    @property
    def escalated_proactively(self) -> bool:
        return self.group == SLOW_GROUP and not any(a["group"] == FAST_GROUP for a in self.attempts)

    @property
    def escalated_after_error(self) -> bool:
        return self.group == SLOW_GROUP and any(
            a["group"] == FAST_GROUP and a["status"] >= 400 for a in self.attempts
        )

    @property
    def clamped(self) -> bool:
        return self.max_tokens_backend is not None and self.max_tokens_backend != self.max_tokens_requested


@dataclass(frozen=True)
class Summary:
    """An arm's rows in totals: requests by serving group, escalations (proactive: the plugin routed to
    ``slow`` before dispatch; fallback: after a ``fast`` 400), failures, clamps, tokens (backend
    ``usage``), mean client TTFT per group and the arm's wall time (seconds, process starts included)."""

    arm: str
    requests: int
    conversations: int
    served_fast: int
    served_slow: int
    proactive_escalations: int
    fallback_escalations: int
    failed_attempts: int
    client_errors: int
    clamped: int
    cached_tokens: int
    prompt_tokens: int
    mean_ttft_fast_s: float | None
    mean_ttft_slow_s: float | None
    wall_s: float


@dataclass(frozen=True)
class BackendTotals:
    """Everything the arm's emulators logged (read once at the end, warms included)."""

    fast_requests: int
    slow_requests: int
    warms: int  # slow requests with max_tokens == 1 that are not streamed: the plugin's warms
    warms_failed: int
    warm_prefilled_tokens: int  # prompt tokens the warms computed (prompt - cached)
    failed_attempts: int  # any logged request with HTTP >= 400, on either backend


@dataclass
class ArmResult:
    """One arm's run: its settings (``env``: the ``KVWARM_*`` it set), rows, summary and backend totals."""

    arm: Arm
    env: dict[str, str]
    rows: list[TurnRow]
    summary: Summary
    backend: BackendTotals


#: LiteLLM 1.108 sends a Responses warm's ``max_output_tokens: 1`` as 16 (OpenAI's minimum).
RESPONSES_MIN_OUTPUT_TOKENS = 16


def is_warm(entry: dict[str, Any]) -> bool:
    """A warm as the backend sees it: on ``slow``, not streamed (the demo and the benchmarks always
    stream), ``max_tokens=1``, or at most :data:`RESPONSES_MIN_OUTPUT_TOKENS` on ``/v1/responses``."""
    if entry.get("group") != SLOW_GROUP or entry.get("stream"):
        return False
    budget = entry.get("max_tokens")
    if budget == 1:
        return True
    return (str(entry.get("endpoint") or "").endswith("/v1/responses") and isinstance(budget, int)
            and budget <= RESPONSES_MIN_OUTPUT_TOKENS)


def backend_totals(fast_entries: Sequence[dict[str, Any]], slow_entries: Sequence[dict[str, Any]]) -> BackendTotals:
    """Totals over the emulators' full request logs (pure)."""
    warms = [e for e in slow_entries if is_warm(dict(e, group=SLOW_GROUP))]
    return BackendTotals(
        fast_requests=len(fast_entries),
        slow_requests=len(slow_entries),
        warms=len(warms),
        warms_failed=sum(1 for e in warms if (e.get("status") or 0) >= 400),
        warm_prefilled_tokens=sum((e.get("prompt_tokens") or 0) - (e.get("cached_tokens") or 0)
                                  for e in warms if e.get("status") == 200),
        failed_attempts=sum(1 for e in [*fast_entries, *slow_entries] if (e.get("status") or 0) >= 400),
    )


def _mean(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def summarize(arm: Arm, rows: list[TurnRow], wall_s: float) -> Summary:
    """The :class:`Summary` of ``arm``'s rows (pure)."""
    return Summary(
        arm=arm.name,
        requests=len(rows),
        conversations=len({r.conversation for r in rows}),
        served_fast=sum(r.group == FAST_GROUP for r in rows),
        served_slow=sum(r.group == SLOW_GROUP for r in rows),
        proactive_escalations=sum(r.escalated_proactively for r in rows),
        fallback_escalations=sum(r.escalated_after_error for r in rows),
        failed_attempts=sum(r.failed_attempts for r in rows),
        client_errors=sum(1 for r in rows if r.status != 200 or r.error),
        clamped=sum(1 for r in rows if r.clamped),
        cached_tokens=sum(r.cached_tokens or 0 for r in rows),
        prompt_tokens=sum(r.prompt_tokens or 0 for r in rows),
        mean_ttft_fast_s=_mean(r.ttft_s for r in rows if r.group == FAST_GROUP),
        mean_ttft_slow_s=_mean(r.ttft_s for r in rows if r.group == SLOW_GROUP),
        wall_s=wall_s,
    )

"""What the demo prints and writes (pure text and dicts; the caller does the I/O).

* :class:`RowPrinter` / :func:`format_row`: a table row per replayed request as it comes (by default
  only the interesting ones, :func:`is_interesting`, with a count of those left out);
* :func:`format_summary`: an arm's totals; :func:`format_comparison`: the escalated turns side by
  side with their TTFT ratio; :func:`format_header`: the setup, printed before the first arm;
* :func:`payload`: the ``--json`` document (options, rows, summaries, backend totals, comparison),
  which :mod:`litellm_kvwarm.lab.charts` also draws from.

Tokens are counted by the backends; times are seconds (``ttft_s``: client-measured).
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Sequence

from .compare import EscalatedTurn, EscalationComparison, explain
from .rows import ArmResult, BackendTotals, Summary, TurnRow
from .settings import (
    DECODE_TPS,
    FAST_GROUP,
    FAST_MODEL,
    FAST_PREFILL_TPS,
    FAST_WINDOW,
    SLOW_MODEL,
    SLOW_PREFILL_TPS,
    SLOW_WINDOW,
    TARGET_TTFT_RATIO,
    WARM_OFF,
    WARM_THRESHOLD,
    Arm,
    DemoOptions,
    scaled_cooldown_s,
    scaled_tenant_rate,
)

__all__ = ["HEADER", "RowPrinter", "format_comparison", "format_header", "format_row", "format_summary",
           "is_interesting", "payload"]

HEADER = (
    f"  {'req':>3} {'api':>9} {'turn':>5} {'msgs':>4} {'est.route':>9} {'est.safe':>8} {'prompt':>7} "
    f"{'served':>6} {'max_tok':>7} {'ttft_s':>7} {'cached':>7} {'attempts':<10} note"
)


def _fmt(value: Any, spec: str = "") -> str:
    return "-" if value is None else format(value, spec)


def format_row(row: TurnRow) -> str:
    attempts = ",".join(f"{a['group']}:{a['status']}" for a in row.attempts) or "-"
    notes = []
    if row.crossed_threshold:
        notes.append(f"est >= {WARM_THRESHOLD:.0%} of fast window" + (" (warm-ahead off: no warm)" if row.arm == WARM_OFF else ""))
    if row.escalated_proactively:
        notes.append("proactive->slow")
    if row.escalated_after_error:
        notes.append("fallback after 400")
    if row.clamped:
        notes.append(f"clamped {row.max_tokens_requested}->{row.max_tokens_backend}")
    for warm in row.warms:
        if warm["status"] == 200:
            computed = (warm["prompt_tokens"] or 0) - (warm["cached_tokens"] or 0)
            notes.append(f"warm landed on slow: {warm['prompt_tokens']:,} tok, {computed:,} computed")
        else:
            notes.append(f"warm FAILED on slow: HTTP {warm['status']}")
    if row.header_group and row.group and row.header_group != row.group:
        notes.append(f"header group {row.header_group}")
    if row.status != 200:
        notes.append(f"HTTP {row.status}")
    if row.error:
        notes.append(f"error: {row.error[:80]}")
    return (
        f"  {row.request:>3} {row.api:>9} {row.turn:>5} {row.messages:>4} {row.estimate_routing:>9} {row.estimate_safe:>8} "
        f"{_fmt(row.prompt_tokens):>7} {_fmt(row.group):>6} {_fmt(row.max_tokens_backend):>7} "
        f"{_fmt(row.ttft_s, '.3f'):>7} {_fmt(row.cached_tokens):>7} {attempts:<10} {'; '.join(notes)}"
    )


def is_interesting(row: TurnRow, first: bool) -> bool:
    """Rows printed by default: the first, the threshold crossing, warms, clamps, slow, trouble."""
    return (first or row.crossed_threshold or bool(row.warms) or row.clamped or row.group != FAST_GROUP
            or row.failed_attempts > 0 or row.status != 200 or bool(row.error))


class RowPrinter:
    """Prints a conversation's rows as they come: every row, or only the interesting ones with a
    count of those left out."""

    def __init__(self, say: Callable[[str], None], all_rows: bool) -> None:
        self._say = say
        self._all = all_rows
        self._first = True
        self._hidden = 0

    def begin(self) -> None:
        self._first, self._hidden = True, 0
        self._say(HEADER)

    def emit(self, row: TurnRow) -> None:
        if self._all or is_interesting(row, self._first):
            self._flush()
            self._say(format_row(row))
        else:
            self._hidden += 1
        self._first = False

    def end(self) -> None:
        self._flush()

    def _flush(self) -> None:
        if self._hidden:
            self._say(f"  ... {self._hidden} request(s) served by fast, no warm or clamp (--all-rows shows them)")
            self._hidden = 0

def format_summary(summary: Summary, backend: BackendTotals) -> str:
    return "\n".join([
        f"summary [{summary.arm}]: {summary.requests} requests replayed in {summary.conversations} conversations, "
        f"{summary.wall_s:.1f}s wall (process start included)",
        f"  served by fast: {summary.served_fast}   served by slow: {summary.served_slow}",
        f"  proactive escalations (plugin, before dispatch): {summary.proactive_escalations}",
        f"  escalations after a backend 400 (LiteLLM fallback): {summary.fallback_escalations}",
        f"  warms (slow requests with max_tokens=1): {backend.warms}, {backend.warm_prefilled_tokens:,} tokens "
        f"computed, {backend.warms_failed} failed",
        f"  failed backend attempts (HTTP >= 400 in the emulator logs): {backend.failed_attempts}",
        f"  max_tokens clamped: {summary.clamped}   client-visible errors: {summary.client_errors}",
        f"  cached prompt tokens: {summary.cached_tokens:,} of {summary.prompt_tokens:,}",
        f"  mean client TTFT: fast {_fmt(summary.mean_ttft_fast_s, '.3f')}s, slow {_fmt(summary.mean_ttft_slow_s, '.3f')}s",
    ])


def _cached_cell(turn: EscalatedTurn | None) -> str:
    if turn is None or turn.cached_tokens is None or not turn.prompt_tokens:
        return "-"
    return f"{turn.cached_tokens:,}/{turn.prompt_tokens:,} ({turn.cached_fraction:.0%})"

def _label(item: EscalationComparison) -> str:
    """``id (source)``, with the API first when it is not chat: ``id (messages, bfcl:...)``."""
    return f"{item.conversation} ({'' if item.api == 'chat' else item.api + ', '}{item.source})"


def format_comparison(items: Sequence[EscalationComparison], totals: dict[str, Any], time_scale: float) -> str:
    lines = [
        "comparison: the escalated turn (first request of a conversation served by slow), warm-ahead on vs off",
        f"  {'conversation':<36} {'req':>4} {'on ttft_s':>9} {'on cached/prompt':>24} "
        f"{'off ttft_s':>10} {'off cached/prompt':>24} {'ratio':>6} {'server':>7}",
    ]
    for item in items:
        on, off = item.warm_on, item.warm_off
        req = on.request if on else (off.request if off else None)
        lines.append(
            f"  {_label(item)[:36]:<36} {_fmt(req):>4} "
            f"{_fmt(on and on.ttft_s, '.3f'):>9} {_cached_cell(on):>24} "
            f"{_fmt(off and off.ttft_s, '.3f'):>10} {_cached_cell(off):>24} "
            f"{_fmt(item.ratio, '.1f') + 'x' if item.ratio else '-':>6} "
            f"{_fmt(item.server_ratio, '.1f') + 'x' if item.server_ratio else '-':>7}"
        )
    lines.append("  ratio = client TTFT warm-off / warm-on; server = the same on the slow emulator's own TTFT")
    for item in items:
        reason = explain(item, time_scale=time_scale)
        if reason:
            lines.append(f"  below {TARGET_TTFT_RATIO:g}x for {item.conversation}: {reason}")
    lines += [
        f"  all escalated turns: TTFT warm-off {totals['ttft_sum_warm_off_s']:.3f}s / warm-on "
        f"{totals['ttft_sum_warm_on_s']:.3f}s = {_fmt(totals['ratio_of_sums'], '.1f')}x; "
        f"target >= {TARGET_TTFT_RATIO:g}x met for {totals['target_met']} of {totals['conversations']} conversation(s)",
        f"  warms fired (slow requests with max_tokens=1): warm-on {totals['warms_fired_warm_on']} "
        f"({totals['warm_prefilled_tokens_warm_on']:,} tokens computed), warm-off {totals['warms_warm_off']}",
        f"  failed backend attempts: warm-on {totals['failed_attempts_warm_on']}, "
        f"warm-off {totals['failed_attempts_warm_off']}; client errors: warm-on {totals['client_errors_warm_on']}, "
        f"warm-off {totals['client_errors_warm_off']}",
    ]
    return "\n".join(lines)


def format_header(options: DemoOptions, arms: Sequence[Arm], conversations: int) -> str:
    """The setup in five lines: conversations and arms, the backends, the time scale, the plugin, the replay."""
    ts = options.time_scale
    cold_30k = 30_000 / SLOW_PREFILL_TPS
    return "\n".join([
        f"  {conversations} conversation(s); arms: {', '.join(a.name for a in arms)}",
        f"  fast={FAST_MODEL} window {FAST_WINDOW:,}, prefill {FAST_PREFILL_TPS:,.0f} tok/s; "
        f"slow={SLOW_MODEL} window {SLOW_WINDOW:,}, prefill {SLOW_PREFILL_TPS:,.0f} tok/s; decode {DECODE_TPS:g} tok/s",
        f"  time scale {ts:g}: every emulated time x {ts:g} (a 30k-token cold prompt on slow: "
        f"{cold_30k:.0f}s emulated, {cold_30k * ts:.2f}s real)",
        f"  plugin: warm at {WARM_THRESHOLD:.0%} of the fast window, KVWARM_WARM_COOLDOWN_S="
        f"{scaled_cooldown_s(ts):g} (300 s x time scale, real seconds), KVWARM_WARM_TENANT_RATE="
        f"{scaled_tenant_rate(ts):g} (120 a minute of emulated time), KVWARM_WARM_REWARM_STEP default; "
        f"arm warm-off adds KVWARM_WARM_AHEAD=0",
        f"  replay: from the last request estimated below {options.start_fraction:.0%} of the fast window "
        f"(earlier turns sent as history), max_tokens {options.max_tokens}, "
        + (f"think time {options.think_time_s:g}s emulated ({options.think_time_s * ts:.3f}s real) between requests"
           if options.think_time_s > 0 else "no think time (requests back to back)")
        + f", {options.turns_after_escalation} request(s) after the escalated one",
    ])


def payload(options: DemoOptions, results: list[ArmResult], starts: dict[str, int],
            comparison: list[EscalationComparison] | None, totals: dict[str, Any] | None,
            apis: dict[str, str] | None = None) -> dict[str, Any]:
    """The JSON document of a run: ``options``, ``replay_start`` (conversation id -> first replayed
    request), ``apis`` (conversation id -> the API it went through: ``"chat"``, ``"messages"``,
    ``"responses"``; every row also carries its ``api``), ``arms`` (per arm: ``arm``, ``env``, ``summary``, ``backend``, ``rows``) and ``comparison``
    (``rows`` per conversation, ``totals``; ``None`` unless both ``warm-on`` and ``warm-off`` ran)."""
    def turn(t: EscalatedTurn | None) -> dict[str, Any] | None:
        return None if t is None else dict(asdict(t), cached_fraction=t.cached_fraction)

    return {
        "options": {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(options).items()},
        "replay_start": starts,
        "apis": apis or {},
        "arms": [
            {"arm": asdict(r.arm), "env": r.env, "summary": asdict(r.summary), "backend": asdict(r.backend),
             "rows": [dict(asdict(row), escalated_proactively=row.escalated_proactively,
                           escalated_after_error=row.escalated_after_error, clamped=row.clamped)
                      for row in r.rows]}
            for r in results
        ],
        "comparison": None if comparison is None else {
            "rows": [{"conversation": i.conversation, "source": i.source, "api": i.api, "warm_on": turn(i.warm_on),
                      "warm_off": turn(i.warm_off), "ratio": i.ratio, "server_ratio": i.server_ratio,
                      "below_target_because": explain(i, time_scale=options.time_scale)} for i in comparison],
            "totals": totals,
        },
    }

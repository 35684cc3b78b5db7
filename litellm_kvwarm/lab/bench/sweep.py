"""The warm threshold's trade-off, measured: arm ``f`` (closed loop, warm-ahead + reply-warm) replayed again
with ``KVWARM_WARM_THRESHOLD`` at other values, on the same sessions, each on fresh processes.

Why: a session that crosses the threshold and then ends below the window (a chat that stops, an agent that
finishes) gets warms that never pay off; a higher threshold warms fewer such sessions but leaves the ones that
escalate less time, and one bulk warm instead of incremental ones. The issue's waste target (≤ 10% of all warm
prefill) and its TTFT target pull against each other through this one setting; this section shows by how much,
so an operator can choose it. Sessions that jump (``trigger="jump"``) and a session's head (``"head"``) are
warmed below any threshold: the sweep leaves them on, as the defaults do. One more point replays the default
threshold with ``KVWARM_WARM_LEAD_STEPS`` = :data:`LEAD_STEPS` (off by default; then a session past the threshold
is warmed only once it is that many of its largest steps from the window): what the lead saves and costs.

* :func:`sweep_arm`: arm ``f`` with the threshold set (pure);
* :func:`summarize_sweep` (pure): per threshold, over the replayed sessions: escalated sessions, the escalated
  turns' prompt / cached / still-prefilled tokens, the median still prefilled and its prefill-model time (÷ the
  slow prefill rate, seconds; no fixed cost), the median emulated TTFT of the ShareGPT escalated turns (seconds,
  the same clock as arm ``f``), warm requests and warm prefill (tokens; every session, the ones that never
  escalated included) and the share of it that never paid off (:func:`~.closed_loop.escalated_warm_costs`'s
  ``unpaid_share_all``, the issue's measure);
* :func:`run_threshold_sweep` (I/O): replays each threshold (:func:`~.replay.run_arm`, no floor: the floor does
  not depend on the threshold) and summarizes them with arm ``f``'s own run as the default's point.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from ...config import Settings
from ..datasets import Conversation
from ..demo import TurnRow
from .arms import ARMS, BenchArm
from .closed_loop import escalated_warm_costs
from .escalation import turn_samples
from .replay import ArmRun, ReplayOptions, run_arm
from .scales import Scale
from .stats import percentile

__all__ = ["DEFAULT_THRESHOLDS", "LEAD_ENV", "THRESHOLD_ENV", "run_threshold_sweep", "summarize_sweep", "sweep_arm"]

THRESHOLD_ENV = "KVWARM_WARM_THRESHOLD"
LEAD_ENV = "KVWARM_WARM_LEAD_STEPS"
#: the lead replayed besides the default's (when the default is off; else the lead off is replayed)
LEAD_STEPS = 3
#: thresholds replayed besides the default's (arm ``f`` itself, 0.6): above it only (the replay starts at the last
#: request below 50% of the fast window, so a threshold under ~0.55 would be crossed at the first request)
DEFAULT_THRESHOLDS = (0.7, 0.8, 0.9)


def sweep_arm(threshold: float, lead_steps: int | None = None) -> BenchArm:
    """Arm ``f`` with ``KVWARM_WARM_THRESHOLD`` = ``threshold`` (a fraction of the fast window) and, unless
    ``None``, ``KVWARM_WARM_LEAD_STEPS`` = ``lead_steps``. Raises ``ValueError`` for a threshold outside (0, 1]."""
    if not 0 < threshold <= 1:
        raise ValueError(f"a warm threshold is a fraction of the window in (0, 1], got {threshold}")
    lead = () if lead_steps is None else ((LEAD_ENV, str(lead_steps)),)
    return replace(ARMS["f"], extra_env=((THRESHOLD_ENV, f"{threshold:g}"), *lead))


def _point(key: tuple[float, int], rows: Sequence[TurnRow], scale: Scale) -> dict[str, Any]:
    threshold, lead_steps = key
    costs = escalated_warm_costs(rows)["totals"]
    samples = turn_samples(rows, scale.time_scale, scale.slow_prefill_tps)
    turns = escalated_warm_costs(rows)["turns"]
    prefilled = [t["prefilled_tokens"] for t in turns]
    median_prefilled = percentile(prefilled, 50)
    sharegpt = [s.emulated_ttft_s for s in samples if s.source == "sharegpt" and s.emulated_ttft_s is not None]
    warms = sum(1 for r in rows for w in r.warms if w.get("status") == 200)
    return {
        "threshold": threshold, "lead_steps": lead_steps, "sessions": len({r.conversation for r in rows}), "escalated": costs["turns"],
        "prompt_tokens": costs["prompt_tokens"], "cached_tokens": costs["cached_tokens"],
        "cached_fraction": costs["cached_tokens"] / costs["prompt_tokens"] if costs["prompt_tokens"] else None,
        "prefilled_tokens": costs["prefilled_tokens"], "median_prefilled_tokens": median_prefilled,
        "median_prefill_model_s": (None if median_prefilled is None or not scale.slow_prefill_tps
                                   else median_prefilled / scale.slow_prefill_tps),
        "median_emulated_ttft_sharegpt_s": percentile(sharegpt, 50), "warms": warms,
        "warm_prefill_tokens": costs["warm_prefill_tokens"] + costs["never_escalated_warm_prefill_tokens"],
        "never_escalated_warm_prefill_tokens": costs["never_escalated_warm_prefill_tokens"],
        "unpaid_tokens": costs["unpaid_tokens"] + costs["never_escalated_warm_prefill_tokens"],
        "unpaid_share_all": costs["unpaid_share_all"],
    }


def summarize_sweep(rows_by_threshold: Mapping[tuple[float, int], Sequence[TurnRow]], scale: Scale,
                    default: float | None = None, default_lead: int | None = None) -> dict[str, Any]:
    """One point per (threshold, lead steps) (ascending; see the module docstring for the fields); ``default`` and
    ``default_lead`` name the plugin's defaults among them (arm ``f``'s run)."""
    points = [_point(k, rows_by_threshold[k], scale) for k in sorted(rows_by_threshold, key=lambda k: (k[0], -k[1]))]
    return {"default": default, "default_lead": default_lead, "env": THRESHOLD_ENV, "lead_env": LEAD_ENV, "points": points}


def run_threshold_sweep(thresholds: Sequence[float], base: ArmRun, conversations: list[Conversation],
                        starts: dict[str, int], scale: Scale, replay: ReplayOptions, workdir: Path,
                        say: Callable[[str], None]) -> dict[str, Any]:
    """Replay arm ``f`` at each of ``thresholds`` (fresh processes each), then :func:`summarize_sweep` with
    ``base`` (arm ``f``'s run, at the threshold its proxy read: ``KVWARM_WARM_THRESHOLD`` of this process's
    environment, which the proxies inherit, else the default) as that threshold's point."""
    settings = Settings.from_env()
    default, lead = settings.warm_threshold, settings.warm_lead_steps
    rows: dict[tuple[float, int], Sequence[TurnRow]] = {(default, lead): base.rows}
    for threshold in thresholds:
        if threshold == default:
            continue
        say(f"[bench] warm threshold {threshold:g} (arm f again, {THRESHOLD_ENV}={threshold:g})")
        run = run_arm(sweep_arm(threshold), conversations, starts, scale, replay, workdir / f"t{threshold:g}", say)
        rows[(threshold, lead)] = run.rows
    other = LEAD_STEPS if lead == 0 else 0
    say(f"[bench] warm threshold {default:g} with {LEAD_ENV}={other} (arm f again)")
    run = run_arm(sweep_arm(default, other), conversations, starts, scale, replay, workdir / f"t{default:g}-lead{other}", say)
    rows[(default, other)] = run.rows
    return summarize_sweep(rows, scale, default, lead)

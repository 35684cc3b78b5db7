"""Pure decisions: where a request goes and how many output tokens it may ask for.

No I/O, no LiteLLM: inputs are estimates (tokens), windows (tokens) and settings values;
outputs are frozen results that say what to do and why, so the hook can log and count
them without re-deriving anything.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from .tokens import TokenEstimate


class RouteAction(str, Enum):
    STAY = "stay"  # fits (or nothing to do): dispatch as the client asked
    PROACTIVE = "proactive"  # cannot fit: send to the escalation target first
    UNKNOWN_WINDOW = "unknown_window"  # no window known for the group: untouched
    NO_TARGET = "no_target"  # cannot fit, but the group has no escalation target
    TARGET_TOO_SMALL = "target_too_small"  # the target's known window cannot hold it either


@dataclass(frozen=True)
class RouteDecision:
    """Outcome of :func:`decide_route`. Token fields are the inputs, kept for logs and metrics."""

    action: RouteAction
    source: str
    target: str | None
    estimate_tokens: int
    output_floor_tokens: int
    window_tokens: int | None
    exact: bool = False
    #: the output room asked is the client's own ``max_tokens``, smaller than the configured floor
    output_is_client_budget: bool = False

    @property
    def escalate(self) -> bool:
        return self.action is RouteAction.PROACTIVE

    def describe(self) -> str:
        """One log line, no prompt content."""
        count = f"exact {self.estimate_tokens}tok" if self.exact else f"est≈{self.estimate_tokens}tok"
        output = "output (the client's max_tokens)" if self.output_is_client_budget else "output floor"
        need = f"{count} + {self.output_floor_tokens} {output}"
        if self.action is RouteAction.PROACTIVE:
            return f"proactive: {need} exceeds window {self.window_tokens} of {self.source!r} → routing to {self.target!r}"
        if self.action is RouteAction.NO_TARGET:
            return f"kept local: {need} exceeds window {self.window_tokens} of {self.source!r}, which has no escalation target"
        if self.action is RouteAction.TARGET_TOO_SMALL:
            return f"kept local: {need} exceeds window {self.window_tokens} of {self.source!r} and the window of {self.target!r}"
        if self.action is RouteAction.UNKNOWN_WINDOW:
            return f"untouched: window of {self.source!r} unknown"
        return f"stay: {need} fits window {self.window_tokens} of {self.source!r}"


def decide_route(
    *,
    source: str,
    target: str | None,
    routing_estimate: int,
    output_floor_tokens: int,
    source_window: int | None,
    target_window: int | None,
    exact: bool = False,
    output_is_client_budget: bool = False,
) -> RouteDecision:
    """Decide before dispatch whether a request must leave its group.

    Escalates when ``routing_estimate + output_floor_tokens > source_window`` and a target
    exists whose window is unknown or large enough. Uses the routing (low-leaning)
    estimate on purpose: a wrong escalation costs a slow-tier turn, a wrong stay costs one
    rejection that the reactive backstop handles.
    """

    def result(action: RouteAction) -> RouteDecision:
        return RouteDecision(action, source, target, routing_estimate, output_floor_tokens, source_window, exact,
                             output_is_client_budget)

    if source_window is None:
        return result(RouteAction.UNKNOWN_WINDOW)
    need = routing_estimate + output_floor_tokens
    if need <= source_window:
        return result(RouteAction.STAY)
    if target is None:
        return result(RouteAction.NO_TARGET)
    if target_window is not None and need > target_window:
        return result(RouteAction.TARGET_TOO_SMALL)
    return result(RouteAction.PROACTIVE)


@dataclass(frozen=True)
class ClampDecision:
    """Outcome of :func:`clamp_output`. ``max_tokens`` is the value to send (tokens); ``changed``
    says whether it differs from the request; ``needs_exact`` asks the caller to count the
    prompt exactly and call again, because the estimate alone would cut the request."""

    max_tokens: int | None
    changed: bool
    needs_exact: bool = False
    reason: str = ""


def clamp_output(
    *,
    requested: int | None,
    prompt_tokens: int,
    window: int | None,
    output_floor_tokens: int,
    exact: bool,
    margin_tokens: int = 0,
    basis: str | None = None,
) -> ClampDecision:
    """Lower ``requested`` output tokens so ``prompt_tokens + max_tokens <= window``.

    Never raises the budget, never lowers it below ``output_floor_tokens`` (a request that
    still overflows then belongs to the reactive backstop), and does nothing when
    ``requested`` or ``window`` is unknown. With ``exact=False`` (``prompt_tokens`` is the
    safe over-estimate) a cut is reported as ``needs_exact=True`` so the caller can count
    exactly first and not truncate answers on its own pessimism. ``basis`` names what
    ``prompt_tokens`` is in the reason (default: "exact" / "safe estimate").
    """
    if requested is None or window is None or requested <= 0:
        return ClampDecision(requested, changed=False)
    room = window - prompt_tokens - (margin_tokens if exact else 0)
    if requested <= room:
        return ClampDecision(requested, changed=False, reason="fits")
    clamped = max(room, output_floor_tokens)
    if clamped >= requested:
        return ClampDecision(requested, changed=False, reason="floor")
    kind = basis or ("exact" if exact else "safe estimate")
    return ClampDecision(
        clamped,
        changed=True,
        needs_exact=not exact,
        reason=f"{kind} {prompt_tokens}tok + max_tokens {requested} > window {window}: max_tokens → {clamped}",
    )


def needs_exact_count(estimate: TokenEstimate, floor: int, window: int, target: object) -> bool:
    """Whether one exact count (``/tokenize``, within the discovery budget) should settle the route:
    the two estimates disagree on whether the request fits, or the request would be escalated on an
    estimate alone while it is within 2× the window (an estimate that far off is not worth checking)."""
    routing, safe = estimate.routing + floor, estimate.safe + floor
    disagree = routing <= window < safe
    would_escalate = target is not None and window < routing <= 2 * window
    return disagree or would_escalate

"""The plan of one request, decided from its view and its facts (pure: no I/O, no LiteLLM).

:func:`plan_route` turns a :class:`~litellm_kvwarm.view.PreCallView` and its :class:`~litellm_kvwarm.facts.RouteFacts`
into one :class:`RoutePlan`: stay, escalate or keep local (each with the counter label and the log line that say why),
which fallbacks to arm, what to record in the request's metadata, and which group to warm. :func:`plan_clamp` decides an
attempt's output clamp. Units: tokens; windows are ``max_model_len``.

The rules (unchanged from the hook they came from): a request whose routing estimate (or exact count) plus the output
floor fits its group's window stays; so does one an exact count could not settle while it is within 2× the window.
Otherwise it goes to the first step of its usable chain whose window fits (:func:`~litellm_kvwarm.chain.first_fitting`),
unless proactive routing is off or no step fits. The backstop is armed whenever the serving group has steps left, the
generic ``fallbacks`` only when an overflow is possible by the safe estimate and neither the operator nor the client set
any. A warm goes to the group the session's next escalation would reach."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

from .chain import first_fitting, generic_chain, kept_entries, next_step, rest_after
from .output_budget import OutputBudget, min_output, read_output_budget
from .policy import clamp_output, decide_route, needs_exact_count
from .reactive import BackstopPlan, fallback_chain
from .tokens import TokenEstimate

if TYPE_CHECKING:  # types only: the planner imports no module that does I/O
    from .config import Settings
    from .facts import RouteFacts
    from .view import PreCallView

__all__ = ["Backstop", "ClampPlan", "Escalation", "Route", "RoutePlan", "WarmPlan", "plan_clamp", "plan_route", "wants_exact_count"]


class Route(str, Enum):
    UNTOUCHED = "untouched"  # not the plugin's request, or nothing is known to act on
    STAY = "stay"  # dispatched to the group the client asked for
    ESCALATE = "escalate"  # sent to a step of the escalation chain before dispatch
    KEEP_LOCAL = "keep_local"  # does not fit, but no usable step fits either (or routing is off)


@dataclass(frozen=True)
class Backstop:
    """LiteLLM fallbacks to arm for ``group`` (``entries``: its ``context_window_fallbacks`` list, also set as ``fallbacks``
    when ``generic``, without the retry slot unless ``generic_retry``) and the :class:`BackstopPlan` the hops read."""

    group: str
    entries: tuple[Any, ...]
    generic: bool
    plan: BackstopPlan
    why: str  # why the generic fallbacks are armed or not (:attr:`reason`, formatted only when read)
    generic_retry: bool = True  # the generic ``fallbacks`` keep the retry slot on ``group``
    kept: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)  # the operator's entries for other groups (:func:`_kept`)

    @property
    def reason(self) -> str:
        return f"fallbacks of {self.group!r} → {list(self.plan.chain)}; generic fallbacks {'armed' if self.generic else 'untouched'} ({self.why})"


@dataclass(frozen=True)
class Escalation:
    """Send the request to ``target`` with the step's own ``overrides`` (as LiteLLM's fallback would merge them);
    ``origin``: ``{"source", "window", "tokens"}`` for the failure hook. ``via_fallback``: the LiteLLM
    ``context_window_fallbacks`` entries of the source group (the target first, then the rest of the chain) when the
    request keeps its group and the source's first attempt is skipped instead (Anthropic Messages: LiteLLM 1.108's
    ``/v1/messages`` endpoint ignores what the failure hook returns, so a target that fails must leave the source's
    context-length 400 as the request's original error, as LiteLLM alone would); ``None``: ``model`` is rewritten to
    ``target``. ``source_fallback``: LiteLLM's generic ``fallbacks`` steps for ``target`` ending with the source group
    (the operator's own steps for ``target`` first), so a target that fails (down, overloaded, rate-limited) leaves the
    request to the group LiteLLM alone would have sent it to, as sent: a prompt that fits there but not with the output
    floor is served there as LiteLLM alone serves it; ``()`` when the client sent its own ``fallbacks`` or the step
    overrides the request."""

    target: str
    overrides: Mapping[str, Any]
    origin: Mapping[str, Any]
    via_fallback: tuple[Any, ...] | None = None
    source_fallback: tuple[Any, ...] = ()
    kept: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)  # the operator's entries for other groups (:func:`_kept`)


@dataclass(frozen=True)
class WarmPlan:
    """Warm ``target`` (window ``target_window``, ``None``: unknown) for a session served in a
    ``source_window`` group at ``tokens``; ``growth_tokens``: the routing estimate (re-warm scale)."""

    target: str
    target_window: int | None
    tokens: int
    source_window: int
    growth_tokens: int

    @property
    def reason(self) -> str:  # formatted only when read (nothing on the request path does)
        return f"next escalation from window {self.source_window} at ≈{self.tokens}tok reaches {self.target!r}"


@dataclass(frozen=True)
class RoutePlan:
    """What the pre-call hook does. ``label``/``counted_target``: the ``route_decisions`` counter
    (``label`` ``None``: nothing counted); ``reason`` is logged at ``log_level`` (``None``: not
    logged); ``pin_session``: record the session's affinity key; ``estimate_record``: the
    ``ESTIMATE_KEY`` metadata (``None``: not written)."""

    route: Route
    label: str | None = None
    counted_target: str | None = None
    reason: str = ""
    log_level: str | None = None
    pin_session: bool = False
    estimate_record: Mapping[str, Any] | None = None
    escalation: Escalation | None = None
    backstop: Backstop | None = None
    warm: WarmPlan | None = None


def wants_exact_count(estimate: TokenEstimate, floor: int, window: int, chain: Sequence[str]) -> bool:
    """Whether one exact count should settle the route (see :func:`policy.needs_exact_count`)."""
    return needs_exact_count(estimate, floor, window, tuple(chain) or None)


def plan_route(view: PreCallView, facts: RouteFacts, settings: Settings) -> RoutePlan:
    """The :class:`RoutePlan` of one pre-call request."""
    group = view.group
    if not facts.listed or group is None:
        return RoutePlan(Route.UNTOUCHED)
    if not view.output.valid:
        return RoutePlan(Route.UNTOUCHED, "client_output_error", None,
                         "[CONTEXT-ROUTE] untouched: the client's own output budget is invalid", "debug")
    if view.malformed:
        return RoutePlan(Route.UNTOUCHED, "client_malformed", None,
                         "[CONTEXT-ROUTE] untouched: a malformed conversation is the client's own error", "debug")
    if view.server_state:
        return RoutePlan(Route.UNTOUCHED, "server_state", None,
                         "[CONTEXT-ROUTE] untouched: the request continues state stored on its server (previous_response_id)", "debug")
    floor, first = settings.output_floor_tokens, (facts.chain[0] if facts.chain else None)
    pin = view.session is not None and settings.session_pinning
    # the plugin arms no generic fallbacks of its own on a streamed Messages request: with any set, LiteLLM's
    # Messages stream reads ahead for an error before content, and a stream error a hop declines then reaches the
    # client as a 500 JSON body, where LiteLLM alone streams a 200 with the error event (found by a breaker)
    generic_sent = view.generic_fallbacks_sent or (view.kind == "messages" and view.stream)
    window, estimate, raw = facts.source_window, facts.estimate, facts.raw_estimate
    if window is None or estimate is None or raw is None:
        return RoutePlan(Route.UNTOUCHED, "unknown_window", first, f"[CONTEXT-ROUTE] untouched: window of {group!r} unknown", "debug",
                         pin_session=pin, backstop=_backstop(group, facts.usable, None, None, view.output, facts, generic_sent, floor,
                                                                  settings.keep_output_budget))
    record = {"safe": estimate.safe, "routing": estimate.routing, "group": group,
              "raw_safe": raw.safe, "raw_routing": raw.routing, "tenant": facts.tenant_hash, "window": window}
    if least := min_output(view.payload):  # the clamp of a Messages body bridged to chat no longer sees its thinking budget
        record["least_output"] = least
    tokens = facts.exact if facts.exact is not None else estimate.routing
    # the output a request needs room for: the floor, or less when the client itself asked for less (a prompt of
    # 16,200 with max_tokens 100 fits 16,384: escalating it would only add the target's failures to its own)
    asked = view.output.effective
    need = min(floor, asked) if asked is not None and asked > 0 else floor
    # the estimate alone is not trusted this close to the window (code and JSON read up to ~1.6x
    # high): stay, and let the server's own numbers escalate if it must
    # (nor when the request holds messages some templates drop: only the server's count sizes it)
    unsettled = facts.exact_asked and facts.exact is None and (tokens + need <= 2 * window or estimate.counts.template_dependent)
    backstop = _backstop(group, facts.usable, window, estimate, view.output, facts, generic_sent, floor, settings.keep_output_budget)
    common = {"pin_session": pin, "estimate_record": record}
    if tokens + need <= window or unsettled:
        if unsettled:
            reason, level = (f"[CONTEXT-ROUTE] stay: est≈{tokens}tok + {need} exceeds window {window} of {group!r} but no exact count "
                             "could settle it; the backstop escalates if the server refuses"), "info"
        else:
            reason, level = f"[CONTEXT-ROUTE] stay: {tokens}tok + {need} fits window {window} of {group!r}", "debug"
        warm = _warm(facts.windows, window, tokens, estimate.routing, floor)
        return RoutePlan(Route.STAY, "stay", first, reason, level, backstop=backstop, warm=warm, **common)
    target, target_window = first_fitting(facts.windows, tokens + need)
    decision = decide_route(source=group, target=target or (facts.usable[0] if facts.usable else None), routing_estimate=tokens,
                            output_floor_tokens=need, source_window=window, target_window=target_window, exact=facts.exact is not None,
                            output_is_client_budget=need < floor)
    if target is None or not settings.proactive_routing:
        if facts.client_ruled_out:  # disable_fallbacks, or the request's own fallbacks: its error stays its own, as in LiteLLM alone
            label, reason = "kept_local_client", f"[CONTEXT-ROUTE] kept local: the request's own fallback choice rules out {list(facts.chain)}"
        elif facts.chain and not facts.usable:
            label = "kept_local_missing" if facts.chain_missing else "kept_local_forbidden"
            reason = f"[CONTEXT-ROUTE] kept local: no step of {group!r}'s chain {list(facts.chain)} is in the model list and allowed for this key"
        elif target is not None:
            label, reason = "stay", f"[CONTEXT-ROUTE] not routed (KVWARM_PROACTIVE_ROUTING=0): {decision.describe()}"
        else:
            label, reason = decision.action.value, f"[CONTEXT-ROUTE] {decision.describe()}"
        return RoutePlan(Route.KEEP_LOCAL, label, first, reason, "info", backstop=backstop, **common)
    overrides = facts.step_params.get(target, {})
    output = read_output_budget({**view.output_values, **overrides})  # the body after the step's overrides
    sent = overrides["fallbacks"] is not None if "fallbacks" in overrides else generic_sent
    rest = rest_after(facts.usable, target)
    warm = None
    if target_window is not None:
        warm = _warm(tuple((g, w) for g, w in facts.windows if g in rest), target_window, tokens, estimate.routing, floor)
    origin = {"source": group, "window": window, "tokens": tokens}
    if view.kind == "messages":
        entries = tuple(fallback_chain(group, (target, *rest), None, facts.step_params))
        return RoutePlan(
            Route.ESCALATE, "proactive", target, f"[CONTEXT-ROUTE] {decision.describe()} (by skipping {group!r})", "info",
            escalation=Escalation(target, {}, origin, entries, kept=_kept(facts, group)), warm=warm, **common,
        )
    return RoutePlan(
        Route.ESCALATE, "proactive", target, f"[CONTEXT-ROUTE] {decision.describe()}", "info",
        escalation=Escalation(target, overrides, origin, source_fallback=_source_fallback(group, target, rest, overrides, sent, facts),
                              kept=_kept(facts, target)),
        backstop=_backstop(target, rest, target_window, estimate, output, facts, sent, floor, settings.keep_output_budget,
                           walks_chain=True),
        warm=warm, **common,
    )


def _source_fallback(source: str, target: str, rest: tuple[str, ...], overrides: Mapping[str, Any], sent: bool,
                     facts: RouteFacts) -> tuple[Any, ...]:
    """:attr:`Escalation.source_fallback`: the operator's generic fallbacks of ``target``, then the steps of the
    chain after ``target`` (LiteLLM alone, walking ``source``'s context-window fallbacks, goes on to them when
    ``target`` fails for any reason), then ``source``."""
    if sent or overrides:
        return ()
    operator = generic_chain(target, facts.operator_fallbacks, original=source)  # LiteLLM alone reached target on a hop of source
    steps = [g for g in operator if g != source]
    later = fallback_chain(target, tuple(g for g in rest if g not in steps and g != source), None, facts.step_params)
    return (*steps, *later, source)


#: A server may refuse well below the window its ``/v1/models`` advertises (llama.cpp's context split
#: over ``--parallel`` slots, LM Studio's loaded context length, SGLang's KV admission): the generic
#: fallbacks are armed for requests whose safe estimate plus output exceeds this share of the window.
HIDDEN_LIMIT_FRACTION = 0.5


def _backstop(group: str, chain: tuple[str, ...], window: int | None, estimate: TokenEstimate | None, output: OutputBudget,
              facts: RouteFacts, generic_sent: bool, floor: int, keep_budget: bool = False, walks_chain: bool = False) -> Backstop | None:
    """LiteLLM's fallbacks for ``group``, only when it has escalation steps left (``chain``: in the model list, allowed
    for the key, not ruled out by the client): a retry slot on ``group`` when the client sent an output budget, then every
    step. The generic ``fallbacks`` (for context errors LiteLLM does not recognise, e.g. LM Studio's in-stream "tokens to
    keep"; the deployment hook aborts any such hop that is not a context error) only when an overflow is possible by the
    safe estimate (against :data:`HIDDEN_LIMIT_FRACTION` of the window: a server may hold less than it advertises) and the
    operator set none for the group; otherwise non-context failures go exactly as they would without the plugin. The
    operator's entries for other groups follow the plugin's (:func:`_kept`). ``keep_budget`` (``KVWARM_KEEP_OUTPUT_BUDGET``):
    the plan carries the steps' known windows, so no hop or clamp cuts a budget a step could serve whole."""
    if not chain:
        return None
    params = facts.step_params
    entries = tuple(fallback_chain(group, chain, output.effective, params))
    need = estimate.safe + (output.effective or floor) if window is not None and estimate is not None else None
    possible = need is not None and need > window * HIDDEN_LIMIT_FRACTION  # type: ignore[operator]
    # the same group again only when the advertised window itself may be overflowed (a retry with a lower
    # budget can help); otherwise a 401/404 that put the deployment in cooldown would come back as the
    # Router's own 429 from that retry slot
    retry = need is not None and need > window  # type: ignore[operator]
    operator_generic = generic_chain(group, facts.operator_fallbacks)  # its own entry, else the operator's "*"
    generic = possible and not operator_generic and not generic_sent
    step_output = {g: out for g in chain if (out := read_output_budget(params.get(g, {})).effective) is not None}
    step_windows = {g: w for g, w in facts.windows if g in chain and w is not None} if keep_budget else {}
    plan = BackstopPlan(source=group, chain=chain, requested=output.effective, own_generic_fallbacks=generic, step_output=step_output,
                        step_windows=step_windows, walks_chain=walks_chain, generic_retry=generic and retry)
    why = ("overflow possible by the safe estimate" if possible else "no overflow possible by the safe estimate") if not operator_generic else "the operator's own"
    return Backstop(group, entries, generic, plan, why, generic_retry=retry, kept=_kept(facts, group))


def _kept(facts: RouteFacts, group: str) -> dict[str, tuple[Any, ...]]:
    """By the body key the plugin writes for ``group``: the entries for every other group of the list LiteLLM alone
    would read for the request (:func:`~.chain.kept_entries`): the walk's later hops (another group failing) keep them."""
    return {"fallbacks": kept_entries(facts.operator_fallbacks, group), "context_window_fallbacks": kept_entries(facts.request_cwf, group)}


def _warm(rest: Sequence[tuple[str, int | None]], current_window: int, tokens: int, routing: int, floor: int) -> WarmPlan | None:
    """Warm the group the next escalation of this session would reach (the first remaining step
    whose window is larger than the one now serving it); ``None`` when there is none."""
    target, target_window = next_step(rest, current_window, floor)
    if target is None:
        return None
    return WarmPlan(target, target_window, tokens, current_window, routing)


@dataclass(frozen=True)
class ClampPlan:
    """An attempt's output clamp: ``max_tokens`` to cap every output field to (``None``: leave
    them); ``needs_exact``: only an exact count can tell (the safe estimate would cut)."""

    max_tokens: int | None = None
    needs_exact: bool = False
    reason: str = field(default="")


def plan_clamp(requested: int, window: int, safe_estimate: int, exact: int | None, settings: Settings,
               min_output: int = 0) -> ClampPlan:
    """Lower the output budget so prompt + output fits ``window``. Cuts only on an ``exact`` count:
    without one, a cut the safe estimate suggests is answered with ``needs_exact`` (the routing
    estimate over-counts code and JSON by up to ~1.6x; the server's own numbers correct the rest).
    ``min_output``: the request's ``min_tokens`` (tokens), which a server refuses above the budget: never
    cut below it, and not at all where the room is under it (the request goes as sent: a server that
    refuses it on length is escalated by the backstop with the whole budget, as by LiteLLM alone)."""
    floor = max(settings.output_floor_tokens, min_output)
    if exact is not None and min_output > 0 and window - exact < min_output:
        return ClampPlan(reason=f"exact {exact}tok leaves under the request's min_tokens {min_output} in window {window}: no cut")
    if exact is None:
        first = clamp_output(requested=requested, prompt_tokens=safe_estimate, window=window, output_floor_tokens=floor, exact=False)
        return ClampPlan(needs_exact=first.changed, reason=first.reason)
    final = clamp_output(requested=requested, prompt_tokens=exact, window=window, output_floor_tokens=floor, exact=True,
                         margin_tokens=settings.clamp_margin_tokens)
    return ClampPlan(final.max_tokens if final.changed else None, reason=final.reason)

"""One backend attempt (the deployment hook): a fallback hop's decision, then the output clamp.

Per attempt, after LiteLLM chose a deployment:

1. **Hop** (only on a fallback hop of a request the pre-call hook armed): read the backend's
   rejection (:func:`~litellm_kvwarm.context_errors.parse_context_error`), gather the facts the
   decision needs (the source's known window and an exact count or the safe estimate for a retry;
   the step's window for an escalation), decide with :func:`~litellm_kvwarm.reactive.decide_hop`,
   then retry clamped, escalate with the original budget, skip the hop (:class:`SkipHop`) or pass.
2. **Clamp**: lower the output budget so prompt + output fits the deployment's window, on an exact
   ``/tokenize`` count only (:func:`~litellm_kvwarm.planner.plan_clamp`), within what is left of the
   request's I/O budget. Neither cuts below the request's ``min_tokens`` (vLLM refuses it above the budget).

Before both, the attempt LiteLLM just recorded as failed (``previous_models``: its deployment id
and error, on every retry and fallback hop) is learned from: a rejection that reveals a limit below
what that deployment is known to hold is kept for the request's tenant (:mod:`.limit_learning`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from .context_errors import parse_context_error
from .deadline import RequestBudget
from .effects import Effects
from .facts import AttemptFacts, Facts
from .limit_learning import LimitLearner
from .litellm_model_info import model_id_of
from .meta import ESCALATED_KEY, REFUSAL_KEY, request_metadata
from .output_budget import OutputBudget, cap_output, least_output, set_output
from .planner import plan_clamp
from .reactive import HopAction, decide_hop, retried_attempt
from .view import AttemptView

logger = logging.getLogger("litellm_kvwarm")


class SkipHop(Exception):
    """Ends a fallback hop before any backend attempt (the hook raises it as LiteLLM's
    ``ContextWindowExceededError``, which LiteLLM moves past)."""


class DeclineHop(SkipHop):
    """Ends a generic fallback hop after a failure that is not a context-length error (the hook
    raises it as a plain ``BadRequestError``: the client gets the original error)."""


class Attempts:
    """The deployment hook's work for one handler (see the module docstring)."""

    def __init__(self, facts: Facts, effects: Effects, *, native_messages: Callable[[str, str | None], bool] = lambda m, p: False):
        self.facts, self.effects = facts, effects
        self.learner = LimitLearner(facts)
        self.settings = facts.settings
        self._native_messages = native_messages

    def skipped_source(self, view: AttemptView) -> str | None:
        """The context-length error to raise instead of the source group's first attempt of a
        proactive escalation made by fallback (``planner.Escalation.via_fallback``), else ``None``."""
        origin, target = view.carried.origin, view.carried.skip_source
        if target is None or origin is None or view.fallback_depth or view.carried.model_group != origin.get("source"):
            return None
        return self.effects.skipped_source(origin, target)

    def bridged(self, view: AttemptView) -> bool:
        """An Anthropic Messages attempt LiteLLM bridges to chat (no native ``/v1/messages`` for its
        provider): the bridged ``acompletion`` attempt does the work, not this one."""
        return view.kind == "messages" and not self._native_messages(view.model.split("/", 1)[-1], view.provider)

    async def run(self, view: AttemptView, kwargs: dict[str, Any], budget: RequestBudget) -> None:
        """Decide and apply the hop, then the clamp, on ``kwargs``.

        Raises:
            SkipHop: this hop must not reach a backend.
        """
        attempt = AttemptFacts(self.facts, view)
        if view.carried.previous_attempt is not None:  # LiteLLM's record of the attempt that just failed
            await self.learner.learn(view.carried.previous_attempt, kwargs, view.carried, budget)
        output = await self._hop(attempt, kwargs, budget)
        self._refuse_over_learned(attempt, output)
        if view.fallback_depth:  # this hop goes ahead: a reply its target computes itself is not warmed there
            self.effects.served_by(kwargs, view.carried.model_group)
        await self._clamp(attempt, output, kwargs, budget)

    def _refuse_over_learned(self, attempt: AttemptFacts, output: OutputBudget) -> None:
        """LiteLLM's own retry of a length refusal it did not classify (an in-stream error it maps to
        a 500, e.g. LM Studio's ``event: error``): once the refusal taught this tenant the deployment's
        limit, the retry is skipped before reaching it when the request has an escalation step, and
        LiteLLM moves on to its context-window fallback. Only after a length refusal of this request
        (so the hops that follow still read the server's own words), judged on the routing estimate,
        which leans low: only a certain refusal is skipped."""
        view = attempt.view
        plan, kind, previous = view.carried.plan, view.kind, view.carried.previous_error
        if plan is None or not plan.chain or kind is None or view.carried.model_group != plan.source:
            return
        if previous is None or parse_context_error(previous) is None:
            return
        limits = attempt.windows().learned(attempt.info)
        if limits.total is None and limits.input is None:
            return
        prompt = attempt.estimate(kind).routing
        out = min(output.effective or self.settings.output_floor_tokens, self.settings.output_floor_tokens)
        if (limits.input is not None and prompt > limits.input) or (limits.total is not None and prompt + out > limits.total):
            raise SkipHop(f"≈{prompt}tok exceeds the limit {plan.source!r} refused before ({limits.input or limits.total} tokens)")

    async def _hop(self, attempt: AttemptFacts, kwargs: dict[str, Any], budget: RequestBudget) -> OutputBudget:
        """On a fallback hop: retry, skip, escalate or abort. Returns the attempt's output budget
        after the hop's decision (as the server will read it)."""
        view = attempt.view
        plan, hop_group = view.carried.plan, view.carried.model_group
        if view.fallback_depth is None or view.fallback_depth < 1 or plan is None or hop_group is None:
            return view.output
        text = view.carried.previous_error
        error = parse_context_error(text) if text else None
        metadata = view.payload.get(view.metadata_field)
        retried = retried_attempt(metadata)  # LiteLLM's own retry of this hop, not the hop's first attempt
        if error is not None:
            request_metadata(kwargs, view.metadata_field)[REFUSAL_KEY] = text
        elif isinstance(metadata, Mapping) and isinstance(metadata.get(REFUSAL_KEY), str):
            error = parse_context_error(metadata[REFUSAL_KEY])  # a passing failure (a step down, a 5xx) does not end the walk
        kind = view.kind or "chat"
        info = attempt.info
        prompt_count, estimated = None, False
        known = info.stated_window
        hop_window = None
        if hop_group == plan.source and error is not None:
            if info.deployment is not None:
                known = attempt.known_window()  # operator, learned, the plugin's cache, LiteLLM's
                if view.adapter is not None and view.adapter.exact_countable and self.settings.exact_count:
                    prompt_count = await attempt.exact_count(budget)
            if prompt_count is None:
                prompt_count, estimated = attempt.estimate(kind).safe, True
        elif hop_group in plan.chain and error is not None:
            hop_window = await attempt.window(budget)
        decision = decide_hop(
            plan=plan,
            hop_group=hop_group,
            error=error,
            prompt_count=prompt_count,
            known_window=known,
            # a retry never below min_tokens nor a thinking budget
            output_floor_tokens=max(self.settings.output_floor_tokens, least_output(kwargs, kwargs.get(view.metadata_field))),
            margin_tokens=self.settings.clamp_margin_tokens,
            hop_window=hop_window,
            failover=_failover(view, hop_group == plan.source),
            prompt_estimated=estimated,
        )
        if decision.action is HopAction.PASS:
            return view.output
        if decision.action is HopAction.ABORT:
            logger.info("[CONTEXT-ROUTE] reactive: %r failed with a non-context error: no retry, no escalation", plan.source)
            raise DeclineHop("fallback not used: the original error is not about the request's length")
        if decision.action is HopAction.SKIP:
            logger.info("[CONTEXT-ROUTE] reactive: skipping %r (%s)", hop_group, decision.reason)
            raise SkipHop(decision.reason)
        if retried:  # LiteLLM's own retry of this hop (a declined or skipped hop stays so, above): its output decision again, counted once
            if decision.max_tokens is None:
                return view.output
            set_output(kwargs, decision.max_tokens, view.adapter.output_field if view.adapter is not None else "max_tokens")
            return OutputBudget(sent=True, valid=True, effective=decision.max_tokens)
        logger.info("[CONTEXT-ROUTE] reactive: %s", decision.reason)
        self.effects.count_route(decision.action.value, plan.source, hop_group if decision.action is HopAction.ESCALATE else plan.target)
        if decision.action is HopAction.ESCALATE:
            request_metadata(kwargs, view.metadata_field)[ESCALATED_KEY] = "reactive"
            self.effects.warm_gate.arrived(view.carried.session, hop_group)  # ends the warms it supersedes (Effects.arm)
        elif decision.max_tokens is not None:
            self.effects.metrics.output_clamps.labels(plan.source, "reactive").inc()
        set_output(kwargs, decision.max_tokens, view.adapter.output_field if view.adapter is not None else "max_tokens")
        # every output field the attempt carries (or max_tokens) now holds this value; None: none
        return OutputBudget(sent=decision.max_tokens is not None, valid=True, effective=decision.max_tokens)

    @staticmethod
    def _holding_step(view: AttemptView, prompt_tokens: int) -> str | None:
        """On the first attempt at the request's own group, a step of its escalation chain known to hold
        ``prompt_tokens`` and the whole output budget asked (:meth:`BackstopPlan.step_holding`), else ``None``."""
        plan = view.carried.plan
        if plan is None or view.fallback_depth or view.carried.model_group != plan.source:
            return None
        return plan.step_holding(prompt_tokens)

    @staticmethod
    def _fits_routed_window(view: AttemptView, requested: int) -> bool:
        """The first attempt at the group the pre-call hook routed in, whose safe estimate plus ``requested``
        (tokens) fits that group's routing window then (the smallest of its deployments', lowered by any
        learned input limit): no deployment of the group can need a cut, so its window is not read."""
        state = view.carried
        return (not view.fallback_depth and state.estimate is not None and state.estimate_window is not None
                and state.model_group is not None and state.model_group == state.estimate_group
                and state.estimate.safe + requested <= state.estimate_window)

    async def _clamp(self, attempt: AttemptFacts, output: OutputBudget, kwargs: dict[str, Any], budget: RequestBudget) -> None:
        """Cut the output budget to the deployment's window, on an exact count only: asked for
        only when the safe estimate says a cut may be needed; never on an estimate, so a request
        that fits keeps the budget it asked for (the backstop corrects the rest); never below its ``min_tokens``."""
        view = attempt.view
        kind = view.kind
        if not self.settings.clamp_output or kind is None or not output.valid or output.effective is None:
            return
        if self._fits_routed_window(view, output.effective):
            return
        window = await attempt.window(budget)
        if window is None:
            return
        requested = output.effective
        safe = attempt.estimate(kind).safe
        # vLLM refuses min_tokens above the budget, a cut under a thinking budget can leave no answer: never below them
        least = least_output(kwargs, kwargs.get(view.metadata_field))
        if not plan_clamp(requested, window, safe, None, self.settings, least).needs_exact:
            return
        exact = None
        if self.settings.exact_count and view.adapter is not None and view.adapter.exact_countable:
            exact = await attempt.exact_count(budget)
        if exact is None:
            # No cut on an estimate: the routing estimate over-counts source code and JSON by up to
            # ~1.6x (the differential suite found cuts of answers that fit). The server's own
            # numbers correct an overflow on the backstop's retry.
            logger.debug("[CONTEXT-ROUTE] clamp skipped on %s: no exact count", view.model)
            return
        plan = plan_clamp(requested, window, safe, exact, self.settings, least)
        if plan.max_tokens is not None and (step := self._holding_step(view, exact)) is not None:
            # LiteLLM alone: the server trims the budget itself (vLLM >= 0.32) or refuses it, and its
            # context_window_fallbacks then serve the whole budget on that step (vLLM 0.18-0.31, SGLang, TGI);
            # the backstop escalates the same way. A cut here would answer with less than either.
            logger.info("[CONTEXT-ROUTE] clamp skipped on %s: %r holds exact %dtok + the %d output tokens asked",
                        view.model, step, exact, requested)
            return
        if plan.max_tokens is not None:
            cap_output(kwargs, plan.max_tokens)
            logger.info("[CONTEXT-ROUTE] clamp on %s: %s", view.model, plan.reason)
            self.effects.metrics.output_clamps.labels(view.group_label, "exact").inc()


def _failover(view: AttemptView, same_group: bool) -> bool:
    """A same-group hop that reached another deployment than the one LiteLLM recorded as failing (``previous_models``'
    last ``deployment_id`` against the attempt's ``model_info.id``)."""
    failed = view.carried.previous_attempt.get("deployment_id") if view.carried.previous_attempt is not None else None
    return same_group and isinstance(failed, str) and failed != model_id_of(view.model_info)

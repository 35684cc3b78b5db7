"""One backend attempt (the deployment hook): a fallback hop's decision, then the output clamp.

Per attempt, after LiteLLM chose a deployment:

1. **Hop** (only on a fallback hop of a request the pre-call hook armed): read the backend's
   rejection (:func:`~litellm_kvwarm.context_errors.parse_context_error`), gather the facts the
   decision needs (the source's known window and an exact count or the safe estimate for a retry;
   the step's window for an escalation), decide with :func:`~litellm_kvwarm.reactive.decide_hop`,
   then retry clamped, escalate with the original budget, skip the hop (:class:`SkipHop`) or pass.
2. **Clamp**: lower the output budget so prompt + output fits the deployment's window, on an exact
   ``/tokenize`` count only (:func:`~litellm_kvwarm.planner.plan_clamp`), within what is left of
   the request's I/O budget.

And when an attempt fails (LiteLLM's failure callback, every deployment, streamed or not), a
rejection that reveals a limit below what the deployment is known to hold is learned for the
request's tenant (:meth:`Attempts.learn_from_failure`, :mod:`~litellm_kvwarm.learned_limits`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from . import catalog
from .context_errors import parse_context_error
from .deadline import RequestBudget
from .effects import Effects
from .facts import AttemptFacts, Facts
from .learned_limits import Observed, limit_from_error, needs_prompt_count
from .meta import ESCALATED_KEY, find_metadata, request_metadata
from .output_budget import OutputBudget, cap_output, read_output_budget, set_output
from .tokens import estimate_request
from .planner import plan_clamp
from .reactive import SKIP_MESSAGE_PREFIX, HopAction, decide_hop
from .router_view import RouterView
from .view import AttemptView, carried

logger = logging.getLogger("litellm_kvwarm")


class SkipHop(Exception):
    """Ends a fallback hop before any backend attempt (the hook raises it as LiteLLM's
    ``ContextWindowExceededError``, which LiteLLM moves past)."""


class Attempts:
    """The deployment hook's work for one handler (see the module docstring)."""

    def __init__(self, facts: Facts, effects: Effects, *, native_messages: Callable[[str, str | None], bool] = lambda m, p: False):
        self.facts, self.effects = facts, effects
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
        output = await self._hop(attempt, kwargs, budget)
        self._refuse_over_learned(attempt, output)
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
        kind = view.kind or "chat"
        info = attempt.info
        prompt_count = None
        known = info.operator_window
        hop_window = None
        if hop_group == plan.source and error is not None:
            if info.deployment is not None:
                known = attempt.known_window()  # operator, learned, the plugin's cache, LiteLLM's
                if view.adapter is not None and view.adapter.exact_countable and self.settings.exact_count:
                    prompt_count = await attempt.exact_count(budget)
            if prompt_count is None:
                prompt_count = attempt.estimate(kind).safe
        elif hop_group in plan.chain and error is not None:
            hop_window = await attempt.window(budget)
        decision = decide_hop(
            plan=plan,
            hop_group=hop_group,
            error=error,
            prompt_count=prompt_count,
            known_window=known,
            output_floor_tokens=self.settings.output_floor_tokens,
            margin_tokens=self.settings.clamp_margin_tokens,
            hop_window=hop_window,
        )
        if decision.action is HopAction.PASS:
            return view.output
        if decision.action is HopAction.ABORT:
            logger.info("[CONTEXT-ROUTE] reactive: %r failed with a non-context error: no retry, no escalation", plan.source)
            raise SkipHop("not a context-length error")
        if decision.action is HopAction.SKIP:
            logger.info("[CONTEXT-ROUTE] reactive: skipping %r (%s)", hop_group, decision.reason)
            raise SkipHop(decision.reason)
        logger.info("[CONTEXT-ROUTE] reactive: %s", decision.reason)
        self.effects.count_route(decision.action.value, plan.source, hop_group if decision.action is HopAction.ESCALATE else plan.target)
        if decision.action is HopAction.ESCALATE:
            request_metadata(kwargs, view.metadata_field)[ESCALATED_KEY] = "reactive"
        elif decision.max_tokens is not None:
            self.effects.metrics.output_clamps.labels(plan.source, "reactive").inc()
        set_output(kwargs, decision.max_tokens, view.adapter.output_field if view.adapter is not None else "max_tokens")
        # every output field the attempt carries (or max_tokens) now holds this value; None: none
        return OutputBudget(sent=decision.max_tokens is not None, valid=True, effective=decision.max_tokens)

    async def learn_from_failure(self, kwargs: Mapping[str, Any]) -> Observed | None:
        """Learn from one failed backend attempt (LiteLLM's failure-callback ``kwargs``: ``exception``,
        ``messages``, ``litellm_params`` with ``model_info`` and the request's metadata, whose
        ``model_group`` and ``model_info.id`` name the deployment in the router). Returns the limit
        stored, ``None`` when nothing was learned: not a context-length error, nothing a limit can be
        read from, the plugin's own skip, no tenant, an unknown deployment, an operator-set window,
        or a limit not below the deployment's known window. A numberless prompt-alone refusal asks
        the deployment's ``/tokenize`` for the refused prompt's size (off the request path)."""
        exception = kwargs.get("exception")
        text = str(exception) if exception is not None else ""
        params = kwargs.get("litellm_params")
        if not text or SKIP_MESSAGE_PREFIX in text or not isinstance(params, Mapping):
            return None
        error = parse_context_error(text)
        if error is None:
            return None
        state, model_info, router = carried(find_metadata(kwargs)), params.get("model_info"), self.facts.router()
        model_id = model_info.get("id") if isinstance(model_info, Mapping) else None
        entry = RouterView(router).deployment(state.model_group, model_id) if router and state.model_group and model_id else None
        info = catalog.group_deployments([entry], secret=self.facts.secret)[0] if entry is not None else None
        if state.tenant is None or info is None or info.deployment is None or info.operator_window is not None:
            return None
        refused = None
        if needs_prompt_count(error) and isinstance(kwargs.get("messages"), list):
            budget = RequestBudget(self.settings.discovery_timeout_s)
            refused = await self.facts.exact_count(info.deployment, {"messages": kwargs["messages"]}, None, budget)
        observed = limit_from_error(error, refused)
        if observed is None or not observed.explains(*self._refused_size(kwargs, state)):
            return None
        tenant = state.tenant
        known = self.facts.windows(router, tenant).known(info)
        if not self.facts.services.learned.observe(tenant, info.deployment, observed, known):
            return None
        logger.info("[CONTEXT-ROUTE] learned: %s limit of %r is %d tokens (%s; advertised %s)", observed.kind.value,
                    info.deployment.served_model, observed.tokens, observed.family, known)
        return observed

    def _refused_size(self, kwargs: Mapping[str, Any], state: Any) -> tuple[int | None, int | None]:
        """(safe estimate of the refused prompt, its output budget), tokens, for
        :meth:`Observed.explains`: the pre-call estimate when one was made, else one of the sent chat
        messages; ``None`` where neither is known."""
        safe = state.estimate.safe if state.estimate is not None else None
        if safe is None and isinstance(kwargs.get("messages"), list):
            safe = estimate_request({"messages": kwargs["messages"]}, call_kind="chat", estimator=self.facts.estimator()).safe
        params = kwargs.get("optional_params")
        output = read_output_budget(params).effective if isinstance(params, Mapping) else None
        return safe, output if output is not None else (state.plan.requested if state.plan is not None else None)

    async def _clamp(self, attempt: AttemptFacts, output: OutputBudget, kwargs: dict[str, Any], budget: RequestBudget) -> None:
        """Cut the output budget to the deployment's window, on an exact count only: asked for
        only when the safe estimate says a cut may be needed; never on an estimate, so a request
        that fits keeps the budget it asked for (the backstop corrects the rest)."""
        view = attempt.view
        kind = view.kind
        if not self.settings.clamp_output or kind is None or not output.valid or output.effective is None:
            return
        window = await attempt.window(budget)
        if window is None:
            return
        requested = output.effective
        safe = attempt.estimate(kind).safe
        if not plan_clamp(requested, window, safe, None, self.settings).needs_exact:
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
        plan = plan_clamp(requested, window, safe, exact, self.settings)
        if plan.max_tokens is not None:
            cap_output(kwargs, plan.max_tokens)
            logger.info("[CONTEXT-ROUTE] clamp on %s: %s", view.model, plan.reason)
            self.effects.metrics.output_clamps.labels(view.group_label, "exact").inc()

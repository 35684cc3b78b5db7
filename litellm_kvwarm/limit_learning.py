"""Learning a deployment's real limit from one of its refusals (async: at most one ``/tokenize``).

What is read: LiteLLM's own record of a failed attempt, the entry its Router appends to the request's
``metadata.previous_models`` on every retry and fallback hop (``deployment_id``: the failed
deployment's ``model_info.id``; ``exception_string``: its error), so the refusal is always attributed
to the deployment that sent it. (LiteLLM's failure callback is not used: for a stream that fails
in-band, its call details already name the fallback's deployment by the time it runs.) The proxy's
failure hook passes the same shape for a request that failed on its only attempt.

What is learned (:func:`~litellm_kvwarm.learned_limits.limit_from_error`): a total or input limit, only
when all of these hold (else nothing, and the request is served as LiteLLM alone would):

* the status can be a length refusal (not 401/403/404/408/429/502/503/504);
* the deployment is in the router, has an endpoint, and no operator-set window;
* the request has a tenant (learned limits are per tenant: see the module of that name);
* the refused request could have reached the limit (:meth:`Observed.explains`, on the safe estimate:
  an input limit of 4,000 cannot be why a 550-token prompt was refused);
* the client's own text does not already read as a context-length error or hold the number
  (:func:`echoes_client`: a server quoting an invalid value back teaches nothing);
* it is below what the deployment is known to hold.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from . import catalog
from .context_errors import parse_context_error
from .deep_json import json_text, strings
from .deadline import RequestBudget
from .facts import Facts
from .learned_limits import Observed, limit_from_error, needs_prompt_count
from .output_budget import read_output_budget
from .reactive import NOT_A_LENGTH_REFUSAL, SKIP_MESSAGE_PREFIX, status_of
from .router_view import RouterView
from .tokens import estimate_request
from .view import Carried, carried

__all__ = ["NOT_A_LENGTH_REFUSAL", "LimitLearner", "echoes_client"]

logger = logging.getLogger("litellm_kvwarm")

#: Where a request carries what the client sent (chat, completion, Responses), and its parameters.
_CLIENT_KEYS = ("messages", "input", "prompt", "system", "instructions", "tools", "functions", "optional_params",
                "max_tokens", "max_completion_tokens", "max_output_tokens")


def echoes_client(observed: Observed, request: Mapping[str, Any]) -> bool:
    """Whether the rejection may only repeat what the client sent (a server quoting an invalid
    value back: ``max_tokens must be an integer, got "maximum context length is 300 tokens"``): the
    client's own text already reads as a context-length error, or holds the learned number."""
    sent = {k: request.get(k) for k in _CLIENT_KEYS if request.get(k) is not None}
    try:
        client = json_text(sent)  # at any depth: a client nests as deep as it likes
    except (TypeError, ValueError):  # unserialisable: cannot tell, so do not learn
        return True
    numbers = () if observed.bound else (str(observed.tokens), f"{observed.tokens:,}")
    # the client's texts alone, one a line: the parser reads no error inside a quoted chat message's content
    return any(n in client for n in numbers) or parse_context_error("\n".join(strings(sent))) is not None


class LimitLearner:
    """Learns limits for one handler's facts (see the module docstring)."""

    def __init__(self, facts: Facts):
        self.facts = facts

    async def learn(self, record: Mapping[str, Any], request: Mapping[str, Any], state: Carried,
                    budget: RequestBudget) -> Observed | None:
        """Learn from ``record`` (``deployment_id``, ``exception_string``, ``exception_type``; as in
        LiteLLM's ``previous_models``) of the request whose body (or attempt kwargs) is ``request``
        and whose plugin state is ``state``. A numberless prompt-alone refusal asks that deployment's
        ``/tokenize`` for the refused prompt's size within ``budget``. Returns the limit stored, or
        ``None``. Never raises."""
        try:
            return await self._learn(record, request, state, budget)
        except Exception:  # fail open: learning is an optimisation
            logger.debug("learning from a refusal skipped", exc_info=True)
            return None

    async def _learn(self, record: Mapping[str, Any], request: Mapping[str, Any], state: Carried,
                     budget: RequestBudget) -> Observed | None:
        text, model_id = record.get("exception_string"), record.get("deployment_id")
        if not isinstance(text, str) or not isinstance(model_id, str) or SKIP_MESSAGE_PREFIX in text or state.tenant is None:
            return None
        if status_of(record.get("exception_type")) in NOT_A_LENGTH_REFUSAL:
            return None
        error = parse_context_error(text)
        router = self.facts.router()
        if error is None or router is None:
            return None
        entry = catalog.deployment_by_id(RouterView(router).model_list(), model_id)
        info = catalog.group_deployments([entry], secret=self.facts.secret)[0] if entry is not None else None
        if info is None or info.deployment is None or info.operator_window is not None:
            return None
        refused = None
        if needs_prompt_count(error) and isinstance(request.get("messages"), list):
            refused = await self.facts.exact_count(info.deployment, {"messages": request["messages"]}, None, budget,
                                                   tenant=state.tenant)
        observed = limit_from_error(error, refused)
        if observed is None or not observed.explains(*self._size(request, state)):
            return None
        known, learned = self.facts.windows(router, state.tenant).known(info), self.facts.services.learned
        # the client's text is read only for a limit that would be new: it costs ~0.1 s on 20k characters of prose,
        # and the usual refusal (vLLM printing the advertised window) teaches nothing
        if learned.adds(state.tenant, info.deployment, observed, known) and echoes_client(observed, request):
            return None
        if not learned.observe(state.tenant, info.deployment, observed, known):
            return None
        logger.info("[CONTEXT-ROUTE] learned: %s limit of %r is %d tokens (%s; advertised %s)", observed.kind.value,
                    info.deployment.served_model, observed.tokens, observed.family, known)
        return observed

    async def learn_final(self, request_data: Mapping[str, Any], exception: BaseException, metadata: Mapping[str, Any]) -> Observed | None:
        """A request that failed on its only attempt (the proxy's failure hook: no ``previous_models``,
        so the error is that attempt's and ``metadata.model_info`` names its deployment): learn as
        :meth:`learn` does. Requests with earlier attempts were learned from on their hops."""
        info = metadata.get("model_info")
        if metadata.get("previous_models") or not isinstance(info, Mapping):
            return None
        record = {"deployment_id": info.get("id"), "exception_string": str(exception), "exception_type": type(exception).__name__}
        state = carried(metadata)
        return await self.learn(record, request_data, state, RequestBudget(self.facts.settings.discovery_timeout_s))

    def _size(self, request: Mapping[str, Any], state: Carried) -> tuple[int | None, int | None]:
        """(safe estimate of the refused prompt, its output budget), tokens: the pre-call estimate
        when one was made, else one of the sent chat messages; the output as sent, else the plan's."""
        safe = state.estimate.safe if state.estimate is not None else None
        if safe is None and isinstance(request.get("messages"), list):
            safe = estimate_request({"messages": request["messages"]}, call_kind="chat", estimator=self.facts.estimator()).safe
        params = request.get("optional_params")
        output = read_output_budget(params if isinstance(params, Mapping) else request).effective
        return safe, output if output is not None else (state.plan.requested if state.plan is not None else None)

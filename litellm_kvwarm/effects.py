"""Effects: apply a decided plan to LiteLLM's request (``data`` / ``kwargs``) and its ``metadata``,
and count and log what was done. Nothing here decides anything; the plans come from
:mod:`~litellm_kvwarm.planner` and :mod:`~litellm_kvwarm.attempt`.

Metadata is written through :func:`~litellm_kvwarm.meta.request_metadata` at the moment of each
write, in the order the hook always wrote it (affinity, estimate, escalation, backstop), so a
step's overrides that replace a field land exactly as before."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from . import identity
from .cache_salt import SALTED_KINDS, SALTED_PROVIDERS, CacheSalter  # noqa: F401  (re-exported)
from .chain import fallbacks_with_source
from .config import Settings
from .deadline import RequestBudget
from .decode_warm import CHARS_PER_TOKEN, DecodeTap
from .meta import (
    AFFINITY_KEY, BUDGET_KEY, ESCALATED_KEY, ESTIMATE_KEY, ORIGIN_KEY, PLAN_KEY, SALT_KEY, ARRIVAL_KEY, SKIP_SOURCE_KEY, TENANT_KEY,
    WARM_MARKER, all_metadata, client_left, request_metadata,
)
from .metrics import Metrics
from .pending_replies import PendingReplies, PendingReply
from .planner import Backstop, Route, RoutePlan
from .reply_warm import Reply, appends_reasoning, keeps_reasoning, opens_next_turn, reply_of, reply_tokens, target_holds, with_reply
from .usage import prompt_usage
from .view import AttemptView, PreCallView
from .warm import WarmOutcome, WarmTrigger
from .warm_gate import WarmCandidate, WarmGate

logger = logging.getLogger("litellm_kvwarm")

#: A request keeps its reply-warm body only if its size + its output budget reaches this fraction of
#: the warm threshold: the routing estimate may be low (the reply-warm is sized by the server's count).
REPLY_MARGIN = 0.5


class Effects:
    """Writes, counters and log lines of one handler. Args: settings: plugin settings. metrics: collectors.
        warm_gate: queues warms. secret: key of the tenant and session hashes (resolved on first use).
        forbid: builds the exception that refuses a request (HTTP 403, from the bridge).
        served_model: a model group's served model name (``/v1/models``), for what its template renders.
    """

    def __init__(self, settings: Settings, metrics: Metrics, warm_gate: WarmGate, *,
                 secret: Callable[[], bytes], forbid: Callable[[str], Exception],
                 served_model: Callable[[str], str | None] = lambda group: None):
        self.settings, self.metrics, self.warm_gate = settings, metrics, warm_gate
        self._secret, self._forbid, self.served_model = secret, forbid, served_model
        #: warm outcomes seen by this process, by outcome value (for tests and the demo)
        self.warm_outcomes: dict[str, int] = {}
        #: requests served by their own group, waiting for their reply to be warmed
        self.pending = PendingReplies()
        self.salter = CacheSalter()

    # -- pre-call ----------------------------------------------------------------------------

    def isolate_tenant(self, data: dict, view: PreCallView) -> None:
        """Record the keyed hash of the request's tenant (``TENANT_KEY``: the scope of what backend
        rejections teach, :mod:`.learned_limits`). With a cache-salt secret: drop any client-sent
        ``cache_salt`` and record the tenant's salt in the request's metadata (:meth:`apply_cache_salt`
        sends it per attempt).

        Raises:
            the ``forbid`` exception (HTTP 403): no tenant can be told from the key (fail closed).
        """
        if view.tenant and view.adapter is not None:
            request_metadata(data, _field(view))[TENANT_KEY] = identity.hash_key(self._secret(), view.tenant)
        secret = self.settings.cache_salt_secret
        if not secret:
            return
        if view.tenant is None:
            raise self._forbid("litellm-kvwarm: tenant cache isolation needs a key with a team, user or token")
        data.pop("cache_salt", None)
        extra = data.get("extra_body")
        if isinstance(extra, dict):
            extra.pop("cache_salt", None)
        request_metadata(data, _field(view))[SALT_KEY] = identity.cache_salt(secret, view.tenant)

    async def apply_route(self, plan: RoutePlan, view: PreCallView, data: dict) -> None:
        """Apply a :class:`RoutePlan`: metadata, log line, counter, rewrite, fallbacks, warm."""
        if plan.pin_session and view.session is not None:
            request_metadata(data, _field(view))[AFFINITY_KEY] = identity.affinity_key(view.session, self._secret())
        if plan.estimate_record is not None:
            request_metadata(data, _field(view))[ESTIMATE_KEY] = dict(plan.estimate_record)
        if plan.log_level in ("info", "debug"):
            getattr(logger, plan.log_level)(plan.reason)
        if plan.label is not None:
            self.count_route(plan.label, view.group or "", plan.counted_target)
        # the session and its items, as its warms count theirs: a live request there with as many ends them
        arrival = self.warm_gate.arrival(view.session, view.kind or "", data) if plan.escalation or plan.backstop else None
        if plan.escalation is not None:
            esc = plan.escalation
            meta = request_metadata(data, _field(view))
            meta[ESCALATED_KEY] = "proactive"
            meta[ORIGIN_KEY] = dict(esc.origin)
            if esc.via_fallback is not None:  # keep the group, skip its first attempt (see Escalation)
                data["context_window_fallbacks"] = [{esc.origin["source"]: list(esc.via_fallback)}, *esc.kept.get("context_window_fallbacks", ())]
                meta[SKIP_SOURCE_KEY] = esc.target
            else:
                data["model"] = esc.target
                data.update(esc.overrides)  # the step's own overrides, as LiteLLM's fallback would apply them
            self.warm_gate.arrived(arrival, esc.target)  # ends the warms it supersedes
        if plan.backstop is not None:  # a reactive escalation ends them (Attempts._hop)
            self.arm(data, plan.backstop, _field(view), arrival)
        if plan.escalation is not None and plan.escalation.via_fallback is None and plan.escalation.source_fallback:
            data["fallbacks"] = [*fallbacks_with_source(data.get("fallbacks"), plan.escalation.target, plan.escalation.source_fallback),
                                 *plan.escalation.kept.get("fallbacks", ())]
        if plan.warm is not None and view.kind is not None:
            w = plan.warm
            candidate = WarmCandidate(w.target, True, w.target_window, w.tokens, w.source_window, view.session, w.growth_tokens, view.key)
            await self.warm_gate.consider(candidate, data, kind=view.kind)
            if plan.route is Route.STAY:
                self._await_reply(candidate, view, data)

    def _await_reply(self, candidate: WarmCandidate, view: PreCallView, data: dict) -> None:
        """Keep what a reply-warm of this request needs until its reply is in (:meth:`reply_warm`), if its
        reply can take it past the threshold (or within its largest step of the window): the request's
        output budget when it sent one bounds the reply; the server's count decides later."""
        call_id = data.get("litellm_call_id")
        s = self.settings
        if not s.reply_warm or not s.warm_ahead or candidate.session is None or not isinstance(call_id, str):
            return
        reply_bound = view.output.effective if view.output.effective is not None else candidate.source_window
        if candidate.tokens + reply_bound < s.warm_threshold * candidate.source_window * REPLY_MARGIN:
            return  # this reply cannot bring the session near the threshold (not even an estimate 1/REPLY_MARGIN low)
        body = self.warm_gate.reply_body(candidate, data, view.kind or "chat")
        if body is not None:
            tenant = str(request_metadata(data, _field(view)).get(TENANT_KEY) or "")
            self.pending.put(tenant, call_id, PendingReply(candidate, view.kind or "chat", body))

    def forget_reply(self, request_data: Mapping[str, Any]) -> bool:
        """The request failed: drop what :meth:`_await_reply` kept for it (``request_data``: the
        proxy failure hook's, LiteLLM's request after the pre-call hook). Whether there was an entry;
        never raises."""
        call_id = request_data.get("litellm_call_id") if isinstance(request_data, Mapping) else None
        if not isinstance(call_id, str):
            return False
        return self.pending.discard(_call_tenant(all_metadata(request_data)), call_id)

    def served_by(self, kwargs: Mapping[str, Any], group: str | None) -> None:
        """A fallback hop (LiteLLM's attempt ``kwargs``) goes to ``group``: see :meth:`PendingReplies.served_by`."""
        if isinstance(call_id := kwargs.get("litellm_call_id"), str):
            self.pending.served_by(_call_tenant(all_metadata(kwargs)), call_id, group)

    async def reply_warm(self, kwargs: Mapping[str, Any], response: Any) -> None:
        """After a successful attempt: the request's reply-warm, if its pre-call hook kept one (it
        stayed on its group with an escalation target): the warm body plus the reply as the client
        will send it back (``reasoning`` only where the target's template renders it,
        :func:`~litellm_kvwarm.reply_warm.keeps_reasoning`), sized as the request (the response's own
        ``usage`` prompt count when present, else the pre-call estimate) plus the share of the reply's
        ``completion_tokens`` (``output_tokens``) that it appends (:func:`~litellm_kvwarm.reply_warm.reply_tokens`:
        one choice of ``n``, no reasoning the next request drops), then the warm guards (``trigger="reply"``)."""
        metas = all_metadata(kwargs)
        call_id = kwargs.get("litellm_call_id")
        if any(m.get(WARM_MARKER) for m in metas) or not isinstance(call_id, str):
            return
        pending = self.pending.pop(_call_tenant(metas), call_id)
        if pending is None or client_left(metas):
            return  # LiteLLM's disconnect-time success event bills a partial reply the client never got: no warm of it
        reply = reply_of(response)
        if reply is None or reply.empty:
            return
        usage = getattr(response, "usage", None) if not isinstance(response, Mapping) else response.get("usage")
        c, served = pending.candidate, self.served_model(pending.candidate.target)
        if pending.served_by_target and target_holds(reply, served):
            return  # the target computed this reply, as the next request renders it: its prefix cache has it
        reasoning = appends_reasoning(reply, pending.kind, keeps_reasoning(reply, served))
        produced = reply_tokens(response, reply, usage, reasoning=reasoning)  # what is appended
        prompt, _ = prompt_usage(usage)  # the server's own count when it gave one: exact, where the estimate may be low
        size = (prompt if isinstance(prompt, int) and prompt > 0 else c.tokens) + produced
        body = with_reply(pending.body, pending.kind, reply, reasoning=reasoning, next_turn=opens_next_turn(reply, served))
        if body is None:
            return
        await self.warm_gate.consider(_grown(c, size, produced), {}, kind=pending.kind, trigger=WarmTrigger.REPLY, body=body)

    def decode_tap(self, request_data: Mapping[str, Any]) -> DecodeTap | None:
        """A tap for the stream of a chat request whose reply-warm is kept (:meth:`_await_reply`): every
        ``decode_warm_tokens`` of streamed text it queues a decode warm (the reply-warm body with the text so far,
        ``trigger="decode"``); a client that leaves before the end drops the kept body (no reply-warm of a reply it
        never got); ``None`` for any other stream (nothing kept, another API, switched off, served by the target).
        Never raises (an internal error is logged: the stream goes on untapped)."""
        s = self.settings
        try:
            call_id = request_data.get("litellm_call_id") if isinstance(request_data, Mapping) else None
            if s.decode_warm_tokens <= 0 or not s.reply_warm or not isinstance(call_id, str):
                return None
            tenant = _call_tenant(all_metadata(request_data))
            pending = self.pending.get(tenant, call_id)
        except Exception:
            logger.warning("[KV-WARM] decode warms skipped after an internal error", exc_info=True)
            return None
        if pending is None or pending.kind != "chat" or pending.served_by_target:
            return None

        async def submit(text: str) -> None:
            reply = Reply(text)
            body = with_reply(pending.body, "chat", reply, next_turn=opens_next_turn(reply, self.served_model(pending.candidate.target)))
            if body is None:
                return
            c, produced = pending.candidate, len(text) // CHARS_PER_TOKEN
            await self.warm_gate.consider(_grown(c, c.tokens + produced, produced), {}, kind="chat", trigger=WarmTrigger.DECODE,
                                          body=body)

        return DecodeTap(s.decode_warm_tokens, submit, abandon=lambda: self.pending.discard(tenant, call_id))

    @staticmethod
    def arm(data: dict, backstop: Backstop, metadata_field: str = "metadata", arrival: tuple[str, int] | None = None) -> None:
        """Arm LiteLLM's fallbacks; record the plan the hops read and the session's (hash, items), if any (``data[metadata_field]``)."""
        entries = list(backstop.entries)
        data["context_window_fallbacks"] = [{backstop.group: entries}, *backstop.kept.get("context_window_fallbacks", ())]
        if backstop.generic:
            # without the retry slot unless the window itself may be overflowed: the group's deployment
            # may just have been put in cooldown (a 401/404 would come back as the Router's own 429)
            steps = entries if backstop.generic_retry else [e for e in entries if not _same_group(e, backstop.group)]
            data["fallbacks"] = [{backstop.group: steps}, *backstop.kept.get("fallbacks", ())]
        request_metadata(data, metadata_field)[PLAN_KEY] = backstop.plan.to_dict()
        if arrival is not None:
            request_metadata(data, metadata_field)[ARRIVAL_KEY] = {"hash": arrival[0], "items": arrival[1]}

    def skipped_source(self, origin: Mapping[str, Any], target: object) -> str:
        """The context-length error the source group's skipped first attempt raises
        (:attr:`Escalation.via_fallback`): LiteLLM's ``context_window_fallbacks`` then take the
        request to the target, and if the target fails, this 400 is what the client gets, as
        with LiteLLM alone. Worded as vLLM words it, so clients that read context errors read it."""
        source, window, tokens = origin.get("source"), origin.get("window"), origin.get("tokens")
        return (
            f"This model's maximum context length is {window} tokens. However, your request has {tokens} input "
            f"tokens. Please reduce the length of the messages. (litellm-kvwarm: model group {source!r} cannot hold "
            f"this request: sent to {target!r})"
        )

    # -- per attempt ---------------------------------------------------------------------------

    def apply_cache_salt(self, view: AttemptView, kwargs: dict[str, Any]) -> None:
        """Send the tenant's ``cache_salt`` (vLLM prefix-cache isolation) where the attempt can carry it; a
        deployment that cannot is warned about once (:class:`~litellm_kvwarm.cache_salt.CacheSalter`)."""
        if view.carried.salt is not None:
            self.salter.apply(kwargs, view.carried.salt, view.kind, view.provider, view.model)

    @staticmethod
    def record_budget(data: Mapping[str, Any], budget: RequestBudget, *, only_if_spent: bool, field: str = "metadata") -> None:
        """Carry the seconds of the request's I/O budget spent so far to its later hooks
        (in ``data[field]``)."""
        meta = data.get(field)
        if isinstance(meta, dict) and (budget.spent_s > 0 or not only_if_spent):
            meta[BUDGET_KEY] = budget.to_metadata()

    # -- counters -----------------------------------------------------------------------------

    def count_route(self, kind: str, source: str, target: str | None) -> None:
        self.metrics.route_decisions.labels(kind, source, target or "").inc()

    def count_warm(self, outcome: WarmOutcome, target: str, trigger: str = "ahead") -> None:
        self.warm_outcomes[outcome.value] = self.warm_outcomes.get(outcome.value, 0) + 1
        self.metrics.warms.labels(outcome.value, target, trigger).inc()

    def warm_done(self, outcome: WarmOutcome, duration_s: float, target: str, trigger: str = "ahead") -> None:
        self.count_warm(outcome, target, trigger)
        self.metrics.warm_seconds.labels(target).observe(duration_s)

    def failed_target(self, origin: Mapping[str, Any], target: object, exc: Exception) -> str:
        """Count and log a proactive escalation whose target could not be reached or failed (``exc``); returns
        the detail of the context-length error LiteLLM alone would have given (HTTP 400)."""
        source, window, tokens = origin.get("source"), origin.get("window"), origin.get("tokens")
        self.count_route("target_unreachable", str(source), str(target))
        logger.warning("[CONTEXT-ROUTE] escalation target %r unreachable or failed (%s): answering the context-length error of %r",
                       target, type(exc).__name__, source)
        return (
            f"This model's maximum context length is {window} tokens. However, your request has about {tokens} "
            f"input tokens. Please reduce the length of the messages. (litellm-kvwarm: model group {source!r} "
            f"cannot hold this request and its escalation target {target!r} could not be reached or failed: "
            f"{type(exc).__name__})"
        )


def _grown(c: WarmCandidate, tokens: int, produced: int) -> WarmCandidate:
    """The candidate with its reply (or the reply so far) in: ``tokens`` in all, the re-warm growth by ``produced``."""
    return replace(c, tokens=tokens, growth_tokens=(c.growth_tokens if c.growth_tokens is not None else c.tokens) + produced)


def _same_group(entry: object, group: str) -> bool:  # a fallback entry: a group name or {"model": group, ...}
    return (entry.get("model") if isinstance(entry, Mapping) else entry) == group


def _field(view: PreCallView) -> str:
    """Where the request carries its LiteLLM metadata (:attr:`CallAdapter.metadata_field`)."""
    return view.adapter.metadata_field if view.adapter is not None else "metadata"


def _call_tenant(metas: list[Mapping[str, Any]]) -> str:
    """The tenant hash wherever a call carries it (a Messages call: ``litellm_metadata``, beside
    LiteLLM's own ``metadata``); ``""`` when none does (the key :meth:`Effects._await_reply` used)."""
    return next((str(m[TENANT_KEY]) for m in metas if m.get(TENANT_KEY)), "")

"""Whether a request's session gets a warm queued now: the guards, in order, each with its own
outcome. No I/O: the request path never waits on the cooldown store for a warm.

Order (each outcome is a metric label): switched off → below the threshold (a fraction of the
source group's window), unless the session's largest growth step so far would overflow the window
(:mod:`~litellm_kvwarm.session_steps`: then it warms as a ``jump``), or, the first time this process
sees the session, its head is at least ``warm_head_tokens`` (:mod:`~litellm_kvwarm.warm_head`: then
the head alone warms as a ``head``) → past the threshold but, by its growth steps, more than
``warm_lead_steps`` of its largest step away from the window (only with ``warm_lead_steps`` > 0,
off by default; the step, kept on the routing estimate's scale, is scaled to the size's: an exact
count that runs above the routing estimate makes the step larger, never the lead shorter;
``skipped_far``: a session that stops short pays no warm; one seen once warms at the threshold;
one whose first large step comes past the threshold escalates with what was warmed below it) → target unknown (not in the model list, or no discovered window for
its served model) → LiteLLM limits the target group or the caller (rpm, tpm, concurrent requests: a warm would use
what live requests need, :mod:`~litellm_kvwarm.limits`; unless ``warm_limited``) → the caller's key may not use the target → no session to scope the cooldown
→ cooldown known to run in this process (the runner's memo) → tenant known to be at its warm
rate (the memo) → queued. Admission itself (the session's cooldown and the tenant's warm rate,
shared through the cooldown store) happens in :class:`~litellm_kvwarm.warm.WarmRunner` when a
slot takes the warm, right before it is sent: a warm that is queued-out or dropped uses neither.

Keys, all tenant-scoped keyed hashes (:func:`~litellm_kvwarm.identity.scoped_key`):

* admission key, one per (tenant, session, target): a newer state of the session replaces its
  queued warm;
* cooldown key, one per (tenant, session, target, growth step): with ``warm_rewarm_step`` > 0
  a session that has grown by that fraction of the window since its last warm may warm again
  within the cooldown, because a re-warm prefills only the new tokens (the earlier warm is
  cached); ``0`` keeps strictly one warm per session per cooldown;
* a head warm's cooldown key is one per (tenant, session, target);
* a reply-warm's cooldown key is one per session state (the conversation plus that reply): it
  prefills only what the warms before it could not hold (the reply and the message it answers);
* rate key, one per tenant (only when ``warm_tenant_rate`` > 0; a decode warm takes none).

Triggers (``kvwarm_warms_total{trigger}``): ``ahead`` (the request crossed the threshold), ``reply``
(the source's finished reply appended, :mod:`~litellm_kvwarm.reply_warm`), ``decode`` (the reply so
far, while it streams: :mod:`~litellm_kvwarm.decode_warm`), ``jump``, ``head``. Every warm
carries ``KVWARM_WARM_PRIORITY`` (:mod:`~litellm_kvwarm.warm_priority`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from . import identity
from .config import Settings
from .limits import caller_limited
from .session_steps import SessionSteps, jump_due, lead_due
from .tokens import estimate_request
from .warm_bytes import body_bytes
from .warm_head import head_request
from .warm import WarmJob, WarmOutcome, WarmRunner, WarmTrigger, warm_metadata, warm_request
from .warm_arrivals import LiveArrivals
from .warm_prefixes import ITEMS_FIELD
from .warm_priority import with_priority

logger = logging.getLogger("litellm_kvwarm")

#: Session id under which a tenant's warm-rate key is built (no real session is needed).
TENANT_SCOPE = "*tenant*"


@dataclass(frozen=True)
class WarmCandidate:
    """A request that stays on ``source`` whose group has an escalation ``target``. Tokens:
    ``tokens`` is the routing estimate (or exact count), windows are ``max_model_len``;
    ``growth_tokens`` is always the routing estimate, so the re-warm step is measured on one
    scale even when some turns were counted exactly (mixing them once made buckets go backwards)."""

    target: str
    target_known: bool
    target_window: int | None
    tokens: int
    source_window: int
    session: identity.Session | None
    growth_tokens: int | None = None  # what the re-warm step is measured on (default: tokens)
    #: LiteLLM's key object of the caller (opaque), for :func:`~litellm_kvwarm.limits.caller_limited`
    caller: Any = field(default=None, compare=False, repr=False)


def cooldown_key(
    session: identity.Session, target: str, tokens: int, source_window: int, step: float, secret: bytes | str
) -> str:
    """Tenant-scoped cooldown key of a warm (keyed hashes only)."""
    bucket = int(tokens // (step * source_window)) if step > 0 else 0
    return identity.scoped_key(f"warm:{target}:{bucket}", session, secret)


def admission_key(session: identity.Session, target: str, secret: bytes | str) -> str:
    """Queue identity of a warm: one per (tenant, session, target), keyed hashes only."""
    return identity.scoped_key(f"warmq:{target}", session, secret)


def tenant_rate_key(tenant: str, secret: bytes | str) -> str:
    """The tenant's warm-rate key (keyed hash of the tenant)."""
    return identity.scoped_key("warmrate", identity.Session(tenant=tenant, session_id=TENANT_SCOPE, source="tenant"), secret)


class WarmGate:
    """Applies the guards and queues warms on the runner.

    Args:
        settings: plugin settings.
        runner: returns the warm runner (built lazily by the services).
        count: records an outcome for a target and trigger (metrics): the gate's own outcome of
            each candidate (``queued`` or ``skipped_*``).
        secret: key of the tenant and session hashes (``identity.resolve_hash_secret``), or a
            callable returning it (resolved on first use); default:
            resolved from ``settings`` and the process environment.
        bridged: ``(target, kind)`` → whether the group renders only what its bridge sends: a head warm is
            sized by that routing view (:func:`~litellm_kvwarm.tokens.estimate_request` ``bridged``), as routes are.
        limited: ``target`` → whether LiteLLM limits the group (:func:`~litellm_kvwarm.limits.group_limited`): unless
            ``warm_limited``, such a group gets no warm (its limits are every tenant's), nor does a caller LiteLLM limits
            (:func:`~litellm_kvwarm.limits.caller_limited` of ``WarmCandidate.caller``).
    """

    def __init__(
        self,
        settings: Settings,
        *,
        runner: Callable[[], WarmRunner],
        count: Callable[[WarmOutcome, str, str], None],
        secret: bytes | str | Callable[[], bytes | str] | None = None,
        bridged: Callable[[str, str], bool] = lambda group, kind: False,
        limited: Callable[[str], bool] = lambda group: False,
    ):
        self._settings = settings
        self._bridged, self._limited = bridged, limited
        self._runner = runner
        self._count = count
        #: each session's largest growth step (tokens), for ``JUMP`` warms
        self.steps = SessionSteps()
        #: the live requests escalated to warm targets: warms they supersede end (:mod:`.warm_arrivals`)
        self.arrivals = LiveArrivals()
        if secret is None:
            secret, _ = identity.resolve_hash_secret(settings.hash_secret, settings.cache_salt_secret, os.environ)
        self._secret_of = secret if callable(secret) else (lambda: secret)

    @property
    def _secret(self) -> bytes | str:
        return self._secret_of()

    async def consider(
        self,
        candidate: WarmCandidate,
        data: Mapping[str, Any],
        may_use: Callable[[], Awaitable[bool]] | None = None,
        *,
        kind: str = "chat",
        trigger: WarmTrigger = WarmTrigger.AHEAD,
        body: dict[str, Any] | None = None,
    ) -> WarmOutcome:
        """Run the guards for ``candidate``; queue the warm built from the live request ``data``
        (a ``kind`` request: ``"chat"``, ``"completion"``, ``"messages"``, ``"responses"``) if they
        pass; ``body``: the warm body already built (a reply-warm's), else built from ``data``.
        ``trigger``: ``AHEAD`` (the request itself; its size is recorded as the session's next
        growth step) or ``REPLY`` (the request plus its reply: ``candidate.tokens`` includes the
        reply); below the threshold, a session whose largest step so far would overflow the
        window warms as ``JUMP``. ``may_use``: LiteLLM's access check of the caller's key for the
        target (``None``: the caller already checked). Returns the outcome counted. Raises
        ``ValueError`` for an unknown ``kind``."""
        largest, first_seen = 0, False
        if candidate.session is not None:
            key = identity.scoped_key("steps", candidate.session, self._secret)
            growth = candidate.growth_tokens if candidate.growth_tokens is not None else candidate.tokens
            first_seen = trigger is WarmTrigger.AHEAD and not self.steps.seen(key)
            largest = self.steps.observe(key, growth).largest_step if trigger is WarmTrigger.AHEAD else self.steps.largest_step(key)
        outcome, trigger = await self._guard(candidate, may_use, trigger, largest)
        if outcome is WarmOutcome.SKIPPED_BELOW_THRESHOLD and first_seen and body is None:
            head = self._head(candidate, data, kind)
            if head is not None:
                candidate, data = head
                outcome, trigger = await self._guard(candidate, may_use, WarmTrigger.HEAD, largest)
        if outcome is WarmOutcome.QUEUED:
            outcome = self._runner().submit(self._job(candidate, data, kind, trigger, body))
        self._count(outcome, candidate.target, trigger.value)
        if outcome is WarmOutcome.QUEUED:
            logger.info(
                "[KV-WARM] queued (%s): %s%dtok%s, window %d → warm of %r", trigger.value, _size_name(trigger), candidate.tokens,
                " (the session's head)" if trigger is WarmTrigger.HEAD
                else f" + largest step {largest}" if candidate.tokens < self._settings.warm_threshold * candidate.source_window
                else f" ≥ {self._settings.warm_threshold:.0%} (largest step {largest})",
                candidate.source_window, candidate.target,
            )
        elif outcome not in (WarmOutcome.SKIPPED_BELOW_THRESHOLD, WarmOutcome.SKIPPED_FAR):
            logger.info(
                "[KV-WARM] %s (%s): %s%dtok, window %d, target %r",
                outcome.value, trigger.value, _size_name(trigger), candidate.tokens, candidate.source_window, candidate.target,
            )
        return outcome

    def _head(self, c: WarmCandidate, data: Mapping[str, Any], kind: str) -> tuple[WarmCandidate, dict[str, Any]] | None:
        """The head warm of a session seen for the first time (:mod:`.warm_head`): the candidate
        sized by the head's routing estimate and the head's body; ``None`` when off, without a
        strict head, or when it is under ``warm_head_tokens``."""
        if self._settings.warm_head_tokens <= 0:
            return None
        head = head_request(kind, data)
        if head is None:
            return None
        tokens = estimate_request(head, call_kind=kind, bridged=self._bridged(c.target, kind)).routing
        if tokens < self._settings.warm_head_tokens:
            return None
        return replace(c, tokens=tokens, growth_tokens=tokens), head

    def _job(self, c: WarmCandidate, data: Mapping[str, Any], kind: str, trigger: WarmTrigger,
             body: dict[str, Any] | None) -> WarmJob:
        session = c.session
        assert session is not None
        s = self._settings
        growth = c.growth_tokens if c.growth_tokens is not None else c.tokens
        if trigger is WarmTrigger.HEAD:
            cooldown = identity.scoped_key(f"warm:{c.target}:head", session, self._secret)
        elif trigger in (WarmTrigger.REPLY, WarmTrigger.DECODE):
            # one reply-warm (decode warm) per session state: it prefills only what the warm before it could not hold
            cooldown = identity.scoped_key(f"warm:{c.target}:{trigger.value}:{growth}", session, self._secret)
        else:
            cooldown = cooldown_key(session, c.target, growth, c.source_window, s.warm_rewarm_step, self._secret)
        if body is None:
            metadata = warm_metadata(data, session_hash=identity.hashed_session(session, self._secret), kind=kind)
            body = warm_request(data, target=c.target, metadata=metadata, kind=kind)
        body = with_priority(body, s.warm_priority)
        return WarmJob(
            key=admission_key(session, c.target, self._secret),
            cooldown_key=cooldown,
            # a decode warm takes no tenant rate: it needs a streamed reply the tenant paid for, and prefills that reply
            # once (the reply-warm would otherwise); rotating session ids cannot multiply it
            rate_key=tenant_rate_key(session.tenant, self._secret) if s.warm_tenant_rate > 0 and trigger is not WarmTrigger.DECODE else None,
            tenant_key=tenant_rate_key(session.tenant, self._secret),
            kind=kind,
            body=body,
            trigger=trigger.value,
            size=body_bytes(body),  # one walk, no copy: what the queued (then in-flight) warm holds
        )

    def arrival(self, session: identity.Session | None, kind: str, data: Mapping[str, Any]) -> tuple[str, int] | None:
        """``(session hash, items)`` of the live request ``data`` (a ``kind`` request) of ``session``, counted as that
        session's warms count theirs (:data:`ITEMS_FIELD`, in the request's own API shape); ``None`` for a session
        without a tenant, or a request without an item list (text completions, a Responses ``input`` string)."""
        items = data.get(ITEMS_FIELD.get(kind, ""))
        if session is None or not session.tenant or not isinstance(items, list):
            return None
        return identity.hashed_session(session, self._secret), len(items)

    def arrived(self, arrival: tuple[str, int] | None, target: str) -> None:
        """The live request of ``arrival`` (:meth:`arrival`) goes to ``target``: a warm of that session there holding
        no more items than it sends nothing more. ``None``: nothing."""
        if arrival is not None:
            self.arrivals.arrive(arrival[0], target, arrival[1])

    def reply_body(self, c: WarmCandidate, data: Mapping[str, Any], kind: str) -> dict[str, Any] | None:
        """The warm body of ``data`` (without its reply yet) for a later reply-warm; ``None`` without a session."""
        if c.session is None:
            return None
        metadata = warm_metadata(data, session_hash=identity.hashed_session(c.session, self._secret), kind=kind)
        return warm_request(data, target=c.target, metadata=metadata, kind=kind)

    async def _guard(self, c: WarmCandidate, may_use: Callable[[], Awaitable[bool]] | None, trigger: WarmTrigger,
                     largest_step: int) -> tuple[WarmOutcome, WarmTrigger]:
        s = self._settings
        if not s.warm_ahead or (trigger in (WarmTrigger.REPLY, WarmTrigger.DECODE) and not s.reply_warm):
            return WarmOutcome.SKIPPED_DISABLED, trigger
        if c.tokens < s.warm_threshold * c.source_window and trigger is not WarmTrigger.HEAD:  # a head: sized by the caller
            if not (s.warm_jump and jump_due(c.tokens, largest_step, c.source_window, s.output_floor_tokens)):
                return WarmOutcome.SKIPPED_BELOW_THRESHOLD, trigger
            if trigger is WarmTrigger.AHEAD:
                trigger = WarmTrigger.JUMP
        elif trigger is not WarmTrigger.HEAD and not lead_due(c.tokens, _on_window_scale(largest_step, c), c.source_window,
                                                               s.output_floor_tokens, s.warm_lead_steps):
            return WarmOutcome.SKIPPED_FAR, trigger
        if not c.target_known or c.target_window is None:
            return WarmOutcome.SKIPPED_UNKNOWN_MODEL, trigger
        if not s.warm_limited and (caller_limited(c.caller, c.target) or self._limited(c.target)):
            return WarmOutcome.SKIPPED_RATE_LIMITED, trigger
        if may_use is not None and not await may_use():
            return WarmOutcome.SKIPPED_FORBIDDEN, trigger
        if c.session is None:
            return WarmOutcome.SKIPPED_NO_SESSION, trigger
        return WarmOutcome.QUEUED, trigger  # the runner's memo may still answer skipped_cooldown / skipped_tenant_rate


def _on_window_scale(step: int, c: WarmCandidate) -> int:
    """``step`` (routing-estimate tokens) on the scale of ``c.tokens`` (an exact count where one was made):
    × tokens ÷ routing when that is above 1; an estimate that runs high keeps the step as measured."""
    growth = c.growth_tokens
    if step <= 0 or growth is None or growth <= 0 or c.tokens <= growth:
        return step
    return -(-step * c.tokens // growth)


def _size_name(trigger: WarmTrigger) -> str:
    """How a log line names a candidate's tokens: ``est≈`` (the routing estimate, or an exact count), or for a reply or
    decode warm ``prompt+reply≈`` (the server's own prompt count where its usage gave one, plus the reply's tokens)."""
    return "prompt+reply≈" if trigger in (WarmTrigger.REPLY, WarmTrigger.DECODE) else "est≈"

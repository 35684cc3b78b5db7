"""The vocabulary of warm-ahead: one queued warm (:class:`WarmJob`), what became of it
(:class:`WarmOutcome`, :class:`DropReason`; both metric label values) and the callbacks the
runner (:class:`~litellm_kvwarm.warm.WarmRunner`) reports through. Plain data; no I/O.

Outcome life of one warm: ``queued`` by :meth:`~litellm_kvwarm.warm.WarmRunner.submit` (or
``skipped_cooldown`` / ``skipped_tenant_rate`` from the runner's memo, ``skipped_queue_bytes`` from its byte bound); then, when a slot takes
it, ``fired`` (admitted and sent), ``skipped_cooldown`` or ``skipped_tenant_rate``; a fired warm
ends ``succeeded``, ``failed`` or ``timed_out``. A queued warm can instead be dropped, for one
:class:`DropReason`. The ``skipped_disabled`` ... ``skipped_no_session`` outcomes are decided
before a job exists (by :mod:`litellm_kvwarm.warm_gate`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any


class WarmOutcome(str, Enum):
    """What happened to a warm candidate. Values are metric label values."""

    QUEUED = "queued"
    FIRED = "fired"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    TIMED_OUT = "timed_out"
    SKIPPED_DISABLED = "skipped_disabled"
    SKIPPED_BELOW_THRESHOLD = "skipped_below_threshold"
    #: past the threshold, but the session's steps put the window more than ``warm_lead_steps`` largest steps away
    SKIPPED_FAR = "skipped_far"
    SKIPPED_UNKNOWN_MODEL = "skipped_unknown_model"
    SKIPPED_FORBIDDEN = "skipped_forbidden"
    #: LiteLLM limits the target group or the caller (rpm, tpm, max_parallel_requests) and ``warm_limited`` is off
    SKIPPED_RATE_LIMITED = "skipped_rate_limited"
    SKIPPED_COOLDOWN = "skipped_cooldown"
    SKIPPED_TENANT_RATE = "skipped_tenant_rate"
    SKIPPED_NO_SESSION = "skipped_no_session"
    #: the warms the runner holds (queued, parked, in flight) and this one would hold over ``warm_queue_bytes``
    SKIPPED_QUEUE_BYTES = "skipped_queue_bytes"


class WarmTrigger(str, Enum):
    """Why a warm was asked for. Values are metric label values (``kvwarm_warms_total{trigger}``)."""

    #: the request itself crossed the warm threshold (its messages, before the backend answered)
    AHEAD = "ahead"
    #: the source group's finished reply, appended to the request as the client will send it back
    REPLY = "reply"
    #: below the threshold, but the session's largest growth step so far would overflow the window
    JUMP = "jump"
    #: the source group's reply so far, while it is still streaming (:mod:`~litellm_kvwarm.decode_warm`)
    DECODE = "decode"
    #: below the threshold, the session's head on first sight (:mod:`~litellm_kvwarm.warm_head`)
    HEAD = "head"


class DropReason(str, Enum):
    """Why a queued warm was dropped before it was sent (``warm_queue_drops{reason}``)."""

    #: Replaced by a newer state of the same session (same admission key).
    STALE = "stale"
    #: The queue held ``queue_size`` warms: the biggest tenant's oldest was dropped.
    FULL = "full"
    #: The tenant held its rate limit of queued warms: its own oldest was dropped.
    TENANT_CAP = "tenant_cap"
    #: :meth:`WarmRunner.aclose` dropped it, or it was submitted after.
    SHUTDOWN = "shutdown"


@dataclass(frozen=True)
class WarmJob:
    """One warm waiting for a slot.

    ``key``: the admission key, one per (tenant, session, target), hashes only: a newer job of
    the same key replaces a queued one. ``cooldown_key``: the session's cooldown (tenant-scoped
    hash). ``rate_key``: the tenant's warm-rate key (``None``: no tenant rate for this warm).
    ``kind``: ``"chat"`` or ``"completion"``, handed to the sender. ``body``: from
    :func:`~litellm_kvwarm.warm_body.warm_request`. ``tenant_key``: the tenant's keyed hash,
    whose warms share one turn of the runner's round-robin (``None``: ``rate_key`` is used; jobs
    with neither share one turn). ``queued_at`` is set by the runner (its clock, seconds). ``size``: bytes the body holds
    (:func:`~litellm_kvwarm.warm_bytes.body_bytes`), counted against ``warm_queue_bytes``."""

    key: str
    cooldown_key: str
    rate_key: str | None
    kind: str
    body: dict[str, Any]
    queued_at: float = field(default=0.0, compare=False)
    tenant_key: str | None = None
    #: why the warm was asked for (:class:`WarmTrigger` value; the ``trigger`` label of ``kvwarm_warms_total``)
    trigger: str = "ahead"
    size: int = field(default=0, compare=False)

    @property
    def tenant(self) -> str | None:
        """The tenant whose turn this warm takes: ``tenant_key``, else ``rate_key``."""
        return self.tenant_key if self.tenant_key is not None else self.rate_key

    @property
    def target(self) -> str:
        """The model group the warm is sent to (``body["model"]``)."""
        return str(self.body.get("model"))


#: Sends one warm: ``(kind, body)``; in the proxy ``router.acompletion(**body)`` for ``"chat"``,
#: ``router.atext_completion(**body)`` for ``"completion"``.
Sender = Callable[[str, dict[str, Any]], Awaitable[Any]]
#: ``(outcome, duration_s, target, trigger)`` when a fired warm ends (succeeded / failed / timed_out).
DoneCallback = Callable[[WarmOutcome, float, str, str], None]
#: ``(outcome, target, trigger)`` when a slot admits or skips a warm (fired / skipped_cooldown /
#: skipped_tenant_rate / failed when the store raised).
OutcomeCallback = Callable[[WarmOutcome, str, str], None]
#: ``(reason, target)`` for each queued warm dropped.
DropCallback = Callable[[DropReason, str], None]

"""Warm-ahead: ``max_tokens=1`` requests, sent in the background, that leave a conversation's
prefix in the escalation target's prefix cache.

* :func:`warm_request` (pure) builds the warm body from the live request of a request kind:
  ``"chat"`` copies the messages and everything else that shapes the rendered prompt (tools,
  tool_choice, response_format, chat-template arguments), ``"completion"`` (text completions)
  copies ``prompt`` and ``suffix``; so the escalated request's prompt starts with the warm's
  prompt token for token. Every output field is 1 (``max_tokens``, and
  ``max_completion_tokens`` when the request had it), not streamed, no fallbacks or retries.
* :func:`warm_metadata` (pure) is the warm's LiteLLM ``metadata``: the warm marker, the keyed
  hash of the session (never the raw id), the plugin's affinity and cache-salt keys, and the
  caller's identity as the proxy set it (:data:`SPEND_IDENTITY_KEYS`), so LiteLLM's spend
  tracking charges the warm to the caller's key, team, user, org and end user.
* :class:`WarmRunner` queues warms and sends them in owned background tasks:

  - at most ``max_concurrency`` warms are admitted or in flight at once; the rest wait in a
    queue of at most ``queue_size`` warms, one per admission key (tenant + session + target):
    a newer state of a session replaces its queued warm in place (the newest messages win; the
    replaced one is dropped as ``stale``);
  - the queue is fair across tenants (a tenant is :attr:`WarmJob.tenant_key`, else
    :attr:`WarmJob.rate_key`; warms with neither share one tenant): each tenant's warms wait
    in their own FIFO, and a freed slot takes the next warm round-robin over the tenants with
    queued warms. A warm queued by a tenant with nothing queued waits for at most one warm of
    each other tenant with queued warms (one round), never for another tenant's backlog, so
    one tenant's burst does not delay another tenant's warm-ahead;
  - with a tenant rate, a tenant holds at most ``limit`` queued warms: past it its own oldest
    queued warm is dropped (``tenant_cap``); past ``queue_size`` the oldest queued warm of the
    tenant with the most queued warms is dropped (``full``; ties: the tenant that reached that
    count first), so a quiet tenant is never pushed out by a noisy one;
  - submit and dispatch are O(1): tenants in an ordered dict (the rotation) of per-tenant
    ordered dicts, and tenants indexed by their queued count for the ``full`` victim;
  - a warm is admitted when a slot takes it, right before it is sent: one
    :meth:`~litellm_kvwarm.cooldown.CooldownStore.admit` call checks and takes the session's
    cooldown and the tenant's warm rate together. A queued or dropped warm takes nothing;
  - a small LRU memo (monotonic clock) remembers cooldowns this process took or found
    running, and tenants found at their rate, so :meth:`WarmRunner.submit` skips those
    without any I/O and without queueing;
  - each warm runs under ``timeout_s``; every task is kept in a set and cancelled and awaited
    by :meth:`WarmRunner.aclose` (queued warms are dropped as ``shutdown``). A failed or
    timed-out warm is logged and reported; it never reaches a client.

Outcome life of one warm (each a :class:`WarmOutcome`, a metric label): ``queued`` by
:meth:`WarmRunner.submit` (or ``skipped_cooldown`` / ``skipped_tenant_rate`` from the memo);
then, when a slot takes it, ``fired`` (admitted and sent), ``skipped_cooldown`` or
``skipped_tenant_rate``; a fired warm ends ``succeeded``, ``failed`` or ``timed_out``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any

from .cooldown import RATE_PERIOD_S, Admission, CooldownStore, MemoryCooldownStore, TenantRate
from .meta import AFFINITY_KEY, SALT_KEY, WARM_MARKER

logger = logging.getLogger("litellm_kvwarm.warm")

DEFAULT_MAX_CONCURRENCY = 4
DEFAULT_TIMEOUT_S = 120.0
DEFAULT_QUEUE_SIZE = 1024
DEFAULT_COOLDOWN_S = 300.0
#: Cooldowns and rate-capped tenants remembered by one runner (least recently used dropped).
DEFAULT_MEMO_CAPACITY = 4096
#: How long a cooldown found running (taken by another process) is remembered, seconds: its
#: remaining time is unknown, so it is asked again after this, not after a whole cooldown.
DEFAULT_MEMO_RECHECK_S = 30.0

#: Metadata key of the session's keyed hash on a warm (never the raw client session id).
SESSION_KEY = "kvwarm_session"

#: Request keys that change the prompt vLLM's chat endpoint renders.
PROMPT_SHAPING_KEYS = (
    "messages",
    "tools",
    "tool_choice",
    "functions",
    "function_call",
    "response_format",
    "chat_template",
    "chat_template_kwargs",
    "add_generation_prompt",
    "continue_final_message",
    "add_special_tokens",
    "documents",
    "mm_processor_kwargs",
    "cache_salt",
    "extra_body",
)
#: Request keys that change the prompt vLLM's text completion endpoint tokenizes. ``echo`` is
#: left out: it changes what comes back, not what is prefilled.
TEXT_PROMPT_KEYS = ("prompt", "suffix", "add_special_tokens", "cache_salt", "extra_body")
#: Prompt keys per request kind (the kinds the hook handles: ``call_kind`` in hook.py).
PROMPT_KEYS = {"chat": PROMPT_SHAPING_KEYS, "completion": TEXT_PROMPT_KEYS}
#: Output budgets a server may read; a warm sets each one present to 1.
OUTPUT_FIELDS = ("max_tokens", "max_completion_tokens")
#: Output floors that would contradict a budget of 1 (vLLM rejects min_tokens > max_tokens).
OUTPUT_FLOOR_FIELDS = ("min_tokens",)

#: Keys the LiteLLM proxy (1.108.7, ``LiteLLMProxyRequestSetup.add_user_api_key_auth_to_request_metadata``)
#: writes into a request's metadata from the caller's key before the pre-call hook, and that
#: its spend tracking (``_ProxyDBLogger._PROXY_track_cost_callback``: key, user, team, org,
#: project, end user, agent, tags) and the standard logging payload (``StandardLoggingMetadata``:
#: key hash, alias, team alias, org alias) read back from a finished call's metadata. Budget
#: snapshots (``user_api_key_spend`` ...), the e-mail address, the auth object and a budget
#: reservation (which belongs to the live request) are not copied.
SPEND_IDENTITY_KEYS = (
    "user_api_key",
    "user_api_key_hash",
    "user_api_key_alias",
    "user_api_key_user_id",
    "user_api_key_team_id",
    "user_api_key_team_alias",
    "user_api_key_org_id",
    "user_api_key_org_alias",
    "user_api_key_project_id",
    "user_api_key_project_alias",
    "user_api_key_end_user_id",
    "user_api_end_user_max_budget",
    "agent_id",
    "billing_agent_id",
    "tags",
)
#: Plugin keys of the live request a warm must carry: the session's deployment pin and the
#: tenant's cache salt (applied per attempt), so the warm fills the cache the request will hit.
PLUGIN_KEYS = (AFFINITY_KEY, SALT_KEY)
#: Where LiteLLM carries a request's metadata (chat and completions use ``metadata``).
METADATA_FIELDS = ("metadata", "litellm_metadata")


class WarmOutcome(str, Enum):
    """What happened to a warm candidate. Values are metric label values."""

    QUEUED = "queued"
    FIRED = "fired"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    TIMED_OUT = "timed_out"
    SKIPPED_DISABLED = "skipped_disabled"
    SKIPPED_BELOW_THRESHOLD = "skipped_below_threshold"
    SKIPPED_UNKNOWN_MODEL = "skipped_unknown_model"
    SKIPPED_FORBIDDEN = "skipped_forbidden"
    SKIPPED_COOLDOWN = "skipped_cooldown"
    SKIPPED_TENANT_RATE = "skipped_tenant_rate"
    SKIPPED_NO_SESSION = "skipped_no_session"


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


def _one_token(extra: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in extra.items() if k not in OUTPUT_FLOOR_FIELDS}
    for key in OUTPUT_FIELDS:
        if key in out:
            out[key] = 1
    return out


def warm_request(
    data: Mapping[str, Any], *, target: str, metadata: Mapping[str, Any], kind: str = "chat"
) -> dict[str, Any]:
    """The warm body for model group ``target``: the prompt keys of ``kind`` (:data:`PROMPT_KEYS`)
    copied from ``data`` as they are, ``max_tokens=1`` (and ``max_completion_tokens=1`` when
    ``data`` has it; the same inside ``extra_body``, where ``min_tokens`` is dropped),
    ``stream=False``, no retries or fallbacks, and ``metadata``.

    Raises:
        ValueError: ``kind`` is not ``"chat"`` or ``"completion"``.
    """
    keys = PROMPT_KEYS.get(kind)
    if keys is None:
        raise ValueError(f"warm_request: unknown request kind {kind!r}; known: {sorted(PROMPT_KEYS)}")
    body: dict[str, Any] = {key: data[key] for key in keys if data.get(key) is not None}
    if isinstance(body.get("extra_body"), Mapping):
        body["extra_body"] = _one_token(body["extra_body"])
    body.update(
        model=target,
        max_tokens=1,
        stream=False,
        metadata=dict(metadata),
        num_retries=0,
        fallbacks=[],
        context_window_fallbacks=[],
    )
    if data.get("max_completion_tokens") is not None:
        body["max_completion_tokens"] = 1
    return body


def warm_metadata(data: Mapping[str, Any], *, session_hash: str) -> dict[str, Any]:
    """Metadata of a warm built from the live request ``data``: ``{kvwarm_warm: True,
    kvwarm_session: session_hash}``, the :data:`PLUGIN_KEYS` and :data:`SPEND_IDENTITY_KEYS`
    that are set (not ``None``) in ``data["metadata"]`` (else ``data["litellm_metadata"]``).
    Nothing else of the client's metadata: no raw session id, no budget reservation."""
    out: dict[str, Any] = {WARM_MARKER: True, SESSION_KEY: session_hash}
    for bucket in METADATA_FIELDS:
        meta = data.get(bucket)
        if not isinstance(meta, Mapping):
            continue
        for key in (*PLUGIN_KEYS, *SPEND_IDENTITY_KEYS):
            if key not in out and meta.get(key) is not None:
                out[key] = meta[key]
    return out


@dataclass(frozen=True)
class WarmJob:
    """One warm waiting for a slot.

    ``key``: the admission key, one per (tenant, session, target), hashes only: a newer job of
    the same key replaces a queued one. ``cooldown_key``: the session's cooldown (tenant-scoped
    hash). ``rate_key``: the tenant's warm-rate key (``None``: no tenant rate for this warm).
    ``kind``: ``"chat"`` or ``"completion"``, handed to the sender. ``body``: from
    :func:`warm_request`. ``tenant_key``: the tenant's keyed hash, whose warms share one turn
    of the runner's round-robin (``None``: ``rate_key`` is used; jobs with neither share one
    turn). ``queued_at`` is set by the runner (its clock, seconds)."""

    key: str
    cooldown_key: str
    rate_key: str | None
    kind: str
    body: dict[str, Any]
    queued_at: float = field(default=0.0, compare=False)
    tenant_key: str | None = None

    @property
    def tenant(self) -> str | None:
        """The tenant whose turn this warm takes: ``tenant_key``, else ``rate_key``."""
        return self.tenant_key if self.tenant_key is not None else self.rate_key

    @property
    def target(self) -> str:
        return str(self.body.get("model"))


#: Sends one warm: ``(kind, body)``; in the proxy ``router.acompletion(**body)`` for ``"chat"``,
#: ``router.atext_completion(**body)`` for ``"completion"``.
Sender = Callable[[str, dict[str, Any]], Awaitable[Any]]
#: ``(outcome, duration_s, target)`` when a fired warm ends (succeeded / failed / timed_out).
DoneCallback = Callable[[WarmOutcome, float, str], None]
#: ``(outcome, target)`` when a slot admits or skips a warm (fired / skipped_cooldown /
#: skipped_tenant_rate / failed when the store raised).
OutcomeCallback = Callable[[WarmOutcome, str], None]


def _noop(*_: Any) -> None:
    return None


class _Memo:
    """Bounded LRU of ``key → until`` (runner clock seconds)."""

    def __init__(self, capacity: int):
        self._capacity = capacity
        self._until: OrderedDict[str, float] = OrderedDict()

    def active(self, key: str | None, now: float) -> bool:
        if key is None:
            return False
        until = self._until.get(key)
        if until is None:
            return False
        if until <= now:
            del self._until[key]
            return False
        return True

    def remember(self, key: str, until: float) -> None:
        self._until[key] = until
        self._until.move_to_end(key)
        while len(self._until) > self._capacity:
            self._until.popitem(last=False)

    def __len__(self) -> int:
        return len(self._until)


class _FairQueue:
    """Queued warms: one FIFO per tenant, taken round-robin across tenants. O(1) per operation.

    ``_turns`` is the rotation: tenant → its warms (admission key → job, oldest first), in the
    order the tenants get their next turn; a tenant is in it exactly while it has queued warms.
    ``_by_count`` indexes tenants by how many warms they have queued (count → tenants, in the
    order they reached that count) and ``_max`` is the highest count, so the biggest tenant is
    found without a scan (counts only move by one, so ``_max`` is kept exactly)."""

    def __init__(self) -> None:
        self._turns: OrderedDict[str | None, OrderedDict[str, WarmJob]] = OrderedDict()
        self._by_count: dict[int, dict[str | None, None]] = {}
        self._max = 0
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def count(self, tenant: str | None) -> int:
        """Warms ``tenant`` has queued."""
        own = self._turns.get(tenant)
        return len(own) if own is not None else 0

    def replace(self, job: WarmJob) -> WarmJob | None:
        """Put ``job`` in the place of its tenant's queued warm of the same key and return the
        replaced warm; ``None`` (nothing changed) when that key is not queued."""
        own = self._turns.get(job.tenant)
        if own is None or job.key not in own:
            return None
        old = own[job.key]
        own[job.key] = job  # in place: the session keeps its turn, the newest body wins
        return old

    def push(self, job: WarmJob) -> None:
        """Queue ``job`` last of its tenant's warms; a tenant with nothing queued takes the last turn."""
        own = self._turns.get(job.tenant)
        if own is None:
            own = self._turns[job.tenant] = OrderedDict()
        own[job.key] = job
        self._size += 1
        self._recount(job.tenant, len(own) - 1, len(own))

    def pop_next(self) -> WarmJob:
        """The oldest warm of the tenant whose turn it is; that tenant's next turn is the last.
        Raises ``KeyError`` when empty."""
        tenant, own = next(iter(self._turns.items()))
        _, job = own.popitem(last=False)
        if own:
            self._turns.move_to_end(tenant)
        self._removed(tenant, own)
        return job

    def pop_oldest(self, tenant: str | None) -> WarmJob:
        """Drop and return ``tenant``'s oldest queued warm (``KeyError`` if it has none)."""
        own = self._turns[tenant]
        _, job = own.popitem(last=False)
        self._removed(tenant, own)
        return job

    def biggest(self) -> str | None:
        """The tenant with the most queued warms (ties: the one that reached the count first).
        Raises ``KeyError`` when empty."""
        return next(iter(self._by_count[self._max]))

    def clear(self) -> list[WarmJob]:
        """Empty the queue; the warms it held."""
        jobs = [job for own in self._turns.values() for job in own.values()]
        self._turns.clear()
        self._by_count.clear()
        self._max = self._size = 0
        return jobs

    def _removed(self, tenant: str | None, own: OrderedDict[str, WarmJob]) -> None:
        if not own:
            del self._turns[tenant]
        self._size -= 1
        self._recount(tenant, len(own) + 1, len(own))

    def _recount(self, tenant: str | None, old: int, new: int) -> None:
        if old:
            same = self._by_count[old]
            del same[tenant]
            if not same:
                del self._by_count[old]
        if new:
            self._by_count.setdefault(new, {})[tenant] = None
        if new > self._max:
            self._max = new
        elif old == self._max and old not in self._by_count:
            self._max = new  # the last tenant at the top moved one down


class WarmRunner:
    """Queues warms and sends them in owned background tasks (see the module docstring).

    Args:
        send: performs one warm, ``await send(kind, body)``.
        cooldown: returns the admission store (called when a warm is admitted, so the proxy
            can build it lazily); default: a private :class:`MemoryCooldownStore`.
        cooldown_s: a session's cooldown, seconds (``KVWARM_WARM_COOLDOWN_S``).
        tenant_rate: warms per tenant per minute (``KVWARM_WARM_TENANT_RATE``); 0 = no cap.
        max_concurrency: warms being admitted or sent at once (``KVWARM_WARM_MAX_CONCURRENCY``).
        queue_size: warms waiting for a slot at most, all tenants together
            (``KVWARM_WARM_QUEUE_SIZE``); with a ``tenant_rate``, one tenant holds at most its
            per-window limit of them.
        timeout_s: a warm running longer is cancelled (``TIMED_OUT``).
        on_done: ``(outcome, duration_s, target)`` when a fired warm ends.
        on_outcome: ``(outcome, target)`` when a slot fires or skips a warm.
        on_queue_depth: the queue's length after every change (``warm_queue_depth``).
        on_drop: ``(reason, target)`` for each queued warm dropped (``warm_queue_drops``;
            reasons: :class:`DropReason`).
        clock: monotonic seconds (durations, queue wait, the memo).
        memo_capacity: cooldown keys and tenants the memo keeps.

    Raises:
        ValueError: a bound below 1, a negative ``tenant_rate`` or a non-positive ``cooldown_s``.
    """

    def __init__(
        self,
        send: Sender,
        *,
        cooldown: Callable[[], CooldownStore] | None = None,
        cooldown_s: float = DEFAULT_COOLDOWN_S,
        tenant_rate: float = 0.0,
        max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
        queue_size: int = DEFAULT_QUEUE_SIZE,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        on_done: DoneCallback | None = None,
        on_outcome: OutcomeCallback | None = None,
        on_queue_depth: Callable[[int], None] | None = None,
        on_drop: Callable[[DropReason, str], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        memo_capacity: int = DEFAULT_MEMO_CAPACITY,
    ):
        if max_concurrency < 1 or queue_size < 1 or memo_capacity < 1:
            raise ValueError("max_concurrency, queue_size and memo_capacity must be >= 1")
        if cooldown_s <= 0:
            raise ValueError(f"cooldown_s must be > 0, got {cooldown_s!r}")
        self._send = send
        if cooldown is None:
            private = MemoryCooldownStore()
            cooldown = lambda: private  # noqa: E731
        self._store = cooldown
        self._cooldown_s = cooldown_s
        self._rate = TenantRate.per_minute(tenant_rate)
        self._max = max_concurrency
        self._queue_size = queue_size
        self._timeout_s = timeout_s
        self._on_done = on_done or _noop
        self._on_outcome = on_outcome or _noop
        self._on_queue_depth = on_queue_depth or _noop
        self._on_drop = on_drop or _noop
        self._clock = clock
        self._queue = _FairQueue()
        self._cooldowns = _Memo(memo_capacity)
        self._rated = _Memo(memo_capacity)
        # Slots in use, counted synchronously (the task set shrinks only on a later loop turn):
        # a worker is created for a queued warm and holds its slot until the queue is empty.
        self._active = 0
        self._unstarted = 0  # workers created that have not taken their first warm yet
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed = False

    @property
    def in_flight(self) -> int:
        """Slots in use: warms being admitted or sent."""
        return self._active

    @property
    def queued(self) -> int:
        """Warms waiting for a slot."""
        return len(self._queue)

    def submit(self, job: WarmJob) -> WarmOutcome:
        """Queue ``job`` last of its tenant's warms, or in place of the tenant's queued warm of
        the same key (that one dropped ``stale``); to make room, drop the tenant's own oldest
        (``tenant_cap``) or the biggest tenant's oldest (``full``). No I/O. Returns ``QUEUED``
        (also when dropped at once as ``shutdown`` after :meth:`aclose`), or
        ``SKIPPED_COOLDOWN`` / ``SKIPPED_TENANT_RATE`` when the memo already knows the answer
        (nothing queued)."""
        now = self._clock()
        if self._cooldowns.active(job.cooldown_key, now):
            return WarmOutcome.SKIPPED_COOLDOWN
        if self._rated.active(job.rate_key, now):
            return WarmOutcome.SKIPPED_TENANT_RATE
        job = replace(job, queued_at=now)
        if self._closed:
            self._on_drop(DropReason.SHUTDOWN, job.target)
            return WarmOutcome.QUEUED
        old = self._queue.replace(job)
        if old is not None:
            self._on_drop(DropReason.STALE, old.target)
        else:
            self._make_room(job)
            self._queue.push(job)
        self._on_queue_depth(len(self._queue))
        self._start_workers()
        return WarmOutcome.QUEUED

    def _make_room(self, job: WarmJob) -> None:
        if self._rate is not None and job.rate_key is not None and self._queue.count(job.tenant) >= self._rate.limit:
            dropped, reason = self._queue.pop_oldest(job.tenant), DropReason.TENANT_CAP
        elif len(self._queue) >= self._queue_size:
            dropped, reason = self._queue.pop_oldest(self._queue.biggest()), DropReason.FULL
        else:
            return
        logger.debug("[KV-WARM] queued warm of %r dropped: %s", dropped.target, reason.value)
        self._on_drop(reason, dropped.target)

    def _start_workers(self) -> None:
        loop = asyncio.get_running_loop()
        while self._active < self._max and len(self._queue) > self._unstarted:
            self._active += 1
            self._unstarted += 1
            task = loop.create_task(self._worker(), name="kvwarm-warm-worker")
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _worker(self) -> None:
        self._unstarted -= 1
        try:
            while self._queue and not self._closed:
                job = self._queue.pop_next()
                self._on_queue_depth(len(self._queue))
                await self._admit_and_send(job)
        finally:
            self._active -= 1  # synchronously with the empty-queue check: submit() starts a new worker

    async def _admit_and_send(self, job: WarmJob) -> None:
        now = self._clock()
        if self._rated.active(job.rate_key, now):
            self._on_outcome(WarmOutcome.SKIPPED_TENANT_RATE, job.target)
            return
        rate = self._rate if job.rate_key is not None else None
        try:
            admission = await self._store().admit(
                job.cooldown_key,
                self._cooldown_s,
                job.rate_key,
                rate.limit if rate else 0,
                rate.window_s if rate else RATE_PERIOD_S,
            )
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the store is the fallback store in the proxy; any other is not trusted to admit
            logger.warning("[KV-WARM] warm of %r not sent: admission failed: %s", job.target, type(exc).__name__)
            self._on_outcome(WarmOutcome.FAILED, job.target)
            return
        now = self._clock()
        if admission is Admission.COOLDOWN:
            self._cooldowns.remember(job.cooldown_key, now + min(DEFAULT_MEMO_RECHECK_S, self._cooldown_s))
            self._on_outcome(WarmOutcome.SKIPPED_COOLDOWN, job.target)
            return
        if admission is Admission.RATE:
            assert rate is not None and job.rate_key is not None
            self._rated.remember(job.rate_key, now + rate.window_s / rate.limit)
            logger.info("[KV-WARM] warm of %r skipped: tenant at its warm rate (%d per %.0fs)", job.target, rate.limit, rate.window_s)
            self._on_outcome(WarmOutcome.SKIPPED_TENANT_RATE, job.target)
            return
        self._cooldowns.remember(job.cooldown_key, now + self._cooldown_s)
        logger.info("[KV-WARM] fired: warming %r (max_tokens=1) after %.2fs in the queue", job.target, now - job.queued_at)
        self._on_outcome(WarmOutcome.FIRED, job.target)
        await self._run(job)

    async def _run(self, job: WarmJob) -> None:
        target = job.target
        started = self._clock()
        try:
            await asyncio.wait_for(self._send(job.kind, job.body), timeout=self._timeout_s)
        except asyncio.TimeoutError:
            outcome = WarmOutcome.TIMED_OUT
            logger.warning("[KV-WARM] warm of %r timed out after %.1fs", target, self._timeout_s)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a failed warm is counted and logged, never surfaced to a client
            outcome = WarmOutcome.FAILED
            logger.warning("[KV-WARM] warm of %r failed: %s", target, type(exc).__name__)
            logger.debug("warm failure detail", exc_info=True)
        else:
            outcome = WarmOutcome.SUCCEEDED
        duration = self._clock() - started
        if outcome is WarmOutcome.SUCCEEDED:
            logger.info("[KV-WARM] warm of %r done in %.2fs", target, duration)
        self._on_done(outcome, duration, target)

    async def drain(self) -> None:
        """Wait until the queue is empty and no warm is in flight (tests and orderly shutdown)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def aclose(self) -> None:
        """Drop every queued warm (``shutdown``), cancel every warm in flight and wait until
        they are gone. Later submits are dropped as ``shutdown`` too."""
        self._closed = True
        for job in self._queue.clear():
            self._on_drop(DropReason.SHUTDOWN, job.target)
        self._on_queue_depth(0)
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._tasks.clear()

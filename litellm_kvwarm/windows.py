"""The per-deployment context-window cache (:class:`WindowCache`): windows (tokens) discovered
with ``GET {api_base}/models`` → ``max_model_len``.

A deployment (:class:`~litellm_kvwarm.backend_call.Deployment`) is keyed by
``(api_base, served model)``, never by the LiteLLM group name.

Contract:

* :meth:`WindowCache.get` waits at most what is left of the request's
  :class:`~litellm_kvwarm.deadline.RequestBudget`. On a miss it starts one fetch
  (deduplicated per deployment) and waits for it within the budget; a fetch that takes
  longer finishes in the background and serves later requests.
* A fetch that overran a request's budget is remembered: until it finishes (at most
  ``timeout_s``, a total wall-clock bound on the whole exchange, body included) or for
  ``unknown_retry_s``, further :meth:`WindowCache.get` calls for that deployment answer
  ``None`` at once. A hung or dripping ``/v1/models`` costs one budget per interval, not one
  per request.
* A fresh entry is served as is; past ``refresh_after`` (80% of the TTL) it is still
  served while one background fetch refreshes it; past the TTL it counts as a miss.
* A failed fetch (timeout, refused connection, 401, 5xx, junk), or a ``/models`` that does
  not list the served model with a window, leaves the window unknown (``None``) for
  ``unknown_retry_s`` seconds: unknown means the plugin makes no proactive decision for that
  deployment. Each failure is reported by kind (``on_error``); a 401/403 is also logged once
  per deployment at WARNING.
* A limit a server's own rejection revealed is not kept here but per tenant
  (:mod:`~litellm_kvwarm.learned_limits`; it outranks what is discovered, see
  :mod:`~litellm_kvwarm.facts_windows`).
* :meth:`WindowCache.adopt` publishes a window read elsewhere (LiteLLM's own discovery) through
  ``on_update`` and the log, once per change, without caching it: its freshness is LiteLLM's.

Where the rest lives (each name still importable from here): the deployment type and the
bounded backend call in :mod:`~litellm_kvwarm.backend_call`; the ``/v1/models`` URL, parser and
fetcher in :mod:`~litellm_kvwarm.window_fetch`.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from .backend_call import (  # noqa: F401  (re-exported: the shared backend-call helpers)
    DEFAULT_TIMEOUT_S,
    MAX_BODY_BYTES,
    BackendCallError,
    BackendResponse,
    Deployment,
    UnauthorizedWarnings,
    bounded_request,
    redact_url,
    status_error,
)
from .deadline import RequestBudget
from .window_fetch import (  # noqa: F401  (re-exported: discovery over /v1/models)
    WINDOW_FIELDS,
    Fetcher,
    HttpWindowFetcher,
    models_url,
    parse_models_response,
)

logger = logging.getLogger("litellm_kvwarm.windows")

Clock = Callable[[], float]


class Miss(enum.Enum):
    """:meth:`WindowCache.lookup`'s answer when nothing fresh is cached."""

    MISS = "miss"


MISS = Miss.MISS


@dataclass(frozen=True)
class WindowEntry:
    """A cached answer. ``max_model_len`` is in tokens, ``None`` when unknown; ``at`` is the clock
    time it was stored; ``source`` is ``"discovered"``."""

    max_model_len: int | None
    at: float
    source: str



class WindowCache:
    """Per-deployment ``max_model_len`` cache with TTL, refresh-ahead and overrun memory.

    Args:
        fetch: reads one deployment's window (``HttpWindowFetcher`` in production); bounded in
            time by itself.
        ttl_s: seconds an answer is trusted.
        unknown_retry_s: seconds an unknown answer, or an overrun fetch, is kept before asking
            (and waiting) again.
        clock: monotonic seconds (injected for tests).
        on_update: called with ``(deployment, window)`` whenever an entry is stored.
        on_budget_exhausted: called when :meth:`get` answers ``None`` for want of budget (the
            budget ran out, or the deployment's fetch overran recently).
    """

    REFRESH_AHEAD_FRACTION = 0.8

    def __init__(
        self,
        fetch: Fetcher,
        *,
        ttl_s: float,
        unknown_retry_s: float = 30.0,
        clock: Clock = time.monotonic,
        on_update: Callable[[Deployment, int | None], None] | None = None,
        on_budget_exhausted: Callable[[], None] | None = None,
    ):
        self._fetch = fetch
        self._ttl_s = ttl_s
        self._unknown_retry_s = min(unknown_retry_s, ttl_s)
        self._clock = clock
        self._on_update = on_update
        self._on_budget_exhausted = on_budget_exhausted
        self._entries: dict[Deployment, WindowEntry] = {}
        self._inflight: dict[Deployment, asyncio.Task[int | None]] = {}
        self._overrun_until: dict[Deployment, float] = {}
        self._adopted: dict[Deployment, int] = {}

    def peek(self, deployment: Deployment) -> int | None:
        """The cached window if still within its TTL, without any I/O."""
        entry = self._entries.get(deployment)
        if entry is None or self._age(entry) >= self._lifetime(entry):
            return None
        return entry.max_model_len

    def lookup(self, deployment: Deployment) -> int | None | Miss:
        """The cached answer for ``deployment`` without awaiting (the request path's common case):
        its window in tokens, ``None`` if it is known to be unknown, or :data:`MISS` when only
        :meth:`get` can tell. Starts the refresh-ahead fetch like :meth:`get` does."""
        entry = self._entries.get(deployment)
        if entry is None:
            return MISS
        age, lifetime = self._age(entry), self._lifetime(entry)
        if age >= lifetime:
            return MISS
        if entry.max_model_len is not None and age >= lifetime * self.REFRESH_AHEAD_FRACTION:
            self._start_fetch(deployment)
        return entry.max_model_len

    async def get(self, deployment: Deployment, budget: RequestBudget) -> int | None:
        """Window of ``deployment`` in tokens, or ``None`` if unknown within what is left of
        ``budget`` (the wall time waited is booked on it). Never raises."""
        cached = self.lookup(deployment)
        if cached is not MISS:
            return cached  # type: ignore[return-value]
        task = self._start_fetch(deployment)
        if self._overrunning(deployment) or budget.exhausted:
            if not task.done():
                # started without a wait: the next request must not pay a budget for it either
                self._overrun_until.setdefault(deployment, self._clock() + self._unknown_retry_s)
            self._exhausted()
            return None
        window = await budget.wait(task, MISS)
        if window is MISS:
            self._overrun_until[deployment] = self._clock() + self._unknown_retry_s
            logger.debug("window discovery for %r overran the request budget; not waited for again for %.0fs", deployment, self._unknown_retry_s)
            self._exhausted()
            return None
        return window

    def adopt(self, deployment: Deployment, max_model_len: int, *, source: str = "litellm") -> None:
        """Publish a window (tokens) read elsewhere (``source``: LiteLLM's discovery) as if stored:
        ``on_update`` and the log line, only when it differs from the last one adopted. Nothing is
        cached: :meth:`lookup`/:meth:`get` do not see it."""
        if self._adopted.get(deployment) == max_model_len:
            return
        self._adopted[deployment] = max_model_len
        logger.info("[CONTEXT-ROUTE] window of %s model %r: %s (%s)", redact_url(deployment.api_base), deployment.served_model,
                    max_model_len, source)
        if self._on_update:
            self._on_update(deployment, max_model_len)

    async def aclose(self) -> None:
        """Cancel and await background fetches."""
        tasks = list(self._inflight.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._inflight.clear()

    def _overrunning(self, deployment: Deployment) -> bool:
        until = self._overrun_until.get(deployment)
        return until is not None and deployment in self._inflight and self._clock() < until

    def _exhausted(self) -> None:
        if self._on_budget_exhausted:
            self._on_budget_exhausted()

    def _age(self, entry: WindowEntry) -> float:
        return self._clock() - entry.at

    def _lifetime(self, entry: WindowEntry) -> float:
        return self._ttl_s if entry.max_model_len is not None else self._unknown_retry_s

    def _start_fetch(self, deployment: Deployment) -> asyncio.Task[int | None]:
        task = self._inflight.get(deployment)
        if task is None:
            task = asyncio.get_running_loop().create_task(self._fetch_and_store(deployment))
            self._inflight[deployment] = task
        return task

    async def _fetch_and_store(self, deployment: Deployment) -> int | None:
        try:
            try:
                window = await self._fetch(deployment)
            except Exception:  # a fetcher bug must not fail requests: the window stays unknown
                logger.warning("window discovery for %r raised", deployment, exc_info=True)
                window = None
            self._store(deployment, window, source="discovered")
            return window
        finally:
            self._inflight.pop(deployment, None)
            self._overrun_until.pop(deployment, None)

    def _store(self, deployment: Deployment, window: int | None, *, source: str) -> None:
        previous = self._entries.get(deployment)
        self._adopted.pop(deployment, None)  # the gauge now shows this one: a later adopt publishes again
        self._entries[deployment] = WindowEntry(max_model_len=window, at=self._clock(), source=source)
        if previous is None or previous.max_model_len != window:
            logger.info(
                "[CONTEXT-ROUTE] window of %s model %r: %s (%s)", redact_url(deployment.api_base), deployment.served_model, window, source
            )
        if self._on_update:
            self._on_update(deployment, window)

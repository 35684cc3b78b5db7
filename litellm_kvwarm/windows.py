"""Context-window discovery per deployment: ``GET {api_base}/models`` → ``max_model_len``.

A deployment is keyed by ``(api_base, served model)``, never by the LiteLLM group name:
one backend can be a swap slot that serves different models over time, and a group can
hold deployments with different windows.

Contract:

* :meth:`WindowCache.get` answers within ``budget_s`` seconds. On a miss it starts one
  fetch (deduplicated per deployment) and waits for it at most that long; a fetch that
  takes longer finishes in the background and serves later requests.
* A fresh entry is served as is; past ``refresh_after`` (80% of the TTL) it is still
  served while one background fetch refreshes it; past the TTL it counts as a miss.
* A failed fetch, garbage, or a ``/models`` that does not list the served model leaves
  the window unknown (``None``) for ``unknown_retry_s`` seconds: unknown means the
  plugin makes no proactive decision for that deployment.
* :meth:`WindowCache.learn` records a window taken from the server's own error text
  (see the reactive backstop); it replaces the entry at once.

``max_model_len`` is served by vLLM's ``/v1/models`` since about 0.5; SGLang and some
others use other field names (``context_length``, ``max_context_length``), read too.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import httpx

logger = logging.getLogger("litellm_kvwarm.windows")

#: Fields of a ``/v1/models`` entry that carry the context window, in order of trust.
WINDOW_FIELDS = ("max_model_len", "context_length", "max_context_length", "context_window")

Clock = Callable[[], float]


class Miss(enum.Enum):
    """:meth:`WindowCache.lookup`'s answer when nothing fresh is cached."""

    MISS = "miss"


MISS = Miss.MISS


@dataclass(frozen=True)
class Deployment:
    """One backend endpoint serving one model: ``api_base`` as configured in LiteLLM, and the
    served model name (the ``litellm_params.model`` without its provider prefix)."""

    api_base: str
    served_model: str


@dataclass(frozen=True)
class WindowEntry:
    """A cached answer. ``max_model_len`` is in tokens, ``None`` when unknown; ``at`` is the clock
    time it was stored; ``source`` is ``"discovered"`` or ``"learned"``."""

    max_model_len: int | None
    at: float
    source: str


def models_url(api_base: str) -> str:
    """``/models`` URL of an OpenAI-compatible base: ``http://h:p/v1`` → ``http://h:p/v1/models``;
    a base without a version segment gets ``/v1/models``."""
    base = api_base.rstrip("/")
    if base.endswith("/v1") or "/v1/" in base or base.endswith("/openai"):
        return base + "/models"
    return base + "/v1/models"


def parse_models_response(body: object, served_model: str) -> int | None:
    """Window (tokens) of ``served_model`` in a ``/v1/models`` body, or ``None``.

    Accepts ``{"data": [{"id": ..., "max_model_len": N}, ...]}``; matches ``id`` first, then
    ``root``. A single served model whose id differs (an alias) is not trusted: ``None``.
    Never raises on a malformed body.
    """
    if not isinstance(body, dict):
        return None
    data = body.get("data")
    if not isinstance(data, list):
        return None
    for key in ("id", "root"):
        for entry in data:
            if isinstance(entry, dict) and entry.get(key) == served_model:
                return _window_of(entry)
    return None


def _window_of(entry: dict) -> int | None:
    for field in WINDOW_FIELDS:
        value = entry.get(field)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


Fetcher = Callable[[Deployment], Awaitable[int | None]]


class HttpWindowFetcher:
    """Reads one deployment's window over HTTP. Returns ``None`` on any failure (logged at debug)."""

    def __init__(self, client: httpx.AsyncClient, *, on_error: Callable[[Deployment, str], None] | None = None):
        self._client = client
        self._on_error = on_error

    async def __call__(self, deployment: Deployment) -> int | None:
        try:
            response = await self._client.get(models_url(deployment.api_base))
            response.raise_for_status()
            window = parse_models_response(response.json(), deployment.served_model)
        except (httpx.HTTPError, ValueError) as exc:
            logger.debug("window discovery failed for %s: %r", deployment, exc)
            if self._on_error:
                self._on_error(deployment, type(exc).__name__)
            return None
        if window is None:
            logger.debug("window discovery: %s does not list %r with a window", deployment.api_base, deployment.served_model)
            if self._on_error:
                self._on_error(deployment, "no_window")
        return window


class WindowCache:
    """Per-deployment ``max_model_len`` cache with TTL, refresh-ahead and a request-path budget.

    Args:
        fetch: reads one deployment's window (``HttpWindowFetcher`` in production).
        ttl_s: seconds an answer is trusted.
        budget_s: longest :meth:`get` waits for a fetch.
        unknown_retry_s: seconds an unknown answer is kept before asking again.
        clock: monotonic seconds (injected for tests).
        on_update: called with ``(deployment, window)`` whenever an entry is stored.
    """

    REFRESH_AHEAD_FRACTION = 0.8

    def __init__(
        self,
        fetch: Fetcher,
        *,
        ttl_s: float,
        budget_s: float,
        unknown_retry_s: float = 30.0,
        clock: Clock = time.monotonic,
        on_update: Callable[[Deployment, int | None], None] | None = None,
    ):
        self._fetch = fetch
        self._ttl_s = ttl_s
        self._budget_s = budget_s
        self._unknown_retry_s = min(unknown_retry_s, ttl_s)
        self._clock = clock
        self._on_update = on_update
        self._entries: dict[Deployment, WindowEntry] = {}
        self._inflight: dict[Deployment, asyncio.Task[int | None]] = {}

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

    async def get(self, deployment: Deployment) -> int | None:
        """Window of ``deployment`` in tokens, or ``None`` if unknown within the budget."""
        cached = self.lookup(deployment)
        if cached is not MISS:
            return cached  # type: ignore[return-value]
        task = self._start_fetch(deployment)
        if self._budget_s <= 0:
            return None
        try:
            return await asyncio.wait_for(asyncio.shield(task), timeout=self._budget_s)
        except asyncio.TimeoutError:
            logger.debug("window discovery for %s exceeded the %.3fs budget; continuing in background", deployment, self._budget_s)
            return None

    def learn(self, deployment: Deployment, max_model_len: int) -> None:
        """Store a window the server itself reported (e.g. in a context-length error)."""
        self._store(deployment, max_model_len, source="learned")

    async def aclose(self) -> None:
        """Cancel and await background fetches."""
        tasks = list(self._inflight.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._inflight.clear()

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
                logger.warning("window discovery for %s raised", deployment, exc_info=True)
                window = None
            self._store(deployment, window, source="discovered")
            return window
        finally:
            self._inflight.pop(deployment, None)

    def _store(self, deployment: Deployment, window: int | None, *, source: str) -> None:
        previous = self._entries.get(deployment)
        self._entries[deployment] = WindowEntry(max_model_len=window, at=self._clock(), source=source)
        if previous is None or previous.max_model_len != window:
            logger.info("[CONTEXT-ROUTE] window of %s model %r: %s (%s)", deployment.api_base, deployment.served_model, window, source)
        if self._on_update:
            self._on_update(deployment, window)

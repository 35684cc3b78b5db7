"""Context-window discovery per deployment: ``GET {api_base}/models`` → ``max_model_len``.

A deployment is keyed by ``(api_base, served model)``, never by the LiteLLM group name:
one backend can be a swap slot that serves different models over time, and a group can
hold deployments with different windows. Its ``api_key`` (the backend's own key, as LiteLLM
resolves it) is sent as ``Authorization: Bearer`` but is no part of its identity and never
appears in a log line.

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
* :meth:`WindowCache.learn` records a window taken from the server's own error text
  (see the reactive backstop); it replaces the entry at once.

``max_model_len`` is served by vLLM's ``/v1/models`` since about 0.5; SGLang and some
others use other field names (``context_length``, ``max_context_length``), read too. vLLM
lists LoRA adapters with ``max_model_len: null`` and ``parent`` = the base model's id: an
adapter's window is its parent's.

The helpers shared by every plugin call to a backend (:func:`bounded_request`,
:func:`status_error`, :func:`redact_url`, :class:`UnauthorizedWarnings`) live here too.
"""

from __future__ import annotations

import asyncio
import enum
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

import httpx

from .deadline import RequestBudget

logger = logging.getLogger("litellm_kvwarm.windows")

#: Fields of a ``/v1/models`` entry that carry the context window, in order of trust.
WINDOW_FIELDS = ("max_model_len", "context_length", "max_context_length", "context_window")
#: Total wall-clock bound of one plugin call to a backend, body included (seconds).
DEFAULT_TIMEOUT_S = 5.0
#: Largest response body the plugin reads from a backend (bytes); more is an error.
MAX_BODY_BYTES = 8 * 1024 * 1024

Clock = Callable[[], float]


class Miss(enum.Enum):
    """:meth:`WindowCache.lookup`'s answer when nothing fresh is cached."""

    MISS = "miss"


MISS = Miss.MISS


def redact_url(url: str) -> str:
    """``url`` fit for a log line: userinfo replaced by ``***``, every query value by ``***``,
    fragment dropped. ``http://u:p@h:8000/v1?key=s`` → ``http://***@h:8000/v1?key=***``."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparseable url>"
    netloc = parts.netloc
    if "@" in netloc:
        netloc = "***@" + netloc.rsplit("@", 1)[1]
    query = "&".join(f"{item.split('=', 1)[0]}=***" if "=" in item else "***" for item in parts.query.split("&") if item)
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


@dataclass(frozen=True, repr=False)
class Deployment:
    """One backend endpoint serving one model: ``api_base`` as configured in LiteLLM, the
    served model name (the ``litellm_params.model`` without its provider prefix), and the
    backend's key (``None``: no ``Authorization`` header). Equality and hashing use
    ``(api_base, served_model)`` only; ``repr`` redacts the base and omits the key."""

    api_base: str
    served_model: str
    api_key: str | None = field(default=None, compare=False, repr=False)

    def auth_headers(self) -> dict[str, str]:
        """``{"Authorization": "Bearer <key>"}`` when the deployment has a non-empty key, else ``{}``."""
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    def __repr__(self) -> str:
        return f"Deployment(api_base={redact_url(self.api_base)!r}, served_model={self.served_model!r})"


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
    ``root``. An entry without a window but with a ``parent`` (a vLLM LoRA adapter) gets the
    window of the entry whose ``id`` is that parent. A single served model whose id differs
    (an alias) is not trusted: ``None``. Never raises on a malformed body.
    """
    if not isinstance(body, dict):
        return None
    data = body.get("data")
    if not isinstance(data, list):
        return None
    entries = [entry for entry in data if isinstance(entry, dict)]
    for key in ("id", "root"):
        for entry in entries:
            if entry.get(key) == served_model:
                window = _window_of(entry)
                parent = entry.get("parent")
                if window is None and isinstance(parent, str) and parent and parent != entry.get("id"):
                    window = next((_window_of(e) for e in entries if e.get("id") == parent), None)
                return window
    return None


def _window_of(entry: Mapping[str, object]) -> int | None:
    for name in WINDOW_FIELDS:
        value = entry.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


# -- one bounded call to a backend (shared by discovery, /tokenize and the metrics scrape) -----


class BackendCallError(Exception):
    """A backend call that produced no response to read. ``kind`` is a bounded metric label:
    ``"timeout"`` (the total bound), ``"connect_error"``, ``"transport_error"``, ``"too_large"``,
    ``"invalid_request"`` (an unusable URL or header)."""

    def __init__(self, kind: str):
        super().__init__(kind)
        self.kind = kind


@dataclass(frozen=True)
class BackendResponse:
    """A backend's answer: HTTP status and the whole body (bytes)."""

    status: int
    content: bytes

    def json(self) -> object:
        """The body as JSON. Raises ``ValueError`` on anything else (bad UTF-8 included)."""
        return json.loads(self.content)

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")


async def bounded_request(
    client: httpx.AsyncClient,
    method: str,
    url: str,
    *,
    timeout_s: float,
    headers: Mapping[str, str] | None = None,
    json_body: object = None,
    max_bytes: int = MAX_BODY_BYTES,
) -> BackendResponse:
    """One request whose WHOLE exchange (connect, headers, body) ends within ``timeout_s``
    seconds of wall-clock time: httpx's own timeouts bound each read, so a server sending one
    byte every half second would otherwise never time out. Reads at most ``max_bytes``.

    Raises :class:`BackendCallError` (never an httpx error); any HTTP status is returned.
    """

    async def exchange() -> BackendResponse:
        async with client.stream(method, url, headers=headers, json=json_body) as response:
            chunks: list[bytes] = []
            size = 0
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size > max_bytes:
                    raise BackendCallError("too_large")
                chunks.append(chunk)
            return BackendResponse(response.status_code, b"".join(chunks))

    task = asyncio.ensure_future(exchange())
    try:
        # asyncio.wait, not wait_for: wait_for (Python 3.10/3.11) can swallow a cancellation of
        # the caller that coincides with the exchange finishing, and the caller then never stops
        done, _ = await asyncio.wait({task}, timeout=timeout_s)
    except BaseException:  # the caller was cancelled: the exchange goes with it
        task.cancel()
        raise
    if not done:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)  # closes the connection
        raise BackendCallError("timeout")
    try:
        return task.result()
    except httpx.TimeoutException:
        raise BackendCallError("timeout") from None
    except httpx.ConnectError:
        raise BackendCallError("connect_error") from None
    except httpx.HTTPError:
        raise BackendCallError("transport_error") from None
    except (httpx.InvalidURL, UnicodeError):  # a bad api_base, a key that is not ASCII
        raise BackendCallError("invalid_request") from None


def status_error(status: int) -> str | None:
    """Metric label of a failed HTTP status: ``None`` for 2xx, ``"unauthorized"`` for 401/403,
    else ``"http_<status>"``."""
    if 200 <= status < 300:
        return None
    if status in (401, 403):
        return "unauthorized"
    return f"http_{status}"


class UnauthorizedWarnings:
    """One WARNING per deployment whose backend refused the plugin's call with 401/403 on one
    endpoint; logged again only after a success in between (a key rotated twice)."""

    def __init__(self, log: logging.Logger, endpoint: str, consequence: str):
        self._log = log
        self._endpoint = endpoint
        self._consequence = consequence
        self._warned: set[Deployment] = set()

    def refused(self, deployment: Deployment, url: str, status: int) -> None:
        if deployment in self._warned:
            return
        self._warned.add(deployment)
        advice = (
            "the deployment's api_key was refused: check litellm_params.api_key against the backend's key"
            if deployment.api_key
            else "set the deployment's api_key (litellm_params.api_key, e.g. os.environ/NAME) to the backend's key"
        )
        self._log.warning("[CONTEXT-ROUTE] %s %s answered %d: %s; %s", self._endpoint, redact_url(url), status, advice, self._consequence)

    def accepted(self, deployment: Deployment) -> None:
        self._warned.discard(deployment)


# -- discovery ---------------------------------------------------------------------------------

Fetcher = Callable[[Deployment], Awaitable[int | None]]


class HttpWindowFetcher:
    """Reads one deployment's window with ``GET /v1/models`` (its key as a bearer token), within
    ``timeout_s`` seconds in total. Returns ``None`` on any failure, after calling
    ``on_error(deployment, kind)`` with ``kind`` one of :class:`BackendCallError`'s kinds,
    :func:`status_error`'s labels, ``"invalid_json"`` or ``"no_window"``. Never raises."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        on_error: Callable[[Deployment, str], None] | None = None,
    ):
        self._client = client
        self._timeout_s = timeout_s
        self._on_error = on_error
        self._refusals = UnauthorizedWarnings(
            logger, "GET", "its window stays unknown and the plugin makes no proactive decision for it"
        )

    async def __call__(self, deployment: Deployment) -> int | None:
        url = models_url(deployment.api_base)
        window, error = None, None
        try:
            response = await bounded_request(self._client, "GET", url, timeout_s=self._timeout_s, headers=deployment.auth_headers())
            error = status_error(response.status)
            if error == "unauthorized":
                self._refusals.refused(deployment, url, response.status)
            elif error is None:
                self._refusals.accepted(deployment)
                window = parse_models_response(response.json(), deployment.served_model)
                error = "no_window" if window is None else None
        except BackendCallError as exc:
            error = exc.kind
        except ValueError:
            error = "invalid_json"
        if error is not None:
            logger.debug("window discovery via %s failed: %s", redact_url(url), error)
            if self._on_error:
                self._on_error(deployment, error)
        return window


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
        self._entries[deployment] = WindowEntry(max_model_len=window, at=self._clock(), source=source)
        if previous is None or previous.max_model_len != window:
            logger.info(
                "[CONTEXT-ROUTE] window of %s model %r: %s (%s)", redact_url(deployment.api_base), deployment.served_model, window, source
            )
        if self._on_update:
            self._on_update(deployment, window)

"""The plugin's I/O services, created lazily inside the proxy's event loop and closed together.

One :class:`Services` per handler: the shared ``httpx.AsyncClient``, the window cache, the
exact counter, the cooldown store (Redis with memory fallback, or memory), the warm runner and
the optional backend scraper. Each is built on first use (LiteLLM imports the callback before
its event loop runs) and :meth:`Services.aclose` cancels every background task and closes every
client.
"""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import httpx

from .config import Settings
from .cooldown import CooldownStore, FallbackCooldownStore, MemoryCooldownStore, RedisCooldownStore
from .deadline import RequestBudget
from .exact import ExactCounter
from .learned_limits import LearnedLimits, LimitKind
from .metrics import Metrics, deployment_label
from .scrape import BackendScraper, PrefixCacheStats
from .warm import WarmOutcome, WarmRunner
from .warm_piece_size import LivePromptSizes
from .warm_arrivals import LiveArrivals
from .warm_pieces import PieceSender
from .backend_call import Deployment
from .window_fetch import HttpWindowFetcher
from .windows import WindowCache


def redis_url_from_env(settings_url: str, environ: Mapping[str, str]) -> str | None:
    """Redis for the cooldown store, as a URL; ``None`` when none is configured.

    The plugin's own setting wins; else LiteLLM's variables, read as LiteLLM 1.108.7 reads them
    (``litellm/_redis.py``: each ``REDIS_<KWARG>`` becomes a ``redis.Redis`` argument, and
    ``REDIS_URL`` outranks the others): ``REDIS_URL`` as is; else ``REDIS_HOST`` with
    ``REDIS_PORT`` (default 6379, redis-py's), ``REDIS_USERNAME`` / ``REDIS_PASSWORD``
    (URL-quoted, so ``@ # : /`` survive; redis-py unquotes them), ``REDIS_DB`` (default 0) and
    ``REDIS_SSL`` (``true``/``1``/``yes``, any case → ``rediss://``). Blank values count as unset.
    """
    if settings_url:
        return settings_url
    url = environ.get("REDIS_URL", "").strip()
    if url:
        return url
    host = environ.get("REDIS_HOST", "").strip()
    if not host:
        return None
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"  # an IPv6 literal
    scheme = "rediss" if environ.get("REDIS_SSL", "").strip().lower() in ("true", "1", "yes") else "redis"
    username = environ.get("REDIS_USERNAME", "")
    password = environ.get("REDIS_PASSWORD", "")
    userinfo = quote(username, safe="") + (":" + quote(password, safe="") if password else "")
    port = environ.get("REDIS_PORT", "").strip() or "6379"
    db = environ.get("REDIS_DB", "").strip() or "0"
    return f"{scheme}://{userinfo + '@' if userinfo else ''}{host}:{port}/{db}"


#: Redis socket timeouts (seconds): warm admission (off the request path) waits at most this on a slow or
#: dead Redis before the memory store answers. A full connection pool waits
#: as long for a free connection, then fails the same way (``ConnectionError``).
REDIS_TIMEOUT_S = 0.25


#: Query options of a Redis URL that redis-py would let override the plugin's bounds.
POOL_OPTIONS = frozenset({"max_connections", "timeout", "socket_timeout", "socket_connect_timeout"})


def without_pool_options(url: str) -> str:
    """``url`` without the :data:`POOL_OPTIONS` query options: redis-py's ``from_url`` lets the
    URL's options win over its keyword arguments, which would unbind the plugin's pool."""
    parts = urlsplit(url)
    if not parts.query:
        return url
    kept = [item for item in parts.query.split("&") if item and item.split("=", 1)[0] not in POOL_OPTIONS]
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "&".join(kept), parts.fragment))


def redis_client(url: str, *, max_connections: int, timeout_s: float = REDIS_TIMEOUT_S) -> Any:
    """A ``redis.asyncio.Redis`` on a bounded pool: at most ``max_connections`` connections; a
    command that finds them all busy waits ``timeout_s`` seconds for one, then raises
    ``redis.exceptions.ConnectionError("No connection available.")``, which
    :class:`~litellm_kvwarm.cooldown.RedisCooldownStore` reports as the store being unavailable
    (the request goes on with the memory store). Closing the client closes the pool. The URL's
    own pool and timeout options (a ``REDIS_URL`` shared with LiteLLM's cache may carry them) do
    not apply: see :func:`without_pool_options`."""
    import redis.asyncio as aioredis

    pool = aioredis.BlockingConnectionPool.from_url(
        without_pool_options(url),
        max_connections=max_connections,
        timeout=timeout_s,
        socket_timeout=timeout_s,
        socket_connect_timeout=timeout_s,
    )
    return aioredis.Redis.from_pool(pool)


class Services:
    """Lazily built I/O of one handler.

    Args:
        settings: plugin settings.
        metrics: collectors.
        send_warm: performs one warm request (``router.acompletion(**body)`` in the proxy); a warm
            is sent in pieces through it (:class:`~litellm_kvwarm.warm_pieces.PieceSender`).
        on_warm_done: ``(outcome, duration_s, target)`` when a warm ends.
        scrape_targets: the deployments to scrape (with their keys).
        served_model: a model group's served model name (what its template renders, for warm pieces).
        bridged: ``(group, kind)`` → whether the group renders only what its bridge sends (warm piece sizes).
        arrivals: the live requests sent to warm targets, which end the warms they supersede (:mod:`.warm_arrivals`).
        clock: monotonic seconds for the window cache and the exact counter's failure memory
            (request budgets always run on ``time.monotonic``: they time real waits).
        http_client: inject a client (tests); default one is created on first use.
        environ: environment for the Redis settings.
    """

    def __init__(
        self,
        settings: Settings,
        metrics: Metrics,
        *,
        send_warm: Callable[[str, dict[str, Any]], Awaitable[Any]],
        on_warm_done: Callable[[WarmOutcome, float, str], None],
        on_warm_outcome: Callable[[WarmOutcome, str], None] | None = None,
        scrape_targets: Callable[[], Iterable[Deployment]],
        served_model: Callable[[str], str | None] = lambda group: None,
        bridged: Callable[[str, str], bool] = lambda group, kind: False,
        arrivals: LiveArrivals | None = None,
        clock: Callable[[], float] = time.monotonic,
        http_client: httpx.AsyncClient | None = None,
        environ: Mapping[str, str] = os.environ,
    ):
        self._settings = settings
        self._metrics = metrics
        #: recent live prompt sizes per group: the piece size of warms at it (``KVWARM_WARM_PIECE_SHARE``)
        self.live_prompts = LivePromptSizes(settings.warm_piece_share)
        #: sends each warm, in pieces when its uncached part is large (``KVWARM_WARM_PIECE_TOKENS``)
        self.pieces = PieceSender(settings.warm_piece_tokens, send_warm, on_piece=metrics.warm_pieces, served_model=served_model,
                                  max_pieces=settings.warm_max_pieces, on_enlarged=metrics.warm_pieces_enlarged,
                                  piece_size=self._piece_size, bridged=bridged, arrivals=arrivals)
        self._on_warm_done = on_warm_done
        self._on_warm_outcome = on_warm_outcome
        self._scrape_targets = scrape_targets
        self._clock = clock
        self._environ = environ
        self._http = http_client
        self._windows: WindowCache | None = None
        self._learned: LearnedLimits | None = None
        self._exact: ExactCounter | None = None
        self._cooldown: CooldownStore | None = None
        self._warmer: WarmRunner | None = None
        self._scraper: BackendScraper | None = None

    @property
    def http(self) -> httpx.AsyncClient:
        if self._http is None:
            self._http = httpx.AsyncClient(timeout=self._settings.discovery_timeout_s)
        return self._http

    def request_budget(self, spent_s: object = None) -> RequestBudget:
        """A request's I/O budget (``KVWARM_REQUEST_BUDGET_MS``), continuing ``spent_s`` (the value
        an earlier hook of the same request stored with :meth:`RequestBudget.to_metadata`)."""
        return RequestBudget.from_metadata(spent_s, self._settings.request_budget_ms / 1000)

    @property
    def windows(self) -> WindowCache:
        if self._windows is None:
            fetcher = HttpWindowFetcher(self.http, timeout_s=self._settings.discovery_timeout_s, on_error=self._discovery_error)
            self._windows = WindowCache(
                fetcher,
                ttl_s=self._settings.window_ttl_s,
                unknown_retry_s=self._settings.unknown_window_retry_s,
                clock=self._clock,
                on_update=self._window_updated,
                on_budget_exhausted=lambda: self._metrics.budget_exhausted.labels("window").inc(),
            )
        return self._windows

    @property
    def learned(self) -> LearnedLimits:
        """Limits backend rejections revealed, per tenant and deployment (expire with the window TTL)."""
        if self._learned is None:
            self._learned = LearnedLimits(ttl_s=self._settings.window_ttl_s, clock=self._clock, on_learn=self._limit_learned)
        return self._learned

    @property
    def exact(self) -> ExactCounter:
        if self._exact is None:
            self._exact = ExactCounter(
                self.http,
                timeout_s=self._settings.discovery_timeout_s,
                retry_s=self._settings.unknown_window_retry_s,
                clock=self._clock,
                on_error=lambda deployment, error: self._discovery_error(deployment, f"tokenize_{error}"),
                on_budget_exhausted=lambda: self._metrics.budget_exhausted.labels("exact_count").inc(),
            )
        return self._exact

    @property
    def cooldown(self) -> CooldownStore:
        if self._cooldown is None:
            memory = MemoryCooldownStore(capacity=self._settings.warm_memory_sessions)
            url = redis_url_from_env(self._settings.redis_url, self._environ)
            if url:
                client = redis_client(url, max_connections=self._settings.redis_max_connections)
                self._cooldown = FallbackCooldownStore(
                    RedisCooldownStore(client),
                    memory,
                    on_fallback=lambda error: self._metrics.cooldown_fallbacks.labels(error).inc(),
                )
            else:
                self._cooldown = memory
        return self._cooldown

    @property
    def warmer(self) -> WarmRunner:
        if self._warmer is None:
            self._warmer = WarmRunner(
                self.pieces.send,
                cooldown=lambda: self.cooldown,
                cooldown_s=self._settings.warm_cooldown_s,
                tenant_rate=self._settings.warm_tenant_rate,
                max_concurrency=self._settings.warm_max_concurrency,
                queue_size=self._settings.warm_queue_size,
                queue_bytes=self._settings.warm_queue_bytes,
                timeout_s=self._settings.warm_timeout_s,
                on_done=self._on_warm_done,
                on_outcome=self._on_warm_outcome,
                on_queue_depth=self._metrics.warm_queue_depth.set,
                on_drop=lambda reason, target: self._metrics.warm_queue_drops.labels(reason.value).inc(),
            )
        return self._warmer

    def start_background(self) -> None:
        """Start the backend scraper once, if configured (needs the running loop)."""
        if self._settings.backend_scrape_interval_s <= 0 or self._scraper is not None:
            return
        self._scraper = BackendScraper(
            self.http,
            self._scrape_targets,
            self._scraped,
            interval_s=self._settings.backend_scrape_interval_s,
            timeout_s=self._settings.discovery_timeout_s,
            on_error=lambda deployment, error: self._discovery_error(deployment, f"scrape_{error}"),
        )
        self._scraper.start()

    def _piece_size(self, target: str, configured: int) -> int:
        size = self.live_prompts.piece_tokens(target, configured)
        self._metrics.warm_piece_tokens.labels(target).set(size)
        return size

    def _discovery_error(self, deployment: Deployment, error: str) -> None:
        self._metrics.discovery_errors.labels(deployment_label(deployment.api_base, deployment.served_model), error).inc()

    def _window_updated(self, deployment: Deployment, window: int | None) -> None:
        label = deployment_label(deployment.api_base, deployment.served_model)
        self._metrics.window.labels(label).set(window or 0)

    def _limit_learned(self, deployment: Deployment, kind: LimitKind, tokens: int, family: str) -> None:
        label = deployment_label(deployment.api_base, deployment.served_model)
        self._metrics.learned_limit.labels(label, kind.value).set(tokens)
        self._metrics.limits_learned.labels(label, kind.value, family).inc()

    def _scraped(self, deployment: Deployment, stats: PrefixCacheStats) -> None:
        label = deployment_label(deployment.api_base, deployment.served_model)
        self._metrics.backend_prefix_cache_queries.labels(label).set(stats.queries)
        self._metrics.backend_prefix_cache_hits.labels(label).set(stats.hits)
        if stats.hit_ratio is not None:
            self._metrics.backend_prefix_cache_hit_ratio.labels(label).set(stats.hit_ratio)

    async def aclose(self) -> None:
        """Cancel warms, scrapes and background discovery; close the cooldown store and HTTP client."""
        if self._scraper is not None:
            await self._scraper.aclose()
        if self._warmer is not None:
            await self._warmer.aclose()
        if self._cooldown is not None:
            await self._cooldown.aclose()
        if self._windows is not None:
            await self._windows.aclose()
        if self._exact is not None:
            await self._exact.aclose()
        if self._http is not None:
            await self._http.aclose()

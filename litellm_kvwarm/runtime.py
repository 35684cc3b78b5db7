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

import httpx

from .config import Settings
from .cooldown import CooldownStore, FallbackCooldownStore, MemoryCooldownStore, RedisCooldownStore
from .exact import ExactCounter
from .metrics import Metrics, deployment_label
from .scrape import BackendScraper, PrefixCacheStats
from .warm import WarmOutcome, WarmRunner
from .windows import Deployment, HttpWindowFetcher, WindowCache


def redis_url_from_env(settings_url: str, environ: Mapping[str, str]) -> str | None:
    """Redis for the cooldown store: the plugin setting, else ``REDIS_URL``, else LiteLLM's
    ``REDIS_HOST`` / ``REDIS_PORT`` / ``REDIS_PASSWORD``; ``None`` when none is configured."""
    if settings_url:
        return settings_url
    if environ.get("REDIS_URL"):
        return environ["REDIS_URL"]
    host = environ.get("REDIS_HOST")
    if host:
        password = environ.get("REDIS_PASSWORD")
        auth = f":{password}@" if password else ""
        return f"redis://{auth}{host}:{environ.get('REDIS_PORT', '6379')}/0"
    return None


#: Redis socket timeouts (seconds): the cooldown check is on the request path, so a slow or
#: dead Redis costs at most this before the memory store answers.
REDIS_TIMEOUT_S = 0.25


class Services:
    """Lazily built I/O of one handler.

    Args:
        settings: plugin settings.
        metrics: collectors.
        send_warm: performs one warm request (``router.acompletion(**body)`` in the proxy).
        on_warm_done: ``(outcome, duration_s, target)`` when a warm ends.
        scrape_targets: ``(label, api_base, served_model)`` of the backends to scrape.
        clock: monotonic seconds for the window cache.
        http_client: inject a client (tests); default one is created on first use.
        environ: environment for the Redis settings.
    """

    def __init__(
        self,
        settings: Settings,
        metrics: Metrics,
        *,
        send_warm: Callable[[dict[str, Any]], Awaitable[Any]],
        on_warm_done: Callable[[WarmOutcome, float, str], None],
        scrape_targets: Callable[[], Iterable[tuple[str, str, str]]],
        clock: Callable[[], float] = time.monotonic,
        http_client: httpx.AsyncClient | None = None,
        environ: Mapping[str, str] = os.environ,
    ):
        self._settings = settings
        self._metrics = metrics
        self._send_warm = send_warm
        self._on_warm_done = on_warm_done
        self._scrape_targets = scrape_targets
        self._clock = clock
        self._environ = environ
        self._http = http_client
        self._windows: WindowCache | None = None
        self._exact: ExactCounter | None = None
        self._cooldown: CooldownStore | None = None
        self._warmer: WarmRunner | None = None
        self._scraper: BackendScraper | None = None

    @property
    def http(self) -> httpx.AsyncClient:
        if self._http is None:
            self._http = httpx.AsyncClient(timeout=self._settings.discovery_timeout_s)
        return self._http

    @property
    def windows(self) -> WindowCache:
        if self._windows is None:
            fetcher = HttpWindowFetcher(self.http, on_error=self._discovery_error)
            self._windows = WindowCache(
                fetcher,
                ttl_s=self._settings.window_ttl_s,
                budget_s=self._settings.discovery_budget_s,
                unknown_retry_s=self._settings.unknown_window_retry_s,
                clock=self._clock,
                on_update=self._window_updated,
            )
        return self._windows

    @property
    def exact(self) -> ExactCounter:
        if self._exact is None:
            self._exact = ExactCounter(self.http, budget_s=self._settings.discovery_budget_s)
        return self._exact

    @property
    def cooldown(self) -> CooldownStore:
        if self._cooldown is None:
            memory = MemoryCooldownStore(capacity=self._settings.warm_memory_sessions)
            url = redis_url_from_env(self._settings.redis_url, self._environ)
            if url:
                import redis.asyncio as aioredis

                client = aioredis.Redis.from_url(url, socket_timeout=REDIS_TIMEOUT_S, socket_connect_timeout=REDIS_TIMEOUT_S)
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
                self._send_warm,
                max_concurrency=self._settings.warm_max_concurrency,
                timeout_s=self._settings.warm_timeout_s,
                on_done=self._on_warm_done,
            )
        return self._warmer

    def start_background(self) -> None:
        """Start the backend scraper once, if configured (needs the running loop)."""
        if self._settings.backend_scrape_interval_s <= 0 or self._scraper is not None:
            return
        self._scraper = BackendScraper(
            self.http, self._scrape_targets, self._scraped, interval_s=self._settings.backend_scrape_interval_s
        )
        self._scraper.start()

    def _discovery_error(self, deployment: Deployment, error: str) -> None:
        self._metrics.discovery_errors.labels(deployment_label(deployment.api_base, deployment.served_model), error).inc()

    def _window_updated(self, deployment: Deployment, window: int | None) -> None:
        label = deployment_label(deployment.api_base, deployment.served_model)
        self._metrics.window.labels(label).set(window or 0)

    def _scraped(self, label: str, stats: PrefixCacheStats) -> None:
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
        if self._http is not None:
            await self._http.aclose()

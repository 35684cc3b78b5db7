"""Opt-in scrape of each vLLM backend's own ``/metrics``: the prefix-cache hit ratio that the
backend measures (all its traffic, warms included), next to the plugin's warm-excluded one.

vLLM (V1 engine, ≥ 0.8) exports ``vllm:prefix_cache_queries_total`` and
``vllm:prefix_cache_hits_total`` (tokens queried and hit), labelled by ``model_name``.
:func:`parse_prefix_cache` is pure; :class:`BackendScraper` owns one background task. Each
scrape sends the deployment's key as a bearer token (``vllm --api-key`` leaves ``/metrics``
open, proxies in front of it may not) and ends within ``timeout_s`` of wall-clock time.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

import httpx
from prometheus_client.parser import text_string_to_metric_families

from .backend_call import DEFAULT_TIMEOUT_S, BackendCallError, Deployment, UnauthorizedWarnings, bounded_request, redact_url, status_error

logger = logging.getLogger("litellm_kvwarm.scrape")

QUERIES = "vllm:prefix_cache_queries"
HITS = "vllm:prefix_cache_hits"


@dataclass(frozen=True)
class PrefixCacheStats:
    """Lifetime counters of one backend, tokens."""

    queries: float
    hits: float

    @property
    def hit_ratio(self) -> float | None:
        return self.hits / self.queries if self.queries > 0 else None


def parse_prefix_cache(text: str, served_model: str | None = None) -> PrefixCacheStats | None:
    """Sum the two counters in a Prometheus text page (only ``model_name=served_model`` samples
    when given). ``None`` when the page has neither counter or does not parse."""
    queries = hits = 0.0
    seen = False
    try:
        for family in text_string_to_metric_families(text):
            if family.name not in (QUERIES, HITS):
                continue
            for sample in family.samples:
                if not sample.name.endswith("_total"):
                    continue
                if served_model is not None and sample.labels.get("model_name", served_model) != served_model:
                    continue
                seen = True
                if family.name == QUERIES:
                    queries += sample.value
                else:
                    hits += sample.value
    except ValueError:
        return None
    return PrefixCacheStats(queries=queries, hits=hits) if seen else None


def metrics_url(api_base: str) -> str:
    """vLLM serves ``/metrics`` at the server root: ``http://h:p/v1`` → ``http://h:p/metrics``."""
    base = api_base.rstrip("/")
    return (base[: -len("/v1")] if base.endswith("/v1") else base) + "/metrics"


class BackendScraper:
    """Every ``interval_s`` seconds, scrape each target and call ``on_stats(deployment, stats)``.

    Args:
        client: shared ``httpx.AsyncClient``.
        targets: returns the current deployments (read each round, so deployments added by a
            config reload are picked up; equal deployments are scraped once).
        on_stats: receives each answering deployment's counters.
        interval_s: seconds between rounds.
        timeout_s: total wall-clock bound of one scrape, body included.
        on_error: ``(deployment, kind)`` per failed scrape (kinds as in
            :class:`~litellm_kvwarm.window_fetch.HttpWindowFetcher`).
        sleep: injected for tests.
    """

    def __init__(
        self,
        client: httpx.AsyncClient,
        targets: Callable[[], Iterable[Deployment]],
        on_stats: Callable[[Deployment, PrefixCacheStats], None],
        *,
        interval_s: float,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        on_error: Callable[[Deployment, str], None] | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ):
        self._client = client
        self._targets = targets
        self._on_stats = on_stats
        self._interval_s = interval_s
        self._timeout_s = timeout_s
        self._on_error = on_error
        self._sleep = sleep
        self._task: asyncio.Task[None] | None = None
        self._refusals = UnauthorizedWarnings(logger, "GET", "its prefix-cache counters are not exported")

    def start(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._loop(), name="kvwarm-backend-scrape")

    async def scrape_once(self) -> int:
        """One round; returns how many backends answered with counters."""
        answered = 0
        for deployment in dict.fromkeys(self._targets()):
            url = metrics_url(deployment.api_base)
            try:
                response = await bounded_request(self._client, "GET", url, timeout_s=self._timeout_s, headers=deployment.auth_headers())
            except BackendCallError as exc:
                self._failed(deployment, url, exc.kind)
                continue
            error = status_error(response.status)
            if error is not None:
                if error == "unauthorized":
                    self._refusals.refused(deployment, url, response.status)
                self._failed(deployment, url, error)
                continue
            self._refusals.accepted(deployment)
            stats = parse_prefix_cache(response.text, deployment.served_model)
            if stats is None:  # not a vLLM page (SGLang, a proxy): nothing to export, not an error
                continue
            answered += 1
            self._on_stats(deployment, stats)
        return answered

    def _failed(self, deployment: Deployment, url: str, kind: str) -> None:
        logger.debug("scrape of %s failed: %s", redact_url(url), kind)
        if self._on_error:
            self._on_error(deployment, kind)

    async def _loop(self) -> None:
        while True:
            try:
                await self.scrape_once()
            except Exception:  # a scrape bug must not end the loop or touch requests
                logger.warning("backend scrape round failed", exc_info=True)
            await self._sleep(self._interval_s)

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

"""Exact prompt-token counts from the backend's own ``POST /tokenize`` (vLLM).

vLLM serves ``/tokenize`` at the server root (not under ``/v1``). With ``messages`` (and
``tools``) it applies the model's chat template and answers
``{"count": N, "max_model_len": W, "tokens": [...]}`` (vLLM ≥ 0.5). The count is the
prompt the server will see, so a clamp on it cannot overflow and does not over-cut.

Used only when the safe estimate would cut the requested output: a count costs one
round trip and a template render on the backend. Behind ``vllm --api-key`` the root
``/tokenize`` is not protected, but the deployment's key is sent anyway (other servers, and
proxies in front of vLLM, protect every path).

Failure memory, per (tenant, deployment) (what one tenant's request does, e.g. a body of large images
that makes ``/tokenize`` overrun the budget, never turns exact counts off for another tenant):

* 404/405: the backend offers no ``/tokenize``; never asked again (logged once).
* A count that overran the request's budget, a timeout, a refused connection, 401/403
  (logged once at WARNING), 408/429/5xx, or a body that is not a count: not asked again for
  ``retry_s`` seconds, so a hung endpoint costs one budget per interval, not one per request.
* Other 4xx (the request's own content): not remembered.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping

import httpx

from .deadline import RequestBudget
from .backend_call import DEFAULT_TIMEOUT_S, BackendCallError, Deployment, UnauthorizedWarnings, bounded_request, redact_url, status_error

logger = logging.getLogger("litellm_kvwarm.exact")

#: Request-body keys that change the rendered prompt and are forwarded to /tokenize.
TOKENIZE_KEYS = ("messages", "tools", "chat_template", "chat_template_kwargs", "add_generation_prompt")
#: Seconds a failed or overrun count keeps the deployment from being asked again.
DEFAULT_RETRY_S = 30.0
#: Statuses that say "this backend cannot count now", not "this request is wrong".
_REMEMBERED_STATUSES = frozenset({401, 403, 408, 429})
#: (tenant, deployment) failures remembered at most.
MAX_REMEMBERED = 4096

_PENDING = object()


def tokenize_url(api_base: str) -> str:
    """``http://h:p/v1`` → ``http://h:p/tokenize`` (vLLM serves it at the root)."""
    base = api_base.rstrip("/")
    if base.endswith("/v1"):
        base = base[: -len("/v1")]
    return base + "/tokenize"


class ExactCounter:
    """Counts prompt tokens with a backend's ``/tokenize``, within a request's budget.

    Args:
        client: shared ``httpx.AsyncClient``.
        timeout_s: total wall-clock bound of one ``/tokenize`` exchange, body included.
        retry_s: seconds a deployment whose count failed or overran is not asked again.
        clock: monotonic seconds (injected for tests).
        on_error: ``(deployment, kind)`` per failed count; ``kind`` as in
            :class:`~litellm_kvwarm.window_fetch.HttpWindowFetcher`, plus ``"invalid_count"``.
        on_budget_exhausted: called when :meth:`count` answers ``None`` for want of budget, or
            because the deployment failed or overran recently.
    """

    def __init__(
        self,
        client: httpx.AsyncClient,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        retry_s: float = DEFAULT_RETRY_S,
        clock: Callable[[], float] = time.monotonic,
        on_error: Callable[[Deployment, str], None] | None = None,
        on_budget_exhausted: Callable[[], None] | None = None,
    ):
        self._client = client
        self._timeout_s = timeout_s
        self._retry_s = retry_s
        self._clock = clock
        self._on_error = on_error
        self._on_budget_exhausted = on_budget_exhausted
        self._unsupported: set[Deployment] = set()
        self._failed_until: dict[tuple[str | None, Deployment], float] = {}
        self._tasks: set[asyncio.Task[int | None]] = set()
        self._refusals = UnauthorizedWarnings(logger, "POST", "exact counts are off for it and clamps stay on the estimate")

    async def count(self, deployment: Deployment, payload: Mapping[str, object], budget: RequestBudget,
                    tenant: str | None = None) -> int | None:
        """Exact prompt tokens of a chat ``payload`` on ``deployment``, or ``None`` (unsupported,
        not a chat request, failed recently for ``tenant`` (its keyed hash), error, or past the
        budget; the wall time waited is booked on ``budget``). Never raises."""
        if not isinstance(payload.get("messages"), list) or deployment in self._unsupported:
            return None
        key = (tenant, deployment)
        until = self._failed_until.get(key)
        if (until is not None and self._clock() < until) or budget.exhausted:
            self._exhausted()
            return None
        body: dict[str, object] = {"model": deployment.served_model}
        body.update({key: payload[key] for key in TOKENIZE_KEYS if payload.get(key) is not None})
        body.setdefault("add_generation_prompt", True)
        task = asyncio.get_running_loop().create_task(self._request(deployment, body, key))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        result = await budget.wait(task, _PENDING)
        if result is _PENDING:
            # a late answer serves nobody (counts are per request): back off for the interval
            self._remember(key)
            logger.debug("exact count on %r overran the request budget; not asked again for %.0fs", deployment, self._retry_s)
            self._exhausted()
            return None
        return result  # type: ignore[return-value]

    async def aclose(self) -> None:
        """Cancel and await counts still running in the background."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _request(self, deployment: Deployment, body: dict[str, object], key: tuple[str | None, Deployment]) -> int | None:
        url = tokenize_url(deployment.api_base)
        try:
            response = await bounded_request(
                self._client, "POST", url, timeout_s=self._timeout_s, headers=deployment.auth_headers(), json_body=body
            )
        except BackendCallError as exc:
            return self._failed(key, url, exc.kind, remember=True)
        if response.status in (404, 405):
            if deployment not in self._unsupported:
                logger.info("[CONTEXT-ROUTE] %s answered %d: no exact counts for %r", redact_url(url), response.status, deployment)
            self._unsupported.add(deployment)
            return None
        error = status_error(response.status)
        if error is not None:
            if error == "unauthorized":
                self._refusals.refused(deployment, url, response.status)
            remember = response.status in _REMEMBERED_STATUSES or response.status >= 500
            return self._failed(key, url, error, remember=remember)
        self._refusals.accepted(deployment)
        try:
            answer = response.json()
        except ValueError:
            return self._failed(key, url, "invalid_json", remember=True)
        count = answer.get("count") if isinstance(answer, dict) else None
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            return self._failed(key, url, "invalid_count", remember=True)
        return count

    def _failed(self, key: tuple[str | None, Deployment], url: str, kind: str, *, remember: bool) -> None:
        logger.debug("exact count via %s failed: %s", redact_url(url), kind)
        if remember:
            self._remember(key)
        if self._on_error:
            self._on_error(key[1], kind)
        return None

    def _remember(self, key: tuple[str | None, Deployment]) -> None:
        now = self._clock()
        if len(self._failed_until) >= MAX_REMEMBERED:  # bounded: expired entries go first, then the oldest
            self._failed_until = {k: t for k, t in self._failed_until.items() if t > now}
            while len(self._failed_until) >= MAX_REMEMBERED:
                self._failed_until.pop(next(iter(self._failed_until)))
        self._failed_until[key] = now + self._retry_s

    def _exhausted(self) -> None:
        if self._on_budget_exhausted:
            self._on_budget_exhausted()

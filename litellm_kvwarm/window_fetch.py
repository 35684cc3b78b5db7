"""Reading a deployment's context window from its own ``GET {api_base}/models``
(``max_model_len``): the URL (:func:`models_url`), the pure parser (:func:`parse_models_response`)
and the fetcher the window cache calls (:class:`HttpWindowFetcher`, one bounded call).

``max_model_len`` is served by vLLM's ``/v1/models`` since about 0.5; SGLang and some
others use other field names (``context_length``, ``max_context_length``), read too. vLLM
lists LoRA adapters with ``max_model_len: null`` and ``parent`` = the base model's id: an
adapter's window is its parent's.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping

import httpx

from .backend_call import (
    DEFAULT_TIMEOUT_S,
    BackendCallError,
    Deployment,
    UnauthorizedWarnings,
    bounded_request,
    redact_url,
    status_error,
)

# the logger of discovery since before the split (operators filter on it)
logger = logging.getLogger("litellm_kvwarm.windows")

#: Fields of a ``/v1/models`` entry that carry the context window, in order of trust.
WINDOW_FIELDS = ("max_model_len", "context_length", "max_context_length", "context_window")

#: Reads one deployment's window in tokens, ``None`` when unknown; never raises.
Fetcher = Callable[[Deployment], Awaitable[int | None]]


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

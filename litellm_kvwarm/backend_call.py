"""One bounded call from the plugin to a backend, shared by window discovery
(:mod:`~litellm_kvwarm.window_fetch`), ``/tokenize`` (:mod:`~litellm_kvwarm.exact`) and the
``/metrics`` scrape (:mod:`~litellm_kvwarm.scrape`): the :class:`Deployment` it is addressed to,
:func:`bounded_request` (a total wall-clock bound and a body-size bound), the bounded metric
labels of a failure (:class:`BackendCallError`, :func:`status_error`), :func:`redact_url` for
log lines and :class:`UnauthorizedWarnings` (one WARNING per refused deployment).

A deployment is keyed by ``(api_base, served model)``, never by the LiteLLM group name: one
backend can be a swap slot that serves different models over time, and a group can hold
deployments with different windows. Its ``api_key`` (the backend's own key, as LiteLLM resolves
it) is sent as ``Authorization: Bearer`` but is no part of its identity and never appears in a
log line.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

import httpx

#: Total wall-clock bound of one plugin call to a backend, body included (seconds).
DEFAULT_TIMEOUT_S = 5.0
#: Largest response body the plugin reads from a backend (bytes); more is an error.
MAX_BODY_BYTES = 8 * 1024 * 1024
#: Transport errors that mean "this connection is gone", sent again (:func:`bounded_request`) if no header came.
STALE_CONNECTION = (httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError)
#: Sends of one call in all: the first, and one on a new connection after a stale pooled one.
SEND_ATTEMPTS = 2


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

    A request whose connection fails before any response header arrives (``ReadError``, ``WriteError``,
    ``RemoteProtocolError``: a pooled keep-alive connection the backend closed as it was reused; uvicorn,
    vLLM's server, closes idle ones after 5 s, gunicorn after 2 s) is sent again on a new connection,
    :data:`SEND_ATTEMPTS` in all, within the same bound; every call made here is idempotent (``GET
    /v1/models``, ``GET /metrics``, ``POST /tokenize``). A failure after the headers is not retried.

    Raises :class:`BackendCallError` (never an httpx error); any HTTP status is returned.
    """

    async def open_response() -> httpx.Response:
        request = client.build_request(method, url, headers=headers, json=json_body)
        for _ in range(SEND_ATTEMPTS - 1):
            try:
                return await client.send(request, stream=True)
            except STALE_CONNECTION:  # no header came: a pooled connection the backend had closed
                pass
        return await client.send(request, stream=True)

    async def exchange() -> BackendResponse:
        response = await open_response()
        try:
            chunks: list[bytes] = []
            size = 0
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size > max_bytes:
                    raise BackendCallError("too_large")
                chunks.append(chunk)
            return BackendResponse(response.status_code, b"".join(chunks))
        finally:
            await response.aclose()

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

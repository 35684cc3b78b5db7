"""A recording tap: an HTTP pass-through in front of one real vLLM server that keeps the emulator's
request log, so the benchmark's replay can attribute attempts, failures and warms on real vLLM.

``python -m litellm_kvwarm.lab.bench.tap --upstream http://127.0.0.1:PORT --port N [--request-log FILE]``

**Forwarding.** Every request (any method and path, query string, headers except hop-by-hop ones,
body bytes) goes to ``--upstream`` unchanged (sent again on a fresh connection if a pooled one fails
before any response byte, :func:`_send`); the upstream's status code, headers (less hop-by-hop ones and
``content-length``/``content-encoding``: the body is re-sent decoded) and body come back. Streamed
answers pass chunk by chunk; everything else is read whole. The tap's own ``/health`` is the upstream's.

**Recording.** For each ``POST /v1/chat/completions``, ``/v1/completions`` and ``/v1/responses`` it appends one entry
shaped as :func:`litellm_kvwarm.lab.emulator.request_log.make_entry`, served at ``GET /emulator/requests``
(``{"requests": [...]}``; ``DELETE`` clears it) and mirrored to ``--request-log`` as JSON lines, so
:func:`litellm_kvwarm.lab.bench.replay.backend_log` and the demo read a tap as they read an emulator. Sources:

* ``endpoint``, ``model``, ``stream``, ``max_tokens`` (``max_completion_tokens`` if set, else
  ``max_tokens``; on ``/v1/responses`` ``max_output_tokens``; as received, ``null`` if absent),
  ``cache_salt`` (sha256 fingerprint), ``priority`` (top level, as vLLM receives it; 0 if absent): the request body;
* ``status``: the upstream's HTTP status; ``error``: the upstream's ``error.message`` (or its body
  text) for a status ≥ 400, the ``error`` of an error event inside a stream, or
  ``"client disconnected"`` when the client left before the stream ended (as the emulator);
* ``prompt_tokens``, ``cached_tokens`` (``usage.prompt_tokens_details.cached_tokens``; vLLM sends it
  only with ``--enable-prompt-tokens-details``), ``completion_tokens``: the response's ``usage``.
  A streamed response carries ``usage`` only in its last event, and only when the request asked for
  ``stream_options.include_usage`` (the demo and benchmark always do; LiteLLM forwards it to ``hosted_vllm``).
  Without ``usage`` (a stream without ``include_usage``; every error: vLLM's error body holds no count)
  these are ``null``. A Responses answer's ``usage`` (``input_tokens``,
  ``input_tokens_details.cached_tokens``, ``output_tokens``; streamed: in ``response.completed``)
  is read in the chat shape by :mod:`litellm_kvwarm.lab.sse_apis`;
* ``ttft_s``: seconds from the request's arrival at the tap to the first streamed event with
  non-empty ``choices`` (vLLM sends its role chunk with the first generated token: prefill + first decode
  step as the server delivers it; Responses: the first ``*.delta`` event), on the tap's monotonic clock;
  ``null`` for non-streamed requests (nothing arrives before the whole answer) and errors;
* ``ts``: unix seconds when the entry was recorded (the response's end), as the emulator.

**A measurement device.** The tap adds one local HTTP hop (client → tap → vLLM) and parses every SSE
event it passes on: on this project's 2-core VM (median of 20 alternating tiny streamed requests,
``max_tokens=1``, to the real slow vLLM server, :func:`litellm_kvwarm.lab.bench.vllm_scale.tap_overhead`)
6.7 ms direct, 9.7 ms through the tap, **+3.0 ms** (+2.5 and +5.1 ms in two other runs); ``kvwarm bench
--scale vllm`` measures it in every run. A tap ``ttft_s`` includes the tap's share of that hop, never the proxy's.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import httpx
from fastapi import FastAPI, Request
from fastapi.responses import Response, StreamingResponse

from ..emulator.request_log import RequestLog, make_entry
from ..sse import ChunkedDataLines
from ..sse_apis import API_OF_PATH, chat_usage, is_error, is_first_token, usage_of

__all__ = ["RECORDED_PATHS", "create_app", "main"]

logger = logging.getLogger("litellm_kvwarm.lab.bench.tap")

RECORDED_PATHS = ("/v1/chat/completions", "/v1/completions", "/v1/responses")
LOG_PATH = "/emulator/requests"
#: Not forwarded either way (RFC 9110 §7.6.1), plus what the tap recomputes.
HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer",
                        "transfer-encoding", "upgrade", "host", "content-length", "content-encoding"})
#: A cold 16k-token prefill on a busy CPU takes tens of seconds; the client decides when to give up.
UPSTREAM_TIMEOUT_S = 600.0
#: Idle pooled connections are dropped before the upstream's own keep-alive timeout (uvicorn's 5 s) ends them.
KEEPALIVE_EXPIRY_S = 2.0
STALE_CONNECTION = (httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError)
SEND_ATTEMPTS = 3
ERROR_CHARS = 500


def _forward_headers(headers: Any) -> dict[str, str]:
    return {k: v for k, v in headers.items() if k.lower() not in HOP_BY_HOP}


def _max_tokens_as_received(body: dict[str, Any]) -> Any:
    """``max_completion_tokens`` if set, else ``max_tokens`` (vLLM's precedence), else Responses'
    ``max_output_tokens``, unchecked."""
    if "max_output_tokens" in body:
        return body["max_output_tokens"]
    value = body.get("max_completion_tokens")
    return body.get("max_tokens") if value is None else value


def _error_text(content: bytes) -> str:
    """``error.message`` of a vLLM/OpenAI error body (or top-level ``message``), else the text."""
    text = content.decode("utf-8", errors="replace")
    try:
        data = json.loads(text)
    except ValueError:
        return text[:ERROR_CHARS]
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return error["message"]
        if isinstance(error, str):
            return error
        if isinstance(data.get("message"), str):
            return data["message"]
    return text[:ERROR_CHARS]


class _Record:
    """What one generation request has shown so far; becomes one log entry."""

    def __init__(self, endpoint: str, raw_body: bytes, arrived: float) -> None:
        try:
            body = json.loads(raw_body)
        except ValueError:
            body = None
        self.body: dict[str, Any] = body if isinstance(body, dict) else {}
        self.endpoint = endpoint
        self.api = API_OF_PATH.get(endpoint, "chat")
        self.arrived = arrived
        self.status = 0
        self.usage: dict[str, Any] | None = None
        self.error: str | None = None
        self.ttft_s: float | None = None

    def take_usage(self, usage: Any) -> None:
        usage = chat_usage(self.api, usage)
        if usage:
            self.usage = usage

    def see_event(self, payload: str) -> None:
        """One SSE ``data:`` payload of a streamed answer."""
        if payload == "[DONE]":
            return
        try:
            chunk = json.loads(payload)
        except ValueError:
            return
        if not isinstance(chunk, dict):
            return
        if is_error(self.api, chunk) and self.error is None:
            error = chunk.get("error") or (chunk.get("response") or {}).get("error") or chunk
            self.error = error.get("message") if isinstance(error, dict) else str(error)
        if self.ttft_s is None and is_first_token(self.api, chunk):
            self.ttft_s = time.monotonic() - self.arrived
        usage = usage_of(self.api, chunk)
        if usage:
            self.usage = usage

    def entry(self) -> dict[str, Any]:
        usage = self.usage or {}
        details = usage.get("prompt_tokens_details") or {}
        return make_entry(
            endpoint=self.endpoint, model=self.body.get("model"), prompt_tokens=usage.get("prompt_tokens"),
            max_tokens=_max_tokens_as_received(self.body), cached_tokens=details.get("cached_tokens"),
            completion_tokens=usage.get("completion_tokens"), status=self.status, error=self.error,
            stream=self.body.get("stream") is True, cache_salt=self.body.get("cache_salt") or None,
            ttft_s=self.ttft_s, priority=self.body.get("priority", 0),
        )


async def _send(client: httpx.AsyncClient, outgoing: httpx.Request) -> httpx.Response:
    """``client.send(outgoing, stream=True)``, sent again (up to :data:`SEND_ATTEMPTS` in all) when the
    connection fails before any response byte: a pooled keep-alive connection the upstream closed as
    the tap reused it (uvicorn, vLLM's server, closes idle ones after 5 s) answers a reset or nothing.
    Raises the last ``httpx.HTTPError``."""
    for _ in range(SEND_ATTEMPTS - 1):
        try:
            return await client.send(outgoing, stream=True)
        except STALE_CONNECTION as exc:
            logger.info("tap: %s %s: %s before any response; sending it again", outgoing.method, outgoing.url.path,
                        type(exc).__name__)
    return await client.send(outgoing, stream=True)


def create_app(upstream: str, log: RequestLog) -> FastAPI:
    """The tap's app: forwards everything to ``upstream`` (``http://host:port``, no ``/v1``), records
    generation requests into ``log`` (see module docstring)."""
    clients: dict[str, httpx.AsyncClient] = {}

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        limits = httpx.Limits(max_keepalive_connections=32, keepalive_expiry=KEEPALIVE_EXPIRY_S)
        clients["upstream"] = httpx.AsyncClient(base_url=upstream.rstrip("/"), timeout=UPSTREAM_TIMEOUT_S,
                                                trust_env=False, limits=limits)
        try:
            yield
        finally:
            await clients.pop("upstream").aclose()

    app = FastAPI(title="litellm-kvwarm recording tap", docs_url=None, redoc_url=None, openapi_url=None,
                  lifespan=lifespan)
    app.state.request_log = log

    def record(rec: _Record) -> None:
        log.append(rec.entry())

    @app.get(LOG_PATH)
    async def list_requests() -> dict[str, Any]:
        return {"requests": log.entries()}

    @app.delete(LOG_PATH)
    async def clear_requests() -> Response:
        log.clear()
        return Response(status_code=204)

    @app.api_route("/{path:path}", methods=["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"])
    async def forward(request: Request, path: str) -> Response:
        arrived = time.monotonic()
        raw = await request.body()
        url = "/" + path + (("?" + request.url.query) if request.url.query else "")
        rec = _Record("/" + path, raw, arrived) if request.method == "POST" and "/" + path in RECORDED_PATHS else None
        client = clients["upstream"]
        try:
            upstream_response = await _send(client, client.build_request(
                request.method, url, headers=_forward_headers(request.headers), content=raw))
        except httpx.HTTPError as exc:
            if rec is not None:
                rec.status, rec.error = 502, f"tap: upstream unreachable: {type(exc).__name__}: {exc}"
                record(rec)
            return Response(f"tap: upstream unreachable: {exc}", status_code=502)
        headers = _forward_headers(upstream_response.headers)
        streamed = upstream_response.headers.get("content-type", "").startswith("text/event-stream")
        if not streamed:
            try:
                content = await upstream_response.aread()
            finally:
                await upstream_response.aclose()
            if rec is not None:
                rec.status = upstream_response.status_code
                if rec.status >= 400:
                    rec.error = _error_text(content)
                else:
                    try:
                        rec.take_usage(json.loads(content).get("usage"))
                    except (ValueError, AttributeError):
                        pass
                record(rec)
            return Response(content, status_code=upstream_response.status_code, headers=headers)

        async def relay() -> AsyncIterator[bytes]:
            lines = ChunkedDataLines()
            finished = False
            try:
                async for data in upstream_response.aiter_bytes():
                    if rec is not None:
                        for payload in lines.feed(data):
                            rec.see_event(payload)
                    yield data
                finished = True
            finally:
                await upstream_response.aclose()
                if rec is not None:
                    rec.status = upstream_response.status_code
                    if not finished and rec.error is None:
                        rec.error = "client disconnected"
                    record(rec)

        return StreamingResponse(relay(), status_code=upstream_response.status_code, headers=headers)

    return app


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m litellm_kvwarm.lab.bench.tap",
        description="Forward every request to one vLLM server unchanged and record its chat and text "
                    "completions in the emulator's request-log shape (GET /emulator/requests).")
    parser.add_argument("--upstream", required=True, help="the server, http://host:port (no /v1)")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--request-log", default=None, help="also append one JSON line per recorded request here")
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    import uvicorn

    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    logger.info("tap on %s:%s -> %s", args.host, args.port, args.upstream)
    uvicorn.run(create_app(args.upstream, RequestLog(args.request_log)), host=args.host, port=args.port,
                access_log=False, log_level="warning")


if __name__ == "__main__":
    main()

"""The emulator's HTTP surface: a FastAPI app shaped like vLLM's OpenAI-compatible server.

Contract: :func:`create_app` builds one app from an :class:`EmulatorConfig` and an optional
:class:`Clock` (tests inject :class:`ManualClock`; nothing else in the app reads time or
sleeps). The app's parts are reachable as ``app.state.emulator`` (an :class:`EmulatorState`).

Routes as vLLM serves them: ``GET /v1/models``, ``GET /health`` (200, empty body),
``GET /version``, ``GET /metrics``, ``POST /tokenize``, ``POST /detokenize``,
``POST /v1/chat/completions`` and ``POST /v1/completions`` (SSE when ``stream``; with
``stream_options.include_usage`` a last chunk carries ``usage`` and empty ``choices``).

Emulator-only test hooks (no vLLM counterpart, never behind ``--api-key``):
``GET /emulator/requests`` → ``{"requests": [...]}``, ``DELETE /emulator/requests`` (clear the
log), ``POST /emulator/reset_cache`` (empty the prefix cache; ``POST /reset_prefix_cache`` does
the same under vLLM's own dev-mode name); ``PUT /emulator/faults`` (replace the injected faults
with the JSON body, see ``faults``; 400 naming the bad key), ``DELETE /emulator/faults`` (none)
and ``GET /emulator/faults`` (the current ones, with ``completions.remaining`` and how many
requests each hang holds: ``hanging``).

Options (see :class:`EmulatorConfig`): ``api_keys`` guard ``/v1/*`` as vLLM's middleware does
(``auth``); ``strict_fields`` refuses fields OpenAI does not define (``openai_fields``);
``lora_modules`` are listed and served like the base model, their prefix-cache blocks keyed
by adapter as vLLM keys them.

Faults: a faulted generation request is logged with its ``status`` and ``fault``; a request
whose client leaves while it is held by a hang is logged with status 499. A dripped answer is
the normal answer (status and body) sent one byte at a time.

Emulator limits: ``/v1/completions`` takes one prompt per request (a string, a list of
token ids, or a one-element list of either); ``n`` > 1, logprobs, stop strings and tool
parsing are not emulated. Generated text is filler words, exactly ``completion_tokens`` tokens.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from . import responses, tokenizer
from .auth import ApiKeyMiddleware
from .clock import Clock, RealClock
from .config import EmulatorConfig
from .engine import Engine
from .error_bodies import ApiError, LengthDecision, bad_request, check_lengths
from .fault_state import FaultState, drip_body
from .faults import JUNK_BODY, CompletionFault, FaultSet, parse_faults, status_reply
from .vllm_metrics import CONTENT_TYPE_LATEST, EmulatorMetrics
from .openai_fields import unknown_fields, unrecognized_arguments
from .request_body import (
    Rejected,
    adapter_key,
    chat_prompt_ids,
    check_model,
    completion_prompt,
    max_tokens_as_received,
    parse_json_body,
    prompt_tokens_or_none,
    requested_max_tokens,
)
from .request_log import RequestLog, make_entry

__all__ = ["EmulatorState", "create_app"]

logger = logging.getLogger("litellm_kvwarm.lab.emulator")

CHAT_PATH = "/v1/chat/completions"
COMPLETIONS_PATH = "/v1/completions"
#: Status logged for a request whose client went away while a hang held it (nginx's "client closed").
CLIENT_GONE_STATUS = 499


class EmulatorState:
    """Everything one emulated server holds: config, clock, engine, metrics, request log, faults."""

    def __init__(self, config: EmulatorConfig, clock: Clock) -> None:
        self.config = config
        self.clock = clock
        self.metrics = EmulatorMetrics(config.served_model_name)
        self.engine = Engine(config, clock, self.metrics)
        self.log = RequestLog(config.request_log_path)
        self.faults = FaultState(config.faults)

    def record(self, entry: dict[str, Any]) -> None:
        """Append ``entry`` to the request log and write one line (no prompt text) to stderr."""
        self.log.append(entry)
        ttft = "-" if entry["ttft_s"] is None else f"{entry['ttft_s']:.3f}s"
        logger.info(
            "%s model=%s status=%s prompt=%s cached=%s completion=%s max_tokens=%s stream=%s ttft=%s%s",
            entry["endpoint"], entry["model"], entry["status"], entry["prompt_tokens"], entry["cached_tokens"],
            entry["completion_tokens"], entry["max_tokens"], entry["stream"], ttft,
            (f" error={entry['error']!r}" if entry["error"] else "") + (f" fault={entry['fault']}" if entry["fault"] else ""),
        )


@dataclass
class _Job:
    """One admitted generation request."""

    endpoint: str
    body: dict[str, Any]
    prompt_ids: list[int]
    decision: LengthDecision
    salt: str | None
    stream: bool
    arrived_at: float
    model: str  # the name answered with: the served model's or the LoRA adapter's
    adapter: str | None  # prefix-cache key of the LoRA adapter, None for the base model
    fault: str | None  # the injected fault this request met (delay, released hang)

    @property
    def is_chat(self) -> bool:
        return self.endpoint == CHAT_PATH


def _error_response(error: ApiError) -> JSONResponse:
    return JSONResponse(error.body(), status_code=error.status)


async def _json_body(request: Request) -> dict[str, Any]:
    return parse_json_body(await request.body())


async def _client_gone(request: Request) -> None:
    """Return once the client has disconnected (the request body is read first, and kept)."""
    await request.body()
    while (await request.receive())["type"] != "http.disconnect":
        pass


def _endpoint_mode(faults: FaultSet, target: str) -> str | None:
    fault = faults.endpoint(target)
    return None if fault is None else fault.mode


def create_app(config: EmulatorConfig, clock: Clock | None = None) -> FastAPI:
    """A FastAPI app emulating one vLLM server as ``config`` describes (see module docstring)."""
    state = EmulatorState(config, clock or RealClock())
    app = FastAPI(title="litellm-kvwarm vLLM emulator", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.emulator = state
    name = config.served_model_name
    if config.api_keys:
        app.add_middleware(ApiKeyMiddleware, keys=config.api_keys)

    @app.get("/health")
    async def health() -> Response:
        return Response(status_code=200)

    @app.get("/version")
    async def version() -> dict[str, str]:
        return {"version": config.vllm_version}

    async def with_endpoint_fault(
        request: Request, target: str, answer: Callable[[], Awaitable[Response]]
    ) -> Response:
        """``answer()``'s response, or what the fault of ``target`` ("models"/"tokenize") makes of it."""
        while True:
            fault = state.faults.current.endpoint(target)
            if fault is None:
                return await answer()
            if fault.mode == "hang":
                released = await state.faults.hold(
                    target, lambda now: _endpoint_mode(now, target) != "hang", _client_gone(request)
                )
                if not released:
                    return Response(status_code=CLIENT_GONE_STATUS)
                continue  # re-read: the new faults may say something else
            if fault.mode == "status":
                return JSONResponse(status_reply(fault.status), status_code=fault.status)
            if fault.mode == "junk":
                return Response(JUNK_BODY, media_type="application/json")
            normal = await answer()  # "drip"
            return StreamingResponse(
                drip_body(bytes(normal.body), state.faults.current.drip_interval_s, state.clock,
                          lambda: _endpoint_mode(state.faults.current, target) == "drip"),
                status_code=normal.status_code, media_type=normal.media_type,
            )

    @app.get("/v1/models")
    async def models(request: Request) -> Response:
        async def answer() -> Response:
            return JSONResponse(responses.model_list(
                name, config.max_model_len, config.lora_modules, hide_max_model_len=config.hide_max_model_len
            ))

        return await with_endpoint_fault(request, "models", answer)

    @app.get("/metrics")
    async def metrics() -> Response:
        return Response(state.metrics.render(), media_type=CONTENT_TYPE_LATEST)

    @app.post("/tokenize")
    async def tokenize(request: Request) -> Response:
        return await with_endpoint_fault(request, "tokenize", lambda: tokenize_answer(request))

    async def tokenize_answer(request: Request) -> Response:
        try:
            body = await _json_body(request)
            check_model(body, config, required=False)
            if body.get("messages") is not None:
                ids = chat_prompt_ids(body, config)
            elif isinstance(body.get("prompt"), str):
                ids = tokenizer.encode(body["prompt"])
            else:
                raise Rejected(bad_request("Either messages or prompt must be given.", "prompt"))
        except Rejected as rejected:
            return _error_response(rejected.error)
        return JSONResponse({"count": len(ids), "max_model_len": config.max_model_len, "tokens": ids, "token_strs": None})

    @app.post("/detokenize")
    async def detokenize(request: Request) -> Response:
        try:
            body = await _json_body(request)
            check_model(body, config, required=False)
            tokens = body.get("tokens")
            if not isinstance(tokens, list) or not all(isinstance(t, int) for t in tokens):
                raise Rejected(bad_request("tokens must be a list of token ids.", "tokens"))
        except Rejected as rejected:
            return _error_response(rejected.error)
        return JSONResponse({"prompt": tokenizer.decode(tokens)})

    @app.get("/emulator/requests")
    async def list_requests() -> dict[str, Any]:
        return {"requests": state.log.entries()}

    @app.delete("/emulator/requests")
    async def clear_requests() -> Response:
        state.log.clear()
        return Response(status_code=204)

    @app.post("/emulator/reset_cache")
    async def reset_cache() -> dict[str, Any]:
        state.engine.cache.clear()
        return {"status": "ok"}

    @app.get("/emulator/faults")
    async def get_faults() -> dict[str, Any]:
        return state.faults.to_json()

    @app.put("/emulator/faults")
    async def put_faults(request: Request) -> Response:
        try:
            faults = parse_faults(await _json_body(request))
        except Rejected as rejected:
            return _error_response(rejected.error)
        except ValueError as exc:
            return _error_response(bad_request(str(exc)))
        state.faults.replace(faults)
        logger.info("faults set: %s", json.dumps(faults.to_json(), separators=(",", ":")))
        return JSONResponse(state.faults.to_json())

    @app.delete("/emulator/faults")
    async def clear_faults() -> dict[str, Any]:
        state.faults.clear()
        logger.info("faults cleared")
        return state.faults.to_json()

    @app.post("/reset_prefix_cache")
    async def reset_prefix_cache() -> Response:
        # vLLM's own route (served when VLLM_SERVER_DEV_MODE=1): 200, empty body
        state.engine.cache.clear()
        return Response(status_code=200)

    def record_rejected(endpoint: str, body: dict[str, Any], prompt_tokens: int | None, status: int, error: str,
                        fault: str | None) -> None:
        state.record(make_entry(
            endpoint=endpoint, model=body.get("model"), prompt_tokens=prompt_tokens,
            max_tokens=max_tokens_as_received(body), status=status, error=error,
            stream=body.get("stream") is True, cache_salt=body.get("cache_salt") or None, fault=fault,
        ))

    async def generate(request: Request, endpoint: str) -> Response:
        arrived_at = state.clock.now()
        fault = state.faults.take_completion_fault()
        if fault is not None:
            faulted = await apply_completion_fault(request, endpoint, fault)
            if faulted is not None:
                return faulted
        return await admit(request, endpoint, arrived_at, None if fault is None else fault.describe())

    async def apply_completion_fault(request: Request, endpoint: str, fault: CompletionFault) -> Response | None:
        """The (logged) reply ``fault`` gives; ``None`` when the request goes on normally, after
        its delay or once a hang is released."""
        if fault.delay_s:
            await state.clock.sleep(fault.delay_s)
        if fault.hang:
            released = await state.faults.hold(
                "completions", lambda now: now.completions is None or not now.completions.hang, _client_gone(request)
            )
            if released:
                return None
            status, error, reply = CLIENT_GONE_STATUS, "client disconnected", Response(status_code=CLIENT_GONE_STATUS)
        elif fault.status is not None:
            payload = status_reply(fault.status)
            detail = payload["error"]
            status, error = fault.status, detail["message"] if isinstance(detail, dict) else str(detail)
            reply = JSONResponse(payload, status_code=fault.status)
        else:
            return None
        try:
            body = await _json_body(request)
        except Rejected:
            body = {}
        prompt_tokens = prompt_tokens_or_none(body, endpoint == CHAT_PATH, config)
        record_rejected(endpoint, body, prompt_tokens, status, error, fault.describe())
        return reply

    async def admit(request: Request, endpoint: str, arrived_at: float, fault: str | None) -> Response:
        """Validate the request as vLLM does (and, with ``strict_fields``, as OpenAI does), then serve it."""
        body: dict[str, Any] = {}
        prompt_tokens: int | None = None
        try:
            body = await _json_body(request)
            if config.strict_fields and (unknown := unknown_fields(body, chat=endpoint == CHAT_PATH)):
                raise Rejected(unrecognized_arguments(unknown))
            check_model(body, config, required=True)
            salt = body.get("cache_salt")
            if salt is not None and (not isinstance(salt, str) or not salt):
                raise Rejected(bad_request(
                    "Parameter 'cache_salt' must be a non-empty string if provided. (parameter=cache_salt)", "cache_salt"
                ))
            stream = body.get("stream") is True
            if body.get("stream_options") is not None and not stream:
                raise Rejected(bad_request("Stream options can only be defined when `stream=True`.", "stream_options"))
            requested = requested_max_tokens(body)
            if endpoint == CHAT_PATH:
                prompt_ids, is_text = chat_prompt_ids(body, config), True
            else:
                prompt_ids, is_text = completion_prompt(body)
            prompt_tokens = len(prompt_ids)
            decision = check_lengths(
                config.family, window=config.max_model_len, prompt_tokens=prompt_tokens, max_tokens=requested,
                default_max_tokens=config.default_max_tokens, prompt_is_text=is_text,
            )
            if isinstance(decision, ApiError):
                raise Rejected(decision)
        except Rejected as rejected:
            record_rejected(endpoint, body, prompt_tokens, rejected.error.status, rejected.error.message, fault)
            return _error_response(rejected.error)

        model = body["model"]
        job = _Job(endpoint, body, prompt_ids, decision, salt, stream, arrived_at, model, adapter_key(config, model), fault)
        if stream:
            return StreamingResponse(_stream(job), media_type="text/event-stream")
        return await _complete(job)

    def _log_job(job: _Job, *, cached: int | None, completion: int | None, ttft_s: float | None, error: str | None) -> None:
        state.record(make_entry(
            endpoint=job.endpoint, model=job.body.get("model"), prompt_tokens=len(job.prompt_ids),
            max_tokens=max_tokens_as_received(job.body), cached_tokens=cached,
            completion_tokens=completion, status=200, error=error, stream=job.stream, cache_salt=job.salt,
            ttft_s=ttft_s, fault=job.fault,
        ))

    def _created(job: _Job, cached: int) -> int:
        """vLLM's ``created_cache_tokens``: the prompt's full blocks that were not hits."""
        block = config.block_size
        return max(len(job.prompt_ids) // block * block - cached, 0)

    async def _complete(job: _Job) -> Response:
        n = job.decision.output_tokens
        state.metrics.running.inc()
        try:
            prefill = await state.engine.prefill(job.prompt_ids, job.salt, job.arrived_at, job.adapter)
            await state.engine.decode_all(n)
        finally:
            state.metrics.running.dec()
        text = "".join(tokenizer.filler_pieces(n))
        state.engine.finish(job.prompt_ids, tokenizer.encode(text), job.salt, job.decision.finish_reason, job.adapter)
        _log_job(job, cached=prefill.cached_tokens, completion=n, ttft_s=prefill.ttft_s, error=None)
        usage = responses.usage(len(job.prompt_ids), n, prefill.cached_tokens, _created(job, prefill.cached_tokens))
        return JSONResponse(responses.completion_body(job.is_chat, job.model, text, job.decision.finish_reason, usage))

    async def _stream(job: _Job) -> AsyncIterator[str]:
        n = job.decision.output_tokens
        pieces = tokenizer.filler_pieces(n)
        chunks = responses.StreamChunks(job.is_chat, job.model)
        include_usage = bool((job.body.get("stream_options") or {}).get("include_usage"))
        prefill = None
        sent = 0
        state.metrics.running.inc()
        try:
            prefill = await state.engine.prefill(job.prompt_ids, job.salt, job.arrived_at, job.adapter)
            if job.is_chat:
                yield chunks.role()
            async for index in state.engine.decode(n):
                yield chunks.token(pieces[index], job.decision.finish_reason if index == n - 1 else None)
                sent = index + 1
            if include_usage:
                yield chunks.usage(responses.usage(
                    len(job.prompt_ids), n, prefill.cached_tokens, _created(job, prefill.cached_tokens)
                ))
            yield responses.DONE
            state.engine.finish(
                job.prompt_ids, tokenizer.encode("".join(pieces)), job.salt, job.decision.finish_reason, job.adapter
            )
        finally:
            state.metrics.running.dec()
            _log_job(job, cached=None if prefill is None else prefill.cached_tokens, completion=sent,
                     ttft_s=None if prefill is None else prefill.ttft_s,
                     error=None if sent == n else "client disconnected")

    @app.post(CHAT_PATH)
    async def chat_completions(request: Request) -> Response:
        return await generate(request, CHAT_PATH)

    @app.post(COMPLETIONS_PATH)
    async def completions(request: Request) -> Response:
        return await generate(request, COMPLETIONS_PATH)

    return app

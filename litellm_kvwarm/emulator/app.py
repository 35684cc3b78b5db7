"""The emulator's HTTP surface: a FastAPI app shaped like vLLM's OpenAI-compatible server.

Contract: :func:`create_app` builds one app from an :class:`EmulatorConfig` and an optional
:class:`Clock` (tests inject :class:`ManualClock`; nothing else in the app reads time or
sleeps). The app's parts are reachable as ``app.state.emulator`` (an :class:`EmulatorState`).

Routes as vLLM serves them: ``GET /v1/models``, ``GET /health`` (200, empty body),
``GET /version``, ``GET /metrics``, ``POST /tokenize``, ``POST /detokenize``,
``POST /v1/chat/completions`` and ``POST /v1/completions`` (SSE when ``stream``; with
``stream_options.include_usage`` a last chunk carries ``usage`` and empty ``choices``).

Emulator-only test hooks (no vLLM counterpart): ``GET /emulator/requests`` →
``{"requests": [...]}``, ``DELETE /emulator/requests`` (clear the log),
``POST /emulator/reset_cache`` (empty the prefix cache; ``POST /reset_prefix_cache`` does the
same under vLLM's own dev-mode name).

Emulator limits: ``/v1/completions`` takes one prompt per request (a string, a list of
token ids, or a one-element list of either); ``n`` > 1, logprobs, stop strings and tool
parsing are not emulated. Generated text is filler words, exactly ``completion_tokens`` tokens.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from . import responses, tokenizer
from .clock import Clock, RealClock
from .config import EmulatorConfig
from .engine import Engine
from .errors import ApiError, LengthDecision, bad_request, check_lengths, model_not_found
from .metrics import CONTENT_TYPE_LATEST, EmulatorMetrics
from .request_log import RequestLog, make_entry

__all__ = ["EmulatorState", "create_app"]

logger = logging.getLogger("litellm_kvwarm.emulator")

CHAT_PATH = "/v1/chat/completions"
COMPLETIONS_PATH = "/v1/completions"


class EmulatorState:
    """Everything one emulated server holds: config, clock, engine, metrics, request log."""

    def __init__(self, config: EmulatorConfig, clock: Clock) -> None:
        self.config = config
        self.clock = clock
        self.metrics = EmulatorMetrics(config.served_model_name)
        self.engine = Engine(config, clock, self.metrics)
        self.log = RequestLog(config.request_log_path)

    def record(self, entry: dict[str, Any]) -> None:
        """Append ``entry`` to the request log and write one line (no prompt text) to stderr."""
        self.log.append(entry)
        ttft = "-" if entry["ttft_s"] is None else f"{entry['ttft_s']:.3f}s"
        logger.info(
            "%s model=%s status=%s prompt=%s cached=%s completion=%s max_tokens=%s stream=%s ttft=%s%s",
            entry["endpoint"], entry["model"], entry["status"], entry["prompt_tokens"], entry["cached_tokens"],
            entry["completion_tokens"], entry["max_tokens"], entry["stream"], ttft,
            f" error={entry['error']!r}" if entry["error"] else "",
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

    @property
    def is_chat(self) -> bool:
        return self.endpoint == CHAT_PATH


class _Rejected(Exception):
    def __init__(self, error: ApiError) -> None:
        super().__init__(error.message)
        self.error = error


def _error_response(error: ApiError) -> JSONResponse:
    return JSONResponse(error.body(), status_code=error.status)


async def _json_body(request: Request) -> dict[str, Any]:
    try:
        body = json.loads(await request.body())
    except ValueError as exc:
        raise _Rejected(bad_request(f"Invalid JSON body: {exc}")) from None
    if not isinstance(body, dict):
        raise _Rejected(bad_request("The request body must be a JSON object."))
    return body


def _max_tokens_as_received(body: dict[str, Any]) -> Any:
    """``max_completion_tokens`` if set, else ``max_tokens`` (vLLM's precedence), unchecked."""
    value = body.get("max_completion_tokens")
    return body.get("max_tokens") if value is None else value


def _requested_max_tokens(body: dict[str, Any]) -> int | None:
    """The requested output budget in tokens, ``None`` when absent."""
    value = _max_tokens_as_received(body)
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise _Rejected(bad_request(f"max_tokens must be an integer, got {value!r}.", "max_tokens"))
    return value


def _is_token_ids(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in value)


def _completion_prompt(body: dict[str, Any]) -> tuple[list[int], bool]:
    """Token ids of ``/v1/completions``'s ``prompt`` and whether it was text."""
    prompt = body.get("prompt")
    if isinstance(prompt, list) and len(prompt) == 1 and (isinstance(prompt[0], str) or _is_token_ids(prompt[0])):
        prompt = prompt[0]
    if isinstance(prompt, str) and prompt:
        return tokenizer.encode(prompt), True
    if _is_token_ids(prompt):
        return list(prompt), False
    if isinstance(prompt, list) and len(prompt) > 1 and all(isinstance(p, (str, list)) for p in prompt):
        raise _Rejected(bad_request(f"The emulator serves one prompt per request; got {len(prompt)} prompts.", "prompt"))
    raise _Rejected(bad_request("Either prompt or prompt_embeds must be provided and non-empty.", "prompt"))


def _chat_prompt_ids(body: dict[str, Any], config: EmulatorConfig) -> list[int]:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
        raise _Rejected(bad_request("messages must be a non-empty list of message objects.", "messages"))
    return tokenizer.chat_token_ids(
        messages,
        body.get("tools") or None,
        add_generation_prompt=body.get("add_generation_prompt", True) is not False,
        response_format=body.get("response_format"),
        render_response_format=config.render_response_format,
    )


def _check_model(body: dict[str, Any], config: EmulatorConfig, *, required: bool) -> None:
    model = body.get("model")
    if (model is not None or required) and model != config.served_model_name:
        raise _Rejected(model_not_found(model))


def create_app(config: EmulatorConfig, clock: Clock | None = None) -> FastAPI:
    """A FastAPI app emulating one vLLM server as ``config`` describes (see module docstring)."""
    state = EmulatorState(config, clock or RealClock())
    app = FastAPI(title="litellm-kvwarm vLLM emulator", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.emulator = state
    name = config.served_model_name

    @app.get("/health")
    async def health() -> Response:
        return Response(status_code=200)

    @app.get("/version")
    async def version() -> dict[str, str]:
        return {"version": config.vllm_version}

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return responses.model_list(name, None if config.hide_max_model_len else config.max_model_len)

    @app.get("/metrics")
    async def metrics() -> Response:
        return Response(state.metrics.render(), media_type=CONTENT_TYPE_LATEST)

    @app.post("/tokenize")
    async def tokenize(request: Request) -> Response:
        try:
            body = await _json_body(request)
            _check_model(body, config, required=False)
            if body.get("messages") is not None:
                ids = _chat_prompt_ids(body, config)
            elif isinstance(body.get("prompt"), str):
                ids = tokenizer.encode(body["prompt"])
            else:
                raise _Rejected(bad_request("Either messages or prompt must be given.", "prompt"))
        except _Rejected as rejected:
            return _error_response(rejected.error)
        return JSONResponse({"count": len(ids), "max_model_len": config.max_model_len, "tokens": ids, "token_strs": None})

    @app.post("/detokenize")
    async def detokenize(request: Request) -> Response:
        try:
            body = await _json_body(request)
            _check_model(body, config, required=False)
            tokens = body.get("tokens")
            if not isinstance(tokens, list) or not all(isinstance(t, int) for t in tokens):
                raise _Rejected(bad_request("tokens must be a list of token ids.", "tokens"))
        except _Rejected as rejected:
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

    @app.post("/reset_prefix_cache")
    async def reset_prefix_cache() -> Response:
        # vLLM's own route (served when VLLM_SERVER_DEV_MODE=1): 200, empty body
        state.engine.cache.clear()
        return Response(status_code=200)

    async def generate(request: Request, endpoint: str) -> Response:
        arrived_at = state.clock.now()
        body: dict[str, Any] = {}
        prompt_tokens: int | None = None
        try:
            body = await _json_body(request)
            _check_model(body, config, required=True)
            salt = body.get("cache_salt")
            if salt is not None and (not isinstance(salt, str) or not salt):
                raise _Rejected(bad_request(
                    "Parameter 'cache_salt' must be a non-empty string if provided. (parameter=cache_salt)", "cache_salt"
                ))
            stream = body.get("stream") is True
            if body.get("stream_options") is not None and not stream:
                raise _Rejected(bad_request("Stream options can only be defined when `stream=True`.", "stream_options"))
            requested = _requested_max_tokens(body)
            if endpoint == CHAT_PATH:
                prompt_ids, is_text = _chat_prompt_ids(body, config), True
            else:
                prompt_ids, is_text = _completion_prompt(body)
            prompt_tokens = len(prompt_ids)
            decision = check_lengths(
                config.family, window=config.max_model_len, prompt_tokens=prompt_tokens, max_tokens=requested,
                default_max_tokens=config.default_max_tokens, prompt_is_text=is_text,
            )
            if isinstance(decision, ApiError):
                raise _Rejected(decision)
        except _Rejected as rejected:
            state.record(make_entry(
                endpoint=endpoint, model=body.get("model"), prompt_tokens=prompt_tokens,
                max_tokens=_max_tokens_as_received(body), status=rejected.error.status,
                error=rejected.error.message, stream=body.get("stream") is True,
                cache_salt=body.get("cache_salt") or None,
            ))
            return _error_response(rejected.error)

        job = _Job(endpoint, body, prompt_ids, decision, salt, stream, arrived_at)
        if stream:
            return StreamingResponse(_stream(job), media_type="text/event-stream")
        return await _complete(job)

    def _log_job(job: _Job, *, cached: int | None, completion: int | None, ttft_s: float | None, error: str | None) -> None:
        state.record(make_entry(
            endpoint=job.endpoint, model=job.body.get("model"), prompt_tokens=len(job.prompt_ids),
            max_tokens=_max_tokens_as_received(job.body), cached_tokens=cached,
            completion_tokens=completion, status=200, error=error, stream=job.stream, cache_salt=job.salt,
            ttft_s=ttft_s,
        ))

    def _created(job: _Job, cached: int) -> int:
        """vLLM's ``created_cache_tokens``: the prompt's full blocks that were not hits."""
        block = config.block_size
        return max(len(job.prompt_ids) // block * block - cached, 0)

    async def _complete(job: _Job) -> Response:
        n = job.decision.output_tokens
        state.metrics.running.inc()
        try:
            prefill = await state.engine.prefill(job.prompt_ids, job.salt, job.arrived_at)
            await state.engine.decode_all(n)
        finally:
            state.metrics.running.dec()
        text = "".join(tokenizer.filler_pieces(n))
        state.engine.finish(job.prompt_ids, tokenizer.encode(text), job.salt, job.decision.finish_reason)
        _log_job(job, cached=prefill.cached_tokens, completion=n, ttft_s=prefill.ttft_s, error=None)
        usage = responses.usage(len(job.prompt_ids), n, prefill.cached_tokens, _created(job, prefill.cached_tokens))
        return JSONResponse(responses.completion_body(job.is_chat, name, text, job.decision.finish_reason, usage))

    async def _stream(job: _Job) -> AsyncIterator[str]:
        n = job.decision.output_tokens
        pieces = tokenizer.filler_pieces(n)
        chunks = responses.StreamChunks(job.is_chat, name)
        include_usage = bool((job.body.get("stream_options") or {}).get("include_usage"))
        prefill = None
        sent = 0
        state.metrics.running.inc()
        try:
            prefill = await state.engine.prefill(job.prompt_ids, job.salt, job.arrived_at)
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
            state.engine.finish(job.prompt_ids, tokenizer.encode("".join(pieces)), job.salt, job.decision.finish_reason)
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

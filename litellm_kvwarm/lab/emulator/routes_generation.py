"""The emulator's generation routes: ``POST /v1/chat/completions`` and ``POST /v1/completions``.

A request meets, in order: the injected completions fault (delay, hang, status; see ``faults``),
vLLM's validation (and, with ``strict_fields``, OpenAI's), the length check of the version family
(reject, or clamp ``max_tokens`` to the window) or, with ``server`` other than vLLM, that server's
checks and error shapes (``server_shapes``: refused when not streamed with its status and body;
when streamed with 200 and its error event first, nothing before it), then the engine (prefill
with the prefix cache, decode). A ``stream_error_after_tokens`` fault cuts a stream after that many
content chunks with the server's error event (logged with status 200, the event's message and
the fault). Non-streamed: one JSON body. Streamed: SSE chunks; with ``stream_options.include_usage``
a last chunk carries ``usage`` and empty ``choices``. Every request is logged once (rejected ones
with their status; a hang whose client left with status 499). Generated text is filler words,
exactly ``completion_tokens`` tokens.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from . import responses, tokenizer
from .error_bodies import ApiError, LengthDecision, bad_request, check_lengths
from .server_shapes import ServerError, check_server_lengths, internal_error
from .faults import CompletionFault, status_reply
from .http_io import CLIENT_GONE_STATUS, client_gone, error_response, json_body
from .openai_fields import unknown_fields, unrecognized_arguments
from .request_body import (
    Rejected,
    adapter_key,
    cache_salt,
    chat_prompt_ids,
    check_model,
    completion_prompt,
    max_tokens_as_received,
    prompt_tokens_or_none,
    requested_max_tokens,
)
from .request_log import make_entry
from .state import EmulatorState

__all__ = ["CHAT_PATH", "COMPLETIONS_PATH", "Generation", "Job", "add_generation_routes"]

CHAT_PATH = "/v1/chat/completions"
COMPLETIONS_PATH = "/v1/completions"


@dataclass
class Job:
    """One admitted generation request (``endpoint``: the route path it came in on)."""

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
    stream_error: CompletionFault | None = None  # a stream_error_after_tokens fault to apply

    @property
    def is_chat(self) -> bool:
        return self.endpoint == CHAT_PATH


class Generation:
    """Serves the generation requests of one emulated server (``state``)."""

    def __init__(self, state: EmulatorState) -> None:
        self.state = state
        self.config = state.config

    async def generate(self, request: Request, endpoint: str) -> Response:
        """The reply to one request to ``endpoint`` (``CHAT_PATH`` or ``COMPLETIONS_PATH``)."""
        arrived_at = self.state.clock.now()
        fault = self.state.faults.take_completion_fault()
        if fault is not None:
            faulted = await self._apply_completion_fault(request, endpoint, fault)
            if faulted is not None:
                return faulted
        label = None if fault is None else fault.describe()
        if fault is not None and fault.stream_error_after_tokens is not None and endpoint in (CHAT_PATH, COMPLETIONS_PATH):
            return await self._admit(request, endpoint, arrived_at, label, stream_error=fault)
        return await self._admit(request, endpoint, arrived_at, label)

    def _budget_as_received(self, body: dict[str, Any]) -> Any:
        """The output budget as the request carried it (the log's ``max_tokens``)."""
        return max_tokens_as_received(body)

    def _prompt_tokens_for_log(self, endpoint: str, body: dict[str, Any]) -> int | None:
        """The prompt's length in tokens for the log of a faulted request; ``None`` if it has none."""
        return prompt_tokens_or_none(body, endpoint == CHAT_PATH, self.config)

    def _record_rejected(self, endpoint: str, body: dict[str, Any], prompt_tokens: int | None, status: int,
                         error: str, fault: str | None) -> None:
        self.state.record(make_entry(
            endpoint=endpoint, model=body.get("model"), prompt_tokens=prompt_tokens,
            max_tokens=self._budget_as_received(body), status=status, error=error,
            stream=body.get("stream") is True, cache_salt=body.get("cache_salt") or None, fault=fault,
        ))

    async def _apply_completion_fault(self, request: Request, endpoint: str,
                                      fault: CompletionFault) -> Response | None:
        """The (logged) reply ``fault`` gives; ``None`` when the request goes on normally, after
        its delay or once a hang is released."""
        state = self.state
        if fault.delay_s:
            await state.clock.sleep(fault.delay_s)
        if fault.hang:
            released = await state.faults.hold(
                "completions", lambda now: now.completions is None or not now.completions.hang, client_gone(request)
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
            body = await json_body(request)
        except Rejected:
            body = {}
        prompt_tokens = self._prompt_tokens_for_log(endpoint, body)
        self._record_rejected(endpoint, body, prompt_tokens, status, error, fault.describe())
        return reply

    async def _admit(self, request: Request, endpoint: str, arrived_at: float, fault: str | None,
                     stream_error: CompletionFault | None = None) -> Response:
        """Validate the request as vLLM does (and, with ``strict_fields``, as OpenAI does), check its
        lengths as ``config.server`` does, then serve it (cut by ``stream_error`` when streamed)."""
        config = self.config
        body: dict[str, Any] = {}
        prompt_tokens: int | None = None
        try:
            body = await json_body(request)
            if config.strict_fields and (unknown := unknown_fields(body, chat=endpoint == CHAT_PATH)):
                raise Rejected(unrecognized_arguments(unknown))
            check_model(body, config, required=True)
            salt = cache_salt(body)
            stream = body.get("stream") is True
            if body.get("stream_options") is not None and not stream:
                raise Rejected(bad_request("Stream options can only be defined when `stream=True`.", "stream_options"))
            requested = requested_max_tokens(body)
            if endpoint == CHAT_PATH:
                prompt_ids, is_text = chat_prompt_ids(body, config), True
            else:
                prompt_ids, is_text = completion_prompt(body)
            prompt_tokens = len(prompt_ids)
            if config.server == "vllm":
                decision = check_lengths(
                    config.family, window=config.max_model_len, prompt_tokens=prompt_tokens, max_tokens=requested,
                    default_max_tokens=config.default_max_tokens, prompt_is_text=is_text,
                )
            else:
                decision = check_server_lengths(config.server_limits, prompt_tokens=prompt_tokens,
                                                max_tokens=requested, default_max_tokens=config.default_max_tokens)
            if isinstance(decision, ApiError):
                raise Rejected(decision)
        except Rejected as rejected:
            self._record_rejected(endpoint, body, prompt_tokens, rejected.error.status, rejected.error.message, fault)
            return error_response(rejected.error)

        model = body["model"]
        if stream_error is not None and not stream:
            stream_error, label = None, stream_error.describe(streamed=False)
            fault = None if label == "none" else label
        if isinstance(decision, ServerError):
            return self._refuse(endpoint, body, prompt_tokens, decision, fault)
        job = Job(endpoint, body, prompt_ids, decision, salt, stream, arrived_at, model, adapter_key(config, model), fault,
                  stream_error)
        if stream:
            return StreamingResponse(self._stream(job), media_type="text/event-stream")
        return await self._complete(job)

    def _refuse(self, endpoint: str, body: dict[str, Any], prompt_tokens: int, error: ServerError,
                fault: str | None) -> Response:
        """``error`` as its server answers it (logged once): when not streamed its status and body;
        when streamed 200 and its error event(s) first (see ``server_shapes``)."""
        stream = body.get("stream") is True
        self._record_rejected(endpoint, body, prompt_tokens, 200 if stream else error.status, error.message, fault)
        if not stream:
            return JSONResponse(error.body(), status_code=error.status)
        head = responses.StreamChunks(endpoint == CHAT_PATH, body["model"]).head
        return StreamingResponse(iter(error.stream_events(head)), media_type="text/event-stream")

    def _log_job(self, job: Job, *, cached: int | None, completion: int | None, ttft_s: float | None,
                 error: str | None) -> None:
        self.state.record(make_entry(
            endpoint=job.endpoint, model=job.model, prompt_tokens=len(job.prompt_ids),
            max_tokens=self._budget_as_received(job.body), cached_tokens=cached,
            completion_tokens=completion, status=200, error=error, stream=job.stream, cache_salt=job.salt,
            ttft_s=ttft_s, fault=job.fault,
        ))

    def _created(self, job: Job, cached: int) -> int:
        """vLLM's ``created_cache_tokens``: the prompt's full blocks that were not hits."""
        block = self.config.block_size
        return max(len(job.prompt_ids) // block * block - cached, 0)

    async def _complete(self, job: Job) -> Response:
        state = self.state
        n = job.decision.output_tokens
        state.metrics.running.inc()
        try:
            prefill = await state.engine.prefill(job.prompt_ids, job.salt, job.arrived_at, job.adapter)
            await state.engine.decode_all(n)
        finally:
            state.metrics.running.dec()
        text = "".join(tokenizer.filler_pieces(n))
        state.engine.finish(job.prompt_ids, tokenizer.encode(text), job.salt, job.decision.finish_reason, job.adapter)
        self._log_job(job, cached=prefill.cached_tokens, completion=n, ttft_s=prefill.ttft_s, error=None)
        usage = responses.usage(len(job.prompt_ids), n, prefill.cached_tokens, self._created(job, prefill.cached_tokens))
        return JSONResponse(responses.completion_body(job.is_chat, job.model, text, job.decision.finish_reason, usage))

    async def _stream(self, job: Job) -> AsyncIterator[str]:
        state = self.state
        n = job.decision.output_tokens
        pieces = tokenizer.filler_pieces(n)
        chunks = responses.StreamChunks(job.is_chat, job.model)
        include_usage = bool((job.body.get("stream_options") or {}).get("include_usage"))
        cut = None if job.stream_error is None else min(job.stream_error.stream_error_after_tokens or 0, n)
        prefill = None
        sent = 0
        failed: str | None = None  # the message of the fault's error event, once sent
        state.metrics.running.inc()
        try:
            prefill = await state.engine.prefill(job.prompt_ids, job.salt, job.arrived_at, job.adapter)
            if job.is_chat:
                yield chunks.role()
            if cut is not None and job.stream_error is not None:
                async for index in state.engine.decode(cut):
                    yield chunks.token(pieces[index], None)
                    sent = index + 1
                failure = internal_error(self.config.server, job.stream_error.stream_error_message)
                for event in failure.stream_events(chunks.head):
                    yield event
                failed = failure.message
                return
            async for index in state.engine.decode(n):
                yield chunks.token(pieces[index], job.decision.finish_reason if index == n - 1 else None)
                sent = index + 1
            if include_usage:
                yield chunks.usage(responses.usage(
                    len(job.prompt_ids), n, prefill.cached_tokens, self._created(job, prefill.cached_tokens)
                ))
            yield responses.DONE
            state.engine.finish(
                job.prompt_ids, tokenizer.encode("".join(pieces)), job.salt, job.decision.finish_reason, job.adapter
            )
        finally:
            state.metrics.running.dec()
            self._log_job(job, cached=None if prefill is None else prefill.cached_tokens, completion=sent,
                          ttft_s=None if prefill is None else prefill.ttft_s,
                          error=failed or (None if sent == n else "client disconnected"))


def add_generation_routes(app: FastAPI, state: EmulatorState) -> None:
    """Register ``POST /v1/chat/completions`` and ``POST /v1/completions`` of ``state``'s server on ``app``."""
    generation = Generation(state)

    @app.post(CHAT_PATH)
    async def chat_completions(request: Request) -> Response:
        return await generation.generate(request, CHAT_PATH)

    @app.post(COMPLETIONS_PATH)
    async def completions(request: Request) -> Response:
        return await generation.generate(request, COMPLETIONS_PATH)

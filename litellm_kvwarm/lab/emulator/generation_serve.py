"""Serving an admitted generation request (a :class:`Job`) of ``/v1/chat/completions`` or ``/v1/completions``.

Admission (faults, validation, length checks, refusals) is ``routes_generation``'s; this module
runs what was admitted through the engine (prefill with the prefix cache, then decode) and
assembles the answer. Non-streamed: one JSON body with ``usage``. Streamed: SSE chunks (chat:
the role chunk first); in ``--chat-template-mode qwen3`` a chat reply's reasoning comes first
as ``delta.reasoning_content`` chunks; a recorded reply's tool calls follow its content; an
empty reply still sends one chunk with its ``finish_reason``; with
``stream_options.include_usage`` a last chunk carries ``usage`` and empty ``choices``; then
``[DONE]``. A ``stream_error_after_tokens`` fault cuts the stream after that many content
chunks with the server's error event (see ``server_shapes.internal_error``). Each served job is
logged once with status 200: its cached and completion tokens (for a stream, the chunks sent),
TTFT and queue wait (seconds), and an error (the fault's message, or ``client disconnected``
when the client left early).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from fastapi.responses import JSONResponse, Response

from . import responses
from .error_bodies import LengthDecision
from .faults import CompletionFault
from .reply import Reply
from .request_body import max_tokens_as_received
from .request_log import make_entry
from .server_shapes import internal_error
from .state import EmulatorState

__all__ = ["CHAT_PATH", "COMPLETIONS_PATH", "Job", "JobServer"]

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
    priority: int = 0  # scheduling priority (lower first, see ``scheduler``)
    reply: Reply | None = None  # what to generate (see ``reply``); planned at admission

    @property
    def is_chat(self) -> bool:
        return self.endpoint == CHAT_PATH


def skips_reading_cache(body: dict[str, Any]) -> bool:
    """vLLM's ``SamplingParams.skip_reading_prefix_cache``: as sent, else on when ``prompt_logprobs`` is set
    (a prompt whose logprobs are asked for is prefilled whole, never read from the prefix cache)."""
    skip = body.get("skip_reading_prefix_cache")
    return bool(skip) if skip is not None else body.get("prompt_logprobs") is not None


class JobServer:
    """Runs admitted jobs of one emulated server (``state``) and logs them; subclasses admit them."""

    def __init__(self, state: EmulatorState) -> None:
        self.state = state
        self.config = state.config

    def _budget_as_received(self, body: dict[str, Any]) -> Any:
        """The output budget as the request carried it (the log's ``max_tokens``)."""
        return max_tokens_as_received(body)

    async def _prefill(self, job: Job):
        return await self.state.engine.prefill(job.prompt_ids, job.salt, job.arrived_at, job.adapter,
                                               priority=job.priority, skip_reading=skips_reading_cache(job.body))

    def _log_job(self, job: Job, *, cached: int | None, completion: int | None, ttft_s: float | None,
                 error: str | None, queue_wait_s: float | None = None) -> None:
        self.state.record(make_entry(
            endpoint=job.endpoint, model=job.model, prompt_tokens=len(job.prompt_ids),
            max_tokens=self._budget_as_received(job.body), cached_tokens=cached,
            completion_tokens=completion, status=200, error=error, stream=job.stream, cache_salt=job.salt,
            ttft_s=ttft_s, fault=job.fault, priority=job.priority, queue_wait_s=queue_wait_s,
        ))

    def _created(self, job: Job, cached: int) -> int:
        """vLLM's ``created_cache_tokens``: the prompt's full blocks that were not hits."""
        block = self.config.block_size
        return max(len(job.prompt_ids) // block * block - cached, 0)

    async def _complete(self, job: Job) -> Response:
        state = self.state
        reply = job.reply
        assert reply is not None
        n = reply.tokens
        state.metrics.running.inc()
        try:
            prefill = await self._prefill(job)
            await state.engine.decode_all(n)
        finally:
            state.metrics.running.dec()
        state.engine.finish(job.prompt_ids, reply.output_ids, job.salt, reply.finish_reason, job.adapter)
        self._log_job(job, cached=prefill.cached_tokens, completion=n, ttft_s=prefill.ttft_s, error=None,
                      queue_wait_s=prefill.queue_wait_s)
        usage = responses.usage(len(job.prompt_ids), n, prefill.cached_tokens, self._created(job, prefill.cached_tokens))
        return JSONResponse(responses.completion_body(job.is_chat, job.model, reply.text, reply.finish_reason, usage,
                                                      reasoning=reply.reasoning_text, tool_calls=list(reply.tool_calls)))

    async def _stream(self, job: Job) -> AsyncIterator[str]:
        state = self.state
        reply = job.reply
        assert reply is not None
        n = reply.tokens
        pieces = reply.pieces()
        chunks = responses.StreamChunks(job.is_chat, job.model)
        include_usage = bool((job.body.get("stream_options") or {}).get("include_usage"))
        cut = None if job.stream_error is None else min(job.stream_error.stream_error_after_tokens or 0, n)
        prefill = None
        sent = 0
        failed: str | None = None  # the message of the fault's error event, once sent
        state.metrics.running.inc()
        try:
            prefill = await self._prefill(job)
            if job.is_chat:
                yield chunks.role()
            if cut is not None and job.stream_error is not None:
                async for index in state.engine.decode(cut):
                    yield chunks.token(pieces[index][1], None, reasoning=pieces[index][0] == "reasoning")
                    sent = index + 1
                failure = internal_error(self.config.server, job.stream_error.stream_error_message)
                for event in failure.stream_events(chunks.head):
                    yield event
                failed = failure.message
                return
            calls = reply.tool_calls if job.is_chat else ()  # a recorded reply's, after its content
            async for index in state.engine.decode(n):
                kind, piece = pieces[index]
                yield chunks.token(piece, reply.finish_reason if index == n - 1 and not calls else None,
                                   reasoning=kind == "reasoning")
                sent = index + 1
            for event in chunks.tool_calls(calls, reply.finish_reason) if calls else ():
                yield event
            if n == 0 and not calls:  # an empty recorded reply: still one chunk that says why it stopped
                yield chunks.token("", reply.finish_reason)
            if include_usage:
                yield chunks.usage(responses.usage(
                    len(job.prompt_ids), n, prefill.cached_tokens, self._created(job, prefill.cached_tokens)
                ))
            yield responses.DONE
            state.engine.finish(job.prompt_ids, reply.output_ids, job.salt, reply.finish_reason, job.adapter)
        finally:
            state.metrics.running.dec()
            self._log_job(job, cached=None if prefill is None else prefill.cached_tokens, completion=sent,
                          ttft_s=None if prefill is None else prefill.ttft_s,
                          error=failed or (None if sent == n else "client disconnected"),
                          queue_wait_s=None if prefill is None else prefill.queue_wait_s)

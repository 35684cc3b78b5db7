"""The emulator's ``POST /v1/responses``: vLLM 0.32's Responses API over the same engine as chat.

A request meets what a chat request meets (see ``routes_generation``): the injected completions
fault (and the ``responses`` fault: every Responses request answered with that status, as by a
server without the Responses API), the API-key middleware, validation, the length check, then the engine, whose prefix
cache, timing and Prometheus counters are shared with ``/v1/chat/completions``. The input is
turned into the chat messages vLLM builds (``responses_input``) and rendered with the chat
template, so a conversation sent to either route hits the blocks the other one cached.

Validation, in vLLM's order: ``input`` present, ``max_output_tokens`` an integer, ``cache_salt``
(as chat); ``prompt`` set → 400; ``model`` (optional here, unlike chat) → 404 when unknown;
``background`` → 400 (vLLM stores no responses by default); ``previous_response_id`` → 404
(nothing is stored); the input items (``responses_input``); the lengths
(``error_bodies.check_responses_lengths``: a prompt plus ``max_output_tokens`` over the window
is clamped in 0.32, 200 with ``status: "incomplete"``; a prompt alone over or filling the window,
or ``max_output_tokens`` above the window, is a 400).

Logged like chat: ``endpoint`` ``/v1/responses``, ``max_tokens`` = ``max_output_tokens`` as
received, ``prompt_tokens``, ``cached_tokens``, ``completion_tokens``, status, fault, ``priority``
and ``queue_wait_s``. ``priority`` is scheduled (and refused under fcfs) as for chat.
Answers: see ``responses_bodies``; generated text is filler words or the content of the request's
recorded reply (``reply``; no reasoning items; its tool calls as ``function_call`` items after the
message), exactly the output tokens.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from . import responses_bodies as bodies
from . import responses_input
from .error_bodies import ApiError, bad_request, check_responses_lengths
from .http_io import error_response, json_body
from .openai_fields import unknown_responses_fields, unrecognized_arguments
from .request_body import Rejected, adapter_key, cache_salt, check_model, check_priority, request_priority
from .routes_generation import Generation, Job
from .state import EmulatorState

__all__ = ["RESPONSES_PATH", "ResponsesGeneration", "add_responses_routes"]

RESPONSES_PATH = "/v1/responses"

_BACKGROUND = (
    "This vLLM engine does not support `store=True` and therefore does not support the background mode. To "
    "enable these features, set the environment variable `VLLM_ENABLE_RESPONSES_API_STORE=1` when launching "
    "the vLLM server."
)


def _check_request(body: dict[str, Any], config) -> None:
    """The checks vLLM makes before rendering (see the module docstring), in its order."""
    if "input" not in body:
        raise Rejected(responses_input.validation_error("body.input", "missing", "Field required", body))
    responses_input.requested_output(body)
    cache_salt(body)
    if body.get("background") and body.get("store", True) is False:
        raise Rejected(bad_request("background can only be used when `store` is true (parameter=background)",
                                   "background"))
    if body.get("prompt") is not None:
        raise Rejected(bad_request("prompt template is not supported (parameter=prompt)", "prompt"))
    check_model(body, config, required=False)
    if body.get("background"):
        raise Rejected(ApiError(400, _BACKGROUND, "invalid_request_error", "background"))
    previous = body.get("previous_response_id")
    if previous is not None:
        raise Rejected(ApiError(404, f"Response with id '{previous}' not found.", "invalid_request_error",
                                "response_id"))


class ResponsesGeneration(Generation):
    """Serves ``/v1/responses`` for one emulated server; faults and logging as for chat."""

    def _budget_as_received(self, body: dict[str, Any]) -> Any:
        return body.get("max_output_tokens")

    def _prompt_tokens_for_log(self, endpoint: str, body: dict[str, Any]) -> int | None:
        try:
            return len(responses_input.prompt_ids(body, self.config))
        except (Rejected, TypeError, ValueError, KeyError, AttributeError):  # only a log field
            return None

    async def _admit(self, request: Request, endpoint: str, arrived_at: float, fault: str | None) -> Response:
        config = self.config
        body: dict[str, Any] = {}
        prompt_tokens: int | None = None
        try:
            body = await json_body(request)
            if (absent := self.state.faults.current.responses) is not None and absent.status is not None:
                raise Rejected(ApiError(absent.status, HTTPStatus(absent.status).phrase, HTTPStatus(absent.status).phrase))
            if config.strict_fields and (unknown := unknown_responses_fields(body)):
                raise Rejected(unrecognized_arguments(unknown))
            _check_request(body, config)
            priority = request_priority(body)
            prompt_ids = responses_input.prompt_ids(body, config)
            prompt_tokens = len(prompt_ids)
            decision = check_responses_lengths(
                config.family, window=config.max_model_len, prompt_tokens=prompt_tokens,
                max_output_tokens=responses_input.requested_output(body), default_max_tokens=config.default_max_tokens,
            )
            if isinstance(decision, ApiError):
                raise Rejected(decision)
            check_priority(priority, config)
            reply = self._plan_reply(endpoint, body, decision, responses_input.requested_output(body) is not None,
                                     prompt_ids)
        except Rejected as rejected:
            self._record_rejected(endpoint, body, prompt_tokens, rejected.error.status, rejected.error.message, fault)
            return error_response(rejected.error)
        model = body.get("model") or config.served_model_name
        job = Job(endpoint, body, prompt_ids, decision, body.get("cache_salt"), body.get("stream") is True, arrived_at,
                  model, adapter_key(config, model), fault, None, priority, reply)
        if job.stream:
            return StreamingResponse(self._stream_response(job), media_type="text/event-stream")
        return await self._complete_response(job)

    def _response(self, job: Job, response_id: str, created_at: int, *, status: str, output: list[dict[str, Any]],
                  usage: dict[str, Any] | None) -> dict[str, Any]:
        budget = responses_input.effective_max_output_tokens(
            responses_input.requested_output(job.body), self.config.max_model_len, len(job.prompt_ids))
        return bodies.response_object(job.body, response_id=response_id, created_at=created_at, model=job.model,
                                      max_output_tokens=budget, status=status, output=output, usage_=usage)

    def _status(self, job: Job) -> str:
        reason = job.reply.finish_reason if job.reply is not None else job.decision.finish_reason
        return "incomplete" if reason == "length" else "completed"

    def _usage(self, job: Job, n: int, cached: int) -> dict[str, Any]:
        return bodies.usage(len(job.prompt_ids), n, cached, self._created(job, cached))

    async def _complete_response(self, job: Job) -> Response:
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
        text = reply.text
        state.engine.finish(job.prompt_ids, reply.output_ids, job.salt, reply.finish_reason, job.adapter)
        self._log_job(job, cached=prefill.cached_tokens, completion=n, ttft_s=prefill.ttft_s, error=None,
                      queue_wait_s=prefill.queue_wait_s)
        output = [bodies.message_item(bodies.new_id("msg"), text)] + [bodies.function_call_item(c) for c in reply.tool_calls]
        body = self._response(job, job.body.get("request_id") or bodies.new_id("resp"), bodies.now(),
                              status=self._status(job), output=output, usage=self._usage(job, n, prefill.cached_tokens))
        return JSONResponse(body)

    async def _stream_response(self, job: Job) -> AsyncIterator[str]:
        state = self.state
        reply = job.reply
        assert reply is not None
        n = reply.tokens
        pieces = reply.content
        events = bodies.ResponseEvents()
        response_id, created_at = job.body.get("request_id") or bodies.new_id("resp"), bodies.now()
        prefill = None
        sent = 0
        state.metrics.running.inc()
        try:
            opening = self._response(job, response_id, created_at, status="in_progress", output=[], usage=None)
            yield events.created(opening)
            yield events.in_progress(opening)
            prefill = await self._prefill(job)
            for event in events.opened():
                yield event
            async for index in state.engine.decode(n):
                yield events.delta(pieces[index])
                sent = index + 1
            for event in events.closed():
                yield event
            for number, call in enumerate(reply.tool_calls, start=1):
                for event in events.function_call(number, call):
                    yield event
            output = [events.item()] + [bodies.function_call_item(c) for c in reply.tool_calls]
            yield events.completed(self._response(
                job, response_id, created_at, status=self._status(job), output=output,
                usage=self._usage(job, n, prefill.cached_tokens)))
            state.engine.finish(job.prompt_ids, reply.output_ids, job.salt, reply.finish_reason, job.adapter)
        finally:
            state.metrics.running.dec()
            self._log_job(job, cached=None if prefill is None else prefill.cached_tokens, completion=sent,
                          ttft_s=None if prefill is None else prefill.ttft_s,
                          error=None if sent == n else "client disconnected",
                          queue_wait_s=None if prefill is None else prefill.queue_wait_s)


def add_responses_routes(app: FastAPI, state: EmulatorState) -> None:
    """Register ``POST /v1/responses`` of ``state``'s server on ``app``."""
    generation = ResponsesGeneration(state)

    @app.post(RESPONSES_PATH)
    async def responses(request: Request) -> Response:
        return await generation.generate(request, RESPONSES_PATH)

"""The emulator's generation routes: ``POST /v1/chat/completions`` and ``POST /v1/completions``.

A request meets, in order: the injected completions fault (delay, hang, status; see ``faults``),
vLLM's validation (and, with ``strict_fields``, OpenAI's), the length check of the version family
(reject, or clamp ``max_tokens`` to the window) or, with ``server`` other than vLLM, that server's
checks and error shapes (``server_shapes``: refused when not streamed with its status and body;
when streamed with 200 and its error event first, nothing before it), then the engine
(``generation_serve``: prefill with the prefix cache, decode, the JSON body or SSE chunks). A
``stream_error_after_tokens`` fault is kept for a streamed request (it cuts the stream, see
``generation_serve``) and only labelled for one not streamed. Every request is logged once
(rejected ones with their status; a hang whose client left with status 499), with its
``priority`` and the seconds its prefill waited for the GPU. A non-zero ``priority`` under
``--scheduling-policy fcfs`` is refused after the length checks, as vLLM's engine refuses it
(400). Generated text is filler words or the request's recorded reply (``reply``; tool calls
after content), exactly ``completion_tokens`` tokens; in ``--chat-template-mode qwen3`` a chat
reply's reasoning comes first, as ``reasoning_content``.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from . import responses
from .error_bodies import ApiError, LengthDecision, bad_request, check_lengths
from .faults import CompletionFault, status_reply
from .generation_serve import CHAT_PATH, COMPLETIONS_PATH, Job, JobServer
from .http_io import CLIENT_GONE_STATUS, client_gone, error_response, json_body
from .openai_fields import unknown_fields, unrecognized_arguments
from .reply import Reply, plan_reply
from .request_body import (
    Rejected,
    adapter_key,
    cache_salt,
    chat_prompt_ids,
    check_min_tokens,
    check_model,
    check_priority,
    completion_prompt,
    prompt_tokens_or_none,
    request_priority,
    requested_max_tokens,
)
from .request_log import make_entry
from .server_shapes import ServerError, check_server_lengths
from .state import EmulatorState

__all__ = ["CHAT_PATH", "COMPLETIONS_PATH", "Generation", "Job", "add_generation_routes"]


class Generation(JobServer):
    """Serves the generation requests of one emulated server (``state``): admits them here, runs
    them with :class:`~.generation_serve.JobServer`."""

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

    def _prompt_tokens_for_log(self, endpoint: str, body: dict[str, Any]) -> int | None:
        """The prompt's length in tokens for the log of a faulted request; ``None`` if it has none."""
        return prompt_tokens_or_none(body, endpoint == CHAT_PATH, self.config)

    def _record_rejected(self, endpoint: str, body: dict[str, Any], prompt_tokens: int | None, status: int,
                         error: str, fault: str | None) -> None:
        self.state.record(make_entry(
            endpoint=endpoint, model=body.get("model"), prompt_tokens=prompt_tokens,
            max_tokens=self._budget_as_received(body), status=status, error=error,
            stream=body.get("stream") is True, cache_salt=body.get("cache_salt") or None, fault=fault,
            priority=body.get("priority", 0),
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
            priority = request_priority(body)
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
            reply = None
            if isinstance(decision, LengthDecision):
                if requested is not None:  # the budget it runs with: as sent, or trimmed to the window (0.32+)
                    check_min_tokens(body, decision.output_tokens)
                check_priority(priority, config)
                reply = self._plan_reply(endpoint, body, decision, requested is not None, prompt_ids)
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
                  stream_error, priority, reply)
        if stream:
            return StreamingResponse(self._stream(job), media_type="text/event-stream")
        return await self._complete(job)

    def _plan_reply(self, endpoint: str, body: dict[str, Any], decision: LengthDecision, max_tokens_given: bool,
                    prompt_ids: list[int]) -> Reply:
        """What to generate for an admitted request (see ``reply``)."""
        return plan_reply(
            body, output_tokens=decision.output_tokens, finish_reason=decision.finish_reason,
            max_tokens_given=max_tokens_given, room=self.config.max_model_len - len(prompt_ids), prompt_ids=prompt_ids,
            chat=endpoint == CHAT_PATH, template_mode=self.config.chat_template_mode,
            with_tool_calls=endpoint != COMPLETIONS_PATH,
        )

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


def add_generation_routes(app: FastAPI, state: EmulatorState) -> None:
    """Register ``POST /v1/chat/completions`` and ``POST /v1/completions`` of ``state``'s server on ``app``."""
    generation = Generation(state)

    @app.post(CHAT_PATH)
    async def chat_completions(request: Request) -> Response:
        return await generation.generate(request, CHAT_PATH)

    @app.post(COMPLETIONS_PATH)
    async def completions(request: Request) -> Response:
        return await generation.generate(request, COMPLETIONS_PATH)

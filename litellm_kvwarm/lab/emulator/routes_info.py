"""The emulator's read-only vLLM routes: ``/health``, ``/version``, ``/v1/models``, ``/metrics``,
``/tokenize`` and ``/detokenize``.

``/v1/models`` and ``/tokenize`` obey the injected endpoint faults (``"models"``, ``"tokenize"``:
hang, status, junk, drip; see ``faults``); the others never fail.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from . import responses, tokenizer
from .error_bodies import bad_request
from .fault_state import drip_body
from .faults import JUNK_BODY, FaultSet, status_reply
from .http_io import CLIENT_GONE_STATUS, client_gone, error_response, json_body
from .request_body import Rejected, chat_prompt_ids, check_model
from .state import EmulatorState
from .vllm_metrics import CONTENT_TYPE_LATEST

__all__ = ["add_info_routes"]


def _endpoint_mode(faults: FaultSet, target: str) -> str | None:
    fault = faults.endpoint(target)
    return None if fault is None else fault.mode


def add_info_routes(app: FastAPI, state: EmulatorState) -> None:
    """Register the read-only routes of ``state``'s server on ``app``."""
    config = state.config
    name = config.served_model_name

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
                    target, lambda now: _endpoint_mode(now, target) != "hang", client_gone(request)
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
            body = await json_body(request)
            check_model(body, config, required=False)
            if body.get("messages") is not None:
                ids = chat_prompt_ids(body, config)
            elif isinstance(body.get("prompt"), str):
                ids = tokenizer.encode(body["prompt"])
            else:
                raise Rejected(bad_request("Either messages or prompt must be given.", "prompt"))
        except Rejected as rejected:
            return error_response(rejected.error)
        return JSONResponse({"count": len(ids), "max_model_len": config.max_model_len, "tokens": ids, "token_strs": None})

    @app.post("/detokenize")
    async def detokenize(request: Request) -> Response:
        try:
            body = await json_body(request)
            check_model(body, config, required=False)
            tokens = body.get("tokens")
            if not isinstance(tokens, list) or not all(isinstance(t, int) for t in tokens):
                raise Rejected(bad_request("tokens must be a list of token ids.", "tokens"))
        except Rejected as rejected:
            return error_response(rejected.error)
        return JSONResponse({"prompt": tokenizer.decode(tokens)})

"""The emulator's own test hooks (no vLLM counterpart, never behind ``--api-key``), and vLLM's
dev-mode ``POST /reset_prefix_cache``.

``GET /emulator/requests`` → ``{"requests": [...]}``; ``DELETE /emulator/requests`` → 204 (log
cleared); ``POST /emulator/reset_cache`` → ``{"status": "ok"}`` (prefix cache emptied);
``GET /emulator/faults`` → the current faults; ``PUT /emulator/faults`` (JSON body shaped like
``--faults``) → the new faults, or 400 naming the bad key; ``DELETE /emulator/faults`` → none.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from .error_bodies import bad_request
from .faults import parse_faults
from .http_io import error_response, json_body
from .request_body import Rejected
from .state import EmulatorState, logger

__all__ = ["add_admin_routes"]


def add_admin_routes(app: FastAPI, state: EmulatorState) -> None:
    """Register the request-log, cache and fault switches of ``state``'s server on ``app``."""

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
            faults = parse_faults(await json_body(request))
        except Rejected as rejected:
            return error_response(rejected.error)
        except ValueError as exc:
            return error_response(bad_request(str(exc)))
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

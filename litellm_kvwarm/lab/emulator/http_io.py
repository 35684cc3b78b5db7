"""Small request/response helpers shared by the emulator's route modules."""

from __future__ import annotations

from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse

from .error_bodies import ApiError
from .request_body import parse_json_body

__all__ = ["CLIENT_GONE_STATUS", "client_gone", "error_response", "json_body"]

#: Status logged for a request whose client went away while a hang held it (nginx's "client closed").
CLIENT_GONE_STATUS = 499


def error_response(error: ApiError) -> JSONResponse:
    """``error`` as vLLM sends it: its JSON body with its HTTP status."""
    return JSONResponse(error.body(), status_code=error.status)


async def json_body(request: Request) -> dict[str, Any]:
    """The request's JSON object body.

    Raises:
        Rejected: the body is not a JSON object (carries vLLM's 400 error).
    """
    return parse_json_body(await request.body())


async def client_gone(request: Request) -> None:
    """Return once the client has disconnected (the request body is read first, and kept)."""
    await request.body()
    while (await request.receive())["type"] != "http.disconnect":
        pass

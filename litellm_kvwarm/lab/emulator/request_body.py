"""What a generation request asks for, read and checked as vLLM does (pure).

Contract: every function takes the decoded JSON body (and the :class:`EmulatorConfig`) and
either returns what it reads (token ids in the emulator's tokenizer, an output budget in
tokens, a LoRA adapter's cache key) or raises :class:`Rejected` carrying the exact error
vLLM answers with. Nothing here does I/O.
"""

from __future__ import annotations

import json
from typing import Any

from . import tokenizer
from .config import EmulatorConfig
from .error_bodies import ApiError, bad_request, model_not_found

__all__ = [
    "Rejected",
    "adapter_key",
    "cache_salt",
    "chat_prompt_ids",
    "check_min_tokens",
    "check_priority",
    "check_model",
    "completion_prompt",
    "is_token_ids",
    "max_tokens_as_received",
    "parse_json_body",
    "prompt_tokens_or_none",
    "request_priority",
    "requested_max_tokens",
]


class Rejected(Exception):
    """A request vLLM (or, with ``strict_fields``, OpenAI) refuses; ``error`` is the reply."""

    def __init__(self, error: ApiError) -> None:
        super().__init__(error.message)
        self.error = error


def parse_json_body(raw: bytes) -> dict[str, Any]:
    """The request body as a JSON object (vLLM's 400 for anything else)."""
    try:
        body = json.loads(raw)
    except ValueError as exc:
        raise Rejected(bad_request(f"Invalid JSON body: {exc}")) from None
    if not isinstance(body, dict):
        raise Rejected(bad_request("The request body must be a JSON object."))
    return body


def max_tokens_as_received(body: dict[str, Any]) -> Any:
    """``max_completion_tokens`` if set, else ``max_tokens`` (vLLM's precedence), unchecked."""
    value = body.get("max_completion_tokens")
    return body.get("max_tokens") if value is None else value


def requested_max_tokens(body: dict[str, Any]) -> int | None:
    """The requested output budget in tokens, ``None`` when absent."""
    value = max_tokens_as_received(body)
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise Rejected(bad_request(f"max_tokens must be an integer, got {value!r}.", "max_tokens"))
    return value


def is_token_ids(value: Any) -> bool:
    """Whether ``value`` is a non-empty list of token ids (non-negative ints, not bools)."""
    return isinstance(value, list) and bool(value) and all(isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in value)


def completion_prompt(body: dict[str, Any]) -> tuple[list[int], bool]:
    """Token ids of ``/v1/completions``'s ``prompt`` and whether it was text."""
    prompt = body.get("prompt")
    if isinstance(prompt, list) and len(prompt) == 1 and (isinstance(prompt[0], str) or is_token_ids(prompt[0])):
        prompt = prompt[0]
    if isinstance(prompt, str) and prompt:
        return tokenizer.encode(prompt), True
    if is_token_ids(prompt):
        return list(prompt), False
    if isinstance(prompt, list) and len(prompt) > 1 and all(isinstance(p, (str, list)) for p in prompt):
        raise Rejected(bad_request(f"The emulator serves one prompt per request; got {len(prompt)} prompts.", "prompt"))
    raise Rejected(bad_request("Either prompt or prompt_embeds must be provided and non-empty.", "prompt"))


def chat_prompt_ids(body: dict[str, Any], config: EmulatorConfig) -> list[int]:
    """Token ids of a chat request's rendered prompt (``messages`` + ``tools``, see ``tokenizer``)."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
        raise Rejected(bad_request("messages must be a non-empty list of message objects.", "messages"))
    return tokenizer.chat_token_ids(
        messages,
        body.get("tools") or None,
        add_generation_prompt=body.get("add_generation_prompt", True) is not False,
        response_format=body.get("response_format"),
        render_response_format=config.render_response_format,
        template_mode=config.chat_template_mode,
    )


def request_priority(body: dict[str, Any]) -> int:
    """The request's ``priority`` (vLLM's field, default 0; lower is scheduled earlier); a value
    that is not an integer is refused as vLLM's request model refuses it."""
    from .responses_input import validation_error  # it imports this module

    value = body.get("priority", 0)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise Rejected(validation_error("body.priority", "int_parsing", "Input should be a valid integer", value))
    return value


def check_min_tokens(body: dict[str, Any], max_tokens: int) -> None:
    """Refuse a ``min_tokens`` above the ``max_tokens`` the request runs with (tokens: as sent, or as
    vLLM 0.32+ trims it to the window) with vLLM's 400 (``SamplingParams._verify_args``); a negative
    one too. Absent or not an integer: nothing to check here."""
    value = body.get("min_tokens")
    if isinstance(value, bool) or not isinstance(value, int):
        return
    if value < 0:
        raise Rejected(bad_request(f"min_tokens must be greater than or equal to 0, got {value}.", "min_tokens"))
    if value > max_tokens:
        raise Rejected(bad_request(
            f"min_tokens must be less than or equal to max_tokens={max_tokens}, got {value}.", "min_tokens"))


def check_priority(priority: int, config: EmulatorConfig) -> None:
    """Refuse a non-zero ``priority`` under ``--scheduling-policy fcfs`` with vLLM's 400 (its engine's
    ``ValueError``: ``Got priority {priority} but Priority scheduling is not enabled.``)."""
    from .scheduler import priority_not_enabled

    if priority != 0 and config.scheduling_policy != "priority":
        raise Rejected(bad_request(priority_not_enabled(priority)))


def cache_salt(body: dict[str, Any]) -> str | None:
    """The request's ``cache_salt`` (``None`` when absent); vLLM refuses one that is not a non-empty string."""
    salt = body.get("cache_salt")
    if salt is not None and (not isinstance(salt, str) or not salt):
        raise Rejected(bad_request(
            "Parameter 'cache_salt' must be a non-empty string if provided. (parameter=cache_salt)", "cache_salt"
        ))
    return salt


def check_model(body: dict[str, Any], config: EmulatorConfig, *, required: bool) -> None:
    """Refuse (404) a ``model`` that is neither the served model nor a LoRA adapter; an absent
    one only when ``required``."""
    model = body.get("model")
    if (model is not None or required) and model not in config.model_names:
        raise Rejected(model_not_found(model))


def prompt_tokens_or_none(body: dict[str, Any], chat: bool, config: EmulatorConfig) -> int | None:
    """The prompt's length in tokens for the log of a faulted request; ``None`` if it has none."""
    try:
        ids = chat_prompt_ids(body, config) if chat else completion_prompt(body)[0]
    except (Rejected, TypeError, ValueError, KeyError, AttributeError):  # only a log field: never fail the fault
        return None
    return len(ids)


def adapter_key(config: EmulatorConfig, model: object) -> str | None:
    """vLLM's LoRA block-hash extra key (name, path) of ``model``; ``None`` for the base model."""
    lora = config.lora(model)
    return None if lora is None else f"{lora.name}\x00{lora.path}"

"""The output budget of a request as the server will read it (pure).

Chat requests may carry ``max_tokens`` (deprecated by OpenAI) and ``max_completion_tokens``.
vLLM's ``ChatCompletionRequest.to_sampling_params`` uses ``max_completion_tokens`` when it is
set and ``max_tokens`` otherwise (vLLM 0.5 through 0.32), so that is the budget the plugin
reasons about; a clamp lowers every field the request carries so no field can exceed it.

A field that is present but not a positive integer (``0``, ``-5``, ``"many"``, ``true``) is the
client's own error: the plugin leaves such a request exactly as LiteLLM alone would send it.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any

__all__ = ["OUTPUT_FIELDS", "OutputBudget", "cap_output", "min_output", "read_output_budget", "set_output"]

#: Output-budget fields, in the order the server prefers them (first wins): chat's
#: ``max_completion_tokens`` over ``max_tokens`` (vLLM), Responses' ``max_output_tokens``,
#: ``max_tokens`` (chat, text completions, Anthropic Messages). An API's body carries only its own.
OUTPUT_FIELDS = ("max_completion_tokens", "max_output_tokens", "max_tokens")


@dataclass(frozen=True)
class OutputBudget:
    """``sent``: the request names an output field with a non-null value; ``valid``: every such
    value is a positive integer; ``effective``: the budget the server uses (tokens), ``None``
    when none was sent or it is invalid."""

    sent: bool
    valid: bool
    effective: int | None


def _positive_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def read_output_budget(payload: Mapping[str, Any]) -> OutputBudget:
    """The :class:`OutputBudget` of a chat or text-completion payload."""
    present = [payload[f] for f in OUTPUT_FIELDS if payload.get(f) is not None]
    if not present:
        return OutputBudget(sent=False, valid=True, effective=None)
    if not all(_positive_int(v) for v in present):
        return OutputBudget(sent=True, valid=False, effective=None)
    return OutputBudget(sent=True, valid=True, effective=present[0])


def min_output(payload: Mapping[str, Any]) -> int:
    """The least output the request asks for, tokens: vLLM's ``min_tokens`` (in the body, or in ``extra_body``
    as the OpenAI SDK sends it), which a server refuses above the output budget ("min_tokens must be less than
    or equal to max_tokens"), so no cut may go below it; 0 when absent or not a positive integer."""
    extra = payload.get("extra_body")
    values = [payload.get("min_tokens"), extra.get("min_tokens") if isinstance(extra, Mapping) else None]
    return max([v for v in values if _positive_int(v)], default=0)


def cap_output(payload: MutableMapping[str, Any], cap: int) -> None:
    """Lower every positive-integer output field of ``payload`` to at most ``cap`` tokens."""
    for name in OUTPUT_FIELDS:
        value = payload.get(name)
        if _positive_int(value) and value > cap:
            payload[name] = cap


def set_output(payload: MutableMapping[str, Any], value: int | None, default_field: str = "max_tokens") -> None:
    """Set the output budget of a fallback hop: every field the payload carries with a value gets
    ``value`` (``default_field``, the API's own field, is set when none has one); ``None`` removes
    those fields. A field the client sent as ``null`` stays ``null``, as LiteLLM alone sends it: giving
    it a value would add a parameter the API may not take (``max_completion_tokens`` on a text
    completion, which LiteLLM passes to the OpenAI SDK, and the hop fails before reaching a server)."""
    carried = [name for name in OUTPUT_FIELDS if payload.get(name) is not None]
    if value is None:
        for name in carried:
            del payload[name]
        return
    for name in carried or [default_field]:
        payload[name] = value

"""The output budget of a request as the server will read it (pure).

Chat requests may carry ``max_tokens`` (deprecated by OpenAI) and ``max_completion_tokens``.
vLLM's ``ChatCompletionRequest.to_sampling_params`` uses ``max_completion_tokens`` when it is
set and ``max_tokens`` otherwise (vLLM 0.5 through 0.32), so that is the budget the plugin
reasons about; a clamp lowers every field the request carries so no field can exceed it.

A field that is present but not a positive integer (``0``, ``-5``, ``"many"``, ``true``) is the
client's own error: the plugin leaves such a request exactly as LiteLLM alone would send it. So is an integer
``min_tokens`` that vLLM refuses (negative, or above the budget sent): nothing is moved or warmed for it.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any

from .meta import ESTIMATE_KEY

__all__ = ["OUTPUT_FIELDS", "OutputBudget", "cap_output", "least_output", "min_output", "read_output_budget", "set_output"]

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


def _extra(payload: Mapping[str, Any]) -> Mapping[str, Any]:
    extra = payload.get("extra_body")
    return extra if isinstance(extra, Mapping) else {}


def _min_tokens(payload: Mapping[str, Any]) -> tuple[object, object]:
    """vLLM's ``min_tokens`` as sent: in the body, and in ``extra_body`` as the OpenAI SDK sends it."""
    return payload.get("min_tokens"), _extra(payload).get("min_tokens")


def _min_tokens_refused(payload: Mapping[str, Any], budget: int | None) -> bool:
    """vLLM's "min_tokens must be greater than or equal to 0" / "... less than or equal to max_tokens" (integers only)."""
    for value in _min_tokens(payload):
        if isinstance(value, int) and not isinstance(value, bool) and (value < 0 or (budget is not None and value > budget)):
            return True
    return False


def read_output_budget(payload: Mapping[str, Any]) -> OutputBudget:
    """The :class:`OutputBudget` of a chat or text-completion payload (invalid too where its ``min_tokens`` is refused)."""
    present = [payload[f] for f in OUTPUT_FIELDS if payload.get(f) is not None]
    if not present:
        return OutputBudget(sent=False, valid=not _min_tokens_refused(payload, None), effective=None)
    if not all(_positive_int(v) for v in present) or _min_tokens_refused(payload, present[0]):
        return OutputBudget(sent=True, valid=False, effective=None)
    return OutputBudget(sent=True, valid=True, effective=present[0])


def _thinking_budget(thinking: object) -> int | None:
    if not isinstance(thinking, Mapping) or thinking.get("type") != "enabled":
        return None
    budget = thinking.get("budget_tokens")
    return budget + 1 if _positive_int(budget) else None


def min_output(payload: Mapping[str, Any]) -> int:
    """The least output the request asks for, tokens, so no cut may go below it; 0 when none is named.

    - vLLM's ``min_tokens`` (in the body, or in ``extra_body`` as the OpenAI SDK sends it), which a server
      refuses above the output budget ("min_tokens must be less than or equal to max_tokens");
    - an extended-thinking budget, ``thinking: {"type": "enabled", "budget_tokens": N}`` (Anthropic Messages,
      and LiteLLM's chat parameter of the same shape, which it turns into ``reasoning_effort`` for vLLM): N + 1,
      since Anthropic refuses ``max_tokens`` not above it ("`max_tokens` must be greater than
      `thinking.budget_tokens`") and a budget cut under it can end in reasoning with no answer, where LiteLLM
      alone serves the whole budget from the next group after the refusal.

    A value that is not a positive integer is ignored."""
    values = [*_min_tokens(payload), _thinking_budget(payload.get("thinking")), _thinking_budget(_extra(payload).get("thinking"))]
    return max([v for v in values if _positive_int(v)], default=0)


def least_output(kwargs: Mapping[str, Any], metadata: object) -> int:
    """The least output an attempt may be cut to, tokens: :func:`min_output` of the attempt's own kwargs, or the
    one the pre-call hook read from the body as the client sent it (``"least_output"`` in the plugin's
    ``ESTIMATE_KEY`` metadata), whichever is larger. An Anthropic Messages body bridged to chat reaches the
    clamp as LiteLLM's translation, where ``thinking`` has become a ``reasoning_effort`` label without its budget."""
    carried = metadata.get(ESTIMATE_KEY) if isinstance(metadata, Mapping) else None
    value = carried.get("least_output") if isinstance(carried, Mapping) else None
    return max(min_output(kwargs), value if _positive_int(value) else 0)


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

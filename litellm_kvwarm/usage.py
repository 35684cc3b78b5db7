"""What a finished backend attempt tells the metrics: prompt and cached tokens by request kind,
and how far the estimates were from ``usage.prompt_tokens`` (pure except for the collectors).

Request kinds: ``warm`` (the plugin's ``max_tokens=1`` requests), ``escalated`` (proactively or
reactively moved to the target group), ``normal`` (everything else). Keeping warms apart keeps
the hit rate honest: warms create cache, they do not find it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from .correction import EstimateCorrection
from .meta import ESCALATED_KEY, ESTIMATE_KEY, WARM_MARKER, all_metadata, client_left, field, find_metadata  # noqa: F401 (field re-exported)
from .metrics import Metrics




def prompt_usage(usage: Any) -> tuple[object, object]:
    """``(prompt tokens, cached prompt tokens)`` of a response's ``usage`` in any API's shape:
    chat/completions (``prompt_tokens``, ``prompt_tokens_details.cached_tokens``), Anthropic
    Messages (``input_tokens`` excludes the cache: + ``cache_read_input_tokens`` +
    ``cache_creation_input_tokens``; cached = ``cache_read_input_tokens``), Responses
    (``input_tokens``, ``input_tokens_details.cached_tokens``). Values as found (may be ``None``)."""
    prompt = field(usage, "prompt_tokens")
    if prompt is not None:
        return prompt, field(field(usage, "prompt_tokens_details"), "cached_tokens")
    prompt = field(usage, "input_tokens")
    read = field(usage, "cache_read_input_tokens")
    if isinstance(prompt, int) and isinstance(read, int):
        created = field(usage, "cache_creation_input_tokens")
        return prompt + read + (created if isinstance(created, int) else 0), read
    return prompt, field(field(usage, "input_tokens_details"), "cached_tokens")


def request_kind(meta: Mapping[str, Any]) -> str:
    if meta.get(WARM_MARKER):
        return "warm"
    if meta.get(ESCALATED_KEY):
        return "escalated"
    return "normal"


def record_usage(metrics: Metrics, kwargs: Any, response_obj: Any,
                 live_prompt: Callable[[str, int], None] | None = None, *, correction: EstimateCorrection | None = None) -> bool:
    """Record one successful attempt from LiteLLM's success-callback arguments; ``live_prompt(group,
    prompt_tokens)`` for one that is not a warm (:class:`~litellm_kvwarm.warm_piece_size.LivePromptSizes`).
    Returns ``False`` (records nothing) when usage or metadata is missing. A stream the client left (LiteLLM's
    ``client_disconnected``) counts its tokens but teaches nothing: no estimate ratio, no learning (LiteLLM may have
    counted that usage itself, with another tokenizer than the server's). ``correction``: then also
    :func:`learn` from it, on the metadata and usage read here (the same as ``learn`` after this call:
    learn finds nothing where this returns ``False``)."""
    meta = find_metadata(kwargs)
    if meta is None:
        return False
    prompt, cached = prompt_usage(field(response_obj, "usage"))
    if not isinstance(prompt, int) or prompt <= 0:
        return False
    group = str(meta.get("model_group") or kwargs.get("model_group") or kwargs.get("model"))
    kind = request_kind(meta)
    if live_prompt is not None and kind != "warm":
        live_prompt(group, prompt)
    metrics.prompt_tokens.labels(group, kind).inc(prompt)
    metrics.cached_prompt_tokens.labels(group, kind).inc(cached if isinstance(cached, int) and cached > 0 else 0)
    if kind == "escalated":
        metrics.escalation_cached_ratio.labels(group).observe(min(max(cached, 0), prompt) / prompt if isinstance(cached, int) else 0.0)
    if client_left(all_metadata(kwargs)):
        return True  # LiteLLM's success event of a stream the client left: its usage may be LiteLLM's own count, not the server's
    estimate = meta.get(ESTIMATE_KEY)
    if kind != "warm" and isinstance(estimate, Mapping):
        for name in ("safe", "routing"):
            value = estimate.get(name)
            if isinstance(value, int):
                metrics.estimate_ratio.labels(group, name).observe(value / prompt)
    if correction is not None and kind == "normal":
        _learn(correction, metrics, _observation(meta, kwargs, lambda: prompt))
    return True


class UsageObservation(NamedTuple):
    """One response for :meth:`~litellm_kvwarm.correction.EstimateCorrection.observe` (tokens)."""

    group: str
    #: the keyed hash of the tenant (``ESTIMATE_KEY["tenant"]``), never a raw id
    tenant: str
    raw_routing: int
    raw_safe: int
    prompt_tokens: int


def usage_observation(kwargs: Any, response_obj: Any) -> UsageObservation | None:
    """``(group, tenant, raw routing, raw safe, usage.prompt_tokens)`` of a response that the group
    whose estimate it carries served itself (kind ``normal``), for
    :class:`~litellm_kvwarm.correction.EstimateCorrection`; else ``None``. ``tenant`` is the
    hashed tenant the pre-call hook wrote into the estimate (``ESTIMATE_KEY["tenant"]``); a
    response without one is not learned from (``None``)."""
    meta = find_metadata(kwargs)
    if meta is None or request_kind(meta) != "normal" or client_left(all_metadata(kwargs)):
        return None
    return _observation(meta, kwargs, lambda: prompt_usage(field(response_obj, "usage"))[0])


def _observation(meta: Mapping[str, Any], kwargs: Any, prompt_of: Callable[[], object]) -> UsageObservation | None:
    """:func:`usage_observation` of a ``normal`` response's metadata; ``prompt_of()``: its prompt tokens, read last."""
    estimate = meta.get(ESTIMATE_KEY)
    if not isinstance(estimate, Mapping):
        return None
    group = meta.get("model_group") or kwargs.get("model_group")
    if not group or group != estimate.get("group"):
        return None
    tenant = estimate.get("tenant")
    if not isinstance(tenant, str) or not tenant:
        return None
    prompt = prompt_of()
    raw_routing, raw_safe = estimate.get("raw_routing"), estimate.get("raw_safe")
    if not all(isinstance(v, int) and v > 0 for v in (prompt, raw_routing, raw_safe)):
        return None
    return UsageObservation(str(group), tenant, raw_routing, raw_safe, prompt)


def learn(correction: EstimateCorrection, metrics: Metrics, kwargs: Any, response_obj: Any) -> None:
    """Feed ``correction`` with a response its own group served (not escalated, not a warm),
    under the tenant that sent it; export each touched group's summary (no tenants)."""
    _learn(correction, metrics, usage_observation(kwargs, response_obj))


def _learn(correction: EstimateCorrection, metrics: Metrics, obs: UsageObservation | None) -> None:
    if obs is None:
        return
    for group in correction.observe(obs.group, obs.tenant, routing=obs.raw_routing, safe=obs.raw_safe, prompt_tokens=obs.prompt_tokens):
        summary = correction.summary(group)
        metrics.estimate_correction.labels(group, "routing").set(summary.routing)
        metrics.estimate_correction.labels(group, "safe").set(summary.safe)
        metrics.estimate_correction_tenants.labels(group).set(summary.tenants)


def stream_item_has_content(item: Any) -> bool:
    """Whether one streamed item carries generated output (text, reasoning or a tool call). A
    chat chunk (``ModelResponseStream`` or its dict) is read by its ``choices[].delta``; anything
    else (bytes or events of the Messages and Responses streams) counts as content once sent."""
    choices = field(item, "choices")
    if choices is None:
        return not isinstance(item, Mapping) or "choices" not in item
    for choice in choices or ():
        delta = field(choice, "delta")
        if delta is None:
            continue
        if field(delta, "content") or field(delta, "tool_calls") or field(delta, "reasoning_content"):
            return True
    return False

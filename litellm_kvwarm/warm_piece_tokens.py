"""The estimated size of a warm's items, for cutting it into pieces (:mod:`~litellm_kvwarm.warm_pieces`; pure).

Sizes are the ratio estimator's routing tokens (no server count): :func:`routing_tokens` of the body as
sent, :func:`bridged_routing_tokens` of what a group served through LiteLLM's Messages → chat bridge or by
vLLM's Responses renders of it (``estimate_request(bridged=True)``, the route decision's view: a
``search_result`` block the bridge drops, a ``file_search_call`` item vLLM does not render, adds nothing).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .tokens import estimate_request
from .warm_prefixes import ITEMS_FIELD

__all__ = ["Estimate", "bridged_routing_tokens", "item_tokens", "routing_tokens"]

Estimate = Callable[[str, Mapping[str, Any]], int]


def routing_tokens(kind: str, body: Mapping[str, Any]) -> int:
    """The ratio estimator's routing tokens of ``body`` (a ``kind`` request)."""
    return estimate_request(body, call_kind=kind).routing


def bridged_routing_tokens(kind: str, body: Mapping[str, Any]) -> int:
    """:func:`routing_tokens` of what a bridged (or vLLM-served Responses) group renders of ``body``."""
    return estimate_request(body, call_kind=kind, bridged=True).routing


def item_tokens(kind: str, items: Sequence[object], estimate: Estimate = routing_tokens) -> list[int]:
    """Tokens of each item alone (``estimate`` of a body holding only it, less that of an empty body)."""
    field = ITEMS_FIELD[kind]
    base = estimate(kind, {field: []})
    return [max(estimate(kind, {field: [item]}) - base, 0) for item in items]

"""Token estimators: :class:`RequestCounts` → a safe and a routing input-token estimate (pure).

Two estimates come out, biased on purpose:

* ``safe``: must not fall below the true count; used to clamp ``max_tokens``.
* ``routing``: leans low; used for proactive routing, so a borderline interactive turn
  is not sent to the slow tier for nothing.

:class:`RatioEstimator` divides characters by fixed ratios; :class:`CalibratedEstimator`
applies one tokenizer family's :class:`LinearWeights` to the features of
:mod:`litellm_kvwarm.token_features` (the weights: :mod:`litellm_kvwarm.token_weights`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from .image_tokens import UNKNOWN_RULE, ImageRule, images_tokens
from .token_counts import RequestCounts, count_request
from .token_features import FEATURES, request_features_and_regime

__all__ = [
    "CalibratedEstimator",
    "Estimator",
    "LinearWeights",
    "RatioEstimator",
    "TokenEstimate",
    "estimate_counts",
    "estimate_request",
]

#: Template tokens per message (role header and end marker; ChatML renders ~5, Llama 3 ~5).
SAFE_TOKENS_PER_MESSAGE = 8
ROUTING_TOKENS_PER_MESSAGE = 3
#: Tokens the template adds once (generation prompt, BOS, tool preamble share).
SAFE_TOKENS_PER_REQUEST = 16
ROUTING_TOKENS_PER_REQUEST = 0
#: Tokens counted for a non-text content part that is not an image (audio, file, unknown
#: part types): a placeholder, since its real cost depends on the model's encoder. Routing
#: counts none of it. Images are priced by :mod:`litellm_kvwarm.image_tokens`.
SAFE_TOKENS_PER_OTHER_PART = 1024


@dataclass(frozen=True)
class TokenEstimate:
    """Input-token estimates of one request (tokens). ``safe >= routing`` always."""

    safe: int
    routing: int
    counts: RequestCounts


class Estimator(Protocol):
    """Turns :class:`RequestCounts` into a :class:`TokenEstimate`. Built once, then pure and cheap."""

    name: str

    def estimate_counts(self, counts: RequestCounts) -> TokenEstimate: ...


@dataclass(frozen=True)
class RatioEstimator:
    """The seed's estimator: characters ÷ ``safe_chars_per_token`` / ÷ ``routing_chars_per_token``."""

    safe_chars_per_token: float = 3.0
    routing_chars_per_token: float = 4.0
    name: str = "ratio"
    image_rule: ImageRule = UNKNOWN_RULE

    def estimate_counts(self, counts: RequestCounts) -> TokenEstimate:
        if counts.exact_tokens is not None:
            return _exact(counts)
        image_safe, image_routing = images_tokens(counts.images, self.image_rule)
        safe = image_safe + (
            math.ceil(counts.chars / self.safe_chars_per_token)
            + SAFE_TOKENS_PER_MESSAGE * counts.messages
            + SAFE_TOKENS_PER_OTHER_PART * counts.other_parts
            + SAFE_TOKENS_PER_REQUEST
        )
        routing = (
            int(counts.chars // self.routing_chars_per_token)
            + ROUTING_TOKENS_PER_MESSAGE * counts.messages
            + ROUTING_TOKENS_PER_REQUEST
            + image_routing
        )
        return TokenEstimate(safe=safe, routing=min(routing, safe), counts=counts)


@dataclass(frozen=True)
class LinearWeights:
    """Tokens per unit of each of :data:`FEATURES` (same order), for one tokenizer family.

    ``safe`` is a high-quantile fit (plus a margin), ``routing`` a low-quantile fit; both
    non-negative, so more text never lowers an estimate.
    """

    safe: tuple[float, ...]
    routing: tuple[float, ...]
    #: weights of the English regime (see :data:`ENGLISH_MARKER`); ``None``: the general ones
    english_safe: tuple[float, ...] | None = None
    english_routing: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        for name in ("safe", "routing", "english_safe", "english_routing"):
            weights = getattr(self, name)
            if weights is not None and len(weights) != len(FEATURES):
                raise ValueError(f"LinearWeights.{name}: {len(weights)} weights for {len(FEATURES)} features")

    def pick(self, english: bool) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """(safe, routing) weights for a request in the English regime or not."""
        if english:
            return self.english_safe or self.safe, self.english_routing or self.routing
        return self.safe, self.routing


@dataclass(frozen=True)
class CalibratedEstimator:
    """Linear estimates over :func:`request_features` with one family's fitted weights."""

    family: str
    weights: LinearWeights
    name: str = "calibrated"
    image_rule: ImageRule = UNKNOWN_RULE

    def estimate_counts(self, counts: RequestCounts) -> TokenEstimate:
        if counts.exact_tokens is not None:
            return _exact(counts)
        features, english = request_features_and_regime(counts)
        w_safe, w_routing = self.weights.pick(english)
        image_safe, image_routing = images_tokens(counts.images, self.image_rule)
        safe = math.ceil(_dot(w_safe, features)) + SAFE_TOKENS_PER_OTHER_PART * counts.other_parts + image_safe
        routing = max(0, math.floor(_dot(w_routing, features))) + image_routing
        return TokenEstimate(safe=safe, routing=min(routing, safe), counts=counts)


def _dot(weights: Sequence[float], features: Sequence[float]) -> float:
    return sum(w * x for w, x in zip(weights, features))


def _exact(counts: RequestCounts) -> TokenEstimate:
    exact = counts.exact_tokens or 0
    return TokenEstimate(safe=exact, routing=exact, counts=counts)


def estimate_counts(
    counts: RequestCounts,
    *,
    safe_chars_per_token: float = 3.0,
    routing_chars_per_token: float = 4.0,
) -> TokenEstimate:
    """The ratio estimates of ``counts`` (tokens); see :class:`RatioEstimator`."""
    return RatioEstimator(safe_chars_per_token, routing_chars_per_token).estimate_counts(counts)


def estimate_request(
    payload: Mapping[str, object],
    *,
    call_kind: str | None = None,
    safe_chars_per_token: float = 3.0,
    routing_chars_per_token: float = 4.0,
    estimator: Estimator | None = None,
) -> TokenEstimate:
    """Both estimates of one request body (tokens).

    ``estimator`` (e.g. ``calibrated_estimator("qwen2.5")``, built once by the caller)
    decides; without one, the ratio estimator with the given ratios does.
    """
    chosen = estimator or RatioEstimator(safe_chars_per_token, routing_chars_per_token)
    return chosen.estimate_counts(count_request(payload, call_kind=call_kind))

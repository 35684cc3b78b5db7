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
from dataclasses import dataclass, replace
from typing import Protocol

from .image_tokens import UNKNOWN_RULE, ImageRule, images_tokens
from .media_tokens import media_tokens
from .token_bridge import bridged_messages
from .token_responses_items import rendered_input
from .token_counts import RequestCounts, count_request
from .token_features import FEATURES, request_shape
from .token_fragment_prices import (BOX_ROUTING_TOKENS, DIGIT_GROUP_FAMILIES, fragment_tokens, grouped_digits, line_words_routing,
                                    mark_pairs_routing)
from .token_runs import MEASURED_FAMILIES, Runs
from .token_tojson import TOJSON_TOOL_FAMILIES, tojson_safe_tokens
from .token_upper_codes import upper_codes_safe

__all__ = [
    "CalibratedEstimator",
    "Estimator",
    "LinearWeights",
    "RatioEstimator",
    "TokenEstimate",
    "estimate_counts",
    "estimate_request",
    "fragment_tokens",
]

#: Template tokens per message (role header and end marker; ChatML renders ~5, Llama 3 ~5).
SAFE_TOKENS_PER_MESSAGE = 8
ROUTING_TOKENS_PER_MESSAGE = 3
#: Tokens the template adds once (generation prompt, BOS, tool preamble share).
SAFE_TOKENS_PER_REQUEST = 16
ROUTING_TOKENS_PER_REQUEST = 0
#: Tokens counted for a content part priced flat (a file id or URL, an unknown block holding no
#: text): a placeholder, since its real cost cannot be read from the request. Routing counts none
#: of it. Images are priced by :mod:`litellm_kvwarm.image_tokens`, PDFs and audio carried as bytes
#: by :mod:`litellm_kvwarm.media_tokens`.
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
    #: ``False``: the served models' templates render no reasoning (:func:`~.token_reasoning.renders_no_reasoning`)
    reasoning_rendered: bool = True

    def estimate_counts(self, counts: RequestCounts) -> TokenEstimate:
        if counts.exact_tokens is not None:
            return _exact(counts)
        image_safe, image_routing = images_tokens(counts.images, self.image_rule)
        media_safe, media_routing = media_tokens(counts.media)
        safe = image_safe + media_safe + (
            math.ceil(counts.chars / self.safe_chars_per_token)
            + SAFE_TOKENS_PER_MESSAGE * counts.messages
            + SAFE_TOKENS_PER_OTHER_PART * counts.other_parts
            + SAFE_TOKENS_PER_REQUEST
        )
        routing = (
            int(counts.chars // self.routing_chars_per_token)
            + ROUTING_TOKENS_PER_MESSAGE * (counts.messages - counts.folded_messages)
            + ROUTING_TOKENS_PER_REQUEST
            + image_routing
            + media_routing
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
    #: template tokens a request with tools pays once, beyond their JSON text (:func:`~.token_weights.with_tool_floor`)
    tool_preamble: float = 0.0

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
    """Linear estimates over :func:`request_features` with one family's fitted weights; runs of one
    character and gaps are taken out of their classes and priced by :mod:`~litellm_kvwarm.token_runs`
    (safe by the measured table only for :data:`~litellm_kvwarm.token_runs.MEASURED_FAMILIES`), and
    the fragments of :mod:`~litellm_kvwarm.token_fragments` adjust both (:func:`fragment_tokens`,
    digits in groups of three for routing in :data:`DIGIT_GROUP_FAMILIES`)."""

    family: str
    weights: LinearWeights
    name: str = "calibrated"
    image_rule: ImageRule = UNKNOWN_RULE
    #: ``False``: the served models' templates render no reasoning (:func:`~.token_reasoning.renders_no_reasoning`)
    reasoning_rendered: bool = True

    def estimate_counts(self, counts: RequestCounts) -> TokenEstimate:
        if counts.exact_tokens is not None:
            return _exact(counts)
        features, english, runs, scale, fragments = request_shape(counts)
        w_safe, w_routing = self.weights.pick(english)
        safe_features = routing_features = features
        if counts.folded_messages:  # calls LiteLLM's bridge folds into the message before them: routing only
            at = _FEATURE_INDEX["messages"]
            routing_features = (*features[:at], max(0.0, features[at] - counts.folded_messages), *features[at + 1:])
        run_safe = run_routing = 0.0
        if runs:
            measured = self.family in MEASURED_FAMILIES
            safe_features = _without_runs(features, runs, scale, spaces_only=not measured)
            routing_features = _without_runs(routing_features, runs, scale, spaces_only=False)
            if runs.gaps:  # the word after a gap keeps one space: priced as one more single space (safe)
                at = _FEATURE_INDEX["spaces"]
                safe_features = (*safe_features[:at], safe_features[at] + runs.gaps * scale, *safe_features[at + 1:])
            run_safe, run_routing = (scale * t for t in runs.tokens(measured=measured, family=self.family))
        if fragments:
            frag_safe, frag_routing = fragment_tokens(fragments, w_safe, w_routing)
            frag_safe += upper_codes_safe(fragments.text, w_safe[_FEATURE_INDEX["letters"]])  # :mod:`.token_upper_codes`
            digits = features[_FEATURE_INDEX["digits"]] / scale
            if digits and self.family in DIGIT_GROUP_FAMILIES:
                frag_routing += grouped_digits(digits, fragments.digit_runs, w_routing)
            if digits:  # marks between numbers merge (``,-``, ``],[``)
                frag_routing += mark_pairs_routing(fragments, digits, w_routing)
            spaces = features[_FEATURE_INDEX["spaces"]] / scale
            if 3 * features[_FEATURE_INDEX["breaks"]] / scale > spaces and fragments.line_words:  # else under a quarter
                frag_routing += line_words_routing(fragments, spaces, w_routing)
            if fragments.box_chars:  # box drawing outside runs (what the symbols class has left): ~1 token each
                boxes = min(fragments.box_chars, routing_features[_FEATURE_INDEX["symbols"]] / scale)
                frag_routing += boxes * min(0.0, BOX_ROUTING_TOKENS - w_routing[_FEATURE_INDEX["symbols"]])
            if self.family in TOJSON_TOOL_FAMILIES:  # tool text written by tojson: \u001b, \n, \t (:mod:`.token_tojson`)
                frag_safe += tojson_safe_tokens(fragments, features[_FEATURE_INDEX["breaks"]] / scale, w_safe, _FEATURE_INDEX)
            run_safe += scale * frag_safe
            run_routing += scale * frag_routing
        image_safe, image_routing = images_tokens(counts.images, self.image_rule)
        media_safe, media_routing = media_tokens(counts.media)
        safe = math.ceil(_dot(w_safe, safe_features) + run_safe) + SAFE_TOKENS_PER_OTHER_PART * counts.other_parts \
            + image_safe + media_safe
        if counts.tools:  # the tool preamble, once, where the per-tool weight does not cover it
            safe += math.ceil(max(0.0, self.weights.tool_preamble - w_safe[_FEATURE_INDEX["tools"]] * counts.tools))
        routing = max(0, math.floor(_dot(w_routing, routing_features) + run_routing)) + image_routing + media_routing
        return TokenEstimate(safe=safe, routing=min(routing, safe), counts=counts)


def _without_runs(features: tuple[float, ...], runs: Runs, scale: float, *, spaces_only: bool) -> tuple[float, ...]:
    """``features`` less the characters of ``runs`` (priced by :mod:`~litellm_kvwarm.token_runs` instead)."""
    out = list(features)
    for klass, chars in runs.class_chars(spaces_only=spaces_only).items():
        index = _FEATURE_INDEX[klass]
        out[index] = max(0.0, out[index] - chars * scale)
    return tuple(out)


_FEATURE_INDEX = {name: i for i, name in enumerate(FEATURES)}


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
    bridged: bool = False,
) -> TokenEstimate:
    """Both estimates of one request body (tokens).

    ``estimator`` (e.g. ``calibrated_estimator("qwen2.5")``, built once by the caller)
    decides; without one, the ratio estimator with the given ratios does. A structured-output
    schema (:attr:`RequestCounts.format_parts`) adds its own safe estimate to ``safe`` and nothing
    to ``routing``: vLLM renders none of it (guided decoding), and a 1,000-property schema with a
    one-line prompt had been routed as a 46k-token request. The reasoning of assistant turns before
    the last user message (:attr:`RequestCounts.past_reasoning`, :mod:`~litellm_kvwarm.token_reasoning`)
    is counted the same way: in ``safe`` only, and so is the current tool loop's reasoning when the
    estimator's served models render none (``estimator.reasoning_rendered`` false).

    ``bridged`` (an Anthropic Messages body LiteLLM sends to a chat backend): ``routing`` counts
    only the blocks the bridge sends (:func:`~litellm_kvwarm.token_bridge.bridged_messages`; a
    second count, only when it drops something), ``safe`` the body as sent (conservative). For a
    Responses body, ``bridged`` means its group is served by vLLM (natively or through LiteLLM's chat
    bridge): ``routing`` counts only the ``input`` items they render
    (:func:`~litellm_kvwarm.token_responses_items.rendered_input`), ``safe`` every item.
    """
    chosen = estimator or RatioEstimator(safe_chars_per_token, routing_chars_per_token)
    rendered = getattr(chosen, "reasoning_rendered", True)
    counts = count_request(payload, call_kind=call_kind, reasoning_rendered=rendered)
    estimate = chosen.estimate_counts(counts)
    if bridged and call_kind in ("messages", "responses") and isinstance(payload, Mapping):
        sent = bridged_messages(payload) if call_kind == "messages" else rendered_input(payload)
        if sent is not None:
            routing = chosen.estimate_counts(count_request(sent, call_kind=call_kind, reasoning_rendered=rendered)).routing
            estimate = replace(estimate, routing=min(estimate.routing, routing))
    safe_only = (*counts.format_parts, *counts.past_reasoning)
    if not safe_only:
        return estimate
    schema = RequestCounts(chars=sum(map(len, safe_only)), messages=0, parts=list(safe_only))
    return replace(estimate, safe=estimate.safe + chosen.estimate_counts(schema).safe)

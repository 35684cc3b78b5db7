"""The token estimator of a request's deployments (pure; memoised because the request path asks per request).

Which :class:`~litellm_kvwarm.tokens.Estimator` prices a prompt depends only on the settings and
on the served models of the deployments it may go to: ``estimator: ratio`` gives the configured
characters-per-token ratios; otherwise calibrated weights (:func:`calibrated_estimator`) of the
configured ``estimator_family``, else of the served models' family when they all agree, else of
``"any"``. Images are priced by the served models' vision rule (:func:`image_rule_for`).

Estimators and image rules are frozen, so both are built once per set of served models:
:class:`EstimatorMemo` keeps at most :data:`MAX_MEMO` estimators for one settings object.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from functools import lru_cache

from .config import Settings
from .image_tokens import ImageRule, image_rule_for
from .token_reasoning import renders_no_reasoning
from .tokens import Estimator, RatioEstimator, calibrated_estimator, family_of

#: Most estimators one :class:`EstimatorMemo` keeps (sets of served models) before it starts over.
MAX_MEMO = 256


@lru_cache(maxsize=MAX_MEMO)
def _image_rule(served_models: tuple[str, ...]) -> ImageRule:
    """:func:`image_rule_for`, once per set of served models (the request path reads it per request)."""
    return image_rule_for(served_models)


def build_estimator(settings: Settings, served_models: tuple[str, ...]) -> Estimator:
    """The estimator ``settings`` select for deployments serving ``served_models`` (see the module doc);
    its ``reasoning_rendered`` is false when every served model's template renders no reasoning
    (:func:`~.token_reasoning.renders_no_reasoning`: the current tool loop's reasoning then counts in safe only)."""
    images = _image_rule(served_models)
    rendered = not served_models or not all(map(renders_no_reasoning, served_models))
    if settings.estimator == "ratio":
        return RatioEstimator(settings.safe_chars_per_token, settings.routing_chars_per_token, image_rule=images,
                              reasoning_rendered=rendered)
    if settings.estimator_family:
        return replace(calibrated_estimator(settings.estimator_family), image_rule=images, reasoning_rendered=rendered)
    families = {family_of(m) for m in served_models}
    return replace(calibrated_estimator(families.pop() if len(families) == 1 else "any"), image_rule=images,
                   reasoning_rendered=rendered)


class EstimatorMemo:
    """:func:`build_estimator`, once per set of served models while the settings are the same object.

    A different settings object (a reload) or :data:`MAX_MEMO` memoised sets start it over.
    """

    def __init__(self) -> None:
        self._built: dict[tuple[str, ...], Estimator] = {}
        self._for: Settings | None = None

    def get(self, settings: Settings, served_models: Sequence[str] = ()) -> Estimator:
        """The estimator for ``served_models`` under ``settings`` (built on first use)."""
        key = tuple(served_models)
        if self._for is not settings or len(self._built) >= MAX_MEMO:
            self._built, self._for = {}, settings
        built = self._built.get(key)
        if built is None:
            built = self._built[key] = build_estimator(settings, key)
        return built

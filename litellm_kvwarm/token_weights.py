"""The calibrated estimator's weights: the packaged file, its validation, and the family of a model name.

``data/token_weights.json`` is written by ``python -m litellm_kvwarm.lab.calibration``
(quantile regression per tokenizer family, ``docs/estimator.md``) and read once per process.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from importlib import resources

from .token_estimators import CalibratedEstimator, LinearWeights
from .token_features import FEATURES

__all__ = ["ANY_FAMILY", "calibrated_estimator", "family_of", "load_weights", "parse_weights"]

#: Family whose weights hold across every calibrated tokenizer family.
ANY_FAMILY = "any"


@functools.lru_cache(maxsize=1)
def load_weights() -> dict[str, LinearWeights]:
    """The packaged weights (``data/token_weights.json``) per family; read once per process."""
    raw = json.loads(resources.files("litellm_kvwarm").joinpath("data/token_weights.json").read_text("utf-8"))
    return parse_weights(raw)


def parse_weights(raw: Mapping[str, object]) -> dict[str, LinearWeights]:
    """Validate a weights document (as written by the calibration script) into per-family weights."""
    if tuple(raw.get("features", ())) != FEATURES:  # type: ignore[arg-type]
        raise ValueError(f"token weights: features {raw.get('features')!r} do not match {FEATURES!r}")
    families = raw.get("families")
    if not isinstance(families, Mapping) or ANY_FAMILY not in families:
        raise ValueError(f"token weights: 'families' must include {ANY_FAMILY!r}")
    def optional(values: object) -> tuple[float, ...] | None:
        return tuple(map(float, values)) if values else None  # type: ignore[arg-type]

    return {
        name: LinearWeights(
            safe=tuple(map(float, w["safe"])), routing=tuple(map(float, w["routing"])),
            english_safe=optional(w.get("english_safe")), english_routing=optional(w.get("english_routing")),
        )
        for name, w in families.items()
    }


@functools.lru_cache(maxsize=64)
def calibrated_estimator(family: str | None = None) -> CalibratedEstimator:
    """The calibrated estimator for ``family`` (a key of the weights file, or a model name
    given to :func:`family_of`); unknown or ``None`` gets the ``"any"`` weights, which hold
    across every calibrated family. Cached: build it per family, not per request."""
    weights = load_weights()
    key = family if family in weights else family_of(family)
    key = key if key in weights else ANY_FAMILY
    return CalibratedEstimator(family=key, weights=weights[key])


# Served-model name patterns -> tokenizer family (first match wins; names are lower-cased,
# a provider prefix such as "hosted_vllm/" or "Qwen/" is ignored by the unanchored search).
_FAMILY_PATTERNS = (
    (re.compile(r"qwen3\.[5-9]|qwen3\.\d\d|qwen[4-9]"), "qwen3.6"),
    (re.compile(r"qwen|qwq"), "qwen2.5"),
    (re.compile(r"deepseek"), "deepseek"),
    (re.compile(r"llama[-_ ]?3"), "llama3"),
    (re.compile(r"gemma[-_ ]?3"), "gemma3"),
    (re.compile(r"gpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|gpt-oss|(^|/)o[134](-|$)|chatgpt-4o"), "o200k"),
    (re.compile(r"gpt-4|gpt-3\.5|text-embedding-3|text-embedding-ada"), "cl100k"),
)


@functools.lru_cache(maxsize=256)
def family_of(model: str | None) -> str:
    """Tokenizer family of a served model name (e.g. ``"Qwen/Qwen2.5-7B-Instruct"`` ->
    ``"qwen2.5"``), or ``"any"`` when it cannot be told."""
    if not model:
        return ANY_FAMILY
    name = model.lower()
    for pattern, family in _FAMILY_PATTERNS:
        if pattern.search(name):
            return family
    return ANY_FAMILY

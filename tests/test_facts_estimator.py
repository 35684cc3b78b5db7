"""Which estimator a request's deployments get (litellm_kvwarm.facts_estimator), and that it is
built once per set of served models while the settings object is the same."""

from __future__ import annotations

import pytest

from litellm_kvwarm.config import Settings
from litellm_kvwarm.facts_estimator import MAX_MEMO, EstimatorMemo, build_estimator
from litellm_kvwarm.image_tokens import image_rule_for
from litellm_kvwarm.tokens import CalibratedEstimator, RatioEstimator


@pytest.mark.parametrize(
    ("options", "served", "family"),
    [
        ({}, ("Qwen/Qwen2.5-7B-Instruct",), "qwen2.5"),
        ({}, ("Qwen/Qwen2.5-7B-Instruct", "meta-llama/Llama-3.1-8B-Instruct"), "any"),  # families disagree
        ({}, (), "any"),
        ({"estimator_family": "llama3"}, ("Qwen/Qwen2.5-7B-Instruct",), "llama3"),  # the operator's family wins
    ],
    ids=["one_family", "mixed_families", "no_models", "configured_family"],
)
def test_calibrated_family(options, served, family):
    est = build_estimator(Settings(**options), served)
    assert isinstance(est, CalibratedEstimator) and est.family == family
    assert est.image_rule == image_rule_for(served)


def test_ratio_estimator_uses_the_configured_ratios():
    s = Settings(estimator="ratio", safe_chars_per_token=2.5, routing_chars_per_token=4.0)
    est = build_estimator(s, ("Qwen/Qwen2.5-7B-Instruct",))
    assert est == RatioEstimator(2.5, 4.0, image_rule=image_rule_for(("Qwen/Qwen2.5-7B-Instruct",)), reasoning_rendered=False)


def test_memo_builds_once_per_models_and_starts_over_on_new_settings():
    memo, s = EstimatorMemo(), Settings()
    first = memo.get(s, ["Qwen/Qwen2.5-7B-Instruct"])
    assert memo.get(s, ("Qwen/Qwen2.5-7B-Instruct",)) is first  # list or tuple: same key
    assert memo.get(s, ()) is not first
    reloaded = Settings(estimator="ratio")
    assert isinstance(memo.get(reloaded, ("Qwen/Qwen2.5-7B-Instruct",)), RatioEstimator)


def test_memo_is_bounded():
    memo, s = EstimatorMemo(), Settings()
    for i in range(MAX_MEMO + 5):
        memo.get(s, (f"model-{i}",))
    assert len(memo._built) <= MAX_MEMO

"""Learning from usage.prompt_tokens: the per-group correction of the estimates (pure), and which
responses feed it (usage_observation on LiteLLM-shaped callback arguments)."""

import pytest

from litellm_kvwarm.correction import EstimateCorrection, Factors
from litellm_kvwarm.meta import ESCALATED_KEY, ESTIMATE_KEY, WARM_MARKER
from litellm_kvwarm.tokens import RequestCounts, TokenEstimate
from litellm_kvwarm.usage import usage_observation


def _estimate(safe: int, routing: int, exact: int | None = None) -> TokenEstimate:
    return TokenEstimate(safe=safe, routing=routing, counts=RequestCounts(chars=0, messages=1, exact_tokens=exact))


def test_nothing_changes_until_enough_responses_are_seen():
    c = EstimateCorrection(min_samples=8)
    for _ in range(7):
        c.observe("fast", routing=1000, safe=1400, prompt_tokens=2000)
    assert c.factors("fast") == Factors(samples=7)
    assert c.apply("fast", _estimate(1400, 1000)) == _estimate(1400, 1000)


def test_an_under_counting_tokenizer_raises_both_estimates():
    """A served tokenizer that counts 2.0-2.4× the routing estimate (the real-vLLM tier's tiny BPE)."""
    c = EstimateCorrection(min_samples=8, routing_quantile=0.1)
    truths = [2000, 2100, 2200, 2300, 2400, 2050, 2150, 2250, 2350, 2000]
    for truth in truths:
        c.observe("fast", routing=1000, safe=1500, prompt_tokens=truth)
    f = c.factors("fast")
    assert f.samples == 10
    assert f.routing == pytest.approx(2.0)  # 10th percentile of truth ÷ routing (index 1 of 10 sorted)
    assert f.safe == pytest.approx(2400 / 1500)  # the worst truth ÷ safe seen
    corrected = c.apply("fast", _estimate(1500, 1000))
    assert (corrected.safe, corrected.routing) == (2400, 2000)
    assert sum(t >= corrected.routing for t in truths) >= 9  # routing still leans low
    assert all(t <= corrected.safe for t in truths)  # safe covers what was seen
    assert c.apply("slow", _estimate(1500, 1000)) == _estimate(1500, 1000)  # per group


def test_estimates_that_run_high_are_never_lowered_and_factors_are_capped():
    c = EstimateCorrection(min_samples=2, max_factor=4.0)
    for _ in range(4):
        c.observe("high", routing=1000, safe=1500, prompt_tokens=800)
        c.observe("wild", routing=10, safe=10, prompt_tokens=5000)
    assert c.factors("high").routing == 1.0 and c.factors("high").safe == 1.0
    assert c.factors("wild").routing == 4.0 and c.factors("wild").safe == 4.0
    assert c.apply("wild", _estimate(0, 0, exact=321)) == _estimate(0, 0, exact=321)  # exact counts stay


def test_window_and_group_count_are_bounded():
    c = EstimateCorrection(window=4, min_samples=2, max_groups=2)
    for _ in range(4):
        c.observe("g", routing=100, safe=100, prompt_tokens=300)
    for _ in range(4):  # the old ratios leave the window
        c.observe("g", routing=100, safe=100, prompt_tokens=100)
    assert c.factors("g") == Factors(routing=1.0, safe=1.0, samples=4)
    c.observe("h", routing=1, safe=1, prompt_tokens=2)
    c.observe("i", routing=1, safe=1, prompt_tokens=2)  # evicts "g", the least recently observed
    assert c.factors("g") == Factors()


def _kwargs(meta: dict) -> dict:
    return {"litellm_params": {"metadata": meta}, "model": "hosted_vllm/x"}


def test_usage_observation_takes_only_responses_of_the_estimated_group():
    estimate = {"safe": 1500, "routing": 1000, "group": "fast", "raw_safe": 1400, "raw_routing": 900}
    response = {"usage": {"prompt_tokens": 2000}}
    assert usage_observation(_kwargs({"model_group": "fast", ESTIMATE_KEY: estimate}), response) == ("fast", 900, 1400, 2000)
    assert usage_observation(_kwargs({"model_group": "slow", ESTIMATE_KEY: estimate}), response) is None
    assert usage_observation(_kwargs({"model_group": "fast", ESTIMATE_KEY: estimate, ESCALATED_KEY: "proactive"}), response) is None
    assert usage_observation(_kwargs({"model_group": "fast", ESTIMATE_KEY: estimate, WARM_MARKER: True}), response) is None
    assert usage_observation(_kwargs({"model_group": "fast", ESTIMATE_KEY: estimate}), {"usage": {}}) is None
    assert usage_observation(_kwargs({"model_group": "fast"}), response) is None

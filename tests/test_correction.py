"""Learning from usage.prompt_tokens: the per-(group, tenant) correction of the estimates (pure), and
which responses feed it (usage_observation on LiteLLM-shaped callback arguments)."""

import pytest

from litellm_kvwarm.correction import EstimateCorrection, Factors, GroupSummary
from litellm_kvwarm.meta import ESCALATED_KEY, ESTIMATE_KEY, WARM_MARKER
from litellm_kvwarm.tokens import RequestCounts, TokenEstimate
from litellm_kvwarm.usage import UsageObservation, usage_observation

A, B = "tenant-a-hash", "tenant-b-hash"


def _estimate(safe: int, routing: int, exact: int | None = None) -> TokenEstimate:
    return TokenEstimate(safe=safe, routing=routing, counts=RequestCounts(chars=0, messages=1, exact_tokens=exact))


def test_nothing_changes_until_enough_responses_are_seen():
    c = EstimateCorrection(min_samples=8)
    for _ in range(7):
        c.observe("fast", A, routing=1000, safe=1400, prompt_tokens=2000)
    assert c.factors("fast", A) == Factors(samples=7)
    assert c.apply("fast", A, _estimate(1400, 1000)) == _estimate(1400, 1000)


def test_an_under_counting_tokenizer_raises_both_estimates():
    """A served tokenizer that counts 2.0-2.4× the routing estimate (the real-vLLM tier's tiny BPE)."""
    c = EstimateCorrection(min_samples=8, routing_quantile=0.1)
    truths = [2000, 2100, 2200, 2300, 2400, 2050, 2150, 2250, 2350, 2000]
    for truth in truths:
        c.observe("fast", A, routing=1000, safe=1500, prompt_tokens=truth)
    f = c.factors("fast", A)
    assert f.samples == 10
    assert f.routing == pytest.approx(2.0)  # 10th percentile of truth ÷ routing (index 1 of 10 sorted)
    assert f.safe == pytest.approx(2400 / 1500)  # the worst truth ÷ safe seen
    corrected = c.apply("fast", A, _estimate(1500, 1000))
    assert (corrected.safe, corrected.routing) == (2400, 2000)
    assert sum(t >= corrected.routing for t in truths) >= 9  # routing still leans low
    assert all(t <= corrected.safe for t in truths)  # safe covers what was seen
    assert c.apply("slow", A, _estimate(1500, 1000)) == _estimate(1500, 1000)  # per group


def test_estimates_that_run_high_are_never_lowered_and_factors_are_capped():
    c = EstimateCorrection(min_samples=2, max_factor=4.0)
    for _ in range(4):
        c.observe("high", A, routing=1000, safe=1500, prompt_tokens=800)
        c.observe("wild", A, routing=10, safe=10, prompt_tokens=5000)
    assert c.factors("high", A).routing == 1.0 and c.factors("high", A).safe == 1.0
    assert c.factors("wild", A).routing == 4.0 and c.factors("wild", A).safe == 4.0
    assert c.apply("wild", A, _estimate(0, 0, exact=321)) == _estimate(0, 0, exact=321)  # exact counts stay


def test_window_and_pair_count_are_bounded():
    c = EstimateCorrection(window=4, min_samples=2, max_pairs=2, min_prompt_tokens=1)
    for _ in range(4):
        c.observe("g", A, routing=100, safe=100, prompt_tokens=300)
    for _ in range(4):  # the old ratios leave the window
        c.observe("g", A, routing=100, safe=100, prompt_tokens=100)
    assert c.factors("g", A) == Factors(routing=1.0, safe=1.0, samples=4)
    c.observe("h", A, routing=1, safe=1, prompt_tokens=2)
    c.observe("i", A, routing=1, safe=1, prompt_tokens=2)  # evicts ("g", A), the least recently observed pair
    assert c.factors("g", A) == Factors()


def _kwargs(meta: dict) -> dict:
    return {"litellm_params": {"metadata": meta}, "model": "hosted_vllm/x"}


def test_usage_observation_takes_only_responses_of_the_estimated_group_with_a_tenant():
    estimate = {"safe": 1500, "routing": 1000, "group": "fast", "raw_safe": 1400, "raw_routing": 900, "tenant": A}
    response = {"usage": {"prompt_tokens": 2000}}
    observed = usage_observation(_kwargs({"model_group": "fast", ESTIMATE_KEY: estimate}), response)
    assert observed == ("fast", A, 900, 1400, 2000)
    assert observed == UsageObservation(group="fast", tenant=A, raw_routing=900, raw_safe=1400, prompt_tokens=2000)
    assert usage_observation(_kwargs({"model_group": "slow", ESTIMATE_KEY: estimate}), response) is None
    assert usage_observation(_kwargs({"model_group": "fast", ESTIMATE_KEY: estimate, ESCALATED_KEY: "proactive"}), response) is None
    assert usage_observation(_kwargs({"model_group": "fast", ESTIMATE_KEY: estimate, WARM_MARKER: True}), response) is None
    assert usage_observation(_kwargs({"model_group": "fast", ESTIMATE_KEY: estimate}), {"usage": {}}) is None
    assert usage_observation(_kwargs({"model_group": "fast"}), response) is None
    for tenant in (None, "", 7):  # no hashed tenant in the estimate: not learned from
        untenanted = {**estimate, "tenant": tenant}
        assert usage_observation(_kwargs({"model_group": "fast", ESTIMATE_KEY: untenanted}), response) is None
    assert usage_observation(_kwargs({"model_group": "fast", ESTIMATE_KEY: {k: v for k, v in estimate.items() if k != "tenant"}}), response) is None
    # LiteLLM's success event of a stream the client left: its usage may be LiteLLM's own count, not the server's
    left = {"model_group": "fast", ESTIMATE_KEY: estimate, "client_disconnected": True}
    assert usage_observation(_kwargs(left), response) is None
    assert usage_observation({**_kwargs({"model_group": "fast", ESTIMATE_KEY: estimate}), "metadata": {"client_disconnected": True}},
                             response) is None


def test_a_stream_the_client_left_counts_its_tokens_but_no_estimate_ratio():
    from prometheus_client import CollectorRegistry

    from litellm_kvwarm.metrics import Metrics
    from litellm_kvwarm.usage import record_usage

    registry = CollectorRegistry()
    metrics = Metrics.create(registry)
    estimate = {"safe": 1500, "routing": 1000, "group": "fast", "raw_safe": 1400, "raw_routing": 900, "tenant": A}
    assert record_usage(metrics, _kwargs({"model_group": "fast", ESTIMATE_KEY: estimate, "client_disconnected": True}),
                        {"usage": {"prompt_tokens": 9000}})
    assert registry.get_sample_value("kvwarm_prompt_tokens_total", {"model_group": "fast", "request_kind": "normal"}) == 9000
    assert registry.get_sample_value("kvwarm_estimate_ratio_count", {"model_group": "fast", "estimate": "safe"}) is None
    record_usage(metrics, _kwargs({"model_group": "fast", ESTIMATE_KEY: estimate}), {"usage": {"prompt_tokens": 2000}})
    assert registry.get_sample_value("kvwarm_estimate_ratio_count", {"model_group": "fast", "estimate": "safe"}) == 1


def test_one_tenants_skewed_usage_leaves_another_tenants_estimates_alone():
    """Issue 12, harm 2: 64 responses of team B whose text the estimator under-counts 6x pushed the
    group's shared factors to the 4x cap and escalated every tenant. Now only B's estimates move."""
    c = EstimateCorrection()
    for _ in range(16):
        c.observe("fast", A, routing=1000, safe=1500, prompt_tokens=1000)  # A: estimates hold
    before = c.apply("fast", A, _estimate(1500, 1000))
    for _ in range(64):
        changed = c.observe("fast", B, routing=1000, safe=1500, prompt_tokens=6000)
        assert changed == ("fast",)
    assert c.factors("fast", A) == Factors(routing=1.0, safe=1.0, samples=16)
    assert c.apply("fast", A, _estimate(1500, 1000)) == before == _estimate(1500, 1000)
    assert c.factors("fast", B) == Factors(routing=4.0, safe=4.0, samples=64)
    assert c.apply("fast", B, _estimate(1500, 1000)) == _estimate(6000, 4000)
    # a tenant never seen, and a request without a tenant, start uncorrected
    assert c.apply("fast", "tenant-c-hash", _estimate(1500, 1000)) == _estimate(1500, 1000)
    assert c.apply("fast", None, _estimate(1500, 1000)) == _estimate(1500, 1000)
    # B's factors belong to its group only
    assert c.apply("slow", B, _estimate(1500, 1000)) == _estimate(1500, 1000)


def test_responses_without_a_tenant_or_with_no_counts_are_ignored():
    c = EstimateCorrection(min_samples=1)
    assert c.observe("fast", None, routing=100, safe=100, prompt_tokens=400) == ()
    assert c.observe("fast", "", routing=100, safe=100, prompt_tokens=400) == ()
    assert c.observe("fast", A, routing=0, safe=100, prompt_tokens=400) == ()
    assert len(c) == 0 and c.summary("fast") == GroupSummary()


def test_pairs_are_bounded_least_recently_observed_first_and_the_summary_follows():
    c = EstimateCorrection(min_samples=1, max_pairs=3, min_prompt_tokens=1)
    c.observe("fast", "t1", routing=100, safe=100, prompt_tokens=300)  # 3x
    c.observe("slow", "t2", routing=100, safe=100, prompt_tokens=200)  # 2x
    c.observe("fast", "t3", routing=100, safe=100, prompt_tokens=100)  # 1x
    c.observe("fast", "t1", routing=100, safe=100, prompt_tokens=300)  # t1 is now the most recent
    assert len(c) == 3
    changed = c.observe("fast", "t4", routing=100, safe=100, prompt_tokens=150)  # evicts ("slow", "t2")
    assert changed == ("fast", "slow")
    assert len(c) == 3
    assert c.factors("slow", "t2") == Factors()
    assert c.summary("slow") == GroupSummary()
    assert c.factors("fast", "t1").routing == 3.0  # kept: observed after t2
    c.observe("fast", "t5", routing=100, safe=100, prompt_tokens=100)  # evicts ("fast", "t3")
    assert c.factors("fast", "t3") == Factors() and len(c) == 3


def test_summary_reports_the_largest_factors_and_the_corrected_tenants_per_group():
    c = EstimateCorrection(min_samples=2)
    assert c.summary("fast") == GroupSummary(routing=1.0, safe=1.0, tenants=0)
    for _ in range(2):
        c.observe("fast", "t1", routing=1000, safe=2000, prompt_tokens=3000)  # routing 3.0, safe 1.5
        c.observe("fast", "t2", routing=1000, safe=1000, prompt_tokens=2500)  # routing 2.5, safe 2.5
        c.observe("fast", "t3", routing=1000, safe=1000, prompt_tokens=900)  # uncorrected
        c.observe("slow", "t1", routing=1000, safe=1000, prompt_tokens=1200)  # routing 1.2, safe 1.2
    assert c.summary("fast") == GroupSummary(routing=3.0, safe=2.5, tenants=2)
    assert c.summary("slow") == GroupSummary(routing=1.2, safe=1.2, tenants=1)
    for _ in range(64):  # t1's text is estimated right again: its window fills with 1.0s
        c.observe("fast", "t1", routing=1000, safe=2000, prompt_tokens=1000)
    assert c.summary("fast") == GroupSummary(routing=2.5, safe=2.5, tenants=1)


def test_bad_bounds_are_refused():
    with pytest.raises(ValueError):
        EstimateCorrection(routing_quantile=1.5)
    with pytest.raises(ValueError):
        EstimateCorrection(max_pairs=0)


def test_reading_factors_does_not_refresh_a_pair_only_observing_does():
    c = EstimateCorrection(min_samples=1, max_pairs=2, min_prompt_tokens=1)
    c.observe("fast", "t1", routing=100, safe=100, prompt_tokens=300)
    c.observe("fast", "t2", routing=100, safe=100, prompt_tokens=200)
    for _ in range(3):  # reads (factors, apply, summary) leave t1 the least recently observed pair
        assert c.factors("fast", "t1").routing == 3.0
        c.apply("fast", "t1", _estimate(100, 100))
        c.summary("fast")
    assert c.observe("fast", "t3", routing=100, safe=100, prompt_tokens=100) == ("fast",)  # same group: once
    assert c.factors("fast", "t1") == Factors() and c.factors("fast", "t2").routing == 2.0
    assert c.summary("fast") == GroupSummary(routing=2.0, safe=2.0, tenants=1)


def test_short_prompts_teach_nothing():
    """A breaker's case: ten "hi" requests (the server's fixed template tokens are most of their truth:
    truth ÷ routing ≈ 3.4) raised the tenant's routing factor, and its next 14k-token prompt, which fits
    a 16k window, was routed to slow as 47k tokens. Prompts under 256 tokens are not learned from."""
    c = EstimateCorrection(min_samples=8)
    for _ in range(10):
        assert c.observe("fast", A, routing=5, safe=9, prompt_tokens=17) == ()
    assert c.factors("fast", A) == Factors() and len(c) == 0
    for _ in range(8):
        c.observe("fast", A, routing=100, safe=200, prompt_tokens=300)  # at the limit: learned
    assert c.factors("fast", A).routing == pytest.approx(3.0)


def test_record_usage_hands_live_prompts_on_and_never_a_warms():
    from prometheus_client import CollectorRegistry

    from litellm_kvwarm.meta import WARM_MARKER
    from litellm_kvwarm.metrics import Metrics
    from litellm_kvwarm.usage import record_usage

    metrics, seen = Metrics.create(CollectorRegistry()), []
    response = {"usage": {"prompt_tokens": 4_321}}
    assert record_usage(metrics, _kwargs({"model_group": "slow"}), response, lambda g, t: seen.append((g, t)))
    assert record_usage(metrics, _kwargs({"model_group": "slow", ESCALATED_KEY: "proactive"}), response, lambda g, t: seen.append((g, t)))
    assert record_usage(metrics, _kwargs({"model_group": "slow", WARM_MARKER: True}), response, lambda g, t: seen.append((g, t)))
    assert not record_usage(metrics, _kwargs({"model_group": "slow"}), {"usage": {}}, lambda g, t: seen.append((g, t)))
    assert seen == [("slow", 4_321), ("slow", 4_321)]


def test_record_usage_learns_as_learn_after_it_did():
    """``record_usage(..., correction=)`` (one read of the metadata and usage) leaves the correction and every
    metric as ``record_usage`` then ``learn`` did, for responses learned from and not (other group, escalated,
    a warm, no tenant, no usage, a small prompt)."""
    from prometheus_client import CollectorRegistry

    from litellm_kvwarm.metrics import Metrics
    from litellm_kvwarm.usage import learn, record_usage

    def estimate(group="fast", tenant=A):
        return {"safe": 1500, "routing": 1000, "group": group, "raw_safe": 1400, "raw_routing": 900, "tenant": tenant}

    cases = [(_kwargs({"model_group": "fast", ESTIMATE_KEY: estimate()}), {"usage": {"prompt_tokens": p}})
             for p in (1800, 2000, 2100, 2500, 1900, 2200, 2400, 2050, 2300, 100)]
    cases += [(_kwargs({"model_group": "slow", ESTIMATE_KEY: estimate()}), {"usage": {"prompt_tokens": 2000}}),
              (_kwargs({"model_group": "fast", ESCALATED_KEY: "proactive", ESTIMATE_KEY: estimate()}), {"usage": {"prompt_tokens": 2000}}),
              (_kwargs({"model_group": "fast", WARM_MARKER: True, ESTIMATE_KEY: estimate()}), {"usage": {"prompt_tokens": 2000}}),
              (_kwargs({"model_group": "fast", ESTIMATE_KEY: estimate(tenant=None)}), {"usage": {"prompt_tokens": 2000}}),
              (_kwargs({"model_group": "fast", ESTIMATE_KEY: estimate(tenant=B)}), {"usage": {}}),
              (_kwargs({"model_group": "fast", ESTIMATE_KEY: estimate(), "client_disconnected": True}), {"usage": {"prompt_tokens": 9000}}),
              ({"model": "x"}, {"usage": {"prompt_tokens": 2000}})]

    def state(registry, correction):
        samples = sorted((s.name, tuple(sorted(s.labels.items())), s.value) for m in registry.collect() for s in m.samples
                         if not s.name.endswith("_created"))
        return samples, correction.factors("fast", A), correction.summary("fast"), len(correction)

    two, one = (CollectorRegistry(), EstimateCorrection()), (CollectorRegistry(), EstimateCorrection())
    m_two, m_one = Metrics.create(two[0]), Metrics.create(one[0])
    for kwargs, response in cases:
        assert record_usage(m_two, kwargs, response) == record_usage(m_one, kwargs, response, correction=one[1])
        learn(two[1], m_two, kwargs, response)
    assert one[1].factors("fast", A).samples == 9  # learned from (the 100-token prompt is not)
    assert state(*two) == state(*one)

from prometheus_client import CollectorRegistry

from litellm_kvwarm.metrics import Metrics, deployment_label
from litellm_kvwarm.scrape import PrefixCacheStats, metrics_url, parse_prefix_cache

VLLM_PAGE = """# HELP vllm:prefix_cache_queries_total Prefix cache queries, in terms of number of queried tokens.
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{engine="0",model_name="slow-27b"} 1000.0
vllm:prefix_cache_queries_total{engine="0",model_name="other"} 50.0
# HELP vllm:prefix_cache_hits_total Prefix cache hits, in terms of number of cached tokens.
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{engine="0",model_name="slow-27b"} 640.0
vllm:prefix_cache_hits_total{engine="0",model_name="other"} 5.0
"""


def test_parse_prefix_cache_filters_by_model():
    stats = parse_prefix_cache(VLLM_PAGE, "slow-27b")
    assert stats == PrefixCacheStats(queries=1000.0, hits=640.0) and stats.hit_ratio == 0.64
    assert parse_prefix_cache(VLLM_PAGE) == PrefixCacheStats(queries=1050.0, hits=645.0)


def test_parse_prefix_cache_absent_or_garbage():
    assert parse_prefix_cache("# nothing here\nfoo_total 1\n") is None
    assert parse_prefix_cache("{{{ not prometheus") is None
    assert PrefixCacheStats(0, 0).hit_ratio is None


def test_urls_and_labels_carry_no_secrets():
    assert metrics_url("http://h:8000/v1") == "http://h:8000/metrics"
    assert deployment_label("http://user:pw@h:8000/v1", "m") == "h:8000/m"


def test_metric_names_have_one_prefix_and_expected_samples():
    m = Metrics.create(CollectorRegistry())
    names = m.names
    assert all(n.startswith("kvwarm_") for n in names)
    assert {"kvwarm_route_decisions_total", "kvwarm_warms_total", "kvwarm_estimate_ratio_bucket",
            "kvwarm_discovered_window_tokens", "kvwarm_plugin_seconds_count"} <= names


def test_labels_children_are_remembered_and_export_the_same_samples():
    registry = CollectorRegistry()
    m = Metrics.create(registry)
    child = m.route_decisions.labels("stay", "fast", "")
    assert m.route_decisions.labels("stay", "fast", "") is child  # the one child prometheus_client holds for these values
    assert m.route_decisions.__dict__["_kvwarm_children"] == {("stay", "fast", ""): child}
    child.inc()
    m.route_decisions.labels("stay", "fast", "").inc(2)
    m.route_decisions.labels(kind="stay", source="fast", target="").inc(4)  # keywords: prometheus_client's own path
    assert registry.get_sample_value("kvwarm_route_decisions_total", {"kind": "stay", "source": "fast", "target": ""}) == 7.0
    m.plugin_seconds.labels("pre_call").observe(0.5)
    m.plugin_seconds.labels("pre_call").observe(0.25)
    assert registry.get_sample_value("kvwarm_plugin_seconds_count", {"hook": "pre_call"}) == 2.0
    assert registry.get_sample_value("kvwarm_plugin_seconds_sum", {"hook": "pre_call"}) == 0.75
    # a removed child is not handed out again: the next labels() makes a fresh one at zero
    m.route_decisions.remove("stay", "fast", "")
    fresh = m.route_decisions.labels("stay", "fast", "")
    assert fresh is not child
    assert registry.get_sample_value("kvwarm_route_decisions_total", {"kind": "stay", "source": "fast", "target": ""}) == 0.0
    m.route_decisions.clear()
    assert m.route_decisions.labels("stay", "fast", "") is not fresh
    # an unhashable value goes to prometheus_client as is (formatted with str), without the memo
    m.window.labels(["odd"]).set(3)
    assert registry.get_sample_value("kvwarm_discovered_window_tokens", {"deployment": "['odd']"}) == 3.0


def test_labels_memo_is_bounded(monkeypatch):
    import litellm_kvwarm.metric_children as metric_children

    monkeypatch.setattr(metric_children, "LABELS_MEMO_MAX", 2)
    registry = CollectorRegistry()
    m = Metrics.create(registry)
    for i in range(5):
        m.route_decisions.labels("stay", f"g{i}", "").inc()
    held = m.route_decisions.__dict__["_kvwarm_children"]
    assert len(held) == 2
    assert all(registry.get_sample_value("kvwarm_route_decisions_total", {"kind": "stay", "source": f"g{i}", "target": ""}) == 1.0
               for i in range(5))

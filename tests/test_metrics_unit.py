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

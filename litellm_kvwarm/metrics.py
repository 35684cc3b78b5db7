"""Prometheus collectors of the plugin: created once, one ``kvwarm_`` prefix, bounded labels.

Registered on ``prometheus_client``'s default registry, so they appear on LiteLLM's own
``/metrics`` when ``"prometheus"`` is in ``litellm_settings.callbacks``. Under several workers
(``litellm --num_workers N`` with ``PROMETHEUS_MULTIPROC_DIR`` set) ``prometheus_client``
writes each process's values to that directory and LiteLLM's endpoint sums them; the gauges
declare how to combine processes.

Labels are model-group names, deployment ids (``host:port/served-model``, from the operator's
config), and small enums. Never prompt text, session ids, tenants or key hashes.

Derived quantities an operator wants (the dashboard computes them):

* prefix-cache hit rate of real traffic, warms excluded:
  ``sum(rate(kvwarm_cached_prompt_tokens_total{request_kind!="warm"}[5m])) /
  sum(rate(kvwarm_prompt_tokens_total{request_kind!="warm"}[5m]))`` — warms create cache, so
  counting them as traffic would flatter the hit rate;
* cached fraction of escalated requests: the same with ``request_kind="escalated"``.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram

from .metric_children import RememberedCounter as _Counter
from .metric_children import RememberedGauge as _Gauge
from .metric_children import RememberedHistogram as _Histogram

PREFIX = "kvwarm"

#: estimate ÷ actual prompt tokens: 1.0 is exact; the safe estimate should sit above 1,
#: the routing one at or below it.
RATIO_BUCKETS = (0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 1.0, 1.05, 1.1, 1.2, 1.3, 1.5, 2.0, 3.0)
WARM_SECONDS_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 40, 80, 160)
PLUGIN_SECONDS_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5)

#: Values of the ``kind`` label of ``kvwarm_route_decisions_total``.
ROUTE_KINDS = (
    "stay",
    "unknown_window",  # no window known for the group (yet): passed on untouched
    "proactive",
    "reactive_retry",
    "reactive_escalation",
    "kept_local_missing",
    "kept_local_forbidden",
    "kept_local_client",  # the request's own disable_fallbacks / fallbacks rule out every step (litellm_kvwarm.client_fallbacks)
    "no_target",
    "target_too_small",
    "client_output_error",  # the client's own output budget is invalid (<= 0, not an integer): passed on untouched
    "server_state",  # a Responses request continuing state stored on its server (previous_response_id): untouched
    "client_malformed",  # a malformed conversation (a message that is no object, unknown role, bad content): untouched
    "target_unreachable",  # a proactive escalation whose target could not be reached: answered as a context error
)
#: Values of the ``request_kind`` label of the token counters.
REQUEST_KINDS = ("normal", "escalated", "warm")


def deployment_label(api_base: str, served_model: str) -> str:
    """``host:port/served-model``: identifies a deployment without paths, schemes or credentials."""
    netloc = urlsplit(api_base).netloc.rsplit("@", 1)[-1] or api_base
    return f"{netloc}/{served_model}"


#: Buckets of ``kvwarm_escalation_cached_ratio`` (fractions of the prompt).
CACHED_RATIO_BUCKETS = (0.1, 0.25, 0.5, 0.75, 0.8, 0.9, 0.95, 0.99, 1.0)


@dataclass
class Metrics:
    """The plugin's collectors. Create one per process with :func:`metrics` (the default
    registry) or with a private registry in tests."""

    route_decisions: Counter
    warms: Counter
    warm_seconds: Histogram
    output_clamps: Counter
    estimate_ratio: Histogram
    estimate_correction: Gauge
    prompt_tokens: Counter
    cached_prompt_tokens: Counter
    window: Gauge
    discovery_errors: Counter
    plugin_seconds: Histogram
    cooldown_fallbacks: Counter
    backend_prefix_cache_queries: Gauge
    backend_prefix_cache_hits: Gauge
    backend_prefix_cache_hit_ratio: Gauge
    warm_queue_depth: Gauge
    warm_queue_drops: Counter
    budget_exhausted: Counter
    estimate_correction_tenants: Gauge
    client_metadata_stripped: Counter
    learned_limit: Gauge
    limits_learned: Counter
    stream_errors: Counter
    escalation_cached_ratio: Histogram
    warm_priority_refused: Counter
    warm_pieces: Counter
    warm_pieces_enlarged: Counter
    warm_piece_tokens: Gauge

    @classmethod
    def create(cls, registry: CollectorRegistry = REGISTRY) -> Metrics:
        p = PREFIX
        return cls(
            route_decisions=_Counter(
                f"{p}_route_decisions", "Routing decisions by kind (see ROUTE_KINDS), source and target group.",
                ["kind", "source", "target"], registry=registry,
            ),
            warms=_Counter(
                f"{p}_warms", "Warm candidates by outcome (fired, skipped_*, succeeded, failed, timed_out) and trigger "
                "(ahead: the request crossed the threshold; reply: the source's finished reply appended; decode: the "
                "reply so far, while it streams; jump: the session's largest growth step would overflow the window).",
                ["outcome", "target", "trigger"], registry=registry,
            ),
            warm_seconds=_Histogram(
                f"{p}_warm_duration_seconds", "Wall time of finished warms, seconds.", ["target"],
                buckets=WARM_SECONDS_BUCKETS, registry=registry,
            ),
            output_clamps=_Counter(
                f"{p}_output_clamps", "max_tokens lowered, by model group and what the clamp rested on.",
                ["model_group", "basis"], registry=registry,
            ),
            estimate_ratio=_Histogram(
                f"{p}_estimate_ratio", "Estimate ÷ actual prompt tokens (usage.prompt_tokens), per estimate; short prompts read low "
                "(their count is mostly the chat template's fixed tokens).",
                ["model_group", "estimate"], buckets=RATIO_BUCKETS, registry=registry,
            ),
            estimate_correction=_Gauge(
                f"{p}_estimate_correction", "Factor applied to a group's estimates, learned from its usage.prompt_tokens.",
                ["model_group", "estimate"], registry=registry, multiprocess_mode="max",
            ),
            prompt_tokens=_Counter(
                f"{p}_prompt_tokens", "Prompt tokens served (usage.prompt_tokens), by group and request kind.",
                ["model_group", "request_kind"], registry=registry,
            ),
            cached_prompt_tokens=_Counter(
                f"{p}_cached_prompt_tokens",
                "Prompt tokens served from the backend's prefix cache (usage.prompt_tokens_details.cached_tokens).",
                ["model_group", "request_kind"], registry=registry,
            ),
            window=_Gauge(
                f"{p}_discovered_window_tokens", "Context window (max_model_len) discovered per deployment, tokens.",
                ["deployment"], registry=registry, multiprocess_mode="max",
            ),
            discovery_errors=_Counter(
                f"{p}_discovery_errors", "Failed backend lookups per deployment and error (window discovery: timeout, "
                "connect_error, unauthorized, http_<status>, invalid_json, no_window, ...; /tokenize: tokenize_*; "
                "metrics scrape: scrape_*).",
                ["deployment", "error"], registry=registry,
            ),
            plugin_seconds=_Histogram(
                f"{p}_plugin_seconds", "Time spent in the plugin's hooks per call, seconds (hook: pre_call, deployment, success, failure).", ["hook"],
                buckets=PLUGIN_SECONDS_BUCKETS, registry=registry,
            ),
            cooldown_fallbacks=_Counter(
                f"{p}_cooldown_store_fallbacks", "Times the Redis cooldown store failed and memory took over.",
                ["error"], registry=registry,
            ),
            backend_prefix_cache_queries=_Gauge(
                f"{p}_backend_prefix_cache_queries", "vllm:prefix_cache_queries_total scraped from each backend (tokens).",
                ["deployment"], registry=registry, multiprocess_mode="max",
            ),
            backend_prefix_cache_hits=_Gauge(
                f"{p}_backend_prefix_cache_hits", "vllm:prefix_cache_hits_total scraped from each backend (tokens).",
                ["deployment"], registry=registry, multiprocess_mode="max",
            ),
            backend_prefix_cache_hit_ratio=_Gauge(
                f"{p}_backend_prefix_cache_hit_ratio", "Backend's lifetime prefix-cache hit ratio (hits ÷ queries).",
                ["deployment"], registry=registry, multiprocess_mode="max",
            ),
            warm_queue_depth=_Gauge(
                f"{p}_warm_queue_depth", "Warms waiting for a free slot (bounded by KVWARM_WARM_QUEUE_SIZE).",
                registry=registry, multiprocess_mode="sum",
            ),
            warm_queue_drops=_Counter(
                f"{p}_warm_queue_drops", "Queued warms dropped before they were sent, by reason (stale: a newer state "
                "of the same session replaced it; full: the queue held KVWARM_WARM_QUEUE_SIZE warms, the oldest of "
                "the tenant with the most queued was dropped; tenant_cap: the tenant held its KVWARM_WARM_TENANT_RATE "
                "limit of queued warms, its own oldest was dropped; shutdown: the proxy was stopping).",
                ["reason"], registry=registry,
            ),
            budget_exhausted=_Counter(
                f"{p}_budget_exhausted", "Plugin lookups cut short by the per-request budget (KVWARM_REQUEST_BUDGET_MS) "
                "or skipped because the same lookup failed or overran recently, by lookup.",
                ["lookup"], registry=registry,
            ),
            estimate_correction_tenants=_Gauge(
                f"{p}_estimate_correction_tenants", "Tenants of a model group whose own usage currently raises their "
                "estimates (learned factors are per tenant).",
                ["model_group"], registry=registry, multiprocess_mode="max",
            ),
            client_metadata_stripped=_Counter(
                f"{p}_client_metadata_stripped", "Client requests that carried plugin-internal metadata keys (kvwarm_*), "
                "removed at entry.",
                registry=registry,
            ),
            learned_limit=_Gauge(
                f"{p}_learned_limit_tokens", "A limit below the advertised window that a deployment's own rejection "
                "revealed (limit=total: prompt + output; input: the prompt alone), tokens; the latest learned by any "
                "tenant (each tenant routes on what its own requests taught). Expires with the window TTL.",
                ["deployment", "limit"], registry=registry, multiprocess_mode="min",
            ),
            limits_learned=_Counter(
                f"{p}_limits_learned", "Limits learned from backend rejections, by deployment, limit kind and the "
                "wording's family.",
                ["deployment", "limit", "family"], registry=registry,
            ),
            stream_errors=_Counter(
                f"{p}_stream_errors", "Error frames inside HTTP 200 streams seen by the proxy, by model group and "
                "whether content had gone out (after_content=true: passed through unchanged, never retried).",
                ["model_group", "after_content"], registry=registry,
            ),
            escalation_cached_ratio=_Histogram(
                f"{p}_escalation_cached_ratio", "Cached fraction (usage cached ÷ prompt tokens) of each escalated request, "
                "by the model group that served it: near 1 when warms land; a template that renders history differently "
                "from what was warmed shows as a low ratio.",
                ["model_group"], buckets=CACHED_RATIO_BUCKETS, registry=registry,
            ),
            warm_priority_refused=_Counter(
                f"{p}_warm_priority_refused", "Warms a deployment refused for their priority field (vLLM without "
                "--scheduling-policy priority); resent once without it, and that deployment's warms go without it "
                "for the window TTL.",
                ["deployment"], registry=registry,
            ),
            warm_pieces=_Counter(
                f"{p}_warm_pieces", "Prefixes sent before a warm's whole body (KVWARM_WARM_PIECE_TOKENS), by target and "
                "outcome (succeeded; failed: a piece the server refused as sent, 400/404/422, is followed by the whole warm at "
                "once, any other failure ends the warm; superseded: not sent, the session's escalated turn reached the "
                "target with the warm's messages first).",
                ["target", "outcome"], registry=registry,
            ),
            warm_pieces_enlarged=_Counter(
                f"{p}_warm_pieces_enlarged", "Warms cut into pieces larger than KVWARM_WARM_PIECE_TOKENS because "
                "KVWARM_WARM_MAX_PIECES bounds their number (a live request may wait for one such piece), by target.",
                ["target"], registry=registry,
            ),
            warm_piece_tokens=_Gauge(
                f"{p}_warm_piece_tokens", "Tokens a warm piece adds at most for the last warm planned at each target group: "
                "KVWARM_WARM_PIECE_SHARE of its median live prompt, within [128, KVWARM_WARM_PIECE_TOKENS].",
                ["target"], registry=registry,
            ),
        )

    @property
    def names(self) -> set[str]:
        """Sample names these collectors expose (``_total``, ``_bucket`` ... included)."""
        out: set[str] = set()
        for collector in vars(self).values():
            for family in collector.describe():
                base = family.name
                if family.type == "counter":
                    out |= {base + "_total", base + "_created"}
                elif family.type == "histogram":
                    out |= {base + "_bucket", base + "_sum", base + "_count", base + "_created"}
                else:
                    out.add(base)
        return out


_default: Metrics | None = None


def metrics() -> Metrics:
    """The process-wide collectors on the default registry (created on first call)."""
    global _default
    if _default is None:
        _default = Metrics.create()
    return _default

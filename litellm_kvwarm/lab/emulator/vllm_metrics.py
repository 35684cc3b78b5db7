"""vLLM-named Prometheus metrics for one emulated server, in a registry of its own.

Contract: one :class:`EmulatorMetrics` per app; collectors live in a private
``CollectorRegistry`` (never the process-wide default, so several emulators, or a LiteLLM
proxy, can share a process). Names and meanings follow vLLM V1, every series labelled
``model_name``:

* ``vllm:prefix_cache_queries_total`` / ``vllm:prefix_cache_hits_total``: prompt tokens
  looked up in / found in the prefix cache;
* ``vllm:prompt_tokens_total``, ``vllm:prompt_tokens_cached_total``,
  ``vllm:generation_tokens_total`` (tokens);
* ``vllm:num_requests_running`` (admitted, not finished), ``vllm:num_requests_waiting``
  (waiting for the prefill slot);
* ``vllm:request_success_total{finished_reason}``;
* ``vllm:time_to_first_token_seconds`` histogram (seconds, vLLM's buckets).

prometheus_client appends ``_total`` to counters, hence the bare names below.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

__all__ = ["CONTENT_TYPE_LATEST", "EmulatorMetrics"]

TTFT_BUCKETS_S = (
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
    1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0,
)


class EmulatorMetrics:
    """The collectors of one emulated server (``model_name`` = its served name)."""

    def __init__(self, model_name: str) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        labels = ["model_name"]
        reg = self.registry

        def counter(name: str, doc: str) -> Counter:
            return Counter(name, doc, labels, registry=reg)

        self._queries = counter("vllm:prefix_cache_queries", "Prefix cache queries, in prompt tokens.").labels(model_name)
        self._hits = counter("vllm:prefix_cache_hits", "Prefix cache hits, in prompt tokens.").labels(model_name)
        self._prompt = counter("vllm:prompt_tokens", "Prefill tokens processed.").labels(model_name)
        self._cached = counter("vllm:prompt_tokens_cached", "Prompt tokens served from the prefix cache.").labels(model_name)
        self._generation = counter("vllm:generation_tokens", "Generation tokens processed.").labels(model_name)
        self.running = Gauge("vllm:num_requests_running", "Requests admitted and not finished.", labels, registry=reg).labels(model_name)
        self.waiting = Gauge("vllm:num_requests_waiting", "Requests waiting for the prefill slot.", labels, registry=reg).labels(model_name)
        self._success = Counter(
            "vllm:request_success", "Successfully finished requests.", ["model_name", "finished_reason"], registry=reg
        )
        self._ttft = Histogram(
            "vllm:time_to_first_token_seconds", "Time to first token, seconds.", labels, buckets=TTFT_BUCKETS_S, registry=reg
        ).labels(model_name)
        self._model_name = model_name

    def record_prefill(self, prompt_tokens: int, cached_tokens: int, ttft_s: float) -> None:
        """One prompt prefilled: ``prompt_tokens`` queried, ``cached_tokens`` hit (tokens)."""
        self._queries.inc(prompt_tokens)
        self._hits.inc(cached_tokens)
        self._prompt.inc(prompt_tokens)
        self._cached.inc(cached_tokens)
        self._ttft.observe(ttft_s)

    def record_finished(self, completion_tokens: int, finish_reason: str) -> None:
        """One request finished after generating ``completion_tokens`` tokens."""
        self._generation.inc(completion_tokens)
        self._success.labels(self._model_name, finish_reason).inc()

    def render(self) -> bytes:
        """Prometheus text exposition of this registry."""
        return generate_latest(self.registry)

"""A vLLM-compatible emulator server for tests and demos of litellm-kvwarm.

Run ``python -m litellm_kvwarm.lab.emulator --served-model-name NAME --max-model-len N --port P``.
It answers like vLLM's OpenAI server where a client or a LiteLLM plugin can tell: model
listing with ``max_model_len``, ``/tokenize``, context-length errors worded per vLLM version
family, prefix caching with ``cache_salt`` and ``cached_tokens``, prefill/decode timing, and
vLLM-named Prometheus metrics.

Modules (pure ones first): ``error_bodies`` (length checks and wordings per version family),
``prefix_cache`` (hash-chained blocks, LRU), ``tokenizer`` (cl100k + Qwen2.5 ChatML
template), ``reasoning`` (``--chat-template-mode qwen3``: past reasoning dropped), ``reply``
(the benchmark's recorded reply, ``kvwarm_bench_reply``), ``request_body`` (reading and checking a request), ``openai_fields``
(``--strict-fields``), ``faults`` (the injected-fault spec and error replies), ``config``,
``clock`` (injectable time), ``vllm_metrics``, ``request_log``, ``scheduler`` (priority-ordered,
chunked prefill), ``engine`` (prefill, cache, timing), ``responses`` (response bodies and SSE chunks), ``fault_state`` (faults in force,
hangs, drips), ``auth`` (``--api-key``), ``state`` (one server's parts), ``http_io``,
``routes_info`` / ``routes_admin`` / ``routes_generation`` (FastAPI routes; ``generation_serve``: running an
admitted request), ``app`` (the app
factory), ``__main__`` (CLI).

For tests of hostile backends: ``--api-key``, ``--strict-fields``, ``--lora-modules``,
``--faults`` and the runtime switch ``PUT/GET/DELETE /emulator/faults`` (helpers
``litellm_kvwarm.lab.processes.set_faults`` / ``clear_faults``).

Importing this package is cheap: nothing heavy is imported until a submodule is.
"""

"""Which backend attempts carry the tenant's cache_salt, and the one warning per deployment that cannot."""

from __future__ import annotations

import logging

from litellm_kvwarm.cache_salt import CacheSalter


def test_salted_providers_get_the_salt_in_extra_body_and_a_client_salt_is_dropped():
    salter = CacheSalter()
    for provider in ("hosted_vllm", "vllm", "sglang"):
        for kind in ("chat", "completion", "responses"):
            kwargs = {"cache_salt": "client's", "extra_body": {"cache_salt": "client's", "top_k": 5}}
            assert salter.apply(kwargs, "tenant-salt", kind, provider, f"{provider}/m") is True
            assert kwargs == {"extra_body": {"cache_salt": "tenant-salt", "top_k": 5}}
    assert salter.warned == frozenset()


def test_an_openai_compatible_deployment_gets_no_salt_and_one_warning(caplog):
    salter = CacheSalter()
    with caplog.at_level(logging.WARNING, logger="litellm_kvwarm"):
        for _ in range(3):
            kwargs = {"messages": []}
            assert salter.apply(kwargs, "tenant-salt", "chat", "openai", "openai/Qwen/Qwen3-8B") is False
            assert kwargs == {"messages": []}
        salter.apply({}, "tenant-salt", "responses", "openai_like", "openai_like/m")
        salter.apply({}, "tenant-salt", "messages", "anthropic", "anthropic/claude")  # not a salted kind: silent
    lines = [r.getMessage() for r in caplog.records if "tenant cache isolation" in r.getMessage()]
    assert len(lines) == 2
    assert "'openai/Qwen/Qwen3-8B' (provider openai) gets no cache_salt" in lines[0] and "hosted_vllm" in lines[0]
    assert salter.warned == {("openai", "openai/Qwen/Qwen3-8B"), ("openai_like", "openai_like/m")}


def test_the_warned_memory_is_bounded():
    from litellm_kvwarm import cache_salt

    salter = CacheSalter()
    for i in range(cache_salt.MAX_WARNED + 50):
        salter.apply({}, "s", "chat", "openai", f"openai/m{i}")
    assert len(salter.warned) == cache_salt.MAX_WARNED

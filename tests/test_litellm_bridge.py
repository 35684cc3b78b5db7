"""The bridge to LiteLLM (litellm_bridge.py) and the view's provider reading."""

import litellm
import pytest

from litellm_kvwarm.litellm_bridge import litellm_messages, unreachable
from litellm_kvwarm.view import provider_of


@pytest.mark.parametrize(
    "exc, expected",
    [
        # LiteLLM 1.108.7, hosted_vllm, port closed (aiohttp transport)
        (litellm.InternalServerError("Hosted_vllmException - Cannot connect to host 127.0.0.1:9 "
                                     "[Connect call failed ('127.0.0.1', 9)]", "hosted_vllm", "x"), True),
        (litellm.APIConnectionError("All connection attempts failed", "hosted_vllm", "x"), True),
        (litellm.ServiceUnavailableError("overloaded", "hosted_vllm", "x"), True),
        (litellm.Timeout("timed out", "x", "hosted_vllm"), True),
        # LiteLLM's own failures on a malformed body: not the target's fault
        (litellm.APIConnectionError("Unmapped prompt format", "hosted_vllm", "x"), False),
        (litellm.InternalServerError("EngineDeadError: engine loop died", "hosted_vllm", "x"), False),
        (litellm.BadRequestError("bad", "x", "hosted_vllm"), False),
        (litellm.RateLimitError("slow down", "hosted_vllm", "x"), False),
    ],
)
def test_unreachable(exc, expected):
    assert unreachable(exc) is expected


def test_messages_as_litellm_sends_them():
    messages = [{"role": "developer", "content": "be brief"}, {"role": "user", "content": "hi"}]
    assert litellm_messages(messages, "hosted_vllm", "Qwen/Qwen3-8B")[0]["role"] == "system"
    assert messages[0]["role"] == "developer"  # the request itself is not changed
    plain = [{"role": "user", "content": "hi"}]
    assert litellm_messages(plain, "hosted_vllm") is plain
    assert litellm_messages(messages, "not-a-provider") is messages


def test_provider_of():
    assert provider_of({"model": "hosted_vllm/Qwen/Qwen3-8B"}) == "hosted_vllm"
    assert provider_of({"model": "x", "custom_llm_provider": "sglang"}) == "sglang"
    assert provider_of({"model": "gpt-4o"}) is None

"""The bridge to LiteLLM (litellm_bridge.py) and the view's provider reading."""

import litellm
import pytest

from litellm_kvwarm.litellm_bridge import litellm_messages, target_failed, unreachable
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


SCREENSHOT = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
COMPUTER_CALL = {"role": "assistant", "content": None,
                 "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "computer", "arguments": "{}"}}]}


@pytest.mark.parametrize("provider", ["hosted_vllm", "openai"])
def test_a_tool_message_s_screenshot_is_counted_where_litellm_moves_it(provider):
    """LiteLLM's OpenAI-compatible transform moves a tool message's images into a user message after the tool run (led
    by its "[The following images are tool output ...]" text) and drops ``tool_reference`` parts: the exact count is of
    those messages (a breaker: ~35 tokens low per screenshot-carrying tool message, so a clamp on it overflowed)."""
    from litellm.llms.hosted_vllm.chat.transformation import HostedVLLMChatConfig

    messages = [{"role": "user", "content": "click the button"}, COMPUTER_CALL,
                {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "done"}, SCREENSHOT,
                                                                    {"type": "tool_reference", "tool_name": "computer"}]}]
    sent = HostedVLLMChatConfig()._transform_messages([dict(m) for m in messages], "fast-8b")
    counted = litellm_messages(messages, provider, "fast-8b")
    assert counted == sent and [m["role"] for m in counted] == ["user", "assistant", "tool", "user"]
    assert counted[2]["content"] == [{"type": "text", "text": "done"}] and counted[3]["content"][1] == SCREENSHOT
    assert messages[2]["content"][1] == SCREENSHOT  # the request itself is not changed
    text_only = [{"role": "user", "content": "hi"}, COMPUTER_CALL, {"role": "tool", "tool_call_id": "c1", "content": "done"}]
    assert litellm_messages(text_only, provider) is text_only
    # a Responses body goes to the server's own /v1/responses as items: no such rewrite (a second breaker: 29 tokens high)
    assert litellm_messages(messages, provider, "fast-8b", tool_messages=False) is messages
    # a malformed list (an element that is no message) is sent, and refused, as it is: no internal error
    malformed = ["hello", None, *messages]
    assert litellm_messages(malformed, provider, "fast-8b") is malformed


def test_provider_of():
    assert provider_of({"model": "hosted_vllm/Qwen/Qwen3-8B"}) == "hosted_vllm"
    assert provider_of({"model": "x", "custom_llm_provider": "sglang"}) == "sglang"
    assert provider_of({"model": "gpt-4o"}) is None


_TAIL = ("\n\nLiteLLM: model group 'slow' failed with the error above. Fallback to {targets} also failed: {detail}")
_REFUSAL = ("litellm.ContextWindowExceededError: litellm.BadRequestError: ContextWindowExceededError: Hosted_vllmException - "
            "This model's maximum context length is 4096 tokens. However, your prompt contains at least 4097 input tokens")


@pytest.mark.parametrize("exc, expected", [
    # LiteLLM 1.108.7's final error of a proactive escalation to a target answering 500 / 429 / 413 (breaker round):
    # the source fallback ``fast`` refused on length, so LiteLLM alone (fast first) answers that 400
    (litellm.InternalServerError("Hosted_vllmException - EngineCore encountered an issue." + _TAIL.format(targets="fast", detail=_REFUSAL),
                                 "hosted_vllm", "x"), True),
    (litellm.RateLimitError("Hosted_vllmException - slow down" + _TAIL.format(targets="fast", detail=_REFUSAL), "hosted_vllm", "x"), True),
    (litellm.APIError(413, "Request Entity Too Large" + _TAIL.format(targets="fast", detail=_REFUSAL), "hosted_vllm", "x"), True),
    (litellm.RateLimitError("x" + _TAIL.format(targets="{'model': 'fast', 'max_tokens': 512}", detail=_REFUSAL), "hosted_vllm", "x"), True),
    # the fallback to the source failed otherwise (LiteLLM alone would have answered that), or went elsewhere
    (litellm.InternalServerError("boom" + _TAIL.format(targets="fast", detail="litellm.InternalServerError: boom"), "hosted_vllm", "x"), False),
    (litellm.InternalServerError("boom" + _TAIL.format(targets="faster", detail=_REFUSAL), "hosted_vllm", "x"), False),
    (litellm.InternalServerError("boom\n\nLiteLLM: model group 'slow' failed with the error above. No fallback was attempted.",
                                 "hosted_vllm", "x"), False),
    (litellm.RateLimitError("slow down", "hosted_vllm", "x"), False),
    # no deployment of the target could take it (rpm spent, cooling down): LiteLLM alone answers 429 there (a
    # breaker's real proxies under usage-based routing), so the Router's own error stands
    (litellm.RateLimitError("No deployments available for selected model. Passed model=slow. Deployments={...}"
                            + _TAIL.format(targets="fast", detail=_REFUSAL), "hosted_vllm", "x"), False),
    (litellm.RateLimitError("No deployments available for selected model, Try again in 60 seconds. Passed model=slow. "
                            "pre-call-checks=False, cooldown_list=['a', 'b']", "hosted_vllm", "x"), False),
])
def test_a_failed_target_stands_for_the_source_s_400_only_where_the_source_refused_on_length(exc, expected):
    assert target_failed(exc, {"source": "fast", "window": 4096, "tokens": 6000}) is expected
    assert target_failed(exc, None) is False


def test_an_unreachable_target_stands_for_the_source_s_400():
    assert target_failed(litellm.APIConnectionError("All connection attempts failed", "hosted_vllm", "x"), {"source": "fast"})

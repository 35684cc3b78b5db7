"""Long agent tool loops on the Messages and Responses APIs against real token counts: each body is
turned into the chat request LiteLLM sends (``litellm_bridge.chat_payload``) and rendered in the
family's chat template; the safe estimate must cover the count and routing stay near it. Every
calibration tokenizer this parametrizes is a lab dependency (``scripts/install.sh``): a missing one
fails here, it never skips."""

from __future__ import annotations

import pytest

from litellm_kvwarm.lab.calibration.families import FAMILIES, TokenCounter
from litellm_kvwarm.lab.calibration.templates import render
from litellm_kvwarm.litellm_bridge import chat_payload
from litellm_kvwarm.tokens import calibrated_estimator, estimate_request

from test_token_agent_loops import anthropic_loop, responses_loop


@pytest.mark.parametrize("build, kind", [(anthropic_loop, "messages"), (responses_loop, "responses")])
@pytest.mark.parametrize("family", ["cl100k", "o200k", "qwen2.5", "qwen3.6", "deepseek", "llama3"])
def test_long_tool_loops_stay_under_the_safe_estimate(build, kind, family):
    """60 short tool round trips, as LiteLLM renders them in each family's template: the safe estimate
    had read 0.66-0.9x the truth (each call's wrapper text was not counted)."""
    assert FAMILIES[family].available(), f"{family} tokenizer missing: run `bash scripts/install.sh`"
    body = build(60)
    chat = chat_payload(kind, body)
    assert chat is not None
    truth = TokenCounter(FAMILIES[family]).count_all([render(FAMILIES[family].template, chat["messages"], chat.get("tools"))])[0]
    est = estimate_request(body, call_kind=kind, estimator=calibrated_estimator(family))
    assert est.safe >= truth
    assert est.routing <= 1.05 * truth


def _short_turns(n: int) -> list[dict]:
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": "k"} for i in range(n)]


@pytest.mark.parametrize("family", ["cl100k", "o200k", "qwen2.5", "qwen3.6", "deepseek", "llama3"])
@pytest.mark.parametrize("n", [21, 101, 401])
def test_many_short_messages_stay_under_the_safe_estimate(family, n):
    """An agent's "ok"/"continue" turns: the template's own tokens per message dominate. The fitted safe
    per-message weight was below routing's (deepseek 0.0), so 401 one-letter messages read 0.26-0.69 of
    the truth; the floor (``token_weights.with_message_floor``) raises it, for the family and for ``any``."""
    assert FAMILIES[family].available(), f"{family} tokenizer missing: run `bash scripts/install.sh`"
    messages = _short_turns(n)
    truth = TokenCounter(FAMILIES[family]).count_all([render(FAMILIES[family].template, messages, None)])[0]
    body = {"messages": messages}
    assert estimate_request(body, call_kind="chat", estimator=calibrated_estimator(family)).safe >= truth
    assert estimate_request(body, call_kind="chat", estimator=calibrated_estimator("any")).safe >= truth


@pytest.mark.parametrize("family", ["qwen2.5", "qwen3.6", "deepseek"])
def test_reasoning_sent_back_under_either_field_is_counted(family):
    """vLLM reads an assistant message's ``reasoning`` as its ``reasoning_content``; the estimate counted only
    the latter, so an agent loop sending ``reasoning`` back read 0.16-0.19x the text it carries."""
    thought = "Let me check the directory listing first, then decide which file to open. " * 30
    turns = [{"role": "user", "content": "go"}]
    for i in range(10):
        turns.append({"role": "assistant", "content": "", "reasoning": thought,
                      "tool_calls": [{"id": f"c{i}", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]})
        turns.append({"role": "tool", "tool_call_id": f"c{i}", "content": "ok"})
    text_alone = 10 * FAMILIES[family].load()([thought])[0]
    by_reasoning = estimate_request({"messages": turns}, call_kind="chat", estimator=calibrated_estimator(family))
    renamed = [{("reasoning_content" if k == "reasoning" else k): v for k, v in m.items()} for m in turns]
    by_content = estimate_request({"messages": renamed}, call_kind="chat", estimator=calibrated_estimator(family))
    assert by_reasoning.safe >= text_alone
    assert by_reasoning == by_content

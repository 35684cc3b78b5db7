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

"""Responses tool calls in parallel against real token counts (agent-shapes breaker, round 3), rendered in each
family's chat template (the Responses body as LiteLLM sends it, ``litellm_bridge.chat_payload``). Every tokenizer
parametrized here is a lab dependency (``scripts/install.sh``): a missing one fails, it never skips.

LiteLLM's Responses bridge folds parallel ``function_call`` items into one assistant message; each was counted as a
message, and 30 parallel calls with short outputs read routing 1.17x (deepseek) and 1.22x (llama3) the truth
(``token_responses_items.folds_into_previous``)."""

from __future__ import annotations

import json

import pytest

from litellm_kvwarm.lab.calibration.families import FAMILIES, TokenCounter
from litellm_kvwarm.lab.calibration.templates import render
from litellm_kvwarm.litellm_bridge import chat_payload
from litellm_kvwarm.tokens import calibrated_estimator, estimate_request

FAMILY_NAMES = ["cl100k", "o200k", "qwen2.5", "qwen3.6", "deepseek", "llama3"]
def _truth(family: str, chat: dict) -> int:
    return TokenCounter(FAMILIES[family]).count_all([render(FAMILIES[family].template, chat["messages"], chat.get("tools"))])[0]


@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_parallel_responses_calls_are_one_message_in_routing(family):
    assert FAMILIES[family].available(), f"{family} tokenizer missing: run `bash scripts/install.sh`"
    calls = [{"type": "function_call", "call_id": f"call_{i}", "name": "read", "arguments": json.dumps({"path": f"/r/{i}.py"})}
             for i in range(30)]
    outputs = [{"type": "function_call_output", "call_id": f"call_{i}", "output": "ok"} for i in range(30)]
    body = {"model": "m", "input": [{"type": "message", "role": "user", "content": "go"}, *calls, *outputs]}
    truth = _truth(family, chat_payload("responses", body))
    est = estimate_request(body, call_kind="responses", estimator=calibrated_estimator(family), bridged=True)
    assert est.safe >= truth
    # 0.73-1.06 after, as chat's own 30 parallel calls read (deepseek 1.06, llama3 1.01); deepseek 1.17, llama3 1.22 before
    assert est.routing <= 1.07 * truth, (est.routing, truth)

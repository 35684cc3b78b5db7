"""Short runs of one punctuation mark, and Responses tool calls in parallel, against real token counts
(agent-shapes breaker, round 3), rendered in each family's chat template (the Messages and Responses
bodies as LiteLLM sends them, ``litellm_bridge.chat_payload``). Every tokenizer parametrized here is a lab
dependency (``scripts/install.sh``): a missing one fails, it never skips.

* A run of 4-15 of one ASCII punctuation mark (pytest's ``....F..s..`` progress, ``^^^^`` under a
  traceback's code, ``=======`` conflict markers, ``!!!!``) is one pre-token that byte-level BPEs merge
  into about one token; the routing weights priced each mark at 0.55-0.91 tokens: routing read up to
  1.84x the truth on these texts (pytest progress 1.37-1.84, ``!!!!`` and ``....`` in prose 1.47-1.74, conflict
  markers 1.13-1.53, brackets 1.03-1.42, carets 0.96-1.17), now 0.56-0.96
  (``token_runs.SHORT_RUN_ROUTING_TOKENS``). Runs of three keep their price.
* LiteLLM's Responses bridge folds parallel ``function_call`` items into one assistant message; each was
  counted as a message, and 30 parallel calls with short outputs read routing 1.17x (deepseek) and 1.22x
  (llama3) the truth (``token_responses_items.folds_into_previous``)."""

from __future__ import annotations

import json
import random

import pytest

from litellm_kvwarm.lab.calibration.families import FAMILIES, TokenCounter
from litellm_kvwarm.lab.calibration.templates import render
from litellm_kvwarm.litellm_bridge import chat_payload
from litellm_kvwarm.tokens import calibrated_estimator, estimate_request

FAMILY_NAMES = ["cl100k", "o200k", "qwen2.5", "qwen3.6", "deepseek", "llama3"]
_RNG = random.Random(1)
TEXTS = {
    "pytest-progress": "".join(_RNG.choice("....F.s..") for _ in range(3000)),
    "pytest-lines": "\n".join(f"tests/test_mod_{i}.py " + "".join(_RNG.choice("......F.") for _ in range(60)) + f" [{i:3d}%]"
                              for i in range(60)),
    "exclaims": "Build failed!!!! Retrying.... please wait.... " * 100,
    "carets": "    x = foo(bar)\n        ^^^^^^^^\n" * 80,
    "conflict-markers": "<<<<<<< HEAD\na = 1\n=======\na = 2\n>>>>>>> branch\n" * 60,
    "brackets": "x = a[[[[0]]]] + {{{{y}}}} ````code````\n" * 60,
}


def _truth(family: str, chat: dict) -> int:
    return TokenCounter(FAMILIES[family]).count_all([render(FAMILIES[family].template, chat["messages"], chat.get("tools"))])[0]


@pytest.mark.parametrize("shape", sorted(TEXTS))
@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_short_punctuation_runs_route_at_or_under_the_truth(shape, family):
    assert FAMILIES[family].available(), f"{family} tokenizer missing: run `bash scripts/install.sh`"
    body = {"model": "m", "max_tokens": 10, "messages": [
        {"role": "user", "content": "run the tests"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "pytest -q"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": TEXTS[shape]}]}]}
    truth = _truth(family, chat_payload("messages", body))
    est = estimate_request(body, call_kind="messages", estimator=calibrated_estimator(family), bridged=True)
    assert est.safe >= truth
    # see the module docstring
    assert 0.5 * truth <= est.routing <= 1.1 * truth, (est.routing, truth)


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

"""The reasoning of the current tool loop (assistant turns after the last user message) for served models
whose templates render no reasoning at all (:func:`litellm_kvwarm.token_reasoning.renders_no_reasoning`):
it counts in the safe estimate only. Qwen3 (and any model not known to render none) keeps counting it.

Truths: tokens of the chat messages LiteLLM 1.108.7 sends (its own Messages / Responses → chat
translations), rendered in each family's official template (Qwen2.5, Llama 3.2, DeepSeek-V3) and counted
with its tokenizer (``litellm_kvwarm.lab.calibration``, as ``tests/lab`` does)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from litellm_kvwarm.config import Settings
from litellm_kvwarm.facts_estimator import build_estimator
from litellm_kvwarm.token_reasoning import renders_no_reasoning
from litellm_kvwarm.tokens import calibrated_estimator, estimate_request

from test_token_reasoning import _chat, _messages, _responses


def _current_loop(kind: str) -> dict:
    """Ten tool-loop turns with ~500 tokens of reasoning each, after the last user message (an agent mid-loop)."""
    if kind == "messages":
        return _messages(question=False)
    body = _chat() if kind == "chat" else _responses()
    field = "messages" if kind == "chat" else "input"
    return {**body, field: body[field][:-1]}


#: (family, kind) → the truth; before this change routing read 4,897-4,996 for all of them
TRUTHS = {("qwen2.5", "chat"): 472, ("qwen2.5", "messages"): 472, ("qwen2.5", "responses"): 472,
          ("llama3", "chat"): 388, ("llama3", "messages"): 388, ("llama3", "responses"): 388,
          ("deepseek", "chat"): 326, ("deepseek", "messages"): 326, ("deepseek", "responses"): 326}


@pytest.mark.parametrize("family, kind", sorted(TRUTHS))
def test_current_loop_reasoning_of_a_model_rendering_none_counts_in_safe_only(family, kind):
    """Before: ~4,900 routing tokens (10-15x the truth). After: 0.8-1.0x the truth (qwen2.5 378-439 of 472,
    llama3 365-423 of 388, deepseek 269-296 of 326); safe still above the truth plus the reasoning."""
    truth = TRUTHS[family, kind]
    body = _current_loop(kind)
    renders = calibrated_estimator(family)
    none = replace(renders, reasoning_rendered=False)
    assert estimate_request(body, call_kind=kind, estimator=renders, bridged=True).routing >= 10 * truth
    est = estimate_request(body, call_kind=kind, estimator=none, bridged=True)
    assert 0.75 * truth <= est.routing <= 1.1 * truth, est.routing
    assert est.safe >= truth + 10 * 450


@pytest.mark.parametrize("model, none", [
    ("Qwen/Qwen2.5-7B-Instruct", True), ("meta-llama/Llama-3.1-8B-Instruct", True), ("deepseek-ai/DeepSeek-V3", True),
    ("google/gemma-3-27b-it", True), ("Qwen/Qwen3-Coder-30B-A3B-Instruct", True), ("Qwen/Qwen3-235B-A22B-Instruct-2507", True),
    ("Qwen/Qwen3-8B", False), ("Qwen/Qwen3-235B-A22B-Thinking-2507", False), ("Qwen/QwQ-32B", False),
    ("deepseek-ai/DeepSeek-R1-Distill-Llama-70B", False), ("deepseek-ai/DeepSeek-V3.1", True),
    ("deepseek-ai/DeepSeek-V3.1-Terminus", True), ("deepseek-ai/DeepSeek-V3.2", False), ("deepseek-ai/DeepSeek-V3.2-Exp", False),
    ("nvidia/Llama-3.3-Nemotron-Super-49B-v1", False), ("openai/gpt-oss-20b", False), ("my-model", False), (None, False)])
def test_which_served_models_render_no_reasoning(model, none):
    assert renders_no_reasoning(model) is none


@pytest.mark.parametrize("served, rendered", [(("Qwen/Qwen2.5-7B-Instruct", "meta-llama/Llama-3.1-8B-Instruct"), False),
                                              (("Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen3-8B"), True), ((), True)])
@pytest.mark.parametrize("options", [{}, {"estimator": "ratio"}, {"estimator_family": "qwen2.5"}])
def test_the_group_estimator_knows_whether_its_models_render_reasoning(served, rendered, options):
    """Every served model must render none (a group with one Qwen3 deployment keeps counting it)."""
    assert build_estimator(Settings(**options), served).reasoning_rendered is rendered

"""What the agent-shape ``*_truth`` tests compare the estimates with: a Messages or Responses body as LiteLLM sends it
(``litellm_bridge.chat_payload``), rendered in each family's chat template and tokenized. Every tokenizer named here is
a lab dependency (``scripts/install.sh``): a missing one fails, it never skips."""

from __future__ import annotations

from dataclasses import dataclass

from litellm_kvwarm.lab.calibration.families import FAMILIES, TokenCounter
from litellm_kvwarm.lab.calibration.templates import render
from litellm_kvwarm.litellm_bridge import chat_payload
from litellm_kvwarm.tokens import calibrated_estimator, estimate_request

FAMILY_NAMES = ("cl100k", "o200k", "qwen2.5", "qwen3.6", "deepseek", "llama3")


@dataclass(frozen=True)
class Reading:
    """One family's true prompt tokens and the two estimates of the same body (tokens)."""

    truth: int
    safe: int
    routing: int


def readings(body: dict, kind: str, families=FAMILY_NAMES) -> dict[str, Reading]:
    """Per family of ``families``, the truth and the estimates of ``body`` (a ``kind`` request: messages or responses)."""
    chat = chat_payload(kind, body)
    assert chat is not None
    out = {}
    for name in families:
        spec = FAMILIES[name]
        assert spec.available(), f"{name} tokenizer missing: run `bash scripts/install.sh`"
        truth = TokenCounter(spec).count_all([render(spec.template, chat["messages"], chat.get("tools"))])[0]
        est = estimate_request(body, call_kind=kind, estimator=calibrated_estimator(name))
        out[name] = Reading(truth, est.safe, est.routing)
    return out

"""Agent request shapes mispriced in the agent-shapes breaker's third round (the truth, with the
calibration tokenizers, is in ``tests/lab/test_punctuation_runs_truth.py``)."""

from __future__ import annotations

import pytest

from litellm_kvwarm.token_runs import SHORT_RUN_ROUTING_TOKENS, find_runs
from litellm_kvwarm.tokens import calibrated_estimator, estimate_request


def _runs(text: str):
    return find_runs(text, text.encode())


@pytest.mark.parametrize("text, chars, tokens", [
    ("Loading.... done!!!!", 8, 2.0),  # two runs of four: one token each
    ("Loading... done!!! a == b", 0, 0.0),  # runs of two or three keep their class price (the weights lean on it)
    ("x" + "." * 15 + "y", 15, 1.0),  # 15: the longest short run
    ("x" + "." * 16 + "y", 0, 0.0),  # 16: a long run (RUN_PRICES), priced there
    ("a[[[[[0]]]]]", 10, 2 * (1.0 + 1.0)),  # brackets: 1 + (n - 3) / 2 a run
    ("<<<<<<< HEAD\n=======\n>>>>>>> b", 21, 3.0),
    ('"\\\\\\\\"', 0, 0.0),  # backslashes (escaped JSON): left to the escape fragments
    ("plain prose, with commas; and stops.", 0, 0.0),
])
def test_short_runs_of_one_punctuation_mark_are_found(text, chars, tokens):
    runs = _runs(text)
    assert (runs.short_chars, runs.short_routing) == (chars, tokens)
    assert bool(runs) == bool(chars) or bool(runs.found) or runs.gaps > 0


def test_short_runs_lower_routing_only():
    """The same character classes with and without runs of one mark: safe identical, routing lower by the
    runs' class price less one token a run (pytest's progress dots had read routing 1.4-1.9x the truth)."""
    est = calibrated_estimator("qwen2.5")
    runs = "....F..s...." * 200
    mixed = ".,.;F.,s.,;." * 200  # the same punctuation count, no run of four
    with_runs = estimate_request({"messages": [{"role": "user", "content": runs}]}, call_kind="chat", estimator=est)
    without = estimate_request({"messages": [{"role": "user", "content": mixed}]}, call_kind="chat", estimator=est)
    assert with_runs.safe == without.safe
    assert with_runs.routing < 0.8 * without.routing
    assert SHORT_RUN_ROUTING_TOKENS == 1.0

"""Tool results with terminal colour codes against real token counts (every calibration tokenizer
available offline, each in its family's template, the tool message as the template renders it:
Llama 3's writes it with ``tojson``, an ESC as ``\\u001b``, a line break as ``\\n``): never above the safe estimate.
Runs of blank lines read 0.09 of the truth in Llama 3 (priced as a merged run), tab-laden lines 0.61."""

from __future__ import annotations

import random

import pytest

from litellm_kvwarm.lab.calibration.families import FAMILIES, TokenCounter
from litellm_kvwarm.lab.calibration.templates import render
from litellm_kvwarm.tokens import calibrated_estimator, estimate_request

AVAILABLE = [f for f in FAMILIES.values() if f.available()]
RNG = random.Random(11)
OUTPUTS = {
    "coloured_tests": "\n".join(f"\x1b[32mok\x1b[0m test_{i} \x1b[2m({RNG.randrange(1000)}ms)\x1b[0m" for i in range(600)),
    "pytest_failures": "\n".join(f"\x1b[1;31mE\x1b[0m\x1b[31m   AssertionError\x1b[0m: line {i}" for i in range(600)),
    "cursor_moves": "".join(f"\x1b[{RNG.randrange(100)};{RNG.randrange(100)}H\x1b[K" for _ in range(2000)),
    # line breaks and tabs: ``tojson`` writes them as ``\n`` / ``\t``, a token each, which no run merges
    "blank_lines": "first\n" + "\n" * 3000 + "last",
    "blank_lines_space": "start" + "\n \n" * 2000 + "end",
    "tabs_in_text": "header\n" + "\t \t\n" * 2000 + "footer",
}


@pytest.mark.parametrize("kind", sorted(OUTPUTS))
def test_terminal_output_in_a_tool_result_is_never_under_the_safe_estimate(kind):
    messages = [{"role": "user", "content": "run the tests"},
                {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "sh", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": OUTPUTS[kind]}]
    truths = {}
    for family in AVAILABLE:
        truths[family.name] = TokenCounter(family).count_all([render(family.template, messages, None)])[0]
        est = estimate_request({"messages": messages}, call_kind="chat", estimator=calibrated_estimator(family.name))
        assert est.safe >= truths[family.name], (family.name, est.safe, truths[family.name])
    assert estimate_request({"messages": messages}, call_kind="chat", estimator=calibrated_estimator("any")).safe >= max(truths.values())

"""Random printable text in agent tool results against real token counts (estimator breaker, agent shapes): a
``git diff --binary`` patch (base85: letters, digits and 23 punctuation marks), Ascii85 (a PDF or PostScript
stream), generated passwords and fuzz strings. Each body is sent as LiteLLM sends it (``litellm_bridge.chat_payload``
for Messages and Responses) and rendered in the family's chat template. Every tokenizer parametrized here is a lab
dependency (``scripts/install.sh``): a missing one fails, it never skips.

Letters there come one or two between punctuation marks, each run a token of its own, while the safe weights price a
letter at 0.2-0.35 tokens (fitted on words) and the ``dense`` score, cut by every mark, stays near 0. At 15k tokens
the safe estimate read below the truth (Messages and Responses alike): the base85 patch 0.91 (o200k), 0.95 (deepseek),
0.96 (qwen3.6), 0.98 (qwen2.5), passwords 0.96-0.97 (o200k, deepseek), Ascii85 0.96-0.98 (o200k, deepseek); chat
bodies of the same text likewise. The safe estimate now adds the token edge of a word after a punctuation mark where
such words are many (``token_fragment_prices.punct_words_safe``): 1.07-1.21 here. Routing is unchanged (0.41-0.59)."""

from __future__ import annotations

import base64
import random
import string

import pytest

from litellm_kvwarm.lab.calibration.families import FAMILIES, TokenCounter
from litellm_kvwarm.lab.calibration.templates import render
from litellm_kvwarm.litellm_bridge import chat_payload
from litellm_kvwarm.tokens import calibrated_estimator, estimate_request

FAMILY_NAMES = ["cl100k", "o200k", "qwen2.5", "qwen3.6", "deepseek", "llama3"]
_RNG = random.Random(78)
_PRINTABLE = string.ascii_letters + string.digits + string.punctuation


def _git_binary_patch(size: int) -> str:
    """A ``git diff --binary`` of a new PNG: lines of a length letter and base85 (git's alphabet is Python's b85)."""
    lines = ["diff --git a/assets/logo.png b/assets/logo.png", "new file mode 100644", "index 0000000..3f2a1bc",
             "GIT binary patch", f"literal {size}"]
    while sum(map(len, lines)) < size:
        lines.append("z" + base64.b85encode(_RNG.randbytes(52)).decode())
    return "\n".join(lines) + "\n\nliteral 0\nHcmV?d00001\n"


def _passwords(size: int) -> str:
    out: list[str] = []
    while sum(map(len, out)) < size:
        out.append("".join(_RNG.choice(_PRINTABLE) for _ in range(24)))  # ``pwgen -sy 24``
    return "\n".join(out)


TEXTS = {
    "git_binary_patch": _git_binary_patch(20_000),
    "ascii85_stream": "stream\n" + base64.a85encode(_RNG.randbytes(16_000), wrapcol=76).decode() + "\nendstream",
    "passwords": _passwords(20_000),
}


def _messages(text: str) -> dict:
    return {"model": "m", "max_tokens": 4096,
            "tools": [{"name": "bash", "description": "Run a shell command.",
                       "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}}],
            "messages": [{"role": "user", "content": "Why did the last commit grow the repository?"},
                         {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_01", "name": "bash",
                                                            "input": {"command": "git show --binary HEAD"}}]},
                         {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": text}]}]}


def _responses(text: str) -> dict:
    return {"model": "m", "input": [{"type": "message", "role": "user", "content": "Dump the generated fixture."},
                                    {"type": "function_call", "call_id": "call_1", "name": "sh", "arguments": '{"cmd": "cat fixture"}'},
                                    {"type": "function_call_output", "call_id": "call_1", "output": text}]}


BODIES = {"messages": _messages, "responses": _responses, "chat": lambda text: {"messages": [{"role": "user", "content": text}]}}


@pytest.mark.parametrize("kind", sorted(BODIES))
@pytest.mark.parametrize("text", sorted(TEXTS))
def test_random_printable_text_is_never_under_the_safe_estimate(text, kind):
    body = BODIES[kind](TEXTS[text])
    chat = body if kind == "chat" else chat_payload(kind, body)
    assert chat is not None
    truths = {}
    for name in FAMILY_NAMES:
        spec = FAMILIES[name]
        assert spec.available(), f"{name} tokenizer missing: run `bash scripts/install.sh`"
        truths[name] = TokenCounter(spec).count_all([render(spec.template, chat["messages"], chat.get("tools"))])[0]
        est = estimate_request(body, call_kind=kind, estimator=calibrated_estimator(name))
        assert est.safe >= truths[name], (name, est.safe, truths[name], round(est.safe / truths[name], 3))
        assert est.routing <= truths[name]  # leans low (0.4-0.6), as before
    assert estimate_request(body, call_kind=kind, estimator=calibrated_estimator("any")).safe >= max(truths.values())

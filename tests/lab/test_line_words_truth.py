"""Words at the start of a line against real token counts: a word list, ``ls -1`` or ``grep -l`` output,
one value per line, and a content list of many short text parts (vLLM joins a list's text parts with
line breaks), on the chat, Messages and Responses APIs (the latter two as LiteLLM sends them,
``litellm_bridge.chat_payload``), rendered in each family's chat template.

Before: the routing weights price a line break at 0-0.56 and the word after it by its letters only, and
the parts of a content list were read joined with nothing between them, so 400 one-word parts read
0.02-0.29 of the true count in routing and a word list 0.15. Routing must now stay near the truth
(it leans low: 0.7-1.05 here, as the other routing truth tests allow), the safe estimate above it. Every tokenizer parametrized here is a lab
dependency (``scripts/install.sh``): a missing one fails, it never skips."""

from __future__ import annotations

import random

import pytest

from litellm_kvwarm.lab.calibration.families import FAMILIES, TokenCounter
from litellm_kvwarm.lab.calibration.templates import render
from litellm_kvwarm.litellm_bridge import chat_payload
from litellm_kvwarm.tokens import calibrated_estimator, estimate_request

FAMILY_NAMES = ["cl100k", "o200k", "qwen2.5", "qwen3.6", "deepseek", "llama3"]
#: Real prose (this project's brief), for words of every length and frequency.
PROSE = """Operators run a fast model with a small context window and a slow one with a large window behind one
LiteLLM proxy. Two things go wrong at the switch. A request that does not fit the fast window is sent there
anyway and comes back as an error, and the agent loop aborts. When it is finally escalated, the slow model has
never seen the conversation and must prefill every token: tens of seconds of dead air. Key-value caches cannot
be moved between different models, but tokens can. Automatic prefix caching reuses the cache of any prefix it
has already computed, so the package estimates input tokens cheaply, routes proactively when an estimate will
not fit, clamps the output so the prompt and the answer fit, keeps a reactive backstop that parses the
server's own numbers out of its error, and warms the slow model ahead of time with the same messages, guarded
by a per-session cooldown kept in Redis, a bounded in-memory fallback and one environment switch."""
WORDS = [w.strip(".,:") for w in PROSE.split()]


def _words(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [rng.choice(WORDS) for _ in range(n)]


def _files(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [f"{rng.choice(WORDS)}_{rng.choice(WORDS)}.{rng.choice(('py', 'md', 'json', 'ts'))}" for _ in range(n)]


def _truth(family: str, chat: dict) -> int:
    spec = FAMILIES[family]
    assert spec.available(), f"{family} tokenizer missing: run `bash scripts/install.sh`"
    return TokenCounter(spec).count_all([render(spec.template, chat["messages"], chat.get("tools"))])[0]


def _check(family: str, body: dict, kind: str) -> float:
    chat = body if kind == "chat" else chat_payload(kind, body)
    assert chat is not None
    truth = _truth(family, chat)
    est = estimate_request(body, call_kind=kind, estimator=calibrated_estimator(family))
    assert est.safe >= truth
    return est.routing / truth


LISTS = {
    "word list": lambda: "\n".join(_words(400, 1)),
    "ls -1": lambda: "\n".join(_files(300, 2)),
}


@pytest.mark.parametrize("family", FAMILY_NAMES)
@pytest.mark.parametrize("name", list(LISTS))
def test_one_word_per_line_routes_near_the_truth(family, name):
    ratio = _check(family, {"messages": [{"role": "user", "content": LISTS[name]()}]}, "chat")
    assert 0.7 <= ratio <= 1.05, f"routing ÷ truth {ratio:.2f}"


def _tsv(rows: int, seed: int, cells) -> str:
    rng = random.Random(seed)
    return "\n".join("\t".join([rng.choice(WORDS).lower(), *cells(rng)]) for _ in range(rows))


#: Tab-separated values with short cells (``mysql -B``, exported flags): a word after a tab costs what a word
#: after a space costs in most tokenizers (the tab merges into it), two tokens in DeepSeek's.
TSV = {
    "word, yes/no, true/false": lambda: _tsv(400, 7, lambda r: [r.choice(["yes", "no"]), r.choice(["true", "false"])]),
    "privileges Y/N": lambda: _tsv(250, 8, lambda r: ["localhost", *(r.choice("YN") for _ in range(8))]),
    "flags true/false": lambda: _tsv(120, 9, lambda r: [r.choice(["true", "false"]) for _ in range(8)]),
    "key, value": lambda: _tsv(300, 10, lambda r: [r.choice(WORDS)]),
}


@pytest.mark.parametrize("family", FAMILY_NAMES)
@pytest.mark.parametrize("name", list(TSV))
def test_tab_separated_values_route_under_the_truth(family, name):
    """A tab is priced as a space before a word, not as a line break: priced as a break, short cells read up to
    1.6 × the truth (the request would go to the slow group though it fits the fast one); before either
    correction 0.04-0.55."""
    ratio = _check(family, {"messages": [{"role": "user", "content": TSV[name]()}]}, "chat")
    assert 0.5 <= ratio <= 1.0, f"routing ÷ truth {ratio:.2f}"


def _parts(kind: str, words: list[str]) -> dict:
    part = {"chat": "text", "messages": "text", "responses": "input_text"}[kind]
    content = [{"type": part, "text": w} for w in words]
    if kind == "responses":
        return {"model": "m", "input": [{"type": "message", "role": "user", "content": content}]}
    return {"model": "m", "max_tokens": 16, "messages": [{"role": "user", "content": content}]}


@pytest.mark.parametrize("family", FAMILY_NAMES)
@pytest.mark.parametrize("kind", ["chat", "messages", "responses"])
def test_a_content_list_of_one_word_parts_routes_near_the_truth(family, kind):
    ratio = _check(family, _parts(kind, _words(400, 5)), kind)
    assert 0.7 <= ratio <= 1.05, f"routing ÷ truth {ratio:.2f}"


@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_prose_with_paragraphs_keeps_its_routing(family):
    """Text whose lines are long keeps the fitted price (line words under a quarter of its word starts):
    the correction leaves routing ≤ the truth there."""
    ratio = _check(family, {"messages": [{"role": "user", "content": "\n\n".join([PROSE.replace("\n", " ")] * 20)}]}, "chat")
    assert 0.7 <= ratio <= 1.05, f"routing ÷ truth {ratio:.2f}"

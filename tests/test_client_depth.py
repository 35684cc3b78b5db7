"""Client-controlled nesting depth never raises in the backstop's learner or the warm bookkeeping.

A request body nested past the interpreter's recursion limit (a few kB of brackets) reached ``json.dumps``
and recursive walks in the limit learner's echo check and in the warmed-prefix digests: the learner's
``RecursionError`` aborted the whole hop's plan (fail open: the hop went out unclamped), and a warm that
succeeded was counted as failed. Issue 12 asks for no recursion on client-controlled depth anywhere.
"""

import json

from litellm_kvwarm.deep_json import json_text, strings
from litellm_kvwarm.learned_limits import LimitKind, Observed
from litellm_kvwarm.limit_learning import echoes_client
from litellm_kvwarm.warm_prefixes import WarmedPrefixes, digest_chain

DEPTH = 5_000


def _deep(leaf: object, depth: int = DEPTH) -> object:
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def test_strings_in_order_at_any_depth():
    value = {"a": ["x", {"b": "y", "c": _deep("z")}], "d": "w"}
    assert strings(value) == ["x", "y", "z", "w"]
    assert strings("only") == ["only"] and strings(7) == [] and strings(None) == []


def test_the_learners_echo_check_reads_a_deep_body():
    echoed = "This model's maximum context length is 300 tokens. However, your messages resulted in 5000 tokens"
    observed = Observed(LimitKind.TOTAL, 4096, "openai-messages-resulted")
    deep_echo = {"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}], "extra": _deep(echoed)}]}
    deep_plain = {"messages": [{"role": "user", "content": "hello", "extra": _deep("nothing here")}]}
    assert echoes_client(observed, deep_echo) is True  # the echoed refusal is found at depth 5,000
    assert echoes_client(observed, deep_plain) is False


def test_warmed_prefix_digests_of_a_deep_body():
    deep = {"model": "slow", "messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b", "x": _deep(1)}],
            "metadata": {"kvwarm_session": "s1"}}
    chain = digest_chain("chat", deep)
    assert len(chain) == 3 and len(set(chain)) == 3
    shallow = dict(deep, messages=deep["messages"][:1])
    assert digest_chain("chat", shallow)[1] == chain[1]  # a prefix's link does not depend on what follows
    prefixes = WarmedPrefixes()
    prefixes.remember("chat", deep)  # raised RecursionError before
    assert prefixes.held("chat", deep).items == 2


def test_json_text_of_a_shallow_value_is_json_dumps_text():
    value = {"b": [1, "é"], "a": None}
    assert json_text(value, sort_keys=True) == json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)

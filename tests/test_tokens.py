import json
import math

import pytest

from litellm_kvwarm.tokens import (
    ROUTING_TOKENS_PER_MESSAGE,
    SAFE_TOKENS_PER_MESSAGE,
    SAFE_TOKENS_PER_OTHER_PART,
    SAFE_TOKENS_PER_REQUEST,
    count_request,
    estimate_request,
)

TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


def test_plain_chat_counts_characters_and_messages():
    payload = {"messages": [{"role": "system", "content": "a" * 100}, {"role": "user", "content": "b" * 1100}]}
    est = estimate_request(payload)
    assert est.counts.chars == 1200 and est.counts.messages == 2
    assert est.safe == 400 + 2 * SAFE_TOKENS_PER_MESSAGE + SAFE_TOKENS_PER_REQUEST
    assert est.routing == 300 + 2 * ROUTING_TOKENS_PER_MESSAGE
    assert est.safe > est.routing


def test_tool_schemas_tool_calls_and_results_cost_tokens():
    base = {"messages": [{"role": "user", "content": "hi"}]}
    with_tools = dict(base, tools=[TOOL])
    assert count_request(with_tools).chars > count_request(base).chars + 100
    convo = {
        "messages": [
            {"role": "user", "content": "weather?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}],
            },
            {"role": "tool", "tool_call_id": "c1", "content": '{"temp": 21}'},
        ]
    }
    c = count_request(convo)
    assert c.messages == 3
    assert c.chars >= len("weather?") + len('{"city":"Paris"}') + len("get_weather") + len('{"temp": 21}') + len("c1")


def test_response_format_schema_counts_in_safe_only():
    """A breaker's case: a 1,000-property ``response_format`` schema with a one-line prompt was routed as
    a 46k-token request to the slow group, where vLLM (guided decoding, nothing rendered) counted 54
    prompt tokens and LiteLLM alone served it on fast. The schema is kept apart: safe counts it (some
    servers render it), routing does not."""
    rf = {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object", "properties": {"a" * 300: {}}}}}
    messages = [{"role": "user", "content": "Fill the form."}]
    counts = count_request({"messages": messages, "response_format": rf})
    assert counts.format_parts == (json.dumps(rf, separators=(",", ":")),) and counts.chars == len("Fill the form.")
    assert count_request({"messages": messages, "response_format": {"type": "text"}}).format_parts == ()
    for estimator in (None, calibrated_estimator("qwen2.5")):
        plain = estimate_request({"messages": messages}, estimator=estimator)
        structured = estimate_request({"messages": messages, "response_format": rf}, estimator=estimator)
        assert structured.routing == plain.routing
        assert structured.safe >= plain.safe + 300 // 4  # 300 letters of one property name at least


def test_messages_xor_prompt():
    both = {"messages": [{"role": "user", "content": "m" * 40}], "prompt": "p" * 4000}
    assert count_request(both, call_kind="chat").chars == 40
    assert count_request(both, call_kind="completion").chars == 4000
    assert count_request({"prompt": "p" * 4000}).chars == 4000


@pytest.mark.parametrize(
    "prompt, exact",
    [([1, 2, 3, 4, 5], 5), ([[1, 2], [1, 2, 3]], 3)],
    ids=["token-ids", "batch-of-token-ids"],
)
def test_prompt_token_ids_are_exact(prompt, exact):
    est = estimate_request({"prompt": prompt})
    assert est.safe == est.routing == exact


def test_prompt_batch_of_strings_uses_longest():
    assert count_request({"prompt": ["a" * 10, "b" * 99]}).chars == 99


@pytest.mark.parametrize(
    "payload",
    [
        {"messages": "not a list"},
        {"messages": [None, 5, "str", {"role": "user", "content": {"weird": True}}]},
        {"messages": [{"role": "user", "content": [None, 3, {"type": "text", "text": None}]}]},
        {"prompt": None},
        {"prompt": [1, "a", None]},
        {},
        {"messages": [], "tools": [{"self": object()}]},
    ],
    ids=["messages-str", "mixed-garbage", "odd-parts", "prompt-none", "prompt-mixed", "empty", "unserialisable-tools"],
)
def test_bad_input_never_raises(payload):
    est = estimate_request(payload)
    assert est.safe >= est.routing >= 0


def test_custom_ratios():
    payload = {"prompt": "z" * 6000}
    est = estimate_request(payload, safe_chars_per_token=2.0, routing_chars_per_token=6.0)
    assert est.safe == 3000 + SAFE_TOKENS_PER_REQUEST and est.routing == 1000
    assert math.isclose(est.counts.chars, 6000)


# --------------------------------------------------------------- calibrated estimator (issue 7)

import json
from pathlib import Path

from litellm_kvwarm.tokens import (
    CHAR_CLASSES,
    FEATURES,
    SAMPLE_CHARS,
    CalibratedEstimator,
    LinearWeights,
    RatioEstimator,
    calibrated_estimator,
    char_classes,
    family_of,
    text_features,
    load_weights,
)

SAMPLE = json.loads((Path(__file__).parent / "data" / "token_sample.json").read_text(encoding="utf-8"))


def test_char_classes_counts_every_class_exactly():
    text = "Hello, World 42\n日本語 café 😀\tह Привет “q” — ° Ελλάδα → ⠁ ﬁ\n    x"
    got = dict(zip(CHAR_CLASSES, char_classes(text)))
    assert got == {
        "letters": 15, "digits": 2, "spaces": 12, "indent": 4, "breaks": 3, "punct": 1,
        "latin_ext": 2, "cyrillic": 6, "utf8_2": 6, "gen_punct": 3, "symbols": 2, "cjk": 3, "indic": 1, "utf8_3": 1,
        "utf8_4": 1,
    }
    assert sum(got.values()) == len(text)


def test_indent_counts_spaces_in_runs_only():
    """A run of n spaces puts 2⌊n/2⌋ in ``indent`` (byte-level BPEs merge it), the rest in ``spaces``."""
    classes = dict(zip(CHAR_CLASSES, char_classes("def f():\n        return {\n            'a': 1}\n")))
    assert (classes["indent"], classes["spaces"]) == (20, 3)
    classes = dict(zip(CHAR_CLASSES, char_classes("one two  three   four")))
    assert (classes["indent"], classes["spaces"]) == (4, 2)


def test_every_non_ascii_safe_weight_covers_the_byte_level_bound_where_the_data_is_thin():
    """3,000 Braille characters (U+2800–U+28FF, 3 UTF-8 bytes each) cost up to 3 tokens each in a
    byte-level vocabulary (cl100k: 8,957): every family's safe estimate covers 3 per character, in
    both regimes; 4-byte characters cover 4. (Real counts per family: tests/lab/test_calibration.py.)"""
    braille = "".join(chr(0x2800 + (i * 37) % 256) for i in range(3000))
    emoji = "".join(chr(0x1F300 + (i * 7) % 300) for i in range(1000))
    for family in load_weights():
        est = calibrated_estimator(family)
        assert estimate_request({"messages": [{"role": "user", "content": braille}]}, estimator=est).safe >= 3 * 3000
        assert estimate_request({"messages": [{"role": "tool", "content": emoji}]}, estimator=est).safe >= 4 * 1000
        english = "We sent the request to the proxy, and the proxy sent it to the model. " * 40 + braille[:200]
        assert estimate_request({"messages": [{"role": "user", "content": english}]}, estimator=est).safe >= 3 * 200


def test_thai_without_spaces_is_priced_by_its_characters():
    """Thai is written without spaces: its routing estimate must come from its characters (it was
    ~4 tokens for 3,000 characters when spaces carried the routing weight)."""
    thai = ("ภาษาไทยเป็นภาษาที่ใช้กันอย่างแพร่หลายในประเทศไทยและมีตัวอักษรเป็นของตนเอง" * 60)[:3000]
    for family in load_weights():
        est = estimate_request({"messages": [{"role": "user", "content": thai}]}, estimator=calibrated_estimator(family))
        assert est.routing >= 300, family
        assert est.safe >= est.routing


@pytest.mark.parametrize("family", SAMPLE["families"])
def test_cjk_and_symbol_tool_results_are_never_under_the_safe_estimate(family):
    """Held-out agent requests whose tool results hold CJK text or symbol runs (pinned sample)."""
    rows = [r for r in SAMPLE["requests"] if r["kind"] in ("agent:cjk", "agent:symbols")]
    assert len(rows) >= 10
    est = calibrated_estimator(family)
    for r in rows:
        assert estimate_request(r["payload"], call_kind="chat", estimator=est).safe >= r["truth"][family], r["id"]


def test_char_classes_of_long_text_is_sampled_and_scaled_to_its_length():
    text = ("The quick brown fox, 1234 jumps!\n" * 40_000)[:1_000_000]
    got = dict(zip(CHAR_CLASSES, char_classes(text)))
    assert abs(sum(got.values()) - len(text)) < 1e-6 * len(text)
    exact = dict(zip(CHAR_CLASSES, char_classes(text[:33 * 200])))  # whole periods, below SAMPLE_CHARS
    for name in CHAR_CLASSES:  # a periodic text: the sample's shares match the exact shares within 1%
        assert abs(got[name] / len(text) - exact[name] / (33 * 200)) < 0.01, name
    assert len(text) > SAMPLE_CHARS


def test_dense_score_flags_base64_and_not_prose():
    import base64

    blob = base64.b64encode(bytes(range(256)) * 12).decode()  # 4,096 characters, no separators
    prose = "The quick brown fox jumps over the lazy dog, again and again. " * 64
    dense = FEATURES.index("dense") - 3  # text_features: the classes, then dense, then indented_lines
    assert text_features(blob)[dense] > 0.75 * len(blob)  # "+" and "/" count as separators
    assert text_features(prose)[dense] == 0
    assert text_features(prose + blob)[dense] > 0.7 * len(blob)  # found inside a longer text too


def test_indented_lines_count_one_per_indentation_run():
    """Byte-level BPEs spend ~1 token per indentation run whatever its length: one feature per
    indented line (a line break followed by a space), not per space."""
    named = dict(zip(FEATURES[3:], text_features("def f():\n        return {\n            'a': 1}\n  \n")))
    assert named["indented_lines"] == 3 and named["indent"] == 22
    assert dict(zip(FEATURES[3:], text_features("no indentation here\nnor here\n")))["indented_lines"] == 0
    code = "def handler(request):\n    if request.ok:\n        return request.body\n" * 2000  # sampled past SAMPLE_CHARS
    assert dict(zip(FEATURES[3:], text_features(code)))["indented_lines"] == pytest.approx(2 * 2000, rel=0.02)


def test_plain_message_fast_path_counts_like_the_general_path():
    plain = {"messages": [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi there"}]}
    named = {"messages": [{"role": "user", "content": "hello", "name": ""}, {"role": "assistant", "content": "hi there"}]}
    a, b = count_request(plain), count_request(named)
    assert (a.chars, a.messages, a.text) == (b.chars, b.messages, b.text) == (13, 2, "hellohi there")


def test_char_classes_survive_lone_surrogates_and_empty_text():
    assert sum(char_classes("a\ud800b")) == 3
    assert char_classes("") == (0.0,) * len(CHAR_CLASSES)


@pytest.mark.parametrize(
    "model, family",
    [
        ("Qwen/Qwen2.5-7B-Instruct", "qwen2.5"),
        ("hosted_vllm/Qwen/Qwen3-8B", "qwen2.5"),
        ("Qwen/Qwen3.6-27B", "qwen3.6"),
        ("deepseek-ai/DeepSeek-V3", "deepseek"),
        ("meta-llama/Llama-3.2-3B-Instruct", "llama3"),
        ("google/gemma-3-27b-it", "gemma3"),
        ("hosted_vllm/gemma3:12b", "gemma3"),
        ("google/gemma-2-9b-it", "any"),
        ("openai/gpt-4o-mini", "o200k"),
        ("gpt-4-turbo", "cl100k"),
        ("mistralai/Mistral-7B-Instruct", "any"),
        (None, "any"),
    ],
)
def test_family_of_served_model_names(model, family):
    assert family_of(model) == family


def test_calibrated_estimator_resolves_family_keys_model_names_and_unknowns():
    assert calibrated_estimator("qwen2.5").family == "qwen2.5"
    assert calibrated_estimator("meta-llama/Llama-3.1-8B-Instruct").family == "llama3"
    assert calibrated_estimator("some-unknown-model").family == "any"
    assert calibrated_estimator(None).family == "any"
    assert calibrated_estimator("cl100k") is calibrated_estimator("cl100k")  # built once, cached


def test_shipped_weights_cover_every_family_and_are_non_negative():
    weights = load_weights()
    assert {"any", "cl100k", "o200k", "qwen2.5", "qwen3.6", "deepseek", "llama3", "gemma3"} <= set(weights)
    for w in weights.values():
        assert len(w.safe) == len(FEATURES) and min(w.safe) >= 0 and min(w.routing) >= 0


def test_calibrated_estimate_never_drops_when_text_grows():
    est = calibrated_estimator("any")
    previous = estimate_request({"messages": []}, estimator=est)
    for n in (1, 10, 100, 1000, 10_000, 100_000):
        current = estimate_request({"messages": [{"role": "user", "content": "word, 12 日本 " * n}]}, estimator=est)
        assert current.safe >= previous.safe and current.routing >= previous.routing
        assert current.safe >= current.routing
        previous = current


def test_ratio_estimator_stays_selectable():
    payload = {"messages": [{"role": "user", "content": "x" * 1200}]}
    assert estimate_request(payload, estimator=RatioEstimator(3.0, 4.0)) == estimate_request(payload)


def test_linear_weights_reject_wrong_length():
    with pytest.raises(ValueError, match="features"):
        LinearWeights(safe=(1.0,), routing=(1.0,) * len(FEATURES))


def _sample_rates(family: str, weights: str, *, agent: bool | None = None) -> dict[str, float]:
    """Rates over the sample's requests: all (``agent=None``), the agent-shaped ones, or the others."""
    est = calibrated_estimator(weights)
    rows = [(estimate_request(r["payload"], call_kind="chat", estimator=est), r["truth"][family]) for r in SAMPLE["requests"]
            if agent is None or r["kind"].startswith("agent:") == agent]
    large = [(e, y) for e, y in rows if y >= 1000]
    ratios = sorted(e.routing / y for e, y in rows)
    return {
        "n": len(rows),
        "n_large": len(large),
        "safe_below_all": sum(e.safe < y for e, y in rows) / len(rows),
        "safe_below_large": sum(e.safe < y for e, y in large) / len(large),
        "routing_at_or_below": sum(e.routing <= y for e, y in rows) / len(rows),
        "routing_median": ratios[len(ratios) // 2],
    }


@pytest.mark.parametrize("family", SAMPLE["families"])
def test_held_out_sample_meets_the_issue_targets(family):
    """Issue 7's acceptance criteria, family weights, on the fixed held-out sample shipped with the tests:
    on issue 7's data (ShareGPT, BFCL, multilingual prose). The agent-shaped rows (issue 14) are
    ~30% of this sample against ~9% of the held-out half, and they are its smallest ones (≤ 9,000
    characters: mostly system prompt and tool schemas); their target is a routing median within
    0.90–1.00 per kind, checked on the whole held-out half (docs/estimator.md) and below."""
    rates = _sample_rates(family, family, agent=False)
    assert rates["n"] >= 150 and rates["n_large"] >= 40
    assert rates["safe_below_large"] == 0.0
    assert rates["safe_below_all"] < 0.01
    assert rates["routing_at_or_below"] >= 0.80
    assert rates["routing_median"] >= 0.90
    agent = _sample_rates(family, family, agent=True)
    assert agent["n"] >= 100 and agent["safe_below_all"] == 0.0
    assert 0.90 <= agent["routing_median"] <= 1.00


@pytest.mark.parametrize("family", SAMPLE["families"])
def test_any_weights_hold_for_every_family(family):
    """The fallback ("any") is safe for every family and leans low for every family; its
    routing median is lower than a family's own (it is fitted to the smallest count across
    families; 0.80–0.92 on the whole held-out half, lower on this sample, which holds more
    CJK and other non-Latin requests, where routing leans furthest low, than traffic does)."""
    rates = _sample_rates(family, "any")
    assert rates["safe_below_large"] == 0.0
    assert rates["safe_below_all"] < 0.01
    assert rates["routing_at_or_below"] >= 0.85
    assert rates["routing_median"] >= 0.70


def test_seed_ratios_miss_the_targets_on_the_same_sample():
    """Why the calibrated estimator exists: ÷4 does not lean low, ÷3 falls below the truth."""
    rows = [(estimate_request(r["payload"], call_kind="chat"), r["truth"]) for r in SAMPLE["requests"]]
    worst_routing = min(sum(e.routing <= y[f] for e, y in rows) / len(rows) for f in SAMPLE["families"])
    worst_safe = max(sum(e.safe < y[f] for e, y in rows) / len(rows) for f in SAMPLE["families"])
    assert worst_routing < 0.80
    assert worst_safe > 0.01


def test_english_regime_needs_english_words_and_ascii_text():
    """The English weights go only to text that reads as English; anything else (other
    languages, code without prose, English words inside a mostly non-ASCII text) keeps the
    general weights. Cost is a benchmark (docs/estimator.md), not a test."""
    from litellm_kvwarm.tokens import request_features_and_regime

    def english(text: str) -> bool:
        return request_features_and_regime(count_request({"messages": [{"role": "user", "content": text}]}))[1]

    assert english("We sent the request to the proxy, and the proxy sent it to the model. " * 20)
    assert not english("Habari ya asubuhi, rafiki yangu, tunakwenda sokoni leo. " * 20)  # Swahili, plain ASCII
    assert not english("def handler(request):\n    return route(request, window=16384)\n" * 20)
    assert not english(("Кошка пошла в парк, и там было тихо. " * 20) + "the end of the story")
    assert not english("")


# ------------------------------------------------------------ client-controlled nesting depth


def _nested(depth: int, leaf: object) -> object:
    value = leaf
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


def _with_recursion_limit(limit: int, fn):
    import sys

    before = sys.getrecursionlimit()
    sys.setrecursionlimit(limit)
    try:
        return fn()
    finally:
        sys.setrecursionlimit(before)


DEEP = _nested(5000, "leaf")
# json.dumps' text of DEEP, built without it: 2,500 '{"k":' and 2,500 '[' around the leaf.
DEEP_JSON_CHARS = len('"leaf"') + 2500 * (len('{"k":') + 1) + 2500 * 2


@pytest.mark.parametrize(
    "payload, json_chars, other_parts",
    [
        ({"messages": [{"role": "user", "content": {"k": DEEP}}]}, len('{"k":}') + DEEP_JSON_CHARS, 0),
        ({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": None,
          "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": DEEP}}]}]},
         len('{"name":"f","arguments":}') + DEEP_JSON_CHARS, 0),
        ({"messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function", "function": {"name": "f", "parameters": DEEP}}]},
         len('[{"type":"function","function":{"name":"f","parameters":}}]') + DEEP_JSON_CHARS, 0),
        ({"messages": [{"role": "user", "content": "hi"}], "tools": DEEP}, DEEP_JSON_CHARS, 0),
        ({"messages": [DEEP, {"role": "user", "content": "hi"}]}, DEEP_JSON_CHARS, 0),
        # an untyped part is read as an unknown block: its key names ("k") and its leaf, not one flat part
        ({"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}, DEEP]}]}, len("leaf"), 0),
        ({"prompt": DEEP}, 0, 0),
    ],
    ids=["content", "tool-call-arguments", "tool-schema", "tools-itself", "message-itself", "content-part", "prompt"],
)
def test_deeply_nested_payload_is_estimated_without_recursion(payload, json_chars, other_parts):
    """Issue 12, harm 11: 1,000+ levels of lists/dicts raised RecursionError in the estimator, so the
    request was neither estimated nor routed. 5,000 levels, with the recursion limit at 200: the
    nesting is counted by its JSON text, as json.dumps would have written it without a limit."""
    for estimator in (None, calibrated_estimator("qwen2.5")):
        est = _with_recursion_limit(200, lambda: estimate_request(payload, estimator=estimator))
        assert est.safe >= est.routing >= 0
        assert max(map(len, est.counts.parts), default=0) == max(json_chars, 2 if "messages" in payload else 0)
        assert est.counts.other_parts == other_parts
        if json_chars:
            assert est.safe > json_chars // 10  # the nesting costs tokens, it is not dropped


def test_json_text_is_json_dumps_at_every_depth():
    """The iterative encoder writes exactly json.dumps' text (the estimates of normal requests stay
    bit-identical), also where json.dumps itself would run out of recursion."""
    import json
    import random

    from litellm_kvwarm.deep_json import _json_text_iterative
    from litellm_kvwarm.tokens import json_text

    rng = random.Random(12)
    leaves = [None, True, False, 0, -3, 10**30, 1.5, 2.5e-300, float("nan"), float("-inf"), "", "é\"\\\n\u2028", "😀", object()]

    def value(depth):
        roll = rng.random()
        if depth > 6 or roll < 0.3:
            return rng.choice(leaves)
        if roll < 0.65:
            return [value(depth + 1) for _ in range(rng.randrange(4))]
        if roll < 0.75:
            return tuple(value(depth + 1) for _ in range(rng.randrange(3)))
        keys = rng.sample(["b", "a", "é", 1, 2.5, None, True], rng.randrange(4))
        return {k: value(depth + 1) for k in keys}

    def outcome(fn):
        try:
            return fn()
        except (TypeError, ValueError) as exc:  # mixed keys cannot be sorted: both raise
            return type(exc)

    for _ in range(2000):
        v = value(0)
        for sort_keys in (False, True):
            expected = outcome(lambda: json.dumps(v, ensure_ascii=False, separators=(",", ":"), default=str, sort_keys=sort_keys))
            assert outcome(lambda: _json_text_iterative(v, sort_keys)) == expected
            assert outcome(lambda: json_text(v, sort_keys=sort_keys)) == expected
    cycle: list = [1]
    cycle.append(cycle)
    with pytest.raises(ValueError):
        _json_text_iterative(cycle, False)
    deep = _with_recursion_limit(200, lambda: json_text(DEEP))
    assert deep == '[{"k":' * 2500 + '"leaf"' + "}]" * 2500 and len(deep) == DEEP_JSON_CHARS

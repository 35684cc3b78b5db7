import pytest

from litellm_kvwarm.meta import strip_client_keys
from litellm_kvwarm.output_budget import OutputBudget, cap_output, read_output_budget, set_output


@pytest.mark.parametrize(
    "payload, expected",
    [
        ({}, OutputBudget(False, True, None)),
        ({"max_tokens": None}, OutputBudget(False, True, None)),
        ({"max_tokens": 100}, OutputBudget(True, True, 100)),
        # vLLM reads max_completion_tokens first when both are set
        ({"max_tokens": 100, "max_completion_tokens": 5000}, OutputBudget(True, True, 5000)),
        ({"max_completion_tokens": 7}, OutputBudget(True, True, 7)),
        ({"max_tokens": 0}, OutputBudget(True, False, None)),
        ({"max_tokens": -5}, OutputBudget(True, False, None)),
        ({"max_tokens": "many"}, OutputBudget(True, False, None)),
        ({"max_tokens": True}, OutputBudget(True, False, None)),
        ({"max_tokens": 10.5}, OutputBudget(True, False, None)),
        ({"max_tokens": 100, "max_completion_tokens": 0}, OutputBudget(True, False, None)),
        # a min_tokens vLLM refuses (negative, above the budget) is the client's own error too (breaker, 2026-12)
        ({"max_tokens": 50, "min_tokens": -1}, OutputBudget(True, False, None)),
        ({"max_tokens": 50, "min_tokens": 100}, OutputBudget(True, False, None)),
        ({"max_tokens": 50, "extra_body": {"min_tokens": 51}}, OutputBudget(True, False, None)),
        ({"min_tokens": -1}, OutputBudget(False, False, None)),
        ({"max_tokens": 50, "min_tokens": 50}, OutputBudget(True, True, 50)),
        ({"max_tokens": 50, "min_tokens": 0}, OutputBudget(True, True, 50)),
        ({"min_tokens": 10_000}, OutputBudget(False, True, None)),
    ],
)
def test_read_output_budget(payload, expected):
    assert read_output_budget(payload) == expected


def test_cap_lowers_every_field_never_raises():
    payload = {"max_tokens": 100, "max_completion_tokens": 5000}
    cap_output(payload, 3000)
    assert payload == {"max_tokens": 100, "max_completion_tokens": 3000}


def test_set_output_on_a_hop():
    payload = {"max_completion_tokens": 5000}
    set_output(payload, 1200)
    assert payload == {"max_completion_tokens": 1200}
    payload = {}
    set_output(payload, 1200)
    assert payload == {"max_tokens": 1200}
    set_output(payload, None)
    assert payload == {}


@pytest.mark.parametrize(
    "payload, value, expected",
    [
        # a text completion's null max_completion_tokens (differential 20261206:3486): LiteLLM alone sends the
        # null; a value there is a parameter text completions do not take, and the escalated hop failed
        ({"max_tokens": 512, "max_completion_tokens": None}, 512, {"max_tokens": 512, "max_completion_tokens": None}),
        ({"max_tokens": None, "max_completion_tokens": 900}, 300, {"max_tokens": None, "max_completion_tokens": 300}),
        ({"max_tokens": None}, 300, {"max_tokens": 300}),
        ({"max_output_tokens": None, "max_tokens": None}, 300, {"max_output_tokens": 300, "max_tokens": None}),
        ({"max_tokens": 512, "max_completion_tokens": None}, None, {"max_completion_tokens": None}),
    ],
)
def test_set_output_leaves_null_fields_as_the_client_sent_them(payload, value, expected):
    set_output(payload, value, "max_output_tokens" if "max_output_tokens" in payload else "max_tokens")
    assert payload == expected


def test_strip_client_keys_removes_only_plugin_keys():
    data = {
        "metadata": {"kvwarm_warm": True, "kvwarm_estimate": {"safe": 1}, "session_id": "s", "tags": ["a"]},
        "litellm_metadata": {"kvwarm_affinity": "x", "other": 1},
    }
    assert strip_client_keys(data) == 3
    assert data == {"metadata": {"session_id": "s", "tags": ["a"]}, "litellm_metadata": {"other": 1}}
    assert strip_client_keys({"metadata": "junk"}) == 0


def test_strip_client_keys_finds_the_prefix_among_many_keys_and_beside_non_string_keys():
    litellm_keys = {f"user_api_key_{i}": i for i in range(60)}
    data = {"metadata": {**litellm_keys, "kvwarm_plan": {}, "x_kvwarm_plan": 1}, "litellm_metadata": {**litellm_keys}}
    assert strip_client_keys(data) == 1
    assert data["metadata"] == {**litellm_keys, "x_kvwarm_plan": 1} and data["litellm_metadata"] == litellm_keys
    odd = {"metadata": {1: "a", ("t",): "b", "kvwarm_tenant": "forged", "kvwarm": 2}}
    assert strip_client_keys(odd) == 1 and odd["metadata"] == {1: "a", ("t",): "b", "kvwarm": 2}
    assert strip_client_keys({"metadata": {}}) == 0


def test_min_output_reads_vllm_s_min_tokens_where_a_client_sends_it():
    from litellm_kvwarm.output_budget import min_output
    assert min_output({"min_tokens": 300}) == 300
    assert min_output({"extra_body": {"min_tokens": 500}}) == 500
    assert min_output({"min_tokens": 300, "extra_body": {"min_tokens": 500}}) == 500
    assert min_output({}) == 0 and min_output({"extra_body": None}) == 0
    assert min_output({"min_tokens": 0}) == 0 and min_output({"min_tokens": "9"}) == 0 and min_output({"min_tokens": True}) == 0


def test_min_output_reads_an_extended_thinking_budget():
    """A cut under the request's thinking budget can leave reasoning with no answer (and Anthropic refuses
    ``max_tokens`` not above ``thinking.budget_tokens``): the least output is that budget + 1."""
    from litellm_kvwarm.output_budget import min_output
    assert min_output({"thinking": {"type": "enabled", "budget_tokens": 8000}}) == 8001
    assert min_output({"extra_body": {"thinking": {"type": "enabled", "budget_tokens": 2048}}}) == 2049
    assert min_output({"min_tokens": 9000, "thinking": {"type": "enabled", "budget_tokens": 8000}}) == 9000
    assert min_output({"min_tokens": 100, "thinking": {"type": "enabled", "budget_tokens": 8000}}) == 8001
    assert min_output({"thinking": {"type": "disabled", "budget_tokens": 8000}}) == 0
    assert min_output({"thinking": {"type": "enabled"}}) == 0
    assert min_output({"thinking": {"type": "enabled", "budget_tokens": "8000"}}) == 0
    assert min_output({"thinking": "on"}) == 0 and min_output({"thinking": None}) == 0


def test_least_output_keeps_the_body_s_thinking_budget_after_litellm_s_translation():
    """An Anthropic Messages body bridged to chat reaches the clamp with ``reasoning_effort`` in place of
    ``thinking``: the least output the pre-call hook read from the body still holds."""
    from litellm_kvwarm.meta import ESTIMATE_KEY
    from litellm_kvwarm.output_budget import least_output
    translated = {"max_tokens": 4000, "reasoning_effort": "low"}
    assert least_output(translated, {ESTIMATE_KEY: {"safe": 1, "routing": 1, "least_output": 3000}}) == 3000
    assert least_output(translated, {ESTIMATE_KEY: {"safe": 1, "routing": 1}}) == 0
    assert least_output({"min_tokens": 3500}, {ESTIMATE_KEY: {"least_output": 3000}}) == 3500
    assert least_output(translated, {ESTIMATE_KEY: {"least_output": "3000"}}) == 0
    assert least_output(translated, None) == 0 and least_output(translated, {ESTIMATE_KEY: 5}) == 0

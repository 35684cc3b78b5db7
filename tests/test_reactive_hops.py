import pytest

from litellm_kvwarm.errors import parse_context_error
from litellm_kvwarm.reactive import (
    SKIP_MESSAGE_PREFIX,
    BackstopPlan,
    HopAction,
    backend_error_text,
    decide_hop,
    fallback_chain,
    narrowed_by_client,
)

V025 = (
    "This model's maximum context length is 16384 tokens. However, you requested 4096 output tokens and your "
    "prompt contains at least 12289 input tokens, for a total of at least 16385 tokens. Please reduce the length "
    "of the input prompt or the number of requested output tokens. (parameter=input_tokens, value=12289)"
)
V032 = (
    "This model's maximum context length is 4096 tokens. However, your prompt contains at least 4097 input tokens, "
    "which exceeds this limit even without any output tokens. Please reduce the length of the input prompt. "
    "(parameter=input_tokens, value=4097)"
)
PLAN = BackstopPlan(source="fast", target="slow", requested=4096, own_generic_fallbacks=True)


def hop(error_text, group="fast", prompt=None, plan=PLAN, known=None):
    return decide_hop(
        plan=plan, hop_group=group, error=parse_context_error(error_text) if error_text else None,
        prompt_count=prompt, known_window=known, output_floor_tokens=256,
    )


def test_retry_uses_our_count_when_printed_prompt_is_only_a_lower_bound():
    # vLLM printed "at least 12289" (it truncates at window - max_tokens + 1); our exact count is 14000
    d = hop(V025, prompt=14_000)
    assert (d.action, d.max_tokens, d.window) == (HopAction.RETRY_CLAMPED, 16_384 - 14_000, 16_384)


def test_retry_on_printed_lower_bound_when_it_is_the_larger():
    d = hop(V025, prompt=12_000)
    assert (d.action, d.max_tokens) == (HopAction.RETRY_CLAMPED, 16_384 - 12_289)


def test_skip_retry_when_no_room_for_the_floor():
    assert hop(V025, prompt=16_200).action is HopAction.SKIP


def test_prompt_over_window_skips_retry_then_escalates_with_original_budget():
    assert hop(V032, prompt=3_000).action is HopAction.SKIP  # the server says the prompt alone is too long
    d = hop(V032, group="slow")
    assert (d.action, d.max_tokens) == (HopAction.ESCALATE, 4096)


def test_non_context_error_aborts_own_fallbacks_and_passes_operator_ones():
    assert hop("Rate limit reached for requests", prompt=10).action is HopAction.ABORT
    operator = BackstopPlan("fast", "slow", 4096, own_generic_fallbacks=False)
    assert hop("Internal Server Error", plan=operator).action is HopAction.PASS


def test_other_groups_are_not_ours():
    assert hop(V025, group="elsewhere", prompt=1).action is HopAction.PASS


def test_no_output_budget_means_no_retry():
    plan = BackstopPlan("fast", "slow", None, True)
    assert hop(V025, plan=plan, prompt=12_289).action is HopAction.SKIP


def test_numbers_that_do_not_explain_the_rejection_skip():
    plan = BackstopPlan("fast", "slow", 100, True)
    assert hop(V025, plan=plan, prompt=1_000).action is HopAction.SKIP


def test_fallback_chain_and_plan_roundtrip():
    assert fallback_chain("fast", "slow", 4096) == [{"model": "fast", "max_tokens": 4096}, "slow"]
    assert fallback_chain("fast", None, None) == []
    assert BackstopPlan.from_dict(PLAN.to_dict()) == PLAN
    assert BackstopPlan.from_dict({"nope": 1}) is None and BackstopPlan.from_dict("x") is None


@pytest.mark.parametrize(
    "client, narrowed",
    [(None, False), ([], True), ([{"fast": ["slow"]}], False), ([{"fast": ["other"]}], True), ([{"other": ["slow"]}], True), ("junk", True)],
)
def test_client_may_narrow_never_widen(client, narrowed):
    assert narrowed_by_client(client, "fast", "slow") is narrowed


def test_backend_error_text_skips_the_plugins_own_skip_errors():
    prev = [{"exception_string": "backend said " + V025}, {"exception_string": f"ContextWindowExceededError: {SKIP_MESSAGE_PREFIX} skip"}]
    assert backend_error_text(prev) == "backend said " + V025
    assert backend_error_text(None) is None and backend_error_text([]) is None

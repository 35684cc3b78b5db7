import pytest

from litellm_kvwarm.context_errors import parse_context_error
from litellm_kvwarm.reactive import (
    SKIP_MESSAGE_PREFIX,
    BackstopPlan,
    HopAction,
    backend_error_text,
    decide_hop,
    fallback_chain,
    allowed_by_client,
    retried_attempt,
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
PLAN = BackstopPlan(source="fast", chain=("slow",), requested=4096, own_generic_fallbacks=True)


def hop(error_text, group="fast", prompt=None, plan=PLAN, known=None, hop_window=None, lower=None, estimated=False):
    return decide_hop(
        plan=plan, hop_group=group, error=parse_context_error(error_text) if error_text else None,
        prompt_count=prompt, known_window=known, output_floor_tokens=256, hop_window=hop_window, prompt_lower_bound=lower,
        prompt_estimated=estimated,
    )


def test_retry_uses_our_count_when_printed_prompt_is_only_a_lower_bound():
    # vLLM printed "at least 12289" (it truncates at window - max_tokens + 1); our exact count is 14000
    d = hop(V025, prompt=14_000)
    assert (d.action, d.max_tokens, d.window) == (HopAction.RETRY_CLAMPED, 16_384 - 14_000, 16_384)


def test_retry_on_printed_lower_bound_when_it_is_the_larger():
    d = hop(V025, prompt=12_000)
    assert (d.action, d.max_tokens) == (HopAction.RETRY_CLAMPED, 16_384 - 12_289)


def test_no_retry_with_less_on_an_estimate_the_next_step_serves_the_whole_budget():
    """Without a count of the prompt (a text completion, ``/tokenize`` down or slow) the plugin's number is its safe
    over-estimate: a retry cut on it answered ~300 tokens where ~3,800 fit and LiteLLM alone's fallback served all 4,000
    (a breaker's). Only the server's own numbers cut: its exact prompt count, or the room or output cap it printed."""
    d = hop(V025, prompt=16_061, estimated=True)
    assert (d.action, d.max_tokens) == (HopAction.SKIP, None) and "estimate" in d.reason
    assert hop(V025, prompt=12_000, estimated=True).action is HopAction.SKIP  # the printed lower bound is no count either
    assert hop("maximum context length exceeded", prompt=16_061, known=16_384, estimated=True).action is HopAction.SKIP
    exact = ("This model's maximum context length is 16384 tokens. However, you requested 17000 tokens (13000 in the messages, "
             "4000 in the completion). Please reduce the length of the messages or completion.")
    d = hop(exact, prompt=16_061, estimated=True)  # the server counted the prompt: that count, not the estimate
    assert (d.action, d.max_tokens) == (HopAction.RETRY_CLAMPED, 16_384 - 13_000)
    assert hop(exact, group="slow", prompt=16_061, estimated=True).action is HopAction.ESCALATE
    cap = "max_tokens is too large: 9000. This model supports at most 4096 completion tokens, whereas you provided 9000."
    plan = BackstopPlan(source="fast", chain=("slow",), requested=9_000, own_generic_fallbacks=True)
    d = hop(cap, plan=plan, prompt=14_000, known=16_384, estimated=True)  # the cap is the server's; the window's room is not
    assert (d.action, d.max_tokens) == (HopAction.RETRY_CLAMPED, 4_096)


def test_skip_retry_when_no_room_for_the_floor():
    assert hop(V025, prompt=16_200).action is HopAction.SKIP


def test_prompt_over_window_skips_retry_then_escalates_with_original_budget():
    assert hop(V032, prompt=3_000).action is HopAction.SKIP  # the server says the prompt alone is too long
    d = hop(V032, group="slow")
    assert (d.action, d.max_tokens) == (HopAction.ESCALATE, 4096)


def test_non_context_error_aborts_own_fallbacks_and_passes_operator_ones():
    assert hop("Rate limit reached for requests", group="slow", prompt=10).action is HopAction.ABORT
    with_slot = BackstopPlan("fast", ("slow",), 4096, own_generic_fallbacks=True, generic_retry=True)
    assert hop("Rate limit reached for requests", plan=with_slot, prompt=10).action is HopAction.ABORT
    operator = BackstopPlan("fast", ("slow",), 4096, own_generic_fallbacks=False)
    assert hop("Internal Server Error", plan=operator).action is HopAction.PASS


def test_a_same_group_hop_the_plugin_did_not_arm_is_litellm_s_own_failover():
    # own generic fallbacks without a retry slot on fast: a hop back to fast after a 503 is LiteLLM's order-level or
    # weighted failover to another deployment of the group (never taken after a context error), as LiteLLM alone takes it
    assert hop("Service Unavailable", prompt=10).action is HopAction.PASS
    assert hop("Service Unavailable", group="slow", prompt=10).action is HopAction.ABORT  # the plugin's own step stays declined
    with_slot = BackstopPlan("fast", ("slow",), 4096, own_generic_fallbacks=True, generic_retry=True)
    failed_over = decide_hop(plan=with_slot, hop_group="fast", error=None, prompt_count=None, known_window=None,
                             output_floor_tokens=256, failover=True)
    assert failed_over.action is HopAction.PASS  # another replica than the failed one: LiteLLM's failover, even with a slot of the plugin's
    assert BackstopPlan.from_dict({**PLAN.to_dict(), "generic_retry": True}).generic_retry is True
    assert BackstopPlan.from_dict(PLAN.to_dict()).generic_retry is False


def test_other_groups_are_not_ours():
    assert hop(V025, group="elsewhere", prompt=1).action is HopAction.PASS


def test_no_output_budget_means_no_retry():
    plan = BackstopPlan("fast", ("slow",), None, True)
    assert hop(V025, plan=plan, prompt=12_289).action is HopAction.SKIP


def test_numbers_that_do_not_explain_the_rejection_skip():
    plan = BackstopPlan("fast", ("slow",), 100, True)
    assert hop(V025, plan=plan, prompt=1_000).action is HopAction.SKIP


def test_fallback_chain_and_plan_roundtrip():
    assert fallback_chain("fast", ("slow",), 4096) == [{"model": "fast", "max_tokens": 4096}, "slow"]
    assert fallback_chain("fast", ("mid", "large"), None) == ["mid", "large"]
    # no escalation step: nothing is armed (not even the retry slot)
    assert fallback_chain("fast", (), 4096) == []
    assert BackstopPlan.from_dict(PLAN.to_dict()) == PLAN
    assert BackstopPlan.from_dict({"nope": 1}) is None and BackstopPlan.from_dict("x") is None


@pytest.mark.parametrize(
    "client, allowed",
    [
        (None, ("mid", "large")),
        ([], ()),
        ([{"fast": ["mid", "large"]}], ("mid", "large")),
        ([{"fast": ["large"]}], ("large",)),
        ([{"fast": ["large", "mid", "extra"]}], ("mid", "large")),  # never widened, operator order kept
        ([{"fast": [{"model": "mid"}]}], ("mid",)),
        ([{"other": ["mid"]}], ()),
        ("junk", ()),
    ],
)
def test_client_may_narrow_never_widen(client, allowed):
    assert allowed_by_client(client, "fast", ("mid", "large")) == allowed


V025_ZERO = "max_tokens must be at least 1, got 0."
CHAIN = BackstopPlan(source="fast", chain=("mid", "large"), requested=None, own_generic_fallbacks=True)


def test_output_below_one_is_the_clients_error_when_it_sent_a_budget():
    # the client sent max_tokens (requested is set): "got 0" is its own error, never an overflow
    client_budget = BackstopPlan("fast", ("slow",), 4096, own_generic_fallbacks=True, generic_retry=True)
    assert hop(V025_ZERO, plan=client_budget, prompt=10).action is HopAction.ABORT
    assert hop(V025_ZERO, group="slow", plan=client_budget).action is HopAction.ABORT
    operator = BackstopPlan("fast", ("slow",), 4096, own_generic_fallbacks=False)
    assert hop(V025_ZERO, group="slow", plan=operator).action is HopAction.PASS


def test_output_below_one_is_an_overflow_when_the_server_computed_it():
    # no budget sent: vLLM computed max_tokens = window - prompt = 0, the prompt fills the window
    assert hop(V025_ZERO, plan=CHAIN, prompt=4096).action is HopAction.SKIP
    d = hop(V025_ZERO, group="mid", plan=CHAIN)
    assert (d.action, d.max_tokens) == (HopAction.ESCALATE, None)


def test_chain_skips_a_step_that_cannot_hold_the_prompt():
    # fast (4,096) -> mid (8,192) -> large: a 10,000-token prompt skips mid before any attempt
    assert hop(V032, group="mid", plan=CHAIN, hop_window=8_192, lower=10_000).action is HopAction.SKIP
    assert hop(V032, group="large", plan=CHAIN, hop_window=131_072, lower=10_000).action is HopAction.ESCALATE
    # a 6,000-token prompt goes to mid; an unknown window is tried (the next step still follows)
    assert hop(V032, group="mid", plan=CHAIN, hop_window=8_192, lower=6_000).action is HopAction.ESCALATE
    assert hop(V032, group="mid", plan=CHAIN, hop_window=None, lower=10_000).action is HopAction.ESCALATE
    # the printed prompt size counts too (vLLM's "at least 4097")
    assert hop(V032, group="mid", plan=CHAIN, hop_window=4_200, lower=None).action is HopAction.SKIP


def test_plan_roundtrip_keeps_the_chain():
    assert BackstopPlan.from_dict(CHAIN.to_dict()) == CHAIN
    assert CHAIN.target == "mid"


def test_backend_error_text_skips_the_plugins_own_skip_errors():
    prev = [{"exception_string": "backend said " + V025}, {"exception_string": f"ContextWindowExceededError: {SKIP_MESSAGE_PREFIX} skip"}]
    assert backend_error_text(prev) == "backend said " + V025
    assert backend_error_text(None) is None and backend_error_text([]) is None


@pytest.mark.parametrize("exception_type", ["ServiceUnavailableError", "RateLimitError", "Timeout", "APIConnectionError",
                                            "BadGatewayError", "AuthenticationError", "NotFoundError"])
def test_a_status_that_is_never_a_length_refusal_is_no_hop_s_reason(exception_type):
    """Found by a breaker: a 503 "Server overloaded: too many tokens in flight" was read as a context error and
    escalated. Whatever the text says, an overload, rate limit, timeout or auth failure is not the request's length."""
    text = "Server overloaded: " + V025
    assert backend_error_text([{"exception_string": text, "exception_type": exception_type}]) is None
    for kept in ("BadRequestError", "ContextWindowExceededError", "InternalServerError", None):
        assert backend_error_text([{"exception_string": text, "exception_type": kept}]) == text


def test_a_steps_own_output_budget_wins_on_its_hop():
    # operator: [{"fast": [{"model": "slow", "max_tokens": 512}]}]; the client asked for 4,000
    plan = BackstopPlan("fast", ("slow",), 4_000, True, step_output={"slow": 512})
    assert fallback_chain("fast", ("slow",), 4_000, {"slow": {"max_tokens": 512}}) == [
        {"model": "fast", "max_tokens": 4_000}, {"model": "slow", "max_tokens": 512}]
    d = hop(V032, group="slow", plan=plan)
    assert (d.action, d.max_tokens) == (HopAction.ESCALATE, 512)
    assert BackstopPlan.from_dict(plan.to_dict()) == plan


@pytest.mark.parametrize("text", [
    "max_tokens is too large: 9000. This model supports at most 4096 completion tokens, whereas you provided 9000.",
    "max_tokens: 9000 > 4096, which is the maximum allowed number of output tokens for claude-3-5-sonnet-20240620",
])
def test_an_output_cap_refusal_retries_the_same_model_at_its_cap(text):
    plan = BackstopPlan(source="fast", chain=("slow",), requested=9_000, own_generic_fallbacks=True)
    d = hop(text, plan=plan, prompt=1_000)
    assert (d.action, d.max_tokens, d.window) == (HopAction.RETRY_CLAMPED, 4_096, None)  # not escalated with 9000
    d = hop(text, plan=plan, prompt=14_000, known=16_384)  # the window leaves less than the cap
    assert (d.action, d.max_tokens) == (HopAction.RETRY_CLAMPED, 2_384)
    assert hop(text, plan=plan, prompt=16_300, known=16_384).action is HopAction.SKIP  # under the floor: the chain goes on
    assert hop(text, plan=BackstopPlan("fast", ("slow",), None, own_generic_fallbacks=True), prompt=10).action is HopAction.SKIP


CAP_BESIDE_WINDOW = (
    "This model's maximum context length is 128000 tokens. However, you requested 150000 tokens (20000 in the messages, "
    "130000 in the completion). Please reduce the length of the messages or completion. This model supports at most "
    "16384 completion tokens."
)


def test_a_window_refusal_that_prints_an_output_cap_retries_within_the_cap():
    """The room the window leaves (108,000) is over the model's printed output cap: a retry with it is refused again."""
    plan = BackstopPlan(source="fast", chain=("slow",), requested=130_000, own_generic_fallbacks=True)
    d = hop(CAP_BESIDE_WINDOW, plan=plan, prompt=20_000)
    assert (d.action, d.max_tokens, d.window) == (HopAction.RETRY_CLAMPED, 16_384, 128_000)
    assert "output cap 16384" in d.reason
    fuller = CAP_BESIDE_WINDOW.replace("20000 in the messages, 130000", "120000 in the messages, 30000")
    d = hop(fuller, plan=plan, prompt=100_000)  # the window leaves less than the cap: the window decides
    assert (d.action, d.max_tokens) == (HopAction.RETRY_CLAMPED, 8_000)
    assert "output cap" not in d.reason


# ------------------------------------------------------------------ a step that holds the whole budget

HELD = BackstopPlan(source="fast", chain=("slow",), requested=4096, own_generic_fallbacks=True, step_windows={"slow": 131_072})


def test_a_step_that_holds_the_whole_budget_is_preferred_to_a_retry_with_less():
    """vLLM 0.18-0.31 refuse prompt + max_tokens over the window; LiteLLM alone's context_window_fallbacks then
    serve the whole 4,096 on slow, so a retry of fast with 2,384 would answer with less (found by a breaker)."""
    d = hop(V025, prompt=14_000, plan=HELD)
    assert d.action is HopAction.SKIP and "'slow' holds prompt ≈14000tok + the 4096 output tokens" in d.reason
    assert (hop(V025, group="slow", plan=HELD).action, hop(V025, group="slow", plan=HELD).max_tokens) == (HopAction.ESCALATE, 4096)


def test_a_step_too_small_or_unknown_keeps_the_retry_with_the_room_left():
    small = BackstopPlan("fast", ("slow",), 4096, True, step_windows={"slow": 16_384 + 1_000})  # 14,000 + 4,096 > 17,384
    for plan in (small, PLAN):  # PLAN: no step window known
        d = hop(V025, prompt=14_000, plan=plan)
        assert (d.action, d.max_tokens) == (HopAction.RETRY_CLAMPED, 16_384 - 14_000), plan
    # the step's own output entry is what it would be asked for: 14,000 + 512 fits 16,000
    own = BackstopPlan("fast", ("slow",), 4096, True, step_output={"slow": 512}, step_windows={"slow": 16_000})
    assert hop(V025, prompt=14_000, plan=own).action is HopAction.SKIP


def test_the_servers_exact_prompt_count_decides_a_step_fit_before_the_plugins():
    exact = ("This model's maximum context length is 16384 tokens. However, you requested 17000 tokens (15000 in the "
             "messages, 2000 in the completion). Please reduce the length of the messages or completion.")
    fits = BackstopPlan("fast", ("slow",), 2000, True, step_windows={"slow": 17_000})
    assert hop(exact, prompt=16_500, plan=fits).action is HopAction.SKIP  # 15,000 (the server's) + 2,000 fits
    assert hop(exact, prompt=16_500, plan=BackstopPlan("fast", ("slow",), 2000, True, step_windows={"slow": 16_900})).action \
        is HopAction.RETRY_CLAMPED


def test_no_client_budget_or_a_prompt_over_the_window_is_unchanged():
    none = BackstopPlan("fast", ("slow",), None, True, step_windows={"slow": 131_072})
    assert HELD.step_holding(14_000) == "slow" and none.step_holding(14_000) is None
    assert hop(V032, prompt=3_000, plan=HELD).action is HopAction.SKIP  # the prompt alone: skip as before


def test_an_escalated_request_walks_its_chain_on_any_error():
    """Escalated ahead of time to mid (fast → [mid, slow]): LiteLLM alone would be walking fast's context-window
    fallbacks, which go on to slow whatever mid answers; the retry slot on mid is skipped (a retry with less cannot
    help a 5xx or 429), slow is tried. A request on its own group still aborts its own fallbacks on such an error."""
    walking = BackstopPlan("mid", ("slow",), 1000, own_generic_fallbacks=True, walks_chain=True)
    assert hop("Internal Server Error", group="slow", plan=walking).action is HopAction.PASS
    assert hop("Rate limit reached for requests", group="mid", plan=walking).action is HopAction.SKIP
    assert hop("Internal Server Error", group="elsewhere", plan=walking).action is HopAction.PASS
    staying = BackstopPlan("mid", ("slow",), 1000, own_generic_fallbacks=True)
    assert hop("Internal Server Error", group="slow", plan=staying).action is HopAction.ABORT
    assert BackstopPlan.from_dict(walking.to_dict()) == walking and BackstopPlan.from_dict(staying.to_dict()) == staying


@pytest.mark.parametrize("metadata, retried", [
    ({"attempted_retries": 1}, True), ({"attempted_retries": 2}, True), ({"attempted_retries": 0}, False), ({}, False),
    ({"attempted_retries": True}, False), ({"attempted_retries": "1"}, False), ({"attempted_retries": None}, False), (None, False),
])
def test_litellm_s_own_retry_of_a_hop_is_told_by_its_attempted_retries(metadata, retried):
    """``Router.async_function_with_retries`` writes 0 at each hop's first attempt and the retry's number before each retry."""
    assert retried_attempt(metadata) is retried

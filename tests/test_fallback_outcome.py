"""fallback_outcome: LiteLLM alone's text for a request whose plugin-armed generic fallbacks were all declined.

The texts are LiteLLM's own (``format_fallback_outcome_message``, 1.108.7 and 1.109.3), as the e2e test
``tests/e2e/test_harms.py::test_an_error_near_the_window_keeps_litellm_alones_status_and_message`` saw them."""

from __future__ import annotations

import pytest

from litellm_kvwarm.backstop_plan import BackstopPlan
from litellm_kvwarm.fallback_outcome import NONE_ATTEMPTED, as_source_answered, as_without_own_fallbacks, restore

AUTH = 'litellm.AuthenticationError: AuthenticationError: Hosted_vllmException - {"error":"Unauthorized"}'
LEAD = "\n\nLiteLLM: model group 'fast' failed with the error above."
COOLDOWN = (" Fallback to {'model': 'fast', 'max_tokens': 4000}, slow also failed: No deployments available for selected "
            "model, Try again in 5 seconds. All deployments for selected model are in cooldown. Passed model=fast.")
DECLINED = (" Fallback to {'model': 'fast', 'max_tokens': 4000}, slow also failed: litellm.BadRequestError: litellm-kvwarm: "
            "fallback not used: the original error is not about the request's length")
CONTEXT = ("litellm.BadRequestError: Hosted_vllmException - This model's maximum context length is 16384 tokens. However, "
           "you requested 4096 output tokens and your prompt contains at least 12289 input tokens")


@pytest.mark.parametrize("message, expected", [
    (AUTH + LEAD + COOLDOWN, AUTH + LEAD + NONE_ATTEMPTED),
    (AUTH + LEAD + DECLINED, AUTH + LEAD + NONE_ATTEMPTED),
    ("litellm.RateLimitError: slow down" + LEAD + " Fallback to slow also failed: x", "litellm.RateLimitError: slow down" + LEAD + NONE_ATTEMPTED),
], ids=["cooldown-429-text", "declined-hop-text", "rate-limit"])
def test_the_outcome_of_declined_fallbacks_reads_as_litellm_alone(message, expected):
    assert as_without_own_fallbacks(message, "fast") == expected
    assert "No deployments available" not in as_without_own_fallbacks(message, "fast")


@pytest.mark.parametrize("message, group", [
    (AUTH, "fast"),  # no outcome sentence (LiteLLM's expose_router_debug_in_errors off)
    (AUTH + LEAD + NONE_ATTEMPTED, "fast"),  # already LiteLLM alone's
    (AUTH + LEAD + COOLDOWN, "other"),  # another group's outcome
    (CONTEXT + LEAD + " Fallback to slow also failed: litellm.ServiceUnavailableError: 503", "fast"),  # a real escalation's
    ("", "fast"),
], ids=["no-outcome", "none-attempted", "other-group", "context-error-escalated", "empty"])
def test_other_texts_stay_as_they_are(message, group):
    assert as_without_own_fallbacks(message, group) is None


def test_a_second_outcome_sentence_of_the_request_group_is_found():
    quoted = AUTH + "\n\nLiteLLM: model group 'other' failed with the error above. Fallback to x also failed: y"
    assert as_without_own_fallbacks(quoted + LEAD + COOLDOWN, "fast") == quoted + LEAD + NONE_ATTEMPTED


class _Error(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class _Frozen(Exception):
    @property
    def message(self) -> str:
        return AUTH + LEAD + COOLDOWN


def _plan(own: bool, walks_chain: bool = False) -> BackstopPlan:
    return BackstopPlan(source="fast", chain=("slow",), requested=4000, own_generic_fallbacks=own, walks_chain=walks_chain)


def test_restore_rewrites_only_where_the_plugin_armed_the_generic_fallbacks():
    error = _Error(AUTH + LEAD + COOLDOWN)
    assert restore(error, _plan(own=False)) is False and error.message == AUTH + LEAD + COOLDOWN  # the operator's: theirs
    assert restore(error, None) is False
    # a proactive escalation's walk passes its steps on a non-length error (reactive.decide_hop): they were tried
    assert restore(error, _plan(own=True, walks_chain=True)) is False and error.message == AUTH + LEAD + COOLDOWN
    assert restore(error, _plan(own=True)) is True and error.message == AUTH + LEAD + NONE_ATTEMPTED
    assert restore(error, _plan(own=True)) is False  # once


def test_restore_leaves_exceptions_it_cannot_rewrite():
    assert restore(ValueError(AUTH + LEAD + COOLDOWN), _plan(own=True)) is False  # no ``message``
    frozen = _Frozen()
    assert restore(frozen, _plan(own=True)) is False and frozen.message == AUTH + LEAD + COOLDOWN


HOLOGRAM = ('litellm.BadRequestError: Hosted_vllmException - {"error":{"message":"Unsupported input item type: hologram",'
            '"type":"BadRequestError","param":null,"code":400}}')
SLOW_LEAD = "\n\nLiteLLM: model group 'slow' failed with the error above."


def test_a_target_and_source_that_refuse_alike_read_as_the_source_alone():
    """Escalated ahead of time fast → slow; slow and then fast refuse it, not on length: LiteLLM alone's text is fast's."""
    joined = HOLOGRAM + SLOW_LEAD + " Fallback to fast also failed: " + HOLOGRAM
    assert as_source_answered(joined, "slow", "fast") == HOLOGRAM + LEAD + NONE_ATTEMPTED
    retried = joined + " LiteLLM Retried: 2 times, LiteLLM Max Retries: 2"  # str() of an exception after retries
    assert as_source_answered(retried, "slow", "fast") == HOLOGRAM + LEAD + NONE_ATTEMPTED
    error = _Error(joined)
    assert restore(error, None, {"source": "fast", "window": 16384}, "slow") is True
    assert error.message == HOLOGRAM + LEAD + NONE_ATTEMPTED


@pytest.mark.parametrize("message", [
    HOLOGRAM + SLOW_LEAD + " Fallback to fast also failed: " + CONTEXT,  # fast refused on length: bridge.target_failed's
    CONTEXT + SLOW_LEAD + " Fallback to fast also failed: " + HOLOGRAM,  # slow refused on length
    "litellm.ServiceUnavailableError: 503" + SLOW_LEAD + " Fallback to fast also failed: " + HOLOGRAM,  # two statuses
    HOLOGRAM + SLOW_LEAD + " Fallback to fast, other also failed: " + HOLOGRAM,  # not the source alone
    HOLOGRAM + SLOW_LEAD + " Fallback to fast also failed: " + HOLOGRAM[:40] + "... [truncated 2100 characters]",
    HOLOGRAM + SLOW_LEAD + NONE_ATTEMPTED,
    HOLOGRAM,
], ids=["source-on-length", "target-on-length", "other-class", "two-targets", "truncated", "none-attempted", "no-outcome"])
def test_other_escalated_failures_stay_as_litellm_wrote_them(message):
    assert as_source_answered(message, "slow", "fast") is None
    error = _Error(message)
    assert restore(error, None, {"source": "fast"}, "slow") is False and error.message == message


def test_a_decline_that_surfaces_as_the_final_error_answers_with_the_last_real_error():
    """LiteLLM's failover across order levels raises its last hop's error as is: after both replicas of fast answered
    503, the plugin's decline of the next hop reached the client as a 400 where LiteLLM alone answered 503."""
    from litellm_kvwarm.fallback_outcome import declined_answer

    class Declined(Exception):
        message = "litellm.BadRequestError: litellm-kvwarm: fallback not used: the original error is not about the request's length"

    records = [{"exception_type": "ServiceUnavailableError", "exception_string": "f1 down"},
               {"exception_type": "ServiceUnavailableError", "exception_string": "f2 down"},
               {"exception_type": "BadRequestError", "exception_string": "litellm-kvwarm: fallback not used: ..."}]
    assert declined_answer(Declined(), records) == (503, "f2 down")
    assert declined_answer(Declined(), [{"exception_type": "InternalServerError", "exception_string": "boom"}]) == (500, "boom")
    assert declined_answer(Declined(), [{"exception_type": "BadRequestError", "exception_string": "client's own"}]) is None  # no status: LiteLLM's stands
    assert declined_answer(Exception("f2 down"), records) is None  # not the plugin's decline
    first = Exception("rate limited\n\nLiteLLM: model group 'fast' failed with the error above. Fallback to fast, slow also failed: "
                      "litellm.BadRequestError: litellm-kvwarm: fallback not used: the original error is not about the request's length")
    assert declined_answer(first, records) is None  # the request's own error, the decline only in LiteLLM's account: restore's
    assert declined_answer(Declined(), None) is None and declined_answer(Declined(), ["junk", 3]) is None

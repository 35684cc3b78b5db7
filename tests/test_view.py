"""The request views: LiteLLM's loose hook inputs validated once into frozen objects."""

from __future__ import annotations

import dataclasses

import pytest
from litellm.types.utils import CallTypes

from litellm_kvwarm.meta import AFFINITY_KEY, BUDGET_KEY, ESCALATED_KEY, ESTIMATE_KEY, ORIGIN_KEY, PLAN_KEY, SALT_KEY
from litellm_kvwarm.output_budget import OutputBudget
from litellm_kvwarm.view import ADAPTERS, adapter_for, affinity_of, attempt_view, call_kind, carried, failure_view, pre_call_view


class Key:
    def __init__(self, team_id=None, user_id=None, token=None):
        self.team_id, self.user_id, self.token = team_id, user_id, token


@pytest.mark.parametrize(
    "call_type, kind",
    [("acompletion", "chat"), ("completion", "chat"), (CallTypes.acompletion, "chat"), ("atext_completion", "completion"),
     (CallTypes.text_completion, "completion"), ("anthropic_messages", "messages"), (CallTypes.anthropic_messages, "messages"),
     ("aresponses", "responses"), (CallTypes.aresponses, "responses"), (CallTypes.responses, "responses"),
     ("aembedding", None), ("aget_responses", None), (None, None), (3, None)],
)
def test_call_kind(call_type, kind):
    assert call_kind(call_type) == kind
    assert (adapter_for(call_type) is None) is (kind is None)


def test_one_adapter_per_api():
    assert [(a.kind, a.exact_countable, a.output_field, a.metadata_field) for a in ADAPTERS] == [
        ("chat", True, "max_tokens", "metadata"), ("completion", False, "max_tokens", "metadata"),
        ("messages", True, "max_tokens", "litellm_metadata"), ("responses", True, "max_output_tokens", "litellm_metadata"),
    ]
    assert not set.intersection(*(set(a.call_types) for a in ADAPTERS))


def test_pre_call_view():
    data = {"model": "fast", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 300, "max_completion_tokens": None,
            "stream": True, "context_window_fallbacks": [], "fallbacks": None, "metadata": {"session_id": "s1"}}
    view = pre_call_view(data, "acompletion", Key(team_id="t1"))
    assert (view.kind, view.group, view.stream, view.tenant) == ("chat", "fast", True, "team:t1")
    assert view.output == OutputBudget(sent=True, valid=True, effective=300)
    assert dict(view.output_values) == {"max_tokens": 300, "max_completion_tokens": None}
    assert view.session is not None and (view.session.tenant, view.session.session_id, view.session.source) == ("team:t1", "s1", "litellm")
    assert view.client_fallbacks == [] and view.generic_fallbacks_sent is False
    data["messages"] = []  # the payload is a snapshot: later writes to the body do not change it
    assert view.payload["messages"] == [{"role": "user", "content": "hi"}]
    with pytest.raises(TypeError):
        view.payload["model"] = "x"  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        view.group = "slow"  # type: ignore[misc]


def test_pre_call_view_of_agent_apis():
    """Anthropic Messages and Responses bodies: their output field, their conversation for the
    session fingerprint (``system``/``instructions`` included), metadata in ``litellm_metadata``."""
    messages = {"model": "fast", "system": "You are Claude Code.", "max_tokens": 32_000, "stream": True,
                "messages": [{"role": "user", "content": [{"type": "text", "text": "fix the bug"}]}], "metadata": {"user_id": "u"}}
    view = pre_call_view(messages, "anthropic_messages", Key(team_id="t1"))
    assert (view.kind, view.stream, view.output.effective) == ("messages", True, 32_000)
    assert view.session is not None and view.session.source == "fingerprint"
    other_system = pre_call_view({**messages, "system": "another agent"}, "anthropic_messages", Key(team_id="t1"))
    assert other_system.session is not None and other_system.session.session_id != view.session.session_id
    responses = {"model": "fast", "instructions": "be brief", "input": "hello", "max_output_tokens": 700}
    rview = pre_call_view(responses, "aresponses", Key(team_id="t1"))
    assert (rview.kind, rview.output.effective) == ("responses", 700)
    assert rview.session is not None and rview.session.source == "fingerprint"
    assert pre_call_view({**responses, "max_output_tokens": 0}, "aresponses", Key(team_id="t1")).output.valid is False


def test_attempt_metadata_field():
    """The plugin's state is read from the metadata field that carries it: an Anthropic Messages
    body bridged to chat arrives as ``acompletion`` with the state in ``litellm_metadata``."""
    state = {"kvwarm_escalated": "proactive", "model_group": "slow"}
    bridged = attempt_view({"model": "hosted_vllm/x", "messages": [], "litellm_metadata": state}, "acompletion")
    assert (bridged.metadata_field, bridged.carried.escalated, bridged.carried.model_group) == ("litellm_metadata", "proactive", "slow")
    chat = attempt_view({"model": "hosted_vllm/x", "messages": [], "metadata": dict(state), "litellm_metadata": {}}, "acompletion")
    assert chat.metadata_field == "metadata" and chat.carried.escalated == "proactive"
    fresh = attempt_view({"model": "hosted_vllm/x", "input": "hi", "litellm_metadata": {}}, "aresponses")
    assert fresh.metadata_field == "litellm_metadata" and fresh.metadata_writable


def test_pre_call_view_of_what_the_plugin_does_not_handle():
    view = pre_call_view({"model": 7, "max_tokens": "many"}, "aembedding", Key())
    assert (view.kind, view.group, view.tenant, view.session) == (None, None, None, None)
    assert view.output == OutputBudget(sent=True, valid=False, effective=None)
    # a handled call with a tenant but neither a session id nor a user message has no session
    assert pre_call_view({"model": "fast", "messages": []}, "acompletion", Key(token="k")).session is None


def test_carried_state():
    meta = {
        ESTIMATE_KEY: {"safe": 120, "routing": 100, "tenant": "th"},
        PLAN_KEY: {"source": "fast", "chain": ["slow"], "requested": 300, "own_generic_fallbacks": True},
        BUDGET_KEY: 0.05, ESCALATED_KEY: "proactive", ORIGIN_KEY: {"source": "fast", "window": 4096, "tokens": 5000},
        SALT_KEY: "salt", AFFINITY_KEY: "aff", "model_group": "fast",
        "previous_models": [{"exception_string": "backend said no"}, {"exception_string": "litellm-kvwarm: skipped"}],
    }
    state = carried(meta)
    assert (state.estimate.safe, state.estimate.routing, state.estimate_tenant) == (120, 100, "th")
    assert (state.plan.source, state.plan.chain, state.plan.requested, state.plan.own_generic_fallbacks) == ("fast", ("slow",), 300, True)
    assert (state.budget_spent, state.escalated, dict(state.origin)) == (0.05, "proactive", {"source": "fast", "window": 4096, "tokens": 5000})
    assert (state.salt, state.affinity, state.model_group, state.previous_error) == ("salt", "aff", "fast", "backend said no")


@pytest.mark.parametrize("meta", [None, "x", {}, {ESTIMATE_KEY: {"safe": "1", "routing": 2}, PLAN_KEY: [], SALT_KEY: 5,
                                                  AFFINITY_KEY: None, ORIGIN_KEY: "x", "model_group": 3}])
def test_carried_state_malformed_is_absent(meta):
    state = carried(meta)
    assert (state.estimate, state.plan, state.salt, state.affinity, state.origin, state.model_group) == (None,) * 6


def test_attempt_view():
    kwargs = {"model": "hosted_vllm/Qwen/Qwen3-8B", "api_base": "http://b/v1", "api_key": "k", "model_info": {"max_input_tokens": 8},
              "fallback_depth": 2, "max_tokens": 50, "messages": [], "metadata": {"model_group": "fast"}}
    view = attempt_view(kwargs, "acompletion")
    assert (view.kind, view.model, view.group_label, view.provider, view.fallback_depth) == ("chat", "hosted_vllm/Qwen/Qwen3-8B", "fast", "hosted_vllm", 2)
    assert dict(view.deployment_params) == {"api_base": "http://b/v1", "model": "hosted_vllm/Qwen/Qwen3-8B", "api_key": "k"}
    assert view.output.effective == 50 and view.metadata_writable is True
    bare = attempt_view({"model": "gpt-4o", "fallback_depth": "1", "metadata": ()}, "aembedding")
    assert (bare.kind, bare.group_label, bare.provider, bare.fallback_depth, bare.metadata_writable) == (None, "gpt-4o", None, None, False)


def test_affinity_and_failure_views():
    assert affinity_of({"litellm_metadata": {AFFINITY_KEY: "a2"}}) == "a2"
    assert affinity_of({"metadata": {AFFINITY_KEY: "a1"}, "litellm_metadata": {AFFINITY_KEY: "a2"}}) == "a1"
    assert affinity_of(None) is None and affinity_of({"metadata": {AFFINITY_KEY: 1}}) is None
    failed = failure_view({"model": "slow", "metadata": {ESCALATED_KEY: "proactive"}})
    assert (failed.model, failed.carried.escalated, failed.carried.origin) == ("slow", "proactive", None)


def test_a_key_object_that_cannot_be_read_has_no_tenant():
    """Fail open for speed, closed for security: an unreadable key object does not raise out of the
    hook; it has no tenant (no per-session state; tenant isolation then refuses it with a 403)."""

    class Unreadable:
        @property
        def team_id(self):
            raise RuntimeError("broken key object")

    view = pre_call_view({"model": "fast", "messages": [{"role": "user", "content": "hi"}],
                          "litellm_session_id": "s-1"}, "acompletion", Unreadable())
    assert view.tenant is None and view.session is None and view.group == "fast"

"""The request path's memos stay correct: a group's parsed deployments are rebuilt when anything
they are read from changes (operator window, endpoint, key, provider, id), and the plugin's state
is found in a metadata dict by its own keys alone; the first attempt that fits the
window its group was routed on reads no window."""

from __future__ import annotations

from litellm_kvwarm.facts_groups import GroupFacts, GroupMemo
from litellm_kvwarm.meta import BUDGET_KEY, PLAN_KEY, PREFIX, STATE_KEYS, TENANT_KEY, WARM_MARKER, holds_state
from litellm_kvwarm.view import plugin_metadata_field


def _entry(window: int = 16384, api_base: str = "http://a/v1", key: str = "k", model_id: str = "1") -> dict:
    return {"model_name": "fast", "litellm_params": {"model": "hosted_vllm/m", "api_base": api_base, "api_key": key},
            "model_info": {"max_input_tokens": window, "id": model_id}}


def test_a_group_is_parsed_once_per_content_and_again_when_any_field_it_reads_changes():
    memo, builds = GroupMemo(), []

    def build(tag):
        def make():
            builds.append(tag)
            return GroupFacts(infos=(), providers=(tag,))
        return make

    first = memo.get("fast", [_entry()], build("a"))
    assert memo.get("fast", [_entry()], build("b")) is first  # equal content in new dicts: no rebuild
    assert builds == ["a"]
    entry = _entry()
    assert memo.get("fast", [entry], build("c")) is first
    entry["model_info"]["max_input_tokens"] = 8192  # changed in place
    assert memo.get("fast", [entry], build("d")).providers == ("d",)
    for changed in (_entry(api_base="http://b/v1"), _entry(key="k2"), _entry(model_id="2"), _entry(window=4096)):
        memo.get("fast", [changed], build("x"))
    assert builds == ["a", "d", "x", "x", "x", "x"]
    assert memo.get("fast", [_entry(), _entry(model_id="2")], build("two")).providers == ("two",)  # a deployment added
    assert memo.get("slow", [_entry()], build("slow")).providers == ("slow",)  # per group name


def test_the_plugin_state_is_found_by_its_own_keys_not_by_scanning():
    assert all(k.startswith(PREFIX) for k in STATE_KEYS) and len(set(STATE_KEYS)) == len(STATE_KEYS)
    litellm_s = {f"user_api_key_{i}": "v" for i in range(40)}
    assert not holds_state(litellm_s) and not holds_state(None) and not holds_state("kvwarm_tenant")
    for key in (TENANT_KEY, PLAN_KEY, BUDGET_KEY, WARM_MARKER):
        assert holds_state({**litellm_s, key: "x"})
    kwargs = {"metadata": dict(litellm_s), "litellm_metadata": {**litellm_s, TENANT_KEY: "t"}}
    assert plugin_metadata_field(kwargs, None) == "litellm_metadata"
    kwargs["metadata"][PLAN_KEY] = {}
    assert plugin_metadata_field(kwargs, None) == "metadata"


async def test_the_first_attempt_that_fits_the_routed_window_reads_no_window(monkeypatch):
    from litellm_kvwarm.facts import AttemptFacts
    from litellm_kvwarm.meta import ESTIMATE_KEY
    from test_hook_adapters import CHAIN, FakeRouter, Key, attempt, body, handler

    h, _ = handler(FakeRouter({"fast": 4096, "slow": 32768}, chains=CHAIN), monkeypatch)
    reads, window = [], AttemptFacts.window

    async def counted(self, budget):
        reads.append(self.view.model)
        return await window(self, budget)

    monkeypatch.setattr(AttemptFacts, "window", counted)
    data = await h.async_pre_call_hook(Key(), None, body(4000, max_tokens=300), "acompletion")
    assert data["model"] == "fast" and data["metadata"][ESTIMATE_KEY]["window"] == 4096
    kwargs = await h.async_pre_call_deployment_hook(attempt(data["metadata"], max_tokens=300), "acompletion")
    assert kwargs["max_tokens"] == 300 and reads == []  # safe estimate + 300 fits 4,096: no deployment can cut
    await h.async_pre_call_deployment_hook(attempt(data["metadata"], max_tokens=3900), "acompletion")
    assert len(reads) == 1  # it may not fit: the deployment's own window is read, as before
    await h.async_pre_call_deployment_hook(attempt(data["metadata"], max_tokens=300, fallback_depth=1), "acompletion")
    assert len(reads) == 2  # a fallback hop reads it too

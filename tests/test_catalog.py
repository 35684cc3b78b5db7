import pytest

from litellm_kvwarm import catalog
from litellm_kvwarm.windows import Deployment


@pytest.mark.parametrize(
    "model, served",
    [
        ("hosted_vllm/fast-8b", "fast-8b"),
        ("hosted_vllm/Qwen/Qwen3-8B", "Qwen/Qwen3-8B"),
        ("openai/gpt-oss-20b", "gpt-oss-20b"),
        ("meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.1-8B"),
        ("anthropic/claude-x", "anthropic/claude-x"),
    ],
)
def test_served_model_name(model, served):
    assert catalog.served_model_name(model) == served


def test_group_deployments_and_operator_window():
    entries = [
        {"litellm_params": {"model": "hosted_vllm/a", "api_base": "http://h:1/v1/"}, "model_info": {"id": "x"}},
        {"litellm_params": {"model": "hosted_vllm/b", "api_base": "http://h:2/v1"}, "model_info": {"max_input_tokens": 8192}},
        {"litellm_params": {"model": "openai/gpt-4o"}},
        "garbage",
        {"litellm_params": None},
    ]
    infos = catalog.group_deployments(entries)
    assert [i.deployment for i in infos] == [Deployment("http://h:1/v1", "a"), Deployment("http://h:2/v1", "b"), None]
    assert [i.operator_window for i in infos] == [None, 8192, None]


@pytest.mark.parametrize(
    "group, overrides, fallbacks, target",
    [
        ("fast", {}, [{"fast": ["slow"]}], "slow"),
        ("fast", {"fast": "huge"}, [{"fast": ["slow"]}], "huge"),
        ("fast", {}, [{"other": ["slow"]}], None),
        ("fast", {}, [{"fast": [{"model": "fast", "max_tokens": 5}, "slow"]}], "slow"),
        ("fast", {}, [{"fast": "slow"}], "slow"),
        ("fast", {}, None, None),
        ("fast", {}, ["junk", {"fast": [None, 3]}], None),
    ],
    ids=["litellm-fallbacks", "override-wins", "other-group", "dict-entry-same-group-skipped", "string-target", "none", "junk"],
)
def test_escalation_target(group, overrides, fallbacks, target):
    assert catalog.escalation_target(group, overrides=overrides, context_window_fallbacks=fallbacks) == target


def test_combine_windows_takes_smallest_known():
    assert catalog.combine_windows([None, 32768, 16384]) == 16384
    assert catalog.combine_windows([None, None]) is None

import pytest

from litellm_kvwarm import catalog
from litellm_kvwarm.chain import escalation_chain
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
    assert [i.model_id for i in infos] == ["x", None, None]  # LiteLLM's id: the key of its discovered windows
    assert [i.operator_input for i in infos] == [None, 8192, None]  # max_input_tokens alone: the window and the prompt's limit


@pytest.mark.parametrize("model_info, window, prompt_limit", [
    # max_output_tokens beside it: LiteLLM's map means the whole window by max_input_tokens (gpt-4o 128,000 / 16,384), an
    # operator may mean a split (12,288 + 4,096 of 16,384): no window is stated, it is discovered; the prompt's limit stands
    ({"max_input_tokens": 12_288, "max_output_tokens": 4_096}, None, 12_288),
    ({"max_input_tokens": 16_384, "max_output_tokens": 4_096}, None, 16_384),
    ({"max_input_tokens": 16_384}, 16_384, 16_384),  # alone: the window (a server without max_model_len)
    ({"max_output_tokens": 4_096}, None, None),
    ({"max_input_tokens": 8_192, "max_output_tokens": 0}, 8_192, 8_192),
    ({"max_input_tokens": 8_192, "max_output_tokens": True}, 8_192, 8_192),
    ({"max_input_tokens": "8192", "max_output_tokens": 4_096}, None, None),
    (None, None, None),
])
def test_max_input_tokens_alone_is_the_window_and_beside_max_output_tokens_only_the_prompt_s_limit(model_info, window, prompt_limit):
    """Read as the whole window, a breaker's 12,288 + 4,096 split cut a 4,000-token answer that fit to 2,401; read as a
    split, gpt-4o-style 16,384 / 4,096 on a 16,384-token server "clamped" a budget to 18,336, over the real window."""
    assert catalog.operator_window(model_info) == window
    assert catalog.operator_input(model_info) == prompt_limit


@pytest.mark.parametrize(
    "group, overrides, fallbacks, target",
    [
        ("fast", {}, [{"fast": ["slow"]}], "slow"),
        ("fast", {"fast": "huge"}, [{"fast": ["slow"]}], "huge"),
        ("fast", {}, [{"other": ["slow"]}], None),
        ("fast", {}, [{"fast": [{"model": "fast", "max_tokens": 5}, "slow"]}], "slow"),
        ("fast", {}, [{"fast": "slow"}], None),  # LiteLLM iterates a string's characters: no group "slow" is reached
        ("fast", {}, None, None),
        ("fast", {}, ["junk", {"fast": [None, 3]}], None),
    ],
    ids=["litellm-fallbacks", "override-wins", "other-group", "dict-entry-same-group-skipped", "string-target", "none", "junk"],
)
def test_escalation_target(group, overrides, fallbacks, target):
    chain = escalation_chain(group, overrides=overrides, context_window_fallbacks=fallbacks)
    assert (chain[0] if chain else None) == target


def test_combine_windows_takes_smallest_known():
    assert catalog.combine_windows([None, 32768, 16384]) == 16384
    assert catalog.combine_windows([None, None]) is None


# -- the deployment's key, as LiteLLM resolves it (issue 12 item 8) ---------------------------------

SECRETS = {"os.environ/VLLM_KEY": "sk-from-env", "os.environ/HOSTED_VLLM_API_KEY": "sk-provider-default", "os.environ/OPENAI_API_KEY": "sk-openai"}


def fake_secret(reference):
    """Stands in for litellm.get_secret_str: os.environ/NAME → value, None when unset."""
    return SECRETS.get(reference)


@pytest.mark.parametrize(
    "params, key",
    [
        ({"model": "hosted_vllm/a", "api_key": "sk-literal"}, "sk-literal"),
        ({"model": "hosted_vllm/a", "api_key": "  sk-padded \n"}, "sk-padded"),
        ({"model": "hosted_vllm/a", "api_key": "os.environ/VLLM_KEY"}, "sk-from-env"),
        ({"model": "hosted_vllm/a"}, "sk-provider-default"),
        ({"model": "hosted_vllm/a", "api_key": "os.environ/UNSET_NAME"}, "sk-provider-default"),
        ({"model": "hosted_vllm/a", "api_key": ""}, "sk-provider-default"),
        ({"model": "openai/a"}, "sk-openai"),
        ({"model": "a", "custom_llm_provider": "hosted_vllm"}, "sk-provider-default"),
        ({"model": "sglang/a"}, None),
        ({"model": "lm_studio/a"}, None),
        ({"model": "hosted_vllm/a", "api_key": 12345}, "sk-provider-default"),
    ],
    ids=["literal", "stripped", "env-reference", "provider-env", "unset-reference", "blank", "openai", "custom-provider", "no-key", "unset-provider-env", "not-a-string"],
)
def test_resolve_api_key(params, key):
    assert catalog.resolve_api_key(params, secret=fake_secret) == key


def test_resolve_api_key_defaults_to_the_process_environment(monkeypatch):
    monkeypatch.setenv("KVWARM_TEST_KEY", "sk-env")
    monkeypatch.delenv("HOSTED_VLLM_API_KEY", raising=False)
    assert catalog.resolve_api_key({"model": "hosted_vllm/a", "api_key": "os.environ/KVWARM_TEST_KEY"}) == "sk-env"
    assert catalog.resolve_api_key({"model": "hosted_vllm/a"}) is None


def test_a_failing_secret_manager_leaves_the_key_unset():
    def broken(reference):
        raise RuntimeError("vault unreachable")

    assert catalog.resolve_api_key({"model": "hosted_vllm/a", "api_key": "os.environ/X"}, secret=broken) is None


def test_group_deployments_carry_their_keys_without_changing_identity():
    entries = [
        {"litellm_params": {"model": "hosted_vllm/a", "api_base": "http://h:1/v1", "api_key": "os.environ/VLLM_KEY"}},
        {"litellm_params": {"model": "hosted_vllm/b", "api_base": "http://h:2/v1", "api_key": "sk-literal"}},
    ]
    infos = catalog.group_deployments(entries, secret=fake_secret)
    assert [i.deployment.api_key for i in infos] == ["sk-from-env", "sk-literal"]
    assert infos[0].deployment == Deployment("http://h:1/v1", "a")  # the key is no part of identity
    assert "sk-" not in repr(infos)

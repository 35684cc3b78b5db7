import pytest
from pydantic import ValidationError

from litellm_kvwarm.config import Settings, SettingsError, describe, env_name
from litellm_kvwarm.config_render import redact_url


def test_defaults_without_environment():
    s = Settings.from_env({})
    assert s.output_floor_tokens == 256
    assert s.safe_chars_per_token == 3.0 and s.routing_chars_per_token == 4.0
    assert s.window_ttl_s == 900.0 and s.request_budget_ms == 300
    assert s.proactive_routing is True and s.escalation_targets == {}


def test_every_setting_has_an_env_name_and_description():
    for name, field in Settings.model_fields.items():
        assert env_name(name) == "KVWARM_" + name.upper()
        assert field.description, name


def test_values_parse_from_env():
    s = Settings.from_env(
        {
            "KVWARM_OUTPUT_FLOOR_TOKENS": "512",
            "KVWARM_PROACTIVE_ROUTING": "0",
            "KVWARM_ESCALATION_TARGETS": "fast=slow, small = large",
            "KVWARM_WINDOW_TTL_S": "2.5",
        }
    )
    assert s.output_floor_tokens == 512
    assert s.proactive_routing is False
    assert s.escalation_targets == {"fast": "slow", "small": "large"}
    assert s.window_ttl_s == 2.5


@pytest.mark.parametrize(
    "env, named",
    [
        ({"KVWARM_OUTPUT_FLOOR_TOKENS": "lots"}, "KVWARM_OUTPUT_FLOOR_TOKENS"),
        ({"KVWARM_OUTPUT_FLOOR_TOKENS": "0"}, "KVWARM_OUTPUT_FLOOR_TOKENS"),
        ({"KVWARM_REQUEST_BUDGET_MS": "-1"}, "KVWARM_REQUEST_BUDGET_MS"),
        ({"KVWARM_PROACTIVE_ROUTING": "maybe"}, "KVWARM_PROACTIVE_ROUTING"),
        ({"KVWARM_ESCALATION_TARGETS": "fast->slow"}, "KVWARM_ESCALATION_TARGETS"),
    ],
    ids=["not-a-number", "floor-zero", "negative-budget", "not-a-bool", "bad-targets"],
)
def test_invalid_value_names_the_variable(env, named):
    with pytest.raises(SettingsError, match=named):
        Settings.from_env(env)


def test_safe_ratio_above_routing_ratio_is_refused():
    with pytest.raises(SettingsError, match="safe_chars_per_token"):
        Settings.from_env(
            {"KVWARM_ESTIMATOR": "ratio", "KVWARM_SAFE_CHARS_PER_TOKEN": "5", "KVWARM_ROUTING_CHARS_PER_TOKEN": "4"}
        )
    # the ratios are not used by the calibrated estimator, so they are not checked against each other then
    assert Settings.from_env({"KVWARM_SAFE_CHARS_PER_TOKEN": "5", "KVWARM_ROUTING_CHARS_PER_TOKEN": "4"}).estimator == "calibrated"


def test_estimator_family_is_validated():
    assert Settings.from_env({"KVWARM_ESTIMATOR_FAMILY": "qwen2.5"}).estimator_family == "qwen2.5"
    with pytest.raises(SettingsError, match="KVWARM_ESTIMATOR_FAMILY"):
        Settings.from_env({"KVWARM_ESTIMATOR_FAMILY": "gemma9"})
    with pytest.raises(SettingsError, match="KVWARM_ESTIMATOR"):
        Settings.from_env({"KVWARM_ESTIMATOR": "magic"})


def test_unknown_kvwarm_variable_is_ignored_but_settings_are_frozen():
    s = Settings.from_env({"KVWARM_NOT_A_SETTING": "1"})
    with pytest.raises(Exception):
        s.output_floor_tokens = 1  # type: ignore[misc]


def test_legacy_discovery_budget_seconds_still_read():
    assert Settings.from_env({"KVWARM_DISCOVERY_BUDGET_S": "2"}).request_budget_ms == 2000
    # the new name wins when both are set
    assert Settings.from_env({"KVWARM_DISCOVERY_BUDGET_S": "2", "KVWARM_REQUEST_BUDGET_MS": "150"}).request_budget_ms == 150


def test_direct_construction_ignores_the_process_environment(monkeypatch):
    monkeypatch.setenv("KVWARM_OUTPUT_FLOOR_TOKENS", "9")
    assert Settings().output_floor_tokens == 256  # explicit: only what is passed
    assert Settings(output_floor_tokens=7).output_floor_tokens == 7
    assert Settings.from_env().output_floor_tokens == 9  # os.environ by default


def test_only_upper_case_variables_are_read_and_values_are_not_json_decoded():
    assert Settings.from_env({"kvwarm_output_floor_tokens": "9", "KVWARM_output_floor_tokens": "9"}).output_floor_tokens == 256
    with pytest.raises(SettingsError, match="KVWARM_ESCALATION_TARGETS"):
        Settings.from_env({"KVWARM_ESCALATION_TARGETS": '{"fast": "slow"}'})  # not the a=b syntax
    assert Settings.from_env({"KVWARM_REDIS_URL": ""}).redis_url == ""
    with pytest.raises(SettingsError, match="KVWARM_OUTPUT_FLOOR_TOKENS"):
        Settings.from_env({"KVWARM_OUTPUT_FLOOR_TOKENS": ""})
    with pytest.raises(SettingsError, match="KVWARM_DISCOVERY_BUDGET_S: not a number"):
        Settings.from_env({"KVWARM_DISCOVERY_BUDGET_S": "soon"})


def test_describe_is_one_line_of_every_setting_with_secrets_redacted():
    s = Settings.from_env(
        {
            "KVWARM_HASH_SECRET": "hash-s3cret",
            "KVWARM_CACHE_SALT_SECRET": "salt-s3cret",
            "KVWARM_REDIS_URL": "rediss://kv:pa55word@cache.internal:6380/2?password=qs-s3cret&ssl_cert_reqs=none",
            "KVWARM_ESCALATION_TARGETS": "fast=slow,small=large",
            "KVWARM_OUTPUT_FLOOR_TOKENS": "512",
        }
    )
    line = describe(s)
    assert "\n" not in line and line.startswith("litellm-kvwarm settings: ")
    for secret in ("hash-s3cret", "salt-s3cret", "pa55word", "qs-s3cret"):
        assert secret not in line
    assert "hash_secret=*** " in line and "cache_salt_secret=*** " in line
    assert "redis_url=rediss://kv:***@cache.internal:6380/2?password=***&ssl_cert_reqs=none " in line
    assert "output_floor_tokens=512 " in line and "escalation_targets=fast=slow,small=large" in line
    assert [part.split("=", 1)[0] for part in line.removeprefix("litellm-kvwarm settings: ").split(" ")] == list(
        Settings.model_fields
    )


def test_describe_defaults_show_unset_secrets():
    line = describe(Settings())
    assert "hash_secret=(unset)" in line and "cache_salt_secret=(unset)" in line and "redis_url=(unset)" in line
    assert "escalation_targets=(from context_window_fallbacks)" in line and "proactive_routing=True" in line


@pytest.mark.parametrize(
    "url, redacted",
    [
        ("redis://cache:6379/0", "redis://cache:6379/0"),
        ("redis://:pw@cache:6379", "redis://:***@cache:6379"),
        ("redis://user:p%40ss:w@cache", "redis://user:***@cache"),
        ("redis://lonely-secret@cache", "redis://***@cache"),
        ("unix:///run/redis.sock?db=1&password=pw", "unix:///run/redis.sock?db=1&password=***"),
        ("user:pw@cache:6379", "user:***@cache:6379"),
        ("not a url", "not a url"),
    ],
)
def test_settings_redact_url(url, redacted):
    assert redact_url(url) == redacted


@pytest.mark.parametrize("spelling", ["WINDOW_TTL_S", "Window_Ttl_S", "window-ttl-s"])
def test_direct_construction_refuses_other_spellings_of_a_field(spelling):
    """As before pydantic-settings: a field is named exactly (extra fields forbidden, case-sensitive)."""
    with pytest.raises(ValidationError):
        Settings(**{spelling: 2})

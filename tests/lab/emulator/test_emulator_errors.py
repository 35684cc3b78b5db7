"""Length checks and error wordings per vLLM version family (pure)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from litellm_kvwarm.lab.emulator.error_bodies import (
    FAMILIES,
    ApiError,
    LengthDecision,
    check_lengths,
    family_for_version,
    model_not_found,
    parse_version,
)

OLD = family_for_version("0.25.0")  # 0.18-0.31
NEW = family_for_version("0.32.0")  # 0.32+
SHARED_DATA = Path(__file__).resolve().parents[2] / "data" / "context_errors.json"


def check(family, window=4096, prompt=100, max_tokens=None, default=16, text=True):
    return check_lengths(
        family, window=window, prompt_tokens=prompt, max_tokens=max_tokens, default_max_tokens=default,
        prompt_is_text=text,
    )


@pytest.mark.parametrize(
    "text, expected",
    [("0.32.0", (0, 32, 0)), ("v0.18", (0, 18, 0)), ("0.25.1rc2+cpu", (0, 25, 1)), ("1.2.3", (1, 2, 3))],
)
def test_parse_version(text, expected):
    assert parse_version(text) == expected


def test_parse_version_rejects_garbage():
    with pytest.raises(ValueError, match="MAJOR.MINOR"):
        parse_version("latest")


@pytest.mark.parametrize(
    "version, family",
    [("0.18.0", "0.18-0.31"), ("0.31.9", "0.18-0.31"), ("0.32.0", "0.32+"), ("0.40.2", "0.32+"), ("1.0.0", "0.32+")],
)
def test_family_is_chosen_by_version_range(version, family):
    assert family_for_version(version).name == family


def test_versions_outside_every_family_are_refused_by_name():
    with pytest.raises(ValueError, match=r"0\.17\.3 is not emulated; supported: 0\.18-0\.31, 0\.32\+"):
        family_for_version("0.17.3")


def test_families_do_not_overlap():
    for version in [(0, minor, 0) for minor in range(18, 60)]:
        assert sum(f.covers(version) for f in FAMILIES) == 1


# ---------------------------------------------------------------- 0.18-0.31


def test_old_family_reproduces_a_real_server_message_exactly():
    # Verbatim from a vLLM server (public reports): window 32768, max_tokens 8192.
    real = (
        "This model's maximum context length is 32768 tokens. However, you requested 8192 output tokens "
        "and your prompt contains at least 24577 input tokens, for a total of at least 32769 tokens. "
        "Please reduce the length of the input prompt or the number of requested output tokens. "
        "(parameter=input_tokens, value=24577)"
    )
    error = check(OLD, window=32768, prompt=30000, max_tokens=8192)
    assert error == ApiError(400, real, "BadRequestError", "input_tokens")
    assert error.body() == {"error": {"message": real, "type": "BadRequestError", "param": "input_tokens", "code": 400}}


def test_old_family_without_max_tokens_reports_zero_output_tokens():
    # As seen from a real server: "requested 0 output tokens ... at least 40961 input tokens".
    error = check(OLD, window=40960, prompt=50000, max_tokens=None)
    assert error.message == (
        "This model's maximum context length is 40960 tokens. However, you requested 0 output tokens and "
        "your prompt contains at least 40961 input tokens, for a total of at least 40961 tokens. Please "
        "reduce the length of the input prompt or the number of requested output tokens. "
        "(parameter=input_tokens, value=40961)"
    )


def test_old_family_at_least_is_a_lower_bound_not_the_prompt_size():
    # A text prompt is truncated at max_input + 1 before the check: every overflow with the
    # same window and max_tokens prints the same numbers, whatever the real prompt length.
    small = check(OLD, prompt=3000, max_tokens=2000)
    huge = check(OLD, prompt=90000, max_tokens=2000)
    assert small.message == huge.message
    assert "prompt contains at least 2097 input tokens, for a total of at least 4097 tokens." in small.message


def test_old_family_token_id_prompt_is_reported_exactly():
    error = check(OLD, prompt=3000, max_tokens=2000, text=False)
    assert "at least 3000 input tokens, for a total of at least 5000 tokens." in error.message
    assert error.message.endswith("(parameter=input_tokens, value=3000)")


def test_old_family_prompt_exactly_filling_the_window_with_max_tokens_is_admitted():
    assert check(OLD, prompt=2096, max_tokens=2000) == LengthDecision(2000, "length")
    assert isinstance(check(OLD, prompt=2097, max_tokens=2000), ApiError)


def test_old_family_max_tokens_above_window_keeps_vllms_missing_space():
    error = check(OLD, max_tokens=5000)
    assert error == ApiError(
        400,
        "max_tokens=5000cannot be greater than max_model_len=max_total_tokens=4096. Please request fewer "
        "output tokens. (parameter=max_tokens, value=5000)",
        "BadRequestError",
        "max_tokens",
    )


def test_old_family_wording_matches_the_collected_pre_fix_message():
    assert SHARED_DATA.exists(), f"{SHARED_DATA} is missing (tests/data/context_errors.json, committed with the repository)"
    entry = next(e for e in json.loads(SHARED_DATA.read_text()) if "cannot be greater than" in e["message"])
    real = json.loads(entry["message"])["error"]
    error = check(OLD, window=32768, max_tokens=38000)
    assert error.body()["error"] == real


# ---------------------------------------------------------------- 0.32+


def test_new_family_clamps_output_silently():
    assert check(NEW, prompt=3000, max_tokens=2000) == LengthDecision(1096, "length")


def test_new_family_refuses_only_a_prompt_that_alone_exceeds_the_window():
    error = check(NEW, prompt=4097, max_tokens=10)
    assert error == ApiError(
        400,
        "This model's maximum context length is 4096 tokens. However, your prompt contains at least 4097 "
        "input tokens, which exceeds this limit even without any output tokens. Please reduce the length "
        "of the input prompt. (parameter=input_tokens, value=4097)",
        "BadRequestError",
        "input_tokens",
    )
    assert check(NEW, prompt=50000, max_tokens=10).message == error.message  # truncated at window + 1


def test_new_family_prompt_exactly_filling_the_window_leaves_no_output():
    error = check(NEW, prompt=4096, max_tokens=10)
    assert error == ApiError(
        400, "max_tokens must be at least 1, got 0. (parameter=max_tokens, value=0)", "BadRequestError", "max_tokens"
    )
    assert check(NEW, prompt=4095, max_tokens=10) == LengthDecision(1, "length")


def test_new_family_max_tokens_above_window():
    assert check(NEW, max_tokens=5000).message == (
        "max_tokens=5000 cannot be greater than max_model_len=4096. Please request fewer output tokens. "
        "(parameter=max_tokens, value=5000)"
    )


# ---------------------------------------------------------------- both


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
def test_max_tokens_zero_is_refused(family):
    error = check(family, max_tokens=0)
    assert error.message == "max_tokens must be at least 1, got 0. (parameter=max_tokens, value=0)"
    assert error.param == "max_tokens"


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
def test_absent_max_tokens_uses_the_default_cap_as_a_natural_stop(family):
    assert check(family, prompt=100, max_tokens=None, default=16) == LengthDecision(16, "stop")
    assert check(family, prompt=4086, max_tokens=None, default=16) == LengthDecision(10, "length")


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
def test_prompt_errors_are_detected_by_litellms_substring(family):
    # LiteLLM maps a 400 to ContextWindowExceededError on this (lower-cased) substring.
    assert "this model's maximum context length is" in check(family, prompt=99999, max_tokens=10).message.lower()


def test_model_not_found_body():
    assert model_not_found("nope").body() == {
        "error": {"message": "The model `nope` does not exist.", "type": "NotFoundError", "param": "model", "code": 404}
    }

from pathlib import Path

from litellm_kvwarm.config import Settings, env_name, settings_table

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


def test_readme_settings_table_is_current():
    assert settings_table() in README, "regenerate the README table: python -m litellm_kvwarm.config"


def test_readme_names_every_setting():
    for name in Settings.model_fields:
        assert f"`{env_name(name)}`" in README


def test_readme_gives_the_two_commands_that_ci_runs():
    ci = (Path(__file__).resolve().parents[1] / ".ci" / "run").read_text()
    assert "bash scripts/install.sh && .venv/bin/kvwarm demo" in README
    assert "bash scripts/install.sh && .venv/bin/python -m pytest -ra" in README
    assert "bash scripts/install.sh" in ci and ".venv/bin/python -m pytest -ra" in ci
    assert "bash scripts/vllm_tier.sh" in ci and "bash scripts/vllm_tier.sh" in README


def test_readme_links_the_reports():
    for doc in ("docs/benchmarks.md", "docs/vllm/benchmarks.md", "docs/emulator-vs-vllm.md", "docs/demo-warm-ahead.png"):
        assert f"({doc})" in README
        assert (Path(__file__).resolve().parents[1] / doc).exists()

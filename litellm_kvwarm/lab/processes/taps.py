"""The benchmark's recording tap (``litellm_kvwarm.lab.bench.tap``) as a child process in front of a backend."""

from __future__ import annotations

import sys
from pathlib import Path

from .managed import EMULATOR_HEALTH_PATH, ManagedProcess, child_env, free_port, workdir_for

__all__ = ["start_tap"]


def start_tap(
    upstream: "ManagedProcess | str",
    name: str,
    port: int | None = None,
    *,
    workdir: Path | None = None,
    request_log: Path | None = None,
    health_timeout_s: float = 30.0,
) -> ManagedProcess:
    """Start ``python -m litellm_kvwarm.lab.bench.tap`` in front of ``upstream`` (a process or
    ``http://host:port``); returns it healthy (its ``/health`` is the upstream's).
    ``.base_url`` is ``http://127.0.0.1:PORT`` (no ``/v1``).

    Raises:
        ValueError: ``upstream`` has no ``base_url``.
        ProcessError: the tap exited or was not healthy in ``health_timeout_s``.
    """
    target = upstream if isinstance(upstream, str) else upstream.base_url
    if not target:
        raise ValueError(f"{upstream!r} has no base_url")
    port = port or free_port()
    work = workdir_for(workdir, "kvwarm-tap-")
    cmd = [sys.executable, "-m", "litellm_kvwarm.lab.bench.tap", "--upstream", target, "--host", "127.0.0.1",
           "--port", str(port)]
    if request_log is not None:
        cmd += ["--request-log", str(request_log)]
    base_url = f"http://127.0.0.1:{port}"
    return ManagedProcess(
        f"tap[{name}]", cmd, health_url=base_url + EMULATOR_HEALTH_PATH, log_path=work / f"tap-{name}-{port}.log",
        env=child_env(), cwd=work, health_timeout_s=health_timeout_s, base_url=base_url, port=port,
    ).start()

"""A real ``litellm --config`` proxy as a child process, and the config the harness gives it.

:class:`BackendSpec` is one backend as a test, the demo or a benchmark declares it for the proxy
(a ``model_list`` entry of a group); it is not the plugin's own view of a deployment
(:class:`litellm_kvwarm.windows.Deployment`, api_base + served model, read from the router).
:func:`proxy_config` builds the standard config (plugin callback, fallbacks, master key,
``KVWARM_*`` settings); :func:`start_proxy` writes it as YAML and runs the proxy on it. The proxy is
only ever a child process: nothing here imports LiteLLM.
"""

from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import yaml

from .managed import (
    DEFAULT_HEALTH_TIMEOUT_S,
    ManagedProcess,
    ProcessError,
    child_env,
    free_port,
    new_master_key,
    workdir_for,
)

__all__ = [
    "PLUGIN_CALLBACK",
    "PROXY_HEALTH_PATH",
    "BackendSpec",
    "litellm_executable",
    "proxy_config",
    "start_proxy",
]

PROXY_HEALTH_PATH = "/health/liveliness"
"""LiteLLM 1.108.7's unauthenticated liveness probe (``/health/liveness`` is an alias)."""


@dataclass(frozen=True)
class BackendSpec:
    """One backend of a model group as the harness declares it: ``hosted_vllm/<served_model_name>``
    at ``api_base``, with its key, optional ``model_info`` and extra ``litellm_params``."""

    served_model_name: str
    api_base: str  # e.g. "http://127.0.0.1:PORT/v1"
    api_key: str = "none"
    model_info: Mapping[str, Any] | None = None
    extra_params: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, emulator: ManagedProcess, served_model_name: str) -> "BackendSpec":
        """The backend ``emulator`` (any process with a ``base_url``) serves as ``served_model_name``.

        Raises:
            ValueError: ``emulator`` has no ``base_url``.
        """
        if not emulator.base_url:
            raise ValueError(f"{emulator.name} has no base_url")
        return cls(served_model_name=served_model_name, api_base=emulator.base_url + "/v1")

    def to_model_list_entry(self, group: str) -> dict[str, Any]:
        """This backend as one ``model_list`` entry of ``group``."""
        params: dict[str, Any] = {
            "model": f"hosted_vllm/{self.served_model_name}",
            "api_base": self.api_base,
            "api_key": self.api_key,
        }
        params.update(self.extra_params)
        entry: dict[str, Any] = {"model_name": group, "litellm_params": params}
        if self.model_info:
            entry["model_info"] = dict(self.model_info)
        return entry


PLUGIN_CALLBACK = "litellm_kvwarm.proxy_handler_instance"


def proxy_config(
    groups: Mapping[str, Sequence[BackendSpec]],
    *,
    master_key: str | None = None,
    callbacks: bool | Sequence[str] = True,
    fallbacks: Sequence[Mapping[str, Sequence[str]]] | None = None,
    env_vars: Mapping[str, Any] | None = None,
    router_settings: Mapping[str, Any] | None = None,
    general_settings: Mapping[str, Any] | None = None,
    litellm_settings: Mapping[str, Any] | None = None,
    model_info_refresh: bool = True,
) -> dict[str, Any]:
    """The standard proxy config: one ``model_list`` entry per backend, the plugin callback,
    ``context_window_fallbacks`` (default ``[{"fast": ["slow"]}]`` when both groups exist),
    a random master key, and the plugin's ``KVWARM_*`` settings as ``environment_variables``.

    ``callbacks``: True -> the plugin only; False -> none; a list -> exactly those.
    ``model_info_refresh``: False sets ``general_settings.disable_model_info_refresh`` (LiteLLM then
    reads no ``/v1/models`` itself, and the plugin reads every window with its own fetch; tests of that
    fetch, e.g. faults injected into ``/v1/models``, turn it off). The ``*_settings`` mappings are
    merged over the defaults (a ``general_settings`` entry wins over ``model_info_refresh``).
    """
    model_list = [dep.to_model_list_entry(group) for group, deps in groups.items() for dep in deps]
    if fallbacks is None:
        fallbacks = [{"fast": ["slow"]}] if {"fast", "slow"} <= set(groups) else []
    router: dict[str, Any] = {}
    if fallbacks:
        router["context_window_fallbacks"] = [dict(f) for f in fallbacks]
    router.update(router_settings or {})
    lsettings: dict[str, Any] = {}
    if callbacks is True:
        lsettings["callbacks"] = [PLUGIN_CALLBACK]
    elif callbacks:
        lsettings["callbacks"] = list(callbacks)
    lsettings.update(litellm_settings or {})
    general: dict[str, Any] = {"master_key": master_key or new_master_key()}
    if not model_info_refresh:
        general["disable_model_info_refresh"] = True
    general.update(general_settings or {})
    config: dict[str, Any] = {"model_list": model_list}
    if lsettings:
        config["litellm_settings"] = lsettings
    if router:
        config["router_settings"] = router
    config["general_settings"] = general
    if env_vars:
        config["environment_variables"] = {k: str(v) for k, v in env_vars.items()}
    return config


def litellm_executable() -> str:
    """The ``litellm`` script of the running interpreter's environment, else the one on PATH."""
    beside = Path(sys.executable).parent / "litellm"
    if beside.exists():
        return str(beside)
    found = shutil.which("litellm")
    if not found:
        raise ProcessError(f"no 'litellm' script beside {sys.executable} or on PATH; install litellm[proxy]")
    return found


def start_proxy(
    config: Mapping[str, Any],
    port: int | None = None,
    env: Mapping[str, str] | None = None,
    workdir: Path | None = None,
    *,
    health_timeout_s: float = DEFAULT_HEALTH_TIMEOUT_S,
    extra_args: Sequence[str] = (),
) -> ManagedProcess:
    """Write ``config`` as YAML into ``workdir`` and run ``litellm --config FILE``; returns it healthy.

    The proxy's working directory is ``workdir`` (LiteLLM looks for callback modules
    beside the config first, so keep it free of a ``litellm_kvwarm/`` directory).
    ``.base_url`` is ``http://127.0.0.1:PORT``; ``.master_key`` is the config's key.

    Raises:
        ProcessError: no ``litellm`` script, or the proxy exited or was not healthy in
            ``health_timeout_s`` (the message carries its log tail).
    """
    port = port or free_port()
    work = workdir_for(workdir, "kvwarm-proxy-")
    config_path = work / f"litellm-config-{port}.yaml"
    config_path.write_text(yaml.safe_dump(dict(config), sort_keys=False))
    extra_env = {"LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    extra_env.update(env or {})
    cmd = [
        litellm_executable(), "--config", str(config_path),
        "--port", str(port), "--host", "127.0.0.1", *extra_args,
    ]
    base_url = f"http://127.0.0.1:{port}"
    process = ManagedProcess(
        "litellm-proxy",
        cmd,
        health_url=base_url + PROXY_HEALTH_PATH,
        log_path=work / f"litellm-proxy-{port}.log",
        env=child_env(extra_env),
        cwd=work,
        health_timeout_s=health_timeout_s,
        base_url=base_url,
        port=port,
        master_key=(config.get("general_settings") or {}).get("master_key"),
        config_path=config_path,
    )
    return process.start()

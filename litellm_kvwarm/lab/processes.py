"""Real-process harness: emulated vLLM backends and a real ``litellm --config`` proxy.

Modeled on vLLM's ``tests/utils.py`` ``RemoteOpenAIServer``: launch the real
server on a free port, wait for its health URL *while polling the process* (a
server that died fails fast, with the tail of its log), and stop it with
terminate -> wait -> kill.  Every process started here is also registered with
``atexit`` so an exception or Ctrl-C in the caller never leaves one behind.

Used by ``kvwarm demo``, ``kvwarm bench`` (also the recording tap in front of real vLLM)
and by every end-to-end test.  Nothing here imports
LiteLLM; the proxy is only ever a child process.
"""

from __future__ import annotations

import atexit
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import httpx
import yaml

__all__ = [
    "DEFAULT_HEALTH_TIMEOUT_S",
    "DEFAULT_STOP_TIMEOUT_S",
    "PROXY_HEALTH_PATH",
    "REPO_ROOT",
    "Deployment",
    "ManagedProcess",
    "ProcessError",
    "clear_faults",
    "free_port",
    "litellm_executable",
    "new_master_key",
    "proxy_config",
    "set_faults",
    "start_emulator",
    "start_proxy",
    "start_tap",
]

DEFAULT_HEALTH_TIMEOUT_S = 60.0
"""How long a process may take to answer its health URL (the proxy needs 7-9 s here)."""
DEFAULT_STOP_TIMEOUT_S = 10.0
"""How long ``stop`` waits after SIGTERM before it sends SIGKILL."""
LOG_TAIL_CHARS = 4000
PROXY_HEALTH_PATH = "/health/liveliness"
"""LiteLLM 1.108.7's unauthenticated liveness probe (``/health/liveness`` is an alias)."""
EMULATOR_HEALTH_PATH = "/health"
REPO_ROOT = Path(__file__).resolve().parents[2]
"""The directory that contains the ``litellm_kvwarm`` package; goes on children's PYTHONPATH."""

_LIVE: set["ManagedProcess"] = set()
_LIVE_LOCK = threading.Lock()


class ProcessError(RuntimeError):
    """A managed process exited early or never became healthy; the message carries its log tail."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (bind to 0, read, close)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def new_master_key() -> str:
    """A random LiteLLM master key (the proxy refuses to start without one, or with ``sk-1234``)."""
    return "sk-" + secrets.token_hex(16)


def _pythonpath_with_repo(existing: str | None) -> str:
    parts = [str(REPO_ROOT)]
    if existing:
        parts += [p for p in existing.split(os.pathsep) if p and p != str(REPO_ROOT)]
    return os.pathsep.join(parts)


class ManagedProcess:
    """One child process with a log file, a health URL and a guaranteed stop.

    Use as a context manager (``with ManagedProcess(...) as p:``) or call
    ``start()`` / ``stop()`` explicitly.  ``start`` returns once ``health_url``
    answers 200; if the process exits first, or ``health_timeout_s`` passes,
    it stops the process and raises :class:`ProcessError` with the log tail.
    """

    def __init__(
        self,
        name: str,
        cmd: Sequence[str],
        *,
        health_url: str,
        log_path: Path,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        health_timeout_s: float = DEFAULT_HEALTH_TIMEOUT_S,
        stop_timeout_s: float = DEFAULT_STOP_TIMEOUT_S,
        base_url: str | None = None,
        port: int | None = None,
        master_key: str | None = None,
        config_path: Path | None = None,
    ) -> None:
        self.name = name
        self.cmd = [str(c) for c in cmd]
        self.health_url = health_url
        self.log_path = Path(log_path)
        self.env = dict(env) if env is not None else None
        self.cwd = cwd
        self.health_timeout_s = health_timeout_s
        self.stop_timeout_s = stop_timeout_s
        self.base_url = base_url
        self.port = port
        self.master_key = master_key
        self.config_path = config_path
        self.proc: subprocess.Popen[bytes] | None = None
        self.startup_s: float | None = None
        self._log_file: Any = None

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"ManagedProcess({self.name!r}, {state}, base_url={self.base_url!r})"

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def returncode(self) -> int | None:
        return None if self.proc is None else self.proc.poll()

    def log_tail(self, chars: int = LOG_TAIL_CHARS) -> str:
        try:
            data = self.log_path.read_bytes()
        except OSError:
            return ""
        return data[-chars:].decode("utf-8", errors="replace")

    def start(self) -> "ManagedProcess":
        if self.proc is not None:
            raise ProcessError(f"{self.name}: already started")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log_file = open(self.log_path, "ab")
        began = time.monotonic()
        self.proc = subprocess.Popen(
            self.cmd,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=self.env,
            cwd=self.cwd,
            # Own process group: Ctrl-C in the terminal reaches us, and we stop children in order.
            start_new_session=True,
        )
        with _LIVE_LOCK:
            _LIVE.add(self)
        try:
            self._wait_healthy()
        except BaseException:
            self.stop()
            raise
        self.startup_s = time.monotonic() - began
        return self

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + self.health_timeout_s
        last_error = "no attempt"
        with httpx.Client(timeout=2.0, trust_env=False) as client:
            while True:
                code = self.proc.poll() if self.proc else None
                if code is not None:
                    raise ProcessError(
                        f"{self.name} exited with code {code} before becoming healthy "
                        f"({' '.join(self.cmd)}); log {self.log_path}:\n{self.log_tail()}"
                    )
                try:
                    response = client.get(self.health_url)
                    if response.status_code == 200:
                        return
                    last_error = f"HTTP {response.status_code}"
                except httpx.HTTPError as exc:
                    last_error = f"{type(exc).__name__}: {exc}"
                if time.monotonic() >= deadline:
                    raise ProcessError(
                        f"{self.name} not healthy at {self.health_url} after "
                        f"{self.health_timeout_s:.0f}s (last: {last_error}); log {self.log_path}:\n"
                        f"{self.log_tail()}"
                    )
                time.sleep(0.2)

    def stop(self) -> int | None:
        """Terminate, wait ``stop_timeout_s``, then kill. Idempotent; returns the exit code."""
        proc = self.proc
        if proc is not None and proc.poll() is None:
            try:
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=self.stop_timeout_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=self.stop_timeout_s)
            except ProcessLookupError:
                pass
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        with _LIVE_LOCK:
            _LIVE.discard(self)
        return None if proc is None else proc.poll()

    def __enter__(self) -> "ManagedProcess":
        if self.proc is None:
            self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _stop_all_live() -> None:
    with _LIVE_LOCK:
        live = list(_LIVE)
    for process in live:
        try:
            process.stop()
        except Exception:  # noqa: BLE001 - best effort at interpreter exit
            pass


atexit.register(_stop_all_live)


def _workdir(workdir: Path | None, prefix: str) -> Path:
    if workdir is None:
        return Path(tempfile.mkdtemp(prefix=prefix))
    path = Path(workdir)
    path.mkdir(parents=True, exist_ok=True)
    return path


def _child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    if extra:
        env.update({k: str(v) for k, v in extra.items()})
    env["PYTHONPATH"] = _pythonpath_with_repo(env.get("PYTHONPATH"))
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


# --------------------------------------------------------------------- emulator

_EMULATOR_FLAGS = {
    "vllm_version": "--vllm-version",
    "prefill_tokens_per_s": "--prefill-tokens-per-s",
    "decode_tokens_per_s": "--decode-tokens-per-s",
    "time_scale": "--time-scale",
    "block_size": "--block-size",
    "kv_capacity_tokens": "--kv-capacity-tokens",
    "request_log": "--request-log",
    "default_max_tokens": "--default-max-tokens",
    # the value's type says how it is passed: True -> the bare switch (False: left out),
    # a list/tuple -> the flag once per item, a dict -> one JSON argument
    "api_key": "--api-key",
    "strict_fields": "--strict-fields",
    "lora_modules": "--lora-modules",
    "faults": "--faults",
    "hide_max_model_len": "--hide-max-model-len",
    "render_response_format": "--render-response-format",
}


def _emulator_args(flags: Mapping[str, Any]) -> list[str]:
    args: list[str] = []
    for key, flag in _EMULATOR_FLAGS.items():
        value = flags.get(key)
        if value is None or value is False:
            continue
        if value is True:
            args.append(flag)
        elif isinstance(value, (list, tuple)):
            for item in value:
                args += [flag, str(item)]
        elif isinstance(value, Mapping):
            args += [flag, json.dumps(value, separators=(",", ":"))]
        else:
            args += [flag, str(value)]
    return args


def start_emulator(
    served_model_name: str,
    max_model_len: int,
    port: int | None = None,
    *,
    workdir: Path | None = None,
    health_timeout_s: float = 30.0,
    env: Mapping[str, str] | None = None,
    extra_args: Sequence[str] = (),
    **flags: Any,
) -> ManagedProcess:
    """Start ``python -m litellm_kvwarm.lab.emulator`` serving one model; returns it healthy.

    ``flags`` map to the emulator's CLI (``time_scale=0.05`` -> ``--time-scale 0.05``);
    ``None`` values are left out. Also: ``api_key="k"`` (or a list of keys) -> ``--api-key``;
    ``strict_fields=True`` -> ``--strict-fields``; ``lora_modules=["a=/p"]`` -> one
    ``--lora-modules`` per item; ``faults={...}`` -> ``--faults JSON``;
    ``hide_max_model_len=True``, ``render_response_format=True``.
    ``.base_url`` is ``http://127.0.0.1:PORT`` (no ``/v1``).

    Raises:
        TypeError: an unknown flag.
        ProcessError: the emulator exited or was not healthy in ``health_timeout_s``.
    """
    unknown = set(flags) - set(_EMULATOR_FLAGS)
    if unknown:
        raise TypeError(f"start_emulator: unknown flag(s) {sorted(unknown)}; known: {sorted(_EMULATOR_FLAGS)}")
    port = port or free_port()
    work = _workdir(workdir, "kvwarm-emulator-")
    cmd = [
        sys.executable, "-m", "litellm_kvwarm.lab.emulator",
        "--served-model-name", served_model_name,
        "--max-model-len", str(int(max_model_len)),
        "--host", "127.0.0.1",
        "--port", str(port),
    ]
    cmd += _emulator_args(flags)
    cmd += list(extra_args)
    base_url = f"http://127.0.0.1:{port}"
    return ManagedProcess(
        f"emulator[{served_model_name}]",
        cmd,
        health_url=base_url + EMULATOR_HEALTH_PATH,
        log_path=work / f"emulator-{served_model_name}-{port}.log",
        env=_child_env(env),
        cwd=work,
        health_timeout_s=health_timeout_s,
        base_url=base_url,
        port=port,
    ).start()


EMULATOR_FAULTS_PATH = "/emulator/faults"
"""The emulator's fault switch: PUT (replace), DELETE (clear), GET (show)."""


def _emulator_url(emulator: "ManagedProcess | str") -> str:
    base = emulator if isinstance(emulator, str) else emulator.base_url
    if not base:
        raise ValueError(f"{emulator!r} has no base_url")
    return base.rstrip("/") + EMULATOR_FAULTS_PATH


def set_faults(emulator: "ManagedProcess | str", faults: Mapping[str, Any]) -> None:
    """Replace a running emulator's faults with ``faults`` (the shape of ``--faults``, e.g.
    ``{"models": "hang", "completions": {"status": 429, "count": 2}}``); takes effect for the
    next request. ``emulator`` is a process from :func:`start_emulator` or its base URL.

    Raises:
        httpx.HTTPStatusError: the emulator refused the faults (400 names the bad key).
    """
    with httpx.Client(timeout=5.0, trust_env=False) as client:
        client.put(_emulator_url(emulator), json=dict(faults)).raise_for_status()


def clear_faults(emulator: "ManagedProcess | str") -> None:
    """Remove every fault of a running emulator; requests held by a hang go on normally."""
    with httpx.Client(timeout=5.0, trust_env=False) as client:
        client.delete(_emulator_url(emulator)).raise_for_status()


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
    ``.base_url`` is ``http://127.0.0.1:PORT`` (no ``/v1``)."""
    target = upstream if isinstance(upstream, str) else upstream.base_url
    if not target:
        raise ValueError(f"{upstream!r} has no base_url")
    port = port or free_port()
    work = _workdir(workdir, "kvwarm-tap-")
    cmd = [sys.executable, "-m", "litellm_kvwarm.lab.bench.tap", "--upstream", target, "--host", "127.0.0.1",
           "--port", str(port)]
    if request_log is not None:
        cmd += ["--request-log", str(request_log)]
    base_url = f"http://127.0.0.1:{port}"
    return ManagedProcess(
        f"tap[{name}]", cmd, health_url=base_url + EMULATOR_HEALTH_PATH, log_path=work / f"tap-{name}-{port}.log",
        env=_child_env(), cwd=work, health_timeout_s=health_timeout_s, base_url=base_url, port=port,
    ).start()


# ------------------------------------------------------------------------ proxy


@dataclass(frozen=True)
class Deployment:
    """One backend deployment inside a model group."""

    served_model_name: str
    api_base: str  # e.g. "http://127.0.0.1:PORT/v1"
    api_key: str = "none"
    model_info: Mapping[str, Any] | None = None
    extra_params: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, emulator: ManagedProcess, served_model_name: str) -> "Deployment":
        if not emulator.base_url:
            raise ValueError(f"{emulator.name} has no base_url")
        return cls(served_model_name=served_model_name, api_base=emulator.base_url + "/v1")

    def to_model_list_entry(self, group: str) -> dict[str, Any]:
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
    groups: Mapping[str, Sequence[Deployment]],
    *,
    master_key: str | None = None,
    callbacks: bool | Sequence[str] = True,
    fallbacks: Sequence[Mapping[str, Sequence[str]]] | None = None,
    env_vars: Mapping[str, Any] | None = None,
    router_settings: Mapping[str, Any] | None = None,
    general_settings: Mapping[str, Any] | None = None,
    litellm_settings: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The standard proxy config: one ``model_list`` entry per deployment, the plugin callback,
    ``context_window_fallbacks`` (default ``[{"fast": ["slow"]}]`` when both groups exist),
    a random master key, and the plugin's ``KVWARM_*`` settings as ``environment_variables``.

    ``callbacks``: True -> the plugin only; False -> none; a list -> exactly those.
    The ``*_settings`` mappings are merged over the defaults.
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
    """
    port = port or free_port()
    work = _workdir(workdir, "kvwarm-proxy-")
    config_path = work / f"litellm-config-{port}.yaml"
    config_path.write_text(yaml.safe_dump(dict(config), sort_keys=False))
    child_env = {"LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    child_env.update(env or {})
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
        env=_child_env(child_env),
        cwd=work,
        health_timeout_s=health_timeout_s,
        base_url=base_url,
        port=port,
        master_key=(config.get("general_settings") or {}).get("master_key"),
        config_path=config_path,
    )
    return process.start()

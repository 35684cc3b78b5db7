"""A managed child process: free ports, a log file, a health wait, a guaranteed stop.

Modeled on vLLM's ``tests/utils.py`` ``RemoteOpenAIServer``: launch the real
server on a free port, wait for its health URL *while polling the process* (a
server that died fails fast, with the tail of its log), and stop it with
terminate -> wait -> kill.  Every process started here is also registered with
``atexit`` so an exception or Ctrl-C in the caller never leaves one behind.

Also the environment every child gets (:func:`child_env`: the repository on ``PYTHONPATH``)
and its working directory (:func:`workdir_for`). Nothing here imports LiteLLM.
"""

from __future__ import annotations

import atexit
import os
import secrets
import signal
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

import httpx

__all__ = [
    "DEFAULT_HEALTH_TIMEOUT_S",
    "DEFAULT_STOP_TIMEOUT_S",
    "EMULATOR_HEALTH_PATH",
    "REPO_ROOT",
    "ManagedProcess",
    "ProcessError",
    "child_env",
    "free_port",
    "new_master_key",
    "workdir_for",
]

DEFAULT_HEALTH_TIMEOUT_S = 60.0
"""How long a process may take to answer its health URL (the proxy needs 7-9 s here)."""
DEFAULT_STOP_TIMEOUT_S = 10.0
"""How long ``stop`` waits after SIGTERM before it sends SIGKILL."""
LOG_TAIL_CHARS = 4000
EMULATOR_HEALTH_PATH = "/health"
"""The health route of the emulator and of the recording tap (the tap forwards it upstream)."""
REPO_ROOT = Path(__file__).resolve().parents[3]
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

    def restart(self) -> "ManagedProcess":
        """Stop the process if it still runs (or reap it if it died), then start it again with the same
        command, port and log (appended); waits until healthy. Raises :class:`ProcessError` as :meth:`start`."""
        self.stop()
        self.proc = None
        return self.start()

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


def workdir_for(workdir: Path | None, prefix: str) -> Path:
    """``workdir`` (created if missing), or a fresh temporary directory named ``prefix...``."""
    if workdir is None:
        return Path(tempfile.mkdtemp(prefix=prefix))
    path = Path(workdir)
    path.mkdir(parents=True, exist_ok=True)
    return path


def child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment plus ``extra``, with the repository first on ``PYTHONPATH``
    and ``PYTHONUNBUFFERED=1`` unless set."""
    env = dict(os.environ)
    if extra:
        env.update({k: str(v) for k, v in extra.items()})
    env["PYTHONPATH"] = _pythonpath_with_repo(env.get("PYTHONPATH"))
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env

"""Real-process harness: emulated vLLM backends, recording taps and a real ``litellm --config`` proxy.

Used by ``kvwarm demo``, ``kvwarm bench`` (also the recording tap in front of real vLLM)
and by every end-to-end test. Nothing here imports LiteLLM; the proxy is only ever a child process.

Modules: :mod:`.managed` (one child process: port, log, health wait, guaranteed stop; the
children's environment), :mod:`.emulators` (``start_emulator`` and the runtime fault switch),
:mod:`.taps` (``start_tap``), :mod:`.proxy` (:class:`BackendSpec`, ``proxy_config``,
``start_proxy``). Everything public is re-exported here.
"""

from __future__ import annotations

from .emulators import EMULATOR_FAULTS_PATH, clear_faults, set_faults, start_emulator
from .managed import (
    DEFAULT_HEALTH_TIMEOUT_S,
    DEFAULT_STOP_TIMEOUT_S,
    EMULATOR_HEALTH_PATH,
    REPO_ROOT,
    ManagedProcess,
    ProcessError,
    child_env,
    free_port,
    new_master_key,
)
from .proxy import PLUGIN_CALLBACK, PROXY_HEALTH_PATH, BackendSpec, litellm_executable, proxy_config, start_proxy
from .taps import start_tap


__all__ = [
    "DEFAULT_HEALTH_TIMEOUT_S",
    "DEFAULT_STOP_TIMEOUT_S",
    "EMULATOR_FAULTS_PATH",
    "EMULATOR_HEALTH_PATH",
    "PLUGIN_CALLBACK",
    "PROXY_HEALTH_PATH",
    "REPO_ROOT",
    "BackendSpec",
    "ManagedProcess",
    "ProcessError",
    "child_env",
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

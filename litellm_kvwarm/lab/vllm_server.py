"""Real vLLM CPU servers for the real-vLLM tier and ``kvwarm bench --scale vllm``.

:func:`start_vllm` launches ``python -m vllm.entrypoints.openai.api_server`` from ``.venv-vllm``
(made by ``bash scripts/vllm_tier.sh``) serving the tiny Llama that ``tests/vllm/tiny_model.py``
builds (hidden 640, 8 layers, a BPE tokenizer trained on ShareGPT text, ``--load-format dummy``:
no model hub), with prefix caching and ``usage.prompt_tokens_details.cached_tokens`` on, tool calls parsed
(``--enable-auto-tool-choice --tool-call-parser hermes``: a request with ``tools`` is otherwise
refused), one engine
pinned to one core (``VLLM_CPU_OMP_THREADS_BIND``) and ``VLLM_SERVER_DEV_MODE=1`` so
``POST /reset_prefix_cache`` is served. Start-up is ~25 s per server here (both in parallel:
:func:`start_pair`); the pair takes ~7.5 GiB.

Nothing here imports vLLM: the server is a child process in its own venv (:class:`ManagedProcess`).
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import httpx

from .processes import REPO_ROOT, ManagedProcess, free_port

__all__ = [
    "CPU_BLOCK",
    "FAST_NAME",
    "FAST_WINDOW",
    "MODEL_DIR",
    "MODEL_STAMP",
    "SLOW_NAME",
    "SLOW_WINDOW",
    "VLLM_HEALTH_TIMEOUT_S",
    "VLLM_PYTHON",
    "VllmPair",
    "reset_prefix_cache",
    "start_pair",
    "start_vllm",
]

FAST_WINDOW, SLOW_WINDOW = 4_096, 16_384
FAST_NAME, SLOW_NAME = "fast-tiny", "slow-tiny"
#: vLLM's default KV block on CPU, tokens (only whole blocks are reused from the prefix cache).
CPU_BLOCK = 128
VLLM_PYTHON = REPO_ROOT / ".venv-vllm" / "bin" / "python"
#: Absolute: vLLM runs in a temporary directory, and reads a relative path as a hub repo id.
MODEL_DIR = (REPO_ROOT / os.environ.get("KVWARM_TINY_MODEL_DIR", ".kvwarm-run/tiny-llama")).resolve()
#: Written last by ``tests/vllm/tiny_model.py``: its presence means the model directory is complete.
MODEL_STAMP = "kvwarm-tiny-model.stamp"
#: vLLM CPU imports torch and compiles nothing (--enforce-eager), but a cold start on a busy
#: 2-core machine has been seen near a minute.
VLLM_HEALTH_TIMEOUT_S = 240.0
MAX_NUM_SEQS = 8
RESET_DEADLINE_S = 30.0


def start_vllm(name: str, window: int, core: int, workdir: Path, *, model_dir: Path = MODEL_DIR,
               python: Path = VLLM_PYTHON, scheduling_policy: str | None = None) -> ManagedProcess:
    """One real vLLM OpenAI server on a free port serving ``model_dir`` as ``name`` with
    ``--max-model-len window``, pinned to CPU ``core``; returned healthy (``.base_url`` has no ``/v1``).
    ``scheduling_policy``: vLLM's ``--scheduling-policy`` (``None``: its default, fcfs)."""
    port = free_port()
    cmd = [
        str(python), "-m", "vllm.entrypoints.openai.api_server",
        "--model", str(model_dir), "--served-model-name", name,
        "--load-format", "dummy", "--enforce-eager",
        "--enable-prefix-caching", "--enable-prompt-tokens-details",
        "--max-model-len", str(window), "--max-num-seqs", str(MAX_NUM_SEQS),
        # requests with `tools` (BFCL sessions) default to tool_choice "auto", which vLLM refuses without a
        # parser; hermes is Qwen2.5's <tool_call> format, the layout tiny_model.py's chat template renders
        "--enable-auto-tool-choice", "--tool-call-parser", "hermes",
        "--host", "127.0.0.1", "--port", str(port),
        *(["--scheduling-policy", scheduling_policy] if scheduling_policy else []),
    ]
    env = dict(os.environ)
    for key in ("PYTHONPATH", "VIRTUAL_ENV"):
        env.pop(key, None)  # the server runs in its own venv, not the caller's
    env.update({
        "VLLM_CPU_KVCACHE_SPACE": "1",
        "VLLM_CPU_OMP_THREADS_BIND": str(core),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "VLLM_NO_USAGE_STATS": "1",
        "DO_NOT_TRACK": "1",
        "VLLM_SERVER_DEV_MODE": "1",  # serves POST /reset_prefix_cache
        "PYTHONUNBUFFERED": "1",
    })
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    base_url = f"http://127.0.0.1:{port}"
    return ManagedProcess(
        f"vllm[{name}]", cmd, health_url=base_url + "/health", log_path=workdir / f"vllm-{name}-{port}.log",
        env=env, cwd=workdir, health_timeout_s=VLLM_HEALTH_TIMEOUT_S, stop_timeout_s=20.0,
        base_url=base_url, port=port,
    ).start()


@dataclass(frozen=True)
class VllmPair:
    """The two servers of the tier: ``fast`` (window 4,096, core 0, vLLM's default fcfs scheduling) and
    ``slow`` (16,384, core 1, ``--scheduling-policy priority``: the plugin's warms go behind live requests)."""

    fast: ManagedProcess
    slow: ManagedProcess
    startup_s: float  # wall seconds until both answered /health

    def stop(self) -> None:
        for server in (self.fast, self.slow):
            server.stop()


def start_pair(workdir: Path, *, model_dir: Path = MODEL_DIR, python: Path = VLLM_PYTHON) -> VllmPair:
    """Start fast and slow in parallel; if either fails, stop the other and raise the first error."""
    began = time.monotonic()
    with ThreadPoolExecutor(2) as pool:
        futures = {
            "fast": pool.submit(start_vllm, FAST_NAME, FAST_WINDOW, 0, workdir, model_dir=model_dir, python=python),
            "slow": pool.submit(start_vllm, SLOW_NAME, SLOW_WINDOW, 1, workdir, model_dir=model_dir, python=python,
                                scheduling_policy="priority"),
        }
        servers: dict[str, ManagedProcess] = {}
        errors: list[BaseException] = []
        for key, future in futures.items():
            try:
                servers[key] = future.result()
            except Exception as exc:  # noqa: BLE001 - stop the other one, then raise
                errors.append(exc)
    if errors:
        for server in servers.values():
            server.stop()
        raise errors[0]
    return VllmPair(fast=servers["fast"], slow=servers["slow"], startup_s=time.monotonic() - began)


def reset_prefix_cache(server: ManagedProcess, deadline_s: float = RESET_DEADLINE_S) -> None:
    """Empty a server's prefix cache: ``POST /reset_prefix_cache`` (vLLM in dev mode, and the
    emulator). vLLM refuses while a request still holds blocks, so this retries until ``deadline_s``."""
    deadline = time.monotonic() + deadline_s
    while True:
        response = httpx.post(server.base_url + "/reset_prefix_cache", timeout=30)
        if response.status_code == 200 or time.monotonic() > deadline:
            response.raise_for_status()
            return
        time.sleep(0.2)

"""Emulated vLLM backends as child processes, and their runtime fault switch.

:func:`start_emulator` runs ``python -m litellm_kvwarm.lab.emulator`` on a free port and returns
it healthy; :func:`set_faults` / :func:`clear_faults` talk to a running one's
``/emulator/faults`` route (the emulator's own test hook, no vLLM counterpart).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Mapping, Sequence

import httpx

from .managed import EMULATOR_HEALTH_PATH, ManagedProcess, child_env, free_port, workdir_for

__all__ = ["EMULATOR_FAULTS_PATH", "clear_faults", "set_faults", "start_emulator"]

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
    "server": "--server",
    "admission_limit_tokens": "--admission-limit-tokens",
    "max_total_tokens": "--max-total-tokens",
    "parallel": "--parallel",
    "loaded_context_tokens": "--loaded-context-tokens",
    "scheduling_policy": "--scheduling-policy",
    "max_num_batched_tokens": "--max-num-batched-tokens",
    "prefill_order": "--prefill-order",
    "chat_template_mode": "--chat-template-mode",
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
    ``hide_max_model_len=True``, ``render_response_format=True``; another server's length limits
    and error shapes: ``server="tgi"`` (``"sglang"``, ``"llamacpp"``, ``"lmstudio"``; default
    vLLM's) -> ``--server``, with that server's own limit: ``admission_limit_tokens=`` (sglang),
    ``max_total_tokens=`` (tgi), ``parallel=`` (llamacpp), ``loaded_context_tokens=`` (lmstudio).
    vLLM's scheduling: ``scheduling_policy="priority"`` (or ``"fcfs"``, the default, which refuses
    a non-zero ``priority`` with 400) -> ``--scheduling-policy``; ``max_num_batched_tokens=N``
    (prefill chunk, tokens) -> ``--max-num-batched-tokens``; ``chat_template_mode="qwen3"`` (or
    ``"plain"``, the default) -> ``--chat-template-mode``.
    ``.base_url`` is ``http://127.0.0.1:PORT`` (no ``/v1``).

    Raises:
        TypeError: an unknown flag.
        ProcessError: the emulator exited or was not healthy in ``health_timeout_s``.
    """
    unknown = set(flags) - set(_EMULATOR_FLAGS)
    if unknown:
        raise TypeError(f"start_emulator: unknown flag(s) {sorted(unknown)}; known: {sorted(_EMULATOR_FLAGS)}")
    port = port or free_port()
    work = workdir_for(workdir, "kvwarm-emulator-")
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
        env=child_env(env),
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

"""The processes one demo arm runs on, and what their request logs say.

:func:`start_stack` starts the ``fast`` and ``slow`` emulators (:mod:`.settings`: windows, prefill and
decode rates, the time scale) and ``litellm --config`` with groups ``fast`` / ``slow``,
``context_window_fallbacks`` ``fast -> slow``, ``num_retries: 0`` and, when the arm runs the plugin,
``litellm_kvwarm.proxy_handler_instance`` with the arm's ``KVWARM_*`` settings.  Every process is
registered on the caller's ``ExitStack`` so it is stopped however the arm ends.  :func:`chat_entries`
and :func:`new_entries` read the emulators' logs (``GET /emulator/requests``) over HTTP.
"""

from __future__ import annotations

import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import httpx

from ..processes import BackendSpec, ManagedProcess, proxy_config, start_emulator, start_proxy
from .settings import (
    DECODE_TPS,
    FAST_GROUP,
    FAST_MODEL,
    FAST_PREFILL_TPS,
    FAST_WINDOW,
    LOG_SETTLE_S,
    SLOW_EMULATOR_ARGS,
    SLOW_GROUP,
    SLOW_MODEL,
    SLOW_PREFILL_TPS,
    SLOW_WINDOW,
    Arm,
    DemoOptions,
)

__all__ = ["GENERATION_ENDPOINTS", "Stack", "chat_entries", "is_generation", "new_entries", "start_stack"]


@dataclass
class Stack:
    """The running processes of one arm."""

    fast: ManagedProcess
    slow: ManagedProcess
    proxy: ManagedProcess

    def backends(self) -> dict[str, ManagedProcess]:
        return {FAST_GROUP: self.fast, SLOW_GROUP: self.slow}


def start_stack(arm: Arm, options: DemoOptions, workdir: Path, stack: ExitStack,
                say: Callable[[str], None]) -> Stack:
    """Start both emulators and the proxy; each is registered on ``stack`` to be stopped."""
    def started(process: ManagedProcess) -> ManagedProcess:
        stack.callback(process.stop)
        say(f"  {process.name} healthy on {process.base_url} in {process.startup_s:.1f}s")
        return process

    common = {"decode_tokens_per_s": DECODE_TPS, "time_scale": options.time_scale, "workdir": workdir}
    fast = started(start_emulator(FAST_MODEL, FAST_WINDOW, prefill_tokens_per_s=FAST_PREFILL_TPS,
                                  request_log=workdir / f"{arm.name}-fast.jsonl", **common))
    slow = started(start_emulator(SLOW_MODEL, SLOW_WINDOW, prefill_tokens_per_s=SLOW_PREFILL_TPS,
                                  request_log=workdir / f"{arm.name}-slow.jsonl", extra_args=SLOW_EMULATOR_ARGS,
                                  **common))
    config = proxy_config(
        {FAST_GROUP: [BackendSpec.of(fast, FAST_MODEL)], SLOW_GROUP: [BackendSpec.of(slow, SLOW_MODEL)]},
        callbacks=arm.plugin,
        env_vars=arm.env(options.time_scale) or None,
        router_settings={"num_retries": 0},
    )
    say("  starting litellm proxy (7-11 s) ...")
    proxy = started(start_proxy(config, workdir=workdir / f"proxy-{arm.name}"))
    return Stack(fast=fast, slow=slow, proxy=proxy)


#: The backend endpoints a replayed request (or its warm) reaches: chat and Messages (LiteLLM bridges
#: Messages to chat for ``hosted_vllm``) on ``/v1/chat/completions``, Responses on ``/v1/responses``.
GENERATION_ENDPOINTS = ("/v1/chat/completions", "/v1/responses")


def is_generation(entry: dict[str, Any]) -> bool:
    """A log entry of a chat completion or a Responses request (:data:`GENERATION_ENDPOINTS`)."""
    return any(str(entry.get("endpoint") or "").endswith(path) for path in GENERATION_ENDPOINTS)


def chat_entries(process: ManagedProcess, client: httpx.Client) -> list[dict[str, Any]]:
    """The emulator's (or tap's) chat-completion and Responses log entries, oldest first
    (``httpx.HTTPStatusError`` on a non-2xx)."""
    response = client.get(process.base_url + "/emulator/requests")
    response.raise_for_status()
    return [e for e in response.json()["requests"] if is_generation(e)]


def new_entries(stack: Stack, client: httpx.Client, seen: dict[str, int],
                 expect_served: bool) -> list[dict[str, Any]]:
    """Backend log entries since ``seen`` (waits briefly for the serving entry to land)."""
    deadline = time.monotonic() + LOG_SETTLE_S
    while True:
        entries = []
        fresh_counts = {}
        for group, process in stack.backends().items():
            logged = chat_entries(process, client)
            fresh_counts[group] = len(logged)
            entries += [dict(e, group=group) for e in logged[seen[group]:]]
        served = any(e.get("status") == 200 and e.get("stream") for e in entries)
        if served or not expect_served or time.monotonic() >= deadline:
            seen.update(fresh_counts)
            return sorted(entries, key=lambda e: e.get("ts") or 0)
        time.sleep(0.05)

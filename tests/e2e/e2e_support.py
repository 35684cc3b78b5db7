"""Shared helpers for end-to-end tests: real emulator processes, a real ``litellm --config`` proxy.

Nothing is mocked here: every request crosses real sockets into real processes, and
what each backend received is read back from its own request log (``/emulator/requests``).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from litellm_kvwarm.lab.processes import BackendSpec, ManagedProcess, proxy_config, start_emulator, start_proxy



@contextmanager
def stopped_at_exit(processes: dict[str, ManagedProcess]) -> Iterator[dict[str, ManagedProcess]]:
    """``processes`` (filled inside the block), every one stopped when the block ends, a failed start included."""
    try:
        yield processes
    finally:
        for process in processes.values():
            process.stop()


def backend_requests(emulator: ManagedProcess, endpoint: str | None = "/v1/chat/completions") -> list[dict[str, Any]]:
    """Requests the emulator received (optionally only one endpoint), oldest first."""
    rows = httpx.get(emulator.base_url + "/emulator/requests", timeout=10).json()["requests"]
    return [r for r in rows if endpoint is None or r.get("endpoint") == endpoint]


def clear_backends(*emulators: ManagedProcess) -> None:
    for emulator in emulators:
        httpx.delete(emulator.base_url + "/emulator/requests", timeout=10).raise_for_status()


def chat(proxy: ManagedProcess, body: dict[str, Any], *, headers: dict[str, str] | None = None, timeout: float = 60) -> httpx.Response:
    """POST /v1/chat/completions through the proxy with its master key."""
    all_headers = {"Authorization": f"Bearer {proxy.master_key}"}
    all_headers.update(headers or {})
    return httpx.post(proxy.base_url + "/v1/chat/completions", json=body, headers=all_headers, timeout=timeout)


def post_read(proxy: ManagedProcess, path: str, body: dict[str, Any], *, timeout: float = 120) -> tuple[int, str]:
    """POST ``body`` to ``path`` through the proxy with its master key; a streamed answer is read to
    its end. Returns (status, body text)."""
    headers = {"Authorization": f"Bearer {proxy.master_key}"}
    with httpx.stream("POST", proxy.base_url + path, json=body, headers=headers, timeout=timeout) as r:
        return r.status_code, r.read().decode()


def tokenize_count(emulator: ManagedProcess, model: str, messages: list[dict[str, Any]], **extra: Any) -> int:
    body = {"model": model, "messages": messages, **extra}
    response = httpx.post(emulator.base_url + "/tokenize", json=body, timeout=30)
    response.raise_for_status()
    return int(response.json()["count"])


def messages_with_exact_tokens(emulator: ManagedProcess, model: str, n: int) -> list[dict[str, Any]]:
    """One user message whose rendered chat prompt is exactly ``n`` tokens on ``emulator``
    (searched with the backend's own ``/tokenize``)."""
    # everyday English words: ~5 characters per token, like prose (the routing estimate reads
    # characters / 4, so it must stay below the window here, as it would for real chat text)
    words = "The quick brown fox jumps over the lazy dog while the river keeps running to the sea.".split()

    def build(k: int, pad: str = "") -> list[dict[str, Any]]:
        text = " ".join(words[i % len(words)] for i in range(k)) + pad
        return [{"role": "user", "content": text}]

    lo, hi = 0, n
    while lo < hi:  # largest k with count <= n
        mid = (lo + hi + 1) // 2
        if tokenize_count(emulator, model, build(mid)) <= n:
            lo = mid
        else:
            hi = mid - 1
    msgs = build(lo)
    pad = ""
    while tokenize_count(emulator, model, msgs) < n:
        pad += " x"
        msgs = build(lo, pad)
    assert tokenize_count(emulator, model, msgs) == n, "could not hit the exact token count"
    return msgs


def long_text(chars: int) -> str:
    """Deterministic English-like text of exactly ``chars`` characters."""
    seed = "The quick brown fox jumps over the lazy dog while the river keeps running to the sea. "
    return (seed * (chars // len(seed) + 1))[:chars]


CHAT, MESSAGES, RESPONSES = "/v1/chat/completions", "/v1/messages", "/v1/responses"


def start_beside_litellm_alone(tmp_path_factory: Any, name: str, emulators: dict[str, tuple[str, int, str]], chain: list[str],
                               processes: dict[str, ManagedProcess], router_settings: dict[str, Any] | None = None) -> None:
    """Into ``processes`` (use inside :func:`stopped_at_exit`): one emulator per group (``group: (served model, window,
    vLLM version)``, time scale 0, 16-token blocks) and two proxies over them, ``"with"`` the plugin and ``"without"``
    it, the same fallbacks (``fast`` → ``chain``) and ``router_settings``; warm-ahead off."""
    work = tmp_path_factory.mktemp(name)
    for group, (served, window, version) in emulators.items():
        processes[group] = start_emulator(served, window, workdir=work, vllm_version=version, time_scale=0, block_size=16)
    groups = {group: [BackendSpec.of(processes[group], served)] for group, (served, _, _) in emulators.items()}
    for proxy, callbacks in (("with", ["litellm_kvwarm.proxy_handler_instance"]), ("without", False)):
        config = proxy_config(groups, fallbacks=[{"fast": chain}], callbacks=callbacks, env_vars={"KVWARM_WARM_AHEAD": "false"},
                              router_settings=router_settings)
        processes[proxy] = start_proxy(config, workdir=tmp_path_factory.mktemp(f"{name}-{proxy}"))


def api_request(api: str, chars: int, out: int, stream: bool = False) -> tuple[str, str, dict[str, Any]]:
    """(proxy path, backend path, body) on ``api`` (``"chat"``, ``"messages"``: bridged to the backend's chat,
    ``"responses"``) to group ``fast``: :func:`long_text` of ``chars`` characters asking ``out`` output tokens."""
    text = long_text(chars)
    if api == "messages":
        return MESSAGES, CHAT, {"model": "fast", "max_tokens": out, "stream": stream, "messages": [{"role": "user", "content": text}]}
    if api == "responses":
        return RESPONSES, RESPONSES, {"model": "fast", "max_output_tokens": out, "stream": stream, "input": text}
    return CHAT, CHAT, {"model": "fast", "max_tokens": out, "stream": stream, "messages": [{"role": "user", "content": text}]}


#: ``general_settings`` entry that makes a proxy read its keys from :func:`start_proxy_with_keys`'s ``keys``.
CUSTOM_AUTH = {"custom_auth": "auth_fixture.user_api_key_auth"}


def start_proxy_with_keys(config: dict[str, Any], workdir: Path, keys: dict[str, dict[str, Any]]) -> ManagedProcess:
    """Start a proxy (``config`` from ``proxy_config(..., general_settings=CUSTOM_AUTH)``) in
    ``workdir/proxy`` whose virtual keys are ``keys`` (raw key → ``team_id``/``models``/...), served by
    ``tests/e2e/auth_fixture.py`` (the tests' one mock: see the README)."""
    pdir = workdir / "proxy"
    pdir.mkdir()
    shutil.copy(Path(__file__).resolve().parent / "auth_fixture.py", pdir / "auth_fixture.py")
    return start_proxy(config, workdir=pdir, env={"KVWARM_TEST_KEYS": json.dumps(keys)})

"""Malformed or unusual requests: the plugin never changes what LiteLLM alone would answer.

Each case is sent to two real proxies over the same emulated backends, one with the
plugin and one without; the status codes must be equal, and the plugin's proxy must not
log an internal error from the plugin.
"""

from __future__ import annotations

import httpx
import pytest

from litellm_kvwarm.lab.processes import BackendSpec, proxy_config, start_emulator, start_proxy

from e2e_support import clear_backends

pytestmark = pytest.mark.e2e

BIG_TOOL = {
    "type": "function",
    "function": {
        "name": "huge",
        "description": "d" * 2_000,
        "parameters": {
            "type": "object",
            "properties": {f"field_{i}": {"type": "string", "description": "x" * 200} for i in range(400)},
        },
    },
}

CASES = {
    "messages-not-a-list": ("/v1/chat/completions", {"model": "fast", "messages": "hello"}),
    "messages-missing": ("/v1/chat/completions", {"model": "fast"}),
    "unknown-part-type": (
        "/v1/chat/completions",
        {"model": "fast", "messages": [{"role": "user", "content": [{"type": "hologram", "data": 1}]}], "max_tokens": 4},
    ),
    "image-part": (
        "/v1/chat/completions",
        {
            "model": "fast",
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "what is this"}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]}
            ],
            "max_tokens": 4,
        },
    ),
    "enormous-tool-schema": (
        "/v1/chat/completions",
        {"model": "fast", "messages": [{"role": "user", "content": "hi"}], "tools": [BIG_TOOL], "max_tokens": 4},
    ),
    "missing-max-tokens": ("/v1/chat/completions", {"model": "fast", "messages": [{"role": "user", "content": "hi"}]}),
    "max-tokens-string": ("/v1/chat/completions", {"model": "fast", "messages": [{"role": "user", "content": "hi"}], "max_tokens": "many"}),
    "prompt-token-ids": ("/v1/completions", {"model": "fast", "prompt": [101, 102, 103, 104], "max_tokens": 4}),
    "prompt-string": ("/v1/completions", {"model": "fast", "prompt": "Once upon a time", "max_tokens": 4}),
    "unknown-group": ("/v1/chat/completions", {"model": "nope", "messages": [{"role": "user", "content": "hi"}]}),
}


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    work = tmp_path_factory.mktemp("bad-input")
    fast = start_emulator("fast-8b", 16_384, workdir=work, time_scale=0)
    slow = start_emulator("slow-27b", 131_072, workdir=work, time_scale=0)
    groups = {"fast": [BackendSpec.of(fast, "fast-8b")], "slow": [BackendSpec.of(slow, "slow-27b")]}
    with_plugin = start_proxy(proxy_config(groups), workdir=work / "with")
    try:
        without = start_proxy(proxy_config(groups, callbacks=False), workdir=work / "without")
    except Exception:
        with_plugin.stop()
        raise
    yield {"fast": fast, "slow": slow, "with": with_plugin, "without": without}
    for proc in (with_plugin, without, fast, slow):
        proc.stop()


def send(proxy, path, body):
    return httpx.post(proxy.base_url + path, json=body, headers={"Authorization": f"Bearer {proxy.master_key}"}, timeout=60)


@pytest.mark.parametrize("case", sorted(CASES))
def test_same_answer_with_and_without_plugin(stack, case):
    path, body = CASES[case]
    clear_backends(stack["fast"], stack["slow"])
    with_plugin = send(stack["with"], path, body)
    without = send(stack["without"], path, body)
    assert with_plugin.status_code == without.status_code, (with_plugin.text[:300], without.text[:300])


def test_plugin_logged_no_internal_error(stack):
    for path, body in CASES.values():
        send(stack["with"], path, body)
    log = stack["with"].log_path.read_text(errors="replace")
    assert "skipped after an internal error" not in log

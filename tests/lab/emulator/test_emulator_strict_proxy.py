"""A strict, key-guarded emulator behind a real LiteLLM proxy: what LiteLLM's ``hosted_vllm``
provider sends for a normal chat request passes ``--strict-fields``.

Observed on LiteLLM 1.108.7 (captured at a plain HTTP server): a plain chat request reaches the
backend as ``{"model", "messages", "stream": false}`` (``stream`` is added), with
``max_tokens`` / ``temperature`` passed through when the client sends them, and
``Authorization: Bearer <the deployment's api_key>``.
"""

from __future__ import annotations

import httpx
import pytest

from litellm_kvwarm.lab.processes import BackendSpec, proxy_config, start_emulator, start_proxy

pytestmark = pytest.mark.e2e

BACKEND_KEY = "sk-backend-only"


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    work = tmp_path_factory.mktemp("strict")
    emulator = start_emulator("fast-8b", 16_384, workdir=work, time_scale=0, strict_fields=True, api_key=BACKEND_KEY)
    try:
        deployment = BackendSpec("fast-8b", emulator.base_url + "/v1", api_key=BACKEND_KEY)
        config = proxy_config({"fast": [deployment]}, callbacks=False, router_settings={"num_retries": 0})
        with start_proxy(config, workdir=work) as proxy:
            yield emulator, proxy
    finally:
        emulator.stop()


def test_litellm_hosted_vllm_requests_pass_strict_fields(stack):
    emulator, proxy = stack
    httpx.delete(emulator.base_url + "/emulator/requests", trust_env=False)
    headers = {"Authorization": f"Bearer {proxy.master_key}"}
    messages = [{"role": "user", "content": "What is the capital of France?"}]
    with httpx.Client(base_url=proxy.base_url, headers=headers, timeout=60.0, trust_env=False) as client:
        plain = client.post("/v1/chat/completions", json={"model": "fast", "messages": messages})
        assert plain.status_code == 200, plain.text
        assert plain.json()["choices"][0]["message"]["content"]
        options = client.post("/v1/chat/completions", json={
            "model": "fast", "messages": messages, "max_tokens": 5, "temperature": 0.2, "stream": True,
            "stream_options": {"include_usage": True},
        })
        assert options.status_code == 200, options.text
        assert "data: [DONE]" in options.text
        # the same setup refuses what OpenAI would refuse: strict mode is really on
        salted = client.post("/v1/chat/completions", json={"model": "fast", "messages": messages, "cache_salt": "t"})
        assert salted.status_code == 400
        assert "Unrecognized request argument supplied: cache_salt" in salted.json()["error"]["message"]
    log = httpx.get(emulator.base_url + "/emulator/requests", trust_env=False).json()["requests"]
    assert [(e["status"], e["stream"], e["max_tokens"]) for e in log] == [(200, False, None), (200, True, 5), (400, False, None)]
    assert log[2]["error"] == "Unrecognized request argument supplied: cache_salt"

"""A real ``litellm --config`` proxy (LiteLLM 1.108.7, no plugin) in front of the emulator: a
``hosted_vllm/...`` deployment answers ``POST /v1/responses`` through the emulator's own
``/v1/responses`` (LiteLLM's ``HostedVLLMResponsesAPIConfig`` sends it there natively), streamed
and not, with the deployment's key and fields OpenAI defines (the emulator runs key-guarded and
``--strict-fields``).

Observed on LiteLLM 1.108.7: the body reaches the backend as ``{"model": <served name>, "input",
["instructions",] "max_output_tokens"[, "stream": true]}``, and a ``max_output_tokens`` below 16 is
raised to 16 on the way (``OpenAIResponsesAPIConfig._enforce_min_max_output_tokens``, OpenAI's
minimum, inherited by ``hosted_vllm``): the backend's budget is then 16, not what the client asked.
"""

from __future__ import annotations

import json

import httpx
import pytest

from litellm_kvwarm.lab.emulator.tokenizer import count_chat_tokens
from litellm_kvwarm.lab.processes import BackendSpec, proxy_config, start_emulator, start_proxy

pytestmark = pytest.mark.e2e

BACKEND_KEY = "sk-backend-only"
QUESTION = "Name three rivers of Europe."


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    work = tmp_path_factory.mktemp("responses")
    emulator = start_emulator("fast-8b", 16_384, workdir=work, time_scale=0, strict_fields=True, api_key=BACKEND_KEY)
    try:
        deployment = BackendSpec("fast-8b", emulator.base_url + "/v1", api_key=BACKEND_KEY)
        config = proxy_config({"fast": [deployment]}, callbacks=False, router_settings={"num_retries": 0})
        with start_proxy(config, workdir=work) as proxy:
            yield emulator, proxy
    finally:
        emulator.stop()


def emulator_log(emulator) -> list[dict]:
    return httpx.get(emulator.base_url + "/emulator/requests", trust_env=False).json()["requests"]


def test_responses_through_the_proxy_reach_the_emulators_responses_route(stack):
    emulator, proxy = stack
    httpx.delete(emulator.base_url + "/emulator/requests", trust_env=False)
    headers = {"Authorization": f"Bearer {proxy.master_key}"}
    with httpx.Client(base_url=proxy.base_url, headers=headers, timeout=60.0, trust_env=False) as client:
        plain = client.post("/v1/responses", json={"model": "fast", "input": QUESTION, "max_output_tokens": 5,
                                                   "instructions": "Be brief."})
        assert plain.status_code == 200, plain.text
        body = plain.json()
        assert body["object"] == "response" and body["status"] == "incomplete"
        text = body["output"][0]["content"][0]["text"]
        assert len(text.split()) == 16  # LiteLLM raised 5 to 16; filler words are one token each
        assert body["usage"]["output_tokens"] == 16 and body["usage"]["input_tokens"] > 0
        with client.stream("POST", "/v1/responses", json={"model": "fast", "input": QUESTION,
                                                          "max_output_tokens": 20, "stream": True}) as streamed:
            assert streamed.status_code == 200, streamed.read()
            payloads = [json.loads(line[len("data: "):]) for line in streamed.iter_lines()
                        if line.startswith("data: ") and line != "data: [DONE]"]
    types = [p["type"] for p in payloads]
    assert types[:2] == ["response.created", "response.in_progress"] and types[-1] == "response.completed"
    assert types.count("response.output_text.delta") == 20
    final = payloads[-1]["response"]
    assert final["usage"]["output_tokens"] == 20
    # the instructions became the system turn; without them the template's default system prompt
    assert body["usage"]["input_tokens"] == count_chat_tokens(
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": QUESTION}])
    assert final["usage"]["input_tokens"] == count_chat_tokens([{"role": "user", "content": QUESTION}])
    log = emulator_log(emulator)
    assert [(e["endpoint"], e["status"], e["stream"], e["max_tokens"], e["model"]) for e in log] == [
        ("/v1/responses", 200, False, 16, "fast-8b"), ("/v1/responses", 200, True, 20, "fast-8b")]
    assert log[0]["prompt_tokens"] == body["usage"]["input_tokens"]
    assert log[1]["prompt_tokens"] == final["usage"]["input_tokens"]
    assert not any(e["endpoint"] == "/v1/chat/completions" for e in log)  # not bridged through chat

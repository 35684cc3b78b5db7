"""``bounded_request`` over a pooled keep-alive connection that the backend has closed: a real HTTP/1.1
server (``tests/reset_upstream.py``) that answers the first request on each connection with ``keep-alive``
and then resets the connection (RST) when the next request arrives on it, or after sending only the
headers. That is what httpx meets when it reuses a connection the instant the server closes it for
idleness (uvicorn, vLLM's server, after 5 s: httpx keeps idle ones 5 s too); the differential run saw it once."""

from __future__ import annotations

import json

import httpx
import pytest
from reset_upstream import ResetsReusedConnections

from litellm_kvwarm.backend_call import SEND_ATTEMPTS, BackendCallError, bounded_request

MODELS = json.dumps({"object": "list", "data": [{"id": "fast-8b", "max_model_len": 16384}]}).encode()


async def test_a_call_on_a_connection_the_backend_reset_is_sent_again_on_a_new_one():
    with ResetsReusedConnections(MODELS) as server:
        async with httpx.AsyncClient(trust_env=False) as client:
            answers = [await bounded_request(client, "GET", server.base_url + "/v1/models", timeout_s=2.0) for _ in range(3)]
    # before: the second call raised BackendCallError("transport_error") (httpx's ReadError on the reset)
    assert [(a.status, json.loads(a.content)["data"][0]["max_model_len"]) for a in answers] == [(200, 16384)] * 3
    assert server.seen == [("/v1/models", "answered"), ("/v1/models", "reset"), ("/v1/models", "answered"),
                           ("/v1/models", "reset"), ("/v1/models", "answered")]
    assert server.connections == 3


async def test_a_post_is_sent_again_too_and_its_body_arrives_whole():
    with ResetsReusedConnections(MODELS) as server:
        async with httpx.AsyncClient(trust_env=False) as client:
            for _ in range(2):
                answer = await bounded_request(client, "POST", server.base_url + "/tokenize", timeout_s=2.0,
                                               json_body={"model": "fast-8b", "prompt": "x" * 3000})
                assert answer.status == 200
    assert [outcome for _, outcome in server.seen] == ["answered", "reset", "answered"]


async def test_a_failure_after_the_headers_is_not_sent_again():
    with ResetsReusedConnections(MODELS, second="headers") as server:
        async with httpx.AsyncClient(trust_env=False) as client:
            await bounded_request(client, "GET", server.base_url + "/metrics", timeout_s=2.0)
            with pytest.raises(BackendCallError) as raised:
                await bounded_request(client, "GET", server.base_url + "/metrics", timeout_s=2.0)
    assert raised.value.kind == "transport_error"
    assert [outcome for _, outcome in server.seen] == ["answered", "headers"] and server.connections == 1


async def test_a_backend_that_resets_every_connection_costs_the_attempts_and_then_fails():
    with ResetsReusedConnections(MODELS, first="reset") as server:
        async with httpx.AsyncClient(trust_env=False) as client:
            with pytest.raises(BackendCallError) as raised:
                await bounded_request(client, "GET", server.base_url + "/v1/models", timeout_s=2.0)
    assert raised.value.kind == "transport_error"
    assert server.seen == [("/v1/models", "reset")] * SEND_ATTEMPTS == [("/v1/models", "reset")] * 2

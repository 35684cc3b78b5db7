"""``bounded_request`` over a pooled keep-alive connection that the backend has closed: a real HTTP/1.1
server (asyncio streams) that answers the first request on each connection with ``keep-alive`` and then
resets the connection (RST) when the next request arrives on it, or after sending only the headers.
That is what httpx meets when it reuses a connection the instant the server closes it for idleness
(uvicorn, vLLM's server, after 5 s: httpx keeps idle ones 5 s too); the differential run saw it once."""

from __future__ import annotations

import asyncio
import json
import socket
import struct

import httpx
import pytest

from litellm_kvwarm.backend_call import SEND_ATTEMPTS, BackendCallError, bounded_request

MODELS = json.dumps({"object": "list", "data": [{"id": "fast-8b", "max_model_len": 16384}]}).encode()


class ResetsReusedConnections:
    """``second``: what a connection's second request meets: ``"reset"`` (RST before any byte of an
    answer) or ``"headers"`` (a 200 status line and headers promising a body, then RST). ``seen`` lists
    ``(path, outcome)`` per request, ``connections`` counts accepted connections."""

    def __init__(self, second: str = "reset") -> None:
        self.second = second
        self.seen: list[tuple[str, str]] = []
        self.connections = 0
        self._server: asyncio.AbstractServer | None = None

    async def __aenter__(self) -> "ResetsReusedConnections":
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.base_url = "http://127.0.0.1:%d" % self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc) -> None:
        self._server.close()
        await self._server.wait_closed()

    @staticmethod
    async def _request(reader: asyncio.StreamReader) -> str | None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError):
            return None
        length = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":", 1)[1])
        await reader.readexactly(length)
        return head.split(b" ")[1].decode()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        path = await self._request(reader)
        if path is None:
            writer.close()
            return
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: keep-alive\r\n"
                     b"content-length: %d\r\n\r\n%s" % (len(MODELS), MODELS))
        await writer.drain()
        self.seen.append((path, "answered"))
        path = await self._request(reader)
        if path is not None:
            self.seen.append((path, self.second))
            if self.second == "headers":
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 5000\r\n\r\n{")
                await writer.drain()
            writer.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.close()


async def test_a_call_on_a_connection_the_backend_reset_is_sent_again_on_a_new_one():
    async with ResetsReusedConnections() as server, httpx.AsyncClient(trust_env=False) as client:
        answers = [await bounded_request(client, "GET", server.base_url + "/v1/models", timeout_s=2.0) for _ in range(3)]
    # before: the second call raised BackendCallError("transport_error") (httpx's ReadError on the reset)
    assert [(a.status, json.loads(a.content)["data"][0]["max_model_len"]) for a in answers] == [(200, 16384)] * 3
    assert server.seen == [("/v1/models", "answered"), ("/v1/models", "reset"), ("/v1/models", "answered"),
                           ("/v1/models", "reset"), ("/v1/models", "answered")]
    assert server.connections == 3


async def test_a_post_is_sent_again_too_and_its_body_arrives_whole():
    async with ResetsReusedConnections() as server, httpx.AsyncClient(trust_env=False) as client:
        for _ in range(2):
            answer = await bounded_request(client, "POST", server.base_url + "/tokenize", timeout_s=2.0,
                                           json_body={"model": "fast-8b", "prompt": "x" * 3000})
            assert answer.status == 200
    assert [outcome for _, outcome in server.seen] == ["answered", "reset", "answered"]


async def test_a_failure_after_the_headers_is_not_sent_again():
    async with ResetsReusedConnections(second="headers") as server, httpx.AsyncClient(trust_env=False) as client:
        await bounded_request(client, "GET", server.base_url + "/metrics", timeout_s=2.0)
        with pytest.raises(BackendCallError) as raised:
            await bounded_request(client, "GET", server.base_url + "/metrics", timeout_s=2.0)
    assert raised.value.kind == "transport_error"
    assert [outcome for _, outcome in server.seen] == ["answered", "headers"] and server.connections == 1


async def test_a_backend_that_resets_every_connection_costs_the_attempts_and_then_fails():
    attempts = []

    async def reset_at_once(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        attempts.append(await ResetsReusedConnections._request(reader))
        writer.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.close()

    server = await asyncio.start_server(reset_at_once, "127.0.0.1", 0)
    try:
        async with httpx.AsyncClient(trust_env=False) as client:
            with pytest.raises(BackendCallError) as raised:
                await bounded_request(client, "GET", "http://127.0.0.1:%d/v1/models" % server.sockets[0].getsockname()[1],
                                      timeout_s=2.0)
    finally:
        server.close()
        await server.wait_closed()
    assert raised.value.kind == "transport_error"
    assert attempts == ["/v1/models"] * SEND_ATTEMPTS == ["/v1/models", "/v1/models"]

"""Shared helpers for the emulator tests: an in-process app on a ManualClock."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from litellm_kvwarm.lab.emulator.app import EmulatorState, create_app
from litellm_kvwarm.lab.emulator.clock import ManualClock
from litellm_kvwarm.lab.emulator.config import EmulatorConfig
from litellm_kvwarm.lab.sse import DONE, decode_payload, iter_payloads


class Emulator:
    """An in-process emulator: its HTTP client, its simulated clock and its state."""

    def __init__(self, client: httpx.AsyncClient, clock: ManualClock, state: EmulatorState) -> None:
        self.client = client
        self.clock = clock
        self.state = state

    async def chat(self, messages: list[dict[str, Any]], **body: Any) -> httpx.Response:
        payload = {"model": self.state.config.served_model_name, "messages": messages, **body}
        return await self.client.post("/v1/chat/completions", json=payload)

    async def requests(self) -> list[dict[str, Any]]:
        return (await self.client.get("/emulator/requests")).json()["requests"]


@pytest.fixture
def emulator_factory():
    """``async with emulator_factory(max_model_len=..., **config) as emu``; ManualClock, time_scale 1."""

    @contextlib.asynccontextmanager
    async def make(clock: ManualClock | None = None, **overrides: Any) -> AsyncIterator[Emulator]:
        settings = {"served_model_name": "fast", "max_model_len": 4096, **overrides}
        clock = clock or ManualClock()
        app = create_app(EmulatorConfig(**settings), clock)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://emulator") as client:
            yield Emulator(client, clock, app.state.emulator)

    return make


def sse_events(text: str) -> list[Any]:
    """The ``data:`` payloads of an SSE body, JSON-decoded (``"[DONE]"`` kept as a string, and anything
    after it too), read with the lab's SSE reader; the emulator's framing is asserted on the way: every
    event is exactly one ``data: `` line ended by a blank line."""
    blocks = [block for block in text.split("\n\n") if block.strip()]
    for block in blocks:
        assert block.startswith("data: ") and "\n" not in block, block
    assert text.endswith("\n\n"), text[-200:]
    payloads = list(iter_payloads(text.splitlines()))
    assert len(payloads) == len(blocks)
    return [payload if payload == DONE else decode_payload(payload) for payload in payloads]

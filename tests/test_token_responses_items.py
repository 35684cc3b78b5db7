"""Responses ``input`` items vLLM does not render (hosted-tool items an OpenAI client replays: MCP calls
and tool lists, approval requests, image generation, file search, computer and code-interpreter calls,
local shell calls and their outputs, unknown types): the routing estimate of a vLLM-served group counts
what is rendered, the safe estimate keeps counting every item (conservative).

Truths: qwen2.5 tokens of LiteLLM 1.108.7's own translation of each body
(:func:`litellm_kvwarm.litellm_bridge.chat_payload`) rendered in the official Qwen2.5 template and counted
with its tokenizer (``litellm_kvwarm.lab.calibration``, as ``tests/lab`` does): 46 tokens for every body."""

from __future__ import annotations

import pytest

from litellm_kvwarm.token_responses_items import rendered_input, vllm_served
from litellm_kvwarm.tokens import calibrated_estimator, estimate_request

QWEN = calibrated_estimator("qwen2.5")
PAGE = " ".join(f"Section {i}: the parser reads the header, checks the length field and returns the payload." for i in range(300))
#: qwen2.5 truth of every body below (the item renders nothing): the user turn, the question, the generation prompt
TRUTH = 46
HOSTED_ITEMS = {
    "mcp_call": {"type": "mcp_call", "id": "mcp_1", "server_label": "docs", "name": "fetch", "arguments": "{\"q\":\"parser\"}", "output": PAGE},
    "mcp_list_tools": {"type": "mcp_list_tools", "id": "mcpl_1", "server_label": "docs",
                       "tools": [{"name": f"tool_{i}", "description": PAGE[:400], "input_schema": {"type": "object"}} for i in range(15)]},
    "mcp_approval_request": {"type": "mcp_approval_request", "id": "mcpr_1", "server_label": "docs", "name": "fetch", "arguments": PAGE},
    "image_generation_call": {"type": "image_generation_call", "id": "ig_1", "status": "completed", "result": "iVBORw0KGgo" + "A" * 20000},
    "file_search_call": {"type": "file_search_call", "id": "fs_1", "status": "completed", "queries": ["parser"],
                         "results": [{"file_id": f"file_{i}", "filename": "p.md", "score": 0.9, "text": PAGE[:600]} for i in range(40)]},
    "computer_call": {"type": "computer_call", "id": "cc_1", "call_id": "call_1", "status": "completed",
                      "action": {"type": "type", "text": PAGE}, "pending_safety_checks": []},
    "code_interpreter_call": {"type": "code_interpreter_call", "id": "ci_1", "status": "completed", "container_id": "cntr_1",
                              "code": PAGE, "outputs": [{"type": "logs", "logs": PAGE}]},
    "local_shell_call_output": {"type": "local_shell_call_output", "id": "call_2", "output": PAGE},
    "unknown_item": {"type": "tool_search_call", "id": "ts_1", "status": "completed", "query": PAGE},
}


def _body(item: dict) -> dict:
    return {"model": "m", "input": [{"role": "user", "content": "Use the tool."}, item,
                                    {"role": "user", "content": "Summarise what the tool found."}]}


@pytest.mark.parametrize("name", sorted(HOSTED_ITEMS))
def test_hosted_tool_items_vllm_does_not_render_leave_the_routing_estimate(name):
    """Before: 1,154-12,045 routing tokens for a 46-token prompt (code_interpreter_call 12,045, mcp_call
    6,052, file_search_call 5,022). After: the prompt's own 43; safe unchanged (still every item)."""
    body = _body(HOSTED_ITEMS[name])
    sent_as = estimate_request(body, call_kind="responses", estimator=QWEN)
    vllm = estimate_request(body, call_kind="responses", estimator=QWEN, bridged=True)
    assert sent_as.routing > 20 * TRUTH
    assert 0.85 * TRUTH <= vllm.routing <= 1.1 * TRUTH, vllm.routing
    assert vllm.safe == sent_as.safe >= TRUTH


def test_items_vllm_renders_keep_the_estimate_and_the_body():
    """Messages, calls and their outputs, reasoning, a web search (LiteLLM writes it as assistant text) and
    an item of another type that carries ``content`` (a message of it) are rendered: no copy, no change."""
    body = {"input": [{"role": "user", "content": "hi"}, {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
                      {"type": "function_call_output", "call_id": "c", "output": "ok"}, {"type": "reasoning", "summary": []},
                      {"type": "web_search_call", "id": "ws", "status": "completed"}, {"type": "computer_call_output", "call_id": "c2"},
                      {"type": "mystery", "content": "kept as a message"}, "not an item"]}
    assert rendered_input(body) is None
    assert estimate_request(body, call_kind="responses", estimator=QWEN, bridged=True) == estimate_request(body, call_kind="responses", estimator=QWEN)


@pytest.mark.parametrize("provider, api_base, served", [
    ("hosted_vllm", "http://vllm:8000/v1", True), ("openai", "http://vllm:8000/v1", True), (None, None, True),
    ("openai", None, False), ("openai", "https://api.openai.com/v1", False), ("azure", "https://x.openai.azure.com", False)])
def test_a_deployment_reaches_vllm_unless_openai_hosts_it(provider, api_base, served):
    assert vllm_served(provider, api_base) is served


@pytest.mark.parametrize("model, api_base, escalated", [("hosted_vllm/fast-model", "http://fast:8000/v1", False),
                                                        ("openai/gpt-4.1-mini", None, True)])
async def test_a_responses_request_whose_hosted_items_fill_the_window_stays_on_its_vllm_group(monkeypatch, model, api_base, escalated):
    """End to end: a 12,000-token code-interpreter item before a short question, sent to a 4,096-token group.
    Served by vLLM: the backend renders ~46 tokens, so it stays (before: escalated on 12,045 routing tokens);
    served by OpenAI itself (which renders its hosted items): escalated, as before."""
    from test_hook_adapters import CHAIN, FakeRouter, Key, handler

    from litellm_kvwarm.meta import ESTIMATE_KEY

    router = FakeRouter({"fast": 4096, "slow": 32768}, chains=CHAIN)
    router.model_list[0]["litellm_params"].update(model=model, api_base=api_base)
    h, _ = handler(router, monkeypatch)
    data = await h.async_pre_call_hook(Key(), None, {**_body(HOSTED_ITEMS["code_interpreter_call"]), "model": "fast"}, "aresponses")
    estimate = data["litellm_metadata"][ESTIMATE_KEY] if "litellm_metadata" in data else data["metadata"][ESTIMATE_KEY]
    assert (estimate["routing"] > 4096) is escalated and estimate["safe"] > 4096
    if not escalated:
        assert estimate["routing"] < 100 and data["model"] == "fast"

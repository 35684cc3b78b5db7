"""Anthropic Messages blocks LiteLLM's chat bridge drops (``search_result``, a ``document`` with a
text source, server tool results, MCP blocks, ``container_upload``, and the parts of a
``tool_result`` it cannot carry) never reach a bridged backend: the routing estimate of a bridged
request counts them as sent (nothing), the safe estimate keeps counting them (conservative).

Truths: qwen2.5 tokens of LiteLLM 1.108.7's own translation of each body
(:func:`litellm_kvwarm.litellm_bridge.chat_payload`) rendered in the official Qwen2.5 template and
counted with its tokenizer (``litellm_kvwarm.lab.calibration``, as ``tests/lab`` does)."""

from __future__ import annotations

import json

import pytest

from litellm_kvwarm.litellm_bridge import chat_payload
from litellm_kvwarm.token_bridge import bridged_messages
from litellm_kvwarm.tokens import calibrated_estimator, estimate_request

QWEN = calibrated_estimator("qwen2.5")
PAGE = " ".join(f"Section {i}: the parser reads the header, checks the length field and returns the payload." for i in range(300))
CALL = {"type": "tool_use", "id": "toolu_1", "name": "search", "input": {"q": "parser"}}


def _body(*messages: dict) -> dict:
    return {"model": "m", "max_tokens": 100, "messages": list(messages)}


def _assistant(*blocks: dict) -> tuple[dict, ...]:
    return ({"role": "user", "content": "Look it up."}, {"role": "assistant", "content": [*blocks, {"type": "text", "text": "Done."}]},
            {"role": "user", "content": "Summarise it."})


#: name → (body, qwen2.5 truth of what the bridge sends)
DROPPED = {
    "search_result": (_body({"role": "user", "content": [
        {"type": "search_result", "source": "https://docs.test/p", "title": "Parser", "content": [{"type": "text", "text": PAGE}]},
        {"type": "text", "text": "Summarise the search result."}]}), 36),
    "document_text_source": (_body({"role": "user", "content": [
        {"type": "document", "title": "notes", "source": {"type": "text", "media_type": "text/plain", "data": PAGE}},
        {"type": "text", "text": "Summarise the document."}]}), 35),
    "document_content_source": (_body({"role": "user", "content": [
        {"type": "document", "source": {"type": "content", "content": [{"type": "text", "text": PAGE}]}},
        {"type": "text", "text": "Summarise the document."}]}), 35),
    "web_fetch_result": (_body(*_assistant(
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_fetch", "input": {"url": "https://docs.test/p"}},
        {"type": "web_fetch_tool_result", "tool_use_id": "srvtoolu_1", "content": {"type": "web_fetch_result", "url": "https://docs.test/p",
         "content": {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": PAGE}}}})), 50),
    "code_execution_result": (_body(*_assistant(
        {"type": "server_tool_use", "id": "srvtoolu_2", "name": "bash_code_execution", "input": {"command": "cat log"}},
        {"type": "bash_code_execution_tool_result", "tool_use_id": "srvtoolu_2",
         "content": {"type": "bash_code_execution_result", "stdout": PAGE, "stderr": "", "return_code": 0}})), 50),
    "mcp_blocks": (_body(*_assistant(
        {"type": "mcp_tool_use", "id": "mcptoolu_1", "name": "fetch", "server_name": "docs", "input": {"q": "parser"}},
        {"type": "mcp_tool_result", "tool_use_id": "mcptoolu_1", "is_error": False, "content": [{"type": "text", "text": PAGE}]})), 50),
    "container_upload": (_body({"role": "user", "content": [{"type": "container_upload", "file_id": "file_011"},
                                                            {"type": "text", "text": "Analyse the uploaded file."}]}), 35),
    "tool_result_search_parts": (_body({"role": "user", "content": "Search."}, {"role": "assistant", "content": [CALL]},
                                       {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": [
                                           {"type": "search_result", "source": "u", "title": "t", "content": [{"type": "text", "text": PAGE}]},
                                           {"type": "text", "text": "1 result"}]}]}), 70),
    "tool_result_lone_dict": (_body({"role": "user", "content": "Search."}, {"role": "assistant", "content": [CALL]},
                                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                                                  "content": {"type": "text", "text": PAGE}}]}), 67),
}


@pytest.mark.parametrize("name", sorted(DROPPED))
def test_blocks_the_chat_bridge_drops_are_not_in_the_bridged_routing_estimate(name):
    """Known open item of the last round: a 6,000-token page in a block the bridge drops read ~6,000
    routing tokens on a ~40-token bridged prompt (the request went to the bigger group). Now routing
    is within 0.8–1.1× of the bridged truth; safe is unchanged (at least the page: conservative)."""
    body, truth = DROPPED[name]
    native = estimate_request(body, call_kind="messages", estimator=QWEN)
    bridged = estimate_request(body, call_kind="messages", estimator=QWEN, bridged=True)
    assert 0.8 * truth <= bridged.routing <= 1.1 * truth, (bridged.routing, truth)
    assert bridged.safe == native.safe >= truth
    if name != "container_upload":  # a file id: one flat part, no text either way
        assert native.routing > 5000  # a native /v1/messages deployment reads the page: still counted there
        assert PAGE[:200] not in json.dumps(chat_payload("messages", body))  # LiteLLM 1.108's bridge drops it


def test_the_bridge_filter_keeps_what_the_bridge_sends_and_copies_nothing_then():
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
    pdf = {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0xLjQK"}}
    body = {"system": [{"type": "text", "text": "Be brief."}], "messages": [
        {"role": "user", "content": [{"type": "text", "text": "Look."}, image, pdf]},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm", "signature": "s"}, CALL]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "ok"}, image]}]},
        {"role": "assistant", "content": "Plain."}]}
    assert bridged_messages(body) is None
    a = estimate_request(body, call_kind="messages", estimator=QWEN)
    assert estimate_request(body, call_kind="messages", estimator=QWEN, bridged=True) == a


def test_the_bridge_filter_drops_a_message_left_empty_and_system_blocks_that_are_not_text():
    body = {"model": "m", "max_tokens": 10, "system": [{"type": "text", "text": "Be brief."}, {"type": "search_result", "title": "t", "content": []}],
            "messages": [{"role": "user", "content": [{"type": "container_upload", "file_id": "f"}]},
                         {"role": "user", "content": [{"type": "tool_use", "id": "x", "name": "n", "input": {"a": PAGE}}]},
                         {"role": "assistant", "content": [{"type": "tool_result", "tool_use_id": "x", "content": PAGE}]},
                         {"role": "user", "content": "Hi."}]}
    sent = bridged_messages(body)
    assert sent["system"] == [{"type": "text", "text": "Be brief."}]
    assert sent["messages"] == [{"role": "user", "content": "Hi."}]
    assert [m["role"] for m in chat_payload("messages", body)["messages"]] == ["system", "user"]  # what LiteLLM sends


@pytest.mark.parametrize("body", [
    {"messages": None}, {"messages": "hi"}, {"messages": [None, 3, "x", [], {"role": ["u"], "content": [{"type": {}}]}]},
    {"messages": [{"role": "user", "content": [{"type": ["a"]}, {"type": None}, 7, None, "s"]}]},
    {"messages": [{"role": "user", "content": [{"type": "tool_result", "content": {"x": 1}}, {"type": "image", "source": "u"}]}]},
    {"system": "s", "messages": [{"role": "assistant", "content": [{"type": "document", "source": {"type": "url", "url": 5}}]}]},
])
def test_bridged_estimate_of_odd_messages_bodies_never_raises(body):
    a = estimate_request(body, call_kind="messages", estimator=QWEN, bridged=True)
    b = estimate_request(body, call_kind="messages", estimator=QWEN)
    assert 0 <= a.routing <= b.routing <= b.safe == a.safe


@pytest.mark.parametrize("model, escalated", [("hosted_vllm/fast-model", False), ("anthropic/claude-haiku-4-5", True)])
async def test_a_bridged_messages_request_whose_dropped_blocks_fill_the_window_stays_on_its_group(monkeypatch, model, escalated):
    """End to end: a 6,000-token search result before a short question, sent to a 4,096-token group.
    Bridged (``hosted_vllm``): the backend gets ~40 tokens, so it stays; native (``anthropic``, which
    renders search results): it is escalated (by skipping ``fast``), as before."""
    from test_hook_adapters import CHAIN, FakeRouter, Key, handler

    from litellm_kvwarm.meta import ESTIMATE_KEY

    router = FakeRouter({"fast": 4096, "slow": 32768}, chains=CHAIN)
    router.model_list[0]["litellm_params"]["model"] = model
    h, _ = handler(router, monkeypatch)
    body, _truth = DROPPED["search_result"]
    data = await h.async_pre_call_hook(Key(), None, {**body, "model": "fast"}, "anthropic_messages")
    estimate = data["litellm_metadata"][ESTIMATE_KEY]
    assert (estimate["routing"] > 4096) is escalated and estimate["safe"] > 4096  # the safe estimate stays conservative
    if not escalated:
        assert estimate["routing"] < 100 and data["model"] == "fast"



def test_the_messages_bridge_uses_litellms_current_adapter_path_without_its_deprecation_warning():
    """LiteLLM 1.109 moved the Messages adapter to ``llms.anthropic.messages`` and left a shim at
    ``llms.anthropic.pass_through`` that warns it "will be removed"; 1.108 has only the old path.
    The bridge must translate on either release through the path the release ships: in a fresh
    interpreter (the shim warns once, at its first import), with deprecation warnings as errors."""
    import importlib.util
    import subprocess
    import sys

    script = (
        "import sys, warnings; warnings.simplefilter('error', DeprecationWarning)\n"
        "from litellm_kvwarm.litellm_bridge import chat_payload\n"
        "out = chat_payload('messages', {'model': 'm', 'max_tokens': 9, 'messages': [{'role': 'user', 'content': [{'type': 'text', 'text': 'Hi.'}]}]})\n"
        "print([m['role'] for m in out['messages']], 'litellm.llms.anthropic.pass_through' in sys.modules)\n")
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    current = importlib.util.find_spec("litellm.llms.anthropic.messages") is not None  # 1.109 and later
    assert run.stdout.strip().splitlines()[-1] == f"['user'] {not current}"

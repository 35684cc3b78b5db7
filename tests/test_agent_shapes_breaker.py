"""Agent request shapes found mispriced by the agent-shapes breaker round (estimator over- and
under-estimates against what LiteLLM sends a vLLM backend)."""

from __future__ import annotations

import base64
import json
import random

import pytest

from litellm_kvwarm.tokens import calibrated_estimator, count_request, estimate_request

QWEN = calibrated_estimator("qwen2.5")


def _opaque(n: int, seed: int) -> str:
    rng = random.Random(seed)
    return base64.b64encode(bytes(rng.getrandbits(8) for _ in range(n))).decode()


def test_web_search_results_encrypted_content_is_not_counted_as_text():
    """An Anthropic web search turn replayed by the client (``server_tool_use`` + ``web_search_tool_result``
    whose results carry an opaque ``encrypted_content``, ~4 KB each, and citations with ``encrypted_index``)
    was read as an unknown block and its encrypted blobs counted as text: ten results read ~13,000
    routing tokens where the backend renders at most the titles and URLs (LiteLLM's bridge drops the
    whole block). Encrypted fields are as opaque as ``redacted_thinking``: they count nothing."""
    results = [{"type": "web_search_result", "url": f"https://example.com/{i}", "title": f"Result {i}",
                "encrypted_content": _opaque(3000, i), "page_age": "2 days ago"} for i in range(10)]
    body = {"model": "m", "max_tokens": 100, "messages": [
        {"role": "user", "content": "What is new in Python 3.14?"},
        {"role": "assistant", "content": [
            {"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search", "input": {"query": "python 3.14"}},
            {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01", "content": results},
            {"type": "text", "text": "Python 3.14 adds template strings.", "citations": [
                {"type": "web_search_result_location", "url": "https://example.com/0", "title": "Result 0",
                 "encrypted_index": _opaque(600, 99), "cited_text": "template strings"}]},
        ]},
        {"role": "user", "content": "Thanks, and 3.15?"},
    ]}
    counts = count_request(body, call_kind="messages")
    assert results[0]["encrypted_content"][:40] not in counts.text
    assert "Result 3" in counts.text and "https://example.com/3" in counts.text  # what is readable still counts
    for kind in ("messages", "chat"):
        est = estimate_request(body, call_kind=kind, estimator=QWEN)
        assert est.routing < 500 and est.safe < 2000, (kind, est.safe, est.routing)
    # the same blob under a Responses item nested in an unknown item's structure
    item = {"type": "mystery_call", "results": [{"title": "T", "encrypted_content": _opaque(3000, 7)}]}
    est = estimate_request({"model": "m", "input": [{"role": "user", "content": "hi"}, item]}, call_kind="responses",
                           estimator=QWEN)
    assert est.routing < 100


def test_chat_tool_calls_thought_signatures_are_not_counted_as_text():
    """A chat conversation replayed after Gemini turns served through LiteLLM carries each tool call's
    thought signature twice: in ``provider_specific_fields`` (of the call and of its ``function``) and
    appended to the call id (``call_…__thought__<signature>``, LiteLLM's encoding for clients that drop
    extra fields, echoed in the ``tool`` message's ``tool_call_id``). No chat template renders them
    (the call renders its name and arguments), yet the tool calls were counted by their whole JSON
    text: 20 small calls with ~2 KB signatures read ~20,000 routing tokens for a ~1,000-token prompt."""
    def body(signed: bool) -> dict:
        messages: list[dict] = [{"role": "user", "content": "Read the twenty config files and summarise them."}]
        for i in range(20):
            sig = _opaque(1500, i) if signed else ""
            call_id = f"call_{i:04d}" + (f"__thought__{sig}" if signed else "")
            call = {"id": call_id, "type": "function",
                    "function": {"name": "read_file", "arguments": f'{{"path": "conf/{i}.yaml"}}'}}
            if signed:
                call["provider_specific_fields"] = {"thought_signature": sig}
                call["function"]["provider_specific_fields"] = {"thought_signature": sig}
            messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
            messages.append({"role": "tool", "tool_call_id": call_id, "content": f"key_{i}: value {i}"})
        return {"model": "m", "messages": messages}

    plain = estimate_request(body(False), call_kind="chat", estimator=QWEN)
    signed = estimate_request(body(True), call_kind="chat", estimator=QWEN)
    assert "__thought__" not in count_request(body(True), call_kind="chat").text
    assert signed.routing <= plain.routing * 1.05 + 10, (signed.routing, plain.routing)
    assert signed.safe <= plain.safe * 1.05 + 10, (signed.safe, plain.safe)
    assert signed.safe >= plain.safe  # the calls themselves still count


ZH = "这个函数读取文件头并检查长度字段，然后返回有效载荷。如果索引超出范围，调用者会处理异常。" * 40
RU = "Эта функция читает заголовок файла и проверяет поле длины, затем возвращает полезную нагрузку. " * 30


@pytest.mark.parametrize("text, truth", [(ZH, 1281), (RU, 952)])
def test_tool_call_arguments_with_ascii_escapes_are_counted_as_the_characters_they_render(text, truth):
    """Tool-call ``arguments`` written by Python's ``json.dumps`` defaults (LangChain, LiteLLM's own
    Messages bridge) carry every non-ASCII character as ``\\uXXXX``; vLLM parses ``arguments`` and the
    template writes them back as the characters (``tojson`` without ASCII escaping). Counted as the
    escapes, a Chinese Write call read 6,801 routing tokens (truth 1,281, qwen2.5: the official Qwen2.5
    template, its tokenizer, arguments parsed as vLLM does) and a Russian one 11,149 (truth 952).
    Now the same as the unescaped arguments (Cyrillic routing leans ~1.2× high on its own, as
    plain Russian text does with these weights)."""
    for ensure_ascii in (True, False):
        arguments = json.dumps({"path": "a.md", "content": text}, ensure_ascii=ensure_ascii)
        chat = {"messages": [{"role": "user", "content": "写文件"}, {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "Write", "arguments": arguments}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "ok"}, {"role": "user", "content": "好"}]}
        responses = {"input": [{"role": "user", "content": "写文件"}, {"type": "function_call", "call_id": "c1", "name": "Write",
                                                                   "arguments": arguments}, {"type": "function_call_output", "call_id": "c1", "output": "ok"}]}
        for body, kind in ((chat, "chat"), (responses, "responses")):
            est = estimate_request(body, call_kind=kind, estimator=QWEN)
            assert 0.8 * truth <= est.routing <= 1.3 * truth and est.safe >= truth, (ensure_ascii, kind, est.routing, est.safe)
    bad = {"messages": [{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": '{"a": "\\u00e9'}}]}]}
    assert "\\u00e9" in count_request(bad).text  # not JSON: counted as sent


def test_chat_tool_calls_are_counted_without_their_ids_like_the_other_apis():
    """Chat ``tool_calls`` were counted by their whole JSON (``id``, ``type``, ``function``) while the
    templates render only the name and arguments (Qwen2.5, Llama 3, DeepSeek-V3): 100 short calls with
    Claude-style ids (``toolu_01`` + 22 random characters) read 6,593 routing tokens for a 4,323-token
    prompt (qwen2.5; Llama 3's truth 3,339). Now counted as ``{"name":…,"arguments":…}``, as the same
    loop sent through ``/v1/messages`` is (4,039 there)."""
    rng = random.Random(5)
    messages: list[dict] = [{"role": "user", "content": "Check every file."}]
    for i in range(100):
        call_id = "toolu_01" + "".join(rng.choice("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") for _ in range(22))
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": "Read", "arguments": json.dumps({"file_path": f"/r/f{i}.py"})}}]})
        messages.append({"role": "tool", "tool_call_id": call_id, "content": "ok"})
    est = estimate_request({"messages": messages}, call_kind="chat", estimator=QWEN)
    assert 0.8 * 4323 <= est.routing <= 1.0 * 4323 and est.safe >= 4323, (est.routing, est.safe)
    text = count_request({"messages": messages}, call_kind="chat").text
    assert '{"name":"Read","arguments":{"file_path": "/r/f0.py"}}' in text and '"type":"function"' not in text
    legacy = {"messages": [{"role": "assistant", "function_call": {"name": "f", "arguments": "{}"}}, {"role": "assistant", "tool_calls": [7, {"x": 1}]}]}
    assert count_request(legacy, call_kind="chat").text == '{"name":"f","arguments":{}}7{"x":1}'  # odd calls: their JSON text


def _coloured_output(seed: int) -> str:
    rng = random.Random(seed)
    return "\n".join(f"\x1b[32mok\x1b[0m test_{i} \x1b[2m({rng.randrange(1000)}ms)\x1b[0m" for i in range(800))


def test_terminal_colour_codes_in_a_tool_result_stay_under_the_llama3_safe_estimate():
    """Coloured test output (ANSI ``\\x1b[32m``) in a ``tool`` message: Llama 3's template writes tool
    content with ``tojson``, each ESC as ``\\u001b`` (three tokens), while the weights price it as one
    punctuation mark: safe 25,918 for a 27,259-token prompt (the official Llama 3.2 template and its
    tokenizer). Now 31,950; other families unchanged (Qwen2.5 renders ESC raw, one token)."""
    body = {"messages": [{"role": "user", "content": "check"}, {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "get", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": _coloured_output(3)}]}
    llama = estimate_request(body, call_kind="chat", estimator=calibrated_estimator("llama3"))
    assert 27259 <= llama.safe <= 1.3 * 27259 and llama.routing <= 27259
    assert estimate_request(body, call_kind="chat", estimator=calibrated_estimator("any")).safe >= 27259
    assert estimate_request(body, call_kind="chat", estimator=QWEN).safe == 26976  # unchanged: Qwen's template writes ESC raw

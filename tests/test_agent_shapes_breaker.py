"""Agent request shapes found mispriced by the agent-shapes breaker round (estimator over- and
under-estimates against what LiteLLM sends a vLLM backend)."""

from __future__ import annotations

import base64
import random

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

"""Agent request shapes mispriced in the agent-shapes breaker's third round (the truth, with the
calibration tokenizers, is in ``tests/lab/test_responses_folding_truth.py``)."""

from __future__ import annotations

import json

import pytest

from litellm_kvwarm.token_responses_items import folds_into_previous
from litellm_kvwarm.tokens import calibrated_estimator, count_request, estimate_request

_CALL = {"type": "function_call", "call_id": "c", "name": "read", "arguments": "{}"}
_OUTPUT = {"type": "function_call_output", "call_id": "c", "output": "ok"}
_ASSISTANT = {"type": "message", "role": "assistant", "content": "Running."}
_REASONING = {"type": "reasoning", "summary": [{"type": "summary_text", "text": "think"}]}


@pytest.mark.parametrize("previous, item, folds", [
    (_CALL, _CALL, True), (_ASSISTANT, _CALL, True), (_REASONING, _CALL, True), (_CALL, _ASSISTANT, True),
    (_CALL, _REASONING, False), (_ASSISTANT, _ASSISTANT, False), (_OUTPUT, _CALL, False), (_CALL, _OUTPUT, False),
    (None, _CALL, False), ("x", _CALL, False), (_CALL, {"type": ["odd"]}, False),
])
def test_items_folded_as_litellm_bridges_them(previous, item, folds):
    """As LiteLLM 1.108.7 and 1.109.3 fold Responses items into one assistant message (measured with
    ``litellm_bridge.chat_payload``: ``tests/lab/test_responses_folding_truth.py``)."""
    assert folds_into_previous(item, previous) is folds


def test_parallel_calls_count_one_message_in_routing_only():
    calls = [{**_CALL, "call_id": f"c{i}", "arguments": json.dumps({"path": f"/r/{i}.py"})} for i in range(30)]
    outputs = [{**_OUTPUT, "call_id": f"c{i}"} for i in range(30)]
    dropped = {"type": "mcp_call", "id": "m", "name": "x", "arguments": "{}", "server_label": "s"}  # the bridge drops it
    body = {"input": [{"type": "message", "role": "user", "content": "go"}, *calls[:15], dropped, *calls[15:], *outputs]}
    counts = count_request(body, call_kind="responses")
    assert (counts.messages, counts.folded_messages) == (62, 29)
    est = calibrated_estimator("llama3")
    unfolded = estimate_request({**body, "input": [body["input"][0], *[m for c in calls for m in (c, _OUTPUT)]]},
                                call_kind="responses", estimator=est)  # interleaved: no call folds
    folded = estimate_request(body, call_kind="responses", estimator=est)
    assert count_request(body | {"input": [body["input"][0], *[m for c in calls for m in (c, _OUTPUT)]]},
                         call_kind="responses").folded_messages == 0
    assert folded.routing < unfolded.routing
    assert folded.safe >= unfolded.safe - 2  # safe counts every item as a message, folded or not


def test_odd_items_never_raise():
    for body in ({"input": [None, _CALL, 5, _CALL, {"type": None, "role": "assistant"}, _CALL]},
                 {"input": [{"type": {"x": 1}}, _CALL]}, {"input": _CALL}):
        est = estimate_request(body, call_kind="responses", estimator=calibrated_estimator("qwen2.5"), bridged=True)
        assert 0 <= est.routing <= est.safe


@pytest.mark.parametrize("version, parsed", [("1.108.7", (1, 108, 7)), ("1.109.3rc1", (1, 109, 3)), ("1.110.0.dev2", (1, 110, 0)),
                                             ("garbage", None)])
def test_litellm_version_is_read_from_its_metadata(monkeypatch, version, parsed):
    from litellm_kvwarm import litellm_version

    monkeypatch.setattr(litellm_version.metadata, "version", lambda name: version)
    litellm_version.installed.cache_clear()
    try:
        assert litellm_version.installed() == parsed
        assert litellm_version.at_least((1, 109, 3)) is (parsed is None or parsed >= (1, 109, 3))
    finally:
        litellm_version.installed.cache_clear()


@pytest.mark.parametrize("version, as_media", [((1, 108, 7), False), ((1, 109, 3), True), (None, True)])
def test_a_computer_screenshot_is_counted_as_that_litellm_sends_it(monkeypatch, version, as_media):
    """1.108.7's bridge sends a ``computer_call_output``'s screenshot dict as its JSON text, 1.109.3's as an image part:
    priced as the image on 1.108.7 too, a 30 KB screenshot read safe 0.22-0.24x the truth (the base64 text,
    ``tests/lab/test_agent_loops_truth.py``)."""
    import base64
    import random

    from litellm_kvwarm import litellm_version

    monkeypatch.setattr(litellm_version, "installed", lambda: version)
    shot = "data:image/png;base64," + base64.b64encode(random.Random(1).randbytes(30_000)).decode()
    body = {"input": [{"type": "computer_call", "call_id": "c1", "action": {"type": "screenshot"}},
                      {"type": "computer_call_output", "call_id": "c1", "output": {"type": "computer_screenshot", "image_url": shot}}]}
    est = estimate_request(body, call_kind="responses", estimator=calibrated_estimator("qwen2.5"))
    assert (len(est.counts.images), shot in est.counts.text) == ((1, False) if as_media else (0, True))
    assert est.safe > (20_000 if not as_media else 0)

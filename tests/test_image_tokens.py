"""Image prompt tokens per vision family (litellm_kvwarm.image_tokens), hand-computed values."""

from __future__ import annotations

import pytest

from litellm_kvwarm.image_tokens import (
    GEMMA3_RULE,
    MLLAMA_RULE,
    OPENAI_RULE,
    QWEN2_VL_RULE,
    QWEN3_VL_RULE,
    UNKNOWN_RULE,
    ImageRef,
    image_rule_for,
    images_tokens,
    smart_resize,
)

ALL_RULES = [QWEN2_VL_RULE, QWEN3_VL_RULE, GEMMA3_RULE, MLLAMA_RULE, OPENAI_RULE, UNKNOWN_RULE]


@pytest.mark.parametrize(
    ("width", "height", "expected"),
    [
        # round(1080/28)=39 -> 1092, round(1920/28)=69 -> 1932; 2.1 Mpx in range: 39*69 + 2
        (1920, 1080, 39 * 69 + 2),  # 2693
        (200, 100, 4 * 7 + 2),  # round(100/28)=4, round(200/28)=7: 30
        (10, 10, 2 * 2 + 2),  # 0x0 < min_pixels: beta = sqrt(3136/100) = 5.6 -> ceil(2.0) = 2 each: 56x56
        (8000, 8000, 128 * 128 + 2),  # 8008^2 > max_pixels 12845056 = 3584^2: floor(3584/28) = 128
        (1280, 720, 26 * 46 + 2),  # 1198
        (4032, 3024, 108 * 144 + 2),  # 12.2 Mpx phone photo, under max_pixels: 15554
        (1024, 1024, 37 * 37 + 2),
    ],
)
def test_qwen2_vl(width, height, expected):
    assert QWEN2_VL_RULE.tokens(width, height) == expected
    assert QWEN2_VL_RULE.counts(width, height) == (expected, expected)
    assert QWEN2_VL_RULE.tokens(height, width) == expected  # symmetric: EXIF orientation does not matter


def test_smart_resize_matches_transformers_examples():
    assert smart_resize(1080, 1920, 28, 3136, 12845056) == (1092, 1932)
    assert smart_resize(10, 10, 28, 3136, 12845056) == (56, 56)
    assert smart_resize(8000, 8000, 28, 3136, 12845056) == (3584, 3584)
    assert smart_resize(1, 1000, 28, 3136, 12845056) == (28, 1008)  # a side never rounds to 0


@pytest.mark.parametrize(
    ("width", "height", "expected"),
    [
        (1920, 1080, 34 * 60 + 2),  # 1080/32 = 33.75 -> 34, 1920/32 = 60: 2042
        (200, 100, 6 * 12 + 2),  # 3x6 blocks < 65536 px: beta = sqrt(65536/20000), ceil(5.66)=6, ceil(11.3)=12
        (8000, 8000, 128 * 128 + 2),  # max 16777216 = 4096^2
    ],
)
def test_qwen3_vl(width, height, expected):
    assert QWEN3_VL_RULE.counts(width, height) == (expected, expected)


def test_gemma3_is_fixed():
    for size in [(1920, 1080), (200, 100), (10, 10), (8000, 8000)]:
        assert GEMMA3_RULE.counts(*size) == (260, 258)  # \n\n + boi + 256 + eoi + \n\n / the 258 markers
    assert GEMMA3_RULE.unknown_size() == (260, 258)


@pytest.mark.parametrize(
    ("width", "height", "tiles"),
    [
        (1920, 1080, 4),  # no canvas upscales; the largest downscale is 2x2 (min(1120/1080, 1120/1920))
        (200, 100, 1),  # 560x560 is the smallest upscaling canvas
        (560, 560, 1),
        (1120, 560, 2),  # exactly 1x2 tiles
        (1200, 500, 3),  # smallest upscale 1.12 = 560/500 for 1x3 and 1x4 canvases; the smaller area wins
    ],
)
def test_mllama(width, height, tiles):
    assert MLLAMA_RULE.counts(width, height) == (1 + 1601 * tiles, 1)


@pytest.mark.parametrize(
    ("width", "height", "detail", "expected"),
    [
        (1024, 1024, "high", 765),  # OpenAI's example: 768x768, 4 tiles
        (1024, 1024, "low", 85),
        (1024, 1024, None, 765),
        (1024, 1024, "auto", 765),
        (2048, 4096, "high", 1105),  # OpenAI's example: 1024x2048 -> 768x1536, 6 tiles
        (1920, 1080, "high", 1105),  # 1365x768: 3x2 tiles
        (200, 100, "high", 255),  # no upscaling: 1 tile
        (4000, 100, "high", 85 + 170 * 4),  # 2048x51: 4x1 tiles
    ],
)
def test_openai(width, height, detail, expected):
    assert OPENAI_RULE.counts(width, height, detail) == (expected, expected)


def test_unknown_rule_known_size():
    assert UNKNOWN_RULE.counts(1920, 1080) == (6405, 1105)  # Llama 3.2 safe; min(Qwen2.5 2693, OpenAI 1105)
    assert UNKNOWN_RULE.counts(200, 100) == (1602, 30)
    assert UNKNOWN_RULE.counts(8000, 8000) == (16386, 765)


def test_unknown_size():
    assert QWEN2_VL_RULE.unknown_size() == (16386, 1198)  # max_pixels / typical 1280x720
    assert QWEN3_VL_RULE.unknown_size() == (16386, 882)
    assert MLLAMA_RULE.unknown_size() == (6405, 1)
    assert OPENAI_RULE.unknown_size() == (1445, 1105)  # 768x2048: 8 tiles
    assert OPENAI_RULE.unknown_size("low") == (85, 85)
    assert UNKNOWN_RULE.unknown_size() == (16386, 1105)


SIZES = [(1, 1), (10, 10), (28, 28), (200, 100), (100, 200), (640, 480), (1280, 720), (1920, 1080),
         (3840, 2160), (4032, 3024), (8000, 8000), (20000, 100), (100, 20000), (65535, 65535)]


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.name)
def test_safe_at_least_routing_and_within_unknown_size_safe(rule):
    ceiling = rule.unknown_size()[0]
    for size in SIZES:
        for detail in (None, "low", "high", "auto"):
            safe, routing = rule.counts(*size, detail)
            assert safe >= routing >= 1, (size, detail)
            assert safe <= ceiling, (size, detail)
            if rule is not UNKNOWN_RULE:
                assert UNKNOWN_RULE.counts(*size, detail)[0] >= safe


def test_images_tokens_sums():
    refs = [ImageRef(1920, 1080), ImageRef(200, 100), ImageRef(detail="low"), ImageRef(0, 5)]
    assert images_tokens(refs, QWEN2_VL_RULE) == (2693 + 30 + 16386 + 16386, 2693 + 30 + 1198 + 1198)
    assert images_tokens(refs, OPENAI_RULE) == (1105 + 255 + 85 + 1445, 1105 + 255 + 85 + 1105)
    assert images_tokens([], UNKNOWN_RULE) == (0, 0)
    assert images_tokens(refs) == images_tokens(refs, UNKNOWN_RULE)
    assert images_tokens([ImageRef(1024, 1024, "LOW")], OPENAI_RULE) == (85, 85)


@pytest.mark.parametrize(
    ("models", "rule"),
    [
        (["hosted_vllm/Qwen/Qwen2.5-VL-7B-Instruct"], QWEN2_VL_RULE),
        (["hosted_vllm/Qwen/Qwen2.5-VL-7B-Instruct", "openai/Qwen/Qwen2.5-VL-72B-Instruct-AWQ"], QWEN2_VL_RULE),
        (["Qwen2-VL-2B-Instruct"], QWEN2_VL_RULE),
        (["qwen2_5_vl"], QWEN2_VL_RULE),
        (["Qwen/QVQ-72B-Preview"], QWEN2_VL_RULE),
        (["hosted_vllm/Qwen/Qwen3-VL-30B-A3B-Instruct"], QWEN3_VL_RULE),
        (["Qwen/Qwen3.6-35B-A3B-FP8"], QWEN3_VL_RULE),
        (["google/gemma-3-27b-it"], GEMMA3_RULE),
        (["gemma3:12b"], GEMMA3_RULE),
        # Gemma3nProcessor builds Gemma 3's image sequence; MedGemma and ShieldGemma 2 are Gemma 3 under other names (a
        # breaker: routed by the unknown rule, a 1280x800 screenshot read as 1,105 tokens where vLLM renders 260)
        (["google/gemma-3n-E4B-it"], GEMMA3_RULE),
        (["google/medgemma-27b-it", "google/medgemma-4b-it"], GEMMA3_RULE),
        (["google/shieldgemma-2-4b-it"], GEMMA3_RULE),
        (["google/gemma-2-27b-it"], UNKNOWN_RULE),
        (["meta-llama/Llama-3.2-11B-Vision-Instruct"], MLLAMA_RULE),
        (["meta-llama/Llama-3.2-3B-Instruct"], UNKNOWN_RULE),
        (["gpt-4o"], OPENAI_RULE),
        (["openai/gpt-4.1"], OPENAI_RULE),
        (["azure/o3"], OPENAI_RULE),
        (["gpt-4o-mini"], UNKNOWN_RULE),
        (["gpt-4.1-nano"], UNKNOWN_RULE),
        (["Qwen/Qwen2.5-7B-Instruct"], UNKNOWN_RULE),
        (["hosted_vllm/Qwen/Qwen2.5-VL-7B-Instruct", "gpt-4o"], UNKNOWN_RULE),
        ([], UNKNOWN_RULE),
        ([None, 3], UNKNOWN_RULE),
    ],
)
def test_image_rule_for(models, rule):
    assert image_rule_for(models) == rule

"""Prompt tokens of images, by each vision family's rule (pure).

* :class:`ImageRef`: one image part of a request: its pixel size when the data URL's header
  could be read (``None`` otherwise: remote URL, file id, unreadable bytes) and the OpenAI
  ``detail`` it asks for.
* :class:`ImageRule`: a family's rule, ``tokens(width, height, detail)`` → prompt tokens of one image.
* :func:`image_rule_for`: the rule of the deployments serving a group (by model name).
* :func:`images_tokens`: ``(safe, routing)`` prompt tokens of a request's images under a rule.

The rules (tokens per image; 1920x1080 / 200x100 in brackets):

``qwen2-vl`` (Qwen2-VL, Qwen2.5-VL, QVQ) [2693 / 30]
    ``smart_resize`` of ``transformers/models/qwen2_vl/image_processing_qwen2_vl.py``: each side
    rounded to a multiple of 28 (patch 14 x merge 2), rescaled into ``min_pixels`` 3136 ..
    ``max_pixels`` 12845056 (the models' ``preprocessor_config.json``, which vLLM loads), then
    ``(h'/28) * (w'/28)`` ``<|image_pad|>`` tokens plus the ``<|vision_start|>`` and
    ``<|vision_end|>`` tokens around them (the chat template renders all three; the processor
    expands the pad). Exact: safe = routing. 6 .. 16386 tokens.
``qwen3-vl`` (Qwen3-VL, Qwen3.5/3.6) [2042 / 74]
    the same resize with patch 16 x merge 2 = 32, ``size.shortest_edge`` 65536 ..
    ``size.longest_edge`` 16777216 (their ``preprocessor_config.json``). 66 .. 16386 tokens.
``gemma-3`` (Gemma 3, Gemma 3n, MedGemma, ShieldGemma 2) [260 / 260 safe, 258 routing]
    ``Gemma3Processor.full_image_sequence`` = ``"\\n\\n<start_of_image>" + 256 x <image_soft_token>
    + "<end_of_image>\\n\\n"`` replaces the template's ``<start_of_image>``; pan-and-scan off (vLLM's
    default). ``Gemma3nProcessor`` builds the same sequence (``image_seq_length`` 256, transformers 4.53+);
    MedGemma and ShieldGemma 2 are ``Gemma3ForConditionalGeneration`` under other names. Safe counts the two ``\\n\\n`` tokens, routing only the 258 markers (the newlines can
    merge with the text around them).
``mllama`` (Llama 3.2 Vision) [safe 6405 / 1602, routing 1 / 1]
    vLLM (``model_executor/models/mllama.py``) keeps one ``<|image|>`` token per image in the
    *decoder* prompt (what ``usage.prompt_tokens`` and ``/tokenize`` report) and builds a separate
    *encoder* prompt of ``tiles x 1601`` tokens (``(560/14)^2 + 1`` per 560-px tile; tiles from
    ``get_optimal_tiled_canvas``, at most 4). vLLM checks each prompt against ``max_model_len`` on
    its own, so routing = 1 (the decoder tokens), and safe = 1 + the encoder tokens: text + that
    sum within the window means both prompts are.
``openai`` (gpt-4o, gpt-4.1, gpt-4.5, gpt-5, o1, o3, chatgpt-4o) [1105 / 255]
    OpenAI's vision cost docs: ``detail="low"`` 85; ``high``/``auto``: fit within 2048x2048, scale
    the shortest side down to 768, then 85 + 170 per 512-px tile (1024x1024 → 765). o-series
    (75/150) and gpt-5 (70/140) bill less per tile, so this over-counts them slightly. The
    ``-mini``/``-nano`` models bill with multipliers (2833/5667 or 32-px patches x 1.62..2.46) and
    are left to the unknown rule.
``unknown`` (any other model, or a group mixing families)
    safe = the largest safe count of the rules above for that size; routing = the smaller of the
    Qwen2.5-VL and OpenAI counts (two common dynamic-resolution rules; routing leans low).

An image of unknown size (remote URL, file id, bytes whose header could not be read) costs the
rule's largest count as safe (Qwen: 16386, their ``max_pixels``; a 12 Mpx phone photo alone is
15554) and, as routing, the rule's count of a 1280x720 screenshot (:data:`TYPICAL_SIZE`; Qwen2.5-VL
1198, OpenAI 1105, unknown 1105). ``safe >= routing`` for every image under every rule.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = [
    "ImageRef",
    "ImageRule",
    "GEMMA3_RULE",
    "MLLAMA_RULE",
    "OPENAI_RULE",
    "QWEN2_VL_RULE",
    "QWEN3_VL_RULE",
    "TYPICAL_SIZE",
    "UNKNOWN_RULE",
    "image_rule_for",
    "images_tokens",
    "smart_resize",
]

#: ``(width, height)`` a routing estimate assumes for an image of unknown size (a 720p screenshot).
TYPICAL_SIZE = (1280, 720)


@dataclass(frozen=True)
class ImageRef:
    """One image part: ``width``/``height`` in pixels (``None``: unknown), ``detail``
    (``"low"``/``"high"``/``"auto"``/``None``)."""

    width: int | None = None
    height: int | None = None
    detail: str | None = None

    @property
    def size(self) -> tuple[int, int] | None:
        """``(width, height)`` when both are known positive integers, else ``None``."""
        w, h = self.width, self.height
        if isinstance(w, int) and isinstance(h, int) and w > 0 and h > 0:
            return w, h
        return None


def smart_resize(height: int, width: int, factor: int, min_pixels: int, max_pixels: int) -> tuple[int, int]:
    """Qwen2-VL's ``smart_resize`` (transformers ``image_processing_qwen2_vl``): ``(h', w')``
    multiples of ``factor`` with ``min_pixels <= h' * w' <= max_pixels``, aspect ratio kept.

    Same float arithmetic as transformers (Python ``round`` included); the aspect-ratio (> 200)
    and tiny-side checks that make transformers raise are skipped, and each side is at least
    ``factor`` (newer transformers clamp the same way).
    """
    h_bar = max(factor, round(height / factor) * factor)
    w_bar = max(factor, round(width / factor) * factor)
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def _qwen(width: int, height: int, factor: int, min_pixels: int, max_pixels: int) -> int:
    h, w = smart_resize(height, width, factor, min_pixels, max_pixels)
    return (h // factor) * (w // factor) + 2  # + <|vision_start|>, <|vision_end|>


def _mllama_tiles(width: int, height: int, tile: int = 560, max_tiles: int = 4) -> int:
    """Tiles of ``get_optimal_tiled_canvas`` (transformers ``image_processing_mllama``)."""
    canvases = [(a * tile, b * tile) for a in range(1, max_tiles + 1) for b in range(1, max_tiles + 1)
                if a * b <= max_tiles]
    scales = [min(ch / height, cw / width) for ch, cw in canvases]
    up = [s for s in scales if s >= 1]
    chosen = min(up) if up else max(scales)
    areas = [ch * cw for (ch, cw), s in zip(canvases, scales) if s == chosen]
    return min(areas) // (tile * tile)


def _openai(width: int, height: int, detail: str | None) -> int:
    if detail == "low":
        return 85
    w, h = float(width), float(height)
    if max(w, h) > 2048:
        w, h = w * 2048 / max(w, h), h * 2048 / max(w, h)
    if min(w, h) > 768:
        w, h = w * 768 / min(w, h), h * 768 / min(w, h)
    return 85 + 170 * math.ceil(w / 512) * math.ceil(h / 512)


_QWEN2 = (28, 3136, 12845056)
_QWEN3 = (32, 65536, 16777216)
MLLAMA_TOKENS_PER_TILE = (560 // 14) ** 2 + 1


@dataclass(frozen=True)
class ImageRule:
    """One family's image-token rule; ``name`` is one of those in the module docstring."""

    name: str

    def tokens(self, width: int, height: int, detail: str | None = None) -> int:
        """Safe prompt tokens of one ``width`` x ``height`` image (pixels) under this rule."""
        return self.counts(width, height, detail)[0]

    def counts(self, width: int, height: int, detail: str | None = None) -> tuple[int, int]:
        """``(safe, routing)`` tokens of one image of known size (``safe >= routing``)."""
        name = self.name
        if name == "qwen2-vl":
            n = _qwen(width, height, *_QWEN2)
            return n, n
        if name == "qwen3-vl":
            n = _qwen(width, height, *_QWEN3)
            return n, n
        if name == "gemma-3":
            return 260, 258
        if name == "mllama":
            return 1 + MLLAMA_TOKENS_PER_TILE * _mllama_tiles(width, height), 1
        if name == "openai":
            n = _openai(width, height, detail)
            return n, n
        safe = max(rule.counts(width, height, detail)[0] for rule in _KNOWN)
        routing = min(_qwen(width, height, *_QWEN2), _openai(width, height, detail))
        return max(safe, routing), routing

    def unknown_size(self, detail: str | None = None) -> tuple[int, int]:
        """``(safe, routing)`` tokens of one image whose size is unknown (see the module docstring)."""
        routing = self.counts(*TYPICAL_SIZE, detail)[1]
        name = self.name
        if name in ("qwen2-vl", "qwen3-vl"):
            safe = 16386  # (max_pixels / factor^2) + 2 for both: 3584^2 / 28^2 = 4096^2 / 32^2 = 16384
        elif name == "gemma-3":
            safe = 260
        elif name == "mllama":
            safe = 1 + 4 * MLLAMA_TOKENS_PER_TILE
        elif name == "openai":
            safe = 85 if detail == "low" else 85 + 170 * 8  # 768 x 2048 after scaling: 2 x 4 tiles
        else:
            safe = max(rule.unknown_size(detail)[0] for rule in _KNOWN)
        return max(safe, routing), routing

    def ref_counts(self, ref: ImageRef) -> tuple[int, int]:
        """``(safe, routing)`` tokens of one :class:`ImageRef`; never raises."""
        detail = ref.detail.lower() if isinstance(ref.detail, str) else None
        size = ref.size
        if size is None:
            return self.unknown_size(detail)
        return self.counts(size[0], size[1], detail)


QWEN2_VL_RULE = ImageRule("qwen2-vl")
QWEN3_VL_RULE = ImageRule("qwen3-vl")
GEMMA3_RULE = ImageRule("gemma-3")
MLLAMA_RULE = ImageRule("mllama")
OPENAI_RULE = ImageRule("openai")
UNKNOWN_RULE = ImageRule("unknown")
_KNOWN = (QWEN2_VL_RULE, QWEN3_VL_RULE, GEMMA3_RULE, MLLAMA_RULE, OPENAI_RULE)

_OPENAI_PREFIXES = ("gpt-4o", "chatgpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "o1", "o3")


def _rule_of(model: str) -> ImageRule:
    name = model.lower()
    base = name.rsplit("/", 1)[-1]
    flat = re.sub(r"[-_.\s]", "", name)  # "Qwen2.5-VL" / "qwen2_5_vl" -> "qwen25vl"
    if "qwen3vl" in flat or "qwen35" in flat or "qwen36" in flat:
        return QWEN3_VL_RULE
    if "qwen2vl" in flat or "qwen25vl" in flat or "qvq" in flat:
        return QWEN2_VL_RULE
    if "gemma3" in flat or "medgemma" in flat or "shieldgemma2" in flat:  # Gemma 3 and 3n, MedGemma, ShieldGemma 2
        return GEMMA3_RULE
    if "mllama" in flat or ("llama32" in flat and "vision" in flat):
        return MLLAMA_RULE
    if base.startswith(_OPENAI_PREFIXES) and not any(t in base for t in ("mini", "nano")):
        return OPENAI_RULE
    return UNKNOWN_RULE


def image_rule_for(models: Iterable[str]) -> ImageRule:
    """The rule of the served models (all one family), else :data:`UNKNOWN_RULE`.

    ``models``: served model names as LiteLLM lists them (``hosted_vllm/Qwen/Qwen2.5-VL-7B-Instruct``,
    ``gemma-3-27b-it``, ``openai/gpt-4o``); matched case-insensitively on the family's name. None,
    a non-string, or families that differ → :data:`UNKNOWN_RULE`.
    """
    rules = {_rule_of(m) if isinstance(m, str) else UNKNOWN_RULE for m in models}
    return rules.pop() if len(rules) == 1 else UNKNOWN_RULE


def images_tokens(images: Sequence[ImageRef], rule: ImageRule = UNKNOWN_RULE) -> tuple[int, int]:
    """``(safe, routing)`` prompt tokens of ``images`` under ``rule`` (sums; ``safe >= routing``)."""
    safe = routing = 0
    for ref in images:
        s, r = rule.ref_counts(ref)
        safe += s
        routing += r
    return safe, routing

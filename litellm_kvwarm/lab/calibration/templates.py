"""Chat templates as token segments: what each model family's server renders (pure).

A rendered prompt is a list of :data:`Segment` ``(text, specials)``: plain text to be
tokenized, and the number of special tokens that follow it, each exactly one token.

Two kinds of template, one entry point (:func:`render`):

* ``hf-*`` (:mod:`.official_templates`): the families' official Jinja chat templates
  (``chat_templates/``), rendered as Hugging Face ``apply_chat_template`` / vLLM do
  (:mod:`.hf_chat`). These are the calibration truth wherever a family ships a template:
  ``hf-qwen2.5``, ``hf-llama3.2``, ``hf-deepseek-v3``, ``hf-gemma3``.
* hand-written (:mod:`.handwritten`), kept only where no official template applies:
  ``chatml`` for ``cl100k``/``o200k`` (OpenAI publishes no chat template for its tokenizers)
  and ``qwen3.6`` (no Qwen 3.5/3.6 template is available offline here); and as the fallback of
  an official template for requests it cannot render (tools where the template has none,
  conversations it refuses; see :mod:`.official_templates`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from . import handwritten
from .handwritten import Segment

__all__ = ["OFFICIAL_TEMPLATES", "Segment", "TEMPLATES", "render"]

OFFICIAL_TEMPLATES = ("hf-qwen2.5", "hf-llama3.2", "hf-deepseek-v3", "hf-gemma3")
TEMPLATES = OFFICIAL_TEMPLATES + handwritten.TEMPLATES


def render(template: str, messages: Sequence[Mapping[str, Any]], tools: Sequence[Any] | None = None) -> list[Segment]:
    """The segments of a chat request (generation prompt included) in ``template``.

    Raises ``ValueError`` for an unknown template name and ``OSError`` for ``hf-gemma3`` when
    Gemma 3's tokenizer files have not been fetched (``scripts/fetch_gemma3_tokenizer.sh``).
    """
    if template in OFFICIAL_TEMPLATES:
        from .official_templates import render_segments

        return render_segments(template, messages, tools)
    if template in handwritten.TEMPLATES:
        return handwritten.render(template, messages, tools)
    raise ValueError(f"unknown chat template {template!r}; expected one of {TEMPLATES}")

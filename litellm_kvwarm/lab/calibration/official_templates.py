"""The families' official chat templates, rendered into token segments (the calibration truth).

| name | template (source and license: ``chat_templates/README.md``) | special tokens split out |
| --- | --- | --- |
| ``hf-qwen2.5`` | ``Qwen/Qwen2.5-*-Instruct`` ``tokenizer_config.json`` (vendored) | ``<|im_start|>``, ``<|im_end|>``, ``<tool_call>``, ``</tool_call>`` (Qwen 2.5 added tokens 151657–151658) |
| ``hf-llama3.2`` | ``meta-llama/Llama-3.2-3B-Instruct`` (vendored) | header ids, ``<|eot_id|>``, ``<|begin_of_text|>`` |
| ``hf-deepseek-v3`` | ``deepseek-ai/DeepSeek-V3`` (vendored) | ``<｜User｜>``, ``<｜Assistant｜>``, the tool markers, BOS/EOS |
| ``hf-gemma3`` | Gemma 3's ``tokenizer_config.json`` fetched with its tokenizer (Gemma Terms of Use: not vendored) | ``<bos>``, ``<start_of_turn>``, ``<end_of_turn>`` |

Where the official template cannot give what a server would render, the request is rendered by
the family's hand-written template (:mod:`.handwritten`) instead, and :func:`fallback_reason`
says why:

* ``tools`` — DeepSeek V3's and Gemma 3's templates have no tools: a server serving tool calls
  runs a tool template (vLLM's ``examples/tool_chat_template_deepseekv3.jinja``, Google's
  function-calling format), which the hand-written ones follow;
* ``refused: …`` — the template raises (Gemma 3: roles must alternate; Llama 3.2: one tool call
  per message), where a server answers 400; the hand-written rendering stands in so the request
  still has a count.

Llama 3.2 renders "Today Date" with ``date_string="26 Jul 2024"`` (its own default, passed as a
``chat_template_kwargs``) so counts do not depend on the day they are computed.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import handwritten
from .families import gemma3_tokenizer_path
from .handwritten import Segment
from .hf_chat import render, server_messages, split_specials

__all__ = ["OFFICIAL", "OfficialTemplate", "TEMPLATE_DIR", "fallback_reason", "render_segments", "render_text"]

TEMPLATE_DIR = Path(__file__).with_name("chat_templates")
_DEEPSEEK_MARKERS = tuple(
    f"<｜{name}｜>"
    for name in ("begin▁of▁sentence", "end▁of▁sentence", "User", "Assistant", "tool▁calls▁begin", "tool▁calls▁end",
                 "tool▁call▁begin", "tool▁call▁end", "tool▁sep", "tool▁outputs▁begin", "tool▁outputs▁end",
                 "tool▁output▁begin", "tool▁output▁end")
)


@dataclass(frozen=True)
class OfficialTemplate:
    """One official template: where its text comes from and how its output is tokenized.

    ``specials`` are the strings the family's tokenizer turns into one token each;
    ``fallback`` names the :mod:`.handwritten` template used where this one cannot render;
    ``has_tools`` is false for templates that ignore ``tools`` (see the module docstring).
    """

    name: str
    load: Callable[[], Mapping[str, Any]]  # -> {"chat_template", "bos_token", "eos_token"}
    specials: tuple[str, ...]
    fallback: str
    has_tools: bool = True
    kwargs: Mapping[str, Any] = field(default_factory=dict)

    def available(self) -> bool:
        try:
            _config(self.name)
        except OSError:
            return False
        return True


def _vendored(file: str, bos: str | None, eos: str | None) -> Callable[[], Mapping[str, Any]]:
    return lambda: {"chat_template": (TEMPLATE_DIR / file).read_text(encoding="utf-8"), "bos_token": bos, "eos_token": eos}


def _token(value: Any) -> str | None:
    return value.get("content") if isinstance(value, Mapping) else value


def _gemma3() -> Mapping[str, Any]:
    config = json.loads((gemma3_tokenizer_path().parent / "tokenizer_config.json").read_text(encoding="utf-8"))
    return {"chat_template": config["chat_template"], "bos_token": _token(config.get("bos_token")),
            "eos_token": _token(config.get("eos_token"))}


OFFICIAL: dict[str, OfficialTemplate] = {
    t.name: t
    for t in (
        OfficialTemplate("hf-qwen2.5", _vendored("qwen2.5.jinja", None, "<|im_end|>"),
                         ("<|im_start|>", "<|im_end|>", "<|endoftext|>", "<tool_call>", "</tool_call>"), "chatml-qwen2.5"),
        OfficialTemplate("hf-llama3.2", _vendored("llama3.2.jinja", "<|begin_of_text|>", "<|eot_id|>"),
                         ("<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>", "<|eom_id|>",
                          "<|python_tag|>"), "llama3", kwargs={"date_string": "26 Jul 2024"}),
        OfficialTemplate("hf-deepseek-v3", _vendored("deepseek-v3.jinja", _DEEPSEEK_MARKERS[0], _DEEPSEEK_MARKERS[1]),
                         _DEEPSEEK_MARKERS, "deepseek", has_tools=False),
        OfficialTemplate("hf-gemma3", _gemma3, ("<bos>", "<start_of_turn>", "<end_of_turn>", "<start_of_image>"),
                         "gemma3", has_tools=False),
    )
}


@functools.lru_cache(maxsize=None)
def _config(name: str) -> Mapping[str, Any]:
    return OFFICIAL[name].load()


def _uses_tools(messages: Sequence[Mapping[str, Any]], tools: Sequence[Any] | None) -> bool:
    return bool(tools) or any(m.get("role") == "tool" or m.get("tool_calls") for m in messages)


def render_text(name: str, messages: Sequence[Mapping[str, Any]], tools: Sequence[Any] | None = None) -> str:
    """The prompt text the official template ``name`` renders (generation prompt included).

    Raises :class:`jinja2.TemplateError` (or ``TypeError``) where the template refuses the
    request; ``OSError`` where its text is not available (Gemma 3 not fetched).
    """
    config = _config(name)
    return render(config["chat_template"], server_messages(messages), tools, bos_token=config["bos_token"],
                  eos_token=config["eos_token"], **OFFICIAL[name].kwargs)


def fallback_reason(name: str, messages: Sequence[Mapping[str, Any]], tools: Sequence[Any] | None = None) -> str | None:
    """Why ``name`` cannot render this request (``None``: it can). See the module docstring."""
    from jinja2 import TemplateError

    if not OFFICIAL[name].has_tools and _uses_tools(messages, tools):
        return "tools"
    try:
        render_text(name, messages, tools)
    except (TemplateError, TypeError) as error:
        return f"refused: {error}"
    return None


def render_segments(name: str, messages: Sequence[Mapping[str, Any]], tools: Sequence[Any] | None = None) -> list[Segment]:
    """The request in ``name`` as segments (the official rendering, or the hand-written fallback)."""
    from jinja2 import TemplateError

    template = OFFICIAL[name]
    if template.has_tools or not _uses_tools(messages, tools):
        try:
            return split_specials(render_text(name, messages, tools), template.specials)
        except (TemplateError, TypeError):
            pass
    return handwritten.render(template.fallback, messages, tools)

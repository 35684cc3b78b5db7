"""The emulator's tokenizer and chat template: what a prompt costs on the emulated server.

Contract: every token count the emulator reports (``usage.prompt_tokens``, ``/tokenize``'s
``count``, the numbers in its context errors) comes from :func:`chat_token_ids` /
:func:`encode` here, so the same request always costs the same tokens everywhere.

* Encoding: tiktoken ``cl100k_base``, loaded offline from the copy LiteLLM bundles
  (``litellm/litellm_core_utils/tokenizers``; ``TIKTOKEN_CACHE_DIR`` is pointed there unless
  already set). Special-token text such as ``<|endoftext|>`` is encoded as plain text.
* Chat template: Qwen2.5-Instruct's official Jinja template
  (``lab/calibration/chat_templates/qwen2.5.jinja``, source in the README next to it), rendered
  as Hugging Face ``apply_chat_template`` / vLLM do (:mod:`litellm_kvwarm.lab.calibration.hf_chat`).
  So: a default system prompt when the conversation has none; ``tools`` in the system turn, one
  JSON schema per line inside ``<tools>``, so tool schemas cost tokens as on a real server;
  assistant ``tool_calls`` as ``<tool_call>`` blocks (``arguments`` given as a JSON string is
  parsed first, as vLLM does before templating); ``tool`` messages as ``<tool_response>``
  blocks inside a user turn; messages in other roles are dropped, as that template drops them.
  An assistant's ``reasoning_content`` is never rendered, unless ``template_mode="qwen3"``:
  then Qwen3's rule applies (rendered only after the last user message, see :mod:`.reasoning`).
* Content may be a string, ``None`` or a list of parts; parts are joined with ``"\\n"``
  (vLLM's "string" content format).
* Images (chat ``{"type": "image_url", "image_url": {"url": ...}}`` or ``"image_url": "..."``, and
  ``{"type": "input_image", "image_url": "..."}``) are priced as on a Qwen2.5-VL server
  (:data:`litellm_kvwarm.image_tokens.QWEN2_VL_RULE`: ``smart_resize`` to multiples of 28, then
  ``(h/28)*(w/28)`` pad tokens + ``<|vision_start|>``/``<|vision_end|>``) when their size can be
  read from a ``data:`` URL (:mod:`litellm_kvwarm.image_size`). :func:`image_token_ids` gives that
  run of ids; they are derived from a hash of the URL, so two different images never share a
  cached prefix block while the same image repeated does (vLLM keys its cache blocks by the image's
  hash the same way). :func:`render_chat` shows such an image as the Qwen2-VL template's
  ``<|vision_start|><|image_pad|><|vision_end|>`` (before the processor expands the pad), so
  ``encode(render_chat(...))`` is *not* the token ids of a prompt with images;
  :func:`chat_token_ids` is. An image of unknown size (remote URL, unreadable bytes), and every
  other non-text part (audio, file), costs exactly :data:`MEDIA_PART_TOKENS` tokens, a fixed
  stand-in for an encoder.
* ``response_format``: vLLM enforces it by guided decoding and does *not* put the schema in
  the prompt; the emulator does the same unless ``render_response_format=True``, which
  appends the schema at the end of the system turn (a pessimistic server).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

from .reasoning import qwen3_messages

__all__ = [
    "DEFAULT_SYSTEM_PROMPT",
    "FILLER_WORDS",
    "MEDIA_PART_TOKENS",
    "chat_token_ids",
    "count_chat_tokens",
    "count_tokens",
    "decode",
    "encode",
    "filler_pieces",
    "get_encoding",
    "image_token_ids",
    "image_url_of_part",
    "render_chat",
]

ENCODING_NAME = "cl100k_base"
#: Qwen2.5's template adds this system turn when the conversation has no system message.
DEFAULT_SYSTEM_PROMPT = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."
#: Tokens one non-text content part (image_url, input_audio, file, …) costs.
MEDIA_PART_TOKENS = 64
_MEDIA_PLACEHOLDER = " img" * MEDIA_PART_TOKENS  # " img" is one cl100k token and never merges
_IMAGE_PART_TYPES = ("image_url", "input_image")
#: Stands for the i-th sized image in the rendered text until it is encoded (private-use code points).
_SENTINEL = "\ue000kvwarm-image-{}\ue001"
_SENTINEL_RE = re.compile("\ue000kvwarm-image-(\\d+)\ue001")
_VISION_TEXT = "<|vision_start|><|image_pad|><|vision_end|>"
#: Image ids lie in [256, 100256): cl100k's ordinary (non-byte) ranks, all decodable.
_IMAGE_ID_BASE, _IMAGE_ID_SPAN = 256, 100_000
#: Generated text cycles through these; each is one cl100k token, with or without a leading space.
FILLER_WORDS = ("the", "quick", "brown", "fox", "over", "a", "lazy", "dog", "and", "then", "runs", "far")



def _bundled_tiktoken_dir() -> str | None:
    """LiteLLM's bundled tiktoken files, found without importing LiteLLM (slow)."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return None
    return os.path.join(list(spec.submodule_search_locations)[0], "litellm_core_utils", "tokenizers")


@functools.lru_cache(maxsize=1)
def get_encoding():
    """The shared ``tiktoken`` encoding (loaded once, offline)."""
    bundled = _bundled_tiktoken_dir()
    if bundled and "TIKTOKEN_CACHE_DIR" not in os.environ:
        os.environ["TIKTOKEN_CACHE_DIR"] = bundled
    import tiktoken

    return tiktoken.get_encoding(ENCODING_NAME)


def encode(text: str) -> list[int]:
    """Token ids of ``text`` (special-token text is treated as plain text)."""
    return get_encoding().encode(text, disallowed_special=())


def count_tokens(text: str) -> int:
    """Number of tokens in ``text``."""
    return len(encode(text))


def decode(token_ids: Sequence[int]) -> str:
    """Text of ``token_ids``."""
    return get_encoding().decode(list(token_ids))


@functools.lru_cache(maxsize=1)
def _qwen25_template() -> str:
    from ..calibration.official_templates import TEMPLATE_DIR

    return (TEMPLATE_DIR / "qwen2.5.jinja").read_text(encoding="utf-8")


def _response_format_text(response_format: Mapping[str, Any] | None) -> str:
    if not response_format or response_format.get("type") not in ("json_schema", "json_object"):
        return ""
    schema = (response_format.get("json_schema") or {}).get("schema", {})
    return "\n\n# Response format\n\nRespond with JSON matching this schema:\n" + json.dumps(schema, ensure_ascii=False)


def image_url_of_part(part: Any) -> str | None:
    """The URL of a chat image part (``image_url`` as ``{"url": ...}`` or a string, or
    ``input_image``'s ``image_url`` string), else ``None`` (not an image part, or no URL)."""
    if not isinstance(part, Mapping) or part.get("type") not in _IMAGE_PART_TYPES:
        return None
    url = part.get("image_url")
    if isinstance(url, Mapping):
        url = url.get("url")
    return url if isinstance(url, str) else None


def image_token_ids(url: str) -> list[int] | None:
    """Token ids one image costs on the emulated Qwen2.5-VL server, else ``None`` (size unknown).

    ``url``: an ``image_url`` value; only a ``data:`` URL whose header gives the pixel size is
    priced (see the module docstring). The ids (in cl100k's ordinary range) depend only on the
    URL: the first and last stand for ``<|vision_start|>``/``<|vision_end|>``.
    """
    from ...image_size import image_ref_of_url
    from ...image_tokens import QWEN2_VL_RULE

    ref = image_ref_of_url(url)
    if ref.size is None:
        return None
    count = QWEN2_VL_RULE.counts(*ref.size)[0]
    digest = hashlib.blake2b(url.encode("utf-8", "replace"), digest_size=16).digest()
    start, step = int.from_bytes(digest[:8], "big"), int.from_bytes(digest[8:], "big") | 1
    return [_IMAGE_ID_BASE + (start + i * step) % _IMAGE_ID_SPAN for i in range(count)]


def _with_images(messages: Sequence[Mapping[str, Any]]) -> tuple[list[Mapping[str, Any]], list[list[int]]]:
    """``messages`` with each sized image part replaced by a text part holding a sentinel
    (:data:`_SENTINEL` with the run's index) and the runs of ids those sentinels stand for."""
    runs: list[list[int]] = []
    out: list[Mapping[str, Any]] = []
    for message in messages:
        content = message.get("content") if isinstance(message, Mapping) else None
        if not isinstance(content, list) or not any(image_url_of_part(part) for part in content):
            out.append(message)
            continue
        parts = []
        for part in content:
            url = image_url_of_part(part)
            ids = image_token_ids(url) if url else None
            if ids is None:
                parts.append(part)
            else:
                parts.append({"type": "text", "text": _SENTINEL.format(len(runs))})
                runs.append(ids)
        out.append({**message, "content": parts})
    return out, runs


def _render(
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]] | None,
    *,
    add_generation_prompt: bool = True,
    response_format: Mapping[str, Any] | None = None,
    render_response_format: bool = False,
    template_mode: str = "plain",
) -> tuple[str, list[list[int]]]:
    from ..calibration.hf_chat import render, server_messages

    messages, runs = _with_images(messages)
    prepared = server_messages(messages, media_text=_MEDIA_PLACEHOLDER)
    if template_mode == "qwen3":
        prepared = qwen3_messages(prepared)
    prompt = render(_qwen25_template(), prepared, tools,
                    bos_token=None, eos_token="<|im_end|>", add_generation_prompt=add_generation_prompt)
    schema = _response_format_text(response_format) if render_response_format else ""
    if schema:  # at the end of the system turn, which the template always renders first
        end = prompt.index("<|im_end|>")
        prompt = prompt[:end] + schema + prompt[end:]
    return prompt, runs


def render_chat(
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]] | None = None,
    *,
    add_generation_prompt: bool = True,
    response_format: Mapping[str, Any] | None = None,
    render_response_format: bool = False,
    template_mode: str = "plain",
) -> str:
    """The prompt text the emulated server builds from an OpenAI chat request.

    Args:
        messages: OpenAI chat messages (``role``, ``content``, ``tool_calls``, …).
        tools: OpenAI ``tools`` list, rendered as given (one ``json.dumps`` per tool).
        add_generation_prompt: append ``<|im_start|>assistant\\n`` (vLLM's default).
        response_format: the request's ``response_format``; ignored unless
            ``render_response_format`` (see module docstring).
        template_mode: ``"plain"`` (assistant reasoning never rendered) or ``"qwen3"`` (Qwen3's
            rule for past reasoning, see :mod:`.reasoning`).

    A sized image shows as ``<|vision_start|><|image_pad|><|vision_end|>`` (module docstring).
    """
    prompt, runs = _render(messages, tools, add_generation_prompt=add_generation_prompt,
                           response_format=response_format, render_response_format=render_response_format,
                           template_mode=template_mode)
    if not runs:
        return prompt
    return _SENTINEL_RE.sub(lambda m: _VISION_TEXT if int(m.group(1)) < len(runs) else m.group(0), prompt)


def chat_token_ids(
    messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] | None = None, **kwargs: Any
) -> list[int]:
    """Token ids of the prompt (same arguments as :func:`render_chat`): the rendered text encoded,
    each sized image as its :func:`image_token_ids` run (the text around it encoded apart)."""
    prompt, runs = _render(messages, tools, **kwargs)
    if not runs:
        return encode(prompt)
    ids: list[int] = []
    pieces = _SENTINEL_RE.split(prompt)  # text, index, text, index, ..., text
    for i, piece in enumerate(pieces):
        if i % 2:  # a sentinel index; one not issued here (a client's own text) stays text
            k = int(piece)
            ids.extend(runs[k] if k < len(runs) else encode(_SENTINEL.format(k)))
        elif piece:
            ids.extend(encode(piece))
    return ids


def count_chat_tokens(
    messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] | None = None, **kwargs: Any
) -> int:
    """``usage.prompt_tokens`` the emulator reports for this chat request (same arguments as :func:`render_chat`)."""
    return len(chat_token_ids(messages, tools, **kwargs))


def filler_pieces(n: int) -> list[str]:
    """``n`` generated-text pieces, one token each; ``"".join`` is exactly ``n`` tokens."""
    return [(" " if i else "") + FILLER_WORDS[i % len(FILLER_WORDS)] for i in range(n)]

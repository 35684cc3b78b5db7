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
* Content may be a string, ``None`` or a list of parts; text parts are joined with
  ``"\\n"`` (vLLM's "string" content format). Every non-text part (image, audio, file)
  costs exactly :data:`MEDIA_PART_TOKENS` tokens, a fixed stand-in for a vision encoder.
* ``response_format``: vLLM enforces it by guided decoding and does *not* put the schema in
  the prompt; the emulator does the same unless ``render_response_format=True``, which
  appends the schema at the end of the system turn (a pessimistic server).
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

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
    "render_chat",
]

ENCODING_NAME = "cl100k_base"
#: Qwen2.5's template adds this system turn when the conversation has no system message.
DEFAULT_SYSTEM_PROMPT = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."
#: Tokens one non-text content part (image_url, input_audio, file, …) costs.
MEDIA_PART_TOKENS = 64
_MEDIA_PLACEHOLDER = " img" * MEDIA_PART_TOKENS  # " img" is one cl100k token and never merges
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


def render_chat(
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]] | None = None,
    *,
    add_generation_prompt: bool = True,
    response_format: Mapping[str, Any] | None = None,
    render_response_format: bool = False,
) -> str:
    """The prompt text the emulated server builds from an OpenAI chat request.

    Args:
        messages: OpenAI chat messages (``role``, ``content``, ``tool_calls``, …).
        tools: OpenAI ``tools`` list, rendered as given (one ``json.dumps`` per tool).
        add_generation_prompt: append ``<|im_start|>assistant\\n`` (vLLM's default).
        response_format: the request's ``response_format``; ignored unless
            ``render_response_format`` (see module docstring).
    """
    from ..calibration.hf_chat import render, server_messages

    prompt = render(_qwen25_template(), server_messages(messages, media_text=_MEDIA_PLACEHOLDER), tools,
                    bos_token=None, eos_token="<|im_end|>", add_generation_prompt=add_generation_prompt)
    schema = _response_format_text(response_format) if render_response_format else ""
    if schema:  # at the end of the system turn, which the template always renders first
        end = prompt.index("<|im_end|>")
        prompt = prompt[:end] + schema + prompt[end:]
    return prompt


def chat_token_ids(
    messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] | None = None, **kwargs: Any
) -> list[int]:
    """Token ids of :func:`render_chat` (same arguments)."""
    return encode(render_chat(messages, tools, **kwargs))


def count_chat_tokens(
    messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] | None = None, **kwargs: Any
) -> int:
    """``usage.prompt_tokens`` the emulator reports for this chat request (same arguments as :func:`render_chat`)."""
    return len(chat_token_ids(messages, tools, **kwargs))


def filler_pieces(n: int) -> list[str]:
    """``n`` generated-text pieces, one token each; ``"".join`` is exactly ``n`` tokens."""
    return [(" " if i else "") + FILLER_WORDS[i % len(FILLER_WORDS)] for i in range(n)]

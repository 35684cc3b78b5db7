"""The emulator's tokenizer and chat template: what a prompt costs on the emulated server.

Contract: every token count the emulator reports (``usage.prompt_tokens``, ``/tokenize``'s
``count``, the numbers in its context errors) comes from :func:`chat_token_ids` /
:func:`encode` here, so the same request always costs the same tokens everywhere.

* Encoding: tiktoken ``cl100k_base``, loaded offline from the copy LiteLLM bundles
  (``litellm/litellm_core_utils/tokenizers``; ``TIKTOKEN_CACHE_DIR`` is pointed there unless
  already set). Special-token text such as ``<|endoftext|>`` is encoded as plain text.
* Chat template: Qwen2.5's ChatML template, rendered in Python. A default system prompt is
  added when the conversation has none (as Qwen2.5's template does). ``tools`` are rendered
  into the system turn, one JSON schema per line inside ``<tools>``, so tool schemas cost
  tokens as on a real server; assistant ``tool_calls`` become ``<tool_call>`` blocks
  (``arguments`` given as a JSON string is parsed first, as vLLM does before templating) and
  ``tool`` messages become ``<tool_response>`` blocks inside a user turn.
* Content may be a string, ``None`` or a list of parts; text parts are joined with
  ``"\\n"`` (vLLM's "string" content format). Every non-text part (image, audio, file)
  costs exactly :data:`MEDIA_PART_TOKENS` tokens, a fixed stand-in for a vision encoder.
* ``response_format``: vLLM enforces it by guided decoding and does *not* put the schema in
  the prompt; the emulator does the same unless ``render_response_format=True``, which
  appends the schema to the system turn (a pessimistic server).
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

_TOOLS_HEADER = (
    "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
)
_TOOLS_FOOTER = (
    "\n</tools>\n\nFor each function call, return a json object with function name and arguments "
    'within <tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, '
    '"arguments": <args-json-object>}\n</tool_call>'
)
_TEXT_PART_TYPES = frozenset({"text", "input_text", "output_text"})


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


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        pieces = []
        for part in content:
            if isinstance(part, str):
                pieces.append(part)
            elif isinstance(part, Mapping) and part.get("type", "text") in _TEXT_PART_TYPES:
                pieces.append(str(part.get("text") or ""))
            else:
                pieces.append(_MEDIA_PLACEHOLDER)
        return "\n".join(pieces)
    return str(content)


def _tool_call_text(call: Mapping[str, Any]) -> str:
    function = call.get("function", call)
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            pass  # rendered as the JSON string it is
    name = function.get("name")
    return f'\n<tool_call>\n{{"name": "{name}", "arguments": {json.dumps(arguments, ensure_ascii=False)}}}\n</tool_call>'


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
    messages = list(messages)
    first_is_system = bool(messages) and messages[0].get("role") == "system"
    system = _content_text(messages[0].get("content")) if first_is_system else DEFAULT_SYSTEM_PROMPT
    if tools:
        system += _TOOLS_HEADER + "".join("\n" + json.dumps(tool, ensure_ascii=False) for tool in tools) + _TOOLS_FOOTER
    if render_response_format:
        system += _response_format_text(response_format)
    out = [f"<|im_start|>system\n{system}<|im_end|>\n"]

    for index, message in enumerate(messages):
        role = message.get("role")
        if index == 0 and first_is_system:
            continue
        if role == "tool":
            if index == 0 or messages[index - 1].get("role") != "tool":
                out.append("<|im_start|>user")
            out.append(f"\n<tool_response>\n{_content_text(message.get('content'))}\n</tool_response>")
            if index == len(messages) - 1 or messages[index + 1].get("role") != "tool":
                out.append("<|im_end|>\n")
        elif role == "assistant" and message.get("tool_calls"):
            content = _content_text(message.get("content"))
            out.append("<|im_start|>assistant" + (f"\n{content}" if content else ""))
            out.extend(_tool_call_text(call) for call in message["tool_calls"])
            out.append("<|im_end|>\n")
        else:
            out.append(f"<|im_start|>{role}\n{_content_text(message.get('content'))}<|im_end|>\n")
    if add_generation_prompt:
        out.append("<|im_start|>assistant\n")
    return "".join(out)


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

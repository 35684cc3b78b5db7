"""Content blocks of every API the plugin reads, as the text a chat template renders (pure).

One collector for the content parts of OpenAI chat messages, Anthropic Messages blocks and
Responses content parts, because clients mix them (an OpenAI chat message may carry
Anthropic-style ``tool_result`` blocks; LiteLLM translates all of them into chat messages for a
``hosted_vllm`` backend). What each block contributes:

==========================================  ==============================================================
block ``type``                              counted as
==========================================  ==============================================================
``text``, ``input_text``, ``output_text``   ``text``
``refusal``                                 ``refusal``
``thinking``                                ``thinking`` (the signature counts nothing: it is not rendered)
``redacted_thinking``                       nothing (encrypted; the backend cannot render it)
``reasoning_text``, ``summary_text``        ``text``
``tool_use`` / ``server_tool_use``          ``name`` + the JSON text of ``input``
``tool_result`` (and ``*_tool_result``)     its ``content``: a string, or nested blocks (recursively, iteratively)
``document``                                ``title``, ``context`` and a text source (``data``) or nested
                                            ``content`` blocks; a base64/URL document (PDF) is an other part
``search_result``                           ``title``, ``source`` and its ``content`` blocks
``image``, ``image_url``, ``input_image``   an :class:`~litellm_kvwarm.image_tokens.ImageRef` (sized from
                                            the data URL / base64 header when it has one)
anything else (audio, files, unknown)       one other part (:data:`~litellm_kvwarm.token_estimators.SAFE_TOKENS_PER_OTHER_PART`
                                            safe tokens, none for routing)
==========================================  ==============================================================

Nothing here recurses on the client's nesting depth: nested blocks are walked with an explicit stack.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from .deep_json import lenient_json_text as _json_text
from .image_size import image_ref_of_base64, image_ref_of_url
from .image_tokens import ImageRef

__all__ = ["Collected", "collect_blocks"]

_TEXT_KEYS = {
    "text": "text", "input_text": "text", "output_text": "text", "refusal": "refusal",
    "thinking": "thinking", "reasoning_text": "text", "summary_text": "text",
}
_SKIPPED = frozenset({"redacted_thinking"})
_TOOL_USES = frozenset({"tool_use", "server_tool_use", "mcp_tool_use"})


@dataclass
class Collected:
    """Accumulator of one request's rendered text pieces, images and other parts."""

    parts: list[str] = field(default_factory=list)
    images: list[ImageRef] = field(default_factory=list)
    other: int = 0

    def text(self, value: object) -> None:
        """Add a string as rendered text; anything else by its JSON text (a deliberate over-count)."""
        if isinstance(value, str):
            self.parts.append(value)
        elif value is not None:
            self.parts.append(_json_text(value))


def collect_blocks(content: object, into: Collected) -> None:
    """Add a message's ``content`` (a string, one block, or a list of blocks/strings) to ``into``."""
    stack: list[object] = [content]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            into.parts.append(item)
        elif isinstance(item, list):
            stack.extend(reversed(item))
        elif isinstance(item, Mapping):
            nested = _block(item, into)
            if nested is not None:
                stack.append(nested)
        elif item is not None:
            into.text(item)


def _block(block: Mapping[str, object], into: Collected) -> object:
    """Count one block; returns nested content still to walk (``None``: none)."""
    kind = block.get("type")
    key = _TEXT_KEYS.get(kind) if isinstance(kind, str) else None
    if key is not None:
        into.text(block.get(key))
        return None
    if kind in _SKIPPED:
        return None
    if kind in _TOOL_USES:
        into.text(block.get("name"))
        into.text(block.get("input"))
        return None
    if isinstance(kind, str) and kind.endswith("tool_result"):
        return block.get("content")
    if kind in ("image", "image_url", "input_image"):
        into.images.append(_image_ref(block))
        return None
    if kind == "document" or kind == "search_result":
        return _document(block, into)
    if kind is None and "text" in block and isinstance(block.get("text"), str):
        into.parts.append(block["text"])  # type: ignore[arg-type]
        return None
    into.other += 1  # audio, files, unknown types: priced as a non-text part
    return None


def _document(block: Mapping[str, object], into: Collected) -> object:
    for key in ("title", "context"):
        if isinstance(block.get(key), str):
            into.parts.append(block[key])  # type: ignore[arg-type]
    source = block.get("source")
    if block.get("type") == "search_result":
        into.text(source if isinstance(source, str) else None)
        return block.get("content")
    if isinstance(source, Mapping):
        if source.get("type") == "text":
            into.text(source.get("data"))
            return None
        if source.get("type") == "content":
            return source.get("content")
    into.other += 1  # a PDF (base64, URL or file id): its cost depends on the backend's parser
    return None


def _image_ref(block: Mapping[str, object]) -> ImageRef:
    """Anthropic ``image`` (``source``: base64 or URL), OpenAI ``image_url`` (``{url, detail}`` or a
    string), Responses ``input_image`` (``image_url`` string or ``file_id``, ``detail``)."""
    source = block.get("source")
    if isinstance(source, Mapping):
        if source.get("type") == "base64":
            return image_ref_of_base64(source.get("data"), source.get("media_type"))
        return image_ref_of_url(source.get("url"))
    url = block.get("image_url")
    if isinstance(url, Mapping):
        return image_ref_of_url(url.get("url"), url.get("detail"))
    return image_ref_of_url(url, block.get("detail"))

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
                                            ``content`` blocks; a base64 PDF a :class:`~.media_tokens.MediaRef`
                                            (priced by its pages), an office document (docx, xlsx, pptx)
                                            one priced by its text parts (:mod:`~.token_office`); a URL /
                                            file id one other part
``search_result``                           ``title``, ``source`` and its ``content`` blocks
``image``, ``image_url``, ``input_image``,  an :class:`~litellm_kvwarm.image_tokens.ImageRef` (sized from
``computer_screenshot``                     the data URL / base64 header when it has one)
``file``, ``input_file``                    by their ``file_data``: a PDF, audio or office document a
                                            ``MediaRef``, an image an ``ImageRef``, text its decoded text;
                                            a file id / URL one other part
``input_audio``, ``audio_url``              a ``MediaRef`` (priced by its duration); no data: one other part
``video_url``, ``video`` (vLLM, Qwen)       a ``MediaRef`` (:mod:`~.video_tokens`); a link: priced as any video
anything else (server-tool results such     its key names and string/number leaves, walked through nested
as ``web_fetch_result`` or                  dicts and lists (blocks found inside are counted as above),
``bash_code_execution_result``, future      skipping what is never rendered (:data:`NOT_RENDERED`, keys
or unknown types, a non-string type)        ending in ``_id``, encrypted payloads); media inside (an
                                            ``image_url``, a ``source`` with a media type, a data URL, a long
                                            base64 image/PDF/audio payload) is priced as media, not as its
                                            base64 text; a block with nothing of that
                                            kind is one other part (``SAFE_TOKENS_PER_OTHER_PART`` safe
                                            tokens, none for routing), a mapping inside its data its ``type``
==========================================  ==============================================================

Nothing here recurses on the client's nesting depth: nested blocks are walked with an explicit stack.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from .deep_json import lenient_json_text as _json_text
from .image_size import image_ref_of_base64, image_ref_of_url
from .image_tokens import ImageRef
from .media_tokens import MediaRef, audio_ref
from .token_payloads import add_payload, media_leaf, mime_kind
from .video_tokens import VIDEO_LINK, video_ref

__all__ = ["NOT_RENDERED", "Collected", "collect_blocks", "collect_unknown"]

_TEXT_KEYS = {
    "text": "text", "input_text": "text", "output_text": "text", "refusal": "refusal",
    "thinking": "thinking", "reasoning_text": "text", "summary_text": "text",
}
_SKIPPED, _TOOL_USES = frozenset({"redacted_thinking"}), frozenset({"tool_use", "server_tool_use", "mcp_tool_use"})
_IMAGES = frozenset({"image", "image_url", "input_image", "computer_screenshot"})
_FILES = frozenset({"file", "input_file"})
_AUDIO, _VIDEO = frozenset({"input_audio", "audio_url", "audio"}), frozenset({"video_url", "video"})
#: Keys of an unknown block that no template renders: identifiers, the block's type, cache and
#: signature metadata (and any key ending in ``_id``), and opaque encrypted payloads (a web search
#: result's ``encrypted_content``, a citation's ``encrypted_index``: like ``redacted_thinking``, no
#: backend can render them, and any key starting ``encrypted_``).
NOT_RENDERED = frozenset({"type", "id", "cache_control", "signature", "status", "index", "encrypted_content",
                          "encrypted_index"})
@dataclass
class Collected:
    """Accumulator of one request's rendered text pieces, images, sized media and other parts."""

    parts: list[str] = field(default_factory=list)
    images: list[ImageRef] = field(default_factory=list)
    other: int = 0
    media: list[MediaRef] = field(default_factory=list)
    #: reasoning no template renders (before the last user message: :mod:`~litellm_kvwarm.token_reasoning`)
    past_reasoning: list[str] = field(default_factory=list)

    def text(self, value: object) -> None:
        """Add a string as rendered text; anything else by its JSON text (a deliberate over-count)."""
        if isinstance(value, str):
            self.parts.append(value)
        elif value is not None:
            self.parts.append(_json_text(value))


#: Stands between two items of one content list on the walk's stack (:func:`collect_blocks`).
_BETWEEN = object()


@dataclass(frozen=True)
class _Inner:
    """A value met inside an unknown block's data (:func:`_unknown`), not a content block of a message."""

    value: object


def collect_blocks(content: object, into: Collected) -> None:
    """Add a message's ``content`` (a string, one block, or a list of blocks/strings) to ``into``.

    Two items of one list that both add text are joined by a line break, as the server joins them: vLLM
    (``chat_utils._parse_chat_message_content_parts``, 0.6-0.11, the "string" content format) renders
    a content list's text parts ``"\n".join``-ed, and LiteLLM's Messages and Responses bridges hand it
    their text blocks as such a list. Without it, 400 one-word parts read as one 3,000-letter word:
    0.02-0.29 of the true count in routing (qwen2.5, Llama 3, DeepSeek V3)."""
    stack: list[object] = [content]
    start, last_break = len(into.parts), -1
    while stack:
        item = stack.pop()
        inner, item = (True, item.value) if isinstance(item, _Inner) else (False, item)
        if item is _BETWEEN:
            if len(into.parts) > start and last_break != len(into.parts) - 1:
                into.parts.append("\n")
                last_break = len(into.parts) - 1
        elif isinstance(item, str):
            into.parts.append(item)
        elif isinstance(item, list):
            for index in range(len(item) - 1, -1, -1):
                stack.append(_Inner(item[index]) if inner else item[index])
                if index:
                    stack.append(_BETWEEN)
        elif isinstance(item, Mapping):
            nested = _block(item, into, inner)
            if nested is not None:
                stack.append(nested)
        elif item is not None:
            into.text(item)
    if last_break >= 0 and last_break == len(into.parts) - 1:
        into.parts.pop()  # after the last item that added text


def collect_unknown(block: Mapping[object, object], into: Collected) -> None:
    """Add ``block`` read as a block of unknown type (its media, key names and leaves; see the
    module docstring), whatever its ``type`` says."""
    nested = _unknown(block, into)
    if nested is not None:
        collect_blocks(nested, into)


def _block(block: Mapping[str, object], into: Collected, inner: bool = False) -> object:
    """Count one block (``inner``: met inside an unknown block's data); returns nested content still to walk."""
    raw = block.get("type")
    kind = raw if isinstance(raw, str) else (None if raw is None else "")  # a list/dict type: unknown
    key = _TEXT_KEYS.get(kind) if kind else None
    if key is not None:
        into.text(block.get(key))
        return None
    if kind in _SKIPPED:
        return None
    if kind in _TOOL_USES:
        into.text(block.get("name"))
        into.text(block.get("input"))
        return None
    if kind and kind.endswith("tool_result"):
        return block.get("content")
    if kind in _IMAGES:
        into.images.append(_image_ref(block))
        return None
    if kind == "document" or kind == "search_result":
        return _document(block, into)
    if kind in _FILES:
        _file(block, into)
        return None
    if kind in _AUDIO or kind in _VIDEO:
        _audio_video(block, into, kind in _VIDEO)
        return None
    if kind is None and isinstance(block.get("text"), str):
        into.parts.append(block["text"])  # type: ignore[arg-type]
        return None
    return _unknown(block, into, inner)


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
        if isinstance(source.get("data"), str):
            add_payload(source["data"], 0, source.get("media_type"), into)  # type: ignore[arg-type]
            return None
    into.other += 1  # a URL or file id: no bytes to price
    return None


def _file(block: Mapping[str, object], into: Collected) -> None:
    """Chat ``file`` (``{file: {file_data, filename, file_id}}``), Responses ``input_file`` (``file_data``, ``file_id``, ...)."""
    inner = block.get("file")
    holder = inner if isinstance(inner, Mapping) else block
    data = holder.get("file_data")
    if isinstance(data, str) and data:
        add_payload(data, 0, None, into)
    else:
        into.other += 1  # a file id or URL: no bytes to price


def _audio_video(block: Mapping[str, object], into: Collected, video: bool) -> None:
    """``input_audio`` (``{input_audio: {data, format}}``, or ``data`` on the block), vLLM's ``audio_url`` /
    ``video_url`` (``{url}`` or a string: a data URL or a link) and Qwen's ``{"type": "video", "video": url}``."""
    inner = block.get("input_audio")
    holder = inner if isinstance(inner, Mapping) else block
    data = holder.get("data")
    url = (block.get("video_url") or block.get("video")) if video else block.get("audio_url")
    url = url.get("url") if isinstance(url, Mapping) else url
    if isinstance(data, str) and data:
        into.media.append(video_ref(data) if video else audio_ref(data))
    elif isinstance(url, str) and url[:5].lower() == "data:":
        add_payload(url, 0, None, into)
    elif video and isinstance(url, str) and url:
        into.media.append(VIDEO_LINK)  # a link: no bytes to read
    else:
        into.other += 1


def _unknown(block: Mapping[object, object], into: Collected, inner: bool = False) -> object:
    """A block of a type this module does not know: media it holds, else its key names and leaves;
    returns the nested containers to walk (as blocks met inside its data, :class:`_Inner`).

    With nothing to read, a content block is one other part (it may stand for media: an ``input_video``
    file id), a mapping inside a block's data (``inner``: a schema's ``{"type": "string"}``) its ``type``:
    at 1,024 safe tokens each, an ``mcp_list_tools`` item of 40 tools read safe 83,769 (its JSON: 2,059 qwen2.5 tokens)."""
    if _media_container(block, into):
        return None
    nested: list[object] = []
    found = False
    for key, value in block.items():
        if isinstance(key, str) and (key in NOT_RENDERED or key.endswith("_id") or key.startswith("encrypted_")):
            continue
        if isinstance(value, str):
            if value:
                into.text(key)
                if not media_leaf(value, into):
                    into.parts.append(value)
                found = True
        elif isinstance(value, (list, Mapping)):
            into.text(key)
            nested.append(value)
            found = True
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            into.text(key)
            into.parts.append(repr(value))
            found = True
    if not found and inner:
        into.text(block.get("type") if isinstance(block.get("type"), str) else None)
    elif not found:
        into.other += 1  # nothing to read: priced as a non-text part
    return _Inner(nested) if nested else None


def _media_container(block: Mapping[object, object], into: Collected) -> bool:
    """A mapping that carries media whatever its type (an ``image_url``, a ``source`` with a media type or base64
    data, ``data`` with a ``media_type``/``mime_type``: Gemini-style): added to ``into``; ``False`` if none."""
    url = block.get("image_url")
    if url is not None:
        into.images.append(_image_ref(block))  # type: ignore[arg-type]
        return True
    source = block.get("source")
    if isinstance(source, Mapping) and (source.get("media_type") or source.get("type") == "base64"):
        data, url = source.get("data"), source.get("url")
        if isinstance(data, str):
            add_payload(data, 0, source.get("media_type"), into)
        elif isinstance(url, str) and mime_kind(source.get("media_type")) == "image":
            into.images.append(image_ref_of_url(url))
        else:
            into.other += 1
        return True
    media_type = block.get("media_type") or block.get("mime_type") or block.get("mimeType")
    data = block.get("data")
    if isinstance(media_type, str) and isinstance(data, str) and mime_kind(media_type):
        add_payload(data, 0, media_type, into)
        return True
    return False


def _image_ref(block: Mapping[str, object]) -> ImageRef:
    """Anthropic ``image`` (``source``: base64 or URL), OpenAI ``image_url`` (``{url, detail}`` or a
    string), Responses ``input_image`` / ``computer_screenshot`` (``image_url`` string or ``file_id``,
    ``detail``)."""
    source = block.get("source")
    if isinstance(source, Mapping):
        if source.get("type") == "base64":
            return image_ref_of_base64(source.get("data"), source.get("media_type"))
        return image_ref_of_url(source.get("url"))
    url = block.get("image_url")
    if isinstance(url, Mapping):
        return image_ref_of_url(url.get("url"), url.get("detail"))
    return image_ref_of_url(url, block.get("detail"))

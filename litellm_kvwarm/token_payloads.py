"""Base64 payloads inside content blocks: what they are (media type, else their first bytes) and
where they are counted (pure; a helper of :mod:`litellm_kvwarm.token_blocks`).

An image becomes an :class:`~litellm_kvwarm.image_tokens.ImageRef`; a PDF, audio or video a
:class:`~litellm_kvwarm.media_tokens.MediaRef` (video: :mod:`~litellm_kvwarm.video_tokens`); a text file (``text/*``, JSON, XML, YAML, ...) its
decoded text, up to :data:`MAX_TEXT_FILE_BYTES` (larger: priced from its size); an office document
(docx, xlsx, pptx, OpenDocument) a ``MediaRef`` priced by its text parts
(:func:`~litellm_kvwarm.token_office.office_ref`); another binary type (a ZIP of something else, a
legacy ``.doc``) one flat-priced other part. Only a prefix is decoded to tell the type (64 base64
characters).
"""

from __future__ import annotations

import binascii
from typing import TYPE_CHECKING

from .image_size import decode_prefix, image_ref_of_base64, image_ref_of_url
from .media_tokens import audio_ref, base64_bytes, pdf_ref, sniff, text_file_ref
from .token_office import office_ref
from .video_tokens import is_video, video_ref

if TYPE_CHECKING:
    from .token_blocks import Collected

__all__ = ["MAX_TEXT_FILE_BYTES", "MEDIA_LEAF_CHARS", "add_payload", "media_leaf", "mime_kind"]

#: A string leaf of an unknown block at least this long is checked for a base64 media payload
#: (64 characters decoded: image, PDF, audio and video magic numbers).
MEDIA_LEAF_CHARS = 256
#: Text file payloads (``text/*``, JSON, XML, ...) decoded and counted as text up to this many bytes;
#: a larger one is priced from its size (:func:`~.media_tokens.text_file_ref`).
MAX_TEXT_FILE_BYTES = 4 * 1024 * 1024
_OFFICE_MEDIA = ("application/vnd.openxmlformats-officedocument.", "application/vnd.oasis.opendocument.")
_TEXT_MEDIA = ("text/", "application/json", "application/xml", "application/x-yaml", "application/yaml",
               "application/javascript", "application/x-python", "application/csv")


def media_leaf(value: str, into: Collected) -> bool:
    """A string leaf of an unknown block that is a media payload (a data URL, or long base64 whose
    first bytes are an image, PDF, audio or video file): added to ``into`` as media."""
    if value[:5].lower() == "data:":
        comma = value.find(",", 5, 512)
        if comma > 0 and ";base64" in value[5:comma].lower():
            return add_payload(value, 0, None, into, text_ok=False)
        return False
    if len(value) >= MEDIA_LEAF_CHARS and not value[:64].isspace():
        head = decode_prefix(value, 0, 64)
        if head and _sniff(head):
            return add_payload(value, 0, None, into, text_ok=False)
    return False


def mime_kind(media_type: object) -> str:
    """``"image"``, ``"pdf"``, ``"audio"``, ``"video"``, ``"office"`` (OOXML, OpenDocument), ``"text"`` or ``""`` of a media type."""
    if not isinstance(media_type, str):
        return ""
    mt = media_type.strip().lower()
    if mt.startswith("image/"):
        return "image"
    if mt == "application/pdf":
        return "pdf"
    if mt.startswith("audio/"):
        return "audio"
    if mt.startswith("video/"):
        return "video"
    if mt.startswith(_OFFICE_MEDIA):
        return "office"
    if mt.startswith(_TEXT_MEDIA) or mt.endswith(("+json", "+xml")):
        return "text"
    return ""


def add_payload(data: str, start: int, media_type: object, into: Collected, *, text_ok: bool = True) -> bool:
    """Price a base64 payload (``data[start:]``, or a ``data:`` URL) by what it is: its media type,
    else its first bytes. Returns whether it was priced as media (``False``: nothing was added,
    only when ``text_ok`` is false and the payload is neither media nor text)."""
    if data[start:start + 5].lower() == "data:":
        comma = data.find(",", start + 5, start + 512)
        if comma < 0 or ";base64" not in data[start + 5:comma].lower():
            if text_ok:
                into.parts.append(data)
            return text_ok
        media_type, start = data[start + 5:comma].split(";", 1)[0], comma + 1
    kind = mime_kind(media_type)
    if not kind:
        head = decode_prefix(data, start, 64)
        kind = _sniff(head) if head else ""
    if kind == "image":  # start > 0 only for a data URL, which the image reader parses itself
        into.images.append(image_ref_of_url(data) if start else image_ref_of_base64(data))
    elif kind == "pdf":
        into.media.append(pdf_ref(data, start))
    elif kind == "audio":
        into.media.append(audio_ref(data, start))
    elif kind == "video":
        into.media.append(video_ref(data, start))
    elif kind == "office" and (office := office_ref(data, start)) is not None:
        into.media.append(office)
    elif kind == "text":
        size = base64_bytes(data, start)
        if size <= MAX_TEXT_FILE_BYTES:
            into.parts.append(_decoded_text(data, start))
        else:
            into.media.append(text_file_ref(size))
    elif text_ok:
        into.other += 1  # another binary file type (a legacy .doc, a ZIP of no office type): its cost depends on the parser
    else:
        return False
    return True


def _sniff(head: bytes) -> str:
    """:func:`~litellm_kvwarm.media_tokens.sniff`, and ``"video"`` (:func:`~litellm_kvwarm.video_tokens.is_video`)."""
    return sniff(head) or ("video" if is_video(head) else "")


def _decoded_text(data: str, start: int) -> str:
    """The text of a base64 text file (UTF-8, undecodable bytes replaced)."""
    try:
        return binascii.a2b_base64(data[start:].encode("ascii", "ignore")).decode("utf-8", "replace")
    except (binascii.Error, ValueError):
        return data[start:]

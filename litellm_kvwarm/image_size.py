"""Pixel size of an image from its first bytes (pure; PNG, JPEG, WebP, GIF; no full decode).

* :func:`image_size`: ``(width, height)`` from an image file's leading bytes: PNG ``IHDR``, JPEG
  ``SOFn`` (segments before it, such as EXIF ``APP1``, skipped by their lengths), WebP ``VP8 ``,
  ``VP8L`` and ``VP8X``, GIF logical screen.
* :func:`image_ref_of_url` / :func:`image_ref_of_base64`: an :class:`~.image_tokens.ImageRef`
  from an OpenAI ``image_url`` value or an Anthropic base64 source. Only a prefix of the base64
  text is decoded: :data:`FIRST_CHARS` characters (enough for PNG, GIF and WebP headers), and for a
  JPEG whose ``SOF`` lies further on (EXIF thumbnails, ICC profiles) 4x more each round up to
  :data:`MAX_DECODED_BYTES`. A multi-MB data URL is never copied or decoded whole, and whatever
  follows the header (even invalid base64) is never read.

Nothing here raises: any input that is not a readable image header gives ``None`` / a size-unknown
:class:`~.image_tokens.ImageRef`. EXIF orientation is ignored; every rule in
:mod:`~.image_tokens` is symmetric in width and height.
"""

from __future__ import annotations

import binascii
import re
import struct

from .image_tokens import ImageRef

__all__ = ["FIRST_CHARS", "MAX_DECODED_BYTES", "decode_prefix", "image_ref_of_base64", "image_ref_of_url", "image_size"]

#: base64 characters decoded first (48 bytes: the PNG, GIF and WebP headers).
FIRST_CHARS = 64
#: JPEG: bytes decoded at most while looking for the SOF marker (256 KiB).
MAX_DECODED_BYTES = 256 * 1024
_JPEG_FIRST_CHARS = 4096
_PNG = b"\x89PNG\r\n\x1a\n"
#: SOF0..SOF15 minus DHT (C4), JPG (C8) and DAC (CC).
_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
#: markers without a length field: TEM, RST0..7, SOI, EOI.
_STANDALONE = frozenset({0x01, *range(0xD0, 0xDA)})
_URLSAFE = bytes.maketrans(b"-_", b"+/")
_WHITESPACE = b" \t\r\n\f\v"
_B64_PREFIX = re.compile(rb"[A-Za-z0-9+/]*")


def _positive(width: int, height: int) -> tuple[int, int] | None:
    return (width, height) if width > 0 and height > 0 else None


def _png(head: bytes) -> tuple[int, int] | None:
    if len(head) < 24 or head[12:16] != b"IHDR":
        return None
    return _positive(*struct.unpack(">II", head[16:24]))


def _gif(head: bytes) -> tuple[int, int] | None:
    if len(head) < 10:
        return None
    return _positive(*struct.unpack("<HH", head[6:10]))


def _webp(head: bytes) -> tuple[int, int] | None:
    chunk = head[12:16]
    if chunk == b"VP8 " and len(head) >= 30 and head[23:26] == b"\x9d\x01\x2a":
        w, h = struct.unpack("<HH", head[26:30])
        return _positive(w & 0x3FFF, h & 0x3FFF)
    if chunk == b"VP8L" and len(head) >= 25 and head[20] == 0x2F:
        bits = int.from_bytes(head[21:25], "little")
        return _positive((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1)
    if chunk == b"VP8X" and len(head) >= 30:
        w = int.from_bytes(head[24:27], "little") + 1
        h = int.from_bytes(head[27:30], "little") + 1
        return _positive(w, h)
    return None


def _jpeg(head: bytes) -> tuple[int, int] | None:
    i, n = 2, len(head)
    while i + 1 < n:
        if head[i] != 0xFF:
            return None  # not at a marker: corrupt stream
        marker = head[i + 1]
        if marker == 0xFF:  # fill byte before a marker
            i += 1
            continue
        if marker in _STANDALONE:
            i += 2
            continue
        if marker == 0xDA or i + 4 > n:  # image data before any SOF, or the length is cut off
            return None
        length = (head[i + 2] << 8) | head[i + 3]
        if length < 2:
            return None
        if marker in _SOF:
            if i + 9 > n:
                return None
            h, w = struct.unpack(">HH", head[i + 5:i + 9])
            return _positive(w, h)
        i += 2 + length
    return None


def image_size(head: bytes) -> tuple[int, int] | None:
    """``(width, height)`` in pixels read from the leading bytes of an image file, else ``None``.

    ``head``: the file's first bytes (``bytes``/``bytearray``/``memoryview``; 24 suffice for PNG,
    10 for GIF, 30 for WebP; a JPEG needs every segment up to its ``SOFn``). ``None`` for another
    format, truncated or corrupt headers, a zero side, or a non-bytes argument. Never raises.
    """
    try:
        head = bytes(head[:MAX_DECODED_BYTES]) if not isinstance(head, bytes) else head
    except Exception:
        return None
    if head.startswith(_PNG):
        return _png(head)
    if head.startswith(b"\xff\xd8"):
        return _jpeg(head)
    if head.startswith((b"GIF87a", b"GIF89a")):
        return _gif(head)
    if head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return _webp(head)
    return None


def _decode(text: str, start: int, chars: int) -> bytes | None:
    """The bytes of the first ``chars`` base64 characters of ``text[start:]`` (whitespace and the
    URL-safe alphabet tolerated; read up to the first padding or invalid character, cut to a
    multiple of 4), else ``None``."""
    try:
        piece = text[start:start + chars].encode("ascii")
    except UnicodeEncodeError:
        return None
    if b"-" in piece or b"_" in piece:
        piece = piece.translate(_URLSAFE)
    piece = piece.translate(None, _WHITESPACE)
    valid = _B64_PREFIX.match(piece).end()  # up to padding or any non-base64 byte
    piece = piece[: valid // 4 * 4]
    try:
        return binascii.a2b_base64(piece, strict_mode=True)
    except (binascii.Error, ValueError):
        return None


def decode_prefix(text: object, start: int, chars: int) -> bytes | None:
    """The bytes of the first ``chars`` base64 characters of ``text[start:]`` (a ``str``), else ``None``
    (see :func:`_decode`). Never raises; decodes only that prefix."""
    return _decode(text, start, chars) if isinstance(text, str) else None


def _size_of_base64(text: str, start: int = 0) -> tuple[int, int] | None:
    """:func:`image_size` of the base64 image starting at ``text[start]``, decoding a prefix only."""
    head = _decode(text, start, FIRST_CHARS)
    if not head:
        return None
    size = image_size(head)
    if size is not None or not head.startswith(b"\xff\xd8"):
        return size
    chars, total = _JPEG_FIRST_CHARS, len(text) - start
    max_chars = MAX_DECODED_BYTES // 3 * 4
    while True:  # a JPEG whose SOF is further on: 4 KiB, 16 KiB, ... of base64, up to the cap
        head = _decode(text, start, chars)
        if not head:
            return None
        size = image_size(head)
        if size is not None or chars >= total or chars >= max_chars:
            return size
        chars = min(chars * 4, max_chars)


def _detail(detail: object) -> str | None:
    return detail.lower() if isinstance(detail, str) else None


def image_ref_of_url(url: object, detail: object = None) -> ImageRef:
    """The :class:`ImageRef` of an ``image_url`` value.

    ``url``: a ``data:<media type>[;params];base64,<data>`` URL is read (a prefix of it, see the
    module docstring); any other value (``http(s)`` URL, file id, non-base64 data URL, broken
    base64, a non-string) gives a size-unknown ref. ``detail``: OpenAI's ``low``/``high``/``auto``
    (lower-cased; a non-string → ``None``). Never raises.
    """
    ref = ImageRef(detail=_detail(detail))
    if not isinstance(url, str) or url[:5].lower() != "data:":
        return ref
    comma = url.find(",", 5, 512)
    if comma < 0 or ";base64" not in url[5:comma].lower():
        return ref
    size = _size_of_base64(url, comma + 1)
    return ref if size is None else ImageRef(size[0], size[1], ref.detail)


def image_ref_of_base64(data: object, media_type: object = None) -> ImageRef:
    """The :class:`ImageRef` of base64 image bytes (Anthropic ``source: {type: base64}``).

    ``data``: the base64 text (``str``; ``bytes`` are read as ASCII); ``media_type`` is not
    needed (the header says what the bytes are) and is ignored. A data URL given here is read as
    one. Anything unreadable → a size-unknown ref. Never raises.
    """
    if isinstance(data, (bytes, bytearray)):
        try:
            data = bytes(data[: MAX_DECODED_BYTES // 3 * 4]).decode("ascii")
        except UnicodeDecodeError:
            return ImageRef()
    if not isinstance(data, str):
        return ImageRef()
    if data[:5].lower() == "data:":
        return image_ref_of_url(data)
    size = _size_of_base64(data)
    return ImageRef() if size is None else ImageRef(size[0], size[1])

"""Prompt tokens of documents (PDF) and audio, from their bytes (pure; bounded work per payload).

A flat price per file part was ~0 for a 10-minute recording and ~1/400 of a 100-page PDF. Here each
part becomes a :class:`MediaRef` holding its ``(safe, routing)`` tokens, read cheaply from the base64
payload the request carries (a file id or URL carries no bytes: it stays a flat-priced other part,
:data:`~litellm_kvwarm.token_estimators.SAFE_TOKENS_PER_OTHER_PART`).

**PDF** (Anthropic ``document`` base64 sources, Responses ``input_file`` / chat ``file`` parts with
PDF ``file_data``). Anthropic's PDF support docs: each page costs 1,500–3,000 text tokens "depending
on content density" and is also sent as an image, priced like any image (``w·h/750`` at most ~1.15
megapixels: ≤ ~1,600 tokens). So :data:`SAFE_TOKENS_PER_PDF_PAGE` = 3,000 + 1,600 and
:data:`ROUTING_TOKENS_PER_PDF_PAGE` = 1,500 (the low end of the text alone; routing leans low).
The page count is read from the decoded bytes (at most :data:`MAX_PDF_SCAN_BYTES`): the linearization
dictionary's ``/N`` (first KiB), else the page objects, ``/Type /Page`` (not ``/Pages``), counted with
``bytes.count`` at C speed, including those inside compressed object streams (``/ObjStm``, inflated
with ``zlib`` up to :data:`MAX_OBJSTM_BYTES` in all). A PDF whose pages cannot be
read (encrypted object streams, truncated, over the scan cap) is priced from its size: safe assumes
:data:`MIN_PDF_BYTES_PER_PAGE` bytes per page (a compressed text page with no fonts is ~1–2 KB), at most
:data:`MAX_PDF_PAGES` pages (Gemini's documented cap, the largest of the hosted APIs; Anthropic and
OpenAI accept 100); routing :data:`TYPICAL_PDF_BYTES_PER_PAGE`, at least one page.

**Audio** (chat/Responses ``input_audio`` ``{data, format}``, vLLM ``audio_url`` data URLs). Duration
from the header: WAV ``data`` chunk size ÷ the ``fmt `` byte rate; MP3 frame count of a Xing/Info
header × samples per frame ÷ sample rate, else the audio bytes ÷ the first frame's bit rate (CBR).
Other formats, or a header that cannot be read: safe assumes :data:`MIN_AUDIO_BYTES_PER_SECOND`
(4 kbit/s, below every common speech codec), routing :data:`TYPICAL_AUDIO_BYTES_PER_SECOND` (128
kbit/s). Tokens per second: safe :data:`SAFE_AUDIO_TOKENS_PER_SECOND` = 32 (Gemini's documented
rate, the highest of the common encoders; Qwen2-Audio / Qwen2.5-Omni's Whisper encoder pooled to 25
per second, 40 ms frames), routing :data:`ROUTING_AUDIO_TOKENS_PER_SECOND` = 10 (gpt-4o audio,
~1 token per 100 ms).

**Office documents** (docx, xlsx, pptx, OpenDocument): :mod:`litellm_kvwarm.token_office`.

**Text files** too large to decode as text (:func:`text_file_ref`): one safe token per byte (a
byte-level BPE never spends more), routing one per :data:`ROUTING_TEXT_BYTES_PER_TOKEN` bytes.

Nothing here raises; nothing decodes more than :data:`MAX_PDF_SCAN_BYTES` of a payload (audio: its
first :data:`AUDIO_HEAD_BYTES`, and a few bytes past an ID3 tag).
"""

from __future__ import annotations

import binascii
import math
import re
import struct
import zlib
from collections.abc import Iterable
from dataclasses import dataclass

from .image_size import decode_prefix

__all__ = [
    "MediaRef",
    "audio_ref",
    "base64_bytes",
    "media_tokens",
    "pdf_pages",
    "pdf_ref",
    "sniff",
    "text_file_ref",
]

SAFE_TOKENS_PER_PDF_PAGE = 3000 + 1600
ROUTING_TOKENS_PER_PDF_PAGE = 1500
#: Decoded bytes of a PDF read at most to count its pages (16 MiB; ~20 ms of C-speed decoding).
MAX_PDF_SCAN_BYTES = 16 * 1024 * 1024
#: Bytes inflated at most from a PDF's object streams, all streams together (8 MiB; zlib at C speed).
MAX_OBJSTM_BYTES = 8 * 1024 * 1024
MAX_OBJSTM_STREAMS = 1024
MIN_PDF_BYTES_PER_PAGE = 1000
TYPICAL_PDF_BYTES_PER_PAGE = 100_000
MAX_PDF_PAGES = 1000
SAFE_AUDIO_TOKENS_PER_SECOND = 32
ROUTING_AUDIO_TOKENS_PER_SECOND = 10
MIN_AUDIO_BYTES_PER_SECOND = 500
TYPICAL_AUDIO_BYTES_PER_SECOND = 16_000
ROUTING_TEXT_BYTES_PER_TOKEN = 4
#: Decoded bytes of an audio payload read for its header (WAV chunks before ``data``, an MP3 frame).
AUDIO_HEAD_BYTES = 4096


@dataclass(frozen=True)
class MediaRef:
    """One document or audio part: ``kind`` (``"pdf"``/``"audio"``), its payload ``bytes``, what was
    read from it (``pages``, ``seconds``; ``None``: unreadable) and its ``(safe, routing)`` tokens."""

    kind: str
    bytes: int
    safe: int
    routing: int
    pages: int | None = None
    seconds: float | None = None


def media_tokens(refs: Iterable[MediaRef]) -> tuple[int, int]:
    """``(safe, routing)`` prompt tokens of ``refs`` (sums; ``safe >= routing``)."""
    safe = routing = 0
    for ref in refs:
        safe += ref.safe
        routing += ref.routing
    return safe, routing


def base64_bytes(text: str, start: int = 0) -> int:
    """Bytes encoded by the base64 text ``text[start:]`` (from its length: no decoding; whitespace
    and padding are counted as data, a slight over-count)."""
    return max(0, (len(text) - start) * 3 // 4)


def sniff(head: bytes) -> str:
    """``"pdf"``, ``"audio"``, ``"image"``, ``"office"`` (a ZIP container: OOXML, OpenDocument, or
    any ZIP, told apart by :func:`~litellm_kvwarm.token_office.office_ref`) or ``""`` from a file's
    first bytes (magic numbers)."""
    if head.startswith(b"%PDF"):
        return "pdf"
    if head.startswith(b"PK\x03\x04"):
        return "office"
    if (head.startswith(b"RIFF") and head[8:12] == b"WAVE") or head.startswith((b"ID3", b"OggS", b"fLaC")) \
            or (len(head) > 1 and head[0] == 0xFF and head[1] & 0xE0 == 0xE0):
        return "audio"
    if head.startswith((b"\x89PNG", b"\xff\xd8", b"GIF8")) or (head.startswith(b"RIFF") and head[8:12] == b"WEBP"):
        return "image"
    return ""


def text_file_ref(size: int) -> MediaRef:
    """A text file too large to decode (``size`` bytes): safe one token per byte (a byte-level BPE
    never spends more), routing :data:`ROUTING_TEXT_BYTES_PER_TOKEN` bytes per token (English prose
    and code average ~4)."""
    return MediaRef("text", size, size, size // ROUTING_TEXT_BYTES_PER_TOKEN)


# ------------------------------------------------------------------------------------------ PDF

_LINEARIZED = re.compile(rb"/Linearized\b[^>]{0,400}?/N\s+(\d{1,7})")
_SEPARATORS = (b" ", b"", b"\n")


def _page_objects(buf: bytes) -> int:
    """``/Type /Page`` dictionaries in ``buf`` (written with a space, none or a line break), less
    ``/Type /Pages``: ``bytes.count`` only."""
    return sum(buf.count(b"/Type" + sep + b"/Page") - buf.count(b"/Type" + sep + b"/Pages") for sep in _SEPARATORS)


def pdf_pages(data: bytes) -> int | None:
    """Pages of a whole PDF file's bytes (see the module docstring), else ``None``."""
    found = _LINEARIZED.search(data, 0, 1024)
    if found:
        return int(found.group(1)) or None
    pages = _page_objects(data)
    budget, view, pos = MAX_OBJSTM_BYTES, memoryview(data), 0
    for _ in range(MAX_OBJSTM_STREAMS):
        pos = data.find(b"/ObjStm", pos)
        if pos < 0 or budget <= 0:
            break
        pos += 7
        start = data.find(b"stream", pos, pos + 4096)
        if start < 0:
            continue
        start += 6
        start += 2 if data[start:start + 2] == b"\r\n" else 1 if data[start:start + 1] in (b"\n", b"\r") else 0
        try:
            inflated = zlib.decompressobj().decompress(view[start:], budget)
        except zlib.error:
            continue
        budget -= len(inflated)
        pages += _page_objects(inflated)
    return pages or None


def pdf_ref(text: object, start: int = 0) -> MediaRef:
    """The :class:`MediaRef` of a base64 PDF (``text[start:]``; a data URL's payload starts after
    its comma). Never raises."""
    size = base64_bytes(text, start) if isinstance(text, str) else 0
    pages = None
    if isinstance(text, str):
        if size <= MAX_PDF_SCAN_BYTES:
            data = _decode_all(text, start)
            pages = pdf_pages(data) if data else None
        else:  # too large to scan: a linearized file still names its page count in its first KiB
            head = decode_prefix(text, start, 1368)
            found = _LINEARIZED.search(head) if head else None
            pages = int(found.group(1)) if found and int(found.group(1)) > 0 else None
    if pages is not None:
        safe_pages = routing_pages = pages
    else:
        safe_pages = min(MAX_PDF_PAGES, max(1, math.ceil(size / MIN_PDF_BYTES_PER_PAGE)))
        routing_pages = max(1, size // TYPICAL_PDF_BYTES_PER_PAGE)
        routing_pages = min(routing_pages, safe_pages)
    return MediaRef("pdf", size, SAFE_TOKENS_PER_PDF_PAGE * safe_pages, ROUTING_TOKENS_PER_PDF_PAGE * routing_pages,
                    pages=pages)


def _decode_all(text: str, start: int) -> bytes | None:
    try:
        data = text[start:].encode("ascii")
        if b"-" in data or b"_" in data:
            data = data.translate(_URLSAFE)
        return binascii.a2b_base64(data)  # non-alphabet bytes (line breaks) are skipped
    except (binascii.Error, ValueError, UnicodeEncodeError):
        return None


_URLSAFE = bytes.maketrans(b"-_", b"+/")


# ---------------------------------------------------------------------------------------- audio


def audio_ref(text: object, start: int = 0) -> MediaRef:
    """The :class:`MediaRef` of base64 audio (``text[start:]``). Never raises."""
    size = base64_bytes(text, start) if isinstance(text, str) else 0
    head = decode_prefix(text, start, AUDIO_HEAD_BYTES // 3 * 4) if isinstance(text, str) else None
    seconds = None
    if head:
        if head.startswith(b"RIFF") and head[8:12] == b"WAVE":
            seconds = _wav_seconds(head, size)
        elif head.startswith(b"ID3") or (len(head) > 1 and head[0] == 0xFF and head[1] & 0xE0 == 0xE0):
            seconds = _mp3_seconds(text, start, head, size)  # type: ignore[arg-type]
    if seconds is not None:
        safe_seconds = routing_seconds = seconds
    else:
        safe_seconds = size / MIN_AUDIO_BYTES_PER_SECOND
        routing_seconds = size / TYPICAL_AUDIO_BYTES_PER_SECOND
    return MediaRef("audio", size, math.ceil(SAFE_AUDIO_TOKENS_PER_SECOND * safe_seconds),
                    math.floor(ROUTING_AUDIO_TOKENS_PER_SECOND * routing_seconds), seconds=seconds)


def _wav_seconds(head: bytes, size: int) -> float | None:
    """Seconds of a WAV file: its ``data`` chunk ÷ the ``fmt `` byte rate (a ``data`` chunk beyond
    the head, or a streamed size of 0/0xFFFFFFFF: the whole payload ÷ the byte rate)."""
    pos, byte_rate, data = 12, 0, None
    while pos + 8 <= len(head):
        chunk, length = head[pos:pos + 4], struct.unpack("<I", head[pos + 4:pos + 8])[0]
        if chunk == b"fmt " and pos + 20 <= len(head):
            byte_rate = struct.unpack("<I", head[pos + 16:pos + 20])[0]
        elif chunk == b"data":
            data = length
            break
        pos += 8 + length + (length & 1)
    if byte_rate <= 0:
        return None
    if data is None or data in (0, 0xFFFFFFFF) or data > size:
        data = size
    return data / byte_rate


_MP3_BITRATES = {
    1: (0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320),  # MPEG-1 layer III
    2: (0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160),  # MPEG-2/2.5 layer III
}
_MP3_RATES = {3: (44100, 48000, 32000), 2: (22050, 24000, 16000), 0: (11025, 12000, 8000)}


def _mp3_seconds(text: str, start: int, head: bytes, size: int) -> float | None:
    offset = 0
    if head.startswith(b"ID3") and len(head) >= 10:
        tag = (head[6] & 0x7F) << 21 | (head[7] & 0x7F) << 14 | (head[8] & 0x7F) << 7 | (head[9] & 0x7F)
        offset = 10 + tag + (10 if head[5] & 0x10 else 0)
        if offset + 64 > len(head):  # a tag larger than the head (cover art): decode the frame only
            aligned = offset // 3 * 3
            frame = decode_prefix(text, start + aligned // 3 * 4, 344)
            head, offset = (frame or b""), offset - aligned
    frame = head[offset:offset + 256]
    if len(frame) < 4 or frame[0] != 0xFF or frame[1] & 0xE0 != 0xE0:
        return None
    version, layer = (frame[1] >> 3) & 3, (frame[1] >> 1) & 3
    if layer != 1 or version == 1:  # layer III only; version 1 is reserved
        return None
    bitrate = _MP3_BITRATES[1 if version == 3 else 2][frame[2] >> 4] * 1000 if frame[2] >> 4 < 15 else 0
    rate_index = (frame[2] >> 2) & 3
    if rate_index == 3:
        return None
    sample_rate = _MP3_RATES[version][rate_index]
    samples = 1152 if version == 3 else 576
    mono = frame[3] >> 6 == 3
    side = (17 if mono else 32) if version == 3 else (9 if mono else 17)
    xing = frame[4 + side:4 + side + 12]
    if xing[:4] in (b"Xing", b"Info") and len(xing) >= 12 and xing[7] & 1:
        return struct.unpack(">I", xing[8:12])[0] * samples / sample_rate
    if bitrate <= 0:
        return None
    return max(0, size - offset) * 8 / bitrate

"""Prompt tokens of a video part, from its bytes or, with none, from what a video can cost (pure).

vLLM's chat API takes ``video_url`` parts (a data URL or a link), and LiteLLM's ``hosted_vllm`` transform
turns a chat ``file`` part holding a video into one. Counted as the characters of its base64, a 300 KB clip
read ~92,000 routing tokens (it fits a 16k window); as one flat "other part", a link read ~40.

What a video costs, by the frames the server samples:

- **safe** :data:`SAFE_VIDEO_TOKENS_PER_SECOND` = 768: Qwen2.5-VL / Qwen3-VL with ``qwen-vl-utils``'
  defaults (``vision_process.py``: ``FPS = 2.0`` frames sampled a second, ``FRAME_FACTOR = 2`` frames
  merged into one temporal patch, at most ``VIDEO_MAX_TOKEN_NUM = 768`` tokens each), the highest of the
  common open encoders; Gemini documents 263 a second (258 a frame at 1 fps, plus audio).
- **routing** :data:`ROUTING_VIDEO_TOKENS_PER_SECOND` = 66: Gemini's low media resolution (66 tokens a
  frame at 1 fps), the lowest documented rate; routing leans low.
- **Duration**: an MP4/QuickTime file's ``mvhd`` box (duration ÷ timescale), looked for in the first
  :data:`HEAD_BYTES` and, for a file whose ``moov`` box comes last, the last :data:`TAIL_BYTES`; else from
  its size: safe :data:`MIN_VIDEO_BYTES_PER_SECOND` (50 kbit/s, below a low-resolution screen recording),
  routing :data:`TYPICAL_VIDEO_BYTES_PER_SECOND` (2 Mbit/s, 720p H.264).
- **A link** (no bytes): safe :data:`SAFE_VIDEO_LINK_TOKENS` = 128,000 (``qwen-vl-utils``' whole-video
  budget, ``MODEL_SEQ_LEN``: as an image link is priced at its largest), routing
  :data:`ROUTING_VIDEO_LINK_TOKENS` = 256 (its fewest frames, ``FPS_MIN_FRAMES = 4``, at
  ``VIDEO_MIN_TOKEN_NUM = 128`` per two).

Nothing here raises; nothing decodes more than :data:`HEAD_BYTES` + :data:`TAIL_BYTES` of a payload.
"""

from __future__ import annotations

import binascii
import math
import struct

from .image_size import decode_prefix
from .media_tokens import MediaRef, base64_bytes

__all__ = ["VIDEO_LINK", "is_video", "video_ref"]

SAFE_VIDEO_TOKENS_PER_SECOND = 768
ROUTING_VIDEO_TOKENS_PER_SECOND = 66
MIN_VIDEO_BYTES_PER_SECOND = 6_250
TYPICAL_VIDEO_BYTES_PER_SECOND = 250_000
SAFE_VIDEO_LINK_TOKENS = 128_000
ROUTING_VIDEO_LINK_TOKENS = 256
#: Decoded bytes read from each end of a payload for its ``mvhd`` box.
HEAD_BYTES = 64 * 1024
TAIL_BYTES = 256 * 1024

_NOT_VIDEO_BRANDS = frozenset({b"M4A ", b"M4B ", b"M4P ", b"heic", b"heix", b"hevc", b"hevx", b"mif1", b"msf1", b"avif", b"avis"})
#: A video given by a link: no bytes to read.
VIDEO_LINK = MediaRef("video", 0, SAFE_VIDEO_LINK_TOKENS, ROUTING_VIDEO_LINK_TOKENS)


def is_video(head: bytes) -> bool:
    """Whether a file's first bytes are a video container: MP4/QuickTime (``ftyp`` at offset 4, other than the
    audio brands ``M4A``/``M4B``/``M4P`` and the HEIF/AVIF image brands), WebM/Matroska (EBML), AVI (``RIFF....AVI ``)."""
    if head[4:8] == b"ftyp":
        return head[8:12] not in _NOT_VIDEO_BRANDS
    return head.startswith(b"\x1aE\xdf\xa3") or (head.startswith(b"RIFF") and head[8:12] == b"AVI ")


def video_ref(text: object, start: int = 0) -> MediaRef:
    """The :class:`~litellm_kvwarm.media_tokens.MediaRef` of a base64 video (``text[start:]``). Never raises."""
    if not isinstance(text, str):
        return MediaRef("video", 0, 0, 0)
    size = base64_bytes(text, start)
    seconds = _mvhd_seconds(decode_prefix(text, start, HEAD_BYTES // 3 * 4) or b"")
    if seconds is None and len(text) - start > HEAD_BYTES // 3 * 4:
        seconds = _mvhd_seconds(_decode_tail(text, start))
    if seconds is not None:
        safe_seconds = routing_seconds = seconds
    else:
        safe_seconds, routing_seconds = size / MIN_VIDEO_BYTES_PER_SECOND, size / TYPICAL_VIDEO_BYTES_PER_SECOND
    return MediaRef("video", size, math.ceil(SAFE_VIDEO_TOKENS_PER_SECOND * safe_seconds),
                    math.floor(ROUTING_VIDEO_TOKENS_PER_SECOND * routing_seconds), seconds=seconds)


def _decode_tail(text: str, start: int) -> bytes:
    """The bytes of the last :data:`TAIL_BYTES` of ``text[start:]`` (base64 ends on a 4-character group;
    whitespace inside shifts it, and then nothing is found)."""
    chars = TAIL_BYTES // 3 * 4
    tail = text[max(start, len(text) - chars):].strip()
    tail = tail[len(tail) % 4:]
    try:
        return binascii.a2b_base64(tail.encode("ascii", "ignore"))
    except (binascii.Error, ValueError):
        return b""


def _mvhd_seconds(data: bytes) -> float | None:
    """Duration of an MP4/QuickTime movie header (``mvhd``) found in ``data``, seconds; ``None`` without one
    that reads sensibly (a positive timescale, at most a day)."""
    at = data.find(b"mvhd")
    while at >= 0:
        version = data[at + 4:at + 5]
        # after the version and flags: creation and modification times, timescale, duration (32-bit; 64-bit in version 1)
        fields = data[at + 16:at + 24] if version == b"\x00" else data[at + 24:at + 36] if version == b"\x01" else b""
        if len(fields) == 8:
            timescale, duration = struct.unpack(">II", fields)
        elif len(fields) == 12:
            timescale, duration = struct.unpack(">IQ", fields)
        else:
            timescale = duration = 0
        if timescale > 0 and 0 < duration / timescale <= 86_400:
            return duration / timescale
        at = data.find(b"mvhd", at + 4)
    return None

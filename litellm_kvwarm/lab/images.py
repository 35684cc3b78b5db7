"""Small image files of a chosen pixel size, built without PIL (for tests and demos).

* :func:`png_bytes`: a complete, valid 8-bit grayscale PNG (all black). Rows of zeros compress
  to almost nothing: a 1920x1080 one is about 2 KiB.
* :func:`png_data_url`: the same as a ``data:image/png;base64,`` URL.
* :func:`jpeg_header_bytes`: SOI, JFIF ``APP0``, an optional EXIF ``APP1`` of a chosen size, a
  ``DQT``, ``SOF0`` (or another SOF marker), ``SOS`` and ``EOI``: every segment a header reader
  walks, with no real scan data.
* :func:`webp_bytes`: a RIFF/WebP header of the ``VP8 ``, ``VP8L`` or ``VP8X`` kind.
* :func:`gif_bytes`: a minimal valid GIF89a (one transparent pixel frame on the logical screen).
* :func:`data_url`: any bytes as a base64 data URL.
"""

from __future__ import annotations

import base64
import struct
import zlib

__all__ = ["data_url", "gif_bytes", "jpeg_header_bytes", "png_bytes", "png_data_url", "webp_bytes"]


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def png_bytes(width: int, height: int) -> bytes:
    """A valid ``width`` x ``height`` grayscale PNG of black pixels (filter 0 rows of zeros)."""
    compressor = zlib.compressobj(9)
    row = bytes(1 + width)
    rows_per_piece = max(1, (1 << 20) // len(row))
    pieces = []
    left = height
    while left > 0:
        n = min(left, rows_per_piece)
        pieces.append(compressor.compress(row * n))
        left -= n
    pieces.append(compressor.flush())
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr) + _chunk(b"IDAT", b"".join(pieces)) + _chunk(b"IEND", b"")


def data_url(data: bytes, media_type: str = "image/png") -> str:
    """``data:<media_type>;base64,<data>``."""
    return f"data:{media_type};base64," + base64.b64encode(data).decode("ascii")


def png_data_url(width: int, height: int) -> str:
    """:func:`png_bytes` as a data URL."""
    return data_url(png_bytes(width, height))


def _segment(marker: int, payload: bytes) -> bytes:
    return bytes([0xFF, marker]) + struct.pack(">H", len(payload) + 2) + payload


def jpeg_header_bytes(width: int, height: int, *, exif_bytes: int = 0, sof: int = 0xC0) -> bytes:
    """A JPEG's marker structure for a ``width`` x ``height`` image.

    ``exif_bytes``: size of an EXIF ``APP1`` payload placed before the SOF (0: none; at most
    65533, a segment's limit). ``sof``: the frame marker (``0xC0`` baseline, ``0xC2``
    progressive, ...).
    """
    jfif = _segment(0xE0, b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00")
    exif = b""
    if exif_bytes:
        body = b"Exif\x00\x00II*\x00\x08\x00\x00\x00"
        exif = _segment(0xE1, (body + bytes(max(0, exif_bytes - len(body))))[:65533])
    dqt = _segment(0xDB, b"\x00" + bytes(range(1, 65)))
    frame = _segment(sof, struct.pack(">BHHB", 8, height, width, 1) + b"\x01\x11\x00")
    dht = _segment(0xC4, b"\x00" + bytes(16))
    scan = _segment(0xDA, b"\x01\x01\x00\x00\x3f\x00")
    return b"\xff\xd8" + jfif + exif + dqt + frame + dht + scan + b"\x00" + b"\xff\xd9"


def webp_bytes(width: int, height: int, kind: str = "VP8X") -> bytes:
    """A RIFF/WebP file header for ``width`` x ``height`` (``kind``: ``VP8X``, ``VP8L`` or ``VP8 ``);
    enough for a header reader, not a decodable bitstream."""
    if kind == "VP8X":
        payload = b"\x00\x00\x00\x00" + (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    elif kind == "VP8L":
        bits = (width - 1) | ((height - 1) << 14)
        payload = b"\x2f" + bits.to_bytes(4, "little") + bytes(5)
    elif kind == "VP8 ":
        payload = b"\x10\x02\x00" + b"\x9d\x01\x2a" + struct.pack("<HH", width, height) + bytes(10)
    else:
        raise ValueError(f"unknown WebP chunk kind {kind!r}")
    chunk = kind.encode("ascii") + struct.pack("<I", len(payload)) + payload
    return b"RIFF" + struct.pack("<I", 4 + len(chunk)) + b"WEBP" + chunk


def gif_bytes(width: int, height: int) -> bytes:
    """A valid GIF89a whose logical screen is ``width`` x ``height`` (one 1x1 frame at the origin)."""
    screen = b"GIF89a" + struct.pack("<HHBBB", width, height, 0x80, 0, 0) + b"\x00\x00\x00\xff\xff\xff"
    image = b"\x2c" + struct.pack("<HHHHB", 0, 0, 1, 1, 0) + b"\x02\x02\x44\x01\x00"
    return screen + image + b"\x3b"

"""Pixel sizes read from image headers and data URLs (litellm_kvwarm.image_size)."""

from __future__ import annotations

import base64
import io

import pytest

from litellm_kvwarm.image_size import MAX_DECODED_BYTES, image_ref_of_base64, image_ref_of_url, image_size
from litellm_kvwarm.image_tokens import ImageRef
from litellm_kvwarm.lab.images import data_url, gif_bytes, jpeg_header_bytes, png_bytes, png_data_url, webp_bytes


@pytest.mark.parametrize(
    ("data", "size"),
    [
        (png_bytes(1920, 1080), (1920, 1080)),
        (png_bytes(1, 1), (1, 1)),
        (jpeg_header_bytes(640, 480), (640, 480)),
        (jpeg_header_bytes(4032, 3024, exif_bytes=60000), (4032, 3024)),  # EXIF APP1 before SOF0
        (jpeg_header_bytes(800, 600, sof=0xC2), (800, 600)),  # progressive
        (jpeg_header_bytes(800, 600, sof=0xCF), (800, 600)),
        (webp_bytes(1000, 700, "VP8X"), (1000, 700)),
        (webp_bytes(16383, 9, "VP8L"), (16383, 9)),
        (webp_bytes(1024, 768, "VP8 "), (1024, 768)),
        (gif_bytes(300, 200), (300, 200)),
    ],
)
def test_each_format(data, size):
    assert image_size(data) == size
    assert image_size(bytearray(data)) == size
    assert image_size(memoryview(data)) == size


def test_jpeg_skips_fill_bytes_and_standalone_markers():
    jpeg = jpeg_header_bytes(321, 123)
    assert image_size(jpeg[:2] + b"\xff\xff\xff\xd0" + jpeg[2:]) == (321, 123)


@pytest.mark.parametrize("marker", [0xC4, 0xC8, 0xCC])
def test_jpeg_dht_jpg_dac_are_not_frames(marker):
    # a segment with those markers whose bytes would read as 9x9 is skipped; the real SOF follows
    fake = bytes([0xFF, marker]) + b"\x00\x08\x08\x00\x09\x00\x09\x01"
    jpeg = jpeg_header_bytes(50, 40)
    assert image_size(jpeg[:2] + fake + jpeg[2:]) == (50, 40)


@pytest.mark.parametrize(
    "data",
    [
        b"", b"\x89PNG\r\n\x1a\n", png_bytes(10, 10)[:23], jpeg_header_bytes(640, 480)[:96], jpeg_header_bytes(640, 480)[:60],
        jpeg_header_bytes(640, 480, exif_bytes=5000)[:3000], webp_bytes(5, 5)[:29], gif_bytes(5, 5)[:9],
        b"GIF89a\x00\x00\x05\x00", png_bytes(10, 10).replace(b"IHDR", b"IHDX"), b"hello world" * 10,
        b"\xff\xd8\x00\x00", b"\xff\xd8\xff\xda\x00\x02", b"\xff\xd8\xff\xe0\x00\x00",
        b"RIFF\x00\x00\x00\x00WEBPVP8 " + bytes(30), b"<svg xmlns='http://www.w3.org/2000/svg'/>",
    ],
)
def test_truncated_or_garbage_is_unknown(data):
    assert image_size(data) is None


@pytest.mark.parametrize("value", [None, 12, "a string", ["list"], object()])
def test_non_bytes_never_raise(value):
    assert image_size(value) is None
    assert image_ref_of_url(value) == ImageRef()
    assert image_ref_of_base64(value) == ImageRef()


def test_data_url_and_detail():
    assert image_ref_of_url(png_data_url(1920, 1080), "HIGH") == ImageRef(1920, 1080, "high")
    assert image_ref_of_url(png_data_url(200, 100)) == ImageRef(200, 100, None)
    assert image_ref_of_url(data_url(gif_bytes(7, 9), "image/gif"), "low") == ImageRef(7, 9, "low")
    assert image_ref_of_url("DATA:image/webp;BASE64," + base64.b64encode(webp_bytes(33, 44)).decode()) == ImageRef(33, 44)


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com/cat.png", "file-abc123", "", "data:", "data:image/png;base64",
        "data:image/png,%89PNG", "data:image/png;base64,!!!!not base64!!!!", "data:image/png;base64,AAAA",
        "data:image/png;base64,iVBORw0KGgo=",
    ],
)
def test_other_urls_are_size_unknown(url):
    assert image_ref_of_url(url, "auto") == ImageRef(detail="auto")


def test_huge_data_url_is_read_from_its_head_only():
    # 6 MB of text after the header that is not valid base64 at all: only the head is decoded
    url = png_data_url(3840, 2160) + "*" * 6_000_000
    assert image_ref_of_url(url) == ImageRef(3840, 2160)
    jpeg = jpeg_header_bytes(1234, 567, exif_bytes=40000)
    assert image_ref_of_url(data_url(jpeg, "image/jpeg") + "%%%" * 1_000_000) == ImageRef(1234, 567)


def test_jpeg_sof_beyond_the_cap_is_unknown():
    # 5 EXIF-sized APP segments (~320 KiB) before the SOF: past MAX_DECODED_BYTES, so unknown
    jpeg = jpeg_header_bytes(100, 100)
    app = b"\xff\xe2\xff\xff" + bytes(65533)
    big = jpeg[:2] + app * 5 + jpeg[2:]
    assert image_size(big) == (100, 100)
    assert len(big) > MAX_DECODED_BYTES
    assert image_ref_of_url(data_url(big, "image/jpeg")) == ImageRef()
    within = jpeg[:2] + app * 3 + jpeg[2:]
    assert image_ref_of_url(data_url(within, "image/jpeg")) == ImageRef(100, 100)


def test_base64_whitespace_and_urlsafe_alphabet():
    text = base64.b64encode(png_bytes(640, 360)).decode()
    wrapped = "\n".join(text[i:i + 76] for i in range(0, len(text), 76))
    assert image_ref_of_url("data:image/png;base64," + wrapped) == ImageRef(640, 360)
    urlsafe = base64.urlsafe_b64encode(jpeg_header_bytes(2000, 1000, exif_bytes=3000)).decode()
    assert image_ref_of_base64(urlsafe, "image/jpeg") == ImageRef(2000, 1000)


def test_anthropic_base64_source():
    data = base64.b64encode(gif_bytes(640, 480)).decode()
    assert image_ref_of_base64(data, "image/gif") == ImageRef(640, 480)
    assert image_ref_of_base64(data.encode(), "image/gif") == ImageRef(640, 480)
    assert image_ref_of_base64(png_data_url(5, 6)) == ImageRef(5, 6)
    assert image_ref_of_base64("not base64 at all", "image/png") == ImageRef()
    assert image_ref_of_base64(b"\xff\xfe", "image/png") == ImageRef()


def test_real_files_from_pillow_agree():
    pil = pytest.importorskip("PIL.Image")
    exif = pil.Exif()
    exif[0x010E] = "x" * 50000  # ImageDescription: a 50 kB APP1 before the frame
    for fmt, options in [("PNG", {}), ("JPEG", {}), ("JPEG", {"progressive": True}), ("JPEG", {"exif": exif.tobytes()}),
                         ("WEBP", {}), ("WEBP", {"lossless": True}), ("GIF", {})]:
        for mode in ("RGB", "RGBA") if fmt in ("PNG", "WEBP") else ("RGB",):
            buf = io.BytesIO()
            pil.new(mode, (333, 217)).save(buf, fmt, **options)
            assert image_size(buf.getvalue()) == (333, 217), (fmt, options, mode)
            assert image_ref_of_url(data_url(buf.getvalue())).size == (333, 217)
    # the test builders' files decode as real images
    assert pil.open(io.BytesIO(png_bytes(1920, 1080))).size == (1920, 1080)
    assert pil.open(io.BytesIO(gif_bytes(300, 200))).size == (300, 200)
    assert pil.open(io.BytesIO(jpeg_header_bytes(640, 480, exif_bytes=1000))).size == (640, 480)


def test_builders_stay_small():
    assert len(png_bytes(1920, 1080)) < 4096

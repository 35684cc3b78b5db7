"""Agent request shapes the agent-shapes breaker's fourth round found mispriced or crashing (2026-12-06).

- Video: vLLM's chat API takes ``video_url`` parts and LiteLLM's ``hosted_vllm`` transform turns a chat ``file``
  part holding a video into one; a base64 clip was counted as its characters (a 300 KB mp4: routing ~92,000
  tokens, so a request that fits the fast window went to the slow one) and a link or a file part as one flat
  part (~40 tokens). Priced now by :mod:`litellm_kvwarm.video_tokens`.
- A client value of the wrong type where the counter looked it up in a set (a ``computer_call_output`` whose
  ``output.type`` is a list raised ``TypeError``): every string-typed field of a body of each API is given
  each odd type here, not only that one.
"""

from __future__ import annotations

import base64
import copy
import math
import struct

import pytest

from litellm_kvwarm.tokens import calibrated_estimator, count_request, estimate_request
from litellm_kvwarm.video_tokens import (
    MIN_VIDEO_BYTES_PER_SECOND,
    ROUTING_VIDEO_LINK_TOKENS,
    ROUTING_VIDEO_TOKENS_PER_SECOND,
    SAFE_VIDEO_LINK_TOKENS,
    SAFE_VIDEO_TOKENS_PER_SECOND,
    TYPICAL_VIDEO_BYTES_PER_SECOND,
    is_video,
    video_ref,
)

FILLER = 300_000  # bytes of media data in each clip: ~400 KB of base64


def _box(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", 8 + len(body)) + kind + body


def mp4(seconds: float, version: int = 0, moov_last: bool = False, timescale: int = 600) -> bytes:
    """A minimal MP4: ``ftyp``, ``moov`` holding an ``mvhd`` of ``seconds``, an ``mdat`` of :data:`FILLER` bytes."""
    ftyp = _box(b"ftyp", b"isom\0\0\2\0isomiso2avc1mp41")
    times = struct.pack(">IIII", 1, 2, timescale, round(seconds * timescale)) if version == 0 else \
        struct.pack(">QQIQ", 1, 2, timescale, round(seconds * timescale))
    moov = _box(b"moov", _box(b"mvhd", bytes([version, 0, 0, 0]) + times + b"\0" * 80))
    mdat = _box(b"mdat", bytes((i * 7919) % 251 for i in range(FILLER)))
    return ftyp + (mdat + moov if moov_last else moov + mdat)


def webm() -> bytes:
    return b"\x1aE\xdf\xa3\x9fB\x86\x81\x01" + bytes((i * 31) % 251 for i in range(FILLER))


def data_url(blob: bytes, media_type: str = "video/mp4") -> str:
    return f"data:{media_type};base64," + base64.b64encode(blob).decode()


def _media(content_part: dict, kind: str | None = None) -> list:
    body = {"messages": [{"role": "user", "content": [{"type": "text", "text": "What happens here?"}, content_part]}]}
    if kind == "responses":
        body = {"input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "What happens here?"}, content_part]}]}
    return [(m.kind, m.safe, m.routing, m.seconds) for m in count_request(body, call_kind=kind).media]


def _timed(seconds: float) -> tuple:
    return ("video", math.ceil(SAFE_VIDEO_TOKENS_PER_SECOND * seconds), math.floor(ROUTING_VIDEO_TOKENS_PER_SECOND * seconds), seconds)


def _sized(blob: bytes) -> tuple:
    size = len(base64.b64encode(blob)) * 3 // 4
    return ("video", math.ceil(SAFE_VIDEO_TOKENS_PER_SECOND * size / MIN_VIDEO_BYTES_PER_SECOND),
            math.floor(ROUTING_VIDEO_TOKENS_PER_SECOND * size / TYPICAL_VIDEO_BYTES_PER_SECOND), None)


LINK = ("video", SAFE_VIDEO_LINK_TOKENS, ROUTING_VIDEO_LINK_TOKENS, None)


@pytest.mark.parametrize("part, kind, expected", [
    ({"type": "video_url", "video_url": {"url": data_url(mp4(10))}}, None, [_timed(10)]),
    ({"type": "video_url", "video_url": {"url": data_url(mp4(12.5, moov_last=True))}}, None, [_timed(12.5)]),  # moov after mdat
    ({"type": "video_url", "video_url": {"url": data_url(mp4(95, version=1, timescale=90_000))}}, None, [_timed(95)]),
    ({"type": "video_url", "video_url": data_url(mp4(4))}, None, [_timed(4)]),  # the URL as a bare string
    ({"type": "video_url", "video_url": {"url": data_url(webm(), "video/webm")}}, None, [_sized(webm())]),  # no mvhd: its size
    ({"type": "video_url", "video_url": {"url": "https://example.com/clip.mp4"}}, None, [LINK]),
    ({"type": "video", "video": "https://example.com/clip.mp4"}, None, [LINK]),  # Qwen's own part shape
    ({"type": "file", "file": {"file_data": data_url(mp4(10)), "filename": "clip.mp4"}}, None, [_timed(10)]),
    ({"type": "file", "file": {"file_data": data_url(mp4(10), "application/octet-stream")}}, None, [_timed(10)]),  # told by its bytes
    ({"type": "input_file", "file_data": data_url(mp4(10)), "filename": "clip.mp4"}, "responses", [_timed(10)]),
    ({"type": "gemini_inline", "inline_data": {"mime_type": "video/mp4", "data": base64.b64encode(mp4(10)).decode()}}, None, [_timed(10)]),
], ids=["data-url", "moov-last", "mvhd-v1", "bare-url-string", "webm-by-size", "link", "qwen-video-link", "chat-file", "chat-file-octets",
        "responses-input-file", "unknown-block-inline-data"])
def test_a_video_is_priced_by_its_duration_or_size_never_as_its_base64_text(part, kind, expected):
    # before: a data URL counted as ~400,000 characters of text (no media), a link or file one flat other part
    assert _media(part, kind) == expected


def test_a_clip_that_fits_the_fast_window_is_not_routed_as_base64_text():
    est = calibrated_estimator("qwen2.5")
    body = {"messages": [{"role": "user", "content": [{"type": "text", "text": "Describe the clip."},
                                                      {"type": "video_url", "video_url": {"url": data_url(mp4(10))}}]}]}
    estimate = estimate_request(body, estimator=est)
    # 10 s: routing 660 and safe 7,680 media tokens plus the text (before: routing ~93,000, safe ~371,000)
    assert 660 <= estimate.routing < 700 and 7_680 <= estimate.safe < 7_800


@pytest.mark.parametrize("head, video", [
    (mp4(1)[:64], True), (webm()[:64], True), (b"RIFF\0\0\0\0AVI LIST", True),
    (b"\0\0\0\x18ftypM4A \0\0\0\0", False), (b"\0\0\0\x18ftypheic\0\0\0\0", False), (b"\0\0\0\x1cftypavif\0\0\0\0", False),
    (b"RIFF\0\0\0\0WAVEfmt ", False), (b"\x89PNG\r\n\x1a\n", False), (b"", False),
], ids=["mp4", "webm", "avi", "m4a", "heic", "avif", "wav", "png", "empty"])
def test_video_containers_are_told_from_audio_and_image_files_of_the_same_family(head, video):
    assert is_video(head) is video


@pytest.mark.parametrize("payload", ["", "not base64 at all!", "AAAA" * 10, base64.b64encode(b"\0\0\0\x08mvhd" + b"\xff" * 40).decode()],
                         ids=["empty", "not-base64", "zeros", "mvhd-of-no-sense"])
def test_an_unreadable_video_is_priced_by_its_size_and_never_raises(payload):
    ref = video_ref(payload)
    size = len(payload) * 3 // 4
    assert (ref.kind, ref.seconds, ref.bytes) == ("video", None, size)
    assert ref.safe == math.ceil(SAFE_VIDEO_TOKENS_PER_SECOND * size / MIN_VIDEO_BYTES_PER_SECOND)


IMG = "data:image/png;base64," + "iVBORw0KGgo" * 4
BODIES = {
    "responses": {"model": "fast", "instructions": "be brief", "max_output_tokens": 100, "input": [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}, {"type": "input_image", "image_url": IMG, "detail": "low"},
                                                        {"type": "input_file", "file_data": IMG, "filename": "a.pdf"}]},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{\"a\":1}"},
        {"type": "function_call_output", "call_id": "c1", "output": [{"type": "input_text", "text": "ok"}, {"type": "input_image", "image_url": IMG}]},
        {"type": "computer_call", "call_id": "c2", "action": {"type": "click", "x": 1, "y": 2}},
        {"type": "computer_call_output", "call_id": "c2", "output": {"type": "computer_screenshot", "image_url": IMG}},
        {"type": "reasoning", "summary": [{"type": "summary_text", "text": "think"}], "encrypted_content": "xx"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}, {"type": "refusal", "refusal": "no"}]},
        {"type": "custom_tool_call", "call_id": "c3", "name": "g", "input": "abc"},
        {"type": "custom_tool_call_output", "call_id": "c3", "output": "res"},
        {"type": "local_shell_call", "call_id": "c4", "action": {"type": "exec", "command": ["ls"]}},
        {"type": "mcp_call", "name": "m", "arguments": "{}", "output": "o", "server_label": "s"}],
        "tools": [{"type": "function", "name": "f", "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}}}, {"type": "web_search"}],
        "text": {"format": {"type": "json_schema", "name": "x", "schema": {"type": "object"}}}},
    "messages": {"model": "fast", "max_tokens": 100, "system": [{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}], "messages": [
        {"role": "user", "content": [{"type": "text", "text": "hi"},
                                     {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo" * 4}},
                                     {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "doc"}, "title": "t"}]},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "hmm", "signature": "s"}, {"type": "tool_use", "id": "t1", "name": "f", "input": {"a": 1}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "r"},
                                                                                             {"type": "image", "source": {"type": "url", "url": "https://x/y.png"}}]},
                                     {"type": "search_result", "source": "s", "title": "t", "content": [{"type": "text", "text": "c"}]}]}],
        "tools": [{"name": "f", "description": "d", "input_schema": {"type": "object"}}, {"type": "web_search_20250305", "name": "web_search"}]},
    "chat": {"model": "fast", "messages": [
        {"role": "system", "content": "s"},
        {"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "image_url", "image_url": {"url": IMG, "detail": "high"}},
                                     {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}},
                                     {"type": "file", "file": {"file_data": IMG, "filename": "a"}},
                                     {"type": "video_url", "video_url": {"url": "https://x/v.mp4"}}]},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}], "reasoning_content": "r"},
        {"role": "tool", "tool_call_id": "c", "content": [{"type": "text", "text": "ok"}]}, {"role": "function", "name": "f", "content": "x"}],
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {}}}},
}
ODD = (["x"], {"k": "v"}, 7, None, 1.5, True, [], {})


def _paths(value: object, path: tuple = ()):
    if path:
        yield path
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, inner in items:
        yield from _paths(inner, path + (key,))


@pytest.mark.parametrize("api", sorted(BODIES))
def test_every_field_of_every_api_may_hold_any_json_type(api):
    """Each field of a body (at every depth) given each JSON type in turn: the count never raises. Before, a
    ``computer_call_output`` whose ``output.type`` was a list raised ``TypeError: unhashable type``."""
    body, kind = BODIES[api], None if api == "chat" else api
    failures, tried = [], 0
    for path in _paths(body):
        for odd in ODD:
            changed = copy.deepcopy(body)
            holder = changed
            for key in path[:-1]:
                holder = holder[key]
            holder[path[-1]] = odd
            tried += 1
            try:
                count_request(changed, call_kind=kind)
            except Exception as exc:  # noqa: BLE001 - every failure is listed
                failures.append((path, odd, repr(exc)))
    assert tried > 400 and failures == []

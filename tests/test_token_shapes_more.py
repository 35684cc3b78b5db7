"""Request shapes the estimator met in agent traffic and mispriced (breaker report 2): odd types that
raised, server-tool results and unknown blocks whose text was dropped, PDFs and audio priced flat,
screenshots priced as their base64 text, item references, Responses ``text.format`` schemas, runs of
one repeated character. The real token counts of these shapes (per tokenizer family) are checked in
``tests/lab/test_token_shapes_truth.py``."""

from __future__ import annotations

import base64
import io
import json
import struct
import wave
import zlib

import pytest

from litellm_kvwarm.image_tokens import UNKNOWN_RULE
from litellm_kvwarm.media_tokens import (
    MAX_PDF_PAGES,
    ROUTING_AUDIO_TOKENS_PER_SECOND,
    ROUTING_TOKENS_PER_PDF_PAGE,
    SAFE_AUDIO_TOKENS_PER_SECOND,
    SAFE_TOKENS_PER_PDF_PAGE,
    audio_ref,
    pdf_pages,
    pdf_ref,
)
from litellm_kvwarm.token_runs import RUN_PRICES, find_runs
from litellm_kvwarm.tokens import SAFE_TOKENS_PER_OTHER_PART, calibrated_estimator, count_request, estimate_request
from litellm_kvwarm.view import pre_call_view

PAGE = "The quick brown fox jumps over the lazy dog. " * 1200  # 54,000 characters, ~12,000 tokens
QWEN = calibrated_estimator("qwen2.5")


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def png(width: int, height: int, body: int = 3000) -> bytes:
    ihdr = struct.pack(">II", width, height) + b"\x08\x02\x00\x00\x00"
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + ihdr + b"\x00" * 4 + bytes(range(256)) * (body // 256)


# ------------------------------------------------------------------- odd types never raise (item 12)


@pytest.mark.parametrize("body, kind", [
    ({"messages": [{"role": ["user"], "content": "hi"}]}, "chat"),  # the two-key fast path
    ({"messages": [{"role": {"a": 1}, "content": [{"type": "text", "text": "hi"}]}]}, "chat"),
    ({"messages": [{"role": "user", "content": [{"type": ["text"], "text": "hi"}]}]}, "chat"),
    ({"messages": [{"role": "user", "content": [{"type": {"x": 1}, "text": "hi"}]}]}, "messages"),
    ({"messages": [{"role": "user", "content": [{"type": ["tool_result"], "content": "hi"}]}]}, "messages"),
    ({"input": [{"type": ["message"], "content": "hi"}]}, "responses"),
    ({"input": [{"type": "message", "role": "user", "content": [{"type": ["input_text"], "text": "hi"}]}]}, "responses"),
    ({"input": [{"role": ["user"], "content": "hi"}]}, "responses"),
    ({"messages": [{"role": "user", "content": [{"type": "image", "source": {"type": ["base64"], "data": 5}}]}]}, "messages"),
])
@pytest.mark.parametrize("estimator", [None, QWEN])
def test_unhashable_roles_and_types_are_unknown_not_errors(body, kind, estimator):
    """A list or dict where a role or block type string belongs raised TypeError (unhashable, in
    ``x in frozenset``): the hook failed open and the request lost its routing. Now it is an
    unknown role (template-dependent) / an unknown block (its text counted)."""
    est = estimate_request(body, call_kind=kind, estimator=estimator)
    assert est.safe >= est.routing >= 0
    assert "hi" in est.counts.text or len(est.counts.images) == 1  # the last one: an image of unknown size


def test_an_odd_role_makes_the_count_template_dependent():
    for messages in ([{"role": ["user"], "content": "hi"}], [{"role": {"a": 1}, "content": [{"type": "text", "text": "hi"}]}]):
        assert count_request({"messages": messages}, call_kind="chat").template_dependent


def test_a_payload_that_is_not_a_mapping_counts_nothing():
    assert estimate_request([1, 2], call_kind="chat").counts.chars == 0  # type: ignore[arg-type]


# ----------------------------------------------------------- unknown blocks are read (item 1)


SERVER_TOOL_RESULTS = {
    "web_fetch": {"type": "web_fetch_tool_result", "tool_use_id": "srvtoolu_1", "content": {
        "type": "web_fetch_result", "url": "https://example.com/a", "retrieved_at": "2025-08-25T10:30:02",
        "content": {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": PAGE}, "title": "A"}}},
    "code_execution": {"type": "code_execution_tool_result", "tool_use_id": "srvtoolu_2", "content": {
        "type": "code_execution_result", "stdout": PAGE, "stderr": "", "return_code": 0, "content": []}},
    "bash": {"type": "bash_code_execution_tool_result", "tool_use_id": "srvtoolu_3", "content": {
        "type": "bash_code_execution_result", "stdout": PAGE[:27000], "stderr": PAGE[27000:], "return_code": 0, "content": []}},
    "text_editor": {"type": "text_editor_code_execution_tool_result", "tool_use_id": "srvtoolu_4", "content": {
        "type": "text_editor_code_execution_view_result", "file_type": "text", "content": PAGE, "numLines": 1,
        "startLine": 1, "totalLines": 1}},
    "search_result": {"type": "search_result", "title": "A", "source": "https://example.com", "content": [{"type": "text", "text": PAGE}]},
    "future_type": {"type": "mystery_tool_result_2027", "id": "x1", "cache_control": {"type": "ephemeral"},
                    "payload": {"sections": [{"heading": "A", "body": PAGE}]}},
}


@pytest.mark.parametrize("name", sorted(SERVER_TOOL_RESULTS))
def test_server_tool_results_and_unknown_blocks_count_their_text(name):
    """Breaker 2, item 1: a web_fetch result holding a 12,000-token page was priced as one flat part
    (safe 1,048, routing 3). Every string leaf of a block the estimator does not know is text."""
    body = {"messages": [{"role": "user", "content": [SERVER_TOOL_RESULTS[name]]}]}
    plain = estimate_request({"messages": [{"role": "user", "content": PAGE}]}, call_kind="messages", estimator=QWEN)
    est = estimate_request(body, call_kind="messages", estimator=QWEN)
    assert PAGE[:1000] in est.counts.text
    assert est.counts.other_parts == 0
    assert plain.safe <= est.safe <= 1.05 * plain.safe + 50
    assert 0.95 * plain.routing <= est.routing <= 1.05 * plain.routing + 50


def test_unknown_blocks_skip_ids_and_metadata_and_keep_a_floor_when_empty():
    counts = count_request({"messages": [{"role": "user", "content": [
        {"type": "mystery", "id": "blk_SECRET1", "tool_use_id": "tu_SECRET2", "cache_control": {"type": "ephemeral"},
         "signature": "SECRET3", "note": "visible", "count": 7},
        {"type": "container_upload", "file_id": "file_SECRET4"},
    ]}]}, call_kind="messages")
    assert "visible" in counts.text and "7" in counts.text and "SECRET" not in counts.text
    assert counts.other_parts == 1  # the block with nothing to read keeps the flat price
    est = estimate_request({"messages": [{"role": "user", "content": [{"type": "container_upload", "file_id": "f"}]}]},
                           call_kind="messages")
    assert est.safe >= SAFE_TOKENS_PER_OTHER_PART


def test_media_nested_in_unknown_blocks_is_priced_as_media():
    shot = png(1920, 1080)
    counts = count_request({"messages": [{"role": "user", "content": [{"type": "future_block", "items": [
        {"kind": "screenshot", "source": {"type": "base64", "media_type": "image/png", "data": b64(shot)}},
        {"kind": "inline", "mime_type": "image/png", "data": b64(shot)},
        {"kind": "url", "link": "data:image/png;base64," + b64(shot)},
        {"kind": "raw", "result": b64(shot)},
        {"kind": "doc", "file": "data:application/pdf;base64," + b64(PDF_3_PAGES)},
    ]}]}]}, call_kind="messages")
    assert [(i.width, i.height) for i in counts.images] == [(1920, 1080)] * 4
    assert [m.pages for m in counts.media] == [3]
    assert counts.chars < 200  # keys only: no base64 counted as text


# ----------------------------------------------------------------------- PDFs and audio (item 1)


def _pdf(pages: int, *, objstm: bool = False, linearized: int | None = None) -> bytes:
    objs = [b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 9 0 R >>"] * pages
    head = b"%PDF-1.7\n"
    if linearized is not None:
        head += b"1 0 obj\n<< /Linearized 1 /L 12345 /H [ 600 200 ] /O 5 /E 9000 /N %d /T 11000 >>\nendobj\n" % linearized
    tree = b"2 0 obj\n<< /Type /Pages /Kids [] /Count %d >>\nendobj\n" % pages
    if objstm:
        stream = zlib.compress(b" ".join(objs))
        body = b"5 0 obj\n<< /Type /ObjStm /N %d /First 20 /Filter /FlateDecode /Length %d >>\nstream\n" % (pages, len(stream))
        return head + tree + body + stream + b"\nendstream\nendobj\n%%EOF\n"
    return head + tree + b"".join(b"%d 0 obj\n%s\nendobj\n" % (10 + i, o) for i, o in enumerate(objs)) + b"%%EOF\n"


PDF_3_PAGES = _pdf(3)


def test_pdf_pages_are_read_from_page_objects_object_streams_and_linearization():
    assert pdf_pages(_pdf(7)) == 7
    assert pdf_pages(_pdf(12, objstm=True)) == 12  # page dictionaries inside a compressed object stream
    assert pdf_pages(_pdf(2, linearized=40)) == 40  # the linearization dictionary names the count
    assert pdf_pages(b"%PDF-1.7\n" + bytes(range(256)) * 40) is None


def test_pdf_made_with_pillow_is_priced_per_page():
    from PIL import Image

    buffer = io.BytesIO()
    pages = [Image.new("RGB", (200, 260), (255, 255, 255)) for _ in range(5)]
    pages[0].save(buffer, format="PDF", save_all=True, append_images=pages[1:])
    ref = pdf_ref(b64(buffer.getvalue()))
    assert (ref.pages, ref.safe, ref.routing) == (5, 5 * SAFE_TOKENS_PER_PDF_PAGE, 5 * ROUTING_TOKENS_PER_PDF_PAGE)


def test_unreadable_pdf_is_priced_from_its_size():
    """The breaker's 2 MB PDF (random bytes after the header) read 1,048 safe tokens: now its size
    decides (safe assumes a page per KB up to MAX_PDF_PAGES; routing a page per 100 KB)."""
    blob = b"%PDF-1.7\n" + bytes(range(256)) * 8000  # 2 MB, no readable page
    ref = pdf_ref(b64(blob))
    assert ref.pages is None
    assert ref.safe == MAX_PDF_PAGES * SAFE_TOKENS_PER_PDF_PAGE
    assert ref.routing == 20 * ROUTING_TOKENS_PER_PDF_PAGE


@pytest.mark.parametrize("kind, part", [
    ("messages", {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": b64(_pdf(30))}}),
    ("chat", {"type": "file", "file": {"filename": "a.pdf", "file_data": "data:application/pdf;base64," + b64(_pdf(30))}}),
    ("responses", {"type": "input_file", "filename": "a.pdf", "file_data": "data:application/pdf;base64," + b64(_pdf(30))}),
    ("responses", {"type": "input_file", "filename": "a.pdf", "file_data": b64(_pdf(30))}),  # raw base64: sniffed
])
def test_pdf_parts_of_every_api_are_priced_by_pages(kind, part):
    body = {"input": [{"type": "message", "role": "user", "content": [part]}]} if kind == "responses" else \
        {"messages": [{"role": "user", "content": [part]}]}
    est = estimate_request(body, call_kind=kind, estimator=QWEN)
    assert [m.pages for m in est.counts.media] == [30]
    assert 30 * SAFE_TOKENS_PER_PDF_PAGE <= est.safe <= 30 * SAFE_TOKENS_PER_PDF_PAGE + 100
    assert est.routing >= 30 * ROUTING_TOKENS_PER_PDF_PAGE


def test_file_ids_and_urls_stay_flat_and_text_files_are_text():
    counts = count_request({"input": [{"type": "message", "role": "user", "content": [
        {"type": "input_file", "file_id": "file-abc"}, {"type": "input_file", "file_url": "https://x/a.pdf"},
        {"type": "input_file", "filename": "notes.md", "file_data": "data:text/markdown;base64," + b64("# Notes\nhello wörld".encode())},
    ]}]}, call_kind="responses")
    assert counts.other_parts == 2 and "hello wörld" in counts.text and not counts.media


def _wav(seconds: float, rate: int = 16000) -> bytes:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(b"\x00\x01" * int(rate * seconds))
    return buffer.getvalue()


def _mp3(seconds: float, *, xing: bool = False) -> bytes:
    """MPEG-1 layer III, 128 kbit/s, 44.1 kHz, stereo: 417-byte frames of 1,152 samples."""
    header = bytes([0xFF, 0xFB, 0x90, 0x00])
    frames = int(seconds * 44100 / 1152)
    frame = header + b"\x00" * 413
    if xing:
        info = header + b"\x00" * 32 + b"Xing" + struct.pack(">II", 1, frames)
        return b"ID3\x04\x00\x00\x00\x00\x00\x0a" + b"\x00" * 10 + info + b"\x00" * (417 - len(info)) + frame * frames
    return b"ID3\x04\x00\x00\x00\x00\x00\x0a" + b"\x00" * 10 + frame * frames


@pytest.mark.parametrize("data, seconds", [(_wav(600), 600), (_wav(12.5, 8000), 12.5), (_mp3(60), 60), (_mp3(60, xing=True), 60)])
def test_audio_is_priced_by_its_duration(data, seconds):
    """Breaker 2: a 10-minute WAV read 1,064 safe / 0 routing tokens (Qwen2-Audio: ~15,000)."""
    ref = audio_ref(b64(data))
    assert ref.seconds == pytest.approx(seconds, rel=0.01)
    assert ref.safe == pytest.approx(SAFE_AUDIO_TOKENS_PER_SECOND * seconds, rel=0.01)
    assert ref.routing == pytest.approx(ROUTING_AUDIO_TOKENS_PER_SECOND * seconds, rel=0.01)


def test_audio_parts_of_every_shape_are_priced():
    wav = b64(_wav(30))
    for part in ({"type": "input_audio", "input_audio": {"data": wav, "format": "wav"}},
                 {"type": "audio_url", "audio_url": {"url": "data:audio/wav;base64," + wav}}):
        est = estimate_request({"messages": [{"role": "user", "content": [part]}]}, call_kind="chat", estimator=QWEN)
        assert [round(m.seconds) for m in est.counts.media] == [30]
        assert est.safe >= 30 * SAFE_AUDIO_TOKENS_PER_SECOND and est.routing >= 30 * ROUTING_AUDIO_TOKENS_PER_SECOND
    unreadable = audio_ref(b64(bytes(range(256)) * 400))  # 100 KB of an unknown format: 4 kbit/s assumed
    assert unreadable.seconds is None and unreadable.safe == pytest.approx(102_400 / 500 * SAFE_AUDIO_TOKENS_PER_SECOND, rel=0.01)


# ------------------------------------------------------------- screenshots are images (item 3)


def test_computer_call_output_screenshot_is_an_image():
    """Breaker 2, item 3: a 1920x1080 screenshot in a computer_call_output item is an image as a list's ``input_image``,
    and as a dict output where the installed LiteLLM sends it as an image part (1.109.3; 1.108.7 sends its JSON text,
    counted so: see test_token_counts_agents)."""
    from litellm_kvwarm import litellm_version
    from litellm_kvwarm.token_counts_agents import SCREENSHOT_AS_MEDIA_SINCE

    shot = "data:image/png;base64," + b64(png(1920, 1080, 30_000))
    body = {"input": [{"type": "computer_call_output", "call_id": "c1", "output": {"type": "computer_screenshot", "image_url": shot}},
                      {"type": "computer_call_output", "call_id": "c2", "output": [{"type": "input_image", "image_url": shot}]}]}
    est = estimate_request(body, call_kind="responses", estimator=QWEN)
    as_media = litellm_version.at_least(SCREENSHOT_AS_MEDIA_SINCE)
    assert [(i.width, i.height) for i in est.counts.images] == [(1920, 1080)] * (2 if as_media else 1)
    assert (shot in est.counts.text) is not as_media
    image_safe, _ = UNKNOWN_RULE.counts(1920, 1080)
    assert est.safe >= 2 * image_safe


def test_any_item_carrying_an_image_prices_it_as_an_image():
    shot = b64(png(800, 600))
    body = {"input": [
        {"type": "function_call_output", "call_id": "c", "output": [{"type": "input_image", "image_url": "data:image/png;base64," + shot}]},
        {"type": "image_generation_call", "id": "ig_1", "status": "completed", "result": shot},
        {"type": "custom_item", "screenshot": {"image_url": {"url": "data:image/png;base64," + shot}}},
    ]}
    counts = count_request(body, call_kind="responses")
    assert [(i.width, i.height) for i in counts.images] == [(800, 600)] * 3
    assert counts.chars < 100


# ---------------------------------------------------------------------- item references (item 9)


def test_item_reference_is_server_state_and_counts_nothing():
    with_ref = {"model": "fast", "input": [{"type": "item_reference", "id": "msg_1"}, {"type": "message", "role": "user", "content": "go on"}]}
    without = {"model": "fast", "input": [{"type": "message", "role": "user", "content": "go on"}]}
    assert pre_call_view(with_ref, "aresponses", None).server_state
    assert not pre_call_view(without, "aresponses", None).server_state
    a, b = count_request(with_ref, call_kind="responses"), count_request(without, call_kind="responses")
    assert (a.chars, a.messages) == (b.chars, b.messages)


# ------------------------------------------------------------------ text.format schemas (item 15)


def test_responses_text_format_schema_counts_like_response_format():
    schema = {"type": "object", "properties": {f"field_{i}": {"type": "string", "description": "x" * 40} for i in range(50)}}
    fmt = {"type": "json_schema", "name": "answer", "schema": schema, "strict": True}
    base = count_request({"input": "hi"}, call_kind="responses")
    structured = count_request({"input": "hi", "text": {"format": fmt}}, call_kind="responses")
    chat = count_request({"messages": [{"role": "user", "content": "hi"}],
                          "response_format": {"type": "json_schema", "json_schema": {"name": "answer", "schema": schema, "strict": True}}},
                         call_kind="chat")
    # kept apart like chat's response_format: the safe estimate counts it, routing does not
    assert structured.chars == base.chars and structured.format_parts == (json.dumps(fmt, separators=(",", ":")),)
    assert abs(len(structured.format_parts[0]) - len(chat.format_parts[0])) < 40
    assert count_request({"input": "hi", "text": {"format": {"type": "text"}}}, call_kind="responses").format_parts == ()
    plain = estimate_request({"input": "hi"}, call_kind="responses")
    with_format = estimate_request({"input": "hi", "text": {"format": fmt}}, call_kind="responses")
    assert with_format.routing == plain.routing and with_format.safe > plain.safe + 500


# --------------------------------------------------------------- runs of one character (item 11)


def test_runs_are_found_at_their_length_and_class():
    text = "x" + "=" * 78 + "\n" + " " * 65 + "a" + "\t" * 20 + "\u2500" * 20 + "-" * 15 + "b  c"
    runs = find_runs(text, text.encode())
    assert runs.found == {"=": (78, 1), " ": (65, 1), "\t": (20, 1), "\u2500": (20, 1)}  # 15 dashes: under the minimum
    assert runs.class_chars() == {"punct": 78, "indent": 64, "spaces": 1, "breaks": 20, "symbols": 20}
    assert runs.gaps == 1  # "b  c"
    plain = "The quick brown fox, 1234 jumps!\n    indented line\n"
    assert not find_runs(plain, plain.encode())


@pytest.mark.parametrize("family", ["qwen2.5", "cl100k", "any"])
def test_repeated_characters_are_priced_sub_linearly_for_routing(family):
    """Breaker 2, item 11: 200 lines of 78 '=' read 11,620 routing tokens (truth ~410 in every
    measured family: one 64-token and one 14-token run plus the line break, ~2 per line)."""
    text = "pytest output\n" + ("=" * 78 + "\n") * 200
    est = estimate_request({"messages": [{"role": "tool", "tool_call_id": "c", "content": text}]}, call_kind="chat",
                           estimator=calibrated_estimator(family))
    assert 250 <= est.routing <= 600
    assert est.safe >= 410


@pytest.mark.parametrize("char, width, family, truth", [
    ("\u2588", 40, "cl100k", 2_407), ("\u2588", 40, "qwen2.5", 2_798),  # █ bars (tqdm)
    ("\u2501", 40, "llama3", 1_594), ("\u2501", 40, "o200k", 1_807), ("\u2501", 40, "cl100k", 3_607),  # ━ pip/rich bars
    ("\u2014", 80, "llama3", 1_834), ("\u2014", 80, "deepseek", 1_802),  # — separators
])
def test_runs_of_non_ascii_symbols_are_priced_near_the_truth(char, width, family, truth):
    """Breaker C, 3: 120 lines ``step i loss …`` each under a rule of one non-ASCII character read
    routing 1.4-8.7x the truth (priced per character by the symbols / gen_punct weights: '█'x40 cl100k
    11,694 against 2,407; '—'x80 llama3 16,035 against 1,834). ``truth``: that family's tokenizer
    (the calibration tokenizers, rendered in its chat template as one user message)."""
    text = "\n".join(f"step {i} loss 0.{i:03d}\n" + char * width for i in range(120))
    assert find_runs(text, text.encode()).found == {char: (120 * width, 120)}
    est = estimate_request({"messages": [{"role": "user", "content": text}]}, estimator=calibrated_estimator(family))
    assert 0.6 * truth <= est.routing <= 1.1 * truth and est.safe >= truth


def test_non_ascii_run_prices_hold_their_measured_rates():
    """The rates of long runs (2,048 characters) in each measured family, from the calibration tokenizers."""
    assert RUN_PRICES["\u2501"].routing_rate("llama3") == 1 / 16 and RUN_PRICES["\u2501"].routing_rate("cl100k") == 1 / 2
    assert RUN_PRICES["\u2550"].routing_rate("any") == 1 / 8 and RUN_PRICES["\u2588"].safe_per_char == 1 / 4
    assert {RUN_PRICES[c].klass for c in "\u2014\u2026"} == {"gen_punct"}


def test_a_long_space_run_is_never_priced_near_zero():
    """Breaker 2, item 15: 30,000 spaces read ~15 safe tokens; byte-level BPEs spend 235 (one token
    per 128 spaces)."""
    for family in ("qwen2.5", "o200k", "gemma3", "any"):
        est = estimate_request({"messages": [{"role": "user", "content": " " * 30_000}]}, estimator=calibrated_estimator(family))
        assert est.safe >= 235, family
    assert RUN_PRICES[" "].safe_per_char * 30_000 >= 234


def test_run_pricing_keeps_the_estimate_monotone_in_the_run_length():
    est = calibrated_estimator("qwen2.5")
    previous = None
    for n in range(10, 200, 3):
        current = estimate_request({"messages": [{"role": "user", "content": "a" + "=" * n + "b"}]}, estimator=est)
        if previous is not None and n > 20:
            assert current.routing >= previous.routing - 1 and current.safe >= previous.safe - 1
        previous = current

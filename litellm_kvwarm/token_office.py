"""Prompt tokens of office documents (OOXML ``.docx`` / ``.xlsx`` / ``.pptx``, OpenDocument ``.odt`` /
``.ods`` / ``.odp``) carried as base64 bytes (pure; bounded work per payload).

They are ZIP containers of XML, sent as ``input_file`` / ``file`` ``file_data`` or a ``document`` base64
source (:func:`office_ref`). A hosted API turns them into text: OpenAI's *File inputs* guide says
non-PDF documents are sent as their extracted text only (no embedded images or charts) and
spreadsheets as up to their first 1,000 rows per sheet with generated header/summary metadata; a
local backend gets whatever LiteLLM or the client extracted. Their images and fonts, most of a
typical file's bytes, cost nothing, so the payload size says little; the text lies in a few XML
parts whose uncompressed sizes the ZIP central directory lists (read from the last bytes, nothing
inflated): :data:`OFFICE_TEXT_PARTS` (``word/document.xml``, headers, footers, notes, comments;
``xl/sharedStrings.xml`` and the worksheets; the slides and their notes; ODF ``content.xml``).
Safe counts one token per byte of those parts: the extracted text is a subset of their bytes (the
markup is dropped) and a byte-level BPE never spends more than one token per byte (a spreadsheet
that repeats one long shared string in many cells can exceed it: each cell holds only the string's
index). Routing counts one token per :data:`ROUTING_OFFICE_XML_BYTES_PER_TOKEN` bytes of them. No real
office files were at hand to measure, so the number is reasoned from the formats, not fitted: Word
writes ~150–300 bytes of markup per paragraph and run (``w:rsid*`` attributes, run properties), so
a document's text is about a tenth to a third of its ``document.xml`` (heavily formatted to plain
prose), i.e. at ~4 bytes per English token one token per ~40 to ~12 XML bytes; a spreadsheet
writes ~25–40 bytes per cell (``<c r="B7" s="3"><v>12</v></c>``) for a cell that renders as 2–3
tokens (one per ~10–15 bytes). 32 reads 0.4–0.8 of the truth on prose and spreadsheets and up to
~1.25 on the most heavily formatted documents: it leans low, as routing should. A ZIP that is not
one of these, or whose directory cannot be read, stays a flat-priced other part.

Before this, such a part was one flat-priced other part (1,024 safe tokens, none for routing)
whatever its length. Nothing here raises; nothing decodes more than :data:`MAX_OFFICE_SCAN_BYTES`.
"""

from __future__ import annotations

import re
import struct

from .media_tokens import MAX_PDF_SCAN_BYTES, MediaRef, _decode_all, base64_bytes

__all__ = ["MAX_OFFICE_SCAN_BYTES", "OFFICE_TEXT_PARTS", "ROUTING_OFFICE_XML_BYTES_PER_TOKEN", "office_ref", "office_text_bytes"]

#: Bytes of an office document's text-bearing XML parts per routing token (see the module docstring).
ROUTING_OFFICE_XML_BYTES_PER_TOKEN = 32
#: Decoded bytes of an office document read at most (its central directory is at the end).
MAX_OFFICE_SCAN_BYTES = MAX_PDF_SCAN_BYTES

#: ZIP entry names whose text a document converter extracts (see the module docstring).
OFFICE_TEXT_PARTS = re.compile(
    r"word/(document|footnotes|endnotes|comments|header\d*|footer\d*)\.xml"
    r"|xl/(sharedStrings|worksheets/sheet\d+)\.xml"
    r"|ppt/(slides/slide|notesSlides/notesSlide)\d+\.xml"
    r"|content\.xml"
)
_EOCD = b"PK\x05\x06"
_CENTRAL = b"PK\x01\x02"


def office_text_bytes(data: bytes) -> int | None:
    """Uncompressed bytes of the :data:`OFFICE_TEXT_PARTS` of a ZIP file's bytes, from its central
    directory; ``None``: not a ZIP whose directory can be read, or none of its entries is one."""
    end = data.rfind(_EOCD, max(0, len(data) - 65_557))
    if end < 0 or end + 22 > len(data):
        return None
    entries, size, offset = struct.unpack("<HII", data[end + 10:end + 20])
    if offset + size > end:
        return None
    total, found, pos = 0, False, offset
    for _ in range(entries):
        if data[pos:pos + 4] != _CENTRAL or pos + 46 > end:
            return None
        uncompressed, name_len, extra_len, comment_len = struct.unpack("<I3H", data[pos + 24:pos + 34])
        name = data[pos + 46:pos + 46 + name_len].decode("utf-8", "replace")
        if OFFICE_TEXT_PARTS.fullmatch(name):
            total += uncompressed
            found = True
        pos += 46 + name_len + extra_len + comment_len
    return total if found else None


def office_ref(text: object, start: int = 0) -> MediaRef | None:
    """The :class:`MediaRef` of a base64 office document (``text[start:]``), or ``None`` when it is
    no ZIP of :data:`OFFICE_TEXT_PARTS` (or too large to read). Never raises."""
    size = base64_bytes(text, start) if isinstance(text, str) else 0
    if not isinstance(text, str) or size > MAX_OFFICE_SCAN_BYTES:
        return None
    data = _decode_all(text, start)
    xml = office_text_bytes(data) if data else None
    if xml is None:
        return None
    return MediaRef("office", size, xml, xml // ROUTING_OFFICE_XML_BYTES_PER_TOKEN)

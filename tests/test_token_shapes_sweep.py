"""Agent-shaped text the estimator mispriced after breaker report 2 (pure: no tokenizer; the real counts
of the same shapes are checked in ``tests/lab/test_token_shapes_truth.py``).

* dense text cut by short punctuation every N characters (base64 as a JSON array of quoted lines, a
  Python list of them, PEM inside JSON, 16-character chunks): ``dense`` counted every separator byte,
  so ``",\\n    "`` between two lines cost as much as eight letters and the safe estimate fell to
  0.77–0.91 of the truth;
* digits: a space before a digit and the letters after one are whole tokens in every byte-level BPE
  (Qwen spends one token per character of ``1.5, 2.5``, ``0x00, 0x1f``), which the class weights price
  at a fraction; and cl100k/o200k/DeepSeek/Llama 3 spend one token per three digits, which routing
  priced at ~0.7 per digit;
* short lines (one word per line), words between tabs, whitespace-only stretches: line breaks and tabs
  weigh 0 in the DeepSeek and Llama 3 safe weights;
* repeated multi-character punctuation (``-=-=``) priced per character for routing; escaped
  JSON-in-JSON (``\\"``) priced as two marks per quote;
* office documents (docx/xlsx/pptx) priced as one flat part.
"""

from __future__ import annotations

import base64
import io
import json
import random
import string
import zipfile

import pytest

from litellm_kvwarm.token_office import ROUTING_OFFICE_XML_BYTES_PER_TOKEN, office_ref
from litellm_kvwarm.tokens import (
    FEATURES,
    SAFE_TOKENS_PER_OTHER_PART,
    calibrated_estimator,
    count_request,
    estimate_request,
    text_features,
)

FAMILIES = ["cl100k", "o200k", "qwen2.5", "qwen3.6", "deepseek", "llama3", "gemma3", "any"]
RNG = random.Random(3)


def est(family: str, text: str):
    return estimate_request({"messages": [{"role": "user", "content": text}]}, estimator=calibrated_estimator(family))


def lines(text: str, width: int) -> list[str]:
    return [text[i:i + width] for i in range(0, len(text), width)]


BLOB = base64.b64encode(RNG.randbytes(4500)).decode()  # 6,000 characters
PEM = "-----BEGIN CERTIFICATE-----\n" + "\n".join(lines(BLOB, 64)) + "\n-----END CERTIFICATE-----\n"
WRAPPED = {
    "json_array": json.dumps({"data": lines(BLOB, 76)}),
    "json_array_indented": json.dumps({"data": lines(BLOB, 76)}, indent=2),
    "python_list": "DATA = [\n" + "".join(f"    '{line}',\n" for line in lines(BLOB, 76)) + "]\n",
    "pem_in_json": json.dumps({"cert": PEM}, indent=2),
    "chunks_of_16": ",".join(lines(BLOB, 16)),
    "chunks_of_8": ",".join(lines(BLOB, 8)),
}
DENSE = FEATURES.index("dense") - 3  # text_features: the classes, then dense, then indented_lines


@pytest.mark.parametrize("kind", ["json_array", "json_array_indented", "python_list", "pem_in_json"])
def test_dense_score_survives_short_punctuation_between_runs(kind):
    """A separator *run* costs one interruption: quoted, indented lines keep most of the score of
    the same base64 unwrapped (they kept a third when every separator byte counted)."""
    plain = text_features(BLOB)[DENSE] / len(BLOB)
    wrapped = WRAPPED[kind]
    letters = sum(c.isalnum() for c in wrapped)
    assert text_features(wrapped)[DENSE] / letters > 0.75 * plain


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("kind", ["json_array", "json_array_indented", "python_list", "pem_in_json"])
def test_wrapping_dense_lines_in_punctuation_never_lowers_their_safe_estimate(kind, family):
    """The same base64 characters plus punctuation (quotes, commas, indentation) can only cost more
    tokens: the safe estimate of the wrapped text covers that of the bare base64 (it read 0.77-0.91
    of the truth when it fell below)."""
    assert est(family, WRAPPED[kind]).safe >= est(family, BLOB).safe


#: tokens per character of base64 in 8- and 16-character chunks, the larger, rounded up (measured with
#: the calibration tokenizers; ``gemma3`` and ``any`` take the largest)
CHUNK_RATE = {"cl100k": 0.73, "o200k": 0.695, "qwen2.5": 0.745, "qwen3.6": 0.74, "deepseek": 0.71, "llama3": 0.73}


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("kind", ["chunks_of_16", "chunks_of_8"])
def test_dense_text_in_short_chunks_keeps_its_rate(kind, family):
    """Base64 cut every 8 or 16 characters by a comma costs 0.69-0.745 tokens per character in every
    measured family, like uncut base64 (its ``dense`` score shrinks with the chunks; the case and
    digit transitions inside them do not)."""
    text = WRAPPED[kind]
    assert est(family, text).safe >= CHUNK_RATE.get(family, 0.745) * len(text)


def numbers(sep: str, n: int = 600) -> str:
    return sep.join(f"{RNG.uniform(0, 1000):.3f}" for _ in range(n))


ONE_TOKEN_PER_CHAR_IN_QWEN = {  # measured: tests/lab/test_token_shapes_truth.py
    "decimals_comma_space": numbers(", "),
    "decimals_space": numbers(" "),
    "hexdump": ", ".join(f"0x{RNG.randint(0, 255):02x}" for _ in range(1500)),
    "hexdump_upper": ", ".join(f"0x{RNG.randint(0, 255):02X}" for _ in range(1500)),
    "small_ints_space": "\n".join(" ".join(str(RNG.randint(0, 99)) for _ in range(20)) for _ in range(60)),
}


@pytest.mark.parametrize("family", ["qwen2.5", "qwen3.6", "gemma3", "any"])
@pytest.mark.parametrize("kind", sorted(ONE_TOKEN_PER_CHAR_IN_QWEN))
def test_digit_text_split_one_token_per_character_is_under_the_safe_estimate(kind, family):
    """Qwen (and Gemma) split digits one per token and keep a space before a digit, and letters after
    one, apart: these texts cost one token per character (safe read 0.85-0.95 of it)."""
    text = ONE_TOKEN_PER_CHAR_IN_QWEN[kind]
    assert est(family, text).safe >= len(text)


@pytest.mark.parametrize("family", ["cl100k", "o200k", "deepseek", "llama3"])
def test_long_numbers_are_priced_per_three_digits_for_routing_in_grouping_families(family):
    """cl100k, o200k, DeepSeek and Llama 3 spend ⌈n/3⌉ tokens on n digits: routing priced ~0.7 per
    digit and read tables of numbers 1.3-2.4 x their tokens."""
    ids = "\n".join(str(RNG.randint(10 ** 15, 10 ** 18 - 1)) for _ in range(400))  # 16-18 digits per line
    digits = sum(c.isdigit() for c in ids)
    tokens = sum(-(-len(line) // 3) + 1 for line in ids.split("\n"))  # each number's groups and its line break
    got = est(family, ids)
    assert got.routing <= 1.1 * tokens
    assert got.routing >= 0.3 * digits
    assert got.safe >= tokens
    qwen = est("qwen2.5", ids)
    assert qwen.routing >= 0.9 * digits  # Qwen: one per digit, unchanged


WORDS_PER_LINE = "\n".join(RNG.choice(["TODO", "done", "OK", "skip", "pending"]) for _ in range(1500))
TSV = "\n".join("\t".join(RNG.choice(["alpha", "beta", "gamma"]) for _ in range(6)) for _ in range(250))
SHORT_LINES = {  # text, tokens at least (measured in every family: tests/lab/test_token_shapes_truth.py)
    "word_per_line": (WORDS_PER_LINE, 2 * 1500 - 1),  # the word and the line break
    "tsv_words": (TSV, 250 * 6 + 250 * 5 + 249),  # DeepSeek: each word, tab and line break
    "tab_space_lines": ("head\n" + "\t \t\n" * 1500 + "tail", 2 * 1500),  # 0.5 per character everywhere
    "space_lines": ("head" + "\n \n" * 1500 + "tail", 1500),
}


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("kind", sorted(SHORT_LINES))
def test_short_lines_and_whitespace_cost_at_least_their_units(kind, family):
    """Every byte-level BPE keeps a line break (or tab) apart from the word after it; DeepSeek and
    Llama 3 price breaks and tabs at 0 (safe read 0.27-0.75 of the truth)."""
    text, tokens = SHORT_LINES[kind]
    assert est(family, text).safe >= tokens


@pytest.mark.parametrize("family", FAMILIES)
def test_mixed_punctuation_runs_are_priced_like_runs_for_routing(family):
    """``-=-=-=…`` costs ~1/16 token per character in every measured family (runs of one character
    were priced by ``token_runs`` already); routing priced it per character (7-14x)."""
    text = "header\n" + ("-=" * 40 + "\n") * 100
    got = est(family, text)
    assert got.routing <= 0.2 * len(text)
    assert got.safe >= got.routing


@pytest.mark.parametrize("family", FAMILIES)
def test_escaped_json_in_json_routing_counts_an_escaped_quote_once(family):
    """A tool result that is a JSON string holding JSON: ``\\"`` is about one token; routing counted
    two marks and read 1.2-1.5 x the truth. Escaping adds at most the backslashes' share."""
    inner = json.dumps({"status": "ok", "items": [{"id": i, "path": f"/srv/app/file_{i}.py", "ok": True} for i in range(80)]})
    escaped = json.dumps({"content": inner})
    plain, wrapped = est(family, inner), est(family, escaped)
    assert wrapped.routing <= 1.12 * plain.routing + 10
    assert wrapped.safe >= plain.safe


def test_fragments_never_lower_safe_below_routing_and_keep_prose_near_the_fit():
    prose = "The proxy sends the request to the model, and the model answers the user. " * 100
    for family in FAMILIES:
        got = est(family, prose)
        assert got.safe >= got.routing
        assert got.safe <= 2.0 * len(prose) / 4.5  # English: ~4.5 characters per token


# ------------------------------------------------------------------------------------ office documents

def _zip(parts: dict[str, str | bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in parts.items():
            z.writestr(name, data)
    return buf.getvalue()


PARA = '<w:p w:rsidR="00A1"><w:r><w:rPr><w:lang w:val="en-US"/></w:rPr><w:t xml:space="preserve">{}</w:t></w:r></w:p>'
DOCX_XML = "<w:document><w:body>" + "".join(PARA.format(f"Paragraph {i} of the quarterly report. " * 4) for i in range(400)) \
    + "</w:body></w:document>"
XLSX_SHEET = "<worksheet><sheetData>" + "".join(f'<row r="{r}">' + "".join(f'<c r="{c}{r}"><v>{r * 7}</v></c>' for c in "ABCDEF")
                                                + "</row>" for r in range(1, 500)) + "</sheetData></worksheet>"
PPTX_SLIDE = "<p:sld><p:txBody>" + "<a:p><a:r><a:t>Roadmap item for the next quarter</a:t></a:r></a:p>" * 40 + "</p:txBody></p:sld>"
OFFICE = {
    "docx": (_zip({"[Content_Types].xml": "<Types/>", "word/document.xml": DOCX_XML, "word/styles.xml": "<w:styles/>" * 5000,
                   "word/media/image1.png": RNG.randbytes(300_000)}), len(DOCX_XML)),
    "xlsx": (_zip({"xl/workbook.xml": "<workbook/>", "xl/sharedStrings.xml": "<sst/>", "xl/worksheets/sheet1.xml": XLSX_SHEET,
                   "xl/worksheets/sheet2.xml": XLSX_SHEET}), 2 * len(XLSX_SHEET) + len("<sst/>")),
    "pptx": (_zip({"ppt/presentation.xml": "<p/>", "ppt/slides/slide1.xml": PPTX_SLIDE, "ppt/slides/slide2.xml": PPTX_SLIDE,
                   "ppt/media/image1.jpeg": RNG.randbytes(200_000)}), 2 * len(PPTX_SLIDE)),
}
MIME = {
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
}


@pytest.mark.parametrize("kind", sorted(OFFICE))
def test_office_documents_are_priced_by_their_text_parts(kind):
    """The ZIP directory's uncompressed sizes of the text-bearing XML parts: safe one token per byte,
    routing one per 32 bytes; images, styles and the file's size do not count."""
    data, xml = OFFICE[kind]
    ref = office_ref(base64.b64encode(data).decode())
    assert ref is not None and ref.kind == "office"
    assert ref.safe == xml
    assert ref.routing == xml // ROUTING_OFFICE_XML_BYTES_PER_TOKEN


@pytest.mark.parametrize("kind", sorted(OFFICE))
@pytest.mark.parametrize("call_kind, part", [
    ("responses", lambda d, m: {"type": "input_file", "filename": "f", "file_data": f"data:{m};base64,{d}"}),
    ("responses", lambda d, m: {"type": "input_file", "filename": "f", "file_data": d}),
    ("chat", lambda d, m: {"type": "file", "file": {"file_data": d, "filename": "f"}}),
    ("messages", lambda d, m: {"type": "document", "source": {"type": "base64", "media_type": m, "data": d}}),
])
def test_office_parts_of_every_api_are_not_flat_priced(kind, call_kind, part):
    data, xml = OFFICE[kind]
    block = part(base64.b64encode(data).decode(), MIME[kind])
    key = "input" if call_kind == "responses" else "messages"
    body = {key: [{"role": "user", "content": [block, {"type": "input_text" if call_kind == "responses" else "text", "text": "Summarize."}]}]}
    counts = count_request(body, call_kind=call_kind)
    assert counts.other_parts == 0
    assert [m.kind for m in counts.media] == ["office"]
    got = estimate_request(body, call_kind=call_kind, estimator=calibrated_estimator("qwen2.5"))
    assert got.safe >= xml and got.routing >= xml // ROUTING_OFFICE_XML_BYTES_PER_TOKEN


def test_a_zip_of_no_office_type_and_a_broken_one_stay_flat():
    other = _zip({"notes/readme.txt": "hello " * 1000})
    broken = OFFICE["docx"][0][:-200]  # the central directory cut off
    for data in (other, broken, b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(5000)):  # and a legacy .doc
        encoded = base64.b64encode(data).decode()
        assert office_ref(encoded) is None
        counts = count_request({"input": [{"role": "user", "content": [{"type": "input_file", "file_data": encoded}]}]},
                               call_kind="responses")
        assert counts.other_parts == 1 and not counts.media
        assert estimate_request({"input": [{"role": "user", "content": [{"type": "input_file", "file_data": encoded}]}]},
                                call_kind="responses").safe >= SAFE_TOKENS_PER_OTHER_PART


def test_office_estimate_grows_with_the_text_not_the_file():
    small = _zip({"word/document.xml": DOCX_XML[:5000], "word/media/big.png": RNG.randbytes(500_000)})
    large = _zip({"word/document.xml": DOCX_XML})
    a, b = (office_ref(base64.b64encode(z).decode()) for z in (small, large))
    assert a is not None and b is not None
    assert a.bytes > b.bytes and a.safe < b.safe and a.routing < b.routing


def test_random_ids_in_any_case_keep_the_safe_estimate_of_their_characters():
    """Short random identifiers in JSON (11 characters, YouTube-like) cost ~0.7 tokens per character:
    mixed case and digits are priced per transition, not only by ``dense``."""
    alphabet = string.ascii_letters + string.digits + "-_"
    ids = json.dumps({"ids": ["".join(RNG.choice(alphabet) for _ in range(11)) for _ in range(600)]})
    for family in FAMILIES:
        assert est(family, ids).safe >= 0.62 * len(ids)

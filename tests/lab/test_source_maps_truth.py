"""Source maps and upper-case code lists against real token counts (every calibration tokenizer available
offline, each family's chat template, as a user message and as a tool result): never above the safe estimate.

A ``.js.map``'s ``mappings`` is base64-VLQ: segments of 1–7 mostly upper-case characters cut by ``,`` and
``;`` (``AAAA,CAAC,MAAM;;AAE9F``), 0.58–0.62 tokens per character; comma- or semicolon-separated random
capitals cost 0.62–0.70. A separator every ~5 characters kept their ``dense`` score at 0 and the letter
weights price word-like text (~0.25 a letter): a 54 KB ``tsc`` map read 0.64 (o200k) to 0.86 (cl100k) of
the truth (safe), random-delta maps 0.70–0.92, 4-letter codes 0.63–0.86, semicolon-separated codes 0.55–0.73."""

from __future__ import annotations

import argparse
import inspect
import json
import random
import re
import string

import pytest

from litellm_kvwarm.lab.calibration.families import FAMILIES, TokenCounter
from litellm_kvwarm.lab.calibration.templates import render
from litellm_kvwarm.tokens import calibrated_estimator, estimate_request

AVAILABLE = [f for f in FAMILIES.values() if f.available()]
RNG = random.Random(1)
_B64 = string.ascii_uppercase + string.ascii_lowercase + string.digits + "+/"


def _vlq(value: int) -> str:
    """One base64-VLQ field (the source map v3 encoding: sign in the low bit, 5 bits a digit, 32 = more)."""
    value = (-value << 1) | 1 if value < 0 else value << 1
    out = ""
    while True:
        digit, value = value & 31, value >> 5
        out += _B64[digit | (32 if value else 0)]
        if not value:
            return out


def _tsc_mappings(lines: list[str]) -> str:
    """What ``tsc`` writes for a file compiled line for line: a segment per token (column delta, source 0,
    line delta, column delta), ``,`` between segments, ``;`` between lines."""
    out, prev_line, prev_col = [], 0, 0
    for number, line in enumerate(lines):
        segments, prev_gen = [], 0
        for match in re.finditer(r"[A-Za-z_]\w*|[^\sA-Za-z0-9_]", line):
            col = match.start()
            segments.append(_vlq(col - prev_gen) + "A" + _vlq(number - prev_line) + _vlq(col - prev_col))
            prev_gen, prev_line, prev_col = col, number, col
        out.append(",".join(segments))
    return ";".join(out)


def _random_mappings(lines: int) -> str:
    """Segments of small random deltas (a bundler's map), 40% with a name index."""
    out = []
    for _ in range(lines):
        segments = []
        for _ in range(RNG.randint(4, 20)):
            segment = _vlq(RNG.randint(1, 10)) + "A" + _vlq(RNG.randint(-1, 1)) + _vlq(RNG.randint(-10, 10))
            segments.append(segment + (_vlq(RNG.randint(-30, 30)) if RNG.random() < 0.4 else ""))
        out.append(",".join(segments))
    return ";".join(out)


def _map(mappings: str) -> str:
    return json.dumps({"version": 3, "file": "index.js", "sourceRoot": "", "sources": ["../src/index.ts"], "names": [],
                       "mappings": mappings})


def _codes(size: tuple[int, int], sep: str, n: int) -> str:
    return sep.join("".join(RNG.choice(string.ascii_uppercase) for _ in range(RNG.randint(*size))) for _ in range(n))


TEXTS = {
    "tsc_map": _map(_tsc_mappings(inspect.getsource(argparse).splitlines()[:1500])),
    "random_delta_map": _map(_random_mappings(500)),
    "codes4_comma_lines": "\n".join(_codes((4, 4), ",", 12) for _ in range(300)),
    "codes5_comma": _codes((5, 5), ",", 2500),
    "codes3_semicolon": _codes((3, 3), ";", 2500),
    "codes1to7_semicolon": _codes((1, 7), ";", 2500),
}


def _messages(kind: str, where: str) -> list[dict]:
    if where == "user":
        return [{"role": "user", "content": TEXTS[kind]}]
    return [{"role": "user", "content": "read dist/index.js.map"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
                                                                   "function": {"name": "read", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": TEXTS[kind]}]


@pytest.mark.parametrize("where", ["user", "tool"])
@pytest.mark.parametrize("kind", sorted(TEXTS))
def test_source_maps_and_upper_case_codes_are_never_under_the_safe_estimate(kind, where):
    messages = _messages(kind, where)
    truths = {}
    for family in AVAILABLE:
        truths[family.name] = TokenCounter(family).count_all([render(family.template, messages, None)])[0]
        est = estimate_request({"messages": messages}, call_kind="chat", estimator=calibrated_estimator(family.name))
        assert est.safe >= truths[family.name], (kind, family.name, est.safe, truths[family.name])
    assert estimate_request({"messages": messages}, call_kind="chat", estimator=calibrated_estimator("any")).safe >= max(truths.values())

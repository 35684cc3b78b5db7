"""Lists of short upper-case codes in agent tool results against real token counts (estimator breaker, agent
shapes): a PDB file's ``SEQRES`` records (three-letter residue codes), a watchlist of ticker symbols, gene
symbols, airport pairs. Each body is sent as LiteLLM sends it (``litellm_bridge.chat_payload``) and rendered in the
family's chat template. Every tokenizer parametrized here is a lab dependency (``scripts/install.sh``).

Short upper-case words are not words a vocabulary holds whole: ``ALA``, ``KRAS``, ``JFK`` cost about a token per
two letters, while the safe weights price a letter at 0.2-0.35 tokens (fitted on lower-case words) and the ``dense``
score (more than 5 letters per separator) never sees a run of 3-4. Safe ÷ truth at 9-13k tokens: tickers 0.75-0.82
in every family, airport pairs 0.87-0.97 in every family, gene symbols 0.90 (o200k), 0.98 (qwen2.5, qwen3.6), SEQRES
0.995-0.998 (qwen2.5, o200k; bare space-separated residues 0.83-0.98 in every family). Routing leans low (0.43-0.64).
A per-pair price for an upper-case letter after an upper-case letter (0.5 tokens less the letter weight) covers them
(1.04-1.5) but raises all-caps prose, SQL and constants 1.4-1.7x (safe only): left open, strict xfail."""

from __future__ import annotations

import random
import string

import pytest

from truth_support import readings
_RNG = random.Random(96)
_RESIDUES = "ALA ARG ASN ASP CYS GLN GLU GLY HIS ILE LEU LYS MET PHE PRO SER THR TRP TYR VAL".split()
_GENES = ["BRCA1", "TP53", "EGFR", "KRAS", "MYC", "PTEN", "APC", "CDKN2A", "PIK3CA", "BRAF", "ERBB2", "ALK", "RET", "MET",
          "NRAS", "IDH1", "JAK2", "FLT3"]


def _seqres(chains: int, length: int) -> str:
    lines = []
    for chain in string.ascii_uppercase[:chains]:
        residues = [_RNG.choice(_RESIDUES) for _ in range(length)]
        for serial, at in enumerate(range(0, length, 13), 1):
            lines.append(f"SEQRES {serial:3d} {chain} {length:4d}  " + " ".join(residues[at:at + 13]))
    return "\n".join(lines)


def _code(n: int) -> str:
    return "".join(_RNG.choice(string.ascii_uppercase) for _ in range(n))


TEXTS = {
    "pdb_seqres": _seqres(8, 600),
    "tickers": " ".join(_code(_RNG.randint(1, 4)) for _ in range(5800)),
    "airport_pairs": " ".join(f"{_code(3)}-{_code(3)}" for _ in range(2500)),
    "gene_symbols": " ".join(_RNG.choice(_GENES) for _ in range(4000)),
}


def _body(text: str) -> dict:
    return {"model": "m", "max_tokens": 4096,
            "messages": [{"role": "user", "content": "Which codes appear most often?"},
                         {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_01", "name": "read_file",
                                                            "input": {"path": "data/codes.txt"}}]},
                         {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": text}]}],
            "tools": [{"name": "read_file", "description": "Read a file.",
                       "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}]}


@pytest.mark.xfail(strict=True, reason="short upper-case codes cost ~0.5 tokens a letter; the safe letter weight is "
                                       "0.2-0.35 and no cheap feature tells codes from all-caps words (open)")
@pytest.mark.parametrize("text", sorted(TEXTS))
def test_upper_case_code_lists_are_never_under_the_safe_estimate(text):
    body = _body(TEXTS[text])
    low = {name: round(r.safe / r.truth, 3) for name, r in readings(body, "messages").items() if r.safe < r.truth}
    assert not low, low

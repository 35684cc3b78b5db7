"""The calibrated estimator's weights: the packaged file, its validation, its dense-text floor, and the
family of a model name.

``data/token_weights.json`` is written by ``python -m litellm_kvwarm.lab.calibration``
(quantile regression per tokenizer family, ``docs/estimator.md``) and read once per process.

**Dense-text floor** (applied when the file is loaded, :func:`with_dense_floor`). The fit saw little
text made of long unbroken letter/digit runs, and its safe weights put base64 at 0.66–0.93 of the
truth (o200k: 0.66; a 170k-token notebook with PNG outputs read 0.70), DNA and protein sequences at
0.58–0.62 (o200k). So each family's ``dense`` safe weight (general and English regime) is raised, if
needed, until the safe estimate of every text of :func:`dense_references` (with what
:mod:`~litellm_kvwarm.token_fragments` adds for its digit and case edges) covers
:data:`DENSE_SAFE_MARGIN` × its measured tokens (:data:`DENSE_TOKENS_PER_CHAR`, the family's tokenizer
on those exact texts; a family not measured takes the largest rate measured). Only the characters'
weights count (no constant, no per-message tokens), so the floor holds at any length. Text that is
not dense scores 0 on ``dense`` and is unaffected; long identifiers and URLs gain a little.

**Per-message floor** (:func:`with_message_floor`). The quantile fit saw few short messages and traded
the safe per-message weight for character weights (qwen2.5 3.3 tokens per message against 6.1 routing,
deepseek 0.0 against 2.5), so a request of many short messages ("ok", "continue", empty tool results: an
agent loop) read 0.26-0.69 of the chat template's truth. The safe per-message weight is raised to at
least the family's routing one (both regimes); ``any``'s to the largest of any family, since it must
hold for every template.

**Tool preamble floor** (:func:`with_tool_floor`). A request with tools pays the template's tool preamble
once (Qwen's "# Tools ... <tools></tools> ... <tool_call>" instructions, Llama 3's "Given the following
functions ...", DeepSeek's tool markers): :data:`TOOL_PREAMBLE_TOKENS`, measured. The fit has no feature
for "has tools", and its per-tool safe weight is small (qwen2.5 0.0), so one short tool and a short
question read 0.79-0.93 of the truth. The safe estimate adds what ``tools × weight`` leaves of the
preamble (nothing with many tools).
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import json
import random
import re
from collections.abc import Mapping
from importlib import resources

from .token_estimators import CalibratedEstimator, LinearWeights, fragment_tokens
from .token_features import FEATURES, text_features
from .token_fragments import find_fragments, mark_pairs

__all__ = [
    "ANY_FAMILY", "DENSE_SAFE_MARGIN", "DENSE_TOKENS_PER_CHAR", "TOOL_PREAMBLE_TOKENS", "calibrated_estimator", "dense_references", "family_of",
    "load_weights", "parse_weights", "with_dense_floor", "with_message_floor",
    "with_tool_floor",
]

#: Family whose weights hold across every calibrated tokenizer family.
ANY_FAMILY = "any"


@functools.lru_cache(maxsize=1)
def load_weights() -> dict[str, LinearWeights]:
    """The packaged weights (``data/token_weights.json``) per family, with the dense-text floor
    (:func:`with_dense_floor`); read once per process."""
    raw = json.loads(resources.files("litellm_kvwarm").joinpath("data/token_weights.json").read_text("utf-8"))
    floored = with_message_floor({name: with_dense_floor(name, weights) for name, weights in parse_weights(raw).items()})
    return {name: with_tool_floor(name, weights) for name, weights in floored.items()}


#: Template tokens one tool costs beyond its ``json.dumps`` text (the preamble), per family: measured on
#: the official templates (``tests/lab/test_agent_loops_truth.py`` re-measures them; Llama 3's grows with
#: the schema's lines, the largest measured is kept). A family not measured (gemma3) and ``any`` take the largest.
TOOL_PREAMBLE_TOKENS = {"cl100k": 92, "o200k": 91, "qwen2.5": 78, "qwen3.6": 99, "deepseek": 16, "llama3": 97}


def with_tool_floor(family: str, weights: LinearWeights) -> LinearWeights:
    """``weights`` with the family's :data:`TOOL_PREAMBLE_TOKENS` (the largest for ``any`` and an unmeasured family)."""
    preamble = TOOL_PREAMBLE_TOKENS.get(family, max(TOOL_PREAMBLE_TOKENS.values()))
    return dataclasses.replace(weights, tool_preamble=float(preamble))


def with_message_floor(families: Mapping[str, LinearWeights]) -> dict[str, LinearWeights]:
    """``families`` with each safe ``messages`` weight (tokens per message) raised to at least the
    family's routing one, in both regimes; :data:`ANY_FAMILY`'s to the largest of every family's (see
    the module docstring)."""
    index = FEATURES.index("messages")

    def own(weights: LinearWeights) -> float:
        return max(weights.routing[index], (weights.english_routing or weights.routing)[index])

    largest = max(own(w) for w in families.values())

    def raised(safe: tuple[float, ...] | None, floor: float) -> tuple[float, ...] | None:
        if safe is None or safe[index] >= floor:
            return safe
        return (*safe[:index], floor, *safe[index + 1:])

    out = {}
    for name, weights in families.items():
        floor = largest if name == ANY_FAMILY else own(weights)
        out[name] = LinearWeights(safe=raised(weights.safe, floor), routing=weights.routing,  # type: ignore[arg-type]
                                  english_safe=raised(weights.english_safe, floor), english_routing=weights.english_routing)
    return out


#: Safe estimate of dense text ÷ its tokens, at least (see the module docstring).
DENSE_SAFE_MARGIN = 1.05
#: Tokens per character of each text of :func:`dense_references`, per family: measured with the
#: calibration tokenizers (``tests/lab/test_dense_truth.py`` re-measures them), rounded up.
DENSE_TOKENS_PER_CHAR = {
    "base64": {"cl100k": 0.712, "o200k": 0.677, "qwen2.5": 0.736, "qwen3.6": 0.730, "deepseek": 0.695, "llama3": 0.711},
    "json_base64": {"cl100k": 0.679, "o200k": 0.646, "qwen2.5": 0.702, "qwen3.6": 0.703, "deepseek": 0.661, "llama3": 0.676},
    "dna": {"cl100k": 0.523, "o200k": 0.523, "qwen2.5": 0.523, "qwen3.6": 0.519, "deepseek": 0.477, "llama3": 0.523},
    "protein": {"cl100k": 0.570, "o200k": 0.562, "qwen2.5": 0.570, "qwen3.6": 0.566, "deepseek": 0.572, "llama3": 0.568},
    "keys": {"cl100k": 0.724, "o200k": 0.686, "qwen2.5": 0.745, "qwen3.6": 0.742, "deepseek": 0.708, "llama3": 0.722},
    "upper": {"cl100k": 0.610, "o200k": 0.586, "qwen2.5": 0.610, "qwen3.6": 0.604, "deepseek": 0.598, "llama3": 0.608},
}


@functools.lru_cache(maxsize=1)
def dense_references() -> dict[str, str]:
    """The dense texts the floor is measured on (deterministic, ~4,000 characters each): base64 of
    random bytes (no line breaks); pretty-printed JSON whose fields hold base64 (76-character lines,
    as a notebook's PNG outputs); DNA and protein sequences in FASTA (60 per line); API keys (48
    random letters and digits per line); random upper-case letters (40 per line: licence keys,
    Crockford IDs; one case, no digits, so no :mod:`~litellm_kvwarm.token_fragments` transition prices
    them, and they cost more per letter than DNA or protein)."""
    rng = random.Random(20240611)
    blob = base64.b64encode(rng.randbytes(3000)).decode()
    fields = [base64.b64encode(rng.randbytes(900)).decode() for _ in range(3)]
    wrapped = ["".join(f[i:i + 76] + "\n" for i in range(0, len(f), 76)) for f in fields]
    notebook = json.dumps({"outputs": [{"data": {"image/png": b, "text/plain": ["<Figure>"]}, "output_type": "display_data"}
                                       for b in wrapped]}, indent=1)
    alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

    def fasta(alphabet: str, header: str) -> str:
        seq = "".join(rng.choice(alphabet) for _ in range(3900))
        return header + "\n" + "\n".join(seq[i:i + 60] for i in range(0, len(seq), 60)) + "\n"

    return {
        "base64": blob,
        "json_base64": notebook,
        "dna": fasta("ACGT", ">chr1:1-3900 Homo sapiens"),
        "protein": fasta("ACDEFGHIKLMNPQRSTVWY", ">sp|P01308|INS_HUMAN Insulin"),
        "keys": "\n".join("sk-" + "".join(rng.choice(alnum) for _ in range(48)) for _ in range(76)),
        "upper": "\n".join("".join(rng.choice(alnum[:26]) for _ in range(40)) for _ in range(100)),
    }


def with_dense_floor(family: str, weights: LinearWeights) -> LinearWeights:
    """``weights`` with each safe ``dense`` weight raised, where needed, so that the safe estimate
    of every :func:`dense_references` text covers :data:`DENSE_SAFE_MARGIN` × its tokens in
    ``family`` (see the module docstring)."""
    dense = FEATURES.index("dense")
    first = FEATURES.index(_FIRST_CHARACTER_FEATURE)
    references = [(text_features(text), len(text), rates, find_fragments(text.encode(), *mark_pairs(text.encode())))
                  for (name, rates), text in zip(DENSE_TOKENS_PER_CHAR.items(), (dense_references()[n] for n in DENSE_TOKENS_PER_CHAR))]

    def floored(safe: tuple[float, ...] | None) -> tuple[float, ...] | None:
        if safe is None:
            return None
        need = safe[dense]
        for features, chars, rates, fragments in references:
            rate = rates.get(family, max(rates.values()))
            others = sum(w * x for w, x in zip(safe[first:], features)) - safe[dense] * features[dense - first]
            others += fragment_tokens(fragments, safe, safe)[0]  # what the estimate adds for its fragments
            if features[dense - first] > 0:
                need = max(need, (DENSE_SAFE_MARGIN * rate * chars - others) / features[dense - first])
        return (*safe[:dense], round(need, 6), *safe[dense + 1:])

    return LinearWeights(safe=floored(weights.safe), routing=weights.routing,  # type: ignore[arg-type]
                         english_safe=floored(weights.english_safe), english_routing=weights.english_routing)


_FIRST_CHARACTER_FEATURE = "letters"  # text_features() starts here: FEATURES less const, messages, tools


def parse_weights(raw: Mapping[str, object]) -> dict[str, LinearWeights]:
    """Validate a weights document (as written by the calibration script) into per-family weights."""
    if tuple(raw.get("features", ())) != FEATURES:  # type: ignore[arg-type]
        raise ValueError(f"token weights: features {raw.get('features')!r} do not match {FEATURES!r}")
    families = raw.get("families")
    if not isinstance(families, Mapping) or ANY_FAMILY not in families:
        raise ValueError(f"token weights: 'families' must include {ANY_FAMILY!r}")
    def optional(values: object) -> tuple[float, ...] | None:
        return tuple(map(float, values)) if values else None  # type: ignore[arg-type]

    return {
        name: LinearWeights(
            safe=tuple(map(float, w["safe"])), routing=tuple(map(float, w["routing"])),
            english_safe=optional(w.get("english_safe")), english_routing=optional(w.get("english_routing")),
        )
        for name, w in families.items()
    }


@functools.lru_cache(maxsize=64)
def calibrated_estimator(family: str | None = None) -> CalibratedEstimator:
    """The calibrated estimator for ``family`` (a key of the weights file, or a model name
    given to :func:`family_of`); unknown or ``None`` gets the ``"any"`` weights, which hold
    across every calibrated family. Cached: build it per family, not per request."""
    weights = load_weights()
    key = family if family in weights else family_of(family)
    key = key if key in weights else ANY_FAMILY
    return CalibratedEstimator(family=key, weights=weights[key])


# Served-model name patterns -> tokenizer family (first match wins; names are lower-cased,
# a provider prefix such as "hosted_vllm/" or "Qwen/" is ignored by the unanchored search).
_FAMILY_PATTERNS = (
    (re.compile(r"qwen3\.[5-9]|qwen3\.\d\d|qwen[4-9]"), "qwen3.6"),
    (re.compile(r"qwen|qwq"), "qwen2.5"),
    (re.compile(r"deepseek"), "deepseek"),
    (re.compile(r"llama[-_ ]?3"), "llama3"),
    (re.compile(r"gemma[-_ ]?3"), "gemma3"),
    (re.compile(r"gpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|gpt-oss|(^|/)o[134](-|$)|chatgpt-4o"), "o200k"),
    (re.compile(r"gpt-4|gpt-3\.5|text-embedding-3|text-embedding-ada"), "cl100k"),
)


@functools.lru_cache(maxsize=256)
def family_of(model: str | None) -> str:
    """Tokenizer family of a served model name (e.g. ``"Qwen/Qwen2.5-7B-Instruct"`` ->
    ``"qwen2.5"``), or ``"any"`` when it cannot be told."""
    if not model:
        return ANY_FAMILY
    name = model.lower()
    for pattern, family in _FAMILY_PATTERNS:
        if pattern.search(name):
            return family
    return ANY_FAMILY

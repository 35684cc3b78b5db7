"""Cheap input-token estimates of a request, from what the backend will render (pure).

One pass collects the text the chat template will render — message text (string or
list-of-parts content), names, tool calls and tool results, the ``tools`` / ``functions``
JSON schemas, a ``response_format`` schema — and counts messages, tool schemas and
non-text parts. For a text completion it reads ``prompt`` instead: ``messages`` XOR
``prompt``, exactly as the payload is sent (a ``prompt`` of token ids is counted exactly).

Two estimates come out, biased on purpose:

* ``safe``: must not fall below the true count; used to clamp ``max_tokens``.
* ``routing``: leans low; used for proactive routing, so a borderline interactive turn
  is not sent to the slow tier for nothing.

Two estimators compute them (same inputs, same :class:`TokenEstimate`):

* :class:`RatioEstimator` (the seed's, kept selectable): characters ÷ 3 (safe, rounded
  up) and ÷ 4 (routing, rounded down) plus per-message template overhead. Measured on
  real data it is below the truth on 5–7% of requests and does not lean low (see
  ``docs/estimator.md``).
* :class:`CalibratedEstimator`: two linear functions of :data:`FEATURES` — a constant,
  messages, tool schemas, eleven character classes (:data:`CHAR_CLASSES`: ASCII letters,
  digits, spaces, line breaks/tabs, other ASCII, accented Latin, other 2-byte scripts,
  general punctuation/symbols, CJK/kana/Hangul, other 3-byte, 4-byte) and a
  ``dense`` score (letters in long unbroken runs: base64, hashes, identifiers) — with
  weights fitted by quantile regression per tokenizer family
  (``python -m litellm_kvwarm.lab.calibration``) and shipped in ``data/token_weights.json``.

Cost (details and benchmark in ``docs/estimator.md``): character classes are counted at
C speed (one ``bytes.translate`` deleting letters, then ``translate``/``count`` on the
rest); a request longer than :data:`SAMPLE_CHARS` characters is classified on
:data:`SAMPLE_CHARS` characters of evenly spaced 256-character blocks and scaled up, so
the cost stays bounded (tens of µs) at 100k tokens. The fitted weights were fitted on
features computed exactly this way, so sampling noise is inside their margins.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from itertools import repeat
from operator import itemgetter
from typing import Protocol

__all__ = [
    "ANY_FAMILY",
    "CHAR_CLASSES",
    "FEATURES",
    "CalibratedEstimator",
    "Estimator",
    "LinearWeights",
    "RatioEstimator",
    "RequestCounts",
    "TokenEstimate",
    "calibrated_estimator",
    "char_classes",
    "text_features",
    "count_request",
    "estimate_counts",
    "estimate_request",
    "family_of",
    "json_text",
    "load_weights",
    "parse_weights",
    "parts_features",
    "request_features",
    "request_features_and_regime",
]

#: Template tokens per message (role header and end marker; ChatML renders ~5, Llama 3 ~5).
SAFE_TOKENS_PER_MESSAGE = 8
ROUTING_TOKENS_PER_MESSAGE = 3
#: Tokens the template adds once (generation prompt, BOS, tool preamble share).
SAFE_TOKENS_PER_REQUEST = 16
ROUTING_TOKENS_PER_REQUEST = 0
#: Tokens counted for a non-text content part (image, audio, file): a placeholder, since
#: its real cost depends on the model's encoder. Routing counts none of it.
SAFE_TOKENS_PER_OTHER_PART = 1024

#: Character classes, in the order :func:`char_classes` returns them.
#: ``latin_ext``: U+0080–U+017F (accented Latin, ``°``, ``×``; lead bytes C2–C5); ``utf8_2``: the
#: other 2-byte characters (Greek, Cyrillic, Hebrew, Arabic, …); ``symbols``: U+2000–U+2FFF
#: (curly quotes, dashes, arrows, box drawing; lead byte E2); ``cjk``: U+3000–U+DFFF (CJK
#: punctuation, kana, Han, Hangul); ``utf8_3``: other 3-byte (Indic, Thai, Vietnamese tone
#: marks, fullwidth forms); ``utf8_4``: emoji and other astral characters. Scripts within one
#: class cost alike in most vocabularies; the classes that differ by an order of magnitude
#: (isolated accents vs Cyrillic words, curly quotes vs Devanagari) are kept apart.
CHAR_CLASSES = (
    "letters", "digits", "spaces", "breaks", "punct", "latin_ext", "utf8_2", "symbols", "cjk", "utf8_3", "utf8_4",
)
#: Inputs of the calibrated linear estimates, in weight order.
FEATURES = ("const", "messages", "tools", *CHAR_CLASSES, "dense")
#: Above this many characters, classes are counted on a sample of this many (see module doc).
SAMPLE_CHARS = 8192
SAMPLE_BLOCK_CHARS = 256
#: ``dense``: per 256-byte block, ASCII letters and digits beyond this many per separator
#: (space, line break, punctuation). Prose scores 0; base64, hashes, long identifiers and
#: long-word languages score high: they cost far more tokens per letter than prose does.
DENSE_LETTERS_PER_SEPARATOR = 5
DENSE_BLOCK_BYTES = 256
#: Family whose weights hold across every calibrated tokenizer family.
ANY_FAMILY = "any"
#: The *English* regime: a request whose sampled text has at least
#: :data:`ENGLISH_MIN_MARKERS_PER_100_CHARS` occurrences of :data:`ENGLISH_MARKER` per 100
#: characters, and under :data:`ENGLISH_MAX_NON_ASCII_SHARE` non-ASCII characters, gets its
#: family's English weights (fitted on such requests only). One weight per character class must
#: otherwise cover every language in the class — plain-ASCII Swahili or Finnish cost up to 1.5×
#: the tokens per letter of English — which leaves English over-estimated by ~1.8× instead of
#: ~1.4×. Measured on the calibration data: no other language's text reaches 0.05, two thirds
#: of ShareGPT and nine tenths of BFCL requests reach 0.3 (one ``bytes.count``, ~4 µs).
ENGLISH_MARKER = b" the "
ENGLISH_MIN_MARKERS_PER_100_CHARS = 0.3
ENGLISH_MAX_NON_ASCII_SHARE = 0.02

_TEXT_PART_TYPES = frozenset({"text", "input_text", "output_text"})
_PROMPT_SHAPING_KEYS = ("tools", "functions", "response_format")


def _byte_set(ranges: Iterable[tuple[int, int]]) -> bytes:
    return bytes(b for lo, hi in ranges for b in range(lo, hi + 1))


# A letter or a UTF-8 continuation byte is deleted in the first pass; every other byte is
# one character (ASCII non-letter, or the lead byte of a multi-byte character).
_LETTERS_AND_CONTINUATION = _byte_set([(0x41, 0x5A), (0x61, 0x7A), (0x80, 0xBF)])
_CODE = {
    "digits": b"0", "spaces": b" ", "breaks": b"\n", "punct": b"!", "latin_ext": b"L", "utf8_2": b"2",
    "symbols": b"S", "cjk": b"C", "utf8_3": b"3", "utf8_4": b"4",
}
_CODE_TABLE = bytes(
    _CODE["digits"][0] if 0x30 <= b <= 0x39
    else _CODE["spaces"][0] if b == 0x20
    else _CODE["breaks"][0] if b in (0x09, 0x0A, 0x0B, 0x0C, 0x0D)
    else _CODE["punct"][0] if b < 0x80
    else _CODE["latin_ext"][0] if 0xC0 <= b <= 0xC5  # U+0080–U+017F (C0/C1 never lead valid UTF-8)
    else _CODE["utf8_2"][0] if 0xC6 <= b <= 0xDF
    else _CODE["symbols"][0] if b == 0xE2  # U+2000–U+2FFF
    else _CODE["cjk"][0] if 0xE3 <= b <= 0xED  # U+3000–U+DFFF: CJK punctuation, kana, Han, Hangul
    else _CODE["utf8_3"][0] if 0xE0 <= b <= 0xEF
    else _CODE["utf8_4"][0]
    for b in range(256)
)
_NON_ASCII_CLASSES = ("latin_ext", "utf8_2", "symbols", "cjk", "utf8_3", "utf8_4")
# For ``dense``: ASCII letters/digits -> b"a"; every other byte (separators, and non-ASCII,
# which its own classes price) -> b"|".
_DENSE_TABLE = bytes(
    ord("a") if (0x30 <= b <= 0x39 or 0x41 <= b <= 0x5A or 0x61 <= b <= 0x7A) else ord("|") for b in range(256)
)


@dataclass(frozen=True)
class RequestCounts:
    """What the estimates are computed from.

    Attributes:
        chars: characters of rendered text (message text, tool calls/results, schemas).
        messages: number of chat messages (0 for a text completion).
        other_parts: content parts that are not text (images, audio, files).
        exact_tokens: token ids sent as ``prompt`` (exact count), else ``None``.
        tools: tool / function schemas sent with a chat request.
        parts: the rendered text pieces, in order (their joined length is ``chars``), for the
            calibrated estimator; :attr:`text` joins them.
    """

    chars: int
    messages: int
    other_parts: int = 0
    exact_tokens: int | None = None
    tools: int = 0
    parts: tuple[str, ...] | list[str] = field(default=(), repr=False, compare=False)

    @property
    def text(self) -> str:
        """The rendered text, joined (O(characters); the estimators never need it)."""
        return "".join(self.parts)


@dataclass(frozen=True)
class TokenEstimate:
    """Input-token estimates of one request (tokens). ``safe >= routing`` always."""

    safe: int
    routing: int
    counts: RequestCounts


class Estimator(Protocol):
    """Turns :class:`RequestCounts` into a :class:`TokenEstimate`. Built once, then pure and cheap."""

    name: str

    def estimate_counts(self, counts: RequestCounts) -> TokenEstimate: ...


@dataclass(frozen=True)
class RatioEstimator:
    """The seed's estimator: characters ÷ ``safe_chars_per_token`` / ÷ ``routing_chars_per_token``."""

    safe_chars_per_token: float = 3.0
    routing_chars_per_token: float = 4.0
    name: str = "ratio"

    def estimate_counts(self, counts: RequestCounts) -> TokenEstimate:
        if counts.exact_tokens is not None:
            return _exact(counts)
        safe = (
            math.ceil(counts.chars / self.safe_chars_per_token)
            + SAFE_TOKENS_PER_MESSAGE * counts.messages
            + SAFE_TOKENS_PER_OTHER_PART * counts.other_parts
            + SAFE_TOKENS_PER_REQUEST
        )
        routing = (
            int(counts.chars // self.routing_chars_per_token)
            + ROUTING_TOKENS_PER_MESSAGE * counts.messages
            + ROUTING_TOKENS_PER_REQUEST
        )
        return TokenEstimate(safe=safe, routing=min(routing, safe), counts=counts)


@dataclass(frozen=True)
class LinearWeights:
    """Tokens per unit of each of :data:`FEATURES` (same order), for one tokenizer family.

    ``safe`` is a high-quantile fit (plus a margin), ``routing`` a low-quantile fit; both
    non-negative, so more text never lowers an estimate.
    """

    safe: tuple[float, ...]
    routing: tuple[float, ...]
    #: weights of the English regime (see :data:`ENGLISH_MARKER`); ``None``: the general ones
    english_safe: tuple[float, ...] | None = None
    english_routing: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        for name in ("safe", "routing", "english_safe", "english_routing"):
            weights = getattr(self, name)
            if weights is not None and len(weights) != len(FEATURES):
                raise ValueError(f"LinearWeights.{name}: {len(weights)} weights for {len(FEATURES)} features")

    def pick(self, english: bool) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """(safe, routing) weights for a request in the English regime or not."""
        if english:
            return self.english_safe or self.safe, self.english_routing or self.routing
        return self.safe, self.routing


@dataclass(frozen=True)
class CalibratedEstimator:
    """Linear estimates over :func:`request_features` with one family's fitted weights."""

    family: str
    weights: LinearWeights
    name: str = "calibrated"

    def estimate_counts(self, counts: RequestCounts) -> TokenEstimate:
        if counts.exact_tokens is not None:
            return _exact(counts)
        features, english = request_features_and_regime(counts)
        w_safe, w_routing = self.weights.pick(english)
        safe = math.ceil(_dot(w_safe, features)) + SAFE_TOKENS_PER_OTHER_PART * counts.other_parts
        routing = max(0, math.floor(_dot(w_routing, features)))
        return TokenEstimate(safe=safe, routing=min(routing, safe), counts=counts)


def _dot(weights: Sequence[float], features: Sequence[float]) -> float:
    return sum(w * x for w, x in zip(weights, features))


def _exact(counts: RequestCounts) -> TokenEstimate:
    exact = counts.exact_tokens or 0
    return TokenEstimate(safe=exact, routing=exact, counts=counts)


def char_classes(text: str) -> tuple[float, ...]:
    """Characters of ``text`` per class of :data:`CHAR_CLASSES` (they sum to ``len(text)``)."""
    return text_features(text)[:-1]


def text_features(text: str) -> tuple[float, ...]:
    """:data:`CHAR_CLASSES` counts of ``text`` followed by its ``dense`` score; see :func:`parts_features`."""
    return parts_features((text,), len(text))


def parts_features(parts: Sequence[str], total: int) -> tuple[float, ...]:
    """:data:`CHAR_CLASSES` counts of the text ``"".join(parts)`` (``total`` characters long)
    followed by its ``dense`` score (characters).

    Counted at C speed: the text (or, past :data:`SAMPLE_CHARS`, a sample of evenly spaced
    blocks taken from the parts without joining them, scaled back up to ``total``) is UTF-8
    encoded, letters and continuation bytes are deleted in one ``bytes.translate``, and what
    is left (one byte per character) is mapped to class codes and counted. ``dense`` maps
    the bytes to two codes once and counts one of them per 256-byte block
    (``bytes.count`` with start/end). No per-character Python loop.
    """
    return _features(parts, total)[0]


def _features(parts: Sequence[str], total: int) -> tuple[tuple[float, ...], bool]:
    """:func:`parts_features` and whether the text is in the English regime (one pass)."""
    if total == 0:
        return (0.0,) * (len(CHAR_CLASSES) + 1), False
    sample = _sample(parts, total)
    ascii_only = sample.isascii()
    data = sample.encode("ascii") if ascii_only else sample.encode("utf-8", "surrogatepass")
    rest = data.translate(None, _LETTERS_AND_CONTINUATION)
    codes = rest.translate(_CODE_TABLE)
    # Spaces are the commonest non-letter: delete them once, count the rest on what is left.
    no_spaces = codes.translate(None, _CODE["spaces"])
    counts = {"spaces": len(codes) - len(no_spaces), "digits": no_spaces.count(_CODE["digits"])}
    counts["breaks"] = no_spaces.count(_CODE["breaks"])
    if ascii_only:
        counts.update(dict.fromkeys(_NON_ASCII_CLASSES, 0))
    else:
        for name in _NON_ASCII_CLASSES:
            counts[name] = no_spaces.count(_CODE[name])
    counts["punct"] = len(no_spaces) - sum(counts[k] for k in counts if k != "spaces")
    counts["letters"] = len(sample) - len(rest)
    scale = total / len(sample)
    english = False
    if sum(counts[name] for name in _NON_ASCII_CLASSES if name != "symbols") < ENGLISH_MAX_NON_ASCII_SHARE * len(sample):
        english = data.count(ENGLISH_MARKER) * 100 >= ENGLISH_MIN_MARKERS_PER_100_CHARS * len(sample)
    return (*(counts[name] * scale for name in CHAR_CLASSES), _dense(data) * scale), english


def _dense(data: bytes) -> int:
    # Per block: letters − k·others = size − (k + 1)·others, floored at 0: one C-level
    # ``count`` per block (``map`` over the block bounds, no Python frame per block).
    marks = data.translate(_DENSE_TABLE)
    size, factor = DENSE_BLOCK_BYTES, DENSE_LETTERS_PER_SEPARATOR + 1
    starts = range(0, len(marks), size)
    others = list(map(marks.count, repeat(b"|", len(starts)), starts, range(size, len(marks) + size, size)))
    lengths = [size] * len(others)
    lengths[-1] = len(marks) - starts[-1]
    return sum([n - factor * o for n, o in zip(lengths, others) if factor * o < n])


def _sample(parts: Sequence[str], total: int) -> str:
    """The joined parts, or :data:`SAMPLE_CHARS` characters of them in evenly spaced
    :data:`SAMPLE_BLOCK_CHARS`-character blocks sliced from the joined text (joining is a
    memory copy, far cheaper than locating blocks part by part)."""
    text = parts[0] if len(parts) == 1 else "".join(parts)
    if total <= SAMPLE_CHARS:
        return text
    blocks, size = SAMPLE_CHARS // SAMPLE_BLOCK_CHARS, SAMPLE_BLOCK_CHARS
    stride = (total - size) / (blocks - 1)
    return "".join([text[start : start + size] for start in map(int, map(stride.__mul__, range(blocks)))])


def request_features(counts: RequestCounts) -> tuple[float, ...]:
    """The calibrated estimator's inputs, in :data:`FEATURES` order."""
    return request_features_and_regime(counts)[0]


def request_features_and_regime(counts: RequestCounts) -> tuple[tuple[float, ...], bool]:
    """:func:`request_features` and whether the request is in the English regime
    (:data:`ENGLISH_MARKER`), from one pass over its text."""
    classes, english = _features(counts.parts, counts.chars)
    return (1.0, float(counts.messages), float(counts.tools), *classes), english


def count_request(payload: Mapping[str, object], *, call_kind: str | None = None) -> RequestCounts:
    """Collect the counts (and the rendered text) of a chat or text-completion request body.

    Args:
        payload: the OpenAI-style request body (``messages`` or ``prompt``, ``tools``, ...).
        call_kind: ``"chat"`` reads ``messages`` only, ``"completion"`` reads ``prompt`` only;
            ``None`` reads ``messages`` when present, else ``prompt``.

    Never raises on odd input: anything it does not understand is counted by its JSON
    text (a deliberate over-count), or skipped when it cannot be serialised. Nesting depth
    is the client's to choose: nothing here recurses on it (see :func:`json_text`).
    """
    use_messages = call_kind == "chat" or (call_kind is None and "messages" in payload)
    if use_messages:
        raw = payload.get("messages")
        plain = _plain_contents(raw)
        if plain is not None:
            parts, chars = plain
            messages, other = len(raw), 0  # type: ignore[arg-type]
        else:
            parts = []
            messages, other = _collect_messages(raw, parts)
            chars = sum(map(len, parts))
        tools = 0
        for key in _PROMPT_SHAPING_KEYS:
            value = payload.get(key)
            if value:
                schema = _json_text(value)
                parts.append(schema)
                chars += len(schema)
                if key != "response_format" and isinstance(value, list):
                    tools += len(value)
        return RequestCounts(chars=chars, messages=messages, other_parts=other, tools=tools, parts=parts)
    return _count_prompt(payload.get("prompt"))


def estimate_counts(
    counts: RequestCounts,
    *,
    safe_chars_per_token: float = 3.0,
    routing_chars_per_token: float = 4.0,
) -> TokenEstimate:
    """The ratio estimates of ``counts`` (tokens); see :class:`RatioEstimator`."""
    return RatioEstimator(safe_chars_per_token, routing_chars_per_token).estimate_counts(counts)


def estimate_request(
    payload: Mapping[str, object],
    *,
    call_kind: str | None = None,
    safe_chars_per_token: float = 3.0,
    routing_chars_per_token: float = 4.0,
    estimator: Estimator | None = None,
) -> TokenEstimate:
    """Both estimates of one request body (tokens).

    ``estimator`` (e.g. ``calibrated_estimator("qwen2.5")``, built once by the caller)
    decides; without one, the ratio estimator with the given ratios does.
    """
    chosen = estimator or RatioEstimator(safe_chars_per_token, routing_chars_per_token)
    return chosen.estimate_counts(count_request(payload, call_kind=call_kind))


# ----------------------------------------------------------------------------- weights


@functools.lru_cache(maxsize=1)
def load_weights() -> dict[str, LinearWeights]:
    """The packaged weights (``data/token_weights.json``) per family; read once per process."""
    raw = json.loads(resources.files("litellm_kvwarm").joinpath("data/token_weights.json").read_text("utf-8"))
    return parse_weights(raw)


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


# ------------------------------------------------------------------------- collection


_CONTENT = itemgetter("content")


def _plain_contents(messages: object) -> tuple[list[str], int] | None:
    """Fast path (C-level ``map``/``join``, no per-message Python code): the message text
    joined into one part, and its length, when every message is a dict of exactly two keys
    (the role and a string ``content``), the common case; else ``None`` and the general
    path runs."""
    if type(messages) is not list:
        return None
    try:
        if sum(map(len, messages)) != 2 * len(messages):
            return None
        text = "".join(map(_CONTENT, messages))  # TypeError unless every content is a str
    except (KeyError, TypeError, IndexError):
        return None
    return [text], len(text)


def _collect_messages(messages: object, parts: list[str]) -> tuple[int, int]:
    if not isinstance(messages, list):
        return 0, 0
    other = 0
    for message in messages:
        if not isinstance(message, Mapping):
            parts.append(_json_text(message))
            continue
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            other += _collect_parts(content, parts)
        elif content is not None:
            parts.append(_json_text(content))
        for key in ("name", "tool_call_id", "reasoning_content"):
            value = message.get(key)
            if isinstance(value, str):
                parts.append(value)
        for key in ("tool_calls", "function_call"):
            value = message.get(key)
            if value:
                parts.append(_json_text(value))
    return len(messages), other


def _collect_parts(content: Iterable[object], parts: list[str]) -> int:
    other = 0
    for part in content:
        if isinstance(part, str):
            parts.append(part)
        elif isinstance(part, Mapping) and part.get("type") in _TEXT_PART_TYPES and isinstance(part.get("text"), str):
            parts.append(part["text"])  # type: ignore[arg-type]
        else:
            other += 1
    return other


def _count_prompt(prompt: object) -> RequestCounts:
    if isinstance(prompt, str):
        return RequestCounts(chars=len(prompt), messages=0, parts=(prompt,))
    if isinstance(prompt, list) and prompt:
        if all(isinstance(item, int) for item in prompt):
            return RequestCounts(chars=0, messages=0, exact_tokens=len(prompt))
        if all(isinstance(item, str) for item in prompt):
            # A batch: each string is its own sequence; the longest one decides whether it fits.
            longest = max(prompt, key=len)
            return RequestCounts(chars=len(longest), messages=0, parts=(longest,))
        if all(isinstance(item, list) and all(isinstance(t, int) for t in item) for item in prompt):
            return RequestCounts(chars=0, messages=0, exact_tokens=max(len(item) for item in prompt))
    return RequestCounts(chars=0, messages=0)


def _json_text(value: object) -> str:
    # json_text(value), inlined: this runs once per tool call and schema of every request.
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    except (TypeError, ValueError):
        return ""
    except RecursionError:
        pass
    try:
        return _json_text_iterative(value, False)
    except (TypeError, ValueError):
        return ""


# ------------------------------------------------------------------- JSON at any depth

_encode_leaf = functools.partial(json.dumps, ensure_ascii=False, separators=(",", ":"), default=str)
_encode_str = json.encoder.encode_basestring  # what json.dumps(ensure_ascii=False) uses for str
# Work items of the iterative encoder: encode a value, emit text, leave a container.
_ENCODE, _EMIT, _LEAVE = 0, 1, 2


def json_text(value: object, *, sort_keys: bool = False) -> str:
    """``json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str,
    sort_keys=sort_keys)``, the same text, at any nesting depth.

    ``json.dumps`` (C) runs first: it is the fast path and recurses only up to the
    interpreter's recursion limit, where it raises ``RecursionError`` before any harm. A
    client can nest lists and dicts deeper than that (a JSON body 5,000 levels deep is a
    few kB); then :func:`_json_text_iterative` encodes the value with an explicit stack
    (memory linear in the body, no Python or C recursion) and returns the same text
    ``json.dumps`` would have given with no recursion limit.

    Raises:
        TypeError: a dict key that is not str, int, float, bool or None (as ``json.dumps``).
        ValueError: a circular reference (as ``json.dumps``).
    """
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str, sort_keys=sort_keys)
    except RecursionError:
        return _json_text_iterative(value, sort_keys)


def _json_key(key: object) -> str:
    if isinstance(key, str):
        return _encode_str(key)
    if key is None or isinstance(key, (int, float)):  # bool is an int; json.dumps quotes them all
        return '"' + _encode_leaf(key) + '"'
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")


def _json_text_iterative(value: object, sort_keys: bool) -> str:
    """:func:`json_text` without recursion: containers (``dict``, ``list``, ``tuple`` and their
    subclasses, as ``json.dumps`` treats them) are opened on an explicit stack; every other
    value is a leaf encoded by ``json.dumps`` itself (strings, numbers, ``None``, ``default``)."""
    out: list[str] = []
    open_ids: set[int] = set()  # containers being encoded: a repeat is a circular reference
    stack: list[tuple[int, object]] = [(_ENCODE, value)]
    while stack:
        action, item = stack.pop()
        if action == _EMIT:
            out.append(item)  # type: ignore[arg-type]
            continue
        if action == _LEAVE:
            open_ids.discard(item)  # type: ignore[arg-type]
            continue
        if isinstance(item, str):
            out.append(_encode_str(item))
            continue
        is_dict = isinstance(item, dict)
        if not (is_dict or isinstance(item, (list, tuple))):
            out.append(_encode_leaf(item))
            continue
        if not item:
            out.append("{}" if is_dict else "[]")
            continue
        if id(item) in open_ids:
            raise ValueError("Circular reference detected")
        open_ids.add(id(item))
        work: list[tuple[int, object]] = []
        if is_dict:
            out.append("{")
            pairs = list(item.items())  # type: ignore[union-attr]
            if sort_keys:
                pairs.sort(key=itemgetter(0))
            for i, (key, child) in enumerate(pairs):
                work.append((_EMIT, ("," if i else "") + _json_key(key) + ":"))
                work.append((_ENCODE, child))
            work.append((_EMIT, "}"))
        else:
            out.append("[")
            for i, child in enumerate(item):  # type: ignore[arg-type]
                if i:
                    work.append((_EMIT, ","))
                work.append((_ENCODE, child))
            work.append((_EMIT, "]"))
        work.append((_LEAVE, id(item)))
        stack.extend(reversed(work))
    return "".join(out)

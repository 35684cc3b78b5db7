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
  messages, tool schemas, fifteen character classes (:data:`CHAR_CLASSES`: ASCII letters,
  digits, single spaces, ``indent`` (spaces in runs of two or more), line breaks/tabs, other
  ASCII, accented Latin U+0080–U+017F, Cyrillic, other 2-byte scripts, general punctuation
  U+2000–U+203F, other symbols U+2040–U+2FFF, CJK/kana/Hangul, Indic/Thai U+0800–U+0FFF,
  other 3-byte, 4-byte), a ``dense`` score (letters in long unbroken runs: base64, hashes,
  identifiers) and ``indented_lines`` (line breaks followed by a space: one indentation run
  each, ~1 token whatever its length) — with weights fitted by quantile regression per
  tokenizer family (``python -m litellm_kvwarm.lab.calibration``) and shipped in
  ``data/token_weights.json``, with a floor on the ``dense`` safe weight set when they are loaded
  (:mod:`litellm_kvwarm.token_weights`: base64, JSON with base64, DNA, protein, keys stay under the
  safe estimate). Long runs of one character (``====``, ``----``, whitespace) are priced by a
  measured table instead of their class, and gaps of spaces in aligned columns by one token each
  (:mod:`litellm_kvwarm.token_runs`). Where byte-level BPEs cut text finer than the class weights
  assume — a space before a digit, letters after a digit or a lower-case letter, a word after a line
  break or tab, spaces before a line break — the safe estimate adds the missing token; routing prices
  digits per group of three in the families that group them, an escaped quote ``\\"`` as one mark
  and mixed punctuation runs (``-=-=``) like runs (:mod:`litellm_kvwarm.token_fragments`).

Besides text: images by each vision family's rule (:mod:`litellm_kvwarm.image_tokens`), PDFs by
their pages and audio by its duration, read from the bytes the request carries
(:mod:`litellm_kvwarm.media_tokens`), office documents (docx, xlsx, pptx) by their text parts
(:mod:`litellm_kvwarm.token_office`); a file id, URL, another binary file or an unknown block with
nothing to read is one flat-priced part.

Cost (details and benchmark in ``docs/estimator.md``): character classes are counted at
C speed (one ``bytes.translate`` deleting letters, then ``translate``/``count`` on the
rest); a request longer than :data:`SAMPLE_CHARS` characters is classified on
:data:`SAMPLE_CHARS` characters of evenly spaced 256-character blocks and scaled up, so
the cost stays bounded (tens of µs) at 100k tokens. The fitted weights were fitted on
features computed exactly this way, so sampling noise is inside their margins.

Where each part lives (this module re-exports all of them; import from here):

* :mod:`litellm_kvwarm.token_counts` — request collection (:func:`count_request`, :class:`RequestCounts`);
  what LiteLLM's Messages → chat bridge drops in :mod:`~litellm_kvwarm.token_bridge`, the Responses items vLLM
  does not render in :mod:`~litellm_kvwarm.token_responses_items`, past reasoning in
  :mod:`~litellm_kvwarm.token_reasoning`;
  blocks in :mod:`~litellm_kvwarm.token_blocks` (base64 payloads: :mod:`~litellm_kvwarm.token_payloads`),
  the agent APIs in :mod:`~litellm_kvwarm.token_counts_agents`;
* :mod:`litellm_kvwarm.token_features` — character classes, ``dense``, ``indented_lines``, sampling (:data:`FEATURES`);
  runs and gaps in :mod:`~litellm_kvwarm.token_runs`, digit/line/case fragments in :mod:`~litellm_kvwarm.token_fragments`,
  what Llama 3's ``tojson`` tool text costs in :mod:`~litellm_kvwarm.token_tojson`;
* :mod:`litellm_kvwarm.token_estimators` — :class:`RatioEstimator`, :class:`CalibratedEstimator`,
  :class:`TokenEstimate`, :func:`estimate_request`;
* :mod:`litellm_kvwarm.token_weights` — the packaged weights, their dense-text floor and :func:`family_of`;
* :mod:`litellm_kvwarm.media_tokens` — PDFs and audio; :mod:`litellm_kvwarm.token_office` — office documents;
* :mod:`litellm_kvwarm.deep_json` — :func:`json_text` at any nesting depth.
"""

from __future__ import annotations

from .deep_json import _json_text_iterative, json_text  # noqa: F401  (the private one: tests compare it with json.dumps)
from .token_counts import RequestCounts, count_request
from .token_estimators import (
    ROUTING_TOKENS_PER_MESSAGE,
    ROUTING_TOKENS_PER_REQUEST,
    SAFE_TOKENS_PER_MESSAGE,
    SAFE_TOKENS_PER_OTHER_PART,
    SAFE_TOKENS_PER_REQUEST,
    CalibratedEstimator,
    Estimator,
    LinearWeights,
    RatioEstimator,
    TokenEstimate,
    estimate_counts,
    estimate_request,
)
from .token_features import (
    CHAR_CLASSES,
    DENSE_BLOCK_BYTES,
    DENSE_LETTERS_PER_SEPARATOR,
    ENGLISH_MARKER,
    ENGLISH_MAX_NON_ASCII_SHARE,
    ENGLISH_MIN_MARKERS_PER_100_CHARS,
    FEATURES,
    SAMPLE_BLOCK_CHARS,
    SAMPLE_CHARS,
    char_classes,
    parts_features,
    request_features,
    request_features_and_regime,
    text_features,
)
from .token_weights import ANY_FAMILY, calibrated_estimator, family_of, load_weights, parse_weights

__all__ = [
    "ANY_FAMILY",
    "CHAR_CLASSES",
    "DENSE_BLOCK_BYTES",
    "DENSE_LETTERS_PER_SEPARATOR",
    "ENGLISH_MARKER",
    "ENGLISH_MAX_NON_ASCII_SHARE",
    "ENGLISH_MIN_MARKERS_PER_100_CHARS",
    "FEATURES",
    "ROUTING_TOKENS_PER_MESSAGE",
    "ROUTING_TOKENS_PER_REQUEST",
    "SAFE_TOKENS_PER_MESSAGE",
    "SAFE_TOKENS_PER_OTHER_PART",
    "SAFE_TOKENS_PER_REQUEST",
    "SAMPLE_BLOCK_CHARS",
    "SAMPLE_CHARS",
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

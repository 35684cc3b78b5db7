"""Real requests for calibration: ShareGPT V3 chat prefixes, BFCL tool-calling prefixes, and
the non-English sources of :mod:`.multilingual` (BFCL live prompts, ``dataset-build`` prose).

Every usable ShareGPT conversation (English and all the others) and every BFCL multi-turn
entry (base and long-context) gives up to :data:`REQUESTS_PER_CONVERSATION` request
prefixes (the first, the last and evenly spaced ones between), so short first turns and
long histories are both represented. Conversations are split into a *fit* and a
*held-out* half by a hash of their id (stable across runs and machines). Each request gets
a content kind (:func:`content_kind`) for the per-kind report.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ..datasets import BFCL_CATEGORIES, Conversation, bfcl_conversations, iter_sharegpt
from ...tokens import CHAR_CLASSES, count_request

__all__ = ["KINDS", "Request", "content_kind", "load_requests", "requests_of"]

REQUESTS_PER_CONVERSATION = 3
#: Content kinds of the report, in the order they are decided (first match wins).
KINDS = ("short", "json/tools", "cjk", "other non-Latin", "code", "prose")
SHORT_CHARS = 200
NON_LATIN_SHARE = 0.2


@dataclass(frozen=True)
class Request:
    """One chat request of a real conversation.

    ``payload`` is the OpenAI body (``messages``, optional ``tools``); ``held_out`` says which
    half its conversation fell in; ``kind`` is one of :data:`KINDS`.
    """

    id: str
    conversation: str
    source: str
    payload: dict[str, Any]
    held_out: bool
    kind: str


def is_held_out(conversation_id: str) -> bool:
    """The held-out half: the low bit of sha256 of the conversation id."""
    return hashlib.sha256(conversation_id.encode()).digest()[0] & 1 == 1


def content_kind(payload: dict[str, Any]) -> str:
    """The request's content kind, from its rendered text (first rule that matches).

    short: under :data:`SHORT_CHARS` characters; json/tools: sends tool schemas; cjk / other
    non-Latin: at least :data:`NON_LATIN_SHARE` of the characters are CJK/kana/Hangul, or
    other scripts (2-byte beyond accented Latin, other 3-byte: Cyrillic, Greek, Arabic, Hebrew,
    Indic, Thai, …); code: a fenced block or a high share of symbols and line breaks;
    prose: the rest.
    """
    counts = count_request(payload, call_kind="chat")
    if counts.chars < SHORT_CHARS:
        return "short"
    if counts.tools:
        return "json/tools"
    classes = dict(zip(CHAR_CLASSES, _exact_classes(counts.text)))
    if classes["cjk"] >= NON_LATIN_SHARE * counts.chars:
        return "cjk"
    if classes["cyrillic"] + classes["utf8_2"] + classes["indic"] + classes["utf8_3"] >= NON_LATIN_SHARE * counts.chars:
        return "other non-Latin"
    if "```" in counts.text or (classes["punct"] >= 0.12 * counts.chars and classes["breaks"] >= 0.02 * counts.chars):
        return "code"
    return "prose"


def _exact_classes(text: str) -> Sequence[float]:
    from ...tokens import char_classes

    # Classes of the whole text, not a sample: the kind must not depend on sampling.
    step = 8192
    totals = [0.0] * len(CHAR_CLASSES)
    for start in range(0, len(text), step):
        for i, v in enumerate(char_classes(text[start : start + step])):
            totals[i] += v
    return totals


def requests_of(conversation: Conversation, per_conversation: int = REQUESTS_PER_CONVERSATION) -> Iterator[Request]:
    """Up to ``per_conversation`` prefixes of a conversation: first, last, evenly spaced between."""
    points = list(conversation.requests())
    if not points:
        return
    n = min(per_conversation, len(points))
    picks = sorted({round(i * (len(points) - 1) / max(1, n - 1)) for i in range(n)})
    held_out = is_held_out(f"{conversation.source}:{conversation.id}")
    for index in picks:
        point = points[index]
        payload: dict[str, Any] = {"messages": point.messages}
        if conversation.tools:
            payload["tools"] = conversation.tools
        yield Request(
            id=f"{conversation.source}:{conversation.id}:{index}",
            conversation=conversation.id,
            source=conversation.source,
            payload=payload,
            held_out=held_out,
            kind=content_kind(payload),
        )


def load_requests(
    *, sharegpt_limit: int | None = None, bfcl_limit: int | None = None, english_every: int = 1,
    multilingual: bool = True,
) -> list[Request]:
    """Requests of the first ``sharegpt_limit`` ShareGPT conversations and ``bfcl_limit`` BFCL
    entries per category (``None``: all), in a stable order; with ``multilingual``, also the
    BFCL live prompts and the ``dataset-build`` prose of :mod:`.multilingual` (``bfcl_limit``
    caps those too: entries per file, and conversations per language).

    ``english_every`` keeps every n-th all-ASCII ShareGPT conversation (to bound the run
    time) and *every* conversation with non-ASCII text, so non-English data is never thinned.
    """
    from .multilingual import bfcl_live_conversations, prose_conversations

    out: list[Request] = []
    for number, conversation in enumerate(iter_sharegpt()):
        if sharegpt_limit is not None and number >= sharegpt_limit:
            break
        if number % english_every and all(m["content"].isascii() for m in conversation.messages):
            continue
        out.extend(requests_of(conversation))
    for category in BFCL_CATEGORIES:
        for number, conversation in enumerate(bfcl_conversations(category)):
            if bfcl_limit is not None and number >= bfcl_limit:
                break
            out.extend(requests_of(conversation))
    if multilingual:
        for conversation in bfcl_live_conversations(limit=None if bfcl_limit is None else 20 * bfcl_limit):
            out.extend(requests_of(conversation))
        for conversation in prose_conversations(limit_per_language=bfcl_limit):
            out.extend(requests_of(conversation))
    return out

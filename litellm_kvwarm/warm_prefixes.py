"""What a warm body's items are and what a session already warmed of them: the items field of each request
kind (:data:`ITEMS_FIELD`), where the client's turn starts (:func:`cut_points`), a chained digest of a body's
prefixes (:func:`digest_chain`), and :class:`WarmedPrefixes`, the bounded per-(session, target) memory of
the last warm (checkpoints of that digest and the text of its last messages), so a later warm of the same
conversation is planned after what is already in the target's prefix cache
(:mod:`~litellm_kvwarm.warm_pieces`). Pure; no I/O, no clock.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .deep_json import json_text
from .fair_lru import FairLRU
from .identity import key_tenant
from .meta import SALT_KEY
from .warm_body import METADATA_FIELDS, PROMPT_KEYS, PROMPT_SHAPING_KEYS, SESSION_KEY

__all__ = ["ITEMS_FIELD", "Warmed", "WarmedPrefixes", "closed_prefixes", "cut_points", "role", "thinking_on", "well_formed", "digest_chain",
           "item_text", "prefix_digest", "session_tenant", "with_text"]

#: (session, target) pairs whose warmed prefix is remembered per process (~1 KB each at most).
DEFAULT_CAPACITY = 8192
#: Checkpoints kept per (session, target): the last few item counts of its last warm, then its cut points.
TAIL_CHECKPOINTS, MAX_CHECKPOINTS, TEXT_ENTRIES = 4, 12, 2
DIGEST_BYTES = 16
#: Where each request kind keeps the items pieces are cut between.
ITEMS_FIELD = {"chat": "messages", "messages": "messages", "responses": "input"}
_CHAT_CUT_ROLES = frozenset({"user", "tool", "function", "assistant"})


def _cut_before(kind: str, item: object) -> bool:
    if not isinstance(item, Mapping):
        return False
    role = item.get("role")
    if kind == "chat":
        return role in _CHAT_CUT_ROLES
    if kind == "messages":
        return role in ("user", "assistant")
    return role in ("user", "assistant") or item.get("type") == "function_call_output"


def item_text(kind: str, item: object) -> str | None:
    """The text at the end of one item that a piece may end inside (``None``: none): a message's string
    ``content``, or the last part's ``text`` of a content list (chat parts, Anthropic text blocks, Responses
    ``input_text``/``output_text``); an Anthropic ``tool_result`` block's string ``content``; a Responses
    ``function_call_output``'s ``output``. Everything before that text renders the same in a prefix that ends inside it."""
    if not isinstance(item, Mapping):
        return None
    if kind == "responses" and item.get("type") == "function_call_output":
        return item["output"] if isinstance(item.get("output"), str) and item["output"] else None
    content = item.get("content")
    if isinstance(content, str):
        return content or None
    if not isinstance(content, list) or not content or not isinstance(content[-1], Mapping):
        return None
    last = content[-1]
    key = "content" if kind == "messages" and last.get("type") == "tool_result" else "text"
    value = last.get(key)
    return value if isinstance(value, str) and value else None


def with_text(kind: str, item: Mapping[str, Any], chars: int) -> dict[str, Any]:
    """``item`` whose :func:`item_text` is cut to its first ``chars`` characters (the rest of the item as is)."""
    if kind == "responses" and item.get("type") == "function_call_output":
        return {**item, "output": item["output"][:chars]}
    content = item["content"]
    if isinstance(content, str):
        return {**item, "content": content[:chars]}
    last = content[-1]
    key = "content" if kind == "messages" and last.get("type") == "tool_result" else "text"
    return {**item, "content": [*content[:-1], {**last, key: last[key][:chars]}]}


def cut_points(kind: str, items: Sequence[object]) -> list[int]:
    """Indices ``k`` (1 ≤ k < len) such that ``items[:k]`` is a prefix a template renders as the start of the
    whole: before a chat ``user``/``tool``/``function``/``assistant`` message, an Anthropic ``user`` or
    ``assistant`` message, a Responses ``user``/``assistant`` message or ``function_call_output`` item (a prefix
    that ends with the client's message is a request the client itself sent; one that ends with a reply renders
    it closed, as the whole does). Not before a system message, nor between a Responses ``function_call`` and
    another call. ``[]`` for a kind without items (:data:`ITEMS_FIELD`)."""
    if kind not in ITEMS_FIELD:
        return []
    return [k for k in range(1, len(items)) if _cut_before(kind, items[k])]


def _opened_closed(kind: str, item: Mapping[str, Any]) -> tuple[list[object], list[object]]:
    """The tool-call ids one item opens (a call the client must answer) and closes (an answer)."""
    role, content = item.get("role"), item.get("content")
    if kind == "chat":
        if role == "assistant":
            calls = item.get("tool_calls")
            opened = [c.get("id") for c in calls if isinstance(c, Mapping)] if isinstance(calls, list) else []
            if isinstance(item.get("function_call"), Mapping):  # the legacy single call, answered by a "function" message
                opened.append(("function", item["function_call"].get("name")))
            return opened, []
        if role == "tool":
            return [], [item.get("tool_call_id")]
        return ([], [("function", item.get("name"))]) if role == "function" else ([], [])
    if kind == "messages":
        blocks = [b for b in content if isinstance(b, Mapping)] if isinstance(content, list) else []
        if role == "assistant":  # a server tool's result is in the same message: only client tools wait for an answer
            return [b.get("id") for b in blocks if b.get("type") == "tool_use"], []
        return [], [b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"]
    kind_of, call_id = str(item.get("type") or ""), item.get("call_id")
    if call_id is None:  # server-side calls (web_search_call ...) carry no call_id and get no output item
        return [], []
    if kind_of.endswith("_call_output"):
        return [], [call_id]
    return ([call_id], []) if kind_of.endswith("_call") else ([], [])


def closed_prefixes(kind: str, items: Sequence[object]) -> list[bool]:
    """``closed[k]`` (k = 0 … len): whether ``items[:k]`` leaves no tool call unanswered (a chat assistant's
    ``tool_calls`` and their ``tool`` messages, parallel ones included; an Anthropic ``tool_use`` and its
    ``tool_result``; a Responses ``*_call`` item and its ``*_call_output`` by ``call_id``). A piece is cut only
    where this holds: OpenAI and Anthropic refuse a conversation with a call left unanswered (the whole body
    may end with one: a reply-warm of a reply that called tools; the server takes the last turn's calls)."""
    closed, open_ids = [True], set()
    for item in items:
        if isinstance(item, Mapping):
            opened, answered = _opened_closed(kind, item)
            open_ids.difference_update(i for i in answered if isinstance(i, (str, tuple)))
            open_ids.update(i for i in opened if isinstance(i, (str, tuple)))
        closed.append(not open_ids)
    return closed


#: Roles of a well-formed item per kind (Responses items are checked for being objects only: their ``type``
#: decides their shape).
_WELL_FORMED_ROLES = {"chat": frozenset({"system", "developer", "user", "assistant", "tool", "function"}),
                      "messages": frozenset({"user", "assistant"})}


def well_formed(kind: str, items: Sequence[object]) -> bool:
    """Whether every item is one the API takes (a message object with a known role and text, parts or no
    content): pieces are cut only from such a body. A malformed one (LiteLLM refuses the whole request) would
    otherwise reach the server as the valid prefixes before its bad item."""
    roles = _WELL_FORMED_ROLES.get(kind)
    return all(item_sound(kind, item) and (roles is None or item.get("role") in roles) for item in items)  # type: ignore[union-attr]


def item_sound(kind: str | None, item: object) -> bool:
    """Whether ``item`` is an object whose ``content`` (chat, Messages; a Responses item's ``type`` decides its
    shape) is text, a list of objects, or absent: the shape an API takes, whatever its role."""
    if not isinstance(item, Mapping):
        return False
    if kind == "responses":
        return True
    content = item.get("content")
    if isinstance(content, list):
        return all(isinstance(part, Mapping) for part in content)
    return isinstance(content, (str, type(None)))


def role(item: object) -> object:
    """An item's ``role`` (``None``: not an object)."""
    return item.get("role") if isinstance(item, Mapping) else None


def thinking_on(body: Mapping[str, Any]) -> bool:
    """Whether an Anthropic Messages body turns extended thinking on (``thinking.type`` other than ``disabled``)."""
    thinking = body.get("thinking")
    return isinstance(thinking, Mapping) and thinking.get("type") != "disabled"



def _metadata(body: Mapping[str, Any]) -> Mapping[str, Any]:
    for meta in METADATA_FIELDS:
        if isinstance(body.get(meta), Mapping):
            return body[meta]
    return {}


def _context_text(kind: str, body: Mapping[str, Any]) -> str:
    field = ITEMS_FIELD[kind]
    context: dict[str, Any] = {key: body.get(key) or None for key in PROMPT_KEYS[kind] if key not in (field, "extra_body")}
    extra = body.get("extra_body")
    extra = extra if isinstance(extra, Mapping) else {}
    context["extra_body"] = {key: extra[key] for key in PROMPT_SHAPING_KEYS if key in extra and extra[key]} or None
    head = {"model": body.get("model"), "salt": _metadata(body).get(SALT_KEY), "context": context}
    return json_text(head, sort_keys=True)


def _digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=DIGEST_BYTES).digest()


def digest_chain(kind: str, body: Mapping[str, Any], upto: int | None = None) -> list[bytes]:
    """``chain[k]``: a digest of what ``body``'s first ``k`` items render with (k = 0 … ``upto``, default all):
    those items, every other prompt key of ``kind`` (system, tools ...) and those inside ``extra_body``
    (chat-template arguments, ``cache_salt``: the keys of :data:`~litellm_kvwarm.warm_body.PROMPT_SHAPING_KEYS`;
    not ``priority`` or a client's own per-request fields), the model group and the tenant's cache salt. An
    empty value counts as absent. Chained (each link hashes the previous one and one item), so one pass over
    a body compares every prefix of it."""
    items = body.get(ITEMS_FIELD[kind])
    items = items if isinstance(items, list) else []
    link = _digest(_context_text(kind, body).encode("utf-8", "surrogatepass"))
    chain = [link]
    for item in items[:upto]:
        text = json_text(item, sort_keys=True)  # at any depth: a client nests as deep as it likes
        link = _digest(link + text.encode("utf-8", "surrogatepass"))
        chain.append(link)
    return chain


def prefix_digest(kind: str, body: Mapping[str, Any], k: int) -> bytes:
    """:func:`digest_chain`'s link ``k``."""
    return digest_chain(kind, body, k)[k]


@dataclass(frozen=True)
class Warmed:
    """What a session's last warm holds of a body: its first ``items`` items and ``chars`` characters of the
    next item's text (a decode warm's reply so far, a piece cut inside a message)."""

    items: int = 0
    chars: int = 0


def _text_digest(text: str) -> bytes:
    return _digest(text.encode("utf-8", "surrogatepass"))


def session_tenant(key: tuple[str, Any]) -> str:
    """The tenant of a ``(session hash, ...)`` key: the session hash is ``<tenant hash>:<session hash>``."""
    return key_tenant(key[0])


class WarmedPrefixes:
    """What each (session, target) last warmed, as checkpoints ``items → digest`` (:func:`digest_chain`): the
    last :data:`TAIL_CHECKPOINTS` item counts of that warm (a decode warm's growing last message, a reply-warm's
    closing user message differ from the next warm there) and its last cut points (:func:`cut_points`: an edited
    last message), :data:`MAX_CHECKPOINTS` at most; and the text of its last :data:`TEXT_ENTRIES` items of plain
    text (index, length, digest), so a later warm whose item there starts with that text skips it too.
    ``capacity`` pairs, least recently warmed dropped (of the tenant holding the most:
    :class:`~litellm_kvwarm.fair_lru.FairLRU`). Keys are the warm's session hash (``kvwarm_session``,
    ``<tenant hash>:<session hash>``, tenant-scoped) and target."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY):
        # FairLRU refuses a capacity below 1 (ValueError)
        self._warmed: FairLRU[tuple[str, str], tuple[tuple[tuple[int, bytes], ...], tuple[tuple[int, int, bytes], ...]]] = FairLRU(
            capacity, session_tenant)

    def __len__(self) -> int:
        return len(self._warmed)

    @staticmethod
    def key(body: Mapping[str, Any]) -> tuple[str, str] | None:
        session = _metadata(body).get(SESSION_KEY)
        return (str(session), str(body.get("model"))) if session else None

    def held(self, kind: str, body: Mapping[str, Any]) -> Warmed:
        """How much of ``body`` this session's last warm held (``Warmed()``: none known, a different history)."""
        key = self.key(body)
        found = self._warmed.get(key) if key is not None else None
        if not found:
            return Warmed()
        checkpoints, texts = found
        chain = digest_chain(kind, body, checkpoints[-1][0])
        count = max((c for c, digest in checkpoints if c < len(chain) and chain[c] == digest), default=0)
        items = body.get(ITEMS_FIELD[kind])
        text = item_text(kind, items[count]) if isinstance(items, list) and count < len(items) else None
        for index, length, digest in texts:
            if index == count and text is not None and len(text) >= length and _text_digest(text[:length]) == digest:
                return Warmed(count, length)
        return Warmed(count)

    def items(self, kind: str, body: Mapping[str, Any]) -> int:
        """How many of ``body``'s first items this session's last warm held whole."""
        return self.held(kind, body).items

    def remember(self, kind: str, body: Mapping[str, Any], count: int | None = None) -> None:
        """``body``'s first ``count`` items (default: all) were warmed."""
        key = self.key(body)
        items = body.get(ITEMS_FIELD.get(kind, ""))
        if key is None or not isinstance(items, list) or not items or (count is not None and count < 1):
            return
        count = len(items) if count is None else min(count, len(items))
        chain = digest_chain(kind, body, count)
        kept = {k for k in cut_points(kind, items[:count + 1])}
        kept.update(range(max(count - TAIL_CHECKPOINTS + 1, 1), count + 1))
        texts = [(k, len(text), _text_digest(text)) for k, text in ((k, item_text(kind, item)) for k, item in enumerate(items[:count]))
                 if text is not None]
        self._warmed.pop(key, None)
        self._warmed[key] = (tuple((k, chain[k]) for k in sorted(kept)[-MAX_CHECKPOINTS:]), tuple(texts[-TEXT_ENTRIES:]))

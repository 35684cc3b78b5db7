"""What the context-error tests compare: a parse result as one tuple of its family, kind and numbers."""

from __future__ import annotations

from litellm_kvwarm.context_errors import ContextError

SLOTS = (
    "window", "prompt_tokens", "output_tokens", "total_tokens", "printed_limit", "excess_tokens", "prompt_chars",
    "char_limit",
)
FIELDS = ("family", "kind") + SLOTS


def view(result: ContextError | None):
    """``None``, or the result's :data:`FIELDS` in order."""
    return None if result is None else tuple(getattr(result, f) for f in FIELDS)


def expected(family: str | None, kind, fields: dict) -> tuple | None:
    """What :func:`view` gives for a result of ``family`` and ``kind`` whose numbers are ``fields`` (slot → value,
    every other slot ``None``); ``None`` for ``family`` ``None`` (not a context error)."""
    unknown = set(fields) - set(SLOTS)
    assert not unknown, unknown
    return None if family is None else (family, kind) + tuple(fields.get(s) for s in SLOTS)

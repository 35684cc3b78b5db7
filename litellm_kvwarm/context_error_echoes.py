"""What a validation error quotes back of the client's own request, taken out of an error text before it is
parsed (pure; used by :func:`~litellm_kvwarm.context_errors.parse_context_error` on its normalised text).

pydantic v2's ``str(ValidationError)`` prints ``input_value=..., input_type=...``; its ``errors()`` list and
FastAPI's 422 body (which vLLM and other Python servers return for a malformed request) carry an ``input``
field. What those quote is the client's text: an agent transcript often holds an earlier context-length
error, and a malformed request that echoes one is the client's error, not a refusal on length.
"""

from __future__ import annotations

import re

__all__ = ["without_echoes"]

# pydantic's echo (always ends at ``input_type=``, or where the text was cut)
_ECHO_INPUT_VALUE = re.compile(r"input_value=.*?(?:, ?input_type=\w+|\Z)", re.DOTALL)
_VALIDATION_ENTRY = re.compile(r"\bloc ?: ?[\[(].{0,400}?\bmsg ?:", re.DOTALL | re.IGNORECASE)
_ECHO_INPUT_FIELD = re.compile(r"\binput ?: ?.*?(?=, ?(?:ctx|url) ?: |\Z)", re.DOTALL | re.IGNORECASE)


def without_echoes(s: str) -> str:
    """``s`` (a normalised error text: quotes already dropped) without what a validation error quotes of the
    client's input; the rest unchanged. Never raises."""
    if "input_value=" in s:
        s = _ECHO_INPUT_VALUE.sub("input_value=(client input), input_type=echo", s)
    if _VALIDATION_ENTRY.search(s):
        s = _ECHO_INPUT_FIELD.sub("input: (client input)", s)
    return s

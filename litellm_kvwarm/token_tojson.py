"""What a template that writes ``tool`` messages with ``tojson`` spends on their text (pure; safe estimate only).

Llama 3.x's chat template writes a ``tool`` message's content with ``tojson`` (a string is iterable in Jinja),
so the characters JSON escapes reach the model escaped, and cost more than the class weights price them
(measured with the official Llama 3.2 template, ``tests/lab/test_tool_result_escapes_truth.py``):

* a control character (a colour code's ESC) as ``\\u001b``: three tokens
  (:data:`~litellm_kvwarm.token_fragments.CONTROL_SAFE_TOKENS`), priced as one punctuation mark (coloured
  test output read 0.92–0.95 safe ÷ truth);
* a line break or tab as ``\\n`` / ``\\t``: one token each, and no run of them merges (a run of blank lines,
  priced as a merged run, read 0.09; tab-laden lines 0.61);
* a space before one: a token of its own (``"\\n \\n"`` lines read 0.81–0.87, ``any`` included).

The estimate cannot tell a tool message's text from the rest, so these are added for all the request's text,
in the families whose templates do this (:data:`TOJSON_TOOL_FAMILIES`): a small over-count elsewhere (safe).
"""

from __future__ import annotations

from collections.abc import Sequence

from .token_fragments import CONTROL_SAFE_TOKENS, FRAGMENT_SAFE_TOKENS, Fragments

__all__ = ["TOJSON_TOOL_FAMILIES", "tojson_safe_tokens"]

#: Families whose chat templates write a ``tool`` message with ``tojson`` (Llama 3.x); ``any`` covers them.
TOJSON_TOOL_FAMILIES = frozenset({"llama3", "any"})


def tojson_safe_tokens(fragments: Fragments, breaks: float, w_safe: Sequence[float], index: dict[str, int]) -> float:
    """Safe tokens to add for the escaped characters of the sample (``breaks``: its line breaks and tabs, runs
    included; ``index``: feature name → weight index)."""
    one = FRAGMENT_SAFE_TOKENS
    return (fragments.control_chars * max(0.0, CONTROL_SAFE_TOKENS - w_safe[index["punct"]])
            + breaks * max(0.0, one - w_safe[index["breaks"]])
            + fragments.space_breaks * max(0.0, one - w_safe[index["spaces"]]))

"""What the emulated model generates for one request: filler, or a recorded reply (pure).

Contract: :func:`plan_reply` returns a :class:`Reply`: the generated pieces (one token of the
emulator's tokenizer each; reasoning first, then content), the ``finish_reason`` and the output
token ids the engine caches after the prompt. Every count is in tokens.

* **Filler** (default): exactly the admitted ``output_tokens`` (``LengthDecision``) filler words,
  finishing with its ``finish_reason``. With ``--chat-template-mode qwen3`` a chat reply starts
  with :func:`.reasoning.filler_reasoning_tokens` reasoning tokens (at most the budget), then
  content filler for the rest: reasoning counts as completion tokens, as in vLLM.
* **Recorded reply** (benchmarks only): the request field :data:`BENCH_REPLY_FIELD`, either the
  reply's content as a string or ``{"content": str, "reasoning_content"?: str}`` (``reasoning``
  is accepted as an alias). The emulator generates exactly that text, reasoning first, cut at the
  budget: the request's ``max_tokens`` (as admitted, clamped to the window) or, without one, the
  room left in the window (the recorded text stands for the model's EOS, not the emulator's
  default cap). ``"stop"`` when it fits, ``"length"`` when cut. The field is never rendered into
  the prompt; a malformed value is a 400 naming it. For ``/v1/completions`` and ``/v1/responses``
  only the content is generated. ``"tool_calls"`` (chat shape: ``[{"id"?, "function": {"name",
  "arguments"}}]``, ``arguments`` a JSON string or object) are emitted after the content, with those
  ids (``call_<n>`` when absent), by chat (``message.tool_calls`` / ``delta.tool_calls``,
  ``finish_reason`` ``"tool_calls"``) and Responses (``function_call`` output items); only when the
  whole reply fits the budget, and their tokens are not counted as completion tokens.
* The cached output is what a reasoning model generated: :func:`.reasoning.raw_reply`
  (``<think>…</think>`` before the content when there is reasoning), which is also what the qwen3
  template renders for that reply as an assistant turn after the last user message.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from . import tokenizer
from .error_bodies import bad_request
from .reasoning import filler_reasoning_tokens, raw_reply

__all__ = ["BENCH_REPLY_FIELD", "RecordedReply", "Reply", "plan_reply", "recorded_reply", "token_pieces"]

#: The request field carrying a recorded reply (emulator-only; benchmarks replaying conversations).
BENCH_REPLY_FIELD = "kvwarm_bench_reply"


@dataclass(frozen=True)
class RecordedReply:
    """A reply to generate verbatim: ``content`` and optional ``reasoning``."""

    content: str
    reasoning: str = ""
    tool_calls: tuple[dict[str, Any], ...] = ()  # chat shape: id, type, function {name, arguments (JSON text)}


@dataclass(frozen=True)
class Reply:
    """One generated reply: ``reasoning`` then ``content`` pieces (one token each)."""

    reasoning: tuple[str, ...]
    content: tuple[str, ...]
    finish_reason: str
    output_ids: tuple[int, ...]  # cached after the prompt when the request finishes
    tool_calls: tuple[dict[str, Any], ...] = ()  # emitted after the content (chat shape)

    @property
    def tokens(self) -> int:
        """Completion tokens: reasoning and content."""
        return len(self.reasoning) + len(self.content)

    @property
    def text(self) -> str:
        return "".join(self.content)

    @property
    def reasoning_text(self) -> str | None:
        """The reasoning, ``None`` when the reply has none."""
        return "".join(self.reasoning) if self.reasoning else None

    def pieces(self) -> list[tuple[str, str]]:
        """``("reasoning" | "content", piece)`` in generation order."""
        return [("reasoning", p) for p in self.reasoning] + [("content", p) for p in self.content]


def recorded_reply(body: Mapping[str, Any]) -> RecordedReply | None:
    """The request's :data:`BENCH_REPLY_FIELD`, ``None`` when absent.

    Raises:
        Rejected: not a string nor an object with a string ``content`` (and string reasoning).
    """
    from .request_body import Rejected

    value = body.get(BENCH_REPLY_FIELD)
    if value is None:
        return None
    if isinstance(value, str):
        return RecordedReply(value)
    if isinstance(value, Mapping) and isinstance(value.get("content", ""), str):
        reasoning = value.get("reasoning_content", value.get("reasoning"))
        calls = _tool_calls(value.get("tool_calls"))
        if (reasoning is None or isinstance(reasoning, str)) and calls is not None:
            return RecordedReply(value.get("content") or "", reasoning or "", calls)
    raise Rejected(bad_request(
        f"{BENCH_REPLY_FIELD} must be a string or an object "
        '{"content": string, "reasoning_content": string (optional), "tool_calls": '
        '[{"id": string (optional), "function": {"name": string, "arguments": string or object}}] (optional)}.',
        BENCH_REPLY_FIELD))


def _tool_calls(value: Any) -> tuple[dict[str, Any], ...] | None:
    """Recorded tool calls in the chat shape, ``()`` when absent, ``None`` when malformed."""
    if value is None:
        return ()
    if not isinstance(value, list):
        return None
    calls = []
    for n, call in enumerate(value):
        function = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
            return None
        arguments = function.get("arguments", "{}")
        if isinstance(arguments, Mapping):
            arguments = json.dumps(arguments)
        call_id = call.get("id") or f"call_{n}"
        if not isinstance(arguments, str) or not isinstance(call_id, str):
            return None
        calls.append({"id": call_id, "type": "function", "function": {"name": function["name"], "arguments": arguments}})
    return tuple(calls)


def _call_text(calls: Sequence[Mapping[str, Any]]) -> str:
    """Tool calls as a Qwen2.5-style model writes them (what is cached after the content)."""
    return "".join('\n<tool_call>\n{"name": ' + json.dumps(c["function"]["name"]) + ', "arguments": '
                   + c["function"]["arguments"] + "}\n</tool_call>" for c in calls)


def token_pieces(ids: Sequence[int]) -> list[str]:
    """One text piece per token of ``ids``; a character split across tokens shows in the piece of
    its last byte (earlier pieces are empty), so ``"".join`` is the decoded text."""
    encoding = tokenizer.get_encoding()
    pieces: list[str] = []
    pending = b""
    for token in ids:
        pending += encoding.decode_single_token_bytes(token)
        try:
            pieces.append(pending.decode("utf-8"))
            pending = b""
        except UnicodeDecodeError:
            pieces.append("")
    if pending:
        pieces[-1] += pending.decode("utf-8", "replace")
    return pieces


def _filler(n: int, reasoning_tokens: int, finish_reason: str) -> Reply:
    r = min(reasoning_tokens, n)
    reasoning, content = tokenizer.filler_pieces(r), tokenizer.filler_pieces(n - r)
    output = raw_reply("".join(reasoning), "".join(content))
    return Reply(tuple(reasoning), tuple(content), finish_reason, tuple(tokenizer.encode(output)))


def plan_reply(
    body: Mapping[str, Any],
    *,
    output_tokens: int,
    finish_reason: str,
    max_tokens_given: bool,
    room: int,
    prompt_ids: Sequence[int],
    chat: bool,
    template_mode: str,
    with_tool_calls: bool = False,
) -> Reply:
    """The reply to one admitted request (see the module docstring).

    Args:
        body: the request (read for :data:`BENCH_REPLY_FIELD`).
        output_tokens / finish_reason: the admitted ``LengthDecision``.
        max_tokens_given: whether the request set its output budget.
        room: window minus prompt, tokens (a recorded reply's budget without ``max_tokens``).
        prompt_ids: the prompt (seeds the filler reasoning length).
        chat: a chat completion (only those carry reasoning: filler reasoning in ``"qwen3"``
            ``template_mode``, a recorded reply's reasoning in either mode).
        with_tool_calls: the endpoint can return a recorded reply's tool calls (chat, Responses).

    Raises:
        Rejected: a malformed :data:`BENCH_REPLY_FIELD`.
    """
    recorded = recorded_reply(body)
    if recorded is None:
        thinks = chat and template_mode == "qwen3"
        return _filler(output_tokens, filler_reasoning_tokens(prompt_ids) if thinks else 0, finish_reason)
    budget = output_tokens if max_tokens_given else max(room, 1)
    reasoning_ids = tokenizer.encode(recorded.reasoning) if recorded.reasoning and chat else []
    content_ids = tokenizer.encode(recorded.content)
    calls = recorded.tool_calls if with_tool_calls else ()
    call_text = _call_text(calls)
    fits = len(reasoning_ids) + len(content_ids) + (tokenizer.count_tokens(call_text) if calls else 0) <= budget
    reasoning_ids = reasoning_ids[:budget]
    content_ids = content_ids[: budget - len(reasoning_ids)]
    reasoning_pieces, content_pieces = token_pieces(reasoning_ids), token_pieces(content_ids)
    output = raw_reply("".join(reasoning_pieces), "".join(content_pieces))
    if calls and fits:
        return Reply(tuple(reasoning_pieces), tuple(content_pieces), "tool_calls",
                     tuple(tokenizer.encode(output + call_text)), calls)
    return Reply(tuple(reasoning_pieces), tuple(content_pieces), "stop" if fits else "length",
                 tuple(tokenizer.encode(output)))

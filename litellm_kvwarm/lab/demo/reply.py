"""Closed-loop replies (pure): what the client asks the emulator to produce, what it got back, and
the history it sends next.

In a closed-loop replay the assistant messages a client sends back are the replies the backend
actually streamed, as real clients do, while the text stays real: every request carries
:data:`REPLY_FIELD` (``kvwarm_bench_reply``) inside ``extra_body``, naming the recorded reply the
emulator is to produce (``{"content": str, "reasoning_content"?: str, "tool_calls"?: [...]}``,
the tool calls in the chat shape). LiteLLM 1.108.7 merges ``extra_body`` into the backend request
for all three APIs (chat, ``/v1/messages`` bridged to chat, ``/v1/responses``); a top-level field
reaches the backend for chat and Messages but is dropped for Responses.

* :func:`bench_reply`: the field's value for a recorded assistant message;
* :func:`reply_budget`: the ``max_tokens`` a request needs so the reply is not cut (tokens, the
  emulator's tokenizer: tiktoken ``cl100k_base``);
* :func:`assemble_reply`: the streamed reply of each API (chat chunks, Anthropic Messages events,
  Responses events) as one chat assistant message (``content``, and ``tool_calls`` if any);
* :func:`next_messages`: the next request's chat history: what was sent, the produced reply, then
  the recorded messages up to the next request (the user message, or the tool results with their
  ``tool_call_id`` mapped onto the ids the produced reply carries, in order);
* :func:`reply_diverged`: whether a produced reply differs from the recorded one (text or calls).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..datasets import Message
from ..datasets.agent_formats import content_text

__all__ = ["REPLY_FIELD", "REPLY_MARGIN_TOKENS", "assemble_reply", "bench_reply", "next_messages", "reply_budget",
           "reply_diverged", "with_reply"]

REPLY_FIELD = "kvwarm_bench_reply"
#: Tokens added to a reply's own count for ``max_tokens`` (tool-call markup, the end token).
REPLY_MARGIN_TOKENS = 64


_text = content_text  # a chat ``content`` as one string


def _chat_calls(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    calls = []
    for call in message.get("tool_calls") or []:
        arguments = call["function"].get("arguments")
        calls.append({"id": call.get("id"), "type": "function", "function": {
            "name": call["function"]["name"],
            "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments or {})}})
    return calls


def bench_reply(recorded: Mapping[str, Any]) -> dict[str, Any]:
    """The :data:`REPLY_FIELD` value that makes the emulator produce ``recorded`` (a chat assistant message)."""
    reply: dict[str, Any] = {"content": _text(recorded.get("content"))}
    reasoning = recorded.get("reasoning_content")
    if reasoning:
        reply["reasoning_content"] = reasoning
    calls = _chat_calls(recorded)
    if calls:
        reply["tool_calls"] = calls
    return reply


def with_reply(body: dict[str, Any], recorded: Mapping[str, Any]) -> dict[str, Any]:
    """``body`` (any API) with :data:`REPLY_FIELD` added inside its ``extra_body``."""
    extra = dict(body.get("extra_body") or {})
    extra[REPLY_FIELD] = bench_reply(recorded)
    return dict(body, extra_body=extra)


def reply_budget(recorded: Mapping[str, Any], at_least: int) -> int:
    """``max_tokens`` for a request whose reply is ``recorded``: its tokens (content, reasoning, tool
    calls' names and arguments, cl100k) + :data:`REPLY_MARGIN_TOKENS`, and never below ``at_least``."""
    from ..emulator.tokenizer import count_tokens

    reply = bench_reply(recorded)
    text = reply["content"] + reply.get("reasoning_content", "") + "".join(
        c["function"]["name"] + c["function"]["arguments"] for c in reply.get("tool_calls", []))
    return max(at_least, count_tokens(text) + REPLY_MARGIN_TOKENS)


def _assemble_chat(events: Iterable[Any]) -> Message:
    text: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    for event in events:
        if not isinstance(event, dict) or "error" in event:
            continue
        for choice in event.get("choices") or []:
            delta = choice.get("delta") or {}
            text.append(delta.get("content") or "")
            for part in delta.get("tool_calls") or []:
                call = calls.setdefault(part.get("index", len(calls)), {"id": None, "type": "function",
                                                                          "function": {"name": "", "arguments": ""}})
                call["id"] = part.get("id") or call["id"]
                function = part.get("function") or {}
                call["function"]["name"] += function.get("name") or ""
                call["function"]["arguments"] += function.get("arguments") or ""
    return _message("".join(text), [calls[i] for i in sorted(calls)])


def _assemble_messages(events: Iterable[Any]) -> Message:
    blocks: dict[int, dict[str, Any]] = {}
    for event in events:
        if not isinstance(event, dict):
            continue
        kind, index = event.get("type"), event.get("index", 0)
        if kind == "content_block_start":
            block = dict(event.get("content_block") or {})
            block["_json"] = ""
            if block.get("type") == "text":
                block["text"] = block.get("text") or ""
            blocks[index] = block
        elif kind == "content_block_delta":
            block = blocks.setdefault(index, {"type": "text", "text": "", "_json": ""})
            delta = event.get("delta") or {}
            if delta.get("type") == "text_delta":
                block["text"] = block.get("text", "") + (delta.get("text") or "")
            elif delta.get("type") == "input_json_delta":
                block["_json"] += delta.get("partial_json") or ""
    text, calls = [], []
    for index in sorted(blocks):
        block = blocks[index]
        if block.get("type") == "text":
            text.append(block.get("text") or "")
        elif block.get("type") == "tool_use":
            arguments = block["_json"] or json.dumps(block.get("input") or {})
            calls.append({"id": block.get("id"), "type": "function",
                          "function": {"name": block.get("name") or "", "arguments": arguments}})
    return _message("".join(text), calls)


def _responses_items(events: Sequence[Any]) -> list[dict[str, Any]]:
    for event in reversed(events):
        if isinstance(event, dict) and event.get("type") in ("response.completed", "response.incomplete"):
            return list((event.get("response") or {}).get("output") or [])
    return [e["item"] for e in events
            if isinstance(e, dict) and e.get("type") == "response.output_item.done" and isinstance(e.get("item"), dict)]


def _assemble_responses(events: Sequence[Any]) -> Message:
    items = _responses_items(events)
    if not items:  # no completed event nor finished item: the text deltas are all there is
        return _message("".join(e.get("delta") or "" for e in events
                                if isinstance(e, dict) and e.get("type") == "response.output_text.delta"), [])
    text, calls = [], []
    for item in items:
        if item.get("type") == "message":
            text += [part.get("text") or "" for part in item.get("content") or [] if part.get("type") == "output_text"]
        elif item.get("type") == "function_call":
            calls.append({"id": item.get("call_id"), "type": "function",
                          "function": {"name": item.get("name") or "", "arguments": item.get("arguments") or ""}})
    return _message("".join(text), calls)


def _message(text: str, calls: list[dict[str, Any]]) -> Message:
    message: Message = {"role": "assistant", "content": text if text or not calls else None}
    if calls:
        message["tool_calls"] = calls
    return message


def assemble_reply(api: str, events: Sequence[Any]) -> Message:
    """The reply streamed in ``events`` (decoded SSE events of ``api``: ``"chat"``, ``"messages"``,
    ``"responses"``) as a chat assistant message: ``content`` (``None`` when the reply is only tool
    calls) and ``tool_calls`` (chat shape, ``arguments`` a JSON string) when there are any.
    Error events are skipped; :class:`ValueError` for another ``api``."""
    if api == "chat":
        return _assemble_chat(events)
    if api == "messages":
        return _assemble_messages(events)
    if api == "responses":
        return _assemble_responses(events)
    raise ValueError(f"api must be chat, messages or responses, got {api!r}")


def _call_ids(message: Mapping[str, Any]) -> list[Any]:
    return [call.get("id") for call in message.get("tool_calls") or []]


def next_messages(sent: Sequence[Message], produced: Message, recorded: Mapping[str, Any],
                  between: Sequence[Message]) -> list[Message]:
    """The next request's chat messages: ``sent`` (the previous request's), the ``produced`` reply
    in place of the ``recorded`` one, then ``between`` (the recorded messages that followed the
    recorded reply: the next user message or the tool results), each tool result's
    ``tool_call_id`` mapped from the recorded call's id onto the produced call's at the same
    position (kept when the produced reply has no call there)."""
    ids = {old: new for old, new in zip(_call_ids(recorded), _call_ids(produced)) if old and new}
    follow = [dict(m, tool_call_id=ids.get(m.get("tool_call_id"), m.get("tool_call_id"))) if m.get("role") == "tool" else m
              for m in between]
    return [*sent, produced, *follow]


def _arguments(call: Mapping[str, Any]) -> Any:
    raw = call["function"].get("arguments") or "{}"
    try:
        return json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return raw


def reply_diverged(produced: Mapping[str, Any], recorded: Mapping[str, Any]) -> bool:
    """Whether ``produced`` differs from ``recorded``: its text, or its tool calls' names and
    (parsed) arguments, in order. Ids are not compared (a server makes its own)."""
    if _text(produced.get("content")) != _text(recorded.get("content")):
        return True
    mine, theirs = produced.get("tool_calls") or [], recorded.get("tool_calls") or []
    return len(mine) != len(theirs) or any(
        a["function"]["name"] != b["function"]["name"] or _arguments(a) != _arguments(b) for a, b in zip(mine, theirs))

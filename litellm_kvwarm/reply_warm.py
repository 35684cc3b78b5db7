"""Reply-warm: the source group's finished reply, appended to the request the way the client will
send it back, so a warm of the target holds the whole conversation up to the next user message or
tool result. Pure functions over plain mappings and LiteLLM's response objects; no I/O.

* :func:`reply_of` reads one reply out of a finished response of any API LiteLLM returns
  (a chat ``ModelResponse``/dict: ``choices[0].message``; an Anthropic Messages response:
  ``content`` blocks; a Responses response: ``output`` items): its text, tool calls and reasoning.
* :func:`with_reply` appends it to a warm body built from the live request
  (:func:`~litellm_kvwarm.warm_body.warm_request`), in that request's own API shape: a chat
  ``assistant`` message (``content`` and ``tool_calls``), an Anthropic ``assistant`` message of
  ``text``/``tool_use`` blocks, Responses ``message``/``function_call`` input items, or the
  completion text after a text ``prompt``.

What the next request renders (:func:`keeps_reasoning`): OpenAI-compatible clients send an
assistant message back without its reasoning, and templates that render reasoning at all
(Qwen3, QwQ, DeepSeek-R1 families) render it only for assistant turns after the last user message
(Qwen3's ``chat_template.jinja``: ``loop.index0 > ns.last_query_index``). So reasoning is
appended only where the next request renders it: a reply of such a family that calls tools (the
next request carries tool results, no new user message, and agents built for these models send
the reasoning back during a tool loop). A final answer's reasoning is dropped, as the template
will drop it once the next user message arrives; and since those templates render the *last*
assistant message with a (possibly empty) ``<think>`` block that the same message no longer gets
once a user message follows, a final answer is followed by an empty user message
(:func:`opens_next_turn`): the warm then renders the history exactly as the next request will, up
to that user message's text. On Messages and Responses the reasoning goes back as those clients send it
(:func:`reasoning_parts`: Claude Code returns its ``thinking`` blocks, Codex and the Agents SDK their
``reasoning`` items; LiteLLM turns both into ``reasoning_content`` on the way to a chat backend), including for
a reply LiteLLM bridged from a chat backend, whose success event carries the chat response.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .meta import field

__all__ = ["Reply", "ToolCall", "appends_reasoning", "drops_past_reasoning", "keeps_reasoning", "opens_next_turn", "reasoning_parts", "reply_of", "reply_tokens",
           "target_holds", "with_reply"]

#: Served-model names whose chat templates render an assistant turn's reasoning only after the
#: last user message (Qwen3 and Qwen3.5/3.6 hybrid-thinking templates, QwQ, DeepSeek-R1 and its
#: distills; GLM-4.5 to 4.7, Air and V included: ``loop.index0 > ns.last_user_index and reasoning_content``, else
#: ``<think></think>``); Qwen3-Coder and -Instruct-2507 templates carry no reasoning and are left out.
_DROPS_PAST_REASONING = re.compile(r"qwen3(?!-coder)(?!.*instruct-2507)|qwq|deepseek-r1|glm-?4\.[5-9]")


def drops_past_reasoning(served_model: str | None) -> bool:
    """Whether the chat template of ``served_model`` (the name ``/v1/models`` lists, e.g.
    ``"Qwen/Qwen3-8B"``) drops the reasoning of assistant turns before the last user message."""
    return bool(served_model) and _DROPS_PAST_REASONING.search(str(served_model).lower()) is not None


@dataclass(frozen=True)
class ToolCall:
    """One tool call of a reply: ``arguments`` is the JSON text the model produced."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class Reply:
    """A finished reply: ``text`` (``None``: none), ``tool_calls``, ``reasoning`` (``None``: none); ``reasoning_parts``:
    the reasoning as the response carried it, which a client of that API sends back as is (an Anthropic Messages reply's
    ``thinking``/``redacted_thinking`` blocks with their ``signature``; a Responses reply's ``reasoning`` items), plain
    dicts in order; empty for chat (its reasoning goes back as ``reasoning_content``)."""

    text: str | None
    tool_calls: tuple[ToolCall, ...] = ()
    reasoning: str | None = None
    reasoning_parts: tuple[Mapping[str, Any], ...] = ()

    @property
    def empty(self) -> bool:
        return not self.text and not self.tool_calls


_get = field  # obj[name] or obj.name


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _chat_calls(calls: Any) -> tuple[ToolCall, ...]:
    out = []
    for call in calls or ():
        function = _get(call, "function")
        name, arguments = _get(function, "name"), _get(function, "arguments")
        if isinstance(name, str):
            out.append(ToolCall(str(_get(call, "id") or ""), name, arguments if isinstance(arguments, str) else json.dumps(arguments or {})))
    return tuple(out)


def reply_of(response: Any) -> Reply | None:
    """The reply of a finished response (chat, Anthropic Messages or Responses shape, object or
    dict); ``None`` when it holds none (no choices, an error, an unknown shape). Never raises."""
    try:
        choices = _get(response, "choices")
        if isinstance(choices, Sequence) and choices:
            message = _get(choices[0], "message")
            if message is None:
                text = _text(_get(choices[0], "text"))  # a text completion
                return Reply(text) if text else None
            reasoning = _text(_get(message, "reasoning_content")) or _text(_get(message, "reasoning"))
            return Reply(_text(_get(message, "content")), _chat_calls(_get(message, "tool_calls")), reasoning)
        output = _get(response, "output")
        if isinstance(output, Sequence) and not isinstance(output, str):
            return _responses_reply(output)
        content = _get(response, "content")
        if isinstance(content, Sequence) and not isinstance(content, str) and _get(response, "role") in ("assistant", None):
            return _messages_reply(content)
    except Exception:  # a reply we cannot read is no reply
        return None
    return None


def reply_tokens(response: Any, reply: Reply, usage: Any, *, reasoning: bool = False) -> int:
    """Tokens of what a reply-warm appends of ``reply`` (:func:`reply_of` of ``response``; its reasoning only
    with ``reasoning``, :func:`keeps_reasoning`): the server's ``completion_tokens`` (``output_tokens``) times
    the appended share of everything it counts, by characters: the first choice of several (``n`` > 1, which
    the count sums), without the reasoning the next request drops. Without a count, characters ÷ 4. Never raises."""
    chars = len(reply.text or "") + sum(len(c.arguments) for c in reply.tool_calls)
    sent = chars + (len(reply.reasoning or "") if reasoning else 0)
    try:
        produced = _get(usage, "completion_tokens") or _get(usage, "output_tokens")
        if not isinstance(produced, int) or produced < 0:
            return sent // 4
        choices = _get(response, "choices")
        many = isinstance(choices, Sequence) and not isinstance(choices, str) and len(choices) > 0
        total = sum(_choice_chars(c) for c in choices) if many else chars + len(reply.reasoning or "")
        return produced * sent // total if total > sent else produced
    except Exception:
        return sent // 4


def _choice_chars(choice: Any) -> int:
    """Characters one chat choice produced: text, reasoning, tool-call arguments."""
    message = _get(choice, "message")
    if message is None:
        return len(_text(_get(choice, "text")) or "")
    reasoning = _text(_get(message, "reasoning_content")) or _text(_get(message, "reasoning")) or ""
    calls = _chat_calls(_get(message, "tool_calls"))
    return len(_text(_get(message, "content")) or "") + len(reasoning) + sum(len(c.arguments) for c in calls)


def _plain(part: Any) -> dict[str, Any]:
    """A response part (a pydantic object or a mapping) as the plain dict a client sends back."""
    dump = getattr(part, "model_dump", None)
    value = dump(exclude_none=True) if callable(dump) else part
    return {k: v for k, v in value.items() if v is not None} if isinstance(value, Mapping) else {}


def _messages_reply(blocks: Sequence[Any]) -> Reply:
    texts, calls, thinking, parts = [], [], [], []
    for block in blocks:
        kind = _get(block, "type")
        if kind == "text" and isinstance(_get(block, "text"), str):
            texts.append(_get(block, "text"))
        elif kind == "tool_use":
            calls.append(ToolCall(str(_get(block, "id") or ""), str(_get(block, "name")), json.dumps(_get(block, "input") or {})))
        elif kind == "thinking" and isinstance(_get(block, "thinking"), str):
            thinking.append(_get(block, "thinking"))
            parts.append(_plain(block))
        elif kind == "redacted_thinking":
            parts.append(_plain(block))
    return Reply("".join(texts) or None, tuple(calls), "".join(thinking) or None, tuple(parts))


def _responses_reply(items: Sequence[Any]) -> Reply:
    texts, calls, reasoning, parts = [], [], [], []
    for item in items:
        kind = _get(item, "type")
        if kind == "message":
            for part in _get(item, "content") or ():
                if _get(part, "type") == "output_text" and isinstance(_get(part, "text"), str):
                    texts.append(_get(part, "text"))
        elif kind == "function_call":
            calls.append(ToolCall(str(_get(item, "call_id") or ""), str(_get(item, "name")), str(_get(item, "arguments") or "{}")))
        elif kind == "reasoning":
            for part in _get(item, "content") or _get(item, "summary") or ():
                if isinstance(_get(part, "text"), str):
                    reasoning.append(_get(part, "text"))
            parts.append(_plain(item))
    return Reply("".join(texts) or None, tuple(calls), "".join(reasoning) or None, tuple(parts))


def keeps_reasoning(reply: Reply, served_model: str | None) -> bool:
    """Whether the next request will render ``reply``'s reasoning (see the module docstring)."""
    return reply.reasoning is not None and bool(reply.tool_calls) and drops_past_reasoning(served_model)


def appends_reasoning(reply: Reply, kind: str, keeps: bool) -> bool:
    """Whether :func:`with_reply` appends ``reply``'s reasoning to a ``kind`` warm when the next request renders it
    (``keeps``, :func:`keeps_reasoning`): as ``reasoning_content`` on chat, as :func:`reasoning_parts` on Messages and
    Responses; what is appended is what :func:`reply_tokens` sizes."""
    return keeps and reply.reasoning is not None and kind in ("chat", "messages", "responses")


def reasoning_parts(reply: Reply, kind: str) -> tuple[dict[str, Any], ...]:
    """``reply``'s reasoning as a ``kind`` client sends it back: the response's own parts (:attr:`Reply.reasoning_parts`)
    when it was of that API; else, for a reply LiteLLM bridged from chat (its success event carries the chat response of a
    Messages or Responses request served by ``hosted_vllm``), the part LiteLLM's adapter gave the client from
    ``reasoning_content``: a ``thinking`` block (no signature: LiteLLM 1.108.7's
    ``_translate_openai_content_to_anthropic``) or a ``reasoning`` item (vLLM's ``reasoning_text`` content). LiteLLM
    turns either back into the same ``reasoning_content`` on the next request."""
    own = kind == "messages" and any(p.get("type") in ("thinking", "redacted_thinking") for p in reply.reasoning_parts)
    if own or (kind == "responses" and any(p.get("type") == "reasoning" for p in reply.reasoning_parts)):
        return tuple(dict(p) for p in reply.reasoning_parts)
    if not reply.reasoning:
        return ()
    if kind == "messages":
        return ({"type": "thinking", "thinking": reply.reasoning, "signature": ""},)
    if kind == "responses":
        return ({"type": "reasoning", "summary": [], "content": [{"type": "reasoning_text", "text": reply.reasoning}]},)
    return ()


def target_holds(reply: Reply, served_model: str | None) -> bool:
    """Whether the model that generated ``reply`` holds it in its prefix cache as the next request renders it: a
    text reply without reasoning a template drops (tool calls are rendered again from the client's JSON, which
    may differ from the model's own output; dropped reasoning changes the rendering from that turn on)."""
    return not reply.tool_calls and not (reply.reasoning and drops_past_reasoning(served_model))


def opens_next_turn(reply: Reply, served_model: str | None) -> bool:
    """Whether the warm should end with an empty user message after ``reply`` (a final answer of a
    family whose template renders the last assistant turn differently: see the module docstring)."""
    return not reply.tool_calls and drops_past_reasoning(served_model)


#: The empty user message that opens the next turn in a warm (chat and Responses).
NEXT_TURN = {"role": "user", "content": ""}
#: The same on Messages: one space (LiteLLM 1.108.7 and 1.109.3 drop a Messages user turn whose content is ``""`` or an
#: empty text block on the way to chat, so the warm would end on the assistant turn; a space renders the same prefix up to
#: the user turn's text, measured on the emulator's Qwen3 template).
NEXT_TURN_MESSAGES = {"role": "user", "content": " "}


def with_reply(body: Mapping[str, Any], kind: str, reply: Reply, *, reasoning: bool = False,
               next_turn: bool = False) -> dict[str, Any] | None:
    """A copy of the warm ``body`` (a ``kind`` request: ``"chat"``, ``"messages"``, ``"responses"``,
    ``"completion"``) with ``reply`` appended as the client will send it back; ``reasoning``: append
    its reasoning too (:func:`keeps_reasoning`); ``next_turn``: then an empty user message
    (:func:`opens_next_turn`). ``None`` when the body cannot take it (a
    token-id or batched ``prompt``, a ``previous_response_id`` chain, no list to append to)."""
    out = dict(body)
    if kind == "chat":
        if not isinstance(body.get("messages"), list):
            return None
        message: dict[str, Any] = {"role": "assistant", "content": reply.text}
        if reply.tool_calls:
            message["tool_calls"] = [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                                     for c in reply.tool_calls]
        if reasoning and reply.reasoning:
            message["reasoning_content"] = reply.reasoning
        out["messages"] = [*body["messages"], message, *([dict(NEXT_TURN)] if next_turn else [])]
        return out
    if kind == "messages":
        if not isinstance(body.get("messages"), list):
            return None
        blocks: list[dict[str, Any]] = list(reasoning_parts(reply, kind)) if reasoning else []  # thinking comes first
        blocks += [{"type": "text", "text": reply.text}] if reply.text else []
        for c in reply.tool_calls:
            try:
                arguments = json.loads(c.arguments) if c.arguments else {}
            except ValueError:
                return None  # the client could not send it back as a tool_use block either
            blocks.append({"type": "tool_use", "id": c.id, "name": c.name, "input": arguments})
        out["messages"] = [*body["messages"], {"role": "assistant", "content": blocks},
                           *([dict(NEXT_TURN_MESSAGES)] if next_turn else [])]
        return out
    if kind == "responses":
        given = body.get("input")
        items = [{"role": "user", "content": given}] if isinstance(given, str) else given
        if not isinstance(items, list) or body.get("previous_response_id"):
            return None
        added: list[dict[str, Any]] = list(reasoning_parts(reply, kind)) if reasoning else []
        if reply.text:
            added.append({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": reply.text}]})
        added += [{"type": "function_call", "call_id": c.id, "name": c.name, "arguments": c.arguments} for c in reply.tool_calls]
        out["input"] = [*items, *added, *([dict(NEXT_TURN)] if next_turn else [])]
        return out
    if kind == "completion":
        prompt = body.get("prompt")
        if not isinstance(prompt, str) or not reply.text:
            return None
        out["prompt"] = prompt + reply.text
        return out
    return None

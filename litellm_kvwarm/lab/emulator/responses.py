"""Response bodies and SSE chunks shaped like vLLM's OpenAI server (pure).

Contract: functions here only build dicts/strings; they never read time or state except the
``created`` timestamp (unix seconds) and fresh request ids. Chat chunks are
``chat.completion.chunk`` objects with ``delta``s (the first carries the role);
completion chunks are ``text_completion`` objects with ``text``. The usage chunk of
``stream_options.include_usage`` has ``choices: []``. ``usage`` always includes
``prompt_tokens_details.cached_tokens`` (as vLLM with ``--enable-prompt-tokens-details``).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Sequence
from typing import Any

from .config import LoraModule

__all__ = ["DONE", "StreamChunks", "completion_body", "model_list", "sse", "usage"]

#: The last SSE event of every stream.
DONE = "data: [DONE]\n\n"


def _model_card(model_id: str, root: str, parent: str | None, max_model_len: int | None, created: int) -> dict[str, Any]:
    """vLLM's ``ModelCard`` with one ``ModelPermission``."""
    permission = {
        "id": f"modelperm-{uuid.uuid4().hex}", "object": "model_permission", "created": created,
        "allow_create_engine": False, "allow_sampling": True, "allow_logprobs": True,
        "allow_search_indices": False, "allow_view": True, "allow_fine_tuning": False,
        "organization": "*", "group": None, "is_blocking": False,
    }
    return {
        "id": model_id, "object": "model", "created": created, "owned_by": "vllm", "root": root,
        "parent": parent, "max_model_len": max_model_len, "permission": [permission],
    }


def model_list(
    name: str, max_model_len: int | None, loras: Sequence[LoraModule] = (), *, hide_max_model_len: bool = False
) -> dict[str, Any]:
    """``GET /v1/models`` as vLLM 0.32's ``OpenAIServingModels.show_available_models``: the
    served model with its ``max_model_len`` (tokens), then one card per LoRA adapter with
    ``root`` = its path, ``parent`` = its base model and ``max_model_len: null`` (vLLM sets no
    window on adapter cards). ``hide_max_model_len`` drops the key from every card."""
    created = int(time.time())
    cards = [_model_card(name, name, None, max_model_len, created)]
    cards += [_model_card(lora.name, lora.path, lora.base_model_name or name, None, created) for lora in loras]
    if hide_max_model_len:
        for card in cards:
            del card["max_model_len"]
    return {"object": "list", "data": cards}


def usage(prompt_tokens: int, completion_tokens: int, cached_tokens: int, created_cache_tokens: int = 0) -> dict[str, Any]:
    """OpenAI ``usage`` with vLLM 0.32's ``prompt_tokens_details`` (all counts in tokens):
    ``cached_tokens`` hit, ``created_cache_tokens`` written (the prompt's full blocks that
    were not hits), ``multimodal_tokens`` ``None``; ``completion_tokens_details`` ``None``."""
    return {
        "prompt_tokens": prompt_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        "completion_tokens": completion_tokens,
        "prompt_tokens_details": {
            "cached_tokens": cached_tokens, "created_cache_tokens": created_cache_tokens, "multimodal_tokens": None,
        },
        "completion_tokens_details": None,
    }


def sse(payload: dict[str, Any]) -> str:
    """One server-sent event carrying ``payload`` as JSON."""
    return f"data: {json.dumps(payload, separators=(',', ':'))}\n\n"


def _head(chat: bool, model: str, object_suffix: str = "") -> dict[str, Any]:
    prefix, kind = ("chatcmpl", "chat.completion") if chat else ("cmpl", "text_completion")
    return {"id": f"{prefix}-{uuid.uuid4().hex}", "object": kind + (object_suffix if chat else ""),
            "created": int(time.time()), "model": model}


def completion_body(chat: bool, model: str, text: str, finish_reason: str, usage_: dict[str, Any],
                    reasoning: str | None = None, tool_calls: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A non-streaming ``chat.completion`` (``chat``, its message's ``reasoning_content`` =
    ``reasoning`` and ``tool_calls``) or ``text_completion`` body."""
    if chat:
        message = {"role": "assistant", "content": text, "reasoning_content": reasoning,
                   "tool_calls": list(tool_calls or [])}
        choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason, "stop_reason": None}
        return {**_head(True, model), "choices": [choice], "usage": usage_, "prompt_logprobs": None}
    choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": finish_reason, "stop_reason": None,
              "prompt_logprobs": None}
    return {**_head(False, model), "choices": [choice], "usage": usage_}


class StreamChunks:
    """The SSE events of one streamed response; every chunk shares one id and ``created``."""

    def __init__(self, chat: bool, model: str) -> None:
        self.chat = chat
        self._head = _head(chat, model, ".chunk")

    @property
    def head(self) -> dict[str, Any]:
        """The fields every chunk of this stream shares: ``id``, ``object``, ``created``, ``model``."""
        return dict(self._head)

    def role(self) -> str:
        """The chat stream's opening chunk (``delta.role``); streams of completions have none."""
        choice = {"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": None, "finish_reason": None}
        return sse({**self._head, "choices": [choice]})

    def token(self, piece: str, finish_reason: str | None, *, reasoning: bool = False) -> str:
        """One generated piece (chat: ``delta.reasoning_content`` when ``reasoning``, else
        ``delta.content``); ``finish_reason`` is set on the last one only."""
        if self.chat:
            delta = {"reasoning_content": piece} if reasoning else {"content": piece}
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        else:
            choice = {"index": 0, "text": piece, "logprobs": None, "finish_reason": finish_reason, "stop_reason": None}
        return sse({**self._head, "choices": [choice]})

    def tool_calls(self, calls: Sequence[dict[str, Any]], finish_reason: str) -> list[str]:
        """Whole tool calls (chat shape), one ``delta.tool_calls`` chunk each; ``finish_reason`` on the last."""
        chunks = []
        for index, call in enumerate(calls):
            delta = {"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                                     "function": {"name": call["function"]["name"],
                                                  "arguments": call["function"]["arguments"]}}]}
            chunks.append(sse({**self._head, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason":
                                                          finish_reason if index == len(calls) - 1 else None}]}))
        return chunks

    def usage(self, usage_: dict[str, Any]) -> str:
        """The ``include_usage`` chunk: empty ``choices``."""
        return sse({**self._head, "choices": [], "usage": usage_})

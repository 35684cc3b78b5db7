"""Hand-written chat templates as token segments (pure): kept where no official template applies.

Used (through :func:`.templates.render`) for ``chatml`` (``cl100k``/``o200k``: OpenAI publishes no
chat template; ``qwen3.6``: no Qwen 3.5/3.6 template is available offline here) and as the
fallback of the official templates (:mod:`.official_templates`) for requests those cannot render:
tools with DeepSeek V3 and Gemma 3 (their templates have none), conversations a template refuses.
Everywhere else the official template is the truth.

A rendered prompt is a list of :data:`Segment` ``(text, specials)``: plain text to be tokenized and
the number of special tokens (``<|im_start|>``, ``<|eot_id|>``, ``<｜User｜>``, …) that follow it.

* ``chatml``: Qwen 2.5 (``chatml-qwen2.5``, with its default system prompt) and Qwen 3.6 /
  OpenAI-style ChatML (without); tools in the system turn inside ``<tools>``, tool calls as
  ``<tool_call>`` JSON (counted as text), tool results as ``<tool_response>`` in a user turn.
  Identical text to the official Qwen 2.5 template, which also makes ``<tool_call>`` one token.
* ``llama3``: Llama 3.1/3.2 headers, the dated system preamble, tools as indented JSON in the
  first user turn, tool calls as ``{"name", "parameters"}`` JSON (several joined by ``"; "``,
  which the official template refuses), results as ``ipython`` turns.
* ``deepseek``: DeepSeek V3 role markers, tools as JSON blocks in the system prompt, tool calls
  and outputs in its ``<｜tool▁…｜>`` markers (vLLM's ``tool_chat_template_deepseekv3.jinja``).
* ``gemma3``: Gemma 3's template for chat (``<bos>``, the system text prefixed to the first
  user turn, ``model`` for the assistant, content trimmed); tools follow Google's Gemma
  function-calling guide: the function JSON in the first user turn, calls as a ``tool_code``
  block, results as a ``tool_output`` block in a user turn.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["Segment", "TEMPLATES", "render"]

Segment = tuple[str, int]
Message = Mapping[str, Any]

QWEN25_DEFAULT_SYSTEM = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."
_QWEN_TOOLS_HEADER = (
    "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
)
_QWEN_TOOLS_FOOTER = (
    "\n</tools>\n\nFor each function call, return a json object with function name and arguments "
    'within <tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, '
    '"arguments": <args-json-object>}\n</tool_call>'
)
_LLAMA_SYSTEM = "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n"
_LLAMA_TOOLS = (
    "Given the following functions, please respond with a JSON for a function call with its proper "
    "arguments that best answers the given prompt.\n\nRespond in the format {\"name\": function name, "
    "\"parameters\": dictionary of argument name and its value}.Do not use variables.\n\n"
)


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) if isinstance(p, Mapping) else str(p) for p in content)
    return str(content)


def parsed_arguments(arguments: Any) -> Any:
    """A tool call's ``arguments``: the JSON string decoded, kept as is when it is not JSON."""
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except ValueError:
            return arguments
    return arguments


def _arguments(call: Mapping[str, Any]) -> Any:
    return parsed_arguments(call.get("function", {}).get("arguments"))


def _chatml(messages: Sequence[Message], tools: Sequence[Any] | None, default_system: str | None) -> list[Segment]:
    out: list[Segment] = []
    first_system = bool(messages) and messages[0].get("role") == "system"
    system = _text(messages[0].get("content")) if first_system else default_system
    if tools:
        system = (system or "") + _QWEN_TOOLS_HEADER + "".join("\n" + json.dumps(t, ensure_ascii=False) for t in tools)
        system += _QWEN_TOOLS_FOOTER
    if system is not None:
        out += [("", 1), (f"system\n{system}", 1), ("\n", 0)]
    for index, message in enumerate(messages):
        role = message.get("role")
        if index == 0 and first_system:
            continue
        if role == "tool":
            if index == 0 or messages[index - 1].get("role") != "tool":
                out += [("", 1), ("user", 0)]
            out.append((f"\n<tool_response>\n{_text(message.get('content'))}\n</tool_response>", 0))
            if index == len(messages) - 1 or messages[index + 1].get("role") != "tool":
                out += [("", 1), ("\n", 0)]
            continue
        body = _text(message.get("content"))
        if role == "assistant" and message.get("tool_calls"):
            body = body and "\n" + body
            for call in message["tool_calls"]:
                name = call.get("function", {}).get("name")
                args = json.dumps(_arguments(call), ensure_ascii=False)
                body += f'\n<tool_call>\n{{"name": "{name}", "arguments": {args}}}\n</tool_call>'
            out += [("", 1), (f"assistant{body}", 1), ("\n", 0)]
        else:
            out += [("", 1), (f"{role}\n{body}", 1), ("\n", 0)]
    out += [("", 1), ("assistant\n", 0)]
    return out


def _llama3(messages: Sequence[Message], tools: Sequence[Any] | None) -> list[Segment]:
    first_system = bool(messages) and messages[0].get("role") == "system"
    system = _LLAMA_SYSTEM + (_text(messages[0].get("content")) if first_system else "")
    if tools:
        system = "Environment: ipython\n" + system
    out: list[Segment] = [("", 2), ("system", 1), (f"\n\n{system}", 1)]
    tools_pending = bool(tools)
    for index, message in enumerate(messages):
        role = message.get("role")
        if index == 0 and first_system:
            continue
        body = _text(message.get("content"))
        if role == "tool":
            role, body = "ipython", body
        elif role == "user" and tools_pending:
            tools_pending = False
            body = _LLAMA_TOOLS + "".join(json.dumps(t, indent=4, ensure_ascii=False) + "\n\n" for t in tools or ()) + body
        elif role == "assistant" and message.get("tool_calls"):
            calls = [
                json.dumps({"name": c.get("function", {}).get("name"), "parameters": _arguments(c)}, ensure_ascii=False)
                for c in message["tool_calls"]
            ]
            body = "; ".join(calls)
        out += [("", 1), (role, 1), (f"\n\n{body}", 1)]
    out += [("", 1), ("assistant", 1), ("\n\n", 0)]
    return out


def _deepseek(messages: Sequence[Message], tools: Sequence[Any] | None) -> list[Segment]:
    first_system = bool(messages) and messages[0].get("role") == "system"
    system = _text(messages[0].get("content")) if first_system else ""
    if tools:
        system += "\n\n## Tools\n\n### Function\n\nYou have the following functions available:\n\n"
        system += "".join(
            f"- `{t.get('function', {}).get('name')}`:\n```json\n{json.dumps(t.get('function', t), ensure_ascii=False)}\n```\n"
            for t in tools
        )
    out: list[Segment] = [("", 1), (system, 0)]
    in_outputs = False
    for index, message in enumerate(messages):
        role = message.get("role")
        if index == 0 and first_system:
            continue
        body = _text(message.get("content"))
        if role != "tool" and in_outputs:
            out.append(("", 1))  # <｜tool▁outputs▁end｜>
            in_outputs = False
        if role == "user":
            out += [("", 1), (body, 0)]
        elif role == "assistant" and message.get("tool_calls"):
            out += [("", 1), (body, 1)]  # <｜Assistant｜> … <｜tool▁calls▁begin｜>
            for call in message["tool_calls"]:
                name = call.get("function", {}).get("name")
                args = json.dumps(_arguments(call), ensure_ascii=False)
                out += [("", 1), ("function", 1), (f"{name}\n```json\n{args}\n```", 1)]
            out += [("", 2)]  # <｜tool▁calls▁end｜><｜end▁of▁sentence｜>
        elif role == "assistant":
            out += [("", 1), (body, 1)]
        elif role == "tool":
            out += [("", 0 if in_outputs else 1), ("", 1), (body, 1)]
            in_outputs = True
        else:
            out += [(body, 0)]
    if in_outputs:
        out.append(("", 1))
    out += [("", 1)]  # <｜Assistant｜>
    return out


_GEMMA_TOOLS = (
    "You have access to functions. If you decide to invoke any of the function(s), you MUST put it in the "
    "format of\n[func_name1(params_name1=params_value1, params_name2=params_value2...), func_name2(params)]\n\n"
    "You SHOULD NOT include any other text in the response if you call a function\n"
)


def _gemma3(messages: Sequence[Message], tools: Sequence[Any] | None) -> list[Segment]:
    first_system = bool(messages) and messages[0].get("role") == "system"
    prefix = _text(messages[0].get("content")) + "\n\n" if first_system else ""
    if tools:
        prefix = _GEMMA_TOOLS + json.dumps([t.get("function", t) for t in tools], indent=2, ensure_ascii=False) + "\n\n" + prefix
    out: list[Segment] = [("", 1)]  # <bos>
    for message in messages[1:] if first_system else messages:
        role = message.get("role")
        body = _text(message.get("content")).strip()
        if role == "assistant" and message.get("tool_calls"):
            calls = ", ".join(
                f"{c.get('function', {}).get('name')}("
                + ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in (_arguments(c) or {}).items())
                + ")" if isinstance(_arguments(c) or {}, Mapping) else str(_arguments(c))
                for c in message["tool_calls"]
            )
            body = (body + "\n" if body else "") + f"```tool_code\n[{calls}]\n```"
        elif role == "tool":
            role, body = "user", f"```tool_output\n{body}\n```"
        role = "model" if role == "assistant" else role
        out += [("", 1), (f"{role}\n{prefix}{body}", 1), ("\n", 0)]  # <start_of_turn> … <end_of_turn>
        prefix = ""
    out += [("", 1), ("model\n", 0)]
    return out


TEMPLATES = ("chatml", "chatml-qwen2.5", "llama3", "deepseek", "gemma3")


def render(template: str, messages: Sequence[Message], tools: Sequence[Any] | None = None) -> list[Segment]:
    """The segments of a chat request (generation prompt included) in ``template``."""
    if template == "chatml":
        return _chatml(messages, tools, None)
    if template == "chatml-qwen2.5":
        return _chatml(messages, tools, QWEN25_DEFAULT_SYSTEM)
    if template == "llama3":
        return _llama3(messages, tools)
    if template == "deepseek":
        return _deepseek(messages, tools)
    if template == "gemma3":
        return _gemma3(messages, tools)
    raise ValueError(f"unknown chat template {template!r}; expected one of {TEMPLATES}")

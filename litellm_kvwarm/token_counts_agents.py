"""Request collection for the agent APIs: Anthropic Messages and OpenAI Responses bodies (pure).

Both are counted as the chat messages LiteLLM and vLLM turn them into, so the calibrated weights
of :mod:`litellm_kvwarm.token_estimators` (fitted on chat templates) apply unchanged:

* **Anthropic Messages** (``/v1/messages``, LiteLLM call type ``anthropic_messages``): ``system``
  (a string or text blocks) is one more message; each of ``messages`` is one message whose
  ``content`` (a string or blocks: :mod:`litellm_kvwarm.token_blocks`) is counted block by block;
  ``tools`` by the JSON text of the chat function LiteLLM makes of them (``input_schema`` →
  ``parameters``; server tools without one as sent; ``cache_control`` never). LiteLLM's bridge to
  ``/v1/chat/completions`` (``LiteLLMMessagesToCompletionTransformationHandler``, 1.108) turns
  each ``tool_result`` block into a ``tool`` message (its ``tool_use_id`` counted, as chat counts
  ``tool_call_id``) and ``tool_use`` blocks into the same message's ``tool_calls``: the messages
  counted are the chat messages it makes (:func:`_message_count`).
* **Tool calls** (``tool_use``, ``function_call``, ``custom_tool_call``) are counted as the templates
  render them, ``{"name":…,"arguments":…}`` (:func:`call_text`): the wrapper costs tokens in every
  template, and without it 60 short tool round trips read 0.66–0.9× the truth (safe).
* **Responses** (``/v1/responses``, call type ``aresponses``): ``instructions`` is the system
  message; ``input`` is a string (one user message) or items: ``message`` items (``content`` a
  string or ``input_text``/``output_text``/``input_image`` parts), ``function_call`` (``name`` and
  ``arguments``), ``custom_tool_call`` (its ``input`` as LiteLLM sends it, ``{"content": input}``),
  ``function_call_output``, ``custom_tool_call_output``, ``computer_call_output`` and ``tool_result``
  (``call_id`` and ``output``: text or parts, a computer call's screenshot as media on LiteLLM 1.109.3, else its JSON text, as
  LiteLLM sends a dict or a list with no text or image part: :func:`_is_parts`, :func:`_tool_output`), ``reasoning`` (``summary`` and
  ``content`` text; ``encrypted_content`` counts nothing), ``item_reference`` nothing (it names an
  item the server holds; the request is server state, :attr:`~.view.PreCallView.server_state`),
  any other item (``web_search_call``, ``mcp_list_tools``, ...) as an unknown block of
  :mod:`~litellm_kvwarm.token_blocks` without its ids: its key names and leaves, media inside it
  (a screenshot's ``image_url``) priced as media, never as base64 text. Each item is one message
  (vLLM 0.32 ``serving_responses`` renders each as a chat message; routing counts a call folded
  into the assistant message before it as LiteLLM's bridge does, :func:`~.token_responses_items.folds_into_previous`);
  a lone item sent as a dict is one item. ``tools`` by the JSON text of their chat shape (function and custom tools as chat functions,
  a custom tool with the ``{"content": string}`` schema LiteLLM gives it; built-ins as sent);
  a ``text.format`` schema (structured output) by its JSON text, like chat's ``response_format``, in
  the safe estimate only (:attr:`~litellm_kvwarm.request_counts.RequestCounts.format_parts`).

Never raises on odd input (same contract as :func:`litellm_kvwarm.token_counts.count_request`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

from . import litellm_version
from .deep_json import lenient_json_text as _json_text
from .deep_json import unescaped_json
from .request_counts import RequestCounts
from .token_blocks import Collected, collect_blocks, collect_unknown
from .token_reasoning import last_user_index
from .token_responses_items import folds_into_previous
from .token_responses_items import rendered as _rendered

__all__ = ["AGENT_COUNTERS", "call_text", "count_anthropic_messages", "count_responses"]

_TOOL_USES = frozenset({"tool_use", "server_tool_use", "mcp_tool_use"})
#: Responses item keys that are identifiers or state, never rendered into the prompt.
_ITEM_NOISE = frozenset({"id", "call_id", "status", "type", "encrypted_content", "role"})


def _as_list(raw: object) -> list | tuple:
    """``messages`` / ``input`` as a list: a lone message (a dict) is one message, not nothing."""
    return raw if isinstance(raw, list) else [raw] if isinstance(raw, Mapping) else ()


def call_text(name: object, arguments: str) -> str:
    """A tool call as the chat templates render it (``{"name": ..., "arguments": ...}``, Qwen/Hermes):
    the name and arguments with the wrapper text each call costs in every template."""
    name = name if isinstance(name, str) else "" if name is None else _json_text(name)
    return '{"name":' + _json_text(name) + ',"arguments":' + arguments + "}"


_TEXT_PARTS = ("input_text", "output_text", "text")
_IMAGE_PARTS = ("input_image", "image_url")


def _is_parts(output: object) -> bool:
    """Whether LiteLLM's Responses → chat bridge sends a tool output as text or content parts (1.108.7
    ``_normalize_function_call_output_to_tool_content``): a string, or a list with a text part (a
    non-empty string ``text``) or an image part (an ``image_url`` / ``url``). Anything else (a dict, even a
    typed part; a list of strings, files or unknown parts) it sends as its JSON text (vLLM's own
    ``/v1/responses`` refuses a dict): a screenshot sent as a lone ``input_image`` dict is base64 text there."""
    if isinstance(output, str) or output is None:
        return True
    return isinstance(output, list) and any(
        isinstance(p, Mapping) and ((p.get("type") in _TEXT_PARTS and isinstance(p.get("text"), str) and p["text"])
                                    or (p.get("type") in _IMAGE_PARTS and (p.get("image_url") or p.get("url"))))
        for p in output)


def _anthropic_tool(tool: Mapping) -> Mapping:
    """An Anthropic tool as LiteLLM's bridge sends it: a chat function (``input_schema`` → ``parameters``)."""
    if "input_schema" not in tool:  # a server tool (computer use, bash, text editor): as sent
        return {k: v for k, v in tool.items() if k != "cache_control"}
    function = {k: v for k, v in tool.items() if k not in ("input_schema", "cache_control", "type")}
    function["parameters"] = tool["input_schema"]
    return {"type": "function", "function": function}


def _responses_tool(tool: Mapping) -> Mapping:
    """A Responses tool as the chat request renders it: a ``function`` or ``custom`` tool as a chat
    function (LiteLLM gives a custom tool a ``{"content": string}`` schema and its format in the
    description); built-in tools (web search, computer use, ...) as sent."""
    kind = tool.get("type")
    if kind == "function":
        return {"type": "function", "function": {k: v for k, v in tool.items() if k != "type"}}
    if kind != "custom":
        return tool
    name, fmt = tool.get("name"), tool.get("format")
    description = tool.get("description") if isinstance(tool.get("description"), str) else ""
    if isinstance(fmt, Mapping) and fmt.get("definition"):
        description += f"\n\nFormat:\n```{fmt.get('syntax') or ''}\n{fmt.get('definition')}\n```"
    schema = {"type": "object", "properties": {"content": {"type": "string",
              "description": f"The {name} content following the specified format"}}, "required": ["content"]}
    return {"type": "function", "function": {"name": name, "description": description, "parameters": schema}}


def _chat_tools(tools: object, convert: Callable[[Mapping], Mapping]) -> object:
    """``tools`` in the chat shape the calibrated weights were fitted on (anything odd: as sent)."""
    if not isinstance(tools, list):
        return tools
    return [convert(t) if isinstance(t, Mapping) else t for t in tools]


def _message_count(content: object) -> int:
    """Chat messages LiteLLM's bridge makes of one Anthropic message: one ``tool`` message per
    ``tool_result`` block, plus one for the rest (text, images, ``tool_use`` blocks, which become the
    same message's ``tool_calls``) unless nothing else is left."""
    if not isinstance(content, list):
        return 1
    results = sum(1 for block in content if isinstance(block, Mapping) and block.get("type") == "tool_result")
    return results + (1 if results < len(content) or not results else 0)


def _finish(into: Collected, messages: int, tools: object, output_format: object = None) -> RequestCounts:
    n_tools = 0
    fmt = ()
    if isinstance(output_format, Mapping) and output_format.get("type") not in (None, "text"):
        fmt = (_json_text(output_format),)  # a schema some servers render, like chat's response_format: safe only
    if tools:
        into.parts.append(_json_text(tools))
        n_tools = len(tools) if isinstance(tools, list) else 1
    return RequestCounts(
        chars=sum(map(len, into.parts)), messages=messages, other_parts=into.other, tools=n_tools,
        parts=into.parts, images=tuple(into.images), media=tuple(into.media), format_parts=fmt,
        past_reasoning=tuple(into.past_reasoning),
    )


def count_anthropic_messages(payload: Mapping[str, object], *, reasoning_rendered: bool = True) -> RequestCounts:
    """Counts of an Anthropic Messages body (see the module docstring)."""
    into = Collected()
    messages = 0
    system = payload.get("system")
    if system:
        collect_blocks(system, into)
        messages += 1
    raw = _as_list(payload.get("messages"))
    last_user = last_user_index(raw, "messages") if reasoning_rendered else len(raw)
    for index, message in enumerate(raw):
        content = message.get("content") if isinstance(message, Mapping) else message
        messages += _message_count(content)
        if isinstance(content, list):
            start = len(into.parts)
            for block in content:
                mark = len(into.parts)
                _anthropic_block(block, index < last_user, into)
                if start < mark < len(into.parts):
                    into.parts.insert(mark, "\n")  # two blocks' texts: joined as vLLM joins a content list's parts
        else:
            collect_blocks(content, into)
    return _finish(into, messages, _chat_tools(payload.get("tools"), _anthropic_tool))


def _anthropic_block(block: object, past: bool, into: Collected) -> None:
    """One block of a Messages ``content`` list (``past``: before the last user message)."""
    kind = block.get("type") if isinstance(block, Mapping) else None
    kind = kind if isinstance(kind, str) else None  # a list or dict sent as a type: unknown, not an error
    if kind == "thinking" and past:  # past reasoning: no template renders it
        thought = block.get("thinking")  # type: ignore[union-attr]
        into.past_reasoning.extend((thought,) if isinstance(thought, str) else ())
    elif kind in _TOOL_USES:
        into.parts.append(call_text(block.get("name"), _json_text(block.get("input"))))  # type: ignore[union-attr]
    else:
        if kind == "tool_result" and isinstance(block.get("tool_use_id"), str):  # type: ignore[union-attr]
            into.parts.append(block["tool_use_id"])  # type: ignore[index]  # the chat ``tool`` message's tool_call_id
        collect_blocks(block, into)


def count_responses(payload: Mapping[str, object], *, reasoning_rendered: bool = True) -> RequestCounts:
    """Counts of a Responses body (see the module docstring)."""
    into = Collected()
    messages = folded = 0
    instructions = payload.get("instructions")
    if instructions:
        collect_blocks(instructions, into)
        messages += 1
    raw = payload.get("input")
    if isinstance(raw, str):
        into.parts.append(raw)
        messages += 1
    elif isinstance(raw, (list, Mapping)):
        items = _as_list(raw)
        last_user = last_user_index(items, "responses") if reasoning_rendered else len(items)
        previous: object = None
        for index, item in enumerate(items):
            if isinstance(item, Mapping) and item.get("type") == "item_reference":
                continue  # a reference to an item the server holds: it renders nothing here (~0 tokens)
            messages += 1
            folded += folds_into_previous(item, previous)
            previous = item if _rendered(item) else previous  # an item the bridge drops folds nothing
            if index < last_user and isinstance(item, Mapping) and item.get("type") == "reasoning":
                past = Collected()  # past reasoning: no template renders it (:mod:`.token_reasoning`)
                _item(item, past)
                into.past_reasoning.extend(past.parts)
                continue
            _item(item, into)
    text = payload.get("text")
    counts = _finish(into, messages, _chat_tools(payload.get("tools"), _responses_tool),
                     text.get("format") if isinstance(text, Mapping) else None)
    return replace(counts, folded_messages=folded) if folded else counts


def _item(item: object, into: Collected) -> None:
    if not isinstance(item, Mapping):
        into.text(item)
        return
    kind = item.get("type")
    if kind in (None, "message"):
        collect_blocks(item.get("content"), into)
    elif kind == "function_call":
        arguments = item.get("arguments")
        into.parts.append(call_text(item.get("name"), unescaped_json(arguments) if isinstance(arguments, str) else _json_text(arguments)))
    elif kind == "custom_tool_call":  # LiteLLM sends the free-form input as {"content": input}
        into.parts.append(call_text(item.get("name"), _json_text({"content": item.get("input")})))
    elif kind in _TOOL_OUTPUTS:
        _tool_output(item, into)
    elif kind == "reasoning":
        collect_blocks(item.get("summary"), into)
        collect_blocks(item.get("content"), into)
    else:  # other items (web_search_call, mcp_list_tools, ...): read as an unknown block
        collect_unknown({k: v for k, v in item.items() if k not in _ITEM_NOISE}, into)


#: Items LiteLLM 1.108.7's Responses → chat bridge sends as a ``tool`` message of their ``call_id`` and
#: ``output`` (``_is_input_item_tool_call_output``).
_TOOL_OUTPUTS = ("function_call_output", "custom_tool_call_output", "computer_call_output", "tool_result")  # a tuple: a list type is no error


#: A ``computer_call_output``'s output that is one media part (its screenshot): LiteLLM 1.109.3's bridge sends it as
#: that media (``decode_responses_media``: ``input_image``, ``image_url`` and ``computer_screenshot`` with a URL,
#: ``input_audio``, ``input_file``), 1.108.7's as its JSON text (the base64 as text). Each is counted as the installed
#: LiteLLM sends it (:data:`SCREENSHOT_AS_MEDIA_SINCE`): priced as the media on 1.108.7, a 30 KB screenshot had read
#: safe 0.22-0.24x the truth (~27k tokens of base64 text; ``tests/lab/test_agent_loops_truth.py``). A
#: ``function_call_output``'s lone media dict keeps its JSON text (both versions' bridges; measured in
#: ``tests/lab/test_agent_loops_truth.py``).
SCREENSHOT_AS_MEDIA_SINCE = (1, 109, 3)
_MEDIA_OUTPUTS = frozenset({"input_image", "image_url", "computer_screenshot", "input_audio", "input_file", "file"})


def _tool_output(item: Mapping, into: Collected) -> None:
    """A tool output item as the bridge's ``tool`` message: its ``call_id`` (chat counts the
    ``tool_call_id``) and ``output``: text or parts (:func:`_is_parts`), a ``computer_call_output``'s one media part as
    that media where the installed LiteLLM sends it so (:data:`SCREENSHOT_AS_MEDIA_SINCE`), else its JSON text, as LiteLLM (1.108.7
    ``_normalize_function_call_output_to_tool_content``) ``json.dumps`` a dict. A ``tool_result`` item's
    Anthropic-style ``content`` (the bridge reads only ``output``) is counted on top, as blocks: safe stays
    above what any server renders of it."""
    if isinstance(item.get("call_id"), str):
        into.parts.append(item["call_id"])
    output = item.get("output")
    if _is_parts(output) or (item.get("type") == "computer_call_output" and isinstance(output, Mapping)
                             and isinstance(output.get("type"), str) and output["type"] in _MEDIA_OUTPUTS and litellm_version.at_least(SCREENSHOT_AS_MEDIA_SINCE)):
        collect_blocks(output, into)
    else:  # a dict or a list of plain values: LiteLLM sends its JSON text
        into.text(output)
    if item.get("type") == "tool_result":
        collect_blocks(item.get("content"), into)


#: Counters by call kind (:data:`litellm_kvwarm.view.ADAPTERS`).
AGENT_COUNTERS: dict[str, Callable[..., RequestCounts]] = {
    "messages": count_anthropic_messages,
    "responses": count_responses,
}

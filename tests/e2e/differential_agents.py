"""Agent-API bodies for the differential suite: Anthropic Messages and Responses (pure: no I/O).

Contract: :func:`agent_endpoint` ``(seed, index)`` says whether case ``index`` of run ``seed``
is an agent case (``/v1/messages`` about 18%, ``/v1/responses`` about 15%, else ``None``), drawn
from its own ``random.Random`` so every other index keeps the chat / text-completion body it
had before agent cases existed; :func:`make_agent_case` builds that case (deterministic, like
:func:`differential_gen.make_case`).

What varies, beside the size classes and text kinds of :mod:`differential_gen`:

* Messages (what Claude Code sends): ``system`` as a string or text blocks (with
  ``cache_control``), plain text turns, multi-turn, ``tool_use`` / ``tool_result`` round trips
  (results as a string, text blocks, or blocks with an image), ``thinking`` and
  ``redacted_thinking`` blocks, base64 PNG images of small sizes, ``tools`` with
  ``input_schema``, ``tool_choice``; ``max_tokens`` (required by the API) from 1 to the window.
* Responses (what Codex-style clients send): ``input`` as a string or items (``message`` with
  ``input_text`` / ``output_text`` / ``input_image`` parts, ``function_call``,
  ``function_call_output``, ``reasoning`` with a summary and sometimes ``encrypted_content``),
  ``instructions``, function ``tools``, ``max_output_tokens`` or none, sometimes
  ``previous_response_id`` (nothing is stored: a 404 from the backend).
* Malformations (about 38% of bodies, one or two each): wrong types, missing fields, unknown
  block / item / part types, odd budgets (0, -5, "many", missing, huge), odd ``stream``,
  unknown models, junk and forged ``kvwarm_*`` metadata, deep nesting; 1.5% invalid JSON.
"""

from __future__ import annotations

import json
import random
from typing import Any

from litellm_kvwarm.lab.images import png_data_url

import differential_gen as gen

__all__ = ["AGENT_ENDPOINTS", "MESSAGES", "RESPONSES", "agent_endpoint", "make_agent_case"]

MESSAGES = "/v1/messages"
RESPONSES = "/v1/responses"
AGENT_ENDPOINTS = (MESSAGES, RESPONSES)
MESSAGES_SHARE, RESPONSES_SHARE = 0.18, 0.15
_IMAGE_SIZES = ((8, 8), (16, 16), (64, 48), (120, 90), (300, 200))


def agent_endpoint(seed: int, index: int) -> str | None:
    """``MESSAGES``, ``RESPONSES`` or ``None`` (a chat / text-completion case) for this case."""
    roll = random.Random(f"kvwarm-differential-agent:{seed}:{index}").random()
    return MESSAGES if roll < MESSAGES_SHARE else RESPONSES if roll < MESSAGES_SHARE + RESPONSES_SHARE else None


def _png(rng: random.Random) -> tuple[str, str]:
    """(data URL, bare base64) of a small PNG."""
    url = png_data_url(*rng.choice(_IMAGE_SIZES))
    return url, url.split(",", 1)[1]


def _pieces(rng: random.Random, text: str, count: int) -> list[str]:
    step = max(1, len(text) // count)
    return [text[i * step:(i + 1) * step] or "go on" for i in range(count - 1)] + [text[(count - 1) * step:] or "go on"]


def _budget(rng: random.Random, tags: list[str], size: int, name: str, *, optional: bool) -> Any:
    """A valid output budget (``None``: absent, only where the API allows it)."""
    roll = rng.random()
    if optional and roll < 0.3:
        return None
    if roll < 0.78:
        value = rng.choice((8, 16, 32, 64, 128, 256, 512, 1024))
    elif roll < 0.85:
        value = 1
    elif roll < 0.97:
        value = max(1, gen.FAST_WINDOW - size + rng.choice((-400, -50, 0, 1, 50, 300, 2_000)))
        value = min(value, rng.choice((2_048, 4_096, 8_192)))
    else:
        value = rng.choice((gen.FAST_WINDOW, gen.FAST_WINDOW - 100, 12_000))
    tags.append(f"{name}={value}")
    return value


# ------------------------------------------------------------------ Anthropic Messages

def _m_tools(rng: random.Random, count: int) -> list[dict[str, Any]]:
    return [{"name": f"tool_{i}", "description": gen._text(rng, "english", rng.randint(5, 30)),
             "input_schema": {"type": "object", "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}},
                              "required": ["path"]}} for i in range(count)]


def _m_result_content(rng: random.Random, text: str, tags: list[str]) -> Any:
    roll = rng.random()
    if roll < 0.45:
        return text
    blocks: list[dict[str, Any]] = [{"type": "text", "text": piece} for piece in _pieces(rng, text, rng.randint(1, 3))]
    if roll > 0.85:
        blocks.append({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": _png(rng)[1]}})
        tags.append("tool_result_image")
    tags.append("tool_result=blocks")
    return blocks


def _m_assistant_blocks(rng: random.Random, calls: list[str], tags: list[str]) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    roll = rng.random()
    if roll < 0.3:
        blocks.append({"type": "thinking", "thinking": gen._text(rng, "english", rng.randint(5, 60)),
                       "signature": "sig-" + "x" * rng.randint(10, 80)})
        tags.append("thinking")
    elif roll < 0.4:
        blocks.append({"type": "redacted_thinking", "data": "EmwKAhgB" + "Q" * rng.randint(20, 200)})
        tags.append("redacted_thinking")
    if rng.random() < 0.3:
        blocks.append({"type": "text", "text": gen._text(rng, "english", rng.randint(3, 30))})
    for call in calls:
        blocks.append({"type": "tool_use", "id": call, "name": "tool_0",
                       "input": {"path": f"src/{gen._text(rng, 'english', 2).replace(' ', '_')}.py"}})
    return blocks


def _messages_list(rng: random.Random, text: str, size: int, tags: list[str]) -> list[dict[str, Any]]:
    shape = rng.random()
    if shape < 0.3:
        roll = rng.random()
        if roll < 0.55:
            content: Any = text
        else:
            content = [{"type": "text", "text": piece} for piece in _pieces(rng, text, rng.randint(1, 2))]
            if roll > 0.8:
                content.insert(rng.randrange(len(content) + 1), {"type": "image", "source": {
                    "type": "base64", "media_type": "image/png", "data": _png(rng)[1]}})
                tags.append("image")
            tags.append("content=blocks")
        return [{"role": "user", "content": content}]
    if shape < 0.5 and size > 200:
        turns = rng.randint(2, 6)
        out: list[dict[str, Any]] = []
        for i, piece in enumerate(_pieces(rng, text, turns)):
            if i:
                out.append({"role": "assistant", "content": gen._text(rng, "english", rng.randint(3, 40))})
            out.append({"role": "user", "content": piece})
        tags.append(f"turns={turns}")
        return out
    # tool round trips: the text spread over the tool results (an agent reading files)
    rounds = 1 if shape < 0.8 or size < 500 else rng.randint(2, 5)
    out = [{"role": "user", "content": gen._text(rng, "english", rng.randint(5, 40))}]
    for r, piece in enumerate(_pieces(rng, text, rounds)):
        calls = [f"toolu_{r:02d}_{i}" for i in range(1 if rng.random() < 0.8 else rng.randint(2, 3))]
        out.append({"role": "assistant", "content": _m_assistant_blocks(rng, calls, tags)})
        results = [{"type": "tool_result", "tool_use_id": call,
                    "content": _m_result_content(rng, piece, tags) if i == 0 else "ok"} for i, call in enumerate(calls)]
        if rng.random() < 0.1:
            results[0]["is_error"] = True
        out.append({"role": "user", "content": results})
    tags.append(f"tool_rounds={rounds}")
    return out


def _messages_body(rng: random.Random, text: str, size: int, tags: list[str]) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "fast"}
    roll = rng.random()
    if roll < 0.4:
        body["system"] = gen._text(rng, "english", rng.randint(5, 120))
        tags.append("system=string")
    elif roll < 0.6:
        body["system"] = [{"type": "text", "text": gen._text(rng, "english", rng.randint(5, 80))}
                          for _ in range(rng.randint(1, 2))]
        if rng.random() < 0.5:
            body["system"][-1]["cache_control"] = {"type": "ephemeral"}
        tags.append("system=blocks")
    body["messages"] = _messages_list(rng, text, size, tags)
    if any(m["role"] == "assistant" and isinstance(m["content"], list) for m in body["messages"]) or rng.random() < 0.2:
        body["tools"] = _m_tools(rng, rng.randint(1, 4))
        tags.append(f"tools={len(body['tools'])}")
        if rng.random() < 0.3:
            body["tool_choice"] = rng.choice(({"type": "auto"}, {"type": "any"}, {"type": "tool", "name": "tool_0"}))
            tags.append("tool_choice")
    body["max_tokens"] = _budget(rng, tags, size, "max_tokens", optional=False)
    if rng.random() < 0.1:
        body["temperature"] = rng.choice((0, 0.5, 1.0))
    if rng.random() < 0.05:
        body["stop_sequences"] = ["\n\nHuman:"]
    if rng.random() < 0.05:
        body["metadata"] = {"user_id": f"user-{rng.randrange(100)}"}
    return body


# ------------------------------------------------------------------ Responses

def _r_tools(rng: random.Random, count: int) -> list[dict[str, Any]]:
    return [{"type": "function", "name": f"tool_{i}", "description": gen._text(rng, "english", rng.randint(5, 30)),
             "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}
            for i in range(count)]


def _r_user(rng: random.Random, text: str, tags: list[str]) -> dict[str, Any]:
    if rng.random() < 0.3:
        return {"type": "message", "role": "user", "content": text} if rng.random() < 0.5 else {"role": "user", "content": text}
    parts: list[dict[str, Any]] = [{"type": "input_text", "text": piece} for piece in _pieces(rng, text, rng.randint(1, 2))]
    if rng.random() < 0.15:
        parts.append({"type": "input_image", "image_url": _png(rng)[0]})
        tags.append("input_image")
    return {"type": "message", "role": "user", "content": parts}


def _r_input(rng: random.Random, text: str, size: int, tags: list[str]) -> Any:
    shape = rng.random()
    if shape < 0.3:
        tags.append("input=string")
        return text
    if shape < 0.5:
        return [_r_user(rng, text, tags)]
    if shape < 0.62 and size > 200:
        items: list[dict[str, Any]] = []
        turns = rng.randint(2, 5)
        for i, piece in enumerate(_pieces(rng, text, turns)):
            if i:
                items.append({"type": "message", "role": "assistant", "content": [
                    {"type": "output_text", "text": gen._text(rng, "english", rng.randint(3, 40))}]})
            items.append(_r_user(rng, piece, tags))
        tags.append(f"turns={turns}")
        return items
    rounds = 1 if shape < 0.85 or size < 500 else rng.randint(2, 5)
    items = [_r_user(rng, gen._text(rng, "english", rng.randint(5, 40)), tags)]
    for r, piece in enumerate(_pieces(rng, text, rounds)):
        if rng.random() < 0.3:
            reasoning = {"type": "reasoning", "id": f"rs_{r}", "summary": [
                {"type": "summary_text", "text": gen._text(rng, "english", rng.randint(3, 30))}]}
            if rng.random() < 0.3:
                reasoning["encrypted_content"] = "gAAAA" + "z" * rng.randint(20, 300)
                tags.append("encrypted_content")
            items.append(reasoning)
            tags.append("reasoning")
        items.append({"type": "function_call", "call_id": f"call_{r:02d}", "name": "tool_0",
                      "arguments": json.dumps({"path": f"src/file_{r}.py"})})
        items.append({"type": "function_call_output", "call_id": f"call_{r:02d}", "output": piece})
    tags.append(f"tool_rounds={rounds}")
    return items


def _responses_body(rng: random.Random, text: str, size: int, tags: list[str]) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "fast", "input": _r_input(rng, text, size, tags)}
    if rng.random() < 0.5:
        body["instructions"] = gen._text(rng, "english", rng.randint(5, 120))
        tags.append("instructions")
    if isinstance(body["input"], list) and any(i.get("type") == "function_call" for i in body["input"]) \
            or rng.random() < 0.15:
        body["tools"] = _r_tools(rng, rng.randint(1, 4))
        tags.append(f"tools={len(body['tools'])}")
        if rng.random() < 0.2:
            body["tool_choice"] = rng.choice(("auto", "none", "required"))
    value = _budget(rng, tags, size, "max_output_tokens", optional=True)
    if value is not None:
        body["max_output_tokens"] = value
    if rng.random() < 0.05:
        body["previous_response_id"] = f"resp_{rng.randrange(10**8):08d}"
        tags.append("previous_response_id")
    if rng.random() < 0.1:
        body["store"] = False
    if rng.random() < 0.05:
        body["temperature"] = rng.choice((0, 0.7))
    return body


# ------------------------------------------------------------------ malformations

def _odd_budget(rng: random.Random, tags: list[str]) -> Any:
    value = rng.choice((0, 0, -5, -5, "many", "100", 100_000, 10**9, gen.SLOW_WINDOW + 1, 12.5, 100.0, True, None,
                        [16], "missing"))
    tags.append(f"odd_budget={value!r}")
    return value


def _mutate_messages(rng: random.Random, body: dict[str, Any], tags: list[str]) -> str:
    msgs = body.get("messages") if isinstance(body.get("messages"), list) else []
    last = msgs[-1] if msgs and isinstance(msgs[-1], dict) else None
    choice = rng.choice(("budget", "budget", "budget", "content_type", "block_unknown", "block_fields", "role",
                         "messages_shape", "system_type", "tools", "stream", "model", "metadata", "deep",
                         "orphan_result", "image_bad", "thinking_param"))
    if choice == "budget":
        value = _odd_budget(rng, tags)
        if value == "missing":
            body.pop("max_tokens", None)
        else:
            body["max_tokens"] = value
    elif choice == "content_type" and last is not None:
        last["content"] = rng.choice((None, 42, {"type": "text", "text": "hi"}, [], ""))
    elif choice == "block_unknown" and last is not None:
        content = last["content"] if isinstance(last.get("content"), list) else [{"type": "text", "text": str(last.get("content"))}]
        last["content"] = content + [rng.choice(({"type": "hologram", "data": 1}, {"type": "document", "source": {
            "type": "text", "media_type": "text/plain", "data": "a document"}}, {"type": "server_tool_use"}, "bare"))]
    elif choice == "block_fields" and last is not None:
        last["content"] = [rng.choice(({"type": "text"}, {"type": "text", "text": 12345}, {"text": "no type"},
                                       {"type": "tool_result"}, {"type": "tool_use", "name": "x"},
                                       {"type": "image", "source": {"type": "base64"}}))]
    elif choice == "role" and msgs:
        msgs.insert(rng.randrange(len(msgs) + 1), {"role": rng.choice(("system", "tool", "robot", None, 7)), "content": "odd"})
    elif choice == "messages_shape":
        shape = rng.choice(("string", "empty", "dict", "missing", "none"))
        body["messages"] = {"string": "hello", "empty": [], "dict": {"role": "user", "content": "hi"},
                            "none": None}.get(shape)
        if shape == "missing":
            body.pop("messages")
        choice = f"messages={shape}"
    elif choice == "system_type":
        body["system"] = rng.choice((42, ["a", "b"], {"type": "text", "text": "sys"}, [{"type": "image"}]))
    elif choice == "tools":
        body["tools"] = rng.choice(([{"name": "t"}], [{"name": "t", "input_schema": "{bad"}], "all", [],
                                    [{"type": "function", "function": {"name": "openai_style"}}],
                                    [{"type": "web_search_20250305", "name": "web_search"}]))
    elif choice == "stream":
        body["stream"] = rng.choice(("yes", None, 1))
    elif choice == "model":
        model = rng.choice(gen.UNKNOWN_MODELS + (None, 123, "slow", "missing"))
        if model == "missing":
            body.pop("model", None)
        else:
            body["model"] = model
        choice = f"model={model!r}"
    elif choice == "metadata":
        body["metadata"] = rng.choice(({"kvwarm_warm": True, "kvwarm_estimate": 10**9, "kvwarm_replica": "http://127.0.0.1:1/v1"},
                                       "not a dict", [1, 2], {"user_id": 5}))
    elif choice == "deep" and last is not None:
        last["content"] = [{"type": "tool_result", "tool_use_id": "x", "content": gen._deep(rng.choice((50, 300)), {"type": "text", "text": "deep"})}]
    elif choice == "orphan_result" and last is not None:
        last["content"] = [{"type": "tool_result", "tool_use_id": "toolu_nowhere", "content": "orphan"}]
    elif choice == "image_bad" and last is not None:
        last["content"] = [{"type": "text", "text": "look"}, {"type": "image", "source": rng.choice((
            {"type": "base64", "media_type": "image/png", "data": "!!notbase64"},
            {"type": "base64", "media_type": "image/tiff", "data": _png(rng)[1]},
            {"type": "url", "url": "https://example.invalid/cat.png"}))}]
    elif choice == "thinking_param":
        body["thinking"] = rng.choice(({"type": "enabled", "budget_tokens": 1024}, {"type": "enabled"}, "on"))
    else:
        return ""
    return choice


def _mutate_responses(rng: random.Random, body: dict[str, Any], tags: list[str]) -> str:
    items = body.get("input") if isinstance(body.get("input"), list) else None
    choice = rng.choice(("budget", "budget", "budget", "input_type", "item_unknown", "item_fields", "part_unknown",
                         "instructions", "tools", "stream", "model", "metadata", "previous_id", "deep", "text_format"))
    if choice == "budget":
        value = _odd_budget(rng, tags)
        if value == "missing":
            body.pop("max_output_tokens", None)
        else:
            body["max_output_tokens"] = value
    elif choice == "input_type":
        shape = rng.choice(("none", "number", "dict", "empty", "missing", "empty_string"))
        body["input"] = {"none": None, "number": 42, "dict": {"role": "user", "content": "hi"}, "empty": [],
                         "empty_string": ""}.get(shape)
        if shape == "missing":
            body.pop("input")
        choice = f"input={shape}"
    elif choice == "item_unknown" and items is not None:
        items.append(rng.choice(({"type": "hologram"}, {"type": "web_search_call", "id": "ws_1", "status": "completed"},
                                 "bare string", None, {"type": "item_reference", "id": "msg_nowhere"})))
    elif choice == "item_fields" and items is not None:
        items.append(rng.choice(({"type": "message", "content": "no role"}, {"type": "function_call", "name": "f"},
                                 {"type": "function_call_output", "call_id": "call_x", "output": {"k": 1}},
                                 {"type": "function_call_output", "output": "no call id"},
                                 {"type": "reasoning", "summary": "not a list"}, {"role": "user", "content": 42})))
    elif choice == "part_unknown" and items is not None:
        items.append({"type": "message", "role": "user", "content": [rng.choice((
            {"type": "input_hologram", "text": "x"}, {"type": "input_text"}, {"type": "input_text", "text": 5},
            {"type": "input_image"}, {"type": "input_file", "file_data": "data:application/pdf;base64,JVBERi0x"}))]})
    elif choice == "instructions":
        body["instructions"] = rng.choice((42, ["a"], {"x": 1}, ""))
    elif choice == "tools":
        body["tools"] = rng.choice(([{"type": "function", "function": {"name": "chat_style"}}], [{"type": "function"}],
                                    "all", [], [{"type": "web_search_preview"}], [{"type": "hologram"}]))
    elif choice == "stream":
        body["stream"] = rng.choice(("yes", None, 1))
    elif choice == "model":
        model = rng.choice(gen.UNKNOWN_MODELS + (None, 123, "slow", "missing"))
        if model == "missing":
            body.pop("model", None)
        else:
            body["model"] = model
        choice = f"model={model!r}"
    elif choice == "metadata":
        body["metadata"] = rng.choice(({"kvwarm_warm": "true", "kvwarm_estimate": "1000000000"}, "not a dict", [1],
                                       {"k": {"nested": 1}}))
    elif choice == "previous_id":
        body["previous_response_id"] = rng.choice(("", "resp_nowhere", 42))
    elif choice == "deep" and items is not None:
        items.append({"type": "message", "role": "user", "content": gen._deep(rng.choice((50, 300)), {"type": "input_text", "text": "d"})})
    elif choice == "text_format":
        body["text"] = rng.choice(({"format": {"type": "json_object"}}, {"format": "json"}, "text"))
    else:
        return ""
    return choice


_RAW = (b"{not json", b"", b"[1, 2, 3]", b"null", b'{"model": "fast", "messages": [', b'{"model": "fast", "input": ',
        b"\xff\xfe\x00")


def make_agent_case(seed: int, index: int, endpoint: str) -> gen.Case:
    """The agent case ``index`` of run ``seed`` for ``endpoint`` (see module docstring)."""
    rng = random.Random(f"kvwarm-differential-{endpoint}:{seed}:{index}")
    tags: list[str] = []
    headers = gen._headers(rng, seed, tags)
    if rng.random() < 0.015:
        return gen.Case(seed, index, endpoint, None, headers, tuple(tags + ["raw_body"]), 0, rng.choice(_RAW))
    size_name, _, low, high = gen._weighted(rng, gen._SIZES)
    size = rng.randint(low, high)
    kind = gen._weighted(rng, gen._TEXT_KINDS)[0] if size < 20_000 or rng.random() < 0.3 else "english"
    tags += [f"size={size_name}", f"text={kind}"]
    text = gen._text(rng, kind, size)
    build, mutate = (_messages_body, _mutate_messages) if endpoint == MESSAGES else (_responses_body, _mutate_responses)
    body = build(rng, text, size, tags)
    if rng.random() < 0.05:
        body["model"] = "slow"
        tags.append("model='slow'")
    if rng.random() < 0.25:  # agents stream most of the time; a share of valid streams
        body["stream"] = True
        tags.append("stream")
    roll = rng.random()
    mutations = 0 if roll < 0.62 else 1 if roll < 0.9 else 2
    applied = 0
    for _ in range(mutations * 4):
        if applied >= mutations:
            break
        name = mutate(rng, body, tags)
        if name:
            applied += 1
            tags.append(f"mut={name}")
    return gen.Case(seed, index, endpoint, body, headers, tuple(tags), size)

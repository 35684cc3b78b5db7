"""Agent-shaped sessions for end-to-end tests: a coding agent reading files (issue 14).

One conversation, two wire formats built from the same turns:

* Anthropic Messages (what Claude Code sends to ``/v1/messages``): a long ``system`` prompt,
  ``tools`` with ``input_schema``, assistant ``tool_use`` blocks (with a ``thinking`` block on
  the first) and user ``tool_result`` blocks holding the file's text;
* Responses (what Codex-style clients send to ``/v1/responses``): ``instructions``, function
  ``tools``, ``function_call`` / ``function_call_output`` items (with a ``reasoning`` item).

The tool results are real source files of this repository (Python code with its indentation,
docstrings and tables), read in a fixed order, so the text is the kind agents send and the
sizes are reproducible. Each turn adds about ``turn_chars`` characters of tool output.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
SYSTEM = (
    "You are a coding agent working in the user's repository. Read files with the tools before "
    "changing them, keep answers short, and cite file paths. " * 8
)
TOOLS_MESSAGES = [
    {"name": "read_file", "description": "Read a file of the repository.",
     "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}},
    {"name": "grep", "description": "Search the repository for a pattern.",
     "input_schema": {"type": "object", "properties": {"pattern": {"type": "string"}}, "required": ["pattern"]}},
]
TOOLS_RESPONSES = [
    {"type": "function", "name": t["name"], "description": t["description"], "parameters": t["input_schema"]}
    for t in TOOLS_MESSAGES
]


def source_chunks(turn_chars: int) -> Iterator[tuple[str, str]]:
    """``(path, text)`` of about ``turn_chars`` characters each, cut from the package's own
    modules in sorted order (endless: the list repeats)."""
    files = sorted((REPO / "litellm_kvwarm").glob("*.py"))
    buffer, names = "", []
    while True:
        for path in files:
            buffer += path.read_text()
            names.append(path.name)
            while len(buffer) >= turn_chars:
                yield "+".join(names), buffer[:turn_chars]
                buffer, names = buffer[turn_chars:], [path.name]


def turns(n: int, turn_chars: int) -> list[tuple[str, str]]:
    chunks = source_chunks(turn_chars)
    return [next(chunks) for _ in range(n)]


TASK = "Find why the router escalates too early and fix it."


def messages_body(tool_turns: list[tuple[str, str]], *, model: str, max_tokens: int = 256, stream: bool = False,
                  task: str = TASK) -> dict[str, Any]:
    """The Anthropic Messages body after ``len(tool_turns)`` file reads (``task``: the first user
    message, which with the system prompt identifies the session)."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": task}]
    for i, (path, text) in enumerate(tool_turns):
        blocks: list[dict[str, Any]] = []
        if i == 0:
            blocks.append({"type": "thinking", "thinking": "I should read the routing code first.", "signature": "sig-" + "x" * 40})
        blocks.append({"type": "tool_use", "id": f"toolu_{i:04d}", "name": "read_file", "input": {"path": path}})
        messages.append({"role": "assistant", "content": blocks})
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"toolu_{i:04d}", "content": [{"type": "text", "text": text}]}]})
    return {"model": model, "system": SYSTEM, "tools": TOOLS_MESSAGES, "messages": messages,
            "max_tokens": max_tokens, "stream": stream}


def responses_body(tool_turns: list[tuple[str, str]], *, model: str, max_output_tokens: int = 256, stream: bool = False,
                   task: str = TASK) -> dict[str, Any]:
    """The Responses body after ``len(tool_turns)`` file reads."""
    items: list[dict[str, Any]] = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": task}]}]
    for i, (path, text) in enumerate(tool_turns):
        if i == 0:
            # no encrypted_content: vLLM 0.32's /v1/responses rejects it ("Encrypted content is not supported")
            items.append({"type": "reasoning", "id": "rs_0", "summary": [{"type": "summary_text", "text": "Read the routing code first."}]})
        items.append({"type": "function_call", "call_id": f"call_{i:04d}", "name": "read_file", "arguments": f'{{"path": "{path}"}}'})
        items.append({"type": "function_call_output", "call_id": f"call_{i:04d}", "output": text})
    return {"model": model, "instructions": SYSTEM, "tools": TOOLS_RESPONSES, "input": items,
            "max_output_tokens": max_output_tokens, "stream": stream}

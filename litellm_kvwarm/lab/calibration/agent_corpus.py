"""Agent-shaped calibration requests: real material (:mod:`.agent_sources`) in tool results (pure
but for reading the sources).

A request is what a coding/ops agent sends after one to four tool calls: an agent system
prompt, :data:`AGENT_TOOLS` (the schemas), a user task, then for each call an assistant message
with ``tool_calls`` (arguments JSON naming the file, command or URL) and a ``role: "tool"``
result holding the material, cut at a line break. Material of one request is one kind and
comes from documents of one half: documents are split into a *fit* and a *held-out* half by
a hash of their source (:func:`~.dataset.is_held_out`), so no held-out request shares text with
a fitted one. Sizes: log-uniform between :data:`MIN_TOKENS` and :data:`MAX_TOKENS` tokens
(converted to characters with a rough per-kind rate, :data:`CHARS_PER_TOKEN`).

The material is real; the *conversations* are assembled here (labelled ``agent:<kind>``).
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Sequence
from typing import Any

from .agent_sources import AGENT_KINDS, Doc, documents
from .dataset import Request, is_held_out

__all__ = ["AGENT_TOOLS", "CHARS_PER_TOKEN", "agent_requests", "build_request"]

MIN_TOKENS, MAX_TOKENS = 150, 30_000
#: Rough characters per token of each kind, only to aim the sizes (the truth is counted).
CHARS_PER_TOKEN = {
    "code": 3.3, "json": 3.0, "logs": 3.2, "diff": 3.3, "table": 3.8, "prose": 4.3, "cjk": 1.1,
    "cyrillic": 2.8, "arabic": 2.6, "thai/other": 1.6, "symbols": 1.0,
}
REQUESTS_PER_KIND = 140
_FN = {"type": "function"}
AGENT_TOOLS = [
    {**_FN, "function": {"name": "read_file", "description": "Read a text file from the workspace.", "parameters": {
        "type": "object", "properties": {"path": {"type": "string", "description": "Path of the file."},
                                         "start_line": {"type": "integer"}, "end_line": {"type": "integer"}},
        "required": ["path"]}}},
    {**_FN, "function": {"name": "run_command", "description": "Run a shell command and return its output.", "parameters": {
        "type": "object", "properties": {"command": {"type": "string"}, "timeout_s": {"type": "number", "default": 60}},
        "required": ["command"]}}},
    {**_FN, "function": {"name": "fetch_url", "description": "Fetch a web page as text.", "parameters": {
        "type": "object", "properties": {"url": {"type": "string", "format": "uri"}}, "required": ["url"]}}},
    {**_FN, "function": {"name": "search_code", "description": "Search the repository with a regular expression.",
                         "parameters": {"type": "object", "properties": {"pattern": {"type": "string"},
                                                                         "glob": {"type": "string"}},
                                        "required": ["pattern"]}}},
]
SYSTEM_PROMPTS = (
    "You are a coding agent working in a user's repository. Use the tools to read files and run commands; "
    "make the smallest change that fixes the problem, run the tests, and report what you changed.",
    "You are an operations assistant with shell access to a Linux host. Investigate before you act, quote the "
    "evidence you used, and never run destructive commands without asking.",
    "You are a research assistant. Fetch the sources you need, answer in the user's language, and cite each source.",
)
TASKS = {
    "code": "Why does this module fail on Python 3.12? Read it and tell me.",
    "json": "Summarise what this configuration/data file contains and flag anything odd.",
    "logs": "Something broke during the last package upgrade. Check the logs.",
    "diff": "Review the latest changes in this repository.",
    "table": "Read the project's documentation and explain how to install and configure it.",
    "prose": "Fetch the article and give me the main points.",
    "symbols": "Show me the layout of this project and what the output means.",
}


def _call(kind: str, doc: Doc, number: int) -> dict[str, Any]:
    source = doc.source
    if kind in ("code", "table"):
        name, args = "read_file", {"path": source}
    elif kind == "json":
        name, args = "run_command", {"command": f"cat {source.split('#')[0]}"}
    elif kind == "logs":
        name, args = "run_command", {"command": f"sed -n '{source.rsplit(':', 1)[-1]},+150p' {source.rsplit(':', 1)[0]}"}
    elif kind == "diff":
        name, args = "run_command", {"command": f"git show {source.split(':')[1]}"}
    elif kind == "symbols":
        name, args = "run_command", {"command": f"tree -L 4 {source.split(':', 1)[-1]}"}
    else:
        name, args = "fetch_url", {"url": f"https://example.org/{source.replace(':', '/')}"}
    return {"id": f"call_{number}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def _cut(text: str, chars: int) -> str:
    if len(text) <= chars:
        return text
    cut = text.rfind("\n", 0, chars)
    return text[: cut if cut > chars // 2 else chars]


def build_request(kind: str, docs: Sequence[Doc], rng: random.Random, number: int, held_out: bool) -> Request:
    """One agent-shaped request of ``kind`` from ``docs`` (one half's documents of that kind)."""
    tokens = math.exp(rng.uniform(math.log(MIN_TOKENS), math.log(MAX_TOKENS)))
    budget = int(tokens * CHARS_PER_TOKEN[kind])
    calls = rng.randint(1, 4)
    order = rng.sample(range(len(docs)), len(docs))
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": rng.choice(SYSTEM_PROMPTS)},
        {"role": "user", "content": TASKS.get(kind, TASKS["prose"])},
    ]
    used = []
    for i, index in enumerate(order[:calls]):
        doc = docs[index]
        share = budget // (calls - i)
        start = rng.randrange(0, max(1, len(doc.text) - share)) if len(doc.text) > share else 0
        start = doc.text.rfind("\n", 0, start) + 1 if start else 0
        body = _cut(doc.text[start:], max(share, 200))
        budget -= len(body)
        used.append(doc.source)
        call = _call(kind, doc, i)
        thought = None if rng.random() < 0.5 else f"Let me check {doc.source.rsplit('/', 1)[-1][:60]}."
        messages.append({"role": "assistant", "content": thought, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": call["id"], "content": body})
        if budget <= 0:
            break
    half = "held" if held_out else "fit"
    return Request(
        id=f"agent:{kind}:{half}:{number}", conversation=f"agent:{kind}:{half}:{number}", source=f"agent:{kind}",
        payload={"messages": messages, "tools": AGENT_TOOLS}, held_out=held_out, kind=f"agent:{kind}",
    )


def agent_requests(*, per_kind: int = REQUESTS_PER_KIND, docs: Sequence[Doc] | None = None) -> list[Request]:
    """``per_kind`` requests of every kind of :data:`AGENT_KINDS` (half fit, half held out), seeded."""
    docs = documents() if docs is None else docs
    out: list[Request] = []
    for kind in AGENT_KINDS:
        for held_out in (False, True):
            pool = [d for d in docs if d.kind == kind and is_held_out(d.source) == held_out]
            if not pool:
                continue
            rng = random.Random(f"{kind}:{held_out}")
            out.extend(build_request(kind, pool, rng, n, held_out) for n in range(per_kind // 2))
    return out

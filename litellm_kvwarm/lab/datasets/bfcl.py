"""BFCL v4 multi-turn conversations (``bfcl-eval``; Berkeley Function Calling Leaderboard).

Only its data directory and its stdlib-only simulated APIs are used (importing the rest of
``bfcl_eval`` pulls CUDA torch).  ``tools`` are the real function docs of the involved classes
converted to OpenAI tools (:mod:`.bfcl_tools`).  Assistant ``tool_calls`` are the ground-truth
calls from ``possible_answer/``.  **Tool results are produced by executing those calls against
BFCL's own simulated backends** (``GorillaFileSystem``, ``TradingBot``, ... from
``bfcl_eval/eval_checker/multi_turn_eval/func_source_code``), loaded with the entry's
``initial_config`` and ``long_context=True`` for the long-context category, exactly as BFCL's
checker does (results that are dicts are JSON-dumped, others ``str()``-ed, exceptions become
``"Error during execution: ..."``).  The long-context backends return large directory listings,
file contents, order histories, so the conversation grows turn by turn.  Each turn ends with a
short assistant text that is *synthesised* (BFCL has no reference text replies): it names the
calls made.  Raises :class:`~.model.DatasetUnavailable` when ``bfcl-eval`` is not installed.
"""

from __future__ import annotations

import ast
import copy
import functools
import importlib
import inspect
import json
from typing import Any, Iterator

from .bfcl_tools import bfcl_data_dir, bfcl_tools, read_json_lines
from .model import Conversation, Message

__all__ = ["BFCL_CATEGORIES", "bfcl_conversation", "bfcl_conversations"]

BFCL_CATEGORIES = ("multi_turn_base", "multi_turn_long_context")
BFCL_VERSION_PREFIX = "BFCL_v4_"
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
    entries = read_json_lines(data / f"{BFCL_VERSION_PREFIX}{category}.json")
    answers = {
        row["id"]: row["ground_truth"]
        for row in read_json_lines(data / "possible_answer" / f"{BFCL_VERSION_PREFIX}{category}.json")
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

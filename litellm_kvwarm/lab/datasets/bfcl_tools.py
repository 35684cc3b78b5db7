"""BFCL v4's function docs as OpenAI tools (``bfcl-eval``'s data directory, read without importing it).

``bfcl_eval/data/multi_turn_func_doc/*.json`` holds, per simulated API class (``GorillaFileSystem``,
``TradingBot``, ...), one JSON function doc per line; :func:`bfcl_tools` converts them to OpenAI
``tools`` following BFCL's own GORILLA_TO_OPENAPI mapping (``"dict"`` -> ``"object"``, ``"float"`` ->
``"number"``, ``"tuple"`` -> ``"array"``, ``"any"`` -> ``"string"``).  Importing ``bfcl_eval`` itself
would pull CUDA torch, so the package is only located (:func:`bfcl_data_dir`).
"""

from __future__ import annotations

import functools
import importlib.util
import json
from pathlib import Path
from typing import Any

from .model import DatasetUnavailable

__all__ = ["BFCL_FUNC_DOC_FILES", "bfcl_data_dir", "bfcl_tools", "read_json_lines", "to_openai_tool"]

# From bfcl_eval/constants/executable_backend_config.py (copied, not imported: keeps us off bfcl's deps).
BFCL_FUNC_DOC_FILES = {
    "GorillaFileSystem": "gorilla_file_system.json",
    "MathAPI": "math_api.json",
    "MessageAPI": "message_api.json",
    "TwitterAPI": "posting_api.json",
    "TicketAPI": "ticket_api.json",
    "TradingBot": "trading_bot.json",
    "TravelAPI": "travel_booking.json",
    "VehicleControlAPI": "vehicle_control.json",
}
_BFCL_TYPE_MAP = {"dict": "object", "float": "number", "tuple": "array", "int": "integer", "bool": "boolean"}


def bfcl_data_dir() -> Path:
    """``bfcl_eval/data`` of the installed ``bfcl-eval`` (located without importing the package)."""
    spec = importlib.util.find_spec("bfcl_eval")
    if spec is None or not spec.submodule_search_locations:
        raise DatasetUnavailable("BFCL needs the 'bfcl-eval' package (pip install --no-deps 'bfcl-eval==2026.3.23')")
    return Path(list(spec.submodule_search_locations)[0]) / "data"


def read_json_lines(path: Path) -> list[dict[str, Any]]:
    """The JSON documents of a JSON-lines file (blank lines skipped)."""
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
        filename = BFCL_FUNC_DOC_FILES[class_name]
    except KeyError:
        raise ValueError(f"unknown BFCL class {class_name!r}; known: {sorted(BFCL_FUNC_DOC_FILES)}") from None
    return tuple(read_json_lines(bfcl_data_dir() / "multi_turn_func_doc" / filename))


def bfcl_tools(involved_classes: list[str]) -> list[dict[str, Any]]:
    """The OpenAI tools for the involved BFCL classes, in BFCL's order."""
    return [to_openai_tool(doc) for name in involved_classes for doc in _func_docs(name)]


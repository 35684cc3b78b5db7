"""Cells and tables of the benchmark report's Markdown (pure: values in, text out)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["is_real", "met", "num", "table"]


def num(value: Any, spec: str = ".3f", suffix: str = "") -> str:
    """``value`` formatted with ``spec`` and ``suffix``; an en dash for ``None`` (not measured)."""
    if value is None:
        return "–"
    return f"{format(value, spec)}{suffix}"


def met(flag: bool | None) -> str:
    """A target's status cell: met, not met, or not measured (``None``)."""
    return {True: "**met**", False: "**not met**", None: "not measured"}[flag]


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """A Markdown table, one line per row (cells are already text)."""
    return ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|",
            *("| " + " | ".join(r) + " |" for r in rows)]


def is_real(results: Mapping[str, Any]) -> bool:
    """A real engine (``--scale vllm``): no calibrated prefill rate, no time scaling, server-side clocks."""
    return results["meta"]["scale"].get("slow_prefill_tps") is None

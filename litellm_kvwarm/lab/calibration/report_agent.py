"""The report's agent-shaped section: per kind × family on the held-out agent requests (pure text,
plus one optional chart).

Targets (issue 14): safe below the truth on none (≤ :data:`AGENT_SAFE_BELOW` over all agent
requests of a family), routing median ÷ truth within :data:`AGENT_ROUTING_MEDIAN` for every kind.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .agent_sources import AGENT_KINDS
from .pipeline import Calibration

__all__ = ["AGENT_CHART", "agent_misses", "agent_section", "agent_stats", "write_agent_chart"]

AGENT_SAFE_BELOW = 0.001
AGENT_ROUTING_MEDIAN = (0.90, 1.00)
AGENT_CHART = "estimator_agent.png"


def agent_stats(cal: Calibration, family: str, kind: str | None) -> tuple[int, float, float, float]:
    """(held-out requests, share with safe < truth, median safe ÷ truth, median routing ÷ truth) of
    agent requests of ``kind`` (``None``: all kinds) with ``family``'s weights."""
    kinds = cal.kinds.astype(str)
    mask = cal.held_out & (np.char.startswith(kinds, "agent:") if kind is None else kinds == f"agent:{kind}")
    if not mask.any():
        return 0, math.nan, math.nan, math.nan
    safe, routing = cal.estimates(family)
    y = np.maximum(cal.truth[family][mask], 1.0)
    return (int(mask.sum()), float(np.mean(safe[mask] < y)), float(np.median(safe[mask] / y)),
            float(np.median(routing[mask] / y)))


def agent_misses(cal: Calibration, families: Sequence[str]) -> list[tuple[str, str, float]]:
    """(kind, family, routing median) wherever the routing median is outside the target band."""
    lo, hi = AGENT_ROUTING_MEDIAN
    out = []
    for kind in AGENT_KINDS:
        for family in families:
            n, _, _, routing = agent_stats(cal, family, kind)
            if n and not lo <= routing <= hi:
                out.append((kind, family, routing))
    return out


def agent_section(cal: Calibration, families: Sequence[str]) -> list[str]:
    """Markdown lines of the agent-shaped table."""
    lines = [
        "## Agent-shaped requests (held out, family weights)",
        "",
        "Requests as coding/ops/research agents send them (`calibration/agent_corpus.py`, material from "
        "`agent_sources.py`): agent system prompt, four tool schemas, a user task, one to four assistant `tool_calls` "
        "each answered by a `role: \"tool\"` result holding real material of one kind — source code of installed "
        "packages (Python, JavaScript, C, Go, and `dataset-build`'s samples in 20 languages), JSON (LiteLLM's and other "
        "packages' files, BFCL data; pretty and compact), `/var/log` logs, `git log -p` diffs of this repository, "
        "Markdown docs, `dataset-build` prose (English; CJK; Cyrillic; Arabic/Hebrew; Thai/Hindi/Bengali), and symbol "
        "text (box-drawing `tree` listings of real folders; seeded Braille, arrows, math, block and emoji runs) — "
        "150 to 30,000 tokens each, split into halves by source document. Cell: *safe < truth · median safe ÷ truth · "
        f"median routing ÷ truth*. Targets: safe < truth on ≤ {100 * AGENT_SAFE_BELOW:.1f}% of a family's agent "
        f"requests; routing median within {AGENT_ROUTING_MEDIAN[0]:.2f}–{AGENT_ROUTING_MEDIAN[1]:.2f} per kind "
        "(✅ inside, ❌ outside; on the *all agent* row ❌ marks a family over the safe target).",
        "",
        "| kind | requests | " + " | ".join(families) + " |",
        "|---|---:" + "|---" * len(families) + "|",
    ]
    lo, hi = AGENT_ROUTING_MEDIAN
    for kind in (*AGENT_KINDS, None):
        cells, n = [], 0
        for family in families:
            n, below, safe, routing = agent_stats(cal, family, kind)
            bad = (kind is not None and not lo <= routing <= hi) or (kind is None and below > AGENT_SAFE_BELOW)
            mark = " ❌" if bad else " ✅" if kind is not None else ""
            cells.append("–" if not n else f"{100 * below:.1f}% · {safe:.2f} · {routing:.2f}{mark}")
        label = "**all agent**" if kind is None else kind
        lines.append(f"| {label} | {n} | " + " | ".join(cells) + " |")
    return lines


def write_agent_chart(cal: Calibration, directory: Path) -> Path:
    """Median routing ÷ truth per agent kind and family (bars), with the target band."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    families = list(cal.truth)
    fig, ax = plt.subplots(figsize=(11, 3.8))
    width = 0.8 / len(families)
    for i, family in enumerate(families):
        values = [agent_stats(cal, family, kind)[3] for kind in AGENT_KINDS]
        ax.bar(np.arange(len(AGENT_KINDS)) + i * width, values, width, label=family)
    ax.axhspan(*AGENT_ROUTING_MEDIAN, color="tab:green", alpha=0.15)
    ax.set_xticks(np.arange(len(AGENT_KINDS)) + 0.4 - width / 2, AGENT_KINDS, rotation=20, fontsize=8)
    ax.set_ylim(0, 1.2)
    ax.set_title("agent-shaped requests: median routing ÷ truth (held out; band = target)")
    ax.legend(fontsize=7, ncol=4)
    fig.tight_layout()
    path = directory / AGENT_CHART
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path

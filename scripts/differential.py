"""The big differential run: ``python scripts/differential.py --bodies 5000 --seed 7 --out diff.json``.

Starts the two-proxy stack of ``tests/e2e/differential_support.py`` (fast 16,384 / slow 131,072
emulated backends, recorders, LiteLLM alone and LiteLLM with the plugin), sends ``--bodies``
generated bodies of run ``--seed`` (``tests/e2e/differential_gen.py``: chat and text completions,
and ``differential_agents.py``: ``/v1/messages`` and ``/v1/responses``) to both, prints progress
and the counts, and writes ``{"seed", "bodies", "counts", "by_endpoint", "plugin_better": [...],
"plugin_worse": [...], "seconds"}`` to ``--out``. Every plugin-worse body is also written, in
full, to ``--failures`` (JSON lines) so it can be replayed with ``--only SEED:INDEX``.
Exit status: 0 when no body was plugin-worse, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE.parent / "tests" / "e2e")]
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from differential_gen import generate, make_case  # noqa: E402
from differential_support import (  # noqa: E402
    RUN_ROUTER_SETTINGS,
    DifferentialStack,
    report_lines,
    run_cases,
    save_failures,
    summarize,
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bodies", type=int, default=5_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--start", type=int, default=0, help="first case index (default 0)")
    parser.add_argument("--only", action="append", default=[], metavar="SEED:INDEX",
                        help="replay these cases only (repeatable)")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--timeout-s", type=float, default=60.0, help="client timeout per request (seconds)")
    parser.add_argument("--out", type=Path, default=Path("differential.json"))
    parser.add_argument("--failures", type=Path, default=None,
                        help="JSON lines of plugin-worse cases (default: beside --out, .failures.jsonl)")
    parser.add_argument("--all", type=Path, default=None, dest="all_path",
                        help="also write every comparison (outcomes, backend attempts, verdict) as JSON lines here")
    parser.add_argument("--vllm-version", default=None, help="emulated vLLM version (default: the emulator's)")
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args(argv)

    if args.only:
        cases = [make_case(int(s), int(i)) for s, i in (item.split(":") for item in args.only)]
    else:
        cases = list(generate(args.seed, args.bodies, args.start))
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="kvwarm-differential-"))
    flags = {"vllm_version": args.vllm_version} if args.vllm_version else {}
    began = time.monotonic()
    print(f"differential: {len(cases)} bodies, seed {args.seed}, workdir {workdir}", flush=True)
    with DifferentialStack(workdir, emulator_flags=flags, router_settings=RUN_ROUTER_SETTINGS) as stack:
        print(f"stack up in {time.monotonic() - began:.1f}s", flush=True)

        def progress(done: int, counts: dict[str, int]) -> None:
            print(f"[{time.monotonic() - began:7.1f}s] {done}/{len(cases)} " +
                  " ".join(f"{k}={v}" for k, v in counts.items()), flush=True)

        comparisons = run_cases(stack, cases, concurrency=args.concurrency, timeout_s=args.timeout_s,
                                progress=progress)
    summary = summarize(comparisons)
    failures = args.failures or args.out.with_suffix(".failures.jsonl")
    save_failures(comparisons, failures)
    if args.all_path:
        with args.all_path.open("w", encoding="utf-8") as handle:
            for comparison in comparisons:
                handle.write(json.dumps(comparison.to_json()) + "\n")
    result = {"seed": args.seed, "bodies": len(cases), "start": args.start, "counts": summary["counts"],
              "by_endpoint": summary["by_endpoint"],
              "plugin_better": summary["plugin_better"], "plugin_worse": summary["plugin_worse"],
              "seconds": round(time.monotonic() - began, 1), "failures_file": str(failures)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    print("\n".join(report_lines(summary, seed=args.seed)))
    print(f"wrote {args.out} ({result['seconds']}s); plugin-worse bodies in {failures}")
    return 1 if summary["counts"]["plugin_worse"] else 0


if __name__ == "__main__":
    sys.exit(main())

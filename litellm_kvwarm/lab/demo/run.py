"""``kvwarm demo`` from start to end: load the conversations, run every arm, print, write the outputs.

:func:`run_demo` prints the setup, each arm's rows as they come and its summary, and, with both
``warm-on`` and ``warm-off``, the comparison of their escalated turns; it then draws the chart
(:mod:`litellm_kvwarm.lab.charts`, PNG) to ``chart_path`` and writes the rows as JSON to
``json_path`` when given.  :func:`main_demo` maps the command line (:mod:`litellm_kvwarm.lab.cli`)
to options; by default the chart goes to :data:`DEFAULT_CHART_PATH`, relative to the current directory.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, TextIO

from ..processes import ProcessError
from .compare import EscalationComparison, compare, comparison_totals
from .replay import load_conversations, replay_start, run_arm
from .report import RowPrinter, format_comparison, format_header, format_summary, payload
from .rows import ArmResult
from .settings import ARMS, DEFAULT_ARMS, DEFAULT_BFCL_APIS, DEFAULT_SHAREGPT_APIS, WARM_OFF, WARM_ON, Arm, DemoError, DemoOptions

__all__ = ["DEFAULT_CHART_PATH", "main_demo", "run_demo", "write_chart"]

#: where a plain ``kvwarm demo`` draws its chart (``.kvwarm-run/`` is the project's ignored scratch folder)
DEFAULT_CHART_PATH = Path(".kvwarm-run") / "demo" / "demo-warm-ahead.png"


def write_chart(document: dict[str, Any], path: Path, say: Callable[[str], None], *,
                command: str = "kvwarm demo") -> Path | None:
    """Draw the run's chart (``document`` as :func:`~.report.payload` builds it) to ``path``; returns the
    path, or ``None`` (said why) when the run has no comparison to draw (``warm-on`` or ``warm-off``
    did not run).  Needs ``matplotlib`` (extra ``lab``)."""
    if document.get("comparison") is None:
        say("no chart: it compares warm-on with warm-off, and this run did not have both arms")
        return None
    if importlib.util.find_spec("matplotlib") is None:
        say("no chart: matplotlib is not installed (pip install 'litellm-kvwarm[lab]')")
        return None
    from ..charts import draw

    draw(document, path, command=command)
    say(f"chart written to {path}")
    return path


def run_demo(options: DemoOptions, arms: list[Arm], *, json_path: Path | None = None,
             chart_path: Path | None = None, command: str = "kvwarm demo", out: TextIO = sys.stdout) -> int:
    """Run every arm, print rows as they come, a summary per arm and, with both ``warm-on`` and
    ``warm-off``, the comparison of their escalated turns, then the chart to ``chart_path`` (when
    given); 0 on success, 1 when a request failed at the client.  The JSON (``json_path``) is written
    even when an arm is interrupted, with the arms that finished.  Raises :class:`DemoError` when no
    conversation is selected; process failures raise
    :class:`~litellm_kvwarm.lab.processes.ProcessError`."""
    def say(text: str) -> None:
        print(text, file=out, flush=True)

    began = time.monotonic()
    say("kvwarm demo: loading conversations (ShareGPT, BFCL) ...")
    conversations = load_conversations(options)
    if not conversations:
        raise DemoError("no conversations selected (--conversations 0 and --no-bfcl)")
    starts = {c.id: replay_start(c, options.start_fraction) for c in conversations}
    apis = {c.id: c.api for c in conversations}
    say(f"  loaded in {time.monotonic() - began:.1f}s")
    say(format_header(options, arms, len(conversations)))
    workdir_owner = None
    if options.workdir is None:
        workdir_owner = tempfile.TemporaryDirectory(prefix="kvwarm-demo-")
        workdir = Path(workdir_owner.name)
    else:
        workdir = Path(options.workdir)
        workdir.mkdir(parents=True, exist_ok=True)
    results: list[ArmResult] = []
    comparison: list[EscalationComparison] | None = None
    totals: dict[str, Any] | None = None
    printer = RowPrinter(say, options.all_rows)
    try:
        for arm in arms:
            result = run_arm(arm, conversations, starts, options, workdir, say, printer)
            results.append(result)
            say(format_summary(result.summary, result.backend))
        by_name = {r.arm.name: r for r in results}
        if WARM_ON in by_name and WARM_OFF in by_name:
            comparison = compare(by_name[WARM_ON].rows, by_name[WARM_OFF].rows)
            totals = comparison_totals(comparison, by_name[WARM_ON], by_name[WARM_OFF])
            say(format_comparison(comparison, totals, options.time_scale))
        if chart_path is not None:
            write_chart(payload(options, results, starts, comparison, totals, apis), Path(chart_path), say,
                        command=command)
    finally:
        if json_path is not None and results:
            Path(json_path).write_text(json.dumps(payload(options, results, starts, comparison, totals, apis), indent=2))
            say(f"rows written to {json_path}")
        if workdir_owner is not None:
            workdir_owner.cleanup()
    errors = sum(r.summary.client_errors for r in results)
    say(f"done in {time.monotonic() - began:.1f}s")
    if errors:
        say(f"FAILED: {errors} request(s) failed at the client")
        return 1
    return 0


def main_demo(args: Any, out: TextIO = sys.stdout, *, command: str = "kvwarm demo") -> int:
    """Entry point used by ``kvwarm demo`` (``args`` from :func:`litellm_kvwarm.lab.cli.build_parser`;
    ``command`` is the command line, named in the chart's footer).  Exit status: 0 success, 1 a
    request failed at the client, 2 the demo could not run, 130 interrupted."""
    options = DemoOptions(
        time_scale=args.time_scale,
        sharegpt_conversations=args.conversations,
        bfcl=not args.no_bfcl,
        bfcl_apis=tuple(getattr(args, "bfcl_api", None) or DEFAULT_BFCL_APIS),
        sharegpt_apis=tuple(getattr(args, "sharegpt_api", None) or DEFAULT_SHAREGPT_APIS),
        max_tokens=args.max_tokens,
        turns_after_escalation=args.turns_after_escalation,
        start_fraction=args.start_fraction,
        think_time_s=args.think_time,
        all_rows=args.all_rows,
        workdir=Path(args.workdir) if args.workdir else None,
    )
    arms = [ARMS[name] for name in (args.arm or DEFAULT_ARMS)]
    try:
        return run_demo(options, arms, json_path=Path(args.json) if args.json else None,
                        chart_path=None if args.no_chart else Path(args.chart), command=command, out=out)
    except KeyboardInterrupt:
        print("\ninterrupted: every process started by the demo was stopped", file=out, flush=True)
        return 130
    except (ProcessError, DemoError) as exc:
        print(f"kvwarm demo failed: {exc}", file=out, flush=True)
        return 2

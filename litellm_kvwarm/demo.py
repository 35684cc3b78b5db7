"""``kvwarm demo``: real conversations through a real LiteLLM proxy and two emulated vLLM backends.

What runs (all local, no GPU, Redis or network):

* a *fast* emulator (``fast-8b``, ``max_model_len`` 16,384) and a *slow* one
  (``slow-27b``, 131,072), with realistic-ish prefill/decode rates scaled by
  ``--time-scale``;
* ``litellm --config`` with groups ``fast`` / ``slow``, ``context_window_fallbacks``
  ``fast -> slow`` and, in the ``plugin`` arm, ``litellm_kvwarm.proxy_handler_instance``.

Each conversation (the longest ShareGPT ones, then the largest BFCL long-context
tool-calling one) is replayed request by request with ``model: "fast"``: the recorded
history (recorded assistant replies, not the emulator's filler) plus the next user
message or tool result, streamed with usage so TTFT is measured at the client.  A
conversation stops ``--turns-after-escalation`` requests after its first one served by
``slow``.  For every request the emulators' request logs tell which backend(s) got it,
with what ``max_tokens`` (clamping), how many prompt tokens were cached and whether an
attempt failed.

Structure: :func:`run_arm` replays everything for one :class:`Arm` (a plugin
configuration) and returns :class:`TurnRow` rows; :func:`run_demo` runs arms, prints
and writes them.  A later comparison (e.g. warm-ahead on/off) is another ``Arm``.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, TextIO

import httpx

from .conversations import Conversation, bfcl_conversation, longest_sharegpt
from .processes import Deployment, ManagedProcess, ProcessError, proxy_config, start_emulator, start_proxy
from .tokens import estimate_request

__all__ = [
    "ARMS",
    "Arm",
    "DemoError",
    "DemoOptions",
    "Stack",
    "Summary",
    "TurnRow",
    "format_row",
    "format_summary",
    "load_conversations",
    "main_demo",
    "replay_conversation",
    "run_arm",
    "run_demo",
    "start_stack",
    "summarize",
]

FAST_GROUP = "fast"
SLOW_GROUP = "slow"
FAST_MODEL = "fast-8b"
SLOW_MODEL = "slow-27b"
FAST_WINDOW = 16_384
SLOW_WINDOW = 131_072
# Tokens/s of the emulated engines: slow ~ a 27B model (30k tokens cold ~ 40 s), fast ~ an 8B one.
FAST_PREFILL_TPS = 3000.0
SLOW_PREFILL_TPS = 750.0
DECODE_TPS = 50.0
DEFAULT_TIME_SCALE = 0.05
DEFAULT_MAX_TOKENS = 1024
DEFAULT_SHAREGPT_CONVERSATIONS = 2
DEFAULT_TURNS_AFTER_ESCALATION = 2
MAX_REQUESTS_PER_CONVERSATION = 80
SESSION_HEADER = "x-litellm-session-id"
REQUEST_TIMEOUT_S = 300.0
LOG_SETTLE_S = 2.0


class DemoError(RuntimeError):
    """The demo could not run (a process failed to start, a request failed at the client)."""


@dataclass(frozen=True)
class Arm:
    """One configuration to replay under: the plugin on/off and its ``KVWARM_*`` settings."""

    name: str
    plugin: bool = True
    env: dict[str, str] = field(default_factory=dict)


ARMS = {
    "plugin": Arm("plugin"),
    "litellm-only": Arm("litellm-only", plugin=False),
}


@dataclass(frozen=True)
class DemoOptions:
    time_scale: float = DEFAULT_TIME_SCALE
    sharegpt_conversations: int = DEFAULT_SHAREGPT_CONVERSATIONS
    bfcl: bool = True
    max_tokens: int = DEFAULT_MAX_TOKENS
    turns_after_escalation: int = DEFAULT_TURNS_AFTER_ESCALATION
    max_requests_per_conversation: int = MAX_REQUESTS_PER_CONVERSATION
    workdir: Path | None = None


@dataclass
class TurnRow:
    """One replayed request.  ``turn`` is ``"7"`` (ShareGPT) or ``"2.3"`` (BFCL turn.step)."""

    arm: str
    conversation: str
    source: str
    request: int
    turn: str
    messages: int
    estimate_routing: int
    estimate_safe: int
    max_tokens_requested: int
    status: int = 0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    group: str | None = None  # group whose backend served it (from the emulator logs)
    header_group: str | None = None  # x-litellm-model-group response header
    max_tokens_backend: int | None = None  # as received by the serving backend
    attempts: list[dict[str, Any]] = field(default_factory=list)  # every backend attempt, in order
    failed_attempts: int = 0
    ttft_s: float | None = None  # client-side, from request start to the first streamed chunk
    total_s: float | None = None
    error: str | None = None

    @property
    def escalated_proactively(self) -> bool:
        return self.group == SLOW_GROUP and not any(a["group"] == FAST_GROUP for a in self.attempts)

    @property
    def escalated_after_error(self) -> bool:
        return self.group == SLOW_GROUP and any(
            a["group"] == FAST_GROUP and a["status"] >= 400 for a in self.attempts
        )


@dataclass(frozen=True)
class Summary:
    arm: str
    requests: int
    conversations: int
    served_fast: int
    served_slow: int
    proactive_escalations: int
    fallback_escalations: int
    failed_attempts: int
    client_errors: int
    clamped: int
    cached_tokens: int
    prompt_tokens: int
    mean_ttft_fast_s: float | None
    mean_ttft_slow_s: float | None
    wall_s: float


# --------------------------------------------------------------------- processes


@dataclass
class Stack:
    """The running processes of one arm."""

    fast: ManagedProcess
    slow: ManagedProcess
    proxy: ManagedProcess

    def backends(self) -> dict[str, ManagedProcess]:
        return {FAST_GROUP: self.fast, SLOW_GROUP: self.slow}


def start_stack(arm: Arm, options: DemoOptions, workdir: Path, stack: ExitStack,
                say: Callable[[str], None]) -> Stack:
    """Start both emulators and the proxy; each is registered on ``stack`` to be stopped."""
    def started(process: ManagedProcess) -> ManagedProcess:
        stack.callback(process.stop)
        say(f"  {process.name} healthy on {process.base_url} in {process.startup_s:.1f}s")
        return process

    common = {"decode_tokens_per_s": DECODE_TPS, "time_scale": options.time_scale, "workdir": workdir}
    fast = started(start_emulator(FAST_MODEL, FAST_WINDOW, prefill_tokens_per_s=FAST_PREFILL_TPS,
                                  request_log=workdir / f"{arm.name}-fast.jsonl", **common))
    slow = started(start_emulator(SLOW_MODEL, SLOW_WINDOW, prefill_tokens_per_s=SLOW_PREFILL_TPS,
                                  request_log=workdir / f"{arm.name}-slow.jsonl", **common))
    config = proxy_config(
        {FAST_GROUP: [Deployment.of(fast, FAST_MODEL)], SLOW_GROUP: [Deployment.of(slow, SLOW_MODEL)]},
        callbacks=arm.plugin,
        env_vars=arm.env or None,
        router_settings={"num_retries": 0},
    )
    say("  starting litellm proxy (7-9 s) ...")
    proxy = started(start_proxy(config, workdir=workdir / f"proxy-{arm.name}"))
    return Stack(fast=fast, slow=slow, proxy=proxy)


# ------------------------------------------------------------------------ replay


def load_conversations(options: DemoOptions) -> list[Conversation]:
    conversations: list[Conversation] = []
    if options.sharegpt_conversations > 0:
        conversations += longest_sharegpt(options.sharegpt_conversations, min_turns=4)
    if options.bfcl:
        conversations.append(bfcl_conversation())
    return conversations


def _chat_entries(process: ManagedProcess, client: httpx.Client) -> list[dict[str, Any]]:
    response = client.get(process.base_url + "/emulator/requests")
    response.raise_for_status()
    return [e for e in response.json()["requests"] if "chat/completions" in str(e.get("endpoint"))]


def _stream_chat(client: httpx.Client, stack: Stack, body: dict[str, Any], session: str) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {stack.proxy.master_key}", SESSION_HEADER: session}
    began = time.monotonic()
    out: dict[str, Any] = {"status": 0, "ttft_s": None, "usage": None, "error": None, "header_group": None}
    with client.stream("POST", stack.proxy.base_url + "/v1/chat/completions", json=body,
                       headers=headers, timeout=REQUEST_TIMEOUT_S) as response:
        out["status"] = response.status_code
        out["header_group"] = response.headers.get("x-litellm-model-group")
        if response.status_code != 200:
            out["error"] = response.read().decode("utf-8", errors="replace")[:500]
            out["total_s"] = time.monotonic() - began
            return out
        for line in response.iter_lines():
            if not line.startswith("data:"):
                continue
            data = line[5:].strip()
            if data == "[DONE]":
                break
            chunk = json.loads(data)
            if "error" in chunk:
                out["error"] = json.dumps(chunk["error"])[:500]
                continue
            if out["ttft_s"] is None and chunk.get("choices"):
                out["ttft_s"] = time.monotonic() - began
            if chunk.get("usage"):
                out["usage"] = chunk["usage"]
    out["total_s"] = time.monotonic() - began
    return out


def _new_attempts(stack: Stack, client: httpx.Client, seen: dict[str, int],
                  expect_served: bool) -> list[dict[str, Any]]:
    """Backend attempts logged since ``seen`` (waits briefly for the serving entry to land)."""
    deadline = time.monotonic() + LOG_SETTLE_S
    while True:
        attempts = []
        fresh_counts = {}
        for group, process in stack.backends().items():
            entries = _chat_entries(process, client)
            fresh_counts[group] = len(entries)
            attempts += [dict(e, group=group) for e in entries[seen[group]:]]
        served = any(a.get("status") == 200 and a.get("stream") for a in attempts)
        if served or not expect_served or time.monotonic() >= deadline:
            seen.update(fresh_counts)
            return sorted(attempts, key=lambda a: a.get("ts") or 0)
        time.sleep(0.05)


def replay_conversation(conversation: Conversation, arm: Arm, stack: Stack, options: DemoOptions,
                        client: httpx.Client, emit: Callable[[TurnRow], None]) -> list[TurnRow]:
    """Replay one conversation until it has been served by ``slow`` for a few requests."""
    rows: list[TurnRow] = []
    seen = {group: len(_chat_entries(p, client)) for group, p in stack.backends().items()}
    first_slow: int | None = None
    session = f"kvwarm-demo-{arm.name}-{conversation.id}"
    multi_step = conversation.tools is not None
    for number, point in enumerate(conversation.requests(), start=1):
        if number > options.max_requests_per_conversation:
            break
        if first_slow is not None and number > first_slow + options.turns_after_escalation:
            break
        body: dict[str, Any] = {
            "model": FAST_GROUP,
            "messages": point.messages,
            "max_tokens": options.max_tokens,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if conversation.tools:
            body["tools"] = conversation.tools
        estimate = estimate_request(body)
        row = TurnRow(
            arm=arm.name, conversation=conversation.id, source=conversation.source, request=number,
            turn=f"{point.turn}.{point.step}" if multi_step else str(point.turn),
            messages=len(point.messages), estimate_routing=estimate.routing, estimate_safe=estimate.safe,
            max_tokens_requested=options.max_tokens,
        )
        try:
            result = _stream_chat(client, stack, body, session)
        except httpx.HTTPError as exc:
            result = {"status": 0, "error": f"{type(exc).__name__}: {exc}", "ttft_s": None, "usage": None,
                      "header_group": None, "total_s": None}
        row.status = result["status"]
        row.error = result["error"]
        row.ttft_s = result["ttft_s"]
        row.total_s = result["total_s"]
        row.header_group = result["header_group"]
        usage = result["usage"] or {}
        row.prompt_tokens = usage.get("prompt_tokens")
        row.completion_tokens = usage.get("completion_tokens")
        row.cached_tokens = (usage.get("prompt_tokens_details") or {}).get("cached_tokens")
        row.attempts = [
            {k: a.get(k) for k in ("group", "status", "max_tokens", "prompt_tokens", "cached_tokens", "stream", "error")}
            for a in _new_attempts(stack, client, seen, expect_served=row.status == 200)
        ]
        row.failed_attempts = sum(1 for a in row.attempts if (a["status"] or 0) >= 400)
        served = [a for a in row.attempts if a["status"] == 200 and a["stream"]]
        if served:
            final = served[-1]
            row.group = final["group"]
            row.max_tokens_backend = final["max_tokens"]
            if row.prompt_tokens is None:
                row.prompt_tokens = final["prompt_tokens"]
            if row.cached_tokens is None:
                row.cached_tokens = final["cached_tokens"]
        rows.append(row)
        emit(row)
        if row.status != 200 or row.error:
            break  # the history would diverge from what the backend saw; stop this conversation
        if row.group == SLOW_GROUP and first_slow is None:
            first_slow = number
    return rows


def run_arm(arm: Arm, conversations: list[Conversation], options: DemoOptions, workdir: Path,
            say: Callable[[str], None], emit: Callable[[TurnRow], None]) -> tuple[list[TurnRow], float]:
    """Start the processes for ``arm``, replay every conversation, stop everything: rows and wall time."""
    began = time.monotonic()
    rows: list[TurnRow] = []
    with ExitStack() as stack:
        say(f"[{arm.name}] starting emulators and proxy (plugin {'on' if arm.plugin else 'off'})")
        processes = start_stack(arm, options, workdir, stack, say)
        with httpx.Client(timeout=REQUEST_TIMEOUT_S, trust_env=False) as client:
            for index, conversation in enumerate(conversations, start=1):
                say(f"[{arm.name}] conversation {index}/{len(conversations)}: {conversation.id} "
                    f"({conversation.source}, {len(conversation.turns)} turns, {conversation.chars:,} chars"
                    f"{', %d tools' % len(conversation.tools) if conversation.tools else ''})")
                say(HEADER)
                rows += replay_conversation(conversation, arm, processes, options, client, emit)
        say(f"[{arm.name}] stopping processes")
    return rows, time.monotonic() - began


# ------------------------------------------------------------------------ output

HEADER = (
    f"  {'req':>3} {'turn':>5} {'msgs':>4} {'est.route':>9} {'est.safe':>8} {'prompt':>7} "
    f"{'served':>6} {'max_tok':>7} {'ttft_s':>7} {'cached':>7} {'attempts':<22} note"
)


def _fmt(value: Any, spec: str = "") -> str:
    return "-" if value is None else format(value, spec)


def format_row(row: TurnRow) -> str:
    attempts = ",".join(f"{a['group']}:{a['status']}" for a in row.attempts) or "-"
    notes = []
    if row.escalated_proactively:
        notes.append("proactive->slow")
    if row.escalated_after_error:
        notes.append("fallback after 400")
    if row.max_tokens_backend is not None and row.max_tokens_backend != row.max_tokens_requested:
        notes.append(f"clamped {row.max_tokens_requested}->{row.max_tokens_backend}")
    if row.header_group and row.group and row.header_group != row.group:
        notes.append(f"header group {row.header_group}")
    if row.status != 200:
        notes.append(f"HTTP {row.status}")
    if row.error:
        notes.append(f"error: {row.error[:80]}")
    return (
        f"  {row.request:>3} {row.turn:>5} {row.messages:>4} {row.estimate_routing:>9} {row.estimate_safe:>8} "
        f"{_fmt(row.prompt_tokens):>7} {_fmt(row.group):>6} {_fmt(row.max_tokens_backend):>7} "
        f"{_fmt(row.ttft_s, '.3f'):>7} {_fmt(row.cached_tokens):>7} {attempts:<22} {' '.join(notes)}"
    )


def _mean(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def summarize(arm: Arm, rows: list[TurnRow], wall_s: float) -> Summary:
    return Summary(
        arm=arm.name,
        requests=len(rows),
        conversations=len({r.conversation for r in rows}),
        served_fast=sum(r.group == FAST_GROUP for r in rows),
        served_slow=sum(r.group == SLOW_GROUP for r in rows),
        proactive_escalations=sum(r.escalated_proactively for r in rows),
        fallback_escalations=sum(r.escalated_after_error for r in rows),
        failed_attempts=sum(r.failed_attempts for r in rows),
        client_errors=sum(1 for r in rows if r.status != 200 or r.error),
        clamped=sum(1 for r in rows if r.max_tokens_backend is not None and r.max_tokens_backend != r.max_tokens_requested),
        cached_tokens=sum(r.cached_tokens or 0 for r in rows),
        prompt_tokens=sum(r.prompt_tokens or 0 for r in rows),
        mean_ttft_fast_s=_mean(r.ttft_s for r in rows if r.group == FAST_GROUP),
        mean_ttft_slow_s=_mean(r.ttft_s for r in rows if r.group == SLOW_GROUP),
        wall_s=wall_s,
    )


def format_summary(summary: Summary) -> str:
    return "\n".join([
        f"summary [{summary.arm}]: {summary.requests} requests in {summary.conversations} conversations, "
        f"{summary.wall_s:.1f}s wall",
        f"  served by fast: {summary.served_fast}   served by slow: {summary.served_slow}",
        f"  proactive escalations (plugin, before dispatch): {summary.proactive_escalations}",
        f"  escalations after a backend 400 (LiteLLM fallback): {summary.fallback_escalations}",
        f"  failed backend attempts (HTTP >= 400 in the emulator logs): {summary.failed_attempts}",
        f"  max_tokens clamped: {summary.clamped}   client-visible errors: {summary.client_errors}",
        f"  cached prompt tokens: {summary.cached_tokens:,} of {summary.prompt_tokens:,}",
        f"  mean client TTFT: fast {_fmt(summary.mean_ttft_fast_s, '.3f')}s, slow {_fmt(summary.mean_ttft_slow_s, '.3f')}s",
    ])


# -------------------------------------------------------------------------- main


def run_demo(options: DemoOptions, arms: list[Arm], *, json_path: Path | None = None,
             out: TextIO = sys.stdout) -> int:
    """Run every arm, print rows as they come and a summary per arm; 0 on success."""
    def say(text: str) -> None:
        print(text, file=out, flush=True)

    def emit(row: TurnRow) -> None:
        say(format_row(row))

    began = time.monotonic()
    say("kvwarm demo: loading conversations (ShareGPT, BFCL) ...")
    conversations = load_conversations(options)
    if not conversations:
        raise DemoError("no conversations selected (--conversations 0 and --no-bfcl)")
    say(f"  {len(conversations)} conversation(s) in {time.monotonic() - began:.1f}s; "
        f"fast={FAST_MODEL} window {FAST_WINDOW:,}, slow={SLOW_MODEL} window {SLOW_WINDOW:,}, "
        f"time scale {options.time_scale}, max_tokens {options.max_tokens}")
    workdir_owner = None
    if options.workdir is None:
        workdir_owner = tempfile.TemporaryDirectory(prefix="kvwarm-demo-")
        workdir = Path(workdir_owner.name)
    else:
        workdir = Path(options.workdir)
        workdir.mkdir(parents=True, exist_ok=True)
    results = []
    try:
        for arm in arms:
            rows, wall_s = run_arm(arm, conversations, options, workdir, say, emit)
            summary = summarize(arm, rows, wall_s)
            results.append((arm, rows, summary))
            say(format_summary(summary))
    finally:
        if json_path is not None and results:
            payload = {
                "options": {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(options).items()},
                "arms": [
                    {"arm": asdict(arm), "summary": asdict(summary),
                     "rows": [dict(asdict(r), escalated_proactively=r.escalated_proactively,
                                   escalated_after_error=r.escalated_after_error) for r in rows]}
                    for arm, rows, summary in results
                ],
            }
            Path(json_path).write_text(json.dumps(payload, indent=2))
            say(f"rows written to {json_path}")
        if workdir_owner is not None:
            workdir_owner.cleanup()
    errors = sum(s.client_errors for _, _, s in results)
    say(f"done in {time.monotonic() - began:.1f}s")
    if errors:
        say(f"FAILED: {errors} request(s) failed at the client")
        return 1
    return 0


def main_demo(args: Any, out: TextIO = sys.stdout) -> int:
    """Entry point used by ``kvwarm demo`` (``args`` from :func:`litellm_kvwarm.cli.build_parser`)."""
    options = DemoOptions(
        time_scale=args.time_scale,
        sharegpt_conversations=args.conversations,
        bfcl=not args.no_bfcl,
        max_tokens=args.max_tokens,
        turns_after_escalation=args.turns_after_escalation,
        workdir=Path(args.workdir) if args.workdir else None,
    )
    arms = [ARMS[name] for name in args.arm]
    try:
        return run_demo(options, arms, json_path=Path(args.json) if args.json else None, out=out)
    except KeyboardInterrupt:
        print("\ninterrupted: every process started by the demo was stopped", file=out, flush=True)
        return 130
    except (ProcessError, DemoError) as exc:
        print(f"kvwarm demo failed: {exc}", file=out, flush=True)
        return 2

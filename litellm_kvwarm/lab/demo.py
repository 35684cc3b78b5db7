"""``kvwarm demo``: real conversations through a real LiteLLM proxy and two emulated vLLM backends,
replayed twice, warm-ahead on and off, to measure what warm-ahead buys the turn that escalates.

What runs (all local, no GPU, Redis or network), once per *arm*:

* a *fast* emulator (``fast-8b``, ``max_model_len`` 16,384, prefill 3,000 tok/s) and a *slow*
  one (``slow-27b``, 131,072, prefill 750 tok/s: a 30k-token cold prompt takes 40 s), decode
  50 tok/s, every emulated wait multiplied by ``--time-scale``;
* ``litellm --config`` with groups ``fast`` / ``slow``, ``context_window_fallbacks``
  ``fast -> slow`` and ``litellm_kvwarm.proxy_handler_instance``. Arm ``warm-on`` runs the
  plugin with its defaults, arm ``warm-off`` the same with ``KVWARM_WARM_AHEAD=0``; both get
  ``KVWARM_WARM_COOLDOWN_S = 300 × time scale`` so the cooldown keeps its proportion to the
  emulated time (``KVWARM_WARM_REWARM_STEP`` stays at its default).  Each arm starts fresh
  processes: nothing is cached on either backend when its replay begins.

Each conversation (the longest ShareGPT ones, then the largest BFCL long-context
tool-calling one) is replayed request by request with ``model: "fast"``: the recorded
history (recorded assistant replies, not the emulator's filler) plus the next user message
or tool result, streamed with ``stream_options.include_usage`` so TTFT is measured at the
client.  The replay starts at the last request whose estimate is below ``--start-fraction``
of the fast window (everything before it is sent as history in that first request, so it is
prefilled on fast once) and stops ``--turns-after-escalation`` requests after the first one
served by ``slow``: the *escalated turn*.  Requests follow each other back to back unless
``--think-time`` sets an emulated pause (scaled like every other emulated time).  The
emulators' request logs tell, per request, which backend(s) got it, with what
``max_tokens`` (clamping), how many prompt tokens were cached, whether an attempt failed,
and which warms (slow requests with ``max_tokens=1``) landed meanwhile.

Structure: :func:`run_arm` replays every conversation for one :class:`Arm` and returns an
:class:`ArmResult`; :func:`compare` (pure) pairs the escalated turns of the ``warm-on`` and
``warm-off`` arms; :func:`run_demo` runs the arms, prints rows, summaries and the comparison,
and writes the JSON.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence, TextIO

import httpx

from ..config import DEFAULT_WARM_COOLDOWN_S, DEFAULT_WARM_THRESHOLD, env_name
from .conversations import Conversation, RequestPoint, bfcl_conversation, longest_sharegpt
from .processes import Deployment, ManagedProcess, ProcessError, proxy_config, start_emulator, start_proxy
from ..tokens import calibrated_estimator, estimate_request

#: what the plugin uses by default for served names it cannot place in a family (fast-8b, slow-27b)
PLUGIN_ESTIMATOR = calibrated_estimator("any")

__all__ = [
    "ARMS",
    "DEFAULT_ARMS",
    "Arm",
    "ArmResult",
    "BackendTotals",
    "DemoError",
    "DemoOptions",
    "EscalatedTurn",
    "EscalationComparison",
    "RowPrinter",
    "Stack",
    "Summary",
    "TurnRow",
    "backend_totals",
    "compare",
    "comparison_totals",
    "escalated_turn",
    "explain",
    "format_comparison",
    "format_row",
    "format_summary",
    "is_interesting",
    "load_conversations",
    "main_demo",
    "replay_conversation",
    "replay_start",
    "request_body",
    "run_arm",
    "run_demo",
    "scaled_cooldown_s",
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
# 256 output tokens: LiteLLM re-streams every chunk (~0.6 ms each here), and the replayed
# history uses the recorded replies, not the generated filler, so longer outputs buy nothing.
DEFAULT_MAX_TOKENS = 256
DEFAULT_SHAREGPT_CONVERSATIONS = 2
DEFAULT_TURNS_AFTER_ESCALATION = 1
# The replay starts below the warm threshold (60%), so the crossing, the warm and the
# re-warms all happen during the replay; the turns before it are sent as history.
DEFAULT_START_FRACTION = 0.5
DEFAULT_THINK_TIME_S = 0.0
MAX_REQUESTS_PER_CONVERSATION = 80
# The plugin's cooldown is in real seconds; the demo scales it like the emulated time.
UNSCALED_WARM_COOLDOWN_S = DEFAULT_WARM_COOLDOWN_S
MIN_WARM_COOLDOWN_S = 0.001  # the setting must be > 0 (time scale 0 would give 0)
WARM_THRESHOLD = DEFAULT_WARM_THRESHOLD  # the plugin's default; the demo does not change it
TARGET_TTFT_RATIO = 5.0  # acceptance criterion: escalated turn TTFT warm-off / warm-on
SESSION_HEADER = "x-litellm-session-id"
REQUEST_TIMEOUT_S = 300.0
LOG_SETTLE_S = 2.0


class DemoError(RuntimeError):
    """The demo could not run (a process failed to start, a request failed at the client)."""


def scaled_cooldown_s(time_scale: float) -> float:
    """``KVWARM_WARM_COOLDOWN_S`` for the demo: the default 300 s times the time scale (>= 1 ms)."""
    return max(UNSCALED_WARM_COOLDOWN_S * time_scale, MIN_WARM_COOLDOWN_S)


@dataclass(frozen=True)
class Arm:
    """One configuration to replay under: the plugin on/off, warm-ahead on/off."""

    name: str
    plugin: bool = True
    warm_ahead: bool = True

    def env(self, time_scale: float) -> dict[str, str]:
        """The ``KVWARM_*`` settings this arm passes to the proxy (``environment_variables``)."""
        if not self.plugin:
            return {}
        env = {env_name("warm_cooldown_s"): f"{scaled_cooldown_s(time_scale):g}"}
        if not self.warm_ahead:
            env[env_name("warm_ahead")] = "0"
        return env


WARM_ON = "warm-on"
WARM_OFF = "warm-off"
ARMS = {
    WARM_ON: Arm(WARM_ON),
    WARM_OFF: Arm(WARM_OFF, warm_ahead=False),
    "litellm-only": Arm("litellm-only", plugin=False, warm_ahead=False),
}
DEFAULT_ARMS = (WARM_ON, WARM_OFF)


@dataclass(frozen=True)
class DemoOptions:
    time_scale: float = DEFAULT_TIME_SCALE
    sharegpt_conversations: int = DEFAULT_SHAREGPT_CONVERSATIONS
    bfcl: bool = True
    max_tokens: int = DEFAULT_MAX_TOKENS
    turns_after_escalation: int = DEFAULT_TURNS_AFTER_ESCALATION
    start_fraction: float = DEFAULT_START_FRACTION
    think_time_s: float = DEFAULT_THINK_TIME_S  # emulated seconds between a reply and the next request
    all_rows: bool = False
    max_requests_per_conversation: int = MAX_REQUESTS_PER_CONVERSATION
    workdir: Path | None = None
    fast_window: int = FAST_WINDOW  # tokens; where the replay marks the warm-threshold crossing (the bench's vLLM scale: 4,096)


@dataclass
class TurnRow:
    """One replayed request.  ``turn`` is ``"7"`` (ShareGPT) or ``"2.3"`` (BFCL turn.step);
    ``request`` is the request's number in the whole conversation (the replay may start later)."""

    arm: str
    conversation: str
    source: str
    request: int
    turn: str
    messages: int
    estimate_routing: int
    estimate_safe: int
    max_tokens_requested: int
    crossed_threshold: bool = False  # first replayed row whose estimate >= the warm threshold
    status: int = 0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    group: str | None = None  # group whose backend served it (from the emulator logs)
    header_group: str | None = None  # x-litellm-model-group response header
    max_tokens_backend: int | None = None  # as received by the serving backend
    attempts: list[dict[str, Any]] = field(default_factory=list)  # backend attempts for this request, in order
    warms: list[dict[str, Any]] = field(default_factory=list)  # warms (slow, max_tokens=1) that landed meanwhile
    failed_attempts: int = 0  # attempts and warms with HTTP >= 400
    ttft_s: float | None = None  # client-side, from request start to the first streamed chunk
    server_ttft_s: float | None = None  # the serving backend's own TTFT (arrival to end of prefill)
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

    @property
    def clamped(self) -> bool:
        return self.max_tokens_backend is not None and self.max_tokens_backend != self.max_tokens_requested


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


@dataclass(frozen=True)
class BackendTotals:
    """Everything the arm's emulators logged (read once at the end, warms included)."""

    fast_requests: int
    slow_requests: int
    warms: int  # slow requests with max_tokens == 1 that are not streamed: the plugin's warms
    warms_failed: int
    warm_prefilled_tokens: int  # prompt tokens the warms computed (prompt - cached)
    failed_attempts: int  # any logged request with HTTP >= 400, on either backend


@dataclass
class ArmResult:
    arm: Arm
    env: dict[str, str]
    rows: list[TurnRow]
    summary: Summary
    backend: BackendTotals


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
        env_vars=arm.env(options.time_scale) or None,
        router_settings={"num_retries": 0},
    )
    say("  starting litellm proxy (7-11 s) ...")
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


def request_body(conversation: Conversation, point: RequestPoint, max_tokens: int) -> dict[str, Any]:
    """The streamed chat request the client sends at ``point`` (``model: "fast"``)."""
    body: dict[str, Any] = {
        "model": FAST_GROUP,
        "messages": point.messages,
        "max_tokens": max_tokens,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if conversation.tools:
        body["tools"] = conversation.tools
    return body


def replay_start(conversation: Conversation, start_fraction: float, window: int = FAST_WINDOW) -> int:
    """Number (1-based) of the first request to replay: the last one whose routing estimate is
    below ``start_fraction`` of ``window`` (1 when even the first is not, or ``start_fraction``
    is 0).  Everything before it is sent as history in that request."""
    limit = start_fraction * window
    start = 1
    for number, point in enumerate(conversation.requests(), start=1):
        if estimate_request(request_body(conversation, point, 1), estimator=PLUGIN_ESTIMATOR).routing >= limit:
            break
        start = number
    return start


def _chat_entries(process: ManagedProcess, client: httpx.Client) -> list[dict[str, Any]]:
    response = client.get(process.base_url + "/emulator/requests")
    response.raise_for_status()
    return [e for e in response.json()["requests"] if "chat/completions" in str(e.get("endpoint"))]


def _is_warm(entry: dict[str, Any]) -> bool:
    """A warm as the backend sees it: ``max_tokens=1``, not streamed (the demo always streams)."""
    return entry.get("group") == SLOW_GROUP and entry.get("max_tokens") == 1 and not entry.get("stream")


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


def _new_entries(stack: Stack, client: httpx.Client, seen: dict[str, int],
                 expect_served: bool) -> list[dict[str, Any]]:
    """Backend log entries since ``seen`` (waits briefly for the serving entry to land)."""
    deadline = time.monotonic() + LOG_SETTLE_S
    while True:
        entries = []
        fresh_counts = {}
        for group, process in stack.backends().items():
            logged = _chat_entries(process, client)
            fresh_counts[group] = len(logged)
            entries += [dict(e, group=group) for e in logged[seen[group]:]]
        served = any(e.get("status") == 200 and e.get("stream") for e in entries)
        if served or not expect_served or time.monotonic() >= deadline:
            seen.update(fresh_counts)
            return sorted(entries, key=lambda e: e.get("ts") or 0)
        time.sleep(0.05)


_ATTEMPT_KEYS = ("group", "status", "max_tokens", "prompt_tokens", "cached_tokens", "stream", "ttft_s", "error")


def replay_conversation(conversation: Conversation, arm: Arm, stack: Stack, options: DemoOptions,
                        client: httpx.Client, emit: Callable[[TurnRow], None], start: int = 1) -> list[TurnRow]:
    """Replay one conversation from request ``start`` until it has been served by ``slow`` for
    ``options.turns_after_escalation`` more requests."""
    rows: list[TurnRow] = []
    seen = {group: len(_chat_entries(p, client)) for group, p in stack.backends().items()}
    first_slow: int | None = None
    crossed = False
    session = f"kvwarm-demo-{conversation.id}"  # same in every arm: each arm has its own processes
    multi_step = conversation.tools is not None
    think_s = options.think_time_s * options.time_scale
    for number, point in enumerate(conversation.requests(), start=1):
        if number < start:
            continue
        if len(rows) >= options.max_requests_per_conversation:
            break
        if first_slow is not None and number > first_slow + options.turns_after_escalation:
            break
        if rows and think_s > 0:
            time.sleep(think_s)
        body = request_body(conversation, point, options.max_tokens)
        estimate = estimate_request(body, estimator=PLUGIN_ESTIMATOR)
        row = TurnRow(
            arm=arm.name, conversation=conversation.id, source=conversation.source, request=number,
            turn=f"{point.turn}.{point.step}" if multi_step else str(point.turn),
            messages=len(point.messages), estimate_routing=estimate.routing, estimate_safe=estimate.safe,
            max_tokens_requested=options.max_tokens,
            crossed_threshold=not crossed and estimate.routing >= WARM_THRESHOLD * options.fast_window,
        )
        crossed = crossed or row.crossed_threshold
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
        for entry in _new_entries(stack, client, seen, expect_served=row.status == 200):
            (row.warms if _is_warm(entry) else row.attempts).append({k: entry.get(k) for k in _ATTEMPT_KEYS})
        row.failed_attempts = sum(1 for a in row.attempts + row.warms if (a["status"] or 0) >= 400)
        served = [a for a in row.attempts if a["status"] == 200 and a["stream"]]
        if served:
            final = served[-1]
            row.group = final["group"]
            row.max_tokens_backend = final["max_tokens"]
            row.server_ttft_s = final["ttft_s"]
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


def backend_totals(fast_entries: Sequence[dict[str, Any]], slow_entries: Sequence[dict[str, Any]]) -> BackendTotals:
    """Totals over the emulators' full request logs (pure)."""
    warms = [e for e in slow_entries if _is_warm(dict(e, group=SLOW_GROUP))]
    return BackendTotals(
        fast_requests=len(fast_entries),
        slow_requests=len(slow_entries),
        warms=len(warms),
        warms_failed=sum(1 for e in warms if (e.get("status") or 0) >= 400),
        warm_prefilled_tokens=sum((e.get("prompt_tokens") or 0) - (e.get("cached_tokens") or 0)
                                  for e in warms if e.get("status") == 200),
        failed_attempts=sum(1 for e in [*fast_entries, *slow_entries] if (e.get("status") or 0) >= 400),
    )


def run_arm(arm: Arm, conversations: list[Conversation], starts: dict[str, int], options: DemoOptions,
            workdir: Path, say: Callable[[str], None], printer: "RowPrinter") -> ArmResult:
    """Start the processes for ``arm``, replay every conversation, stop everything."""
    began = time.monotonic()
    rows: list[TurnRow] = []
    env = arm.env(options.time_scale)
    with ExitStack() as stack:
        settings = " ".join(f"{k}={v}" for k, v in env.items()) or "plugin defaults"
        say(f"[{arm.name}] starting emulators and proxy (plugin {'on: ' + settings if arm.plugin else 'off'})")
        processes = start_stack(arm, options, workdir, stack, say)
        with httpx.Client(timeout=REQUEST_TIMEOUT_S, trust_env=False) as client:
            for index, conversation in enumerate(conversations, start=1):
                start = starts.get(conversation.id, 1)
                say(f"[{arm.name}] conversation {index}/{len(conversations)}: {conversation.id} "
                    f"({conversation.source}, {len(conversation.turns)} turns, {conversation.chars:,} chars"
                    f"{', %d tools' % len(conversation.tools) if conversation.tools else ''}); "
                    + (f"replay from request {start}, the {start - 1} before it sent as history"
                       if start > 1 else "replay from the first request"))
                printer.begin()
                rows += replay_conversation(conversation, arm, processes, options, client, printer.emit, start)
                printer.end()
            backend = backend_totals(_chat_entries(processes.fast, client), _chat_entries(processes.slow, client))
        say(f"[{arm.name}] stopping processes")
    wall_s = time.monotonic() - began
    return ArmResult(arm=arm, env=env, rows=rows, summary=summarize(arm, rows, wall_s), backend=backend)


# ------------------------------------------------------------------- comparison


@dataclass(frozen=True)
class EscalatedTurn:
    """The first request of a conversation served by ``slow``, in one arm."""

    request: int
    turn: str
    prompt_tokens: int | None
    cached_tokens: int | None
    ttft_s: float | None
    server_ttft_s: float | None
    warms_landed: int  # warms of this conversation that landed on slow up to this request
    largest_warm_tokens: int | None  # prompt tokens of the largest of them
    previous_estimate: int | None  # routing estimate of the request before it (None: it was the first)

    @property
    def cached_fraction(self) -> float | None:
        if not self.prompt_tokens or self.cached_tokens is None:
            return None
        return self.cached_tokens / self.prompt_tokens


@dataclass(frozen=True)
class EscalationComparison:
    conversation: str
    source: str
    warm_on: EscalatedTurn | None
    warm_off: EscalatedTurn | None

    @property
    def ratio(self) -> float | None:
        """Client TTFT warm-off / warm-on of the escalated turn (> 1: warm-ahead is faster)."""
        return _ratio(self.warm_off and self.warm_off.ttft_s, self.warm_on and self.warm_on.ttft_s)

    @property
    def server_ratio(self) -> float | None:
        """The same on the slow backend's own TTFT (without the proxy's latency)."""
        return _ratio(self.warm_off and self.warm_off.server_ttft_s, self.warm_on and self.warm_on.server_ttft_s)


def _ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or not denominator:
        return None
    return numerator / denominator


def escalated_turn(rows: Sequence[TurnRow]) -> EscalatedTurn | None:
    """The escalated turn of one conversation's rows (in replay order); ``None`` if none reached slow."""
    warm_sizes: list[int] = []
    previous: TurnRow | None = None
    for row in rows:
        warm_sizes += [w["prompt_tokens"] or 0 for w in row.warms if w["status"] == 200]
        if row.group == SLOW_GROUP:
            return EscalatedTurn(
                request=row.request, turn=row.turn, prompt_tokens=row.prompt_tokens,
                cached_tokens=row.cached_tokens, ttft_s=row.ttft_s, server_ttft_s=row.server_ttft_s,
                warms_landed=len(warm_sizes), largest_warm_tokens=max(warm_sizes, default=None),
                previous_estimate=previous.estimate_routing if previous else None,
            )
        previous = row
    return None


def compare(warm_on_rows: Sequence[TurnRow], warm_off_rows: Sequence[TurnRow]) -> list[EscalationComparison]:
    """Pair the escalated turns of each conversation (in the warm-on arm's order)."""
    def by_conversation(rows: Sequence[TurnRow]) -> dict[str, list[TurnRow]]:
        grouped: dict[str, list[TurnRow]] = {}
        for row in rows:
            grouped.setdefault(row.conversation, []).append(row)
        return grouped

    on, off = by_conversation(warm_on_rows), by_conversation(warm_off_rows)
    sources = {r.conversation: r.source for r in [*warm_on_rows, *warm_off_rows]}
    return [
        EscalationComparison(conversation=cid, source=sources[cid], warm_on=escalated_turn(on.get(cid, [])),
                             warm_off=escalated_turn(off.get(cid, [])))
        for cid in [*on, *(c for c in off if c not in on)]
    ]


def explain(item: EscalationComparison, *, time_scale: float, target: float = TARGET_TTFT_RATIO) -> str | None:
    """Why the escalated turn's ratio is below ``target`` (``None`` when it is not)."""
    on, off = item.warm_on, item.warm_off
    if on is None or off is None:
        missing = [name for name, turn in ((WARM_ON, on), (WARM_OFF, off)) if turn is None]
        return f"no request was served by slow in {' and '.join(missing)}"
    if item.ratio is not None and item.ratio >= target:
        return None
    parts = []
    if on.request != off.request:
        parts.append(f"the arms escalated at different requests ({on.request} vs {off.request})")
    prompt = on.prompt_tokens or 0
    cached = on.cached_tokens or 0
    threshold = int(WARM_THRESHOLD * FAST_WINDOW)
    if on.warms_landed == 0:
        if on.previous_estimate is not None and on.previous_estimate < threshold:
            parts.append(
                f"no warm could fire: the request before was estimated at {on.previous_estimate:,} tokens, below the "
                f"warm threshold ({threshold:,}), and this one jumped to {prompt:,} tokens, past the fast window"
            )
        else:
            parts.append("no warm landed on slow before this request")
    uncached = max(prompt - cached, 0)
    emulated_s = uncached / SLOW_PREFILL_TPS
    parts.append(
        f"{cached:,} of {prompt:,} prompt tokens ({cached / prompt:.0%}) were cached with warm-ahead"
        + (f" (largest warm: {on.largest_warm_tokens:,} tokens)" if on.largest_warm_tokens else "")
        + f"; {uncached:,} still prefilled on slow: {emulated_s:.1f}s emulated, {emulated_s * time_scale:.2f}s real"
        if prompt else "no usage reported"
    )
    if item.server_ratio is not None and item.ratio is not None and item.server_ratio >= target > item.ratio:
        parts.append(f"the slow backend's own TTFT ratio is {item.server_ratio:.1f}x: the rest is proxy latency")
    return "; ".join(parts)


# ------------------------------------------------------------------------ output

HEADER = (
    f"  {'req':>3} {'turn':>5} {'msgs':>4} {'est.route':>9} {'est.safe':>8} {'prompt':>7} "
    f"{'served':>6} {'max_tok':>7} {'ttft_s':>7} {'cached':>7} {'attempts':<10} note"
)


def _fmt(value: Any, spec: str = "") -> str:
    return "-" if value is None else format(value, spec)


def format_row(row: TurnRow) -> str:
    attempts = ",".join(f"{a['group']}:{a['status']}" for a in row.attempts) or "-"
    notes = []
    if row.crossed_threshold:
        notes.append(f"est >= {WARM_THRESHOLD:.0%} of fast window")
    if row.escalated_proactively:
        notes.append("proactive->slow")
    if row.escalated_after_error:
        notes.append("fallback after 400")
    if row.clamped:
        notes.append(f"clamped {row.max_tokens_requested}->{row.max_tokens_backend}")
    for warm in row.warms:
        if warm["status"] == 200:
            computed = (warm["prompt_tokens"] or 0) - (warm["cached_tokens"] or 0)
            notes.append(f"warm landed on slow: {warm['prompt_tokens']:,} tok, {computed:,} computed")
        else:
            notes.append(f"warm FAILED on slow: HTTP {warm['status']}")
    if row.header_group and row.group and row.header_group != row.group:
        notes.append(f"header group {row.header_group}")
    if row.status != 200:
        notes.append(f"HTTP {row.status}")
    if row.error:
        notes.append(f"error: {row.error[:80]}")
    return (
        f"  {row.request:>3} {row.turn:>5} {row.messages:>4} {row.estimate_routing:>9} {row.estimate_safe:>8} "
        f"{_fmt(row.prompt_tokens):>7} {_fmt(row.group):>6} {_fmt(row.max_tokens_backend):>7} "
        f"{_fmt(row.ttft_s, '.3f'):>7} {_fmt(row.cached_tokens):>7} {attempts:<10} {'; '.join(notes)}"
    )


def is_interesting(row: TurnRow, first: bool) -> bool:
    """Rows printed by default: the first, the threshold crossing, warms, clamps, slow, trouble."""
    return (first or row.crossed_threshold or bool(row.warms) or row.clamped or row.group != FAST_GROUP
            or row.failed_attempts > 0 or row.status != 200 or bool(row.error))


class RowPrinter:
    """Prints a conversation's rows as they come: every row, or only the interesting ones with a
    count of those left out."""

    def __init__(self, say: Callable[[str], None], all_rows: bool) -> None:
        self._say = say
        self._all = all_rows
        self._first = True
        self._hidden = 0

    def begin(self) -> None:
        self._first, self._hidden = True, 0
        self._say(HEADER)

    def emit(self, row: TurnRow) -> None:
        if self._all or is_interesting(row, self._first):
            self._flush()
            self._say(format_row(row))
        else:
            self._hidden += 1
        self._first = False

    def end(self) -> None:
        self._flush()

    def _flush(self) -> None:
        if self._hidden:
            self._say(f"  ... {self._hidden} request(s) served by fast, no warm or clamp (--all-rows shows them)")
            self._hidden = 0


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
        clamped=sum(1 for r in rows if r.clamped),
        cached_tokens=sum(r.cached_tokens or 0 for r in rows),
        prompt_tokens=sum(r.prompt_tokens or 0 for r in rows),
        mean_ttft_fast_s=_mean(r.ttft_s for r in rows if r.group == FAST_GROUP),
        mean_ttft_slow_s=_mean(r.ttft_s for r in rows if r.group == SLOW_GROUP),
        wall_s=wall_s,
    )


def format_summary(summary: Summary, backend: BackendTotals) -> str:
    return "\n".join([
        f"summary [{summary.arm}]: {summary.requests} requests replayed in {summary.conversations} conversations, "
        f"{summary.wall_s:.1f}s wall (process start included)",
        f"  served by fast: {summary.served_fast}   served by slow: {summary.served_slow}",
        f"  proactive escalations (plugin, before dispatch): {summary.proactive_escalations}",
        f"  escalations after a backend 400 (LiteLLM fallback): {summary.fallback_escalations}",
        f"  warms (slow requests with max_tokens=1): {backend.warms}, {backend.warm_prefilled_tokens:,} tokens "
        f"computed, {backend.warms_failed} failed",
        f"  failed backend attempts (HTTP >= 400 in the emulator logs): {backend.failed_attempts}",
        f"  max_tokens clamped: {summary.clamped}   client-visible errors: {summary.client_errors}",
        f"  cached prompt tokens: {summary.cached_tokens:,} of {summary.prompt_tokens:,}",
        f"  mean client TTFT: fast {_fmt(summary.mean_ttft_fast_s, '.3f')}s, slow {_fmt(summary.mean_ttft_slow_s, '.3f')}s",
    ])


def _cached_cell(turn: EscalatedTurn | None) -> str:
    if turn is None or turn.cached_tokens is None or not turn.prompt_tokens:
        return "-"
    return f"{turn.cached_tokens:,}/{turn.prompt_tokens:,} ({turn.cached_fraction:.0%})"


def comparison_totals(items: Sequence[EscalationComparison], on: ArmResult, off: ArmResult) -> dict[str, Any]:
    paired = [i for i in items if i.ratio is not None]
    sum_on = sum(i.warm_on.ttft_s for i in paired)  # type: ignore[union-attr]
    sum_off = sum(i.warm_off.ttft_s for i in paired)  # type: ignore[union-attr]
    return {
        "conversations": len(items),
        "paired": len(paired),
        "ttft_sum_warm_on_s": sum_on,
        "ttft_sum_warm_off_s": sum_off,
        "ratio_of_sums": _ratio(sum_off, sum_on),
        "min_ratio": min((i.ratio for i in paired), default=None),
        "target_ratio": TARGET_TTFT_RATIO,
        "target_met": sum(1 for i in paired if i.ratio >= TARGET_TTFT_RATIO),  # type: ignore[operator]
        "warms_fired_warm_on": on.backend.warms,
        "warm_prefilled_tokens_warm_on": on.backend.warm_prefilled_tokens,
        "warms_warm_off": off.backend.warms,
        "failed_attempts_warm_on": on.backend.failed_attempts,
        "failed_attempts_warm_off": off.backend.failed_attempts,
        "client_errors_warm_on": on.summary.client_errors,
        "client_errors_warm_off": off.summary.client_errors,
    }


def format_comparison(items: Sequence[EscalationComparison], totals: dict[str, Any], time_scale: float) -> str:
    lines = [
        "comparison: the escalated turn (first request of a conversation served by slow), warm-ahead on vs off",
        f"  {'conversation':<36} {'req':>4} {'on ttft_s':>9} {'on cached/prompt':>24} "
        f"{'off ttft_s':>10} {'off cached/prompt':>24} {'ratio':>6} {'server':>7}",
    ]
    for item in items:
        on, off = item.warm_on, item.warm_off
        req = on.request if on else (off.request if off else None)
        lines.append(
            f"  {(item.conversation + ' (' + item.source + ')')[:36]:<36} {_fmt(req):>4} "
            f"{_fmt(on and on.ttft_s, '.3f'):>9} {_cached_cell(on):>24} "
            f"{_fmt(off and off.ttft_s, '.3f'):>10} {_cached_cell(off):>24} "
            f"{_fmt(item.ratio, '.1f') + 'x' if item.ratio else '-':>6} "
            f"{_fmt(item.server_ratio, '.1f') + 'x' if item.server_ratio else '-':>7}"
        )
    lines.append("  ratio = client TTFT warm-off / warm-on; server = the same on the slow emulator's own TTFT")
    for item in items:
        reason = explain(item, time_scale=time_scale)
        if reason:
            lines.append(f"  below {TARGET_TTFT_RATIO:g}x for {item.conversation}: {reason}")
    lines += [
        f"  all escalated turns: TTFT warm-off {totals['ttft_sum_warm_off_s']:.3f}s / warm-on "
        f"{totals['ttft_sum_warm_on_s']:.3f}s = {_fmt(totals['ratio_of_sums'], '.1f')}x; "
        f"target >= {TARGET_TTFT_RATIO:g}x met for {totals['target_met']} of {totals['conversations']} conversation(s)",
        f"  warms fired (slow requests with max_tokens=1): warm-on {totals['warms_fired_warm_on']} "
        f"({totals['warm_prefilled_tokens_warm_on']:,} tokens computed), warm-off {totals['warms_warm_off']}",
        f"  failed backend attempts: warm-on {totals['failed_attempts_warm_on']}, "
        f"warm-off {totals['failed_attempts_warm_off']}; client errors: warm-on {totals['client_errors_warm_on']}, "
        f"warm-off {totals['client_errors_warm_off']}",
    ]
    return "\n".join(lines)


def _header(options: DemoOptions, arms: Sequence[Arm], conversations: int) -> str:
    ts = options.time_scale
    cold_30k = 30_000 / SLOW_PREFILL_TPS
    return "\n".join([
        f"  {conversations} conversation(s); arms: {', '.join(a.name for a in arms)}",
        f"  fast={FAST_MODEL} window {FAST_WINDOW:,}, prefill {FAST_PREFILL_TPS:,.0f} tok/s; "
        f"slow={SLOW_MODEL} window {SLOW_WINDOW:,}, prefill {SLOW_PREFILL_TPS:,.0f} tok/s; decode {DECODE_TPS:g} tok/s",
        f"  time scale {ts:g}: every emulated time x {ts:g} (a 30k-token cold prompt on slow: "
        f"{cold_30k:.0f}s emulated, {cold_30k * ts:.2f}s real)",
        f"  plugin: warm at {WARM_THRESHOLD:.0%} of the fast window, KVWARM_WARM_COOLDOWN_S="
        f"{scaled_cooldown_s(ts):g} (300 s x time scale, real seconds), KVWARM_WARM_REWARM_STEP default; "
        f"arm warm-off adds KVWARM_WARM_AHEAD=0",
        f"  replay: from the last request estimated below {options.start_fraction:.0%} of the fast window "
        f"(earlier turns sent as history), max_tokens {options.max_tokens}, "
        + (f"think time {options.think_time_s:g}s emulated ({options.think_time_s * ts:.3f}s real) between requests"
           if options.think_time_s > 0 else "no think time (requests back to back)")
        + f", {options.turns_after_escalation} request(s) after the escalated one",
    ])


# -------------------------------------------------------------------------- main


def _payload(options: DemoOptions, results: list[ArmResult], starts: dict[str, int],
             comparison: list[EscalationComparison] | None, totals: dict[str, Any] | None) -> dict[str, Any]:
    def turn(t: EscalatedTurn | None) -> dict[str, Any] | None:
        return None if t is None else dict(asdict(t), cached_fraction=t.cached_fraction)

    return {
        "options": {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(options).items()},
        "replay_start": starts,
        "arms": [
            {"arm": asdict(r.arm), "env": r.env, "summary": asdict(r.summary), "backend": asdict(r.backend),
             "rows": [dict(asdict(row), escalated_proactively=row.escalated_proactively,
                           escalated_after_error=row.escalated_after_error, clamped=row.clamped)
                      for row in r.rows]}
            for r in results
        ],
        "comparison": None if comparison is None else {
            "rows": [{"conversation": i.conversation, "source": i.source, "warm_on": turn(i.warm_on),
                      "warm_off": turn(i.warm_off), "ratio": i.ratio, "server_ratio": i.server_ratio,
                      "below_target_because": explain(i, time_scale=options.time_scale)} for i in comparison],
            "totals": totals,
        },
    }


def run_demo(options: DemoOptions, arms: list[Arm], *, json_path: Path | None = None,
             out: TextIO = sys.stdout) -> int:
    """Run every arm, print rows as they come, a summary per arm and, with both ``warm-on`` and
    ``warm-off``, the comparison of their escalated turns; 0 on success."""
    def say(text: str) -> None:
        print(text, file=out, flush=True)

    began = time.monotonic()
    say("kvwarm demo: loading conversations (ShareGPT, BFCL) ...")
    conversations = load_conversations(options)
    if not conversations:
        raise DemoError("no conversations selected (--conversations 0 and --no-bfcl)")
    starts = {c.id: replay_start(c, options.start_fraction) for c in conversations}
    say(f"  loaded in {time.monotonic() - began:.1f}s")
    say(_header(options, arms, len(conversations)))
    workdir_owner = None
    if options.workdir is None:
        workdir_owner = tempfile.TemporaryDirectory(prefix="kvwarm-demo-")
        workdir = Path(workdir_owner.name)
    else:
        workdir = Path(options.workdir)
        workdir.mkdir(parents=True, exist_ok=True)
    results: list[ArmResult] = []
    comparison = totals = None
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
    finally:
        if json_path is not None and results:
            Path(json_path).write_text(json.dumps(_payload(options, results, starts, comparison, totals), indent=2))
            say(f"rows written to {json_path}")
        if workdir_owner is not None:
            workdir_owner.cleanup()
    errors = sum(r.summary.client_errors for r in results)
    say(f"done in {time.monotonic() - began:.1f}s")
    if errors:
        say(f"FAILED: {errors} request(s) failed at the client")
        return 1
    return 0


def main_demo(args: Any, out: TextIO = sys.stdout) -> int:
    """Entry point used by ``kvwarm demo`` (``args`` from :func:`litellm_kvwarm.lab.cli.build_parser`)."""
    options = DemoOptions(
        time_scale=args.time_scale,
        sharegpt_conversations=args.conversations,
        bfcl=not args.no_bfcl,
        max_tokens=args.max_tokens,
        turns_after_escalation=args.turns_after_escalation,
        start_fraction=args.start_fraction,
        think_time_s=args.think_time,
        all_rows=args.all_rows,
        workdir=Path(args.workdir) if args.workdir else None,
    )
    arms = [ARMS[name] for name in (args.arm or DEFAULT_ARMS)]
    try:
        return run_demo(options, arms, json_path=Path(args.json) if args.json else None, out=out)
    except KeyboardInterrupt:
        print("\ninterrupted: every process started by the demo was stopped", file=out, flush=True)
        return 130
    except (ProcessError, DemoError) as exc:
        print(f"kvwarm demo failed: {exc}", file=out, flush=True)
        return 2

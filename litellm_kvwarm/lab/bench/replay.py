"""Replay the selected sessions through one arm on fresh processes (I/O), and measure the floor.

One arm = two fresh emulators (nothing cached) + one ``litellm --config`` proxy built by
:func:`litellm_kvwarm.lab.bench.arms.arm_config`. At the real-vLLM scale the two backends are the run's
shared vLLM servers instead, prefix caches emptied before the arm
(:func:`litellm_kvwarm.lab.bench.vllm_scale.prepare_arm`), each behind a fresh recording tap
(:mod:`litellm_kvwarm.lab.bench.tap`) that serves the same request log as an emulator.

Each conversation is replayed with the demo's :func:`~litellm_kvwarm.lab.demo.replay_conversation`
(streamed requests with ``model: "fast"`` in the session's API: chat, Anthropic Messages to
``/v1/messages`` or Responses to ``/v1/responses``; TTFT at the client, the emulators' (or taps') request
logs telling which backend served each request, which attempt failed and which warms landed), from
the demo's replay start (the last request estimated below 50% of the fast window; earlier turns go
as history) to one request after the escalated turn.

In arm ``d``'s run, once every conversation is replayed, the **floor** (arm ``e``) is measured:
each conversation's escalated request, sent twice straight to ``slow`` through the same proxy
(the second finds its whole prefix cached, up to the last partial block). Arm ``f`` is replayed
closed-loop (``DemoOptions.closed_loop``) and measures its own floor (``ef``) the same way, on the
escalated request its client actually sent.
"""

from __future__ import annotations

import time
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

import httpx

from .. import demo
from ..datasets import Conversation
from ..demo.settings import SLOW_EMULATOR_ARGS
from ..processes import BackendSpec, ManagedProcess, start_emulator, start_proxy, start_tap
from ..vllm_server import FAST_NAME, SLOW_NAME, VllmPair
from .arms import FLOORS, SLOW_GROUP, BenchArm, arm_config
from .scales import Scale
from .vllm_scale import PLUGIN_ENV, prepare_arm

__all__ = ["ArmRun", "FloorSample", "ReplayOptions", "backend_log", "run_arm"]

REQUEST_TIMEOUT_S = 300.0
FLOOR_SESSION_PREFIX = "kvwarm-bench-floor-"


@dataclass(frozen=True)
class ReplayOptions:
    max_tokens: int = demo.DEFAULT_MAX_TOKENS
    turns_after_escalation: int = demo.DEFAULT_TURNS_AFTER_ESCALATION
    start_fraction: float = demo.DEFAULT_START_FRACTION
    max_requests_per_conversation: int = demo.MAX_REQUESTS_PER_CONVERSATION
    #: seconds between a response and the conversation's next request (the demo's ``--think-time``; emulated
    #: seconds, scaled by the scale's time scale; 0: back to back, the benchmark's default)
    think_time_s: float = demo.DEFAULT_THINK_TIME_S

    def demo_options(self, scale: Scale) -> demo.DemoOptions:
        return demo.DemoOptions(time_scale=scale.time_scale, fast_window=scale.fast_window, max_tokens=self.max_tokens,
                                turns_after_escalation=self.turns_after_escalation,
                                start_fraction=self.start_fraction,
                                max_requests_per_conversation=self.max_requests_per_conversation,
                                think_time_s=self.think_time_s)


@dataclass(frozen=True)
class FloorSample:
    """The escalated request of one conversation, sent a second time straight to ``slow``."""

    conversation: str
    request: int
    ttft_s: float | None  # client, second send
    server_ttft_s: float | None  # slow's own TTFT of the second send (time-scaled seconds; vLLM: at the tap)
    prompt_tokens: int | None
    cached_tokens: int | None
    status: int


@dataclass
class ArmRun:
    arm: BenchArm
    env: dict[str, str]
    rows: list[demo.TurnRow]
    backend: demo.BackendTotals
    wall_s: float
    floors: list[FloorSample] = field(default_factory=list)


def backend_log(process: ManagedProcess, client: httpx.Client) -> list[dict[str, Any]]:
    """The emulator's (or tap's) chat-completion and Responses log entries (``GET /emulator/requests``),
    oldest first."""
    return demo.chat_entries(process, client)


def _start_stack(arm: BenchArm, scale: Scale, workdir: Path, stack: ExitStack,
                 say: Callable[[str], None], vllm: VllmPair | None = None) -> demo.Stack:
    def started(process: ManagedProcess) -> ManagedProcess:
        stack.callback(process.stop)
        return process

    if vllm is not None:
        return _start_tapped_stack(arm, scale, vllm, workdir, started, say)
    common = {"decode_tokens_per_s": scale.decode_tps, "time_scale": scale.time_scale, "workdir": workdir}
    fast = started(start_emulator(demo.FAST_MODEL, scale.fast_window, prefill_tokens_per_s=scale.fast_prefill_tps,
                                  request_log=workdir / f"{arm.key}-fast.jsonl", **common))
    slow = started(start_emulator(demo.SLOW_MODEL, scale.slow_window, prefill_tokens_per_s=scale.slow_prefill_tps,
                                  request_log=workdir / f"{arm.key}-slow.jsonl", extra_args=SLOW_EMULATOR_ARGS,
                                  **common))
    config = arm_config(arm, BackendSpec.of(fast, demo.FAST_MODEL), BackendSpec.of(slow, demo.SLOW_MODEL),
                        fast_window=scale.fast_window, slow_window=scale.slow_window, time_scale=scale.time_scale)
    proxy = started(start_proxy(config, workdir=workdir / f"proxy-{arm.key}"))
    say(f"  [{arm.key}] emulators and proxy healthy (proxy {proxy.startup_s:.1f}s)")
    return demo.Stack(fast=fast, slow=slow, proxy=proxy)


def _start_tapped_stack(arm: BenchArm, scale: Scale, vllm: VllmPair, workdir: Path,
                        started: Callable[[ManagedProcess], ManagedProcess], say: Callable[[str], None]) -> demo.Stack:
    """Empty prefix caches, fresh taps in front of the shared vLLM servers, a fresh proxy."""
    prepare_arm(vllm)
    fast = started(start_tap(vllm.fast, "fast", workdir=workdir, request_log=workdir / f"{arm.key}-fast.jsonl"))
    slow = started(start_tap(vllm.slow, "slow", workdir=workdir, request_log=workdir / f"{arm.key}-slow.jsonl"))
    config = arm_config(arm, BackendSpec.of(fast, FAST_NAME), BackendSpec.of(slow, SLOW_NAME),
                        fast_window=scale.fast_window, slow_window=scale.slow_window, time_scale=scale.time_scale,
                        extra_env=PLUGIN_ENV)
    proxy = started(start_proxy(config, workdir=workdir / f"proxy-{arm.key}", health_timeout_s=120))
    say(f"  [{arm.key}] prefix caches emptied, taps and proxy healthy (proxy {proxy.startup_s:.1f}s)")
    return demo.Stack(fast=fast, slow=slow, proxy=proxy)


def measure_floor(conversation: Conversation, request: int, stack: demo.Stack, client: httpx.Client,
                  max_tokens: int, sent: dict[str, Any] | None = None) -> FloorSample:
    """Send request number ``request`` of ``conversation`` (``sent``: the body the replay sent for it;
    default: the recorded one) to ``slow`` twice, in the conversation's API; report the second."""
    if sent is None:
        point = next(p for n, p in enumerate(conversation.requests(), start=1) if n == request)
        sent = demo.wire_body(conversation, point, max_tokens)
    body = dict(sent, model=SLOW_GROUP)
    session = FLOOR_SESSION_PREFIX + conversation.id
    demo.stream_request(client, stack, conversation.api, body, session)
    seen = len(backend_log(stack.slow, client))
    result = demo.stream_request(client, stack, conversation.api, body, session)
    served: list[dict[str, Any]] = []
    deadline = time.monotonic() + demo.LOG_SETTLE_S
    while not served and time.monotonic() < deadline:
        served = [e for e in backend_log(stack.slow, client)[seen:] if e.get("stream") and e.get("status") == 200]
        if not served:
            time.sleep(0.05)
    entry = served[-1] if served else {}
    usage = result["usage"] or {}
    return FloorSample(
        conversation=conversation.id, request=request, ttft_s=result["ttft_s"], server_ttft_s=entry.get("ttft_s"),
        prompt_tokens=usage.get("prompt_tokens", entry.get("prompt_tokens")),
        cached_tokens=(usage.get("prompt_tokens_details") or {}).get("cached_tokens", entry.get("cached_tokens")),
        status=result["status"],
    )


def _describe(arm: BenchArm, conversation: Conversation, rows: list[demo.TurnRow], scale: Scale) -> str:
    turn = demo.escalated_turn(rows)
    warms = sum(len(r.warms) for r in rows)
    failed = sum(r.failed_attempts for r in rows)
    if turn is None:
        where = "never escalated"
    else:
        emulated = scale.emulated_s(turn.server_ttft_s)
        cached = f", {turn.cached_fraction:.0%} cached" if turn.cached_fraction is not None else ""
        clock = "server" if scale.slow_prefill_tps is None else "emulated"
        where = (f"escalated at request {turn.request} ({turn.prompt_tokens or 0:,} tok{cached}): TTFT "
                 f"{turn.ttft_s or 0:.3f}s client" + (f", {emulated:.2f}s {clock}" if emulated is not None else ""))
    return (f"  [{arm.key}] {conversation.id} ({conversation.source}, {conversation.api}): {len(rows)} requests, {where}; "
            f"{warms} warm(s), {failed} failed attempt(s)")


def run_arm(arm: BenchArm, conversations: list[Conversation], starts: dict[str, int], scale: Scale,
            options: ReplayOptions, workdir: Path, say: Callable[[str], None], *, floor: bool = False,
            vllm: VllmPair | None = None) -> ArmRun:
    """Start fresh processes for ``arm`` (emulators, or taps over ``vllm``'s emptied servers), replay
    every conversation (closed-loop for a closed-loop arm), measure the arm's floor if asked (``floor``
    and the arm hosts one), stop."""
    began = time.monotonic()
    rows: list[demo.TurnRow] = []
    floors: list[FloorSample] = []
    demo_options = replace(options.demo_options(scale), closed_loop=arm.closed_loop)
    sent: dict[str, dict[int, dict[str, Any]]] = {}
    with ExitStack() as stack:
        say(f"[{arm.key}] {arm.label}: starting {'emulators' if vllm is None else 'taps'} and proxy")
        processes = _start_stack(arm, scale, workdir, stack, say, vllm)
        with httpx.Client(timeout=REQUEST_TIMEOUT_S, trust_env=False) as client:
            for conversation in conversations:
                bodies = sent.setdefault(conversation.id, {})
                conv_rows = demo.replay_conversation(conversation, arm.demo_arm(), processes, demo_options, client,
                                                     lambda row: None, starts.get(conversation.id, 1), sent=bodies)
                rows += conv_rows
                say(_describe(arm, conversation, conv_rows, scale))
            floor_arm = FLOORS.get(arm.key)
            if floor and floor_arm is not None:
                for conversation in conversations:
                    turn = demo.escalated_turn([r for r in rows if r.conversation == conversation.id])
                    if turn is not None:
                        sample = measure_floor(conversation, turn.request, processes, client, options.max_tokens,
                                               sent.get(conversation.id, {}).get(turn.request))
                        floors.append(sample)
                        say(f"  [{floor_arm.key}] floor {conversation.id} request {turn.request}: TTFT {sample.ttft_s or 0:.3f}s "
                            f"client, {sample.cached_tokens or 0:,}/{sample.prompt_tokens or 0:,} cached")
            backend = demo.backend_totals(backend_log(processes.fast, client), backend_log(processes.slow, client))
    env = arm.env(scale.time_scale)
    if vllm is not None and arm.plugin:
        env = {**env, **PLUGIN_ENV}
    return ArmRun(arm=arm, env=env, rows=rows, backend=backend,
                  wall_s=time.monotonic() - began, floors=floors)

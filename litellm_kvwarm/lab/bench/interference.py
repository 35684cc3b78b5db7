"""What warms cost live traffic on the slow group (issue 16 item 7): live requests' TTFT on ``slow``
while warm-ahead fires 10k-token warms at it, with warms off, warms first-come-first-served, and
warms at low priority, in pieces and whole.

One arm = fresh processes: a ``fast`` emulator, a ``slow`` emulator run as vLLM with
``--scheduling-policy priority --max-num-batched-tokens 2048`` (a priority-ordered prefill queue,
2,048-token chunks) and ``--prefill-order running-first``: vLLM V1's rule, a prefill that has
started keeps the GPU to its end and ``priority`` orders only the waiting queue; and the plugin's
proxy. Every arm gets the same traffic, on one schedule (real
seconds = emulated × time scale), for ``duration_s`` emulated seconds:

* **live**: one request every ``live_interval_s``, each its own session, ``model: "slow"`` sent
  directly, streamed, ``max_tokens`` :data:`LIVE_MAX_TOKENS`; the prompt is a ShareGPT prefix of
  about :data:`LIVE_TOKENS` tokens (the first request of a conversation past that size), a
  different conversation each time (nothing cached);
* **warm sessions**: one every ``warm_interval_s``, each a ShareGPT prefix past the plugin's warm
  threshold (the first request of a conversation estimated at ≥ :data:`WARM_FRACTION` of the fast
  window), sent to ``fast``, streamed, with its own session id: the plugin fires a ``max_tokens=1``
  warm of that prompt (10k+ tokens) at ``slow``. The live and warm conversations are disjoint.

Arms (plugin env on top of the demo's scaled warm cooldown; reply-warm off in all, so the
warm traffic is warm-ahead's alone): ``no-warm`` (``KVWARM_WARM_AHEAD=0``), ``fcfs``
(``KVWARM_WARM_PRIORITY=0 KVWARM_WARM_PIECE_TOKENS=0``: whole warms without ``priority``, queued
with live requests by arrival: what warms cost unmitigated), ``low-priority`` (the plugin's
defaults: ``KVWARM_WARM_PRIORITY=10``, warms carry ``priority: 10`` in ``extra_body`` where live
requests have vLLM's default 0, each warm sent in pieces (:mod:`litellm_kvwarm.warm_pieces`) of 5% of the median
live prompt `slow` served lately (:mod:`litellm_kvwarm.warm_piece_size`: ~190 tokens here), at most 64 a warm),
``low-priority-fixed`` (the earlier defaults: 512-token pieces, at most 16 a warm, so ~630 for a 10.7k-token warm),
``low-priority-whole`` (the same warms sent whole: what priority alone gives under V1's order) and
``low-priority-between-chunks`` (whole, on a slow emulator whose ``--prefill-order between-chunks`` lets a better
waiting request take the next chunk: what priority would give if a running prefill yielded, which vLLM V1 does not do).

Measured per live request: TTFT at the client (real seconds, proxy included) and at the slow
emulator (its request log's ``ttft_s`` ÷ time scale: emulated seconds, arrival to first token,
queueing included; ``queue_wait_s`` too). :func:`summarize_interference` (pure) gives per arm the
p50/p90/p99, the warms that reached ``slow`` (count, prefill tokens, ``priority`` values seen) and
the ratios of each warm arm's live p99 to the no-warm arm's.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import httpx

from .. import demo
from ..datasets import Conversation, longest_sharegpt
from ..processes import BackendSpec, proxy_config, start_emulator, start_proxy
from ...tokens import estimate_request
from .scales import Scale
from .stats import distribution, ratio

__all__ = ["ARMS", "ARM_PREFILL_ORDER", "InterferenceOptions", "LIVE_MAX_TOKENS", "SLOW_FLAGS", "run_interference",
           "summarize_interference", "traffic"]

NO_WARM, FCFS, LOW_PRIORITY = "no-warm", "fcfs", "low-priority"
LOW_PRIORITY_WHOLE, LOW_PRIORITY_CHUNKS = "low-priority-whole", "low-priority-between-chunks"
#: the pieces of the defaults before they followed the live prompts: 512 tokens, at most 16 a warm
LOW_PRIORITY_FIXED = "low-priority-fixed"
#: warms sent whole (no pieces)
WHOLE = {"KVWARM_WARM_PIECE_TOKENS": "0"}
#: arm -> plugin env (besides the scaled cooldown and KVWARM_REPLY_WARM=0)
ARMS: dict[str, dict[str, str]] = {
    NO_WARM: {"KVWARM_WARM_AHEAD": "0"},
    FCFS: {"KVWARM_WARM_PRIORITY": "0", **WHOLE},
    LOW_PRIORITY: {"KVWARM_WARM_PRIORITY": "10"},
    LOW_PRIORITY_FIXED: {"KVWARM_WARM_PRIORITY": "10", "KVWARM_WARM_PIECE_SHARE": "0", "KVWARM_WARM_MAX_PIECES": "16"},
    LOW_PRIORITY_WHOLE: {"KVWARM_WARM_PRIORITY": "10", **WHOLE},
    LOW_PRIORITY_CHUNKS: {"KVWARM_WARM_PRIORITY": "10", **WHOLE},
}
#: arms whose slow emulator runs another ``--prefill-order`` than the options' (vLLM V1's)
ARM_PREFILL_ORDER = {LOW_PRIORITY_CHUNKS: "between-chunks"}
COMMON_ENV = {"KVWARM_REPLY_WARM": "0"}
SLOW_FLAGS = ("--scheduling-policy", "priority", "--max-num-batched-tokens", "2048")
LIVE_TOKENS = 3_000
LIVE_MAX_TOKENS = 16
WARM_FRACTION = 0.65  # of the fast window: past the plugin's default warm threshold (0.6)
WARM_MAX_TOKENS = 16
WARMUP_MAX_TOKENS = 2  # the discovery requests before the schedule (neither live nor warm)
TARGET_FACTOR = 1.05
SESSION_PREFIX = "kvwarm-bench-interference-"


@dataclass(frozen=True)
class InterferenceOptions:
    """The schedule, in emulated seconds (× time scale = real)."""

    #: 100 live requests: a p99 that is not just the largest of a few dozen
    duration_s: float = 1000.0
    live_interval_s: float = 10.0
    warm_interval_s: float = 40.0
    #: the first warm session starts this long after the first live request: warms meet a server whose live
    #: traffic runs already (the plugin sizes pieces from it after 8 live prompts)
    warm_offset_s: float = 100.0
    workers: int = 16
    arms: tuple[str, ...] = tuple(ARMS)  # which of ARMS to run, in order
    #: the slow emulator's ``--prefill-order`` in every arm but those of :data:`ARM_PREFILL_ORDER`:
    #: vLLM V1's ``"running-first"`` (a started prefill keeps the GPU), or ``"between-chunks"``
    prefill_order: str = "running-first"

    def slow_flags(self, arm: str | None = None) -> tuple[str, ...]:
        """The slow emulator's scheduling flags in ``arm`` (:data:`SLOW_FLAGS` and the prefill order)."""
        return (*SLOW_FLAGS, "--prefill-order", ARM_PREFILL_ORDER.get(arm or "", self.prefill_order))

    def quick(self) -> "InterferenceOptions":
        return replace(self, duration_s=400.0)

    def counts(self) -> tuple[int, int]:
        """(live requests, warm sessions) of the schedule."""
        live = int(self.duration_s // self.live_interval_s)
        warm = int(max(self.duration_s - self.warm_offset_s, 0) // self.warm_interval_s)
        return live, warm


def _first_point_past(conversation: Conversation, tokens: float, below: float | None = None) -> dict[str, Any] | None:
    for point in conversation.requests():
        body = demo.request_body(conversation, point, LIVE_MAX_TOKENS)
        routing = estimate_request(body, call_kind="chat", estimator=demo.PLUGIN_ESTIMATOR).routing
        if routing >= tokens:
            return body if below is None or routing < below else None
    return None


def traffic(options: InterferenceOptions, fast_window: int,
            conversations: Sequence[Conversation] | None = None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(live bodies, warm-session bodies): chat bodies cut from disjoint ShareGPT conversations (the
    longest first: warm sessions take those with a request between :data:`WARM_FRACTION` and 90% of
    ``fast_window``, live requests the next ones past :data:`LIVE_TOKENS`; a conversation whose first
    two messages repeat an earlier one's is skipped). Raises ``RuntimeError``
    when the conversations do not give enough."""
    n_live, n_warm = options.counts()
    pool = list(conversations) if conversations is not None else longest_sharegpt(3 * (n_live + n_warm) + 10)
    live: list[dict[str, Any]] = []
    warm: list[dict[str, Any]] = []
    seen: set[str] = set()
    for conversation in pool:
        opening = json.dumps(conversation.messages[:2], sort_keys=True)
        if opening in seen:  # ShareGPT holds copies: a copy would find its prefix cached
            continue
        seen.add(opening)
        if len(warm) < n_warm:
            body = _first_point_past(conversation, WARM_FRACTION * fast_window, 0.9 * fast_window)
            if body is not None:
                warm.append(dict(body, model=demo.FAST_GROUP, max_tokens=WARM_MAX_TOKENS))
                continue
        if len(live) < n_live:
            body = _first_point_past(conversation, LIVE_TOKENS, 2 * LIVE_TOKENS)
            if body is not None:
                live.append(dict(body, model=demo.SLOW_GROUP))
        if len(live) >= n_live and len(warm) >= n_warm:
            break
    if len(live) < n_live or len(warm) < n_warm:
        raise RuntimeError(f"interference traffic: {len(live)}/{n_live} live and {len(warm)}/{n_warm} warm-session "
                           f"prompts from {len(pool)} conversations")
    return live, warm


def _send(client: httpx.Client, stack: demo.Stack, body: dict[str, Any], session: str, at: float,
          began: float) -> dict[str, Any]:
    delay = began + at - time.monotonic()
    if delay > 0:
        time.sleep(delay)
    sent = time.monotonic() - began
    try:
        result = demo.stream_request(client, stack, "chat", body, session)
    except httpx.HTTPError as exc:
        result = {"status": 0, "error": f"{type(exc).__name__}: {exc}", "ttft_s": None}
    return {"session": session, "at_s": at, "sent_s": sent, "status": result["status"], "error": result["error"],
            "ttft_s": result["ttft_s"]}


def _run_arm(name: str, env: Mapping[str, str], live: list[dict[str, Any]], warm: list[dict[str, Any]],
             options: InterferenceOptions, scale: Scale, workdir: Path, say: Callable[[str], None]) -> dict[str, Any]:
    began_arm = time.monotonic()
    ts = scale.time_scale
    with ExitStack() as stack:
        def started(process):
            stack.callback(process.stop)
            return process

        common = {"decode_tokens_per_s": scale.decode_tps, "time_scale": ts, "workdir": workdir}
        fast = started(start_emulator(demo.FAST_MODEL, scale.fast_window, prefill_tokens_per_s=scale.fast_prefill_tps,
                                      request_log=workdir / f"{name}-fast.jsonl", **common))
        slow = started(start_emulator(demo.SLOW_MODEL, scale.slow_window, prefill_tokens_per_s=scale.slow_prefill_tps,
                                      request_log=workdir / f"{name}-slow.jsonl", extra_args=options.slow_flags(name), **common))
        plugin_env = {**demo.Arm(name).env(ts), **COMMON_ENV, **env}
        config = proxy_config({demo.FAST_GROUP: [BackendSpec.of(fast, demo.FAST_MODEL)],
                               demo.SLOW_GROUP: [BackendSpec.of(slow, demo.SLOW_MODEL)]},
                              callbacks=True, env_vars=plugin_env, router_settings={"num_retries": 0})
        proxy = started(start_proxy(config, workdir=workdir / f"proxy-{name}"))
        processes = demo.Stack(fast=fast, slow=slow, proxy=proxy)
        with httpx.Client(timeout=demo.REQUEST_TIMEOUT_S, trust_env=False) as client:
            for group in (demo.FAST_GROUP, demo.SLOW_GROUP):  # window discovery before the clock starts
                demo.stream_request(client, processes, "chat", {
                    "model": group, "messages": [{"role": "user", "content": f"hello {name}"}],
                    "max_tokens": WARMUP_MAX_TOKENS, "stream": True}, SESSION_PREFIX + f"discovery-{group}")
            jobs = [(body, f"{SESSION_PREFIX}live-{i}", i * options.live_interval_s * ts) for i, body in enumerate(live)]
            jobs += [(body, f"{SESSION_PREFIX}warm-{j}", (options.warm_offset_s + j * options.warm_interval_s) * ts)
                     for j, body in enumerate(warm)]
            began = time.monotonic()
            with ThreadPoolExecutor(options.workers) as pool:
                futures = [(session, pool.submit(_send, client, processes, body, session, at, began))
                           for body, session, at in sorted(jobs, key=lambda j: j[2])]
                sent = {session: f.result() for session, f in futures}
            time.sleep(demo.LOG_SETTLE_S * 0.5)  # the last warms' log entries
            slow_log = demo.chat_entries(slow, client)
    live_sent = [v for k, v in sent.items() if "-live-" in k]
    served = [e for e in slow_log if e.get("stream") and e.get("status") == 200 and e.get("max_tokens") == LIVE_MAX_TOKENS]
    warms = [e for e in slow_log if demo.is_warm(dict(e, group=demo.SLOW_GROUP))]
    say(f"  [interference {name}] {len(live_sent)} live, {len(warm)} warm sessions, {len(warms)} warms reached slow "
        f"({time.monotonic() - began_arm:.0f}s)")
    return {
        "env": plugin_env,
        "live_client_ttft_s": [r["ttft_s"] for r in live_sent if r["status"] == 200 and not r["error"]],
        "live_errors": sum(1 for r in live_sent if r["status"] != 200 or r["error"]),
        "live_server_ttft_s": [e.get("ttft_s") for e in served],
        "live_queue_wait_s": [e.get("queue_wait_s") for e in served],
        "live_prompt_tokens": [e.get("prompt_tokens") for e in served],
        "warm_sessions": len(warm),
        "warm_session_errors": sum(1 for k, r in sent.items() if "-warm-" in k and (r["status"] != 200 or r["error"])),
        "warms": [{"status": e.get("status"), "prompt_tokens": e.get("prompt_tokens"),
                   "cached_tokens": e.get("cached_tokens"), "priority": e.get("priority")} for e in warms],
        "wall_s": time.monotonic() - began_arm,
    }


def _scaled(values: Sequence[float | None], time_scale: float) -> list[float]:
    return [v / time_scale for v in values if v is not None] if time_scale > 0 else []


def summarize_interference(arms: Mapping[str, Mapping[str, Any]], time_scale: float) -> dict[str, Any]:
    """Per arm (the raw record of :func:`run_interference`): live TTFT distributions, client (real
    seconds) and server (emulated seconds: the log's ``ttft_s`` ÷ ``time_scale``), queue wait
    (emulated s), errors, warms that reached slow (count, prefill tokens = prompt − cached of those
    that succeeded, sorted distinct ``priority`` values); then ``p99_ratio`` of each warm arm over the
    no-warm arm on both clocks (pure)."""
    out: dict[str, Any] = {}
    for name, raw in arms.items():
        warms = raw.get("warms") or []
        ok = [w for w in warms if w.get("status") == 200]
        out[name] = {
            "live": len(raw.get("live_client_ttft_s") or []) + (raw.get("live_errors") or 0),
            "live_errors": raw.get("live_errors") or 0,
            "client_ttft_s": distribution(raw.get("live_client_ttft_s") or []).as_dict(),
            "server_ttft_s": distribution(_scaled(raw.get("live_server_ttft_s") or [], time_scale)).as_dict(),
            "server_ttft_values_s": sorted(_scaled(raw.get("live_server_ttft_s") or [], time_scale)),
            "queue_wait_s": distribution(_scaled(raw.get("live_queue_wait_s") or [], time_scale)).as_dict(),
            "warm_sessions": raw.get("warm_sessions"),
            "warm_session_errors": raw.get("warm_session_errors") or 0,
            "warms": len(warms),
            "warms_failed": len(warms) - len(ok),
            "warm_prefill_tokens": sum((w.get("prompt_tokens") or 0) - (w.get("cached_tokens") or 0) for w in ok),
            # what one warm request (a piece, or a whole warm) held the server for: its own prefill (tokens)
            "warm_request_prefill_tokens": distribution(
                (w.get("prompt_tokens") or 0) - (w.get("cached_tokens") or 0) for w in ok).as_dict(),
            "live_prompt_tokens": distribution(raw.get("live_prompt_tokens") or []).as_dict(),
            "warm_priorities": sorted({w.get("priority") for w in warms}, key=lambda p: (p is None, p)),
            "env": dict(raw.get("env") or {}),
            "wall_s": raw.get("wall_s"),
        }
    base = out.get(NO_WARM)
    ratios = {}
    for name in (FCFS, LOW_PRIORITY, LOW_PRIORITY_FIXED, LOW_PRIORITY_WHOLE, LOW_PRIORITY_CHUNKS):
        if name in out and base is not None:
            ratios[name] = {clock: ratio(out[name][clock]["p99"], base[clock]["p99"])
                            for clock in ("server_ttft_s", "client_ttft_s")}
    return {"arms": out, "p99_ratio": ratios}


def run_interference(options: InterferenceOptions, scale: Scale, workdir: Path,
                     say: Callable[[str], None] = print) -> dict[str, Any]:
    """The arms (``options.arms``, default all three) on fresh processes each (emulator scale; the
    schedule needs a time scale > 0), then :func:`summarize_interference` with the options and the
    slow emulator's flags. ``ValueError`` for an unknown arm or a time scale of 0."""
    if scale.time_scale <= 0:
        raise ValueError("the interference benchmark needs a time scale > 0 (its schedule is in emulated seconds)")
    workdir.mkdir(parents=True, exist_ok=True)
    live, warm = traffic(options, scale.fast_window)
    say(f"  interference: {len(live)} live requests (~{LIVE_TOKENS:,} tokens, every {options.live_interval_s:g} emulated s), "
        f"{len(warm)} warm sessions (≥ {WARM_FRACTION:.0%} of the fast window, every {options.warm_interval_s:g} s)")
    unknown = [a for a in options.arms if a not in ARMS]
    if unknown:
        raise ValueError(f"interference arms {unknown} unknown; known: {list(ARMS)}")
    raw = {name: _run_arm(name, ARMS[name], live, warm, options, scale, workdir / name, say) for name in options.arms}
    result = summarize_interference(raw, scale.time_scale)
    prompt = [estimate_request(b, call_kind="chat", estimator=demo.PLUGIN_ESTIMATOR).routing for b in live]
    warm_prompt = [estimate_request(b, call_kind="chat", estimator=demo.PLUGIN_ESTIMATOR).routing for b in warm]
    result["options"] = dict(asdict(options), time_scale=scale.time_scale, slow_flags=list(options.slow_flags()),
                             arm_prefill_order={a: ARM_PREFILL_ORDER.get(a, options.prefill_order) for a in options.arms},
                             live_requests=len(live), live_max_tokens=LIVE_MAX_TOKENS,
                             live_prompt_estimate=distribution(prompt).as_dict(),
                             warm_session_prompt_estimate=distribution(warm_prompt).as_dict(),
                             slow_prefill_tps=scale.slow_prefill_tps, chunk_tokens=2048)
    return result

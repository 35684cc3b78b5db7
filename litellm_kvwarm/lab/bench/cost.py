"""What the plugin's per-request work costs, in-process, against ``litellm.token_counter``.

The plugin's work on one request is its pure path, as ``hook.py`` runs it with no I/O:

* pre-call: :func:`~litellm_kvwarm.tokens.estimate_request` → :func:`~litellm_kvwarm.policy.needs_exact_count`
  → :func:`~litellm_kvwarm.policy.decide_route` (and the warm threshold comparison);
* per attempt: the clamp hook reuses the pre-call estimate (the hook passes it in the request's
  metadata) → :func:`~litellm_kvwarm.policy.clamp_output`.

Left out: window look-ups (a dict read once discovered), a ``/tokenize`` exact count (only near the
window edge), session hashing and metrics. ``litellm.token_counter`` (what
``enable_pre_call_checks`` uses; cl100k without a model) runs on the same request bodies.

Requests are real text: ShareGPT messages (the longest conversations, in order) until the
emulator's tokenizer counts 1k, 10k or 100k tokens; "with tools" adds the BFCL tool schemas of
its largest long-context conversation. Each timing is one call, ``time.perf_counter_ns`` (wall)
and ``time.process_time_ns`` (CPU), after one warm-up call.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...config import DEFAULT_WARM_THRESHOLD
from ..datasets import bfcl_conversation, longest_sharegpt
from ...policy import clamp_output, decide_route, needs_exact_count
from ...tokens import calibrated_estimator, estimate_request

#: what the plugin uses by default for served names it cannot place in a family (fast-8b, slow-27b)
PLUGIN_ESTIMATOR = calibrated_estimator("any")
from .stats import distribution, ratio

__all__ = ["CostCase", "build_cases", "measure", "plugin_work", "run_cost"]

SIZES = (1_000, 10_000, 100_000)
OUTPUT_FLOOR = 256
MAX_TOKENS = 4096


@dataclass(frozen=True)
class CostCase:
    name: str  # "10k" / "10k+tools"
    target_tokens: int
    tools: bool
    payload: dict[str, Any]


def plugin_work(payload: Mapping[str, Any], *, fast_window: int, slow_window: int) -> int:
    """The plugin's pure per-request path on ``payload`` (see module docstring); returns max_tokens."""
    estimate = estimate_request(payload, call_kind="chat", estimator=PLUGIN_ESTIMATOR)
    needs_exact_count(estimate, OUTPUT_FLOOR, fast_window, "slow")
    route = decide_route(source="fast", target="slow", routing_estimate=estimate.routing,
                         output_floor_tokens=OUTPUT_FLOOR, source_window=fast_window, target_window=slow_window)
    window = slow_window if route.escalate else fast_window
    _warm = not route.escalate and estimate.routing >= DEFAULT_WARM_THRESHOLD * fast_window
    decision = clamp_output(requested=payload.get("max_tokens"), prompt_tokens=estimate.safe, window=window,
                            output_floor_tokens=OUTPUT_FLOOR, exact=False)
    return decision.max_tokens or 0


def build_cases(sizes: Sequence[int] = SIZES) -> list[CostCase]:
    from ..emulator.tokenizer import get_encoding

    encoding = get_encoding()
    pool = [m for c in longest_sharegpt(6) for m in c.messages if isinstance(m.get("content"), str)]
    tools = bfcl_conversation().tools
    cases = []
    for size in sizes:
        messages, total = [], 0
        for message in pool:
            if total >= size:
                break
            budget = size - total
            text = message["content"]
            tokens = encoding.encode(text, disallowed_special=())
            if len(tokens) > budget:
                text = encoding.decode(tokens[:budget])
                tokens = tokens[:budget]
            messages.append({"role": message["role"], "content": text})
            total += len(tokens)
        if messages and messages[-1]["role"] != "user":
            messages.append({"role": "user", "content": "Please continue."})
        label = f"{size // 1000}k"
        base = {"model": "fast", "messages": messages, "max_tokens": MAX_TOKENS}
        cases.append(CostCase(label, size, False, base))
        cases.append(CostCase(label + "+tools", size, True, dict(base, tools=tools)))
    return cases


def measure(fn: Callable[[], Any], repeats: int) -> dict[str, Any]:
    """Per-call wall and CPU microseconds of ``fn`` over ``repeats`` calls (after one warm-up)."""
    fn()
    wall, cpu = [], []
    for _ in range(repeats):
        c0, w0 = time.process_time_ns(), time.perf_counter_ns()
        fn()
        w1, c1 = time.perf_counter_ns(), time.process_time_ns()
        wall.append((w1 - w0) / 1000)
        cpu.append((c1 - c0) / 1000)
    return {"wall_us": distribution(wall).as_dict(), "cpu_us": distribution(cpu).as_dict()}


def _repeats(size: int, quick: bool) -> tuple[int, int]:
    """(plugin repeats, token_counter repeats): token_counter at 100k costs ~0.1 s a call."""
    if quick:
        return 20, 3
    return 500, max(20, min(300, 2_000_000 // size))


def run_cost(*, fast_window: int, slow_window: int, quick: bool = False, sizes: Sequence[int] = SIZES,
             say: Callable[[str], None] = lambda s: None) -> dict[str, Any]:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    cases = build_cases(sizes)
    results = []
    for case in cases:
        payload = case.payload
        tools = payload.get("tools")
        plugin_n, counter_n = _repeats(case.target_tokens, quick)
        tokens = litellm.token_counter(messages=payload["messages"], tools=tools)
        plugin = measure(lambda: plugin_work(payload, fast_window=fast_window, slow_window=slow_window), plugin_n)
        counter = measure(lambda: litellm.token_counter(messages=payload["messages"], tools=tools), counter_n)
        row = {
            "case": case.name, "target_tokens": case.target_tokens, "tools": case.tools,
            "token_counter_tokens": tokens, "chars": sum(len(m["content"]) for m in payload["messages"]),
            "plugin_repeats": plugin_n, "token_counter_repeats": counter_n,
            "plugin": plugin, "token_counter": counter,
            "cpu_p50_speedup": ratio(counter["cpu_us"]["p50"], plugin["cpu_us"]["p50"]),
            "cpu_p99_speedup": ratio(counter["cpu_us"]["p99"], plugin["cpu_us"]["p99"]),
        }
        results.append(row)
        say(f"  cost {case.name:>11}: plugin CPU p50 {plugin['cpu_us']['p50']:.1f}µs p99 {plugin['cpu_us']['p99']:.1f}µs"
            f" | token_counter p50 {counter['cpu_us']['p50']:.0f}µs | {row['cpu_p50_speedup']:.0f}x")
    return {"cases": results}

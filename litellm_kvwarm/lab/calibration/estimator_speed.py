"""Cost per request of the estimators (µs), at about 1k, 10k and 100k prompt tokens.

The requests are real text: ShareGPT conversations concatenated message by message until
the cl100k count of the request reaches the size (one request of prose/code and one of
non-English text per size). Each estimator is timed with ``timeit`` (best of
:data:`REPEATS` rounds, each the mean of enough calls to last ~0.1 s), estimating from the
request body exactly as the hook does (``estimate_request``). ``litellm.token_counter`` is
LiteLLM's own counter (a real tokenizer) for comparison.
"""

from __future__ import annotations

import os
import timeit
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ..datasets import iter_sharegpt
from ...tokens import calibrated_estimator, estimate_request

__all__ = ["SIZES", "CostRow", "benchmark", "build_requests"]

SIZES = (1_000, 10_000, 100_000)
REPEATS = 5


@dataclass(frozen=True)
class CostRow:
    """Microseconds per request for one request size and text kind."""

    size: int
    text: str  # "english" or "non-english"
    tokens: int  # true cl100k tokens of the request
    chars: int
    micros: dict[str, float]


def build_requests(count_tokens: Callable[[str], int], sizes: Iterable[int] = SIZES) -> dict[tuple[int, str], dict[str, Any]]:
    """One chat request per (size, text kind) of about ``size`` tokens of real ShareGPT text."""
    pools: dict[str, list[dict[str, str]]] = {"english": [], "non-english": []}
    largest = max(sizes)
    budget = {k: 0 for k in pools}
    for conversation in iter_sharegpt():
        kind = "english" if all(m["content"].isascii() for m in conversation.messages) else "non-english"
        if budget[kind] > 6 * largest:
            if all(b > 6 * largest for b in budget.values()):
                break
            continue
        for message in conversation.messages:
            pools[kind].append({"role": message["role"], "content": message["content"]})
            budget[kind] += len(message["content"])
    out: dict[tuple[int, str], dict[str, Any]] = {}
    for kind, messages in pools.items():
        for size in sizes:
            taken: list[dict[str, str]] = []
            tokens = 0
            for message in messages:
                if tokens >= size:
                    break
                taken.append(message)
                tokens += count_tokens(message["content"]) + 4
            out[(size, kind)] = {"messages": taken}
    return out


def _micros(call: Callable[[], object]) -> float:
    """Best per-call time of many short rounds (~2 ms each): the minimum filters out the
    time other processes took from a shared CPU (``timeit``'s own advice)."""
    timer = timeit.Timer(call)
    per_call = timer.timeit(number=1)
    number = max(1, int(0.002 / max(per_call, 1e-9)))
    rounds = max(REPEATS, min(300, int(0.6 / max(per_call * number, 1e-9))))
    return min(timer.repeat(repeat=rounds, number=number)) / number * 1e6


def benchmark(count_tokens: Callable[[str], int], *, with_litellm: bool = True, sizes: Iterable[int] = SIZES) -> list[CostRow]:
    """Cost rows for every size and text kind: ratio, calibrated (any and one family), LiteLLM."""
    estimators: dict[str, Callable[[dict[str, Any]], object]] = {
        "chars ÷ 3 (ratio)": lambda p: estimate_request(p, call_kind="chat"),
        "calibrated (any)": lambda p, e=calibrated_estimator("any"): estimate_request(p, call_kind="chat", estimator=e),
        "calibrated (qwen2.5)": lambda p, e=calibrated_estimator("qwen2.5"): estimate_request(p, call_kind="chat", estimator=e),
    }
    if with_litellm:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # offline: no cost-map fetch
        import litellm

        estimators["litellm.token_counter"] = lambda p: litellm.token_counter(model="gpt-4o", messages=p["messages"])
    rows = []
    for (size, kind), payload in build_requests(count_tokens, sizes).items():
        tokens = sum(count_tokens(m["content"]) + 4 for m in payload["messages"])
        chars = sum(len(m["content"]) for m in payload["messages"])
        micros = {name: _micros(lambda f=f: f(payload)) for name, f in estimators.items()}
        rows.append(CostRow(size=size, text=kind, tokens=tokens, chars=chars, micros=micros))
    return rows

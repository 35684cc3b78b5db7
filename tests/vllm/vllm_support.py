"""Helpers of the real-vLLM tier: prompts of exact token counts on a given server, requests
through a proxy with a tenant key and session, streamed TTFT."""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass
from typing import Any

import httpx

from litellm_kvwarm.lab.processes import ManagedProcess

#: Everyday words with one number in five: about 3.4 characters per token on the tiny model's
#: tokenizer, so the plugin's routing estimate (characters / 4) under-counts, as on chat text.
WORDS = (
    "the of and to in is that for it as was with be by on not he this are or his from at which but have "
    "an they you were her she there been one all we their has would when if so no will can more other "
    "what time up about into than them only some could new these two may first then do any like my now "
    "over such our man me even most made after also did many before must through back years where much "
    "your way well down should because each just those people how too little state good very make world "
    "still own see men work long get here between both life being under never day same another know while "
    "last might us great old year off come since against go came right used take three small number river "
    "garden window letter morning evening question answer kitchen mountain village engine harbor music"
).split()


def words(tag: str, n: int) -> str:
    """``n`` words drawn deterministically from ``tag`` (different tags share no long runs)."""
    rng = random.Random(tag)
    return " ".join(rng.choice(WORDS) if rng.random() < 0.8 else str(rng.randint(10, 9999)) for _ in range(n))


def count(server: ManagedProcess, model: str, messages: list[dict[str, Any]], **extra: Any) -> int:
    response = httpx.post(server.base_url + "/tokenize", json={"model": model, "messages": messages, **extra}, timeout=60)
    response.raise_for_status()
    return int(response.json()["count"])


def exact_messages(
    server: ManagedProcess, model: str, n: int, tag: str, head: list[dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """``head`` plus one user message, rendered by ``server``'s own chat template to exactly
    ``n`` tokens (searched with its ``/tokenize``)."""
    head = list(head or [])
    pool = words(tag, max(n, 64))  # one word is >= 1 token

    def build(k: int, pad: int = 0) -> list[dict[str, Any]]:
        text = " ".join(pool.split()[:k]) + " x" * pad
        return head + [{"role": "user", "content": text}]

    lo, hi = 0, len(pool.split())
    while lo < hi:  # most words with count <= n
        mid = (lo + hi + 1) // 2
        if count(server, model, build(mid)) <= n:
            lo = mid
        else:
            hi = mid - 1
    pad = 0
    while count(server, model, build(lo, pad)) < n:
        pad += 1
    msgs = build(lo, pad)
    assert count(server, model, msgs) == n, f"could not build a prompt of exactly {n} tokens on {server.name}"
    return msgs


def headers(key: str, session: str | None = None) -> dict[str, str]:
    out = {"Authorization": f"Bearer {key}"}
    if session:
        out["x-litellm-session-id"] = session
    return out


def post(base_url: str, body: dict[str, Any], *, key: str | None = None, session: str | None = None,
         timeout: float = 300) -> httpx.Response:
    return httpx.post(base_url + "/v1/chat/completions", json=body, headers=headers(key, session) if key else None,
                      timeout=timeout)


@dataclass(frozen=True)
class Streamed:
    """One streamed chat completion: seconds to the first SSE event, and the final usage."""

    status: int
    ttft_s: float | None
    usage: dict[str, Any] | None
    model: str | None
    error: str | None = None

    @property
    def prompt_tokens(self) -> int:
        return int((self.usage or {}).get("prompt_tokens") or 0)

    @property
    def cached_tokens(self) -> int:
        return int(((self.usage or {}).get("prompt_tokens_details") or {}).get("cached_tokens") or 0)


def stream(base_url: str, body: dict[str, Any], *, key: str, session: str | None = None, timeout: float = 300) -> Streamed:
    """POST a streamed chat completion with ``include_usage``; TTFT is time to the first event."""
    body = {**body, "stream": True, "stream_options": {"include_usage": True}}
    began = time.perf_counter()
    ttft = None
    usage = None
    model = None
    with httpx.stream("POST", base_url + "/v1/chat/completions", json=body, headers=headers(key, session),
                      timeout=timeout) as response:
        if response.status_code != 200:
            return Streamed(response.status_code, None, None, None, response.read().decode(errors="replace"))
        for line in response.iter_lines():
            if not line.startswith("data:"):
                continue
            if ttft is None:
                ttft = time.perf_counter() - began
            payload = line[5:].strip()
            if payload == "[DONE]":
                break
            chunk = json.loads(payload)
            model = chunk.get("model") or model
            if chunk.get("usage"):
                usage = chunk["usage"]
    return Streamed(200, ttft, usage, model)

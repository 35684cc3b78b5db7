"""Benchmark probe: log the interpreter's full (generation 2) garbage collections.

Loaded by Python at start-up when this directory is on ``PYTHONPATH`` (``site`` imports
``sitecustomize``); the throughput benchmark puts it there for both proxies, with and without
the plugin, so their stop-the-world pauses can be told apart from the plugin's own cost. Does
nothing unless ``KVWARM_BENCH_GC_LOG`` names a directory; then each generation-2 collection
appends one JSON line ``{"t": unix seconds at its end, "pause_s": seconds, "collected": objects}``
to ``gc-<pid>.jsonl`` there. Never raises.
"""

import gc
import json
import os
import time

_LOG_DIR = os.environ.get("KVWARM_BENCH_GC_LOG")


def _install(directory: str) -> None:
    path = os.path.join(directory, f"gc-{os.getpid()}.jsonl")
    began = [0.0]

    def callback(phase: str, info: dict) -> None:
        if info.get("generation") != 2:
            return
        if phase == "start":
            began[0] = time.perf_counter()
            return
        line = json.dumps({"t": time.time(), "pause_s": time.perf_counter() - began[0], "collected": info.get("collected")})
        try:
            with open(path, "a", encoding="utf-8") as handle:
                handle.write(line + "\n")
        except OSError:
            pass

    gc.callbacks.append(callback)


if _LOG_DIR:
    try:
        _install(_LOG_DIR)
    except Exception:  # a probe must never stop the process it watches
        pass

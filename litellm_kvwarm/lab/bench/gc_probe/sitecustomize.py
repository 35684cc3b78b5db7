"""Benchmark probe: log the interpreter's full (generation 2) garbage collections.

Loaded by Python at start-up when this directory is on ``PYTHONPATH`` (``site`` imports
``sitecustomize``); the throughput benchmark puts it there for both proxies, with and without
the plugin, so their stop-the-world pauses can be told apart from the plugin's own cost. Does
nothing unless ``KVWARM_BENCH_GC_LOG`` names a directory; then each generation-2 collection
appends one JSON line ``{"t": unix seconds at its end, "pause_s": seconds, "collected": objects}``
to ``gc-<pid>.jsonl`` there. Never raises.

Also, when ``KVWARM_BENCH_PROFILE`` names a directory: ``SIGUSR1`` starts ``cProfile`` on the
main thread (the proxy's event loop; timed by the thread's CPU clock, so time the process waits
for a core or for I/O is not counted) and ``SIGUSR2`` stops it and writes ``prof-<pid>.pstats``
there (``python -m pstats``), so a profile covers the measured batches only, not start-up.
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


_PROFILE_DIR = os.environ.get("KVWARM_BENCH_PROFILE")


def _install_profiler(directory: str) -> None:
    import cProfile
    import signal

    profiler = cProfile.Profile(time.thread_time_ns, 1e-9)  # CPU of the main thread, not wall time

    def start(signum, frame) -> None:
        profiler.enable()

    def stop(signum, frame) -> None:
        profiler.disable()
        try:
            profiler.dump_stats(os.path.join(directory, f"prof-{os.getpid()}.pstats"))
        except OSError:
            pass

    signal.signal(signal.SIGUSR1, start)
    signal.signal(signal.SIGUSR2, stop)


if _PROFILE_DIR:
    try:
        _install_profiler(_PROFILE_DIR)
    except Exception:
        pass

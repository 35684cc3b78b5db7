"""The throughput benchmark's GC probe: a real interpreter started with it on PYTHONPATH logs
its generation-2 collections; :func:`gc_pauses` keeps those inside the measured batches."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from litellm_kvwarm.lab.bench.throughput import GC_LOG_ENV, GC_PROBE_DIR, gc_pauses


def _run(tmp_path, env_extra):
    env = dict(os.environ, PYTHONPATH=str(GC_PROBE_DIR), **env_extra)
    code = "import gc\ngc.collect()\ngc.collect(1)\ngc.collect()\n"
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=60)


def test_probe_logs_each_full_collection_of_a_real_interpreter(tmp_path):
    _run(tmp_path, {GC_LOG_ENV: str(tmp_path)})
    logs = list(tmp_path.glob("gc-*.jsonl"))
    assert len(logs) == 1
    entries = [json.loads(line) for line in logs[0].read_text().splitlines()]
    # two explicit full collections (the generation-1 one is not logged); start-up may add more
    assert len(entries) >= 2
    assert all(e["pause_s"] >= 0 and e["t"] > 1.7e9 and isinstance(e["collected"], int) for e in entries)


def test_probe_is_inert_without_its_variable(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != GC_LOG_ENV}
    env["PYTHONPATH"] = str(GC_PROBE_DIR)
    subprocess.run([sys.executable, "-c", "import gc; gc.collect()"], env=env, cwd=tmp_path, check=True, timeout=60)
    assert list(tmp_path.iterdir()) == []


def test_gc_pauses_counts_only_collections_inside_batches():
    batches = [{"began_unix": 100.0, "ended_unix": 101.0, "wall_s": 1.0},
               {"began_unix": 105.0, "ended_unix": 107.0, "wall_s": 2.0}]
    entries = [{"t": 99.9, "pause_s": 0.5}, {"t": 100.5, "pause_s": 0.25}, {"t": 103.0, "pause_s": 0.7},
               {"t": 106.0, "pause_s": 0.5}, {"t": 107.5, "pause_s": 0.9}]
    got = gc_pauses(entries, batches)
    assert got == {"count": 2, "total_s": 0.75, "max_s": 0.5, "share_of_wall": 0.25}
    assert gc_pauses([], batches) == {"count": 0, "total_s": 0, "max_s": 0.0, "share_of_wall": 0.0}

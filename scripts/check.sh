#!/usr/bin/env bash
# check.sh — every test `make check` runs, each part to the end even when an
# earlier one failed, then one line that counts them all:
#   N passed, N failed, N skipped
# Parts: the C suite (build/tests/rein-test), the runner's own verdicts
# (check-harness.sh), `make install` + pkg-config (check-install.sh), a
# clean stdout from `make serve` (check_serve below), the grammar fixtures
# (check-grammars.py) and the MCP end-to-end tests (run-e2e.sh).  With
# arguments, only the C tests whose names match them run.
#
# usage: BUILD=build scripts/check.sh [PATTERN...]
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${BUILD:-build}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
passed=0 failed=0 skipped=0

# add PART RC: counts what the part printed in $out, by its own summary line.
add() {
  local part=$1 rc=$2 p=0 f=0 s=0 line
  case $part in
    unit)
      line=$(tail -n 1 "$out")
      if [[ $line =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed(,\ ([0-9]+)\ skipped)?$ ]]; then
        p=${BASH_REMATCH[1]} f=${BASH_REMATCH[2]} s=${BASH_REMATCH[4]:-0}
      fi ;;
    grammars)
      line=$(grep -E '^fixtures: [0-9]+ passed, [0-9]+ failed' "$out" | tail -n 1)
      if [[ $line =~ ^fixtures:\ ([0-9]+)\ passed,\ ([0-9]+)\ failed ]]; then
        p=${BASH_REMATCH[1]} f=${BASH_REMATCH[2]}
      fi ;;
    e2e)
      p=$(sed -n 's/^# pass \([0-9]*\)$/\1/p' "$out" | tail -n 1)
      f=$(sed -n 's/^# fail \([0-9]*\)$/\1/p' "$out" | tail -n 1)
      s=$(sed -n 's/^# skipped \([0-9]*\)$/\1/p' "$out" | tail -n 1)
      p=${p:-0} f=${f:-0} s=${s:-0} ;;
    *) # a script that checks one thing: its exit status is the verdict
      if [ "$rc" -eq 0 ]; then p=1; else f=1; fi ;;
  esac
  # A part that failed without saying how many tests failed counts as one.
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
    f=1
    echo "check: $part exited $rc" >&2
  fi
  passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
}

# run PART COMMAND...: shows the part's output as it goes, keeps it in $out.
run() {
  local part=$1 rc
  shift
  "$@" 2>&1 | tee "$out"
  rc=${PIPESTATUS[0]}
  add "$part" "$rc"
}

# run_quiet PART COMMAND...: as run, but shows only the first and last line
# of a long report unless the part failed.
run_quiet() {
  local part=$1 rc=0
  shift
  "$@" > "$out" 2>&1 || rc=$?
  if [ "$rc" -eq 0 ]; then
    head -n 1 "$out"
    tail -n 1 "$out"
  else
    cat "$out"
  fi
  add "$part" "$rc"
}

# `make serve` must write nothing but protocol to stdout: with stdin at EOF
# the server answers nothing, so its stdout must stay empty.  Both ways the
# README gives, as a user types them (no make above them): `make serve` in
# the checkout, and `make -s -C <checkout> serve` from elsewhere.
check_serve() {
  local got rc=0 root
  root=$(pwd)
  for how in here elsewhere; do
    got=$(if [ "$how" = here ]; then
            env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS \
              make serve SAN="${SAN:-}"
          else
            cd / && env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS \
              make -s -C "$root" serve SAN="${SAN:-}"
          fi </dev/null 2>/dev/null | wc -c) || rc=$?
    if [ "$rc" -ne 0 ] || [ "$got" -ne 0 ]; then
      echo "check-serve: make serve ($how) exited $rc with $got bytes on stdout" >&2
      return 1
    fi
  done
  echo "check-serve: ok (make serve, and make -s -C from /: 0 bytes on stdout, exit 0)"
}

run unit "$build/tests/rein-test" "$@"
if [ $# -eq 0 ]; then
  run runner scripts/check-harness.sh "$build/tests/harness-selftest"
  run install scripts/check-install.sh
  run serve check_serve
  run_quiet grammars python3 scripts/check-grammars.py
  if ls tests/e2e/*.mjs >/dev/null 2>&1; then
    run e2e env REIN_BIN="$root/$build/rein" scripts/run-e2e.sh
  fi
fi

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]

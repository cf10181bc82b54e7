#!/usr/bin/env bash
# check-harness.sh — the test runner's own test: runs the cases of
# tests/selftest/cases.c (build/tests/harness-selftest) off CI and on CI
# and checks every verdict the runner gives.  Run by `make check`.
set -euo pipefail
bin=${1:?usage: check-harness.sh BUILD/tests/harness-selftest}
dir=$(mktemp -d)
# Should the runner fail to end a case's process, end it here: each case
# noted "<pid> <start time>", and only that very process is signalled.
cleanup() {
  local f pid start
  for f in "$dir"/*.pid; do
    [ -f "$f" ] && read -r pid start < "$f" || continue
    [ "$(awk '{ sub(/^.*\) /, ""); print $20 }' "/proc/$pid/stat" 2>/dev/null)" = "$start" ] &&
      kill -KILL "$pid" 2>/dev/null || true
  done
  rm -rf "$dir"
}
trap cleanup EXIT
fails=0
check() { # check DESCRIPTION COMMAND...
  if "${@:2}"; then :; else echo "check-harness: FAIL: $1" >&2; fails=$((fails + 1)); fi
}
# A process noted as "<pid> <start>" is gone when no process has that pid
# with that start time.
gone() {
  local pid start now
  read -r pid start < "$1" || return 1
  now=$(awk '{ sub(/^.*\) /, ""); print $20 }' "/proc/$pid/stat" 2>/dev/null || true)
  [ "$now" != "$start" ]
}

run() { # run CI-VALUE OUT
  local rc=0
  # SIGHUP and SIGPIPE ignored, as nohup and some CI runners leave them:
  # the runner must give each test the defaults all the same.
  (trap '' HUP PIPE
   exec env -u REIN_VALGRIND CI="$1" REIN_SELFTEST_DIR="$dir" "$bin" -j 2) > "$2" 2>&1 || rc=$?
  echo "$rc" > "$2.rc"
}

run false "$dir/off"
out=$dir/off
check "a passing test is ok"       grep -q "^ok   cases.c:selftest_passes " "$out"
check "a test starts with default signal dispositions" grep -q "^ok   cases.c:selftest_starts_with_default_signal_dispositions " "$out"
check "a failed assert fails"      grep -q "^FAIL cases.c:selftest_fails_with_both_values (exit" "$out"
check "a failed assert shows both values" grep -q "41" "$out"
check "a failed assert shows both values" grep -q "42" "$out"
check "a skip prints its reason"   grep -q "^skip cases.c:selftest_skips: .*no such thing here" "$out"
check "off CI a facility skip is a skip" grep -q "^skip cases.c:selftest_skips_a_facility: .*cgroup missing" "$out"
check "an overrunning test times out" grep -q "^FAIL cases.c:selftest_times_out (timeout after 1s)" "$out"
check "a timed-out test is killed" gone "$dir/timeout.pid"
check "a leaked group member fails its test" grep -q "^FAIL cases.c:selftest_leaves_a_process_in_its_group (left processes in its group)" "$out"
check "a leaked group member is killed" gone "$dir/leak.pid"
check "a daemon left behind is reported" bash -c '[ "$(grep -c "^FAIL leftover process" "$1")" = 2 ]' _ "$out"
check "a daemon left behind is killed" gone "$dir/daemon.pid"
check "the daemon's own child is killed too" gone "$dir/grandchild.pid"
check "a signal is named"          grep -q "^FAIL cases.c:selftest_dies_of_a_signal (signal 6," "$out"
check "the last line is the count" bash -c '[ "$(tail -n 1 "$1")" = "3 passed, 6 failed, 2 skipped" ]' _ "$out"
check "failures exit non-zero"     bash -c '[ "$(cat "$1.rc")" != 0 ]' _ "$out"

for f in "$dir"/*.pid; do [ -f "$f" ] && mv "$f" "$f.off.pid"; done
run true "$dir/on"
out=$dir/on
check "on CI a facility skip fails" grep -q "^FAIL cases.c:selftest_skips_a_facility (exit" "$out"
check "on CI a plain skip stays a skip" grep -q "^skip cases.c:selftest_skips: " "$out"
check "on CI the count has one more failure" bash -c '[ "$(tail -n 1 "$1")" = "3 passed, 7 failed, 1 skipped" ]' _ "$out"

if [ "$fails" -ne 0 ]; then
  echo "check-harness: $fails checks failed; the runner said:" >&2
  cat "$dir/off" >&2
  exit 1
fi
echo "check-harness: ok (the runner's verdicts on tests/selftest)"

#!/usr/bin/env bash
# Runs every test binary in BUILD/test and every test/**/*_test.sh script; prints one line per
# test program and the log of each failure. Exit status 1 if any failed.
# Usage: scripts/run-tests.sh [BUILD] [FILTER-REGEX]
set -uo pipefail
BUILD=${1:-build}
FILTER=${2:-.}
TIMEOUT=${SCOUT_TEST_TIMEOUT:-900}
LOGS="$BUILD/test-logs"
mkdir -p "$LOGS"
export SCOUT_BUILD_DIR="$(cd "$BUILD" && pwd)"

progs=()
for t in "$BUILD"/test/*; do [ -x "$t" ] && [ -f "$t" ] && progs+=("$t"); done
while IFS= read -r s; do progs+=("$s"); done < <(find test -name '*_test.sh' 2>/dev/null | sort)

pass=0; fail=0; failed=()
start_all=$(date +%s)
for t in "${progs[@]}"; do
  name=$(basename "$t")
  [[ "$name" =~ $FILTER ]] || continue
  log="$LOGS/$name.log"
  t0=$(date +%s%N)
  if [[ "$t" == *.sh ]]; then
    timeout -k 10 "$TIMEOUT" bash "$t" "$BUILD" >"$log" 2>&1; rc=$?
  else
    timeout -k 10 "$TIMEOUT" "$t" --gtest_color=no >"$log" 2>&1; rc=$?
  fi
  ms=$(( ($(date +%s%N) - t0) / 1000000 )); dt="$((ms / 1000)).$(( (ms % 1000) / 100 ))"
  if [ $rc -eq 0 ]; then
    n=$(grep -c '^\[       OK \]' "$log" 2>/dev/null); s=$(grep -c '^\[  SKIPPED \]' "$log" 2>/dev/null)
    printf 'PASS  %-32s %6ss  %s\n' "$name" "$dt" "${n:+$n passed}${s:+, $s skipped}"
    pass=$((pass+1))
  else
    printf 'FAIL  %-32s %6ss  (exit %d, log %s)\n' "$name" "$dt" "$rc" "$log"
    fail=$((fail+1)); failed+=("$log")
  fi
done
echo "----"
echo "test programs: $pass passed, $fail failed ($(( $(date +%s) - start_all ))s)"
for l in "${failed[@]}"; do
  echo "==== $l (last 80 lines)"; tail -n 80 "$l"
done
[ $fail -eq 0 ]

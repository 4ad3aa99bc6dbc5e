#!/usr/bin/env bash
# Runs every test binary in BUILD/test and every test/**/*_test.sh script; prints one line per
# test program as it finishes and the log of each failure. Exit status 1 if any failed.
# Usage: scripts/run-tests.sh [BUILD] [FILTER-REGEX]
#
# Programs run SCOUT_TEST_JOBS at a time (default 3): the end-to-end tests spend most of their
# time waiting on emulated jobs (sim_e2e_test: 17 s of CPU in 47 s), so a few at once finish the
# suite sooner on 2 cores without starving each other. The end-to-end programs start first (they
# are the longest). SCOUT_TEST_JOBS=1 runs them one by one, in name order.
set -uo pipefail
BUILD=${1:-build}
FILTER=${2:-.}
TIMEOUT=${SCOUT_TEST_TIMEOUT:-900}
JOBS=${SCOUT_TEST_JOBS:-3}
[[ "$JOBS" =~ ^[1-9][0-9]*$ ]] || { echo "run-tests: SCOUT_TEST_JOBS=$JOBS is not a positive integer" >&2; exit 2; }
LOGS="$BUILD/test-logs"
mkdir -p "$LOGS"
export SCOUT_BUILD_DIR="$(cd "$BUILD" && pwd)"

progs=()
for t in "$BUILD"/test/*; do [ -x "$t" ] && [ -f "$t" ] && progs+=("$t"); done
while IFS= read -r s; do progs+=("$s"); done < <(find test -name '*_test.sh' 2>/dev/null | sort)

selected=()
for t in "${progs[@]}"; do
  name=$(basename "$t")
  [[ "$name" =~ $FILTER ]] && selected+=("$t")
done
# Longest first when several run at once: end-to-end programs, then the rest in name order.
if [ "$JOBS" -gt 1 ]; then
  first=(); rest=()
  for t in "${selected[@]}"; do
    if [[ "$(basename "$t")" == *e2e* ]]; then first+=("$t"); else rest+=("$t"); fi
  done
  selected=("${first[@]}" "${rest[@]}")
fi

# Runs one program; writes "PASS|FAIL<TAB>line" to LOGS/<name>.result.
run_one() {
  local t=$1 name log rc t0 ms dt n s
  name=$(basename "$t")
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
    printf 'PASS\tPASS  %-32s %6ss  %s\n' "$name" "$dt" "${n:+$n passed}${s:+, $s skipped}" > "$LOGS/$name.result"
  else
    printf 'FAIL\tFAIL  %-32s %6ss  (exit %d, log %s)\n' "$name" "$dt" "$rc" "$log" > "$LOGS/$name.result"
  fi
}

report() {  # prints the result line of program $1 as it finishes
  cut -f2- "$LOGS/$(basename "$1").result"
}

start_all=$(date +%s)
running=()
for t in "${selected[@]}"; do
  rm -f "$LOGS/$(basename "$t").result"
  run_one "$t" &
  running+=("$!:$t")
  while [ ${#running[@]} -ge "$JOBS" ]; do
    wait -n
    still=()
    for e in "${running[@]}"; do
      if kill -0 "${e%%:*}" 2>/dev/null; then still+=("$e"); else wait "${e%%:*}"; report "${e#*:}"; fi
    done
    running=("${still[@]}")
  done
done
for e in "${running[@]}"; do wait "${e%%:*}"; report "${e#*:}"; done

pass=0; fail=0; failed=()
for t in "${selected[@]}"; do
  name=$(basename "$t")
  if [ "$(cut -f1 "$LOGS/$name.result" 2>/dev/null)" = PASS ]; then
    pass=$((pass+1))
  else
    fail=$((fail+1)); failed+=("$LOGS/$name.log")
  fi
done
echo "----"
echo "test programs: $pass passed, $fail failed ($(( $(date +%s) - start_all ))s)"
for l in "${failed[@]}"; do
  echo "==== $l (last 80 lines)"; tail -n 80 "$l"
done
[ $fail -eq 0 ]

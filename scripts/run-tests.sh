#!/usr/bin/env bash
# Runs the test programs listed in test/programs.txt: the GoogleTest binaries BUILD/test/<name>
# (from test/**/<name>.cc) and the script tests test/**/*_test.sh; prints one line per program as
# it finishes, a summary, and the log of each failure. Exit status 1 if any program failed, 2 on
# bad usage. Works from any directory (BUILD is taken relative to the caller's; default: the
# tree's build/).
# Usage: scripts/run-tests.sh [BUILD] [FILTER-REGEX on program names]
#
# The suite cannot pass by checking less than it says (scripts/judge-test.py judges each program):
# - test/programs.txt lists every test source: a source missing from it, a line naming no source,
#   or a listed program that was not built fails the run.
# - a GoogleTest program must run at least one test; a test it skips (or does not run) must be
#   listed in test/skips.txt for that program with a reason its skip message contains. A script
#   test skips by printing `SKIP: <why>` and exiting 77, under the same rule. Each skipped case
#   counts once.
# - the run's environment has no GTEST_* (a filter, sharding, repeats), SCOUT_* or NCCL_* variable
#   from the caller's shell (golden-file updates, SCOUT_UPDATE_GOLDEN, happen only in
#   `make update-golden`); the ones removed are named. SCOUT_TEST_JOBS and SCOUT_TEST_TIMEOUT
#   are this script's own settings.
#
# Programs run SCOUT_TEST_JOBS at a time (default 3): the end-to-end tests spend most of their
# time waiting on emulated jobs (sim_e2e_test: 17 s of CPU in 47 s), so a few at once finish the
# suite sooner on 2 cores without starving each other. The end-to-end programs start first (they
# are the longest). SCOUT_TEST_JOBS=1 runs them one by one, in name order.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${1:-$ROOT/build}
FILTER=${2:-.}
TIMEOUT=${SCOUT_TEST_TIMEOUT:-900}
JOBS=${SCOUT_TEST_JOBS:-3}
MANIFEST=$ROOT/test/programs.txt
SKIPS=$ROOT/test/skips.txt
JUDGE=$ROOT/scripts/judge-test.py
[[ "$JOBS" =~ ^[1-9][0-9]*$ ]] || { echo "run-tests: SCOUT_TEST_JOBS=$JOBS is not a positive integer" >&2; exit 2; }
[ -d "$BUILD" ] || { echo "run-tests: no build directory $BUILD (run make tests first)" >&2; exit 2; }
BUILD=$(cd "$BUILD" && pwd)
for f in "$MANIFEST" "$SKIPS" "$JUDGE"; do
  [ -f "$f" ] || { echo "run-tests: $f is missing" >&2; exit 2; }
done
cd "$ROOT"

# The caller's test filters, golden-update switches and scout/NCCL settings stay out of the run.
cleared=()
for v in $(compgen -e); do
  case $v in
    SCOUT_TEST_JOBS | SCOUT_TEST_TIMEOUT) ;;
    GTEST_* | SCOUT_* | NCCL_*) cleared+=("$v"); unset "$v" ;;
  esac
done
[ ${#cleared[@]} -eq 0 ] || echo "run-tests: not passed to the tests: ${cleared[*]}"
export SCOUT_BUILD_DIR="$BUILD"
# Script tests get the build directory relative to the tree when it is inside it (as they were
# written to be run from the repository root), else its absolute path.
SCRIPT_BUILD=$BUILD
[[ "$BUILD" == "$ROOT"/* ]] && SCRIPT_BUILD=${BUILD#"$ROOT"/}
LOGS="$BUILD/test-logs"
mkdir -p "$LOGS"

# ---------------------------------------------------------------- the manifest
# Sources as the Makefile finds them (TEST_CC) plus the script tests, against the committed list.
manifest_errors=0
sources=$( { find test -name '*_test.cc' -not -path 'test/fixtures/*' -not -path 'test/netdelegate/*'
             find test -name '*_test.sh' -not -path 'test/fixtures/*'; } | LC_ALL=C sort)
listed=$(sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e '/^$/d' "$MANIFEST" | LC_ALL=C sort)
while IFS= read -r s; do
  [ -n "$s" ] || continue
  echo "run-tests: $s is not in test/programs.txt: add the line '$s' there (sorted) so that the suite expects it"
  manifest_errors=$((manifest_errors + 1))
done < <(LC_ALL=C comm -23 <(echo "$sources") <(echo "$listed"))
while IFS= read -r s; do
  [ -n "$s" ] || continue
  echo "run-tests: test/programs.txt lists $s, which does not exist: remove the line if the test was removed"
  manifest_errors=$((manifest_errors + 1))
done < <(LC_ALL=C comm -13 <(echo "$sources") <(echo "$listed"))

# Programs: name -> how to run it. Two sources with one name make one binary (the Makefile links
# them together), listed once.
declare -A kind=() path=()
while IFS= read -r s; do
  [ -n "$s" ] || continue
  case $s in
    *.cc) n=$(basename "$s" .cc); kind[$n]=gtest; path[$n]="$BUILD/test/$n" ;;
    *.sh) n=$(basename "$s"); kind[$n]=script; path[$n]="$ROOT/$s" ;;
    *) echo "run-tests: test/programs.txt: '$s' is neither a _test.cc nor a _test.sh"; manifest_errors=$((manifest_errors + 1)) ;;
  esac
done <<<"$listed"

selected=()
for n in $(printf '%s\n' "${!kind[@]}" | LC_ALL=C sort); do
  [[ "$n" =~ $FILTER ]] && selected+=("$n")
done
if [ ${#selected[@]} -eq 0 ]; then
  echo "run-tests: no listed program matches '$FILTER'"
  exit 1
fi
# Longest first when several run at once: end-to-end programs, then the rest in name order.
if [ "$JOBS" -gt 1 ]; then
  first=(); rest=()
  for n in "${selected[@]}"; do
    if [[ "$n" == *e2e* ]]; then first+=("$n"); else rest+=("$n"); fi
  done
  selected=("${first[@]}" "${rest[@]}")
fi

# ---------------------------------------------------------------- running
# Runs one program; writes the judge's lines (scripts/judge-test.py) to LOGS/<name>.result and
# the seconds it took to LOGS/<name>.secs.
run_one() {
  local n=$1 log="$LOGS/$1.log" report="$LOGS/$1.json" rc t0 ms verdict
  rm -f "$report"
  t0=$(date +%s%N)
  if [ "${kind[$n]}" = script ]; then
    timeout -k 10 "$TIMEOUT" bash "${path[$n]}" "$SCRIPT_BUILD" >"$log" 2>&1; rc=$?
    verdict=$(python3 "$JUDGE" "$n" script "$rc" "$log" - "$SKIPS")
  elif [ ! -x "${path[$n]}" ]; then
    echo "not built: ${path[$n]}" >"$log"
    verdict=$(printf 'FAIL\t0\t0\tmissing: %s was not built' "${path[$n]}")
  else
    timeout -k 10 "$TIMEOUT" "${path[$n]}" --gtest_color=no --gtest_output="json:$report" >"$log" 2>&1; rc=$?
    verdict=$(python3 "$JUDGE" "$n" gtest "$rc" "$log" "$report" "$SKIPS")
  fi
  [ -n "$verdict" ] || verdict=$(printf 'FAIL\t0\t0\tthe judge printed nothing (exit %s)' "${rc:-?}")
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  echo "$((ms / 1000)).$(( (ms % 1000) / 100 ))" > "$LOGS/$n.secs"
  echo "$verdict" > "$LOGS/$n.result"
}

# Reads program $1's verdict into status, passed, skipped, detail.
verdict_of() {
  status=FAIL; passed=0; skipped=0; detail="no result"
  [ -s "$LOGS/$1.result" ] && IFS=$'\t' read -r status passed skipped detail < "$LOGS/$1.result"
}

report() {  # prints the result line of program $1 as it finishes
  verdict_of "$1"
  printf '%-4s  %-32s %6ss  %s\n' "$status" "$1" "$(cat "$LOGS/$1.secs" 2>/dev/null)" "$detail"
}

start_all=$(date +%s)
running=()
for n in "${selected[@]}"; do
  rm -f "$LOGS/$n.result"
  run_one "$n" &
  running+=("$!:$n")
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

# ---------------------------------------------------------------- summary
pass=0; fail=0; skip=0; cases=0; cases_skipped=0; failed=(); skipped_lines=()
for n in "${selected[@]}"; do
  verdict_of "$n"
  cases=$((cases + passed)); cases_skipped=$((cases_skipped + skipped))
  case $status in
    PASS) pass=$((pass + 1)) ;;
    SKIP) skip=$((skip + 1)) ;;
    *) fail=$((fail + 1)); failed+=("$n") ;;
  esac
  if [ "$status" != FAIL ]; then
    while IFS=$'\t' read -r _ c why; do skipped_lines+=("$n $c: $why"); done < <(grep '^skipped' "$LOGS/$n.result")
  fi
done
echo "----"
echo "test programs: $pass passed, $skip skipped, $fail failed; cases: $cases passed, $cases_skipped skipped ($(( $(date +%s) - start_all ))s)"
for l in "${skipped_lines[@]}"; do echo "  skipped (allowed by test/skips.txt): $l"; done
[ $manifest_errors -eq 0 ] || echo "test/programs.txt: $manifest_errors problem(s), listed above"
for n in "${failed[@]}"; do
  verdict_of "$n"
  echo "==== $n: $detail ($LOGS/$n.log, last 80 lines)"; tail -n 80 "$LOGS/$n.log"
done
[ $fail -eq 0 ] && [ $manifest_errors -eq 0 ]

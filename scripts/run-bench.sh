#!/usr/bin/env bash
# Runs every benchmark in BUILD/bench. Each prints its own figures next to a baseline measured
# in the same run (ratios, not absolute times: these machines are noisy).
# Usage: scripts/run-bench.sh [BUILD] [FILTER-REGEX]
set -uo pipefail
BUILD=${1:-build}
FILTER=${2:-.}
export SCOUT_BUILD_DIR="$(cd "$BUILD" && pwd)"
rc=0
for b in "$BUILD"/bench/*; do
  [ -x "$b" ] && [ -f "$b" ] || continue
  name=$(basename "$b")
  [[ "$name" =~ $FILTER ]] || continue
  echo "==================== $name"
  "$b" || { echo "bench $name failed" >&2; rc=1; }
done
exit $rc

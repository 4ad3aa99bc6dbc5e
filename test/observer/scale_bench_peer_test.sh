#!/usr/bin/env bash
# The scaling benchmark fails at once, with the exit status of a peer process that dies
# (test/bench/scale_bench.cc): the process playing the other nodes kills itself with SIGKILL at
# round 10 of a 256-rank run (as the kernel's OOM killer would). The bench must end within 60 s
# (its channels wait up to 20 minutes for a slow peer) with status 137 (128 + SIGKILL), naming the
# signal and the process. Usage: scale_bench_peer_test.sh [BUILD]
set -u
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
bench=$BUILD/bench/scale_bench
[ -x "$bench" ] || { echo "FAIL: $bench not built (make tests builds it)"; exit 1; }
out=$(mktemp /tmp/scout-scale-peer-XXXXXX)
trap 'rm -f "$out"' EXIT
start=$(date +%s)
timeout -k 5 60 "$bench" --ranks 256 --kill-others-at 10 > "$out" 2>&1
rc=$?
took=$(( $(date +%s) - start ))
fail() { echo "FAIL: $*"; cat "$out"; exit 1; }
[ $rc -ne 124 ] || fail "the bench still waited after 60 s"
[ $rc -eq 137 ] || fail "exit status $rc, expected 137 (the dead process's SIGKILL)"
grep -q "the other nodes' process was killed by signal 9" "$out" || fail "the dead process and its signal are not named"
grep -q "node-rank .* is gone" "$out" || fail "the leader's wait did not fail on the gone peer"
echo "PASS: scale_bench ended ${took} s after start with status $rc"
cat "$out"

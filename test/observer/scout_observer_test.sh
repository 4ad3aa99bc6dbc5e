#!/usr/bin/env bash
# scout-observer as a program: one-line usage errors with exit 2, --once writes a store and
# exits 0, SIGTERM ends a running observer with a final pass and exit 0, a file that is not a
# scout store is refused.
set -uo pipefail
BUILD=${1:-build}
OBS="$BUILD/bin/scout-observer"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/scout-observer-test.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
fail=0
check() {  # check NAME EXPECTED_RC ACTUAL_RC
  if [ "$2" != "$3" ]; then echo "FAIL $1: exit $3, expected $2"; fail=1; else echo "ok   $1"; fi
}
one_line() {  # one_line NAME FILE PATTERN
  local n; n=$(wc -l < "$2")
  if [ "$n" != 1 ] || ! grep -q -- "$3" "$2"; then
    echo "FAIL $1: expected one line matching '$3', got:"; cat "$2"; fail=1
  else echo "ok   $1 (message)"; fi
}
export SCOUT_STATE_DIR="$TMP/state" SCOUT_SHM_DIR="$TMP/shm"
mkdir -p "$TMP/shm"

"$OBS" --job j --bogus 2>"$TMP/err"; check "unknown flag" 2 $?
one_line "unknown flag" "$TMP/err" "^scout-observer: The following argument was not expected: --bogus$"
"$OBS" --job j --nodes 3 --node-rank 1 2>"$TMP/err"; check "several nodes without rendezvous" 2 $?
one_line "several nodes without rendezvous" "$TMP/err" "^scout-observer: --nodes 3 needs --rdzv file:DIR"
"$OBS" --job j --nodes 3 --node-rank 3 --rdzv "file:$TMP/rdzv" 2>"$TMP/err"; check "node rank out of range" 2 $?
one_line "node rank out of range" "$TMP/err" "^scout-observer: --node-rank 3 is not below --nodes 3$"
"$OBS" --job j --rdzv "redis:nohost" 2>"$TMP/err"; check "bad rendezvous" 2 $?
one_line "bad rendezvous" "$TMP/err" "expected file:DIR or redis:HOST:PORT"
"$OBS" --job j --hang-timeout 0 2>"$TMP/err"; check "hang timeout out of range" 2 $?
one_line "hang timeout out of range" "$TMP/err" "^scout-observer: --hang-timeout"
echo "not sqlite" > "$TMP/notastore.db"
"$OBS" --job j --once --store "$TMP/notastore.db" 2>"$TMP/err"; check "not a store" 2 $?
one_line "not a store" "$TMP/err" "notastore.db"
"$OBS" --help >"$TMP/out" 2>&1; check "help" 0 $?

"$OBS" --job job-1 --once 2>"$TMP/err"; check "--once" 0 $?
[ -s "$TMP/state/job-1/node-0.db" ] && echo "ok   --once wrote the default store" || { echo "FAIL no store"; fail=1; }
grep -q "passes 1," "$TMP/err" && echo "ok   --once made one pass" || { echo "FAIL --once pass count"; cat "$TMP/err"; fail=1; }

"$OBS" --job job-2 --interval 20 --quiet 2>"$TMP/err" &
pid=$!
sleep 0.5
kill -TERM $pid
wait $pid; check "SIGTERM" 0 $?
[ -s "$TMP/state/job-2/node-0.db" ] && echo "ok   SIGTERM left the store" || { echo "FAIL no store after SIGTERM"; fail=1; }
[ ! -s "$TMP/err" ] && echo "ok   --quiet printed nothing" || { echo "FAIL --quiet printed:"; cat "$TMP/err"; fail=1; }

# The second adversarial trial: a node whose observer never joins was said only in `scout status`.
# One observer of two waits at the rendezvous: its log says so after 10 s, once.
"$OBS" --job job-3 --nodes 2 --node-rank 0 --rdzv "file:$TMP/rdzv3" --interval 100 2>"$TMP/err" &
pid=$!
for _ in $(seq 1 250); do grep -q "network: not connected for" "$TMP/err" && break; sleep 0.1; done
sleep 1
kill -TERM $pid; wait $pid
n=$(grep -c "network: not connected for" "$TMP/err")
[ "$n" = 1 ] && echo "ok   a missing node is said in the log: $(grep 'network: not connected' "$TMP/err" | cut -c1-120)" ||
  { echo "FAIL missing node said $n times:"; cat "$TMP/err"; fail=1; }
exit $fail

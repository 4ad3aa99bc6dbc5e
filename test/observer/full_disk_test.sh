#!/usr/bin/env bash
# The second adversarial trial, row 3 and the store rows still failing from the first trial, on a real
# full disk: the state directory is a 4 MiB tmpfs mounted in a private mount namespace
# (`unshare -m`, with `-r` when not root), filled with dd while an emulated job with an SDC runs
# under `scout run`.
#   A. full for 5 s after the SDC was found, then freed: the finding is stored once the disk
#      frees, `scout status` warned while full and notes the failed batches after, Prometheus has
#      the counters, scout run exits 0;
#   B. full until the job ends: scout run exits 3 and says findings could not be stored, the
#      health file still shows them;
#   C. the store on a read-only mount is read (immutable open);
#   E. a store without its -shm file on a full disk is read (immutable open);
#   D. the segment directory (SCOUT_SHM_DIR) full: the job runs, each rank's WARN and scout run
#      name the directory as full.
# Usage: test/observer/full_disk_test.sh [BUILD]   (run from the repository root, as `make test` does)
set -uo pipefail
BUILD=$(cd "${1:-build}" && pwd)

if [ "${SCOUT_FULL_DISK_INNER:-}" != 1 ]; then
  ns=(unshare -m)
  [ "$(id -u)" -eq 0 ] || ns=(unshare -r -m)
  if ! "${ns[@]}" true 2>/dev/null; then
    echo "SKIP: no private mount namespace here (unshare -m fails: needs root or user namespaces)"
    exit 77
  fi
  SCOUT_FULL_DISK_INNER=1 exec "${ns[@]}" bash "$0" "$BUILD"
fi

fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }

mount --make-rprivate / 2>/dev/null
work=$(mktemp -d /tmp/scout-fulldisk.XXXXXX)
shm=$(mktemp -d /dev/shm/scout-fulldisk.XXXXXX)
trap 'umount "$work/state" 2>/dev/null; umount "$work/ro" 2>/dev/null; umount "$work/tinyshm" 2>/dev/null; rm -rf "$work" "$shm"' EXIT
mkdir -p "$work/state"
mount -t tmpfs -o size=4m tmpfs "$work/state" || { echo "SKIP: cannot mount a tmpfs in the namespace"; exit 77; }
export SCOUT_STATE_DIR="$work/state" SCOUT_SHM_DIR="$shm" NO_COLOR=1
scout="$BUILD/bin/scout"
sim="$BUILD/bin/scout-sim"

# Waits (up to $2 s) until file $1 contains $3.
wait_for() {
  for _ in $(seq 1 $(($2 * 10))); do grep -q -- "$3" "$1" 2>/dev/null && return 0; sleep 0.1; done
  return 1
}
fill() { dd if=/dev/zero of="$work/state/fill" bs=64k 2>/dev/null; sync; }

# ---- A: full for a while
"$scout" run --job fulla -- "$sim" --ranks 4 --steps 400 --step-ms 25 --fault sdc:rank=1,step=120 \
  >"$work/a.out" 2>"$work/a.err" &
run=$!
wait_for "$work/a.err" 30 "scout: job fulla" || bad "A: scout run did not start"
store=$(sed -n 's/^scout: job fulla, store //p' "$work/a.err")
store_a=$store
for _ in $(seq 1 300); do [ -s "$store" ] && break; sleep 0.1; done
fill
wait_for "$work/a.err" 60 "finding .* sdc" || bad "A: no sdc finding printed by the observer"
wait_for "$work/a.err" 30 "cannot write the store" && ok "A: the failure was said on stderr at once" ||
  bad "A: the store failure was not said: $(tail -5 "$work/a.err")"
"$scout" status --job fulla >"$work/a.status1" 2>&1
grep -q "warning: the observer cannot write this store since .*findings kept in its memory" "$work/a.status1" &&
  ok "A: status while full: $(grep 'cannot write' "$work/a.status1")" || bad "A: status while full: $(cat "$work/a.status1")"
sleep 5
rm -f "$work/state/fill"
wait "$run"; rc=$?
[ $rc -eq 0 ] && ok "A: scout run exits 0" || bad "A: scout run exit $rc: $(tail -5 "$work/a.err")"
n=$("$scout" findings --job fulla --json 2>/dev/null | grep -c '"kind":"sdc"')
[ "$n" -eq 1 ] && ok "A: the sdc finding is in the store after the disk freed" || bad "A: $n sdc findings stored"
"$scout" status --job fulla >"$work/a.status2" 2>&1
grep -q "note: [0-9]* store batches failed and were written again later" "$work/a.status2" &&
  ok "A: status after: $(grep 'note:' "$work/a.status2")" || bad "A: status after: $(cat "$work/a.status2")"
"$scout" export --job fulla --format prometheus >"$work/a.prom" 2>&1
grep -Eq '^scout_store_failed_batches_total\{job="fulla"\} [1-9]' "$work/a.prom" &&
  grep -Eq '^scout_store_unstored_findings\{job="fulla"\} 0$' "$work/a.prom" &&
  ok "A: prometheus: $(grep -E '^scout_store_(failed|unstored)' "$work/a.prom" | tr '\n' ' ')" ||
  bad "A: prometheus: $(grep scout_store "$work/a.prom")"

# ---- B: full until the end
"$scout" run --job fullb -- "$sim" --ranks 4 --steps 200 --step-ms 25 --fault sdc:rank=2,step=80 \
  >"$work/b.out" 2>"$work/b.err" &
run=$!
wait_for "$work/b.err" 30 "scout: job fullb" || bad "B: scout run did not start"
store=$(sed -n 's/^scout: job fullb, store //p' "$work/b.err")
for _ in $(seq 1 300); do [ -s "$store" ] && break; sleep 0.1; done
fill
wait "$run"; rc=$?
[ $rc -eq 3 ] && ok "B: scout run exits 3" || bad "B: scout run exit $rc"
grep -q "findings could not be stored" "$work/b.err" && ok "B: $(grep 'could not be stored' "$work/b.err" | head -1)" ||
  bad "B: stderr does not say findings were not stored: $(tail -5 "$work/b.err")"
"$scout" status --job fullb >"$work/b.status" 2>&1
grep -q "warning: the observer cannot write this store since .*: [1-9][0-9]* findings kept in its memory" "$work/b.status" &&
  ok "B: status: $(grep 'cannot write' "$work/b.status")" || bad "B: status: $(cat "$work/b.status")"
rm -f "$work/state/fill"

# ---- E: a store without its -shm file on a full disk (the disk filled before its observer had
# opened it, as B can go under load): read as immutable, like a read-only mount
mkdir -p "$work/state/fulle"
cp "$store_a" "$work/state/fulle/node-0.db"
fill
n=$("$scout" findings --job fulle --json 2>"$work/e.err" | grep -c '"kind":"sdc"')
[ "$n" -eq 1 ] && ok "E: the store is read on the full disk (1 sdc finding)" || bad "E: $n sdc findings read: $(cat "$work/e.err")"
rm -f "$work/state/fill"

# ---- C: the store of A on a read-only mount
mkdir -p "$work/ro"
mount --bind "$(dirname "$store_a")" "$work/ro" && mount -o remount,bind,ro "$work/ro" || bad "C: cannot bind-mount read-only"
rostore="$work/ro/$(basename "$store_a")"
if touch "$work/ro/x" 2>/dev/null; then
  bad "C: $work/ro is writable"
else
  "$scout" findings --store "$rostore" --json >"$work/c.out" 2>"$work/c.err"; rc=$?
  [ $rc -eq 0 ] && [ "$(grep -c '"kind":"sdc"' "$work/c.out")" -eq 1 ] &&
    ok "C: the store on a read-only mount is read (1 sdc finding)" || bad "C: exit $rc: $(cat "$work/c.err")"
fi

# ---- D: the segment directory full (row 4 of the trial: ENOSPC in the shm dir was not named)
mkdir -p "$work/tinyshm"
if mount -t tmpfs -o size=64k tmpfs "$work/tinyshm"; then
  dd if=/dev/zero of="$work/tinyshm/fill" bs=4k 2>/dev/null
  SCOUT_SHM_DIR="$work/tinyshm" NCCL_PROFILER_PLUGIN="$BUILD/lib/libnccl-profiler-scout.so" NCCL_DEBUG=WARN \
    "$sim" --ranks 2 --steps 5 >"$work/d.out" 2>&1; rc=$?
  [ $rc -eq 0 ] && grep -q "completed, exit 0" "$work/d.out" && ok "D: the job runs with a full segment directory" ||
    bad "D: scout-sim exit $rc: $(tail -3 "$work/d.out")"
  n=$(grep -c "the segment directory $work/tinyshm, SCOUT_SHM_DIR, is full" "$work/d.out")
  [ "$n" -eq 2 ] && ok "D: each rank's WARN names the full SCOUT_SHM_DIR" || bad "D: $n WARN lines: $(cat "$work/d.out")"
  SCOUT_SHM_DIR="$work/tinyshm" "$scout" run --job fulld -- true >"$work/d.run" 2>&1; rc=$?
  [ $rc -eq 0 ] && grep -q "warning: segment directory $work/tinyshm (SCOUT_SHM_DIR) is full" "$work/d.run" &&
    ok "D: scout run says the segment directory is full" || bad "D: scout run exit $rc: $(cat "$work/d.run")"
  umount "$work/tinyshm"
else
  bad "D: cannot mount a tmpfs for the segment directory"
fi

[ $fails -eq 0 ] || { echo "$fails failed"; exit 1; }
echo "all passed"

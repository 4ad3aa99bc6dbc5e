#!/usr/bin/env bash
# The certification drill at the default check cycle (SCOUT_CHECK_CYCLE_S unset: 300 s):
# `scout run --observer-arg=--ckpt-dir=... -- scout-sim ... --ckpt-every 20 --fault sdc:rank=3,step=110`
# ends before any cycle is judged. `scout ckpt latest` without --verified must never name a
# checkpoint that a finding already rejects (docs/certification.md, "At query time"): here the
# sdc finding rejects every checkpoint, those written before it (it came after them) as candidates
# and those written while it was open as rejected, so latest names none, says why of each
# candidate, newest first, and exits 1. Every checkpoint `ckpt list` shows as rejected or as a
# candidate a finding rejects is checked against what latest printed.
# Usage: test/ckpt/drill_default_cycle_test.sh [BUILD]   (run from the repository root)
set -uo pipefail
BUILD=${1:-build}
fail=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fail=1; }

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
ln -s "$(cd "$BUILD" && pwd)" "$TMP/build"
mkdir -p "$TMP/shm"
ROOT=$(cd "$TMP" && pwd -P)
run() {
  (cd "$TMP" && env -u SCOUT_JOB_ID -u TORCHELASTIC_RUN_ID -u SLURM_JOB_ID -u NCCL_PROFILER_PLUGIN -u SCOUT_CKPT_DIR \
     -u SCOUT_CHECK_CYCLE_S -u SCOUT_CKPT_K SCOUT_STATE_DIR="$TMP/state" SCOUT_SHM_DIR="$TMP/shm" "$@")
}
run timeout -k 5 90 build/bin/scout run --job drill --observer-arg=--ckpt-dir=drill-ckpt -- \
  build/bin/scout-sim --job drill --ranks 8 --tp 4 --steps 160 --step-ms 50 \
  --ckpt-every 20 --ckpt-dir drill-ckpt --fault sdc:rank=3,step=110 >"$TMP/run.out" 2>&1
rc=$?
[ $rc = 0 ] && ok "the drill exits 0" || { bad "the drill exits $rc"; tail -n 20 "$TMP/run.out"; }

list=$(run build/bin/scout ckpt list --job drill)
out=$(run build/bin/scout ckpt latest --job drill 2>"$TMP/err")
rc=$?
[ $rc = 1 ] && ok "ckpt latest exits 1" || bad "ckpt latest exits $rc"
[ -z "$out" ] && ok "ckpt latest names no checkpoint" || bad "ckpt latest named '$out'"

# The exact answer: each candidate, newest first, refused for the finding, then the summary.
expect=""
for s in 0000100 0000080 0000060 0000040 0000020; do
  expect+="scout: not naming $ROOT/drill-ckpt/iter_$s (candidate): a finding rejects it: sdc finding #1 (attributed) after it was written"$'\n'
done
expect+="scout: no checkpoint: 8 seen, 0 candidate(s) that cannot verify: the job ended, 5 candidate(s) a finding rejects, 3 rejected"
[ "$(cat "$TMP/err")" = "$expect" ] && ok "ckpt latest says why of each candidate, newest first" \
  || { bad "ckpt latest's stderr differs"; diff <(printf '%s\n' "$expect") "$TMP/err"; }

# Cross-check with the list: what it shows rejected, or as a candidate a finding rejects, is
# never what latest names; the list has 8 checkpoints, 3 rejected (written while the finding was open).
rows=$(printf '%s\n' "$list" | grep -E "^ +[0-9]+  $ROOT/drill-ckpt/iter_")
[ "$(printf '%s\n' "$rows" | wc -l)" = 8 ] && ok "8 checkpoints listed" || bad "listed: $list"
for s in 0000120 0000140 0000160; do
  printf '%s\n' "$rows" | grep "iter_$s " | grep -q ' rejected   sdc finding #1 (attributed) began before it and was open when it was written' \
    && ok "iter_$s rejected by the finding" || bad "iter_$s: $(printf '%s\n' "$rows" | grep "iter_$s ")"
done
refused=$(printf '%s\n' "$rows" | grep -cE ' (rejected  |candidate  a finding rejects it: sdc finding #1)')
[ "$refused" = 8 ] && ok "every checkpoint is rejected by the finding (8)" || bad "$refused of 8 refused: $list"
while read -r _ path _; do
  [ "$path" = "$out" ] && bad "latest named $path, which the list shows refused"
done <<<"$rows"
[ $fail = 0 ] || { echo "--- list"; printf '%s\n' "$list"; }
exit $fail

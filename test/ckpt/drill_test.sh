#!/usr/bin/env bash
# docs/certification.md, "A drill in under a minute", works as written: the section's first
# ```sh block, run from a directory whose build/ is this build (state and segments in a temporary
# directory), verifies the checkpoints written before the fault and rejects the ones after it,
# within 60 s; `ckpt latest --verified` names one written before the fault by its absolute path
# (the block's --ckpt-dir is relative), and names it again when run from another directory.
# Usage: test/ckpt/drill_test.sh [BUILD]   (run from the repository root, as `make test` does)
set -uo pipefail
BUILD=${1:-build}
fail=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fail=1; }

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# The section's first fenced sh block.
block=$(awk '/^## A drill in under a minute$/ {sec=1; next} /^## / {sec=0} sec && /^```sh$/ && !done {inb=1; next}
             inb && /^```$/ {inb=0; done=1; next} inb {print}' docs/certification.md)
[ -n "$block" ] && ok "the drill section has a sh block" || { bad "no sh block under '## A drill in under a minute'"; exit 1; }
printf '%s\n' "$block" | grep -q 'SCOUT_CHECK_CYCLE_S=1' && ok "the block sets SCOUT_CHECK_CYCLE_S" \
  || bad "the block does not shorten the check cycle"

ln -s "$(cd "$BUILD" && pwd)" "$TMP/build"
start=$(date +%s%N)
(cd "$TMP" && env -u SCOUT_JOB_ID -u TORCHELASTIC_RUN_ID -u SLURM_JOB_ID -u NCCL_PROFILER_PLUGIN -u SCOUT_CKPT_DIR \
   SCOUT_STATE_DIR="$TMP/state" SCOUT_SHM_DIR="$TMP/shm" timeout -k 5 90 bash -c "mkdir -p $TMP/shm
$block" >"$TMP/out" 2>"$TMP/err")
rc=$?
took_ms=$(( ($(date +%s%N) - start) / 1000000 ))
took="$((took_ms / 1000)).$(printf %03d $((took_ms % 1000)))"
[ $rc = 0 ] && ok "the block exits 0 (${took}s)" || { bad "the block exits $rc"; tail -n 20 "$TMP/err"; }
[ "$took_ms" -lt 60000 ] && ok "verdicts within 60 s (${took}s)" || bad "took ${took}s"

# The ckpt list table: every checkpoint decided; the early ones verified (those within two 1 s
# cycles of the fault at step 110 go either way, by where the cycles fall), the ones written
# after the fault rejected naming the sdc finding.
ROOT=$(cd "$TMP" && pwd -P)
list=$(grep -E "^ +[0-9]+  $ROOT/drill-ckpt/iter_" "$TMP/out")
state() { printf '%s\n' "$list" | awk -v p="$ROOT/drill-ckpt/iter_$1" '$2 == p {print $5}'; }
for s in 0000020 0000040; do
  [ "$(state $s)" = verified ] && ok "iter_$s verified" || bad "iter_$s is '$(state $s)', not verified"
done
for s in 0000120 0000140 0000160; do
  [ "$(state $s)" = rejected ] && ok "iter_$s rejected" || bad "iter_$s is '$(state $s)', not rejected"
  printf '%s\n' "$list" | grep "iter_$s" | grep -q 'sdc finding #1' && ok "iter_$s names the sdc finding" \
    || bad "iter_$s does not name the sdc finding"
done
[ "$(printf '%s\n' "$list" | grep -c candidate)" = 0 ] && ok "no checkpoint left a candidate" \
  || bad "candidates left: $(printf '%s\n' "$list" | grep candidate)"
[ "$(printf '%s\n' "$list" | wc -l)" = 8 ] && ok "8 checkpoints listed" || bad "listed: $list"
latest=$(tail -n 1 "$TMP/out")
case "$latest" in
  "$ROOT"/drill-ckpt/iter_00000[2-9]0|"$ROOT"/drill-ckpt/iter_0000100) ok "latest --verified: $latest (before the fault)" ;;
  *) bad "latest --verified printed '$latest'" ;;
esac
# The observer's log says the finding before the certification line that cites it.
f_line=$(grep -n 'scout-observer: finding 1 sdc' "$TMP/err" | head -1 | cut -d: -f1)
c_line=$(grep -n 'scout-observer: certification: sdc finding #1 counts against checkpoints' "$TMP/err" | head -1 | cut -d: -f1)
[ -n "$f_line" ] && [ -n "$c_line" ] && [ "$f_line" -lt "$c_line" ] \
  && ok "log: 'finding 1 sdc' (line $f_line) before the certification line citing it (line $c_line)" \
  || bad "log order: finding line '$f_line', certification line '$c_line'"
# A restart script runs from anywhere: the same answer from another directory, a path that loads.
elsewhere=$(cd / && SCOUT_STATE_DIR="$TMP/state" "$TMP/build/bin/scout" ckpt latest --verified --job drill 2>"$TMP/err2")
rc=$?
[ $rc = 0 ] && [ "$elsewhere" = "$latest" ] && [ -d "$elsewhere" ] \
  && ok "latest --verified from / names the same directory (exit 0)" \
  || { bad "latest --verified from / exits $rc, printed '$elsewhere'"; cat "$TMP/err2"; }
[ $fail = 0 ] || { echo "--- output"; cat "$TMP/out"; }
exit $fail

#!/usr/bin/env bash
# README.md's first screen works as written: its first command's run part (what follows
# "make -j2 && ") runs in a temporary state and shared-memory directory and ends with the status
# naming the injected rank in an attributed sdc finding; the second command is `make test`;
# .ci/run is exactly install, build, the README's test command, then the sanitizer passes and a
# short fuzz run (targets the Makefile has); every page in docs/ is linked.
# Usage: test/cli/readme_test.sh [BUILD]   (run from the repository root, as `make test` does)
set -uo pipefail
BUILD=${1:-build}
ROOT=$(pwd)
fail=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fail=1; }

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# The two commands of the first screen: the first two fenced ```sh blocks.
blocks=$(awk '/^```sh$/ {inb=1; n++; next} /^```$/ {inb=0; next} inb && n <= 2 {print n ": " $0}' README.md)
first=$(printf '%s\n' "$blocks" | sed -n 's/^1: //p')
second=$(printf '%s\n' "$blocks" | sed -n 's/^2: //p')
[ "$(printf '%s\n' "$first" | wc -l)" = 1 ] && ok "first block is one command" || bad "first block: $first"
[ "$second" = "make test" ] && ok "second command is 'make test'" || bad "second command: '$second'"
case "$first" in
  "scripts/install-deps.sh && make -j2 && "*) ok "first command installs and builds" ;;
  *) bad "first command does not start with 'scripts/install-deps.sh && make -j2 && ': $first" ;;
esac
run=${first#"scripts/install-deps.sh && make -j2 && "}

# .ci/run: install, the layout check of the shipped code, build, the README's test command, then
# the scaling benchmark's smoke run and the sanitizer and fuzzing passes (which need the build's
# archives), nothing else.
ci=$(grep -v '^\s*#' .ci/run | grep -v '^\s*$' | grep -v '^set -euo pipefail$' | grep -v '^cd ')
expected=$'bash scripts/install-deps.sh\nmake format-check\nmake -j"$(nproc)" all\nmake test'
expected_san=$'make bench-smoke\nmake -j"$(nproc)" asan-test\nmake -j"$(nproc)" tsan-test\nmake -j"$(nproc)" fuzz FUZZ_SECONDS=5'
[ "$(printf '%s\n' "$ci" | head -4)" = "$expected" ] && ok ".ci/run is install, format-check, build, make test" \
  || bad ".ci/run does not start with install, format-check, build, make test: $ci"
[ "$(printf '%s\n' "$ci" | tail -n +5)" = "$expected_san" ] && ok ".ci/run then runs bench-smoke, asan-test, tsan-test, fuzz" \
  || bad ".ci/run after make test runs: $(printf '%s\n' "$ci" | tail -n +5)"
# Each pass is a make target that exists.
for t in format-check bench-smoke asan-test tsan-test fuzz; do
  grep -q "^[a-z -]*\b$t\b[a-z -]*:" Makefile && ok "Makefile has $t" || bad "Makefile has no target $t"
done

# Every page in docs/ linked, every relative link present.
for f in docs/*.md; do
  grep -q "](${f})" README.md && ok "README links $f" || bad "README does not link $f"
done
for l in $(grep -o '](docs/[^)]*)' README.md | sed 's/^](//; s/)$//' | sort -u) LICENSE; do
  [ -e "$l" ] || bad "README links missing $l"
done

# The run part, from a directory whose build/ is this build (nothing else may land there).
ln -s "$(cd "$BUILD" && pwd)" "$TMP/build"
mkdir -p "$TMP/shm"
(cd "$TMP" && env -u SCOUT_JOB_ID -u TORCHELASTIC_RUN_ID -u SLURM_JOB_ID -u NCCL_PROFILER_PLUGIN \
   SCOUT_STATE_DIR="$TMP/state" SCOUT_SHM_DIR="$TMP/shm" timeout -k 5 120 bash -c "$run" >"$TMP/out" 2>"$TMP/err")
rc=$?
[ $rc = 0 ] && ok "run part exits 0" || { bad "run part exit $rc"; cat "$TMP/err"; }
tail -n 25 "$TMP/out"

# The status comes last on stdout: the findings block names rank 5 in an attributed sdc.
sed -n '/^findings: /,$p' "$TMP/out" > "$TMP/findings"
grep -q '^findings: 1 open, 0 closed$' "$TMP/findings" && ok "one open finding" || bad "findings line: $(head -1 "$TMP/findings")"
grep -Eq '^  #1 sdc attributed: rank 5 \([^)]*GPU GPU-sim-node0-5\) in world Broadcast #1$' "$TMP/findings" \
  && ok "the finding names rank 5 (sdc, attributed)" || bad "no sdc finding naming rank 5"
grep -Eq '^details: build/bin/scout explain --job run-[0-9]{8}-[0-9]{6}-[0-9]+ 1; ' "$TMP/out" \
  && ok "status ends with the hint naming the fresh job" || bad "no details line"

# The store agrees, the ground truth is where the README says, and the segments were reclaimed.
job=$(sed -n 's/^scout: job \([^,]*\), store .*/\1/p' "$TMP/err" | head -1)
json=$(SCOUT_STATE_DIR="$TMP/state" "$BUILD/bin/scout" findings --json --job "$job")
echo "$json" | grep -q '"kind":"sdc"' && echo "$json" | grep -q '"suspects":\[{"comm_rank":5,"global_rank":5,' \
  && ok "store: sdc on global rank 5" || bad "store findings: $json"
grep -q '"kind":"sdc","global_rank":5,' "$TMP/state/$job/truth.jsonl" 2>/dev/null \
  && ok "ground truth: sdc injected on rank 5, beside the store" || bad "no ground truth $TMP/state/$job/truth.jsonl"
[ "$(ls -A "$TMP" | sort | tr '\n' ' ')" = "build err findings out shm state " ] && ok "nothing written into the run directory" \
  || bad "the run directory holds: $(ls -A "$TMP" | tr '\n' ' ')"
[ -z "$(ls -A "$TMP/shm")" ] && ok "segments removed after the final pass" || bad "segments left: $(ls "$TMP/shm" | head -3)"

exit $fail

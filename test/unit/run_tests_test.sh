#!/usr/bin/env bash
# scripts/run-tests.sh cannot pass by accident. In a scratch tree (a copy of the runner and its
# judge, with the plants of test/fixtures/run-tests/ built as its programs) a clean suite passes
# with exact counts, from any directory, and each plant fails the run:
#   1. a GoogleTest program that runs no test;
#   2. a skip that test/skips.txt does not list (and one listed with another reason);
#   3. an exported GTEST_FILTER that would hide a failing test (another that matches nothing does
#      not change the counts);
#   4. a listed program that was not built (and a test source missing from test/programs.txt);
#   5. SCOUT_UPDATE_GOLDEN=0 (or 1) exported over a stale golden file: the test still compares,
#      fails, and the file is untouched; only the program run with SCOUT_UPDATE_GOLDEN=1 itself
#      (what `make update-golden` does) rewrites it, reporting SKIPPED;
# and a script test that prints SKIP but exits 0 fails; a program whose tests all skip, each
# allowed (a disabled one too), counts as skipped, and fails when one of them is not listed.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PLANTS=$ROOT/test/fixtures/run-tests
S=$(mktemp -d /tmp/scout-runtests-XXXXXX)
trap "rm -rf \"$S\"" EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# ---------------------------------------------------------------- the plants, built once
CXX=${CXX:-g++}
CC_RUN=$CXX
command -v ccache >/dev/null 2>&1 && CC_RUN="ccache $CXX"
mkdir -p "$S/bin" "$S/obj"
compile() {  # compile SRC OBJ
  CCACHE_NOHASHDIR=1 $CC_RUN -std=c++20 -O0 -I"$ROOT" -c "$1" -o "$2" 2>"$S/obj/compile.log" || {
    echo "FAIL: cannot compile $1:"; cat "$S/obj/compile.log"; exit 1; }
}
compile "$ROOT/test/support/golden.cc" "$S/obj/golden.o"
for p in ok skip zero broken golden allskip; do
  compile "$PLANTS/${p}_test.cc" "$S/obj/${p}_test.o"
  extra=(); [ $p = golden ] && extra=("$S/obj/golden.o")
  $CXX "$S/obj/${p}_test.o" "${extra[@]}" -o "$S/bin/${p}_test" -lgtest_main -lgtest -pthread || {
    echo "FAIL: cannot link ${p}_test"; exit 1; }
done

# ---------------------------------------------------------------- a scratch tree per case
# tree PROGRAM...: a fresh tree whose test/st/ holds the named plants (name_test.cc, built into
# build/test/, or name_test.sh) and whose test/programs.txt lists them; test/skips.txt allows
# the two plant skips.
tree() {
  rm -rf "$S/t"
  mkdir -p "$S/t/scripts" "$S/t/test/st" "$S/t/build/test"
  cp "$ROOT/scripts/run-tests.sh" "$ROOT/scripts/judge-test.py" "$S/t/scripts/"
  : > "$S/t/test/programs.txt"
  for p in "$@"; do
    case $p in
      *.sh) cp "$PLANTS/$p" "$S/t/test/st/$p" ;;
      *) cp "$PLANTS/$p.cc" "$S/t/test/st/$p.cc"; cp "$S/bin/$p" "$S/t/build/test/$p"; p=$p.cc ;;
    esac
    echo "test/st/$p" >> "$S/t/test/programs.txt"
  done
  printf '%s\n' "# plant skips" "skip_test  Widget.NeedsAWidget  no widget on this machine" \
    "skip_test.sh  -  no widget on this machine" > "$S/t/test/skips.txt"
  echo "old output" > "$S/t/build/test/golden.txt"
}
# run [ENV=VALUE...]: runs the scratch tree's runner from / (the default build directory) with
# the given variables exported; sets out and rc.
run() {
  out=$(cd / && env "$@" SCOUT_TEST_JOBS=2 bash "$S/t/scripts/run-tests.sh" 2>&1); rc=$?
}
expect() {  # expect RC TEXT WHAT: the last run exited RC and printed TEXT (a fixed string)
  if [ "$rc" -ne "$1" ] || ! grep -qF -- "$2" <<<"$out"; then
    fail "$3: want exit $1 and '$2', got exit $rc:"; sed 's/^/    /' <<<"$out"
  fi
}

BASE=(ok_test skip_test ok_test.sh skip_test.sh)
SUMMARY="test programs: 3 passed, 1 skipped, 0 failed; cases: 4 passed, 2 skipped"

# A clean suite: passes, each skip counted once, from / and from another directory with a
# relative build path.
tree "${BASE[@]}"
run
expect 0 "$SUMMARY" "clean suite"
expect 0 "skipped (allowed by test/skips.txt): skip_test Widget.NeedsAWidget: no widget on this machine" "clean suite"
out=$(cd "$S/t/test/st" && SCOUT_TEST_JOBS=1 bash ../../scripts/run-tests.sh ../../build 2>&1); rc=$?
expect 0 "$SUMMARY" "clean suite run from test/st with build ../../build"

# 1. A program that runs no test.
tree "${BASE[@]}" zero_test
run
expect 1 "FAIL  zero_test" "zero-test program"
expect 1 "ran no test" "zero-test program"

# 2. An unlisted skip, and a listed one that skips for another reason.
tree "${BASE[@]}"
sed -i '/^skip_test  Widget/d' "$S/t/test/skips.txt"
run
expect 1 "Widget.NeedsAWidget skipped and not listed in test/skips.txt: no widget on this machine" "unlisted skip"
tree "${BASE[@]}"
sed -i 's/^skip_test  Widget.NeedsAWidget .*/skip_test  Widget.NeedsAWidget  needs root/' "$S/t/test/skips.txt"
run
expect 1 "not the listed reason 'needs root'" "skip with another reason"
tree "${BASE[@]}"
sed -i '/^skip_test.sh/d' "$S/t/test/skips.txt"
run
expect 1 "FAIL  skip_test.sh" "unlisted script skip"
expect 1 "the script skipped and not listed in test/skips.txt: no widget on this machine" "unlisted script skip"

# 3. An exported GTEST_FILTER: it would hide Broken.Fails; it reaches no program.
tree "${BASE[@]}" broken_test
run 'GTEST_FILTER=Ok.*'
expect 1 "FAIL  broken_test" "GTEST_FILTER=Ok.* over a failing test"
expect 1 "not passed to the tests: GTEST_FILTER" "GTEST_FILTER=Ok.* over a failing test"
tree "${BASE[@]}"
run GTEST_FILTER=NoSuch GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=3
expect 0 "$SUMMARY" "GTEST_FILTER=NoSuch and sharding on a clean suite"

# 4. A listed program that was not built; a source not listed; a line naming no source.
tree "${BASE[@]}"
cp "$PLANTS/ok_test.cc" "$S/t/test/st/gone_test.cc"
echo "test/st/gone_test.cc" >> "$S/t/test/programs.txt"
run
expect 1 "FAIL  gone_test" "missing program"
expect 1 "missing: $S/t/build/test/gone_test was not built" "missing program"
tree "${BASE[@]}"
cp "$PLANTS/ok_test.cc" "$S/t/test/st/new_test.cc"
run
expect 1 "test/st/new_test.cc is not in test/programs.txt: add the line 'test/st/new_test.cc' there" "unlisted source"
tree "${BASE[@]}"
echo "test/st/removed_test.cc" >> "$S/t/test/programs.txt"
run
expect 1 "test/programs.txt lists test/st/removed_test.cc, which does not exist" "line naming no source"

# 5. SCOUT_UPDATE_GOLDEN exported: the golden test still compares and fails; nothing rewritten.
for v in 0 1; do
  tree "${BASE[@]}" golden_test
  run SCOUT_UPDATE_GOLDEN=$v
  expect 1 "FAIL  golden_test" "SCOUT_UPDATE_GOLDEN=$v over a stale golden file"
  [ "$(cat "$S/t/build/test/golden.txt")" = "old output" ] || fail "SCOUT_UPDATE_GOLDEN=$v: golden.txt was rewritten"
done
# What `make update-golden` does: the program itself with SCOUT_UPDATE_GOLDEN=1 rewrites the file
# and reports SKIPPED, not PASSED.
out=$(SCOUT_UPDATE_GOLDEN=1 "$S/t/build/test/golden_test" --gtest_color=no 2>&1); rc=$?
expect 0 "[  SKIPPED ] Golden.OutputMatchesTheGoldenFile" "golden_test with SCOUT_UPDATE_GOLDEN=1"
expect 0 "rewrote $S/t/build/test/golden.txt" "golden_test with SCOUT_UPDATE_GOLDEN=1"
[ "$(cat "$S/t/build/test/golden.txt")" = "new output" ] || fail "SCOUT_UPDATE_GOLDEN=1: golden.txt not rewritten"
run
expect 0 "test programs: 4 passed, 1 skipped, 0 failed; cases: 5 passed, 2 skipped" "after the update"

# A program whose tests all skip (one of them disabled): skipped when both are listed, failed when
# the disabled one is not.
tree "${BASE[@]}" allskip_test
printf '%s\n' "allskip_test  Gadget.NeedsAGadget  no gadget" "allskip_test  Gadget.DISABLED_NotYet  planted" \
  >> "$S/t/test/skips.txt"
run
expect 0 "test programs: 3 passed, 2 skipped, 0 failed; cases: 4 passed, 4 skipped" "all-skip program, listed"
sed -i '/DISABLED_NotYet/d' "$S/t/test/skips.txt"
run
expect 1 "Gadget.DISABLED_NotYet not run (SUPPRESSED) and not listed in test/skips.txt" "unlisted disabled test"

# A script that prints SKIP but exits 0.
tree "${BASE[@]}" saysskip_test.sh
run
expect 1 "printed 'SKIP: no widget on this machine' but exited 0" "script saying SKIP with exit 0"

[ $fails -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "PASS: run-tests.sh fails on each plant"

#!/usr/bin/env bash
# Runs each libFuzzer target for SECONDS on a scratch copy of its committed seed corpus
# (test/fuzz/corpus/<name>), each input limited to 5 s and the process to 2048 MB, and prints one
# line per target: executions, executions per second, new corpus entries, crashes. Exits 1 if any
# target crashed, timed out on an input or ran out of memory (the reproducer is kept in
# <fuzz-dir>/artifacts/<name>/ until the next run).
# Usage: test/fuzz/run-fuzz.sh FUZZ_DIR SECONDS NAME...
set -u
dir=$1; seconds=$2; shift 2
src=$(cd "$(dirname "$0")" && pwd)
fail=0
for name in "$@"; do
  work="$dir/work/$name"; art="$dir/artifacts/$name"
  rm -rf "$work" "$art"; mkdir -p "$work" "$art"  # crashes of this run only
  cp -r "$src/corpus/$name/." "$work/" 2>/dev/null || true
  log="$dir/$name.log"
  TMPDIR="$dir" "$dir/${name}_fuzz" "$work" -max_total_time="$seconds" -timeout=5 -rss_limit_mb=2048 \
    -max_len=65536 -artifact_prefix="$art/" -print_final_stats=1 >"$log" 2>&1
  rc=$?
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
  rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$')
  crashes=$(ls "$art" | wc -l)
  printf 'fuzz %-8s %ss: %s execs (%s/s), corpus %s -> %s, crashes %s, exit %s\n' "$name" "$seconds" \
    "${execs:-?}" "${rate:-?}" "$(ls "$src/corpus/$name" 2>/dev/null | wc -l)" "$(ls "$work" | wc -l)" "$crashes" "$rc"
  if [ "$rc" -ne 0 ] || [ "$crashes" -ne 0 ]; then
    fail=1
    tail -30 "$log"
  fi
done
exit $fail

#!/usr/bin/env bash
# scripts/gpu-check.sh on a machine without a GPU:
#   1. with the build tree: its CPU-side checks PASS, every GPU step is named as a SKIP for
#      missing hardware, and it exits 0;
#   2. with a broken tree (SCOUT_GPU_CHECK_BUILD: a fingerprint benchmark that measures nothing,
#      no scout-sim): those checks FAIL and the script exits non-zero: a check whose subject did
#      not happen never reads as a success.
# On a machine with a GPU part 1 only checks that the script completes and writes its summary
# (the GPU session reads the numbers).
set -u
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
out=$(mktemp -d /tmp/scout-gpucheck-test-XXXXXX)
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*"; echo "--- summary"; cat "$out/summary.txt" 2>/dev/null; echo "--- stdout"; tail -40 "$out/stdout.txt"; exit 1; }

OUT=$out SCOUT_GPU_CHECK_BUILD=$PWD/$BUILD timeout 300 bash scripts/gpu-check.sh > "$out/stdout.txt" 2>&1
rc=$?
[ -s "$out/summary.txt" ] || fail "no summary.txt"
[ -s "$out/results.tar.gz" ] || fail "no results.tar.gz"
grep -q "gpu-check: done in" "$out/summary.txt" || fail "no completion line"
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  [ $rc -eq 0 ] || fail "gpu-check.sh exited $rc without a GPU"
  grep -q "^FAIL" "$out/summary.txt" && fail "a check failed"
  grep -q "skipping the GPU parts of steps 1, 6 and 9 and steps 2-5, 7, 8" "$out/summary.txt" || fail "no skip message for the GPU steps"
  grep -q "^SKIP step1: kernel vs CPU reference and GPU throughput: no GPU" "$out/summary.txt" || fail "step 1's GPU part not named as skipped"
  grep -q "^SKIP steps 2-5: no GPU" "$out/summary.txt" || fail "steps 2-5 not named as skipped"
  grep -q "^SKIP step7: no GPU" "$out/summary.txt" || fail "step 7 (net plugin under NCCL) not named as skipped"
  grep -q "^SKIP step8: no GPU" "$out/summary.txt" || fail "step 8 (GEMM capture) not named as skipped"
  grep -q "^PASS step1 (CPU only): CPU fingerprint throughput measured" "$out/summary.txt" || fail "CPU fingerprint throughput not measured"
  grep -q "^step1 (CPU only): 64 MiB " "$out/summary.txt" || fail "no CPU throughput row for 64 MiB"
  grep -q "^PASS cpu-check: scout-sim straggler on rank 5 found by the observer" "$out/summary.txt" || fail "CPU-side pipeline check failed"
  grep -q "^PASS step6 (CPU only, emulated GPU): the GEMM recipe ran twice" "$out/summary.txt" || fail "replay protocol check on an emulated GPU failed"
  grep -q "^PASS step6: link across two scout-replay processes" "$out/summary.txt" || fail "replay link check on emulated GPUs failed"
  grep -q "^PASS step9 (CPU only, emulated hung GPU): the GEMM timed out at its 1 s deadline" "$out/summary.txt" || fail "step 9 (replay beside a stuck GPU) failed on an emulated hung GPU"
  grep -q "gpu-check: 0 check(s) failed" "$out/summary.txt" || fail "no failure count line"
else
  [ $rc -eq 0 ] || [ $rc -eq 1 ] || fail "gpu-check.sh exited $rc"
fi

# A tree whose benchmark measures nothing and which lacks scout-sim: the checks FAIL, exit 1.
broken=$out/broken
mkdir -p "$broken/bench" "$broken/bin" "$broken/lib"
printf '#!/bin/sh\necho "nothing measured"\nexit 0\n' > "$broken/bench/fingerprint_bench"
chmod +x "$broken/bench/fingerprint_bench"
for f in scout scout-observer scout-dump scout-replay; do ln -s "$PWD/$BUILD/bin/$f" "$broken/bin/$f"; done
ln -s "$PWD/$BUILD/lib/libnccl-profiler-scout.so" "$broken/lib/"
out2=$out/second
mkdir -p "$out2"
OUT=$out2 SCOUT_GPU_CHECK_BUILD=$broken timeout 300 bash scripts/gpu-check.sh > "$out2/stdout.txt" 2>&1
rc=$?
[ $rc -eq 1 ] || fail "gpu-check.sh exited $rc with a broken tree (expected 1)"
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  grep -q "^FAIL step1 (CPU only): CPU fingerprint throughput measured" "$out2/summary.txt" || fail "an empty benchmark did not FAIL step 1"
fi
grep -q "^FAIL cpu-check: scout-sim or scout-observer missing" "$out2/summary.txt" || fail "a missing scout-sim did not FAIL the CPU-side check"
# SCOUT_GPU_CHECK_STEPS selects steps (the device tool's calls are split that way): only step 6.
out3=$out/third
mkdir -p "$out3"
OUT=$out3 SCOUT_GPU_CHECK_BUILD=$PWD/$BUILD SCOUT_GPU_CHECK_STEPS=6 timeout 300 bash scripts/gpu-check.sh > "$out3/stdout.txt" 2>&1
rc=$?
[ $rc -eq 0 ] || fail "gpu-check.sh with SCOUT_GPU_CHECK_STEPS=6 exited $rc"
grep -q "step6: link across two scout-replay processes" "$out3/summary.txt" || fail "step 6 did not run when selected"
grep -qE "step1|cpu-check|step7|step8|step9" "$out3/summary.txt" && fail "steps that were not selected ran"
echo "PASS: gpu-check.sh CPU-side steps (exit 0, GPU steps named as skipped), FAIL on a broken tree (exit 1), step selection"
cat "$out/summary.txt"

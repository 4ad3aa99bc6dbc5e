#!/usr/bin/env bash
# The fingerprint kernel on a GPU machine, in under 3 minutes (docs/fingerprint.md, "Checking on
# a GPU"). Builds nothing: it runs the fingerprint benchmark of the carried bundle (.gpu-bundle,
# made here by scripts/gpu-bundle.sh), else of BUILD (default build/), else $SCOUT_GPU_LAB_BUILD.
#
#   1. the GPU, driver and tools found;
#   2. kernel vs CPU reference: fingerprint_bench --check (every case must be identical);
#   3. throughput: fingerprint_bench --gpu, the kernel against a device-to-device copy at 1, 16,
#      64 and 256 MiB; target >= 80% of the copy at 64 and 256 MiB;
#   4. when Nsight Compute is present (ncu on PATH or /opt/nvidia/nsight-compute/*/ncu): one
#      64 MiB launch profiled with the sections SpeedOfLight, Occupancy, LaunchStats,
#      WarpStateStats, MemoryWorkloadAnalysis; the key counters printed;
#   5. when compute-sanitizer is present: memcheck and synccheck over a 1 MiB launch.
#
# On the build machine:  make -j2 all benches tests && scripts/gpu-bundle.sh
# On the GPU machine:    scripts/gpu-lab.sh            (writes OUT, default ./gpu-lab-out)
# Exit status: 0 all checks passed and targets met; 1 a result differed from the CPU reference or
# a sanitizer reported an error; 3 a throughput target was missed; 2 no usable GPU.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUTDIR=${OUT:-$ROOT/gpu-lab-out}
mkdir -p "$OUTDIR"
SUMMARY=$OUTDIR/summary.txt
: > "$SUMMARY"
say() { echo "$*" | tee -a "$SUMMARY"; }
T0=$(date +%s)

if [ -n "${SCOUT_GPU_LAB_BUILD:-}" ]; then
  B=$SCOUT_GPU_LAB_BUILD
elif [ -d .gpu-bundle ]; then
  B=$ROOT/.gpu-bundle
  export LD_LIBRARY_PATH=$B/syslib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
else
  B=$ROOT/${1:-build}
fi
FPBENCH=$B/bench/fingerprint_bench
[ -x "$FPBENCH" ] || { say "gpu-lab: $FPBENCH missing (make benches; scripts/gpu-bundle.sh)"; exit 2; }

# ---------------------------------------------------------------- 1. what is here
say "gpu-lab: scout $(git describe --always --dirty 2>/dev/null || echo '?'), $(date -u +%FT%TZ), bench $FPBENCH"
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  say "gpu-lab: no GPU (nvidia-smi finds none): nothing to measure"
  exit 2
fi
say "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | head -1)"
NCU=$(command -v ncu 2>/dev/null || ls -1 /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | tail -1)
SAN=$(command -v compute-sanitizer 2>/dev/null || ls -1 /usr/local/cuda/bin/compute-sanitizer 2>/dev/null | head -1)
say "tools: ncu ${NCU:-absent}; compute-sanitizer ${SAN:-absent}; nvcc $(command -v nvcc >/dev/null && nvcc --version | grep -o 'release [0-9.]*' || echo absent)"
status=0

# ---------------------------------------------------------------- 2. bit check
timeout 120 "$FPBENCH" --check > "$OUTDIR/check.txt" 2>&1; rc=$?
grep -E '^MISMATCH' "$OUTDIR/check.txt" | head -5 | tee -a "$SUMMARY"
line=$(grep 'cases identical' "$OUTDIR/check.txt")
if [ $rc -eq 0 ] && [ -n "$line" ]; then say "PASS check: $line"; else say "FAIL check: ${line:-exit $rc}"; status=1; fi

# ---------------------------------------------------------------- 3. throughput
timeout 120 "$FPBENCH" --gpu > "$OUTDIR/throughput.txt" 2>&1
grep -E 'GPU|size|MiB' "$OUTDIR/throughput.txt" | tee -a "$SUMMARY"
for size in "64 MiB" "256 MiB"; do
  row=$(grep "^$size " "$OUTDIR/throughput.txt")
  if [ -n "$row" ] && grep -q ' met$' <<<"$row"; then
    say "PASS throughput $size: $(awk '{print $(NF-1)}' <<<"$row") of the copy (target 80%)"
  else
    say "MISSED throughput $size: ${row:-no row}"
    [ $status -eq 0 ] && status=3
  fi
done

# ---------------------------------------------------------------- 4. Nsight Compute
if [ -n "$NCU" ]; then
  timeout 150 "$NCU" --kernel-name scout_fp_plan --launch-skip 1 --launch-count 1 \
      --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
      --section MemoryWorkloadAnalysis \
      --metrics smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_membar_per_issue_active.ratio \
      "$FPBENCH" --profile 64 > "$OUTDIR/ncu.txt" 2>&1
  rc=$?
  say "ncu (64 MiB launch, exit $rc):"
  grep -E 'profile:|Duration|DRAM Throughput|Memory Throughput|Registers Per Thread|Theoretical Occupancy|Achieved Occupancy|Waves Per SM|Warp Cycles Per Issued Instruction|Executed Ipc Active|L2 Hit Rate|L1/TEX Hit Rate|Block Limit Registers|stalled_long_scoreboard|stalled_barrier|stalled_membar|==ERROR==' \
      "$OUTDIR/ncu.txt" | sed 's/^ */  /' | tee -a "$SUMMARY"
else
  say "ncu: absent, no profile"
fi

# ---------------------------------------------------------------- 5. compute-sanitizer
if [ -n "$SAN" ]; then
  for tool in memcheck synccheck; do
    timeout 90 "$SAN" --tool $tool --error-exitcode 9 "$FPBENCH" --profile 1 > "$OUTDIR/sanitizer-$tool.txt" 2>&1; rc=$?
    if [ $rc -eq 0 ]; then
      say "PASS compute-sanitizer $tool: $(grep -m1 'ERROR SUMMARY' "$OUTDIR/sanitizer-$tool.txt")"
    else
      say "FAIL compute-sanitizer $tool (exit $rc): $(grep -m1 -E 'ERROR SUMMARY|Invalid|Barrier' "$OUTDIR/sanitizer-$tool.txt")"
      status=1
    fi
  done
else
  say "compute-sanitizer: absent"
fi

say "gpu-lab: done in $(( $(date +%s) - T0 )) s, exit $status (files in $OUTDIR)"
exit $status

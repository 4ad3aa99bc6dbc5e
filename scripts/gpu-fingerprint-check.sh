#!/usr/bin/env bash
# GPU validation of the fingerprint kernel, for a session with an NVIDIA GPU.
# Builds, then:
#   1. lists the kernel entries embedded in the plugin (cuobjdump when installed, else our parser);
#   2. runs the kernel against the CPU reference on random buffers of many sizes, alignments,
#      element types and byte caps (fingerprint_bench --check): every case must be identical;
#   3. prints the throughput table: CPU fingerprint vs XXH64, GPU kernel vs device-to-device copy.
# Expected output format: docs/fingerprint.md, "Checking on a GPU". Exit status: 0 when every
# check case matched, 1 on a mismatch, 2 when no GPU/driver is usable.
# Usage: scripts/gpu-fingerprint-check.sh [BUILD]   (run from the repository root)
set -uo pipefail
BUILD=${1:-build}
make -j"$(nproc)" BUILD="$BUILD" all benches >/dev/null || { echo "build failed" >&2; exit 1; }
SO="$BUILD/lib/libnccl-profiler-scout.so"

echo "== kernel entries in $SO"
if command -v cuobjdump >/dev/null 2>&1; then
  cuobjdump --list-elf "$SO"
  cuobjdump --list-ptx "$SO" 2>/dev/null || true
else
  python3 scripts/list-fatbin.py "$SO" --require sm_80,sm_90,sm_100,compute_100
fi

echo "== kernel vs CPU reference"
"$BUILD/bench/fingerprint_bench" --check
rc=$?

echo "== throughput"
"$BUILD/bench/fingerprint_bench"
exit $rc

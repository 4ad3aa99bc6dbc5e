#!/usr/bin/env bash
# The plugin carries the fingerprint kernel: sm_80, sm_90, sm_100 machine code and compute_100
# PTX in section .nv_fatbin (what `cuobjdump --list-elf` shows on a GPU machine).
# Skips (exit 77, allowed by test/skips.txt) when nvcc was absent at build time: the plugin then
# has no kernel.
set -uo pipefail
BUILD=${1:-build}
SO="$BUILD/lib/libnccl-profiler-scout.so"
FATBIN="$BUILD/obj/gen/fp_kernel.fatbin"
LIST="$(dirname "$0")/../../scripts/list-fatbin.py"

if [ ! -s "$FATBIN" ]; then
  echo "SKIP: $FATBIN is empty: nvcc was absent at build time, the plugin has no GPU kernel"
  exit 77
fi
out=$(python3 "$LIST" "$SO" --require sm_80,sm_90,sm_100,compute_100) || {
  echo "FAIL: $SO lacks required fatbin entries:"; echo "$out"; exit 1; }
echo "$out"
for want in "ELF sm_80 " "ELF sm_90 " "ELF sm_100 " "PTX compute_100 "; do
  grep -q "^$want" <<<"$out" || { echo "FAIL: no line starting '$want'"; exit 1; }
done
# A file without the section is reported as such (exit 2), never as an empty success.
python3 "$LIST" "$BUILD/lib/libscout-core.a" >/dev/null 2>&1; rc=$?
[ $rc -eq 2 ] || { echo "FAIL: expected exit 2 for a file without .nv_fatbin, got $rc"; exit 1; }
echo "PASS"

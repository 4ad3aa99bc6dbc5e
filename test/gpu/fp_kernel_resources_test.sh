#!/usr/bin/env bash
# The fingerprint kernel fits the GPU at memory speed (docs/fingerprint.md, "GPU kernel"):
#   * ptxas (nvcc --resource-usage, saved by the build next to the fatbin) reports at most 64
#     registers per thread, 0 spill bytes and 0 stack bytes for scout_fp_plan and every function
#     it calls on sm_90 (and the same on sm_80 and sm_100), so 4 CTAs of 256 threads (50%
#     occupancy) fit an SM;
#   * its PTX issues at least 4 independent 16-byte loads of the buffer before the first use.
# Skips (exit 77, allowed by test/skips.txt), saying so, only when nvcc is absent: the plugin is
# then built without its kernel.
set -uo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
NVCC=${NVCC:-${CUDA_HOME:-/usr/local/cuda}/bin/nvcc}
RES="$BUILD/obj/gen/fp_kernel.resources.txt"
if [ ! -x "$NVCC" ]; then
  echo "SKIP: $NVCC not found: no GPU kernel is built, so there is nothing to check (install CUDA to build it)"
  exit 77
fi
[ -s "$RES" ] || { echo "FAIL: $RES missing: nvcc is present but the build did not record ptxas's resource usage"; exit 1; }
python3 - "$RES" <<'PY' || exit 1
import re, sys
text = open(sys.argv[1]).read()
arch = None
rows = {}
bad = []
fn = None
for line in text.splitlines():
    m = re.search(r"Compiling entry function '(\w+)' for '(sm_\d+)'", line)
    if m:
        arch = m.group(2)
        rows.setdefault(arch, {"regs": None, "spill": 0, "stack": 0, "barriers": None})
        continue
    m = re.search(r"Function properties for (\S+)", line)
    if m:
        fn = m.group(1)
        continue
    m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
    if m and arch:
        stack, st, ld = map(int, m.groups())
        rows[arch]["stack"] = max(rows[arch]["stack"], stack)
        rows[arch]["spill"] = max(rows[arch]["spill"], st + ld)
        continue
    m = re.search(r"Used (\d+) registers, used (\d+) barriers", line)
    if m and arch:
        rows[arch]["regs"] = int(m.group(1))
        rows[arch]["barriers"] = int(m.group(2))
for a in sorted(rows):
    r = rows[a]
    print(f"{a}: {r['regs']} registers, {r['spill']} spill bytes, {r['stack']} stack bytes, {r['barriers']} barrier(s)")
for a in ("sm_80", "sm_90", "sm_100"):
    r = rows.get(a)
    if r is None or r["regs"] is None:
        bad.append(f"{a}: no ptxas line for scout_fp_plan")
    elif r["regs"] > 64 or r["spill"] or r["stack"]:
        bad.append(f"{a}: {r['regs']} registers (limit 64), {r['spill']} spill bytes, {r['stack']} stack bytes (limit 0)")
for b in bad:
    print("FAIL:", b)
sys.exit(1 if bad else 0)
PY
ptx=$(mktemp /tmp/scout-fp-ptx-XXXXXX)
trap 'rm -f "$ptx"' EXIT
"$NVCC" -std=c++17 -O3 -Iinclude -I. -arch=sm_90 -ptx plugin/gpu/fp_kernel.cu -o "$ptx" || { echo "FAIL: nvcc -ptx failed"; exit 1; }
python3 - "$ptx" <<'PY' || exit 1
import re, sys
best = run = 0
loaded = set()
for l in open(sys.argv[1]):
    m = re.search(r"ld\.global\.nc\S*\.v2\.u64\s+\{(%rd\d+), (%rd\d+)\}", l)
    if m:
        run += 1
        loaded |= {m.group(1), m.group(2)}
        continue
    if loaded and set(re.findall(r"%rd\d+", l)) & loaded:
        best, run, loaded = max(best, run), 0, set()
print(f"PTX (sm_90): {best} independent 16-byte loads of the buffer issued before the first use")
if best < 4:
    print("FAIL: fewer than 4 16-byte loads in flight per thread")
    sys.exit(1)
PY
echo "PASS"

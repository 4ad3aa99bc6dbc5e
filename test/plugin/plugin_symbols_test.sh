#!/usr/bin/env bash
# The plugin exports only the three profiler tables and the two net plugin tables (plus what the
# toolchain must add) and
# depends on nothing beyond libc, libstdc++, libgcc_s, libm, libdl, libpthread, librt and the
# dynamic loader (docs/plugin.md). Usage: plugin_symbols_test.sh [BUILD]
set -uo pipefail
BUILD=${1:-build}
SO="$BUILD/lib/libnccl-profiler-scout.so"
fail=0
[ -f "$SO" ] || { echo "FAIL: $SO not built"; exit 1; }

# Defined dynamic symbols, minus the toolchain's own (_init, _fini, _edata, _end, __bss_start).
syms=$(nm -D --defined-only "$SO" | awk '{print $3}' | grep -v -E '^(_init|_fini|_edata|_end|__bss_start)$' | sort)
want=$(printf '%s\n' ncclNetPlugin_v11 ncclNetPlugin_v12 ncclProfiler_v4 ncclProfiler_v5 ncclProfiler_v6 | sort)
if [ "$syms" != "$want" ]; then
  echo "FAIL: exported symbols differ from the profiler and net tables:"; echo "$syms"; fail=1
else
  echo "ok: exports exactly: $(echo $syms)"
fi
# Each is a data object (dlsym finds a struct, docs/nccl-notes.md §1.2).
for s in ncclProfiler_v4 ncclProfiler_v5 ncclProfiler_v6 ncclNetPlugin_v11 ncclNetPlugin_v12; do
  t=$(nm -D --defined-only "$SO" | awk -v s="$s" '$3==s {print $2}')
  [ "$t" = "D" ] || { echo "FAIL: $s has type '$t', want D (initialised data)"; fail=1; }
done

# Dependencies.
allowed='^(linux-vdso\.so\.1|libc\.so\.6|libstdc\+\+\.so\.6|libgcc_s\.so\.1|libm\.so\.6|libdl\.so\.2|libpthread\.so\.0|librt\.so\.1|ld-linux[-a-z0-9_]*\.so\.[0-9]+)$'
deps=$(ldd "$SO" | awk '{print $1}' | xargs -n1 basename)
for d in $deps; do
  if ! [[ "$d" =~ $allowed ]]; then echo "FAIL: unexpected dependency $d"; fail=1; fi
done
[ $fail -eq 0 ] && echo "ok: dependencies: $(echo $deps)"
# Position-independent code only (no text relocations in a library loaded into any process).
if readelf -d "$SO" | grep -q 'TEXTREL'; then echo "FAIL: text relocations"; fail=1; fi
exit $fail

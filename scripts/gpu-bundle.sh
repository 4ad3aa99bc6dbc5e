#!/usr/bin/env bash
# Packs what scripts/gpu-check.sh and scripts/gpu-lab.sh need on a machine without our build
# dependencies (the lent GPU machine: CUDA and PyTorch, no Debian -dev packages, no network) into
# .gpu-bundle/, debug info stripped (about 21 MB instead of 65: the device tool carries at most
# 64 MiB; the fatbin section survives stripping):
#   bin/    scout, scout-observer, scout-sim, scout-dump, scout-replay
#   lib/    libnccl-profiler-scout.so, the test delegate net plugins (libnccl-net-scouttest*.so)
#   bench/  fingerprint_bench
#   test/   record_replay_test (fixture check), if built
#   syslib/ the shared libraries those binaries need beyond glibc/libstdc++ (sqlite, gloo, ...)
# Run here after `make all benches tests`; then carry `.gpu-bundle` with the device call, e.g.
#   run(command="scripts/gpu-lab.sh && scripts/gpu-check.sh", carry=[".gpu-bundle"])
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
DEST=.gpu-bundle
rm -rf "$DEST"
mkdir -p "$DEST"/{bin,lib,bench,test,syslib}
EXCLUDE=$(git rev-parse --git-path info/exclude)  # a worktree's .git is a file
mkdir -p "$(dirname "$EXCLUDE")"
grep -qx '/.gpu-bundle/' "$EXCLUDE" 2>/dev/null || echo '/.gpu-bundle/' >> "$EXCLUDE"

cp "$BUILD"/lib/libnccl-profiler-scout.so "$DEST/lib/"
cp "$BUILD"/lib/libnccl-net-scouttest*.so "$DEST/lib/" 2>/dev/null || true
for b in scout scout-observer scout-sim scout-dump scout-replay; do
  [ -x "$BUILD/bin/$b" ] && cp "$BUILD/bin/$b" "$DEST/bin/"
done
[ -x "$BUILD/bench/fingerprint_bench" ] && cp "$BUILD/bench/fingerprint_bench" "$DEST/bench/"
[ -x "$BUILD/test/record_replay_test" ] && cp "$BUILD/test/record_replay_test" "$DEST/test/"

# Shared libraries beyond what every Linux with a C++ runtime has.
skip='^(linux-vdso|libc\.so|libm\.so|libdl\.so|librt\.so|libpthread\.so|libstdc\+\+\.so|libgcc_s\.so|ld-linux)'
for f in "$DEST"/bin/* "$DEST"/bench/* "$DEST"/test/*; do
  [ -f "$f" ] || continue
  ldd "$f" | awk '/=>/ {print $1, $3}' | while read -r name path; do
    [[ "$name" =~ $skip ]] && continue
    [ -f "$path" ] && cp -n "$path" "$DEST/syslib/" 2>/dev/null || true
  done
done
for f in "$DEST"/bin/* "$DEST"/bench/* "$DEST"/test/* "$DEST"/lib/*.so; do
  [ -f "$f" ] && strip --strip-debug "$f"
done
du -sh "$DEST"
echo "gpu-bundle: ready; carry '.gpu-bundle' and run: scripts/gpu-lab.sh; scripts/gpu-check.sh"

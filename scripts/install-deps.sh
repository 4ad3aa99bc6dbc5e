#!/usr/bin/env bash
# Installs the Debian packages scout needs to build, test and run (idempotent; run as root).
# The CUDA toolkit with NCCL is expected in /usr/local/cuda (CUDA_HOME); it is not a Debian
# package here. Without nvcc the plugin is built without its GPU kernel.
set -euo pipefail

PACKAGES=(
  build-essential         # g++, make
  libxxhash-dev           # XXH64 reference for fingerprints (inlined into the plugin)
  libfmt-dev              # formatting in the tools
  libgtest-dev libgmock-dev   # tests
  libbenchmark-dev        # make bench
  libgloo-dev libhiredis-dev  # observers' channel (FileStore, RedisStore)
  redis-server            # RedisStore rendezvous in the multi-node test
  libsqlite3-dev sqlite3  # findings store
  libssl-dev              # SHA-256 of checkpoint certificates (libcrypto)
  libcli11-dev            # command-line parsing
  nlohmann-json3-dev      # JSON output
  prometheus              # promtool check metrics (export test)
  python3                 # small test helpers (fatbin listing)
  binutils                # nm, readelf for the export checks
  procps                  # pgrep/pkill in tests
  clang                   # make fuzz (libFuzzer with AddressSanitizer/UBSan)
  libclang-rt-14-dev      # clang's libFuzzer and sanitizer runtimes (only recommended by clang)
  munge slurmctld slurmd slurm-client   # a one-node Slurm for the README's Slurm recipe (test/slurm/)
  chromium fonts-dejavu-core   # headless browser (and its fonts) that renders scout report --html in its test
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null && SUDO="sudo" || { echo "install-deps: run as root to install: ${missing[*]}" >&2; exit 1; }
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"

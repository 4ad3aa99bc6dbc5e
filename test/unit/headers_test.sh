#!/usr/bin/env bash
# `make install` installs headers that compile on their own: each installed header of
# include/scout, alone in an empty C++20 translation unit, with only the installed include
# directory on the path.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT
make -s install-headers DESTDIR="$dest" PREFIX=/opt/scout BUILD="$BUILD" >/dev/null
inc="$dest/opt/scout/include"
n=0
for h in "$inc"/scout/*.h; do
  name=scout/$(basename "$h")
  printf '#include "%s"\n' "$name" > "$dest/tu.cc"
  ${CXX:-g++} -std=c++20 -fsyntax-only -Wall -Wextra -Werror -I"$inc" "$dest/tu.cc" \
    || { echo "FAIL: $name does not compile alone"; exit 1; }
  n=$((n + 1))
done
[ "$n" -gt 0 ] || { echo "FAIL: no headers installed"; exit 1; }
echo "ok: $n installed headers compile alone"

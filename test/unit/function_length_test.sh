#!/usr/bin/env bash
# No function of the shipped code is longer than 120 lines (scripts/check-functions.py prints the
# five longest); a planted 121-line function in a scratch copy is caught, a 120-line one is not.
set -euo pipefail
cd "$(dirname "$0")/../.."
python3 scripts/check-functions.py

tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/scripts" "$tmp/common"
cp scripts/check-functions.py "$tmp/scripts/"
plant() {  # plant N: a function of N lines in common/planted.cc (signature and closing brace included)
  { echo "int planted(int x) {"; for ((i = 0; i < $1 - 2; i++)); do echo "  x += $i;"; done; echo "}"; } \
    > "$tmp/common/planted.cc"
}
plant 120
python3 "$tmp/scripts/check-functions.py" > "$tmp/out"
grep -q '^   120  common/planted.cc:1  planted$' "$tmp/out" || { cat "$tmp/out"; exit 1; }
plant 121
if python3 "$tmp/scripts/check-functions.py" > "$tmp/out" 2> "$tmp/err"; then
  echo "FAIL: a 121-line function was not caught"; exit 1
fi
grep -qx 'check-functions: common/planted.cc:1: planted is 121 lines, over 120' "$tmp/err" || { cat "$tmp/err"; exit 1; }
echo "check-functions: the shipped code passes; a 121-line function is caught"

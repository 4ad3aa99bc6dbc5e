#!/usr/bin/env bash
# Every repository path a page names (in backticks or as a relative link in docs/*.md, README.md,
# replay/README.md) exists (scripts/check-docs.py paths); a missing one is caught.
set -euo pipefail
cd "$(dirname "$0")/../.."
python3 scripts/check-docs.py paths

tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/scripts" "$tmp/docs" "$tmp/observer/model"
cp scripts/check-docs.py "$tmp/scripts/"
touch "$tmp/observer/model/model.h" "$tmp/docs/other.md" "$tmp/README.md"
printf '%s\n' 'The model is `observer/model/model.h`, see [other](other.md#x), `scout status`.' > "$tmp/docs/x.md"
python3 "$tmp/scripts/check-docs.py" paths > "$tmp/out" || { cat "$tmp/out"; exit 1; }
printf '%s\n' 'The view is `observer/core/model_view.h`.' 'See [gone](gone.md).' \
  'And `observer/model/model.{h,cc}`.' > "$tmp/docs/x.md"
if python3 "$tmp/scripts/check-docs.py" paths > "$tmp/out"; then echo "FAIL: missing paths not caught"; exit 1; fi
grep -qx 'docs/x.md:1: no such path in the repository: observer/core/model_view.h' "$tmp/out"
grep -qx 'docs/x.md:2: link to a missing file: gone.md' "$tmp/out"
grep -qx 'docs/x.md:3: no such path in the repository: observer/model/model.cc' "$tmp/out"
[ "$(wc -l < "$tmp/out")" -eq 3 ] || { cat "$tmp/out"; exit 1; }   # model.h exists: no line
echo "doc paths: missing path and link caught"

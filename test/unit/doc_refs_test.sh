#!/usr/bin/env bash
# Every reference into a page names something the page has (scripts/check-docs.py refs):
# docs/nccl-notes.md §x.y a numbered section, docs/X.md#anchor a heading, docs/X.md, "Title" a
# heading or a bold lead-in. A reference to a missing section, anchor or title is caught.
set -euo pipefail
cd "$(dirname "$0")/../.."
python3 scripts/check-docs.py refs

tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/scripts" "$tmp/docs" "$tmp/common"
cp scripts/check-docs.py "$tmp/scripts/"
printf '%s\n' '# NCCL' '## 0. Short' '1. a' '## 3. Life' '### 3.6 seqNumber' > "$tmp/docs/nccl-notes.md"
printf '%s\n' '# Observer' '## Slow links' '**Cross-node lateness.** text' > "$tmp/docs/observer.md"
printf '%s\n' '// key (docs/nccl-notes.md §3.6, §0.4); see docs/observer.md#slow-links and' \
  '// docs/observer.md, "Cross-node lateness"; docs/nccl-notes.md §3' > "$tmp/common/ok.h"
python3 "$tmp/scripts/check-docs.py" refs > "$tmp/out" || { cat "$tmp/out"; exit 1; }
printf '%s\n' '// docs/nccl-notes.md §3.7; docs/observer.md#hangs; docs/observer.md, "Hangs"' > "$tmp/common/bad.h"
if python3 "$tmp/scripts/check-docs.py" refs > "$tmp/out"; then echo "FAIL: bad references not caught"; exit 1; fi
grep -qx 'common/bad.h: docs/nccl-notes.md has no section §3.7' "$tmp/out"
grep -qx 'common/bad.h: observer.md has no heading for #hangs' "$tmp/out"
grep -qx 'common/bad.h: observer.md has no heading "Hangs"' "$tmp/out"
[ "$(wc -l < "$tmp/out")" -eq 3 ] || { cat "$tmp/out"; exit 1; }
echo "doc refs: missing section, anchor and title caught"

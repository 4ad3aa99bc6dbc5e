#!/usr/bin/env bash
# No source, script or page cites a document outside the repository (scripts/check-docs.py
# citations): NCCL facts are cited as docs/nccl-notes.md sections or NCCL source paths, our own
# rules as docs/ pages. Also checks that the checker catches each kind of outside citation.
set -euo pipefail
cd "$(dirname "$0")/../.."
python3 scripts/check-docs.py citations

# The checker must fail on each kind, and pass on the observer network's own digests.
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/scripts" "$tmp/docs"
cp scripts/check-docs.py "$tmp/scripts/"
d=dig; d="${d}est"; b=bri; b="${b}ef"; i=iss; i="${i}ue"; s=sha; s="../${s}red"
bad=("// static literals ($d 2.5)" "// see $d section 4" "// the $d's tables"
     "// strict majority (design $b section 4)" "# see $s/design/architecture.md"
     "// per-collective table ($i 6)" "// fixed in $i #12")
for line in "${bad[@]}"; do
  printf '%s\n' "$line" > "$tmp/docs/x.md"
  if python3 "$tmp/scripts/check-docs.py" citations > "$tmp/out" 2>&1; then
    echo "FAIL: not caught: $line"; exit 1
  fi
  grep -q 'docs/x.md:1: cites a document outside the repository' "$tmp/out" || { cat "$tmp/out"; exit 1; }
done
printf '%s\n' "// the $d of a range (docs/nccl-notes.md §2.5); DigestExchange::round, 64 ${d}s" > "$tmp/docs/x.md"
python3 "$tmp/scripts/check-docs.py" citations > "$tmp/out" || { cat "$tmp/out"; exit 1; }
echo "citations: checker catches all ${#bad[@]} kinds"

#!/usr/bin/env bash
# The include graph follows the allowed folder edges of docs/architecture.md (section 4), which
# scripts/check-layers.py reads: the tree passes; then, on scratch copies of the tree, each planted
# violation is caught with the line that names it, and a copy without plants passes again.
set -euo pipefail
cd "$(dirname "$0")/../.."
python3 scripts/check-layers.py

tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fresh() {  # a scratch copy of what the check reads
  rm -rf "$tmp/t"; mkdir -p "$tmp/t/scripts"
  cp -r include common plugin observer replay docs Makefile "$tmp/t/"
  cp scripts/check-layers.py "$tmp/t/scripts/"
}
# expect_caught FILE LINE-OF-STDERR: the check fails and prints exactly that problem line.
expect_caught() {
  if python3 "$tmp/t/scripts/check-layers.py" --quiet > "$tmp/out" 2> "$tmp/err"; then
    echo "FAIL: not caught: $1"; cat "$tmp/out"; exit 1
  fi
  grep -qxF "check-layers: $2" "$tmp/err" || { echo "FAIL: expected 'check-layers: $2'"; cat "$tmp/err"; exit 1; }
  [ "$(wc -l < "$tmp/err")" -eq 1 ] || { echo "FAIL: more than the planted problem"; cat "$tmp/err"; exit 1; }
}

fresh
python3 "$tmp/t/scripts/check-layers.py" --quiet > "$tmp/out"  # the copy itself passes

# 1. The store reaches back into detection.
fresh
printf '#include "observer/detect/hang.h"\n' > "$tmp/t/observer/store/planted.cc"
expect_caught store 'observer/store/planted.cc:1: observer/store includes "observer/detect/hang.h" of observer/detect, which its row of the edge table does not allow'

# 2. The model includes the plugin.
fresh
printf '#pragma once\n\n#include "plugin/core/process.h"\n' > "$tmp/t/observer/model/planted.h"
expect_caught model 'observer/model/planted.h:3: observer/model includes "plugin/core/process.h" of plugin/core, which its row of the edge table does not allow'

# 3. The pipeline includes the network.
fresh
printf '#include "observer/net/agent.h"\n' > "$tmp/t/observer/pipeline/planted.cc"
expect_caught pipeline 'observer/pipeline/planted.cc:1: observer/pipeline includes "observer/net/agent.h" of observer/net, which its row of the edge table does not allow'

# 4. An .inc file includes the CLI.
fresh
printf '// included text\n#include "observer/cli/common.h"\n' > "$tmp/t/observer/detect/planted.inc"
expect_caught inc 'observer/detect/planted.inc:2: observer/detect includes "observer/cli/common.h" of observer/cli, which its row of the edge table does not allow'

# 5. An include it cannot place (a test header from shipped code, a .def).
fresh
printf '#include "test/support/tmpdir.h"\n' > "$tmp/t/common/planted.def"
expect_caught unplaced 'common/planted.def:1: includes "test/support/tmpdir.h", which is in no folder of the edge table (include paths start at the repository root or at include/)'

# 6. A source in a folder the table does not name.
fresh
mkdir -p "$tmp/t/observer/newpart"
printf 'int x;\n' > "$tmp/t/observer/newpart/x.cc"
expect_caught folder 'observer/newpart/x.cc: not in any folder of the edge table of docs/architecture.md'

# 7. An edge the table allows but the Makefile's link order does not (LAYERS with store below model).
fresh
sed -i 's#^LAYERS := common plugin observer/model#LAYERS := common plugin observer/store observer/model#; s# observer/cluster observer/store observer/ckpt# observer/cluster observer/ckpt#' "$tmp/t/Makefile"
expect_caught link 'edge table: observer/store may include observer/model, but LAYERS links observer/model before observer/store (a call against the link order does not link)'

echo "check-layers: the tree passes; 7 planted violations caught"

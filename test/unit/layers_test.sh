#!/usr/bin/env bash
# The folder-level include graph follows the layers of docs/architecture.md: prints the graph and
# fails on a cycle or an include against the direction (scripts/check-layers.py).
set -euo pipefail
cd "$(dirname "$0")/../.."
python3 scripts/check-layers.py

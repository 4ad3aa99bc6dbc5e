#!/usr/bin/env bash
# Short form of scripts/fp-campaign.sh: three healthy emulated jobs (8, 4 and 16 ranks) at default
# settings raise no finding.
# Usage: test/cli/fp_campaign_test.sh [BUILD]   (run from the repository root, as `make test` does)
set -uo pipefail
BUILD=${1:-build}
out=$(bash scripts/fp-campaign.sh "$BUILD" 3)
rc=$?
echo "$out"
[ $rc -eq 0 ] || { echo "FAIL campaign exit $rc"; exit 1; }
[ "$(echo "$out" | tail -1)" = "3 runs, 0 findings, 0 failed" ] || { echo "FAIL last line: $(echo "$out" | tail -1)"; exit 1; }
echo "ok   3 healthy runs, 0 findings"

// Golden files: reviewed expected outputs kept in the tree (test/fixtures/cli/...), compared
// byte for byte. They are rewritten only by `make update-golden`, which runs the programs that
// use them with SCOUT_UPDATE_GOLDEN=1; scripts/run-tests.sh removes the variable, so `make test`
// always compares.
#pragma once

#include <string>

namespace scout::testing {

// Compares `actual` with the file at `path` (absolute; source_path() of a fixture): a missing
// file or any difference fails the calling test, naming the file. When SCOUT_UPDATE_GOLDEN is
// exactly "1" it writes `actual` to `path` instead (creating its folder) and marks the test
// SKIPPED ("rewrote <path>"), so an update never reports a pass; any other value compares.
void expect_golden(const std::string& path, const std::string& actual);

// Whether this run rewrites golden files (SCOUT_UPDATE_GOLDEN is exactly "1").
bool updating_golden();

}  // namespace scout::testing

// A small, fully deterministic store for CLI golden tests (test/fixtures/cli/): job "demo",
// 8 ranks on 2 hosts (rank 7 dead), communicators world (8 ranks), tp0 (2) and dp3 (2, hung),
// 5 operations with per-rank timings, and 3 findings (sdc on rank 5 open, straggler on rank 3
// closed, hang on rank 7 open). Times are fixed: the job starts at kFixtureT0.
#pragma once

#include <cstdint>
#include <string>

namespace scout::testing {

// 2025-01-01 00:00:00 UTC in ns.
constexpr int64_t kFixtureT0 = 1735689600000000000;

// Writes the demo store at `path` through StoreWriter (the observer's Sink). Throws
// std::runtime_error when the store cannot be written.
void write_demo_store(const std::string& path);

// Adds the rest of a store to the demo store at `path` (written by write_demo_store): GEMM
// capture (ranks 0 and 1: counters and one bf16 shape class each), two replay cycles (a periodic
// one that passed at +5 s, an sdc-triggered one that failed on rank 5 at +11 s), three check
// cycles (clean, clean, dirty by finding 1) and three checkpoints (step 100 verified with
// certificate 1, step 200 rejected by finding 1, step 300 a candidate; check cycles of 4 s, K 2).
// Throws
// std::runtime_error when the store cannot be written.
void write_demo_history(const std::string& path);

}  // namespace scout::testing

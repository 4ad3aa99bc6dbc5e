// One emulated job under one scout-observer, as the single-node end-to-end tests run it
// (test/observer/sim_e2e_test.cc, fault_kinds_e2e_test.cc): scout-sim writes its ground truth,
// scout-observer (hang timeout 1.5 s, 50 ms passes) its store, fingerprints are taken on every
// operation (SCOUT_FP_BUDGET=0); what each said is returned for exact comparison.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "observer/model/finding.h"
#include "test/support/subprocess.h"
#include "test/support/truth.h"

namespace scout::testing {

struct Outcome {
  std::multiset<Named> truth, found;     // the ground truth and the findings, as (kind, ranks)
  std::vector<obs::Finding> findings;    // the store's findings
  std::map<std::string, uint64_t> ops;   // operations complete per communicator, as stored
  ProcessResult sim;                     // scout-sim's exit status and output
  std::string observer_err;              // scout-observer's stderr
};

// Runs `scout-sim --job JOB --truth ... SIM_ARGS` under `scout-observer --job JOB --hang-timeout
// 1.5 --interval 50 OBSERVER_ARGS` in a fresh directory. `expect` findings are waited for (up to
// 5 s after the job ended), then the settle time (test/support/settle.h), then the observer stops.
// `hung`: the job does not end by itself (a hang, a crash its peers wait for); the findings are
// waited for (up to 10 s, then the settle time) while it runs, the observer is stopped, then the
// job (SIGTERM: scout-sim exits 4), so that no rank dies while the observer still watches (it
// would be a crash of its own).
Outcome observed_job(const std::string& job, const std::vector<std::string>& sim_args, size_t expect,
                     bool hung = false, const std::vector<std::string>& observer_args = {});

}  // namespace scout::testing

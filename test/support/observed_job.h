// One emulated job under one scout-observer, as the single-node end-to-end tests run it:
// observed_job runs it to the end (test/observer/sim_e2e_test.cc, fault_kinds_e2e_test.cc:
// scout-sim writes its ground truth, scout-observer (hang timeout 1.5 s, 50 ms passes) its store,
// fingerprints are taken on every operation (SCOUT_FP_BUDGET=0); what each said is returned for
// exact comparison); LiveJob starts it and leaves it running while the test watches the store
// (stall_e2e_test.cc, stuck_e2e_test.cc).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "observer/model/finding.h"
#include "test/support/subprocess.h"
#include "test/support/tmpdir.h"
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

// `scout-observer --job NAME OBSERVER_ARGS` (otherwise at its default settings), then `scout-sim
// --job NAME --truth ... SIM_ARGS`, both running in the background in a fresh directory with
// SCOUT_SHM_DIR and SCOUT_STATE_DIR there (`extra_env` added, never replacing those two). The
// destructor kills (SIGKILL) whichever still runs; stopping them in order is the test's.
struct LiveJob {
  TempDir dir;
  std::string job, store, truth;  // the observer's store (state/NAME/node-0.db), the ground truth
  std::map<std::string, std::string> env;
  std::unique_ptr<Subprocess> observer, sim;

  LiveJob(const std::string& name, const std::vector<std::string>& sim_args,
          const std::vector<std::string>& observer_args = {}, const std::map<std::string, std::string>& extra_env = {});
  // The store's findings now (none while it does not exist yet).
  std::vector<obs::Finding> findings() const;
  // The ground truth so far, one JSON value per line (truth.h, truth_lines).
  std::vector<nlohmann::json> truth_lines() const;
};

}  // namespace scout::testing

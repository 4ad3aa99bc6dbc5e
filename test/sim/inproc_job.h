// Runs the ranks of an emulated job as threads of one process, on one fabric, with a given
// profiler driver (e.g. the recording plugin): the harness of scout-sim's call-sequence tests.
// Each rank has its own RankContext (its own activation mask, as separate processes would).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "test/sim/fabric.h"
#include "test/sim/layout.h"
#include "test/sim/options.h"
#include "test/sim/profiler_driver.h"
#include "test/sim/rank_job.h"

namespace scout::sim {

class InProcJob {
 public:
  // `o` must have passed parse_options' checks (faults resolved). `truth_path` may be empty.
  InProcJob(const SimOptions& o, const ProfilerDriver* prof, const std::string& truth_path = "");
  ~InProcJob();

  // On one thread per rank: init_comms, body(job, global rank), destroy_comms. Returns when
  // every rank is done.
  void run(const std::function<void(RankJob&, int)>& body);

  const Layout& layout() const { return layout_; }
  const SimOptions& options() const { return opts_; }
  Fabric* fabric() const { return fabric_.get(); }

 private:
  SimOptions opts_;
  Layout layout_;
  std::unique_ptr<Fabric> fabric_;
  const ProfilerDriver* prof_;
  std::unique_ptr<TruthWriter> truth_;
};

}  // namespace scout::sim

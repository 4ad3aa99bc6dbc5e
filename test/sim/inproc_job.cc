#include "test/sim/inproc_job.h"

#include <stdexcept>
#include <thread>

namespace scout::sim {

InProcJob::InProcJob(const SimOptions& o, const ProfilerDriver* prof, const std::string& truth_path)
    : opts_(o), layout_(o), prof_(prof) {
  std::string err;
  fabric_ = Fabric::create(FabricLayout::plan(layout_, opts_), &err);
  if (!fabric_) throw std::runtime_error(err);
  if (!truth_path.empty()) truth_ = std::make_unique<TruthWriter>(truth_path);
}

InProcJob::~InProcJob() = default;

void InProcJob::run(const std::function<void(RankJob&, int)>& body) {
  std::vector<std::thread> threads;
  for (int g = 0; g < opts_.ranks; ++g) {
    threads.emplace_back([this, g, &body] {
      RankContext rc;
      rc.opts = &opts_;
      rc.layout = &layout_;
      rc.global_rank = g;
      rc.fabric = fabric_.get();
      rc.prof = prof_;
      rc.faults = FaultPlan(opts_.faults, g, opts_.ranks);
      rc.truth = truth_.get();
      rc.status = fabric_->rank_status(g);
      RankJob job(&rc);
      job.init_comms(nullptr);
      body(job, g);
      job.destroy_comms();
    });
  }
  for (auto& t : threads) t.join();
}

}  // namespace scout::sim

// Test helper: an Observer over a FakeJob's segments with an in-memory sink and a synthetic
// clock, so a test writes records, runs passes at chosen times and checks exact findings.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "observer/model/memory_sink.h"
#include "observer/pipeline/observer.h"
#include "test/support/fake_job.h"
#include "test/support/tmpdir.h"

namespace scout::testing {

struct ObserverHarness {
  TempDir dir;
  FakeJob job;
  obs::MemorySink sink;
  obs::ObserverOptions opt;
  std::unique_ptr<obs::Observer> observer;
  std::vector<std::string> log;

  explicit ObserverHarness(int nprocs, uint32_t ring_capacity = 256)
      : job(dir.path(), "job1", nprocs, "node0", ring_capacity) {
    opt.job = "job1";
    opt.host = "node0";
    opt.shm_dir = dir.path();
    opt.liveness = job.liveness();
    opt.reclaim_after_ns = -1;
    opt.hang.timeout_ns = 10 * kSec;
    opt.judge.settle_timeout_ns = 5 * kSec;
    opt.log = [this](const std::string& l) { log.push_back(l); };
  }
  // Creates the observer on first use (so a test may tune `opt` first) and runs one pass.
  void pass(int64_t now_ns) {
    if (!observer) observer = std::make_unique<obs::Observer>(opt, &sink);
    observer->pass(now_ns);
  }
  std::vector<obs::Finding> findings() const { return sink.findings(); }
  std::vector<obs::Finding> findings(obs::FindingKind k) const {
    std::vector<obs::Finding> out;
    for (const auto& f : sink.findings()) {
      if (f.kind == k) out.push_back(f);
    }
    return out;
  }
};

// Global ranks of a finding's suspects, in order.
inline std::vector<int> suspect_ranks(const obs::Finding& f) {
  std::vector<int> r;
  for (const auto& s : f.suspects) r.push_back(s.global_rank);
  return r;
}

}  // namespace scout::testing

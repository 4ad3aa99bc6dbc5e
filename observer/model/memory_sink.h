// A Sink that keeps everything in memory, with the Sink contract's replace/upsert semantics.
// Used by tests and by `scout-observer --store memory:` (nothing persisted).
#pragma once

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "observer/model/sink.h"

namespace scout::obs {

class MemorySink : public Sink {
 public:
  void put_job(const JobInfo& job) override { job_ = job; }
  void put_ranks(const std::vector<RankInfo>& ranks) override;
  void put_comms(const std::vector<CommInfo>& comms) override;
  void put_ops(const std::vector<OpSummary>& ops, const std::vector<OpRankTiming>& timings) override;
  void upsert_finding(Finding* f) override;
  void put_replay_cycle(ReplayCycleRecord* c) override {
    c->id = int64_t(cycles_.size()) + 1;
    cycles_.push_back(*c);
  }
  bool flush() override {
    flushes_++;
    return true;
  }

  const JobInfo& job() const { return job_; }
  std::vector<RankInfo> ranks() const;
  std::vector<CommInfo> comms() const;
  std::vector<OpSummary> ops() const;  // in key order
  const std::vector<OpRankTiming>& timings() const { return timings_; }
  std::vector<Finding> findings() const;  // in id order
  int flushes() const { return flushes_; }
  const std::vector<ReplayCycleRecord>& replay_cycles() const { return cycles_; }

 private:
  JobInfo job_;
  std::map<std::pair<std::string, int>, RankInfo> ranks_;
  std::map<std::pair<uint64_t, int>, CommInfo> comms_;
  std::map<std::tuple<uint64_t, std::string, std::string, uint64_t>, OpSummary> ops_;
  std::vector<OpRankTiming> timings_;
  std::map<std::string, Finding> findings_;
  int64_t next_id_ = 1;
  int flushes_ = 0;
  std::vector<ReplayCycleRecord> cycles_;
};

}  // namespace scout::obs

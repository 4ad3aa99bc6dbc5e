// The observer's store when it may not be writable now (docs/store.md, "When writes fail"): a
// Sink that opens StoreWriter at construction and, while that fails for a transient reason
// (store::Error::transient(): a lock another process holds, a full disk, a read-only file
// system), again at every flush. Until it opens, every batch fails, so the observer keeps its
// findings in memory and puts them again (obs::Sink::flush); its health (failed batches,
// findings not stored, since when) is kept in the health file beside the store when one can be
// made (observer/store/health.h). A permanent failure (not a scout store, another job's store, a
// newer schema, damage) is not retried: permanent() says so and the caller stops.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "observer/model/sink.h"
#include "observer/store/writer.h"

namespace scout::store {

class HealthFile;

class RetryingStore : public obs::Sink {
 public:
  // Tries to open at once; see error() and permanent().
  RetryingStore(std::string path, WriterOptions options);
  ~RetryingStore() override;

  bool is_open() const { return writer_ != nullptr; }
  // The latest opening failure ("" once open).
  const std::string& error() const { return error_; }
  // The latest opening failure will not pass by waiting.
  bool permanent() const { return permanent_; }
  const std::string& path() const { return path_; }

  void put_job(const obs::JobInfo& job) override;
  void put_ranks(const std::vector<obs::RankInfo>& ranks) override;
  void put_comms(const std::vector<obs::CommInfo>& comms) override;
  void put_ops(const std::vector<obs::OpSummary>& ops, const std::vector<obs::OpRankTiming>& timings) override;
  void put_p2p(const std::vector<obs::P2pPairInfo>& pairs) override;
  void put_gemm(const std::vector<obs::GemmCaptureInfo>& capture,
                const std::vector<obs::GemmShapeInfo>& shapes) override;
  void upsert_finding(obs::Finding* f) override;
  void put_replay_cycle(obs::ReplayCycleRecord* c) override;
  // While not open: tries to open; the batch fails either way (its calls were not stored).
  bool flush() override;

  // The writer's health, or this store's own while it could not open.
  obs::StoreHealth health() const;
  // Failed store operations so far (the writer's, plus failed openings).
  uint64_t errors() const;

 private:
  bool try_open();

  std::string path_;
  WriterOptions options_;
  std::unique_ptr<StoreWriter> writer_;
  std::unique_ptr<HealthFile> health_file_;  // while not open
  obs::StoreHealth health_;                  // while not open
  std::string error_;
  bool permanent_ = false;
  uint64_t findings_in_batch_ = 0, ops_in_batch_ = 0, open_failures_ = 0;
  int64_t said_ns_ = 0;
};

}  // namespace scout::store

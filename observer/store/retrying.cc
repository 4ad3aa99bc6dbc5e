#include "observer/store/retrying.h"

#include <cstdio>

#include "common/clock.h"
#include "observer/store/health.h"

namespace scout::store {

RetryingStore::RetryingStore(std::string path, WriterOptions options)
    : path_(std::move(path)), options_(std::move(options)) {
  if (try_open()) return;
  health_file_ = std::make_unique<HealthFile>(path_);
  health_.failing_since_ns = shm::wall_ns();
  health_.last_error = error_;
  health_.updated_ns = health_.failing_since_ns;
  health_file_->write(health_);
}

RetryingStore::~RetryingStore() = default;

bool RetryingStore::try_open() {
  bool transient = false;
  std::string err;
  writer_ = StoreWriter::open(path_, options_, &err, &transient);
  if (writer_) {
    error_.clear();
    permanent_ = false;
    health_file_.reset();
    return true;
  }
  ++open_failures_;
  error_ = err;
  permanent_ = !transient;
  return false;
}

void RetryingStore::put_job(const obs::JobInfo& job) {
  if (writer_) writer_->put_job(job);
}
void RetryingStore::put_ranks(const std::vector<obs::RankInfo>& ranks) {
  if (writer_) writer_->put_ranks(ranks);
}
void RetryingStore::put_comms(const std::vector<obs::CommInfo>& comms) {
  if (writer_) writer_->put_comms(comms);
}
void RetryingStore::put_ops(const std::vector<obs::OpSummary>& ops, const std::vector<obs::OpRankTiming>& timings) {
  if (writer_) {
    writer_->put_ops(ops, timings);
  } else {
    ops_in_batch_ += ops.size();
  }
}
void RetryingStore::put_p2p(const std::vector<obs::P2pPairInfo>& pairs) {
  if (writer_) writer_->put_p2p(pairs);
}
void RetryingStore::put_gemm(const std::vector<obs::GemmCaptureInfo>& capture,
                             const std::vector<obs::GemmShapeInfo>& shapes) {
  if (writer_) writer_->put_gemm(capture, shapes);
}
void RetryingStore::upsert_finding(obs::Finding* f) {
  if (writer_) {
    writer_->upsert_finding(f);
  } else {
    ++findings_in_batch_;
  }
}
void RetryingStore::put_replay_cycle(obs::ReplayCycleRecord* c) {
  if (writer_) writer_->put_replay_cycle(c);
}

bool RetryingStore::flush() {
  if (writer_) return writer_->flush();
  const int64_t now = shm::wall_ns();
  health_.failed_batches++;
  health_.unstored_findings = findings_in_batch_;
  health_.ops_unstored += ops_in_batch_;
  findings_in_batch_ = ops_in_batch_ = 0;
  if (!permanent_ && try_open()) {
    writer_->carry(health_);
    auto line = "scout store: the store " + path_ + " could be opened after " + std::to_string(open_failures_) +
                " attempts; the findings kept in memory are stored from the next pass";
    if (options_.on_error) {
      options_.on_error(line);
    } else {
      std::fprintf(stderr, "%s\n", line.c_str());
    }
    return false;  // this batch's calls went nowhere: the caller puts them again
  }
  health_.last_error = error_;
  health_.updated_ns = now;
  if (health_file_) health_file_->write(health_);
  constexpr int64_t kSayEveryNs = 60'000'000'000;
  if (now - said_ns_ >= kSayEveryNs) {
    const std::string line = "scout store: still cannot open the store (" + std::to_string(open_failures_) +
                             " attempts): " + error_ + "; " + std::to_string(health_.unstored_findings) +
                             " findings kept in memory";
    if (said_ns_ != 0) {
      if (options_.on_error) {
        options_.on_error(line);
      } else {
        std::fprintf(stderr, "%s\n", line.c_str());
      }
    }
    said_ns_ = now;
  }
  return false;
}

obs::StoreHealth RetryingStore::health() const { return writer_ ? writer_->health() : health_; }

uint64_t RetryingStore::errors() const { return (writer_ ? writer_->stats().errors : 0) + open_failures_; }

}  // namespace scout::store

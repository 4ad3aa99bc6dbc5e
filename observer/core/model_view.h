// The node-local core as the observer network sees it: net::LocalView
// (observer/net/local_view.h) over the observer's Model. Streams are the collectives of one
// function on a communicator that has ranks on other nodes (NCCL's nNodes > 1, or comm ranks no
// segment on this node names); per-rank detail comes from the records of operations the Model
// still holds (an operation of such a communicator stays until the settle timeout after it was
// first seen).
//
// Thread-safe: the network agent calls it from its own thread; every call holds `mu`, the mutex
// the observer holds for the duration of a pass (Observer::mutex()).
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "observer/core/model.h"
#include "observer/net/local_view.h"
#include "plugin/shm/segment.h"

namespace scout::obs {

class ModelView : public net::LocalView {
 public:
  ModelView(const Model& model, std::mutex& mu) : model_(model), mu_(mu) {}
  std::vector<net::StreamView> streams() override;
  bool op(uint64_t comm_hash, uint8_t func, uint64_t seq, std::vector<net::RankOpView>* out) override;
  net::RankIdentity identity(int global_rank) override;

  // The metadata hash of one rank's record (net::RankOpView::meta): XXH64 of func, datatype,
  // count and root as metadata_check compares them (the API's values when the record has them).
  // Equal on every node for equal calls.
  static uint64_t meta_hash(const shm::RecordSnapshot& r);
  // True when `c` has ranks on other nodes.
  static bool spans_nodes(const Comm& c);

 private:
  const Model& model_;
  std::mutex& mu_;
};

}  // namespace scout::obs

#include "observer/export/snapshot.h"

#include <algorithm>
#include <limits>

namespace scout::exporter {

Snapshot load_snapshot(store::StoreReader& reader, bool with_ops, bool with_history) {
  Snapshot s;
  s.store_path = reader.path();
  s.meta = reader.meta();
  s.job = reader.job();
  s.ranks = reader.ranks();
  s.comms = reader.comms();
  s.findings = reader.findings();
  if (with_ops) {
    s.ops = reader.ops();
    s.timings = reader.timings();
  }
  if (with_history) {
    auto ck = ckpt::CkptStore::open_reader(reader.path());
    s.checkpoints = ck->checkpoints();
    s.check_cycles = ck->cycles();
    s.certificates = ck->certificates();
    s.replay_cycles = reader.replay_cycles();
    s.gemm_capture = reader.gemm_capture();
    s.gemm_shapes = reader.gemm_shapes();
  }
  return s;
}

int64_t Snapshot::as_of_ns() const {
  if (job && job->updated_ns) return job->updated_ns;
  int64_t t = 0;
  for (const auto& r : ranks) t = std::max(t, r.last_event_ns);
  for (const auto& c : comms) t = std::max(t, c.last_progress_ns);
  for (const auto& f : findings) t = std::max(t, f.last_seen_ns);
  for (const auto& o : ops) t = std::max(t, o.op.end_ns);
  return t;
}

int64_t Snapshot::origin_ns() const {
  if (job && job->started_ns) return job->started_ns;
  int64_t t = std::numeric_limits<int64_t>::max();
  auto take = [&](int64_t v) {
    if (v > 0) t = std::min(t, v);
  };
  for (const auto& r : ranks) take(r.first_seen_ns);
  for (const auto& f : findings) take(f.first_seen_ns);
  for (const auto& o : ops) take(o.op.first_arrival_ns);
  for (const auto& tr : timings) take(tr.t.api_ns ? tr.t.api_ns : tr.t.start_ns);
  return t == std::numeric_limits<int64_t>::max() ? 0 : t;
}

}  // namespace scout::exporter

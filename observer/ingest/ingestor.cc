#include "observer/ingest/ingestor.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "observer/ingest/sigbus_guard.h"

namespace scout::obs {

namespace {
constexpr int kMaxRanks = 1 << 18;  // a ring claiming more ranks than this is rejected (memory bound)
}

Ingestor::Ingestor(IngestOptions opt) : opt_(std::move(opt)) {
  if (!opt_.liveness) opt_.liveness = owner_running;
}

Ingestor::~Ingestor() = default;

void Ingestor::log(const std::string& line) const {
  if (opt_.log) opt_.log(line);
}

void Ingestor::attach_new() {
  for (const std::string& path : shm::list_segments(opt_.shm_dir, opt_.job, opt_.host)) {
    if (segs_.count(path) || dropped_.count(path)) continue;
    std::string err;
    auto rd = shm::SegmentReader::open(path, &err);
    if (!rd) {
      auto it = rejected_.find(path);
      if (it == rejected_.end() || it->second != err) log("segment rejected: " + err);
      rejected_[path] = err;  // retried next pass: it may still be being created
      continue;
    }
    rejected_.erase(path);
    auto s = std::make_unique<Segment>();
    s->path = path;
    s->reader = std::move(rd);
    segs_.emplace(path, std::move(s));
    stats_.segments_attached++;
  }
  stats_.segments_rejected = rejected_.size();
}

Ingestor::ReadResult Ingestor::read_segment(Segment& s, Model& model, int64_t now_ns) {
  SigbusGuard guard;
  if (SIGBUS_GUARD_ENTER(guard)) return ReadResult::kFault;  // the file shrank under the mapping

  const shm::SegmentReader& rd = *s.reader;
  shm::SegmentInfo info = rd.info();
  if (s.proc < 0) {
    if (shm::sanitize_component(info.job) != shm::sanitize_component(opt_.job)) {
      guard.leave();
      log("segment " + s.path + " belongs to job '" + info.job + "', not '" + opt_.job + "': ignored");
      return ReadResult::kForeign;
    }
    Proc p;
    p.global_rank = info.global_rank;
    p.local_rank = info.local_rank;
    p.host = info.host;
    p.pid = info.owner_pid;
    p.gpu = info.gpu;
    p.cuda_dev = info.cuda_dev;
    p.node_rank = opt_.node_rank;
    p.segment = s.path;
    s.proc = model.upsert_proc(p, now_ns);
  }
  // Liveness before reading: once the owner is gone, this pass reads everything it wrote.
  if (!s.owner_gone && !opt_.liveness(info.owner_pid, info.owner_start_ticks)) {
    s.owner_gone = true;
    s.gone_ns = now_ns;
  }
  s.closed = info.closed_ns != 0;
  s.last_event_ns = info.last_event_ns;
  Proc& proc = model.proc(s.proc);
  proc.last_event_ns = info.last_event_ns;
  proc.gone_ns = s.gone_ns;
  proc.state = !s.owner_gone ? ProcState::kRunning : s.closed ? ProcState::kExited : ProcState::kDead;

  uint32_t n = rd.n_rings();
  if (s.rings.size() < n) s.rings.resize(n);
  for (uint32_t r = 0; r < n; ++r) {
    shm::CommSnapshot cs;
    if (!rd.comm(r, &cs)) continue;  // initialising, or impossible rank values
    Ring& ring = s.rings[r];
    if (cs.nranks <= 0 || cs.nranks > kMaxRanks) {
      if (!ring.known) stats_.rings_rejected++;
      ring.known = false;
      continue;
    }
    CommKey key{cs.comm_hash, cs.nranks};
    if (ring.known && (ring.generation != cs.generation || ring.key != key || ring.rank != cs.rank)) {
      ring.cursor.reset();
    }
    ring.known = true;
    ring.generation = cs.generation;
    ring.key = key;
    ring.rank = cs.rank;
    ring.head = cs.head;
    Comm& c = model.upsert_comm(key, cs.name, cs.nnodes);
    model.set_member(c, cs.rank, s.proc, cs.init_ns, cs.state == shm::kCommFinalized);
    int rank = cs.rank;
    ring.cursor.poll(
        rd, r, cs.head, info.ring_capacity, s.owner_gone,
        [&](const shm::RecordSnapshot& rec) { model.apply(c, rank, rec, now_ns); },
        [&](uint64_t idx) { model.lost(c, rank, idx); });
  }
  guard.leave();
  return ReadResult::kOk;
}

void Ingestor::pass(Model& model, int64_t now_ns) {
  attach_new();
  for (auto it = segs_.begin(); it != segs_.end();) {
    Segment& s = *it->second;
    ReadResult rr = read_segment(s, model, now_ns);
    if (rr != ReadResult::kOk) {
      if (rr == ReadResult::kFault) {
        stats_.segments_faulted++;
        log("segment " + s.path + " dropped: the file shrank while mapped (SIGBUS caught)");
      }
      for (const Ring& r : s.rings) stats_.records += r.cursor.counters();
      dropped_.insert(s.path);
      it = segs_.erase(it);
      continue;
    }
    ++it;
  }
}

std::vector<Ingestor::SegmentView> Ingestor::segments() const {
  std::vector<SegmentView> out;
  for (const auto& [path, s] : segs_) {
    SegmentView v;
    v.path = path;
    v.proc = s->proc;
    v.owner_gone = s->owner_gone;
    v.closed = s->closed;
    v.last_event_ns = s->last_event_ns;
    v.gone_ns = s->gone_ns;
    v.drained = true;
    for (const Ring& r : s->rings) {
      if (r.known && !r.cursor.drained(r.head)) v.drained = false;
    }
    out.push_back(v);
  }
  return out;
}

IngestStats Ingestor::stats() const {
  IngestStats s = stats_;
  for (const auto& [path, seg] : segs_) {
    for (const Ring& r : seg->rings) s.records += r.cursor.counters();
  }
  return s;
}

bool Ingestor::reclaim(const std::string& path) {
  auto it = segs_.find(path);
  if (it == segs_.end()) return false;
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    log("cannot reclaim " + path + ": " + std::strerror(errno));
    return false;
  }
  for (const Ring& r : it->second->rings) stats_.records += r.cursor.counters();
  segs_.erase(it);
  stats_.segments_reclaimed++;
  return true;
}

}  // namespace scout::obs

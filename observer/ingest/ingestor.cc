#include "observer/ingest/ingestor.h"

#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>

#include <cerrno>
#include <cstring>

#include "common/paths.h"
#include "common/utf8.h"
#include "observer/ingest/sigbus_guard.h"
#include "observer/model/limits.h"

namespace scout::obs {

Ingestor::Ingestor(IngestOptions opt) : opt_(std::move(opt)) {
  if (!opt_.liveness) opt_.liveness = owner_running;
}

Ingestor::~Ingestor() = default;

void Ingestor::log(const std::string& line) const {
  if (opt_.log) opt_.log(line);
}

void Ingestor::attach_new() {
  for (const std::string& path : shm::list_segments(opt_.shm_dir, opt_.job, opt_.host)) {
    if (segs_.count(path)) continue;
    struct stat st;
    if (::stat(path.c_str(), &st) != 0 || dropped_.count({path, uint64_t(st.st_ino)})) continue;
    std::string err;
    auto rd = shm::SegmentReader::open(path, &err);
    if (!rd) {
      auto it = rejected_.find(path);
      if (it == rejected_.end() || it->second != err) log("segment rejected: " + err);
      rejected_[path] = err;  // retried next pass: it may still be being created
      last_rejection_ = err;
      continue;
    }
    rejected_.erase(path);
    auto s = std::make_unique<Segment>();
    s->path = path;
    s->reader = std::move(rd);
    shm::SegmentInfo info = s->reader->info();
    s->bytes = s->reader->bytes();
    uint32_t version = 0;
    uint64_t tbytes = 0;
    const void* t = s->reader->table(shm::kTableGemmShapes, &version, &tbytes);
    if (t != nullptr && version == shm::kGemmTableVersion && tbytes >= shm::kGemmTableHeaderBytes) {
      s->gemm = static_cast<const shm::GemmTableHeader*>(t);
      s->gemm_capacity =
          uint32_t(std::min<uint64_t>((tbytes - shm::kGemmTableHeaderBytes) / shm::kGemmEntryBytes, 1u << 24));
      s->gemm_scratch.reserve(s->gemm_capacity);
    }
    s->links = shm::link_table(*s->reader, &s->links_capacity);
    if (s->links != nullptr) {
      s->link_scratch.reserve(s->links_capacity);
      s->link_info.delegate.reserve(sizeof(shm::LinkTableHeader::delegate));
    }
    s->progress = shm::progress_table(*s->reader, &s->progress_capacity);
    if (s->progress != nullptr) s->progress_scratch.reserve(s->progress_capacity);
    s->inode = uint64_t(st.st_ino);
    segs_.emplace(path, std::move(s));
    stats_.segments_attached++;
  }
  stats_.segments_rejected = rejected_.size();
}

Ingestor::ReadResult Ingestor::read_segment(Segment& s, Model& model, int64_t now_ns) {
  // A file that shrank would raise SIGBUS when read: look first. (A file that was unlinked keeps
  // its pages while mapped and is read to the end.)
  struct stat st;
  if (::stat(s.path.c_str(), &st) == 0 && uint64_t(st.st_ino) == s.inode && uint64_t(st.st_size) < s.bytes) {
    return ReadResult::kShrunk;
  }
  // What the record callbacks need, behind one pointer (no allocation inside the guard).
  struct Ctx {
    Model* model;
    Comm* comm = nullptr;
    int rank = -1;
    int64_t now_ns;
  } ctx{&model, nullptr, -1, now_ns};
  const RingCursor::OnRecord on_record = [p = &ctx](const shm::RecordSnapshot& rec) {
    p->model->apply(*p->comm, p->rank, rec, p->now_ns);
  };
  const RingCursor::OnLost on_lost = [p = &ctx](uint64_t idx) { p->model->lost(*p->comm, p->rank, idx); };

  SigbusGuard guard;
  if (SIGBUS_GUARD_ENTER(guard)) return ReadResult::kFault;  // shrank between the check and the read

  const shm::SegmentReader& rd = *s.reader;
  s.info = rd.info();
  const shm::SegmentInfo& info = s.info;
  if (s.proc < 0) {
    // The header holds the job id cut at a character boundary to fit its field.
    std::string_view job = opt_.job;
    std::string want = text_clean(job.substr(0, utf8_prefix_len(job, sizeof(shm::SegmentHeader::job) - 1)));
    if (info.job != want) {
      guard.leave();
      log("segment " + printable(s.path) + " belongs to job '" + printable(info.job) + "', not '" +
          printable(opt_.job) + "': ignored");
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
    shm::CommSnapshot& cs = s.cs;
    if (!rd.comm(r, &cs)) continue;  // initialising, or impossible rank values
    Ring& ring = s.rings[r];
    if (cs.nranks <= 0 || cs.nranks > kMaxCommRanks) {
      if (!ring.known) stats_.rings_rejected++;
      ring.known = false;
      continue;
    }
    CommKey key{cs.comm_hash, cs.nranks};
    if (!admitted_.count(key)) {
      // The communicator's rank slots are charged to the segment that first claims it, within
      // that segment's budget and the job's bound (observer/model/limits.h).
      const bool over_segment = s.rank_slots + cs.nranks > kMaxSegmentRankSlots;
      if (over_segment || rank_slots_ + cs.nranks > kMaxRankSlots) {
        if (!ring.known && !ring.refused) {
          stats_.rings_rejected++;
          if (s.rings_refused++ == 0)
            log("segment " + printable(s.path) + " ring " + std::to_string(r) + " claims a communicator of " +
                std::to_string(cs.nranks) + " ranks beyond " +
                (over_segment ? "its budget of " + std::to_string(kMaxSegmentRankSlots) + " rank slots per segment (" +
                                    std::to_string(s.rank_slots) + " used)"
                              : "the observer's bound of " + std::to_string(kMaxRankSlots) +
                                    " rank slots in all communicators") +
                ": refused (this segment's further refusals are counted, not logged)");
        }
        ring.refused = true;
        ring.known = false;
        continue;
      }
      admitted_.insert(key);
      rank_slots_ += cs.nranks;
      s.rank_slots += cs.nranks;
    }
    if (ring.known && (ring.generation != cs.generation || ring.key != key || ring.rank != cs.rank)) {
      ring.cursor.reset();
    }
    ring.known = true;
    ring.generation = cs.generation;
    ring.key = key;
    ring.rank = cs.rank;
    ring.head = cs.head;
    ctx.comm = &model.upsert_comm(key, cs.name, cs.nnodes);
    ctx.rank = cs.rank;
    model.set_member(*ctx.comm, cs.rank, s.proc, cs.init_ns, cs.state == shm::kCommFinalized);
    if (cs.rank >= 0 && cs.rank < int(ctx.comm->ranks.size())) ctx.comm->ranks[cs.rank].last_api_ns = cs.last_api_ns;
    ring.cursor.poll(rd, r, cs.head, info.ring_capacity, s.owner_gone, on_record, on_lost);
  }
  read_tables(s);
  guard.leave();
  publish_tables(s, model);
  return ReadResult::kOk;
}

void Ingestor::read_tables(Segment& s) {
  if (s.gemm != nullptr) read_gemm(s);
  if (s.links != nullptr) {
    shm::read_link_info(s.links, s.links_capacity, &s.link_info);
    s.link_scratch.clear();  // capacity reserved at attach: no allocation here
    shm::read_links(s.links, s.links_capacity, &s.link_scratch);
  }
  if (s.progress != nullptr) {
    s.progress_info = shm::read_progress_info(s.progress, s.progress_capacity);
    s.progress_scratch.clear();  // capacity reserved at attach: no allocation here
    shm::read_progress(s.progress, s.progress_capacity, &s.progress_scratch);
  }
}

void Ingestor::publish_tables(Segment& s, Model& model) {
  if (s.progress != nullptr) {
    Proc& pr = model.proc(s.proc);
    pr.has_progress = true;
    pr.progress_info = s.progress_info;
    pr.progress.assign(s.progress_scratch.begin(), s.progress_scratch.end());
  }
  if (s.links != nullptr) {
    Proc& pr = model.proc(s.proc);
    pr.has_links = true;
    pr.link_info = s.link_info;
    pr.links.assign(s.link_scratch.begin(), s.link_scratch.end());
  }
  if (s.gemm != nullptr) {
    Proc& pr = model.proc(s.proc);
    pr.has_gemm = true;
    s.gemm_info.global_rank = pr.global_rank;
    s.gemm_info.host = pr.host;
    s.gemm_info.pid = pr.pid;
    pr.gemm = s.gemm_info;
    pr.gemm_shapes.assign(s.gemm_scratch.begin(), s.gemm_scratch.end());
  }
}

void Ingestor::read_gemm(Segment& s) {
  const shm::GemmTableHeader* h = s.gemm;
  GemmCaptureInfo& g = s.gemm_info;
  g.state = h->state.load(std::memory_order_relaxed);
  g.capacity = s.gemm_capacity;
  g.windows = h->windows.load(std::memory_order_relaxed);
  g.lines = h->lines.load(std::memory_order_relaxed);
  g.captured = h->captured.load(std::memory_order_relaxed);
  g.ignored = h->ignored.load(std::memory_order_relaxed);
  g.malformed = h->malformed.load(std::memory_order_relaxed);
  g.dropped_full = h->dropped_full.load(std::memory_order_relaxed);
  g.dropped_busy = h->dropped_busy.load(std::memory_order_relaxed);
  g.window_ns = h->window_ns.load(std::memory_order_relaxed);
  uint32_t n = std::min(h->n_entries.load(std::memory_order_acquire), s.gemm_capacity);
  g.n_entries = n;
  const auto* e =
      reinterpret_cast<const shm::GemmShapeEntry*>(reinterpret_cast<const char*>(h) + shm::kGemmTableHeaderBytes);
  s.gemm_scratch.clear();  // capacity reserved at attach: no allocation here
  for (uint32_t i = 0; i < n; ++i) {
    shm::GemmKey k;
    k.m = e[i].m, k.n = e[i].n, k.k = e[i].k, k.batch = e[i].batch;
    k.a_type = e[i].a_type, k.b_type = e[i].b_type, k.c_type = e[i].c_type, k.d_type = e[i].d_type;
    k.compute = e[i].compute, k.scale_type = e[i].scale_type, k.layout = e[i].layout, k.algo = e[i].algo;
    k.tile_m = e[i].tile_m, k.tile_n = e[i].tile_n;
    s.gemm_scratch.emplace_back(k, e[i].count.load(std::memory_order_relaxed));
  }
}

void Ingestor::pass(Model& model, int64_t now_ns) {
  attach_new();
  for (auto it = segs_.begin(); it != segs_.end();) {
    Segment& s = *it->second;
    ReadResult rr;
    try {
      rr = read_segment(s, model, now_ns);
    } catch (const std::exception& e) {
      // Whatever a segment holds must not stop the observer (nor at its next start): it is
      // dropped with the reason, and not attached again while the file stays the same.
      log("segment " + printable(s.path) + " dropped: " + printable(e.what()));
      rr = ReadResult::kForeign;
    }
    if (rr != ReadResult::kOk) {
      if (rr == ReadResult::kFault || rr == ReadResult::kShrunk) {
        stats_.segments_faulted++;
        log("segment " + printable(s.path) + " dropped: the file shrank while mapped" +
            (rr == ReadResult::kFault ? " (SIGBUS caught)" : ""));
      }
      for (const Ring& r : s.rings) stats_.records += r.cursor.counters();
      dropped_.insert({s.path, s.inode});
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

std::string Ingestor::no_segment_reason() const {
  if (stats_.segments_attached > 0) return "";
  std::string dir_problem = shm::shm_dir_problem(opt_.shm_dir);
  if (!dir_problem.empty()) return dir_problem;
  if (!last_rejection_.empty()) return "no segment of job " + opt_.job + " could be read: " + last_rejection_;
  return "no segment of job " + opt_.job + " in " + opt_.shm_dir +
         " (is the plugin loaded? NCCL_PROFILER_PLUGIN, same SCOUT_JOB_ID and SCOUT_SHM_DIR)";
}

uint64_t Ingestor::request_trace(int proc, const shm::TraceRequest& req, std::string* error) const {
  for (const auto& [path, s] : segs_) {
    if (s->proc != proc || !s->reader) continue;
    if (s->owner_gone) {
      if (error) *error = path + ": its process is gone: no trace request";
      return 0;
    }
    return shm::request_trace(*s->reader, req, error);
  }
  if (error) *error = "no segment of process " + std::to_string(proc) + ": no trace request";
  return 0;
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

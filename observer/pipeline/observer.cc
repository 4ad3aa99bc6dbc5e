#include "observer/pipeline/observer.h"

#include <algorithm>
#include <iterator>

#include "scout/version.h"

namespace scout::obs {

namespace {

// The sink the after-detect step writes to: everything goes to the observer's sink, but replay
// cycle records are kept in `held` and put by write() until a batch that stores them commits.
class HoldReplay : public Sink {
 public:
  HoldReplay(Sink& s, std::vector<ReplayCycleRecord>* held) : s_(s), held_(held) {}
  void put_job(const JobInfo& j) override { s_.put_job(j); }
  void put_ranks(const std::vector<RankInfo>& r) override { s_.put_ranks(r); }
  void put_comms(const std::vector<CommInfo>& c) override { s_.put_comms(c); }
  void put_ops(const std::vector<OpSummary>& o, const std::vector<OpRankTiming>& t) override { s_.put_ops(o, t); }
  void put_p2p(const std::vector<P2pPairInfo>& p) override { s_.put_p2p(p); }
  void put_gemm(const std::vector<GemmCaptureInfo>& c, const std::vector<GemmShapeInfo>& g) override {
    s_.put_gemm(c, g);
  }
  void upsert_finding(Finding* f) override { s_.upsert_finding(f); }
  void put_replay_cycle(ReplayCycleRecord* c) override { held_->push_back(*c); }
  bool flush() override { return true; }  // the observer's write() flushes

 private:
  Sink& s_;
  std::vector<ReplayCycleRecord>* held_;
};

IngestOptions ingest_options(const ObserverOptions& o) {
  IngestOptions i;
  i.shm_dir = o.shm_dir;
  i.job = o.job;
  i.host = o.host;
  i.node_rank = o.node_rank;
  i.liveness = o.liveness;
  i.log = o.log;
  return i;
}
}  // namespace

Observer::Observer(ObserverOptions opt, Sink* sink)
    : opt_(std::move(opt)),
      sink_(sink),
      ingest_(ingest_options(opt_)),
      judge_(opt_.judge),
      equiv_(opt_.equiv),
      straggler_(opt_.straggler),
      slowlink_(opt_.slowlink),
      netlink_(opt_.netlink),
      hang_(opt_.hang) {
  hang_.set_sequence(&judge_.sequence());
}

void Observer::pass(int64_t now_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  if (started_ns_ == 0) started_ns_ = now_ns;
  passes_++;
  ingest_.pass(model_, now_ns);
  if (cross_node_) {
    CrossNodeIo io{model_, board_, straggler_, now_ns, hung_, net_};
    cross_node_(io);
  }
  JudgeOutput out;
  judge_.pass(model_, now_ns, board_, &out);
  for (const JudgedOp& j : out.judged) {
    nan_.observe(model_, j, now_ns, board_);
    if (j.displaced) continue;  // records paired by key are different calls: no times, no votes
    equiv_.observe(model_, j, now_ns, board_);
    straggler_.observe(model_, j);
    slowlink_.observe(model_, j);
  }
  hang_.pass(model_, now_ns, board_);
  request_traces(now_ns);
  straggler_.evaluate(model_, now_ns, board_);
  slowlink_.evaluate(model_, now_ns, board_);
  netlink_.pass(model_, now_ns, board_, slowlink_.held_hosts());
  if (after_detect_) {
    // Replay cycle records are held by the observer until a batch stores them (write()).
    HoldReplay hold(*sink_, &unstored_replay_);
    AfterDetectIo io{model_, out.judged, board_, hold, now_ns};
    after_detect_(io);
  }
  write(now_ns, out);
  reclaim(now_ns);
  if (after_pass_) after_pass_(model_, out, board_, now_ns);
}

void Observer::request_traces(int64_t now_ns) {
  for (const CommKey& k : hang_.trace_wanted()) {
    auto it = model_.comms().find(k);
    if (it == model_.comms().end()) continue;
    const shm::TraceRequest req{k.hash, k.nranks, now_ns + opt_.hang.timeout_ns};
    int asked = 0;
    for (int r : it->second.known_ranks) {
      std::string err;
      const int p = it->second.ranks[r].proc;
      if (p >= 0 && ingest_.request_trace(p, req, &err) != 0) {
        ++asked;
      } else if (!err.empty() && opt_.log && trace_errors_.insert(err).second) {
        opt_.log("trace request: " + err);
      }
    }
    hang_.note_trace(k, now_ns);
    if (opt_.log && asked > 0)
      opt_.log("stuck collective in " + (it->second.name.empty() ? std::string("a communicator") : it->second.name) +
               ": asked " + std::to_string(asked) + " processes to trace its progress");
  }
}

void Observer::write(int64_t now_ns, JudgeOutput& out) {
  JobInfo job;
  job.job = opt_.job;
  job.nodes = opt_.nodes;
  job.node_rank = opt_.node_rank;
  job.started_ns = started_ns_;
  job.updated_ns = now_ns;
  job.observer_version = kVersion;
  IngestStats is = ingest_.stats();
  job.records_read = is.records.read;
  job.records_lost = is.records.gaps + is.records.before_attach + is.records.lost_inflight;
  job.records_invalid = is.records.invalid;
  job.segments_refused = is.segments_rejected;
  job.rings_refused = is.rings_rejected;
  job.net = net_;
  if (now_ns - started_ns_ >= opt_.no_segment_grace_ns) job.warning = ingest_.no_segment_reason();
  if (job.warning != warned_) {
    if (!job.warning.empty() && opt_.log) opt_.log("warning: " + job.warning);
    warned_ = job.warning;
  }
  if (job.records_lost > lost_logged_ && opt_.log) {
    opt_.log("warning: " + std::to_string(job.records_lost - lost_logged_) +
             " records lost (ring overwritten before they were read): a finding may be missing; "
             "raise SCOUT_RING_SLOTS");
  }
  lost_logged_ = job.records_lost;
  sink_->put_job(job);

  // Ranks and communicators: only the rows that changed since the last stored batch (the Sink
  // keeps the others), a communicator's member list only when its membership changed; every row
  // again after a batch the Sink could not store.
  std::vector<RankInfo> ranks;
  if (ranks_written_.size() < model_.procs().size()) ranks_written_.resize(model_.procs().size());
  for (const Proc& p : model_.procs()) {
    RankInfo r;
    r.global_rank = p.global_rank;
    r.local_rank = p.local_rank;
    r.host = p.host;
    r.pid = p.pid;
    r.gpu = p.gpu;
    r.cuda_dev = p.cuda_dev;
    r.node_rank = p.node_rank;
    r.segment = p.segment;
    r.state = to_string(p.state);
    r.first_seen_ns = p.first_seen_ns;
    r.last_event_ns = p.last_event_ns;
    std::optional<RankInfo>& w = ranks_written_[p.id];
    if (w && *w == r) continue;
    w = r;
    ranks.push_back(std::move(r));
  }
  if (!ranks.empty()) sink_->put_ranks(ranks);

  std::vector<CommInfo> comms;
  hung_ = false;
  for (const auto& [k, c] : model_.comms()) {
    std::string state = hang_.comm_state(model_, c, now_ns);
    hung_ |= state == "hung";
    auto [it, fresh] = comms_written_.try_emplace(k);
    CommRow& w = it->second;
    const bool members = fresh || w.members_version != c.members_version || w.name != c.name || w.nnodes != c.nnodes;
    const bool progress = members || w.ops_complete != c.ops_complete || w.last_progress_ns != c.last_progress_ns ||
                          w.state != state || !std::equal(std::begin(c.last_seq), std::end(c.last_seq), w.last_seq);
    if (!progress) continue;
    CommInfo ci;
    ci.comm_hash = k.hash;
    ci.name = c.name;
    ci.nranks = k.nranks;
    ci.nnodes = c.nnodes;
    ci.members = members;
    if (members) {
      ci.global_ranks.assign(c.ranks.size(), -1);
      for (int r : c.known_ranks) ci.global_ranks[r] = model_.proc(c.ranks[r].proc).global_rank;
    }
    ci.ops_complete = c.ops_complete;
    ci.p2p_complete = c.p2p_complete;
    for (int f = 0; f < shm::kNumNumberedFuncs; ++f) ci.last_seq[f] = c.last_seq[f];
    ci.last_progress_ns = c.last_progress_ns;
    ci.state = state;
    w.members_version = c.members_version;
    w.name = c.name;
    w.nnodes = c.nnodes;
    w.ops_complete = c.ops_complete;
    std::copy(std::begin(c.last_seq), std::end(c.last_seq), w.last_seq);
    w.last_progress_ns = c.last_progress_ns;
    w.state = std::move(state);
    comms.push_back(std::move(ci));
  }
  if (!comms.empty()) sink_->put_comms(comms);
  std::vector<P2pPairInfo> pairs;
  for (auto& [k, c] : model_.comms()) {
    for (const auto& key : c.p2p_dirty) pairs.push_back(c.p2p.at(key));
    c.p2p_dirty.clear();
  }
  if (!pairs.empty()) sink_->put_p2p(pairs);
  write_gemm();
  if (!out.summaries.empty() || !out.timings.empty()) sink_->put_ops(out.summaries, out.timings);
  const std::vector<size_t> flushed = board_.flush_to(*sink_);
  // Replay cycles and findings of a batch the sink could not store are put again at the next
  // pass (a full disk or a held lock must not lose them for good); operation summaries are not
  // (the store counts them, StoreHealth::ops_unstored).
  for (ReplayCycleRecord& c : unstored_replay_) sink_->put_replay_cycle(&c);
  if (sink_->flush()) {
    unstored_replay_.clear();
  } else {
    board_.unflushed(flushed);
    ranks_written_.clear();
    comms_written_.clear();
    gemm_written_.clear();
    for (auto& [k, c] : model_.comms())  // rewritten whole at the next pass
      for (const auto& [key, pair] : c.p2p) c.p2p_dirty.insert(key);
  }
}

void Observer::write_gemm() {
  std::vector<GemmCaptureInfo> capture;
  std::vector<GemmShapeInfo> shapes;
  for (const Proc& p : model_.procs()) {
    if (!p.has_gemm) continue;
    // Rewrite a process's rows only when its table changed (new classes or counts).
    uint64_t stamp = p.gemm.captured + p.gemm.lines + p.gemm.windows + p.gemm.state;
    auto [it, fresh] = gemm_written_.try_emplace(p.id, stamp);
    if (!fresh && it->second == stamp) continue;
    it->second = stamp;
    capture.push_back(p.gemm);
    for (const auto& [key, count] : p.gemm_shapes) {
      GemmShapeInfo s;
      s.global_rank = p.global_rank;
      s.host = p.host;
      s.pid = p.pid;
      s.key = key;
      s.count = count;
      shapes.push_back(s);
    }
  }
  if (!capture.empty()) sink_->put_gemm(capture, shapes);
}

void Observer::reclaim(int64_t now_ns) {
  if (opt_.reclaim_after_ns < 0) return;
  for (const Ingestor::SegmentView& v : ingest_.segments()) {
    if (!v.owner_gone || !v.drained || v.proc < 0) continue;
    if (now_ns - v.last_event_ns < opt_.reclaim_after_ns) continue;
    if (hang_.holds_evidence(v.proc)) continue;  // a crash decision about it is still pending
    bool live = false;
    for (const auto& [k, c] : model_.comms()) {
      for (int r = 0; r < int(c.ranks.size()) && !live; ++r) {
        if (c.ranks[r].proc != v.proc) continue;
        for (const auto& [id, op] : c.ops) {
          if (op.slot(op.index_of(r))) live = true;
        }
      }
    }
    if (live) continue;  // some of its records are not judged yet
    if (ingest_.reclaim(v.path) && opt_.log) opt_.log("reclaimed " + v.path);
  }
}

std::string Observer::stats_line() const {
  IngestStats s = ingest_.stats();
  const JudgeStats& j = judge_.stats();
  const size_t open = board_.open_count();
  return "passes " + std::to_string(passes_) + ", segments " + std::to_string(ingest_.attached()) + " attached / " +
         std::to_string(s.segments_rejected) + " rejected / " + std::to_string(s.segments_faulted) + " faulted / " +
         std::to_string(s.segments_reclaimed) + " reclaimed, records " + std::to_string(s.records.read) + " read / " +
         std::to_string(s.records.gaps + s.records.before_attach) + " overwritten unread / " +
         std::to_string(s.records.lost_inflight) + " lost in flight / " + std::to_string(s.records.invalid) +
         " invalid / " + std::to_string(s.records.torn) + " torn reads, ops " + std::to_string(j.judged) + " judged (" +
         std::to_string(j.partial) + " partial), findings " + std::to_string(board_.size()) + " (" +
         std::to_string(open) + " open)";
}

}  // namespace scout::obs

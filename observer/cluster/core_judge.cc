#include "observer/cluster/core_judge.h"

#include <algorithm>
#include <map>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "observer/cluster/job_waits.h"
#include "observer/detect/finding_util.h"
#include "observer/detect/fingerprint_check.h"
#include "observer/detect/metadata_check.h"
#include "observer/model/memory_sink.h"

namespace scout::obs {

namespace {
HangConfig deferring(HangConfig c) {
  c.defer_cross_node = true;
  return c;
}
}  // namespace

CoreJudge::CoreJudge(HangConfig hang) : timeout_ns_(hang.timeout_ns), hang_(deferring(hang)) {}

std::vector<Finding> CoreJudge::judge_digest(const net::DigestDrill& d, const net::Identities& ids, int64_t now_ns) {
  Model m;
  Comm& c = m.upsert_comm(CommKey{d.stream.comm_hash, d.stream.nranks}, d.stream.comm_name, 0);
  std::vector<Finding> out;
  for (const auto& [seq, votes] : d.votes) {
    Op op;
    op.id = OpId{OpClass::kColl, d.stream.func, seq, -1, -1};
    op.n = d.stream.nranks;
    for (const net::RankVote& v : votes) {
      if (v.comm_rank < 0 || v.comm_rank >= op.n) continue;
      if (c.ranks[v.comm_rank].proc < 0) {
        Proc p;
        p.global_rank = v.global_rank;
        p.node_rank = v.node;
        if (auto it = ids.find(v.global_rank); it != ids.end()) {
          p.host = it->second.host;
          p.pid = it->second.pid;
          p.gpu = it->second.gpu;
        } else {
          p.host = v.node >= 0 ? "node-rank " + std::to_string(v.node) : "";  // a large group carries no node
          p.pid = int(-int64_t(v.global_rank) - 1);  // unknown: distinct per rank (no overflow at INT_MIN)
        }
        m.set_member(c, v.comm_rank, m.upsert_proc(p, now_ns), 0, false);
      }
      OpSlot& s = op.add(v.comm_rank);
      s.rec = v.rec;
      s.final = true;
    }
    const MetaOutcome meta = check_metadata(op);
    if (auto f = desync_finding(m, c, op, meta, now_ns)) out.push_back(std::move(*f));
    if (auto fp = check_recv_fingerprints(op, true)) {
      if (auto f = sdc_finding(m, c, op, *fp, now_ns)) out.push_back(std::move(*f));
    }
  }
  return out;
}

std::vector<Finding> CoreJudge::judge_waits(const net::WaitSummary& job, int64_t now_ns) {
  // Per communicator: the stall clock of the node with the largest threshold (the summary kept
  // it), and whether it is past that threshold (it changes the outcome, so it is part of the
  // signature).
  std::map<CommKey, StallClock> given;
  std::vector<uint64_t> past;  // the communicators past their threshold
  for (const net::CommSummary& cs : job.comms) {
    const net::CommWaitView& c = cs.comm;
    if (c.stall_threshold_ns <= 0) continue;
    const CommKey k{c.comm_hash, c.nranks};
    StallClock clock = StallClock::given(c.stall_threshold_ns, c.stall_gaps, c.stall_p99_ns);
    if (c.last_progress_ns < now_ns - clock.threshold_ns(timeout_ns_))  // another observer's time: no overflow
      past.insert(past.end(), {k.hash, uint64_t(k.nranks)});
    given.emplace(k, std::move(clock));
  }
  bool dead = false;
  uint64_t sig = waits_signature(job, now_ns, timeout_ns_, &dead);
  sig = XXH64(past.data(), past.size() * sizeof(uint64_t), sig);
  judged_ = true;
  if (open_ && !dead && sig == signature_) {
    for (const Finding* f : board_.all()) {
      if (!f->open) continue;
      Finding again = *f;
      again.last_seen_ns = now_ns;
      // The same analysis, later: the stall has lasted longer (its last progress is the same).
      if (again.evidence.is_object() && again.evidence.contains("last_progress_ns") &&
          again.evidence.contains("stalled_ms")) {
        again.evidence["stalled_ms"] = to_ms(now_ns - again.evidence["last_progress_ns"].get<int64_t>());
      }
      board_.report(std::move(again));
    }
    return changed();
  }
  signature_ = sig;
  job_.update(job, now_ns);
  hang_.set_stall_clocks(std::move(given));
  hang_.pass(job_.model(), now_ns, board_);
  due_ns_ = hang_.stall_pending(job_.model());
  hang_due_ns_ = hang_.hang_pending(job_.model());
  return changed();
}

std::vector<Finding> CoreJudge::all_clear(int64_t now_ns) {
  if (!open_ && !judged_) return {};
  signature_ = 0;
  judged_ = false;
  due_ns_ = 0;
  hang_due_ns_ = 0;
  job_.clear();
  hang_.pass(job_.model(), now_ns, board_);
  return changed();
}

std::vector<Finding> CoreJudge::changed() {
  MemorySink sink;
  board_.flush_to(sink);
  open_ = board_.open_count() > 0;
  return sink.findings();
}

}  // namespace scout::obs

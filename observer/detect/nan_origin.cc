#include "observer/detect/nan_origin.h"

#include <algorithm>

#include "observer/detect/finding_util.h"
#include "scout/shm_format.h"

namespace scout::obs {

void NanOrigin::observe(const Model& m, const JudgedOp& op, int64_t now_ns, FindingBoard& board) {
  std::vector<JudgedOp::Part> carriers;
  bool fingerprinted = false;
  int64_t t = 0;
  for (const JudgedOp::Part& p : op.parts) {
    if (!p.present || p.fp_send_status != shm::kFpDone) continue;
    fingerprinted = true;
    if (p.send_nan + p.send_inf == 0) continue;
    carriers.push_back(p);
    int64_t pt = p.api_ns > 0 ? p.api_ns : p.enqueue_ns;
    if (pt > 0 && (t == 0 || pt < t)) t = pt;
  }
  if (!fingerprinted) return;
  if (carriers.empty()) {
    if (open_ && ++clean_run_ >= kCleanOpsToClose) {
      board.close(key_, now_ns);
      open_ = false;
    }
    return;
  }
  clean_run_ = 0;
  ops_with_nonfinite_++;
  for (const auto& p : carriers) {
    int g = p.proc >= 0 ? m.proc(p.proc).global_rank : -1;
    if (std::find(ranks_seen_.begin(), ranks_seen_.end(), g) == ranks_seen_.end()) ranks_seen_.push_back(g);
  }
  bool earlier = !open_ || t < origin_.time_ns || (t == origin_.time_ns && op.id.seq < origin_.seq);
  if (!open_) {
    open_ = true;
    key_ = "nan:" + std::to_string(now_ns);
    ops_with_nonfinite_ = 1;
    ranks_seen_.clear();
    for (const auto& p : carriers) ranks_seen_.push_back(p.proc >= 0 ? m.proc(p.proc).global_rank : -1);
  }
  if (earlier) {
    origin_.time_ns = t;
    origin_.seq = op.id.seq;
    origin_.comm = op.comm;
    origin_.id = op.id;
    origin_.carriers = carriers;
  }
  report(m, now_ns, board);
}

void NanOrigin::report(const Model& m, int64_t now_ns, FindingBoard& board) {
  const Comm* c = nullptr;
  auto it = m.comms().find(origin_.comm);
  if (it != m.comms().end()) c = &it->second;
  Finding f;
  f.kind = FindingKind::kNan;
  f.verdict = Verdict::kAttributed;
  f.dedup_key = key_;
  f.key = op_key(origin_.id);
  f.first_seen_ns = origin_.time_ns > 0 ? origin_.time_ns : now_ns;
  f.last_seen_ns = now_ns;
  NanEvidence ev;
  std::string names;
  uint64_t nan = 0, inf = 0;
  for (const auto& p : origin_.carriers) {
    f.suspects.push_back(suspect_of(m, p.proc, p.comm_rank));
    names += (names.empty() ? "" : ", ") + who(m, p.proc);
    nan += p.send_nan;
    inf += p.send_inf;
    ev.origin.carriers.push_back(
        EvNanCarrier{p.proc >= 0 ? m.proc(p.proc).global_rank : -1, p.comm_rank, p.send_nan, p.send_inf});
  }
  std::string where = describe(origin_.id);
  if (c) {
    set_comm(f, *c);
    where += " of " + comm_label(*c);
    ev.origin.comm = ev_comm(*c);
  }
  ev.origin.op = ev_op(origin_.id);
  ev.origin.time_ns = origin_.time_ns;
  ev.ops_with_nonfinite = ops_with_nonfinite_;
  ev.ranks_with_nonfinite = ranks_seen_;
  f.evidence = to_json(ev);
  f.summary = names + " sent the first non-finite values: " + where + " (" + std::to_string(nan) + " NaN, " +
              std::to_string(inf) + " Inf in the send buffer)";
  board.report(f);
}

}  // namespace scout::obs

#include "observer/detect/op_judge.h"

#include <algorithm>

#include "common/names.h"
#include "observer/detect/busbw.h"
#include "observer/detect/fingerprint_check.h"
#include "observer/detect/metadata_check.h"

namespace scout::obs {

using namespace scout::shm;

namespace {
// A present slot that will not change any more, or that has waited long enough. The records of
// a process that is gone never change again.
bool settled(const OpSlot& s, bool timed_out, bool owner_gone) {
  if (s.final) return true;
  if (!timed_out) return false;
  if (owner_gone) return true;
  return s.rec.state == kStateComplete || s.rec.state == kStateApiOnly ||
         ((s.rec.flags & kFlagNoKernelCh) && s.rec.state >= kStateEnqueued);
}

JudgedOp make_judged(const Comm& c, const Op& op) {
  JudgedOp j;
  j.comm = c.key;
  j.id = op.id;
  j.n = op.n;
  j.complete = op.all_present();
  for (const OpSlot& s : op.slots) {
    JudgedOp::Part p;
    p.comm_rank = op.comm_rank(s.index);
    p.proc = p.comm_rank >= 0 && p.comm_rank < int(c.ranks.size()) ? c.ranks[p.comm_rank].proc : -1;
    p.present = !s.lost;
    if (p.present) {
      const RecordSnapshot& r = s.rec;
      j.datatype = r.datatype;
      j.bytes = r.bytes;
      j.count = r.count;
      j.algo = r.algo;
      j.proto = r.proto;
      p.api_ns = r.api_ns;
      p.enqueue_ns = r.enqueue_ns;
      if (r.state == kStateComplete) {
        p.start_ns = r.gpu_start_ns;
        p.end_ns = r.gpu_end_ns;
      }
      p.fp_send_status = r.fp_send_status;
      p.fp_recv_status = r.fp_recv_status;
      p.fp_send = r.fp_send;
      p.fp_recv = r.fp_recv;
      p.send_nan = r.send_nan;
      p.send_inf = r.send_inf;
    }
    if (!p.present || p.start_ns <= 0 || p.end_ns < p.start_ns) j.complete = false;
    j.parts.push_back(p);
  }
  return j;
}
}  // namespace

void OpJudge::finish(Model& m, Comm& c, Op& op, int64_t now_ns, FindingBoard& board, JudgeOutput* out) {
  // Displaced by an open sequence desync: its votes follow from it and are not reported.
  const bool quiet = seq_.suppresses(c, op);
  if (!op.meta_judged) {
    MetaOutcome meta = check_metadata(op);
    if (auto f = desync_finding(m, c, op, meta, now_ns); f && !quiet) board.report(*f);
    if (!quiet || meta.vote.verdict == VoteVerdict::kAgree) classes_.record(m, c, op, meta);
    op.meta_verdict =
        meta.vote.verdict == VoteVerdict::kAgree ? (meta.partial ? "partial" : "agree") : to_string(meta.vote.verdict);
    op.meta_judged = true;
  }
  std::optional<FpOutcome> fp = check_recv_fingerprints(op, true);
  if (fp) {
    if (auto f = sdc_finding(m, c, op, *fp, now_ns); f && !quiet) board.report(*f);
  }
  JudgedOp j = make_judged(c, op);
  j.displaced = quiet;
  bool partial = !op.all_present() || (fp && fp->partial) || op.meta_verdict == "partial";
  stats_.judged++;
  stats_.partial += partial;

  if (op.id.cls == OpClass::kColl) {
    OpSummary s;
    s.comm_hash = c.key.hash;
    s.comm_name = c.name;
    s.nranks = c.key.nranks;
    s.kind = "coll";
    s.func = shm::func_name(op.id.func);
    s.seq = op.id.seq;
    const RecordSnapshot* first = nullptr;
    for (const OpSlot& sl : op.slots) {
      if (!sl.lost) {
        first = &sl.rec;
        break;
      }
    }
    if (first) {
      s.datatype = shm::datatype_name(first->api_count ? first->api_datatype : first->datatype);
      s.count = first->api_count ? first->api_count : first->count;
      s.bytes = first->bytes;
      s.algo = shm::algo_name(first->algo);
      s.proto = shm::proto_name(first->proto);
      s.n_channels = first->n_channels;
    }
    s.ranks_reported = op.present();
    s.ranks_complete = op.n_complete();
    for (const JudgedOp::Part& p : j.parts) {
      if (p.start_ns <= 0) continue;
      if (s.first_arrival_ns == 0 || p.start_ns < s.first_arrival_ns) s.first_arrival_ns = p.start_ns;
      if (p.start_ns > s.last_arrival_ns) {
        s.last_arrival_ns = p.start_ns;
        s.last_rank = p.proc >= 0 ? m.proc(p.proc).global_rank : -1;
      }
      s.end_ns = std::max(s.end_ns, p.end_ns);
    }
    if (s.end_ns > 0 && s.last_arrival_ns > 0) s.duration_ns = std::max<int64_t>(0, s.end_ns - s.last_arrival_ns);
    s.busbw_gbps = j.complete ? bus_bandwidth_gbps(op.id.func, s.bytes, c.key.nranks, s.duration_ns) : 0;
    s.fp_verdict = fp ? fp->verdict : "n/a";
    s.meta_verdict = op.meta_verdict;
    out->summaries.push_back(s);
    for (size_t i = 0; i < op.slots.size(); ++i) {
      const OpSlot& sl = op.slots[i];
      if (sl.lost) continue;
      OpRankTiming t;
      t.comm_hash = c.key.hash;
      t.func = s.func;
      t.seq = s.seq;
      t.comm_rank = sl.index;
      t.global_rank = j.parts[i].proc >= 0 ? m.proc(j.parts[i].proc).global_rank : -1;
      t.api_ns = sl.rec.api_ns;
      t.start_ns = sl.rec.gpu_start_ns;
      t.end_ns = sl.rec.state == kStateComplete ? sl.rec.gpu_end_ns : 0;
      t.fp_recv = sl.rec.fp_recv_status == kFpDone ? sl.rec.fp_recv : 0;
      t.fp_status = shm::fp_status_name(sl.rec.fp_recv_status);
      out->timings.push_back(t);
    }
    if (op.n_complete() == op.n) {
      c.ops_complete++;
      c.last_seq[op.id.func] = std::max(c.last_seq[op.id.func], op.id.seq + 1);
    }
  }
  if (op.id.cls == OpClass::kP2p && j.complete && j.parts.size() == 2) add_p2p(m, c, op, j);
  out->judged.push_back(std::move(j));
}

void OpJudge::add_p2p(const Model& m, Comm& c, const Op& op, const JudgedOp& j) {
  const std::pair<int, int> key{op.id.src, op.id.dst};
  P2pPairInfo& p = c.p2p[key];
  if (p.ops == 0) {
    p.comm_hash = c.key.hash;
    p.nranks = c.key.nranks;
    p.src_rank = op.id.src;
    p.dst_rank = op.id.dst;
  }
  p.comm_name = c.name;
  auto global = [&](int proc) { return proc >= 0 ? m.proc(proc).global_rank : -1; };
  p.src_global = global(j.parts[0].proc);
  p.dst_global = global(j.parts[1].proc);
  p.ops++;
  for (const OpSlot& sl : op.slots)
    if (!sl.lost) {
      p.bytes += sl.rec.bytes;
      break;
    }
  p.last_seq = std::max(p.last_seq, op.id.seq);
  const int64_t end = j.parts[1].end_ns, start = std::max(j.parts[0].start_ns, j.parts[1].start_ns);
  p.last_end_ns = std::max(p.last_end_ns, end);
  const int64_t took = std::max<int64_t>(0, end - start);
  p.total_ns += took;
  p.max_ns = std::max(p.max_ns, took);
  c.ops_complete++;
  c.p2p_complete++;
  c.p2p_dirty.insert(key);
}

void OpJudge::pass(Model& m, int64_t now_ns, FindingBoard& board, JudgeOutput* out) {
  seq_.pass(m, now_ns, board);
  for (auto& [key, c] : m.comms()) {
    bool known = c.members_known();
    std::vector<OpId> done;
    for (auto& [id, op] : c.ops) {
      bool timed_out = now_ns - op.first_seen_ns > cfg_.settle_timeout_ns;
      if (!known && !timed_out) continue;  // nothing to decide before its members or the timeout
      // Before the timeout only final slots are settled; the owner's state matters after it.
      bool all_settled = true;
      for (const OpSlot& s : op.slots) {
        if (s.final) continue;
        if (!timed_out) {
          all_settled = false;
          break;
        }
        int r = op.comm_rank(s.index);
        int proc = r >= 0 && r < int(c.ranks.size()) ? c.ranks[r].proc : -1;
        bool gone = proc >= 0 && m.proc(proc).state != ProcState::kRunning;
        if (!settled(s, timed_out, gone)) {
          all_settled = false;
          break;
        }
      }
      if (!known) {
        if (timed_out && all_settled) {
          stats_.dropped_unknown++;
          done.push_back(id);
        }
        continue;
      }
      if (!op.meta_judged && op.all_present()) {
        const bool quiet = seq_.suppresses(c, op);
        MetaOutcome meta = check_metadata(op);
        if (auto f = desync_finding(m, c, op, meta, now_ns); f && !quiet) board.report(*f);
        if (!quiet || meta.vote.verdict == VoteVerdict::kAgree) classes_.record(m, c, op, meta);
        op.meta_verdict = meta.vote.verdict == VoteVerdict::kAgree ? "agree" : to_string(meta.vote.verdict);
        op.meta_judged = true;
      }
      bool ready = all_settled && (op.all_present() ? (timed_out || op.all_final()) : timed_out);
      if (!ready) continue;
      finish(m, c, op, now_ns, board, out);
      done.push_back(id);
    }
    for (const OpId& id : done) m.drop(c, id);
  }
  classes_.resolve(m, now_ns, board);
}

}  // namespace scout::obs

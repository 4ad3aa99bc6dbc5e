#include "observer/detect/fingerprint_check.h"

#include <algorithm>
#include <map>

#include "common/names.h"
#include "observer/detect/finding_util.h"

namespace scout::obs {

using namespace scout::shm;

bool recv_must_agree(uint8_t func) {
  return func == kFuncAllReduce || func == kFuncAllGather || func == kFuncBroadcast;
}

std::optional<FpOutcome> check_recv_fingerprints(const Op& op, bool timed_out) {
  FpOutcome out;
  if (op.id.cls != OpClass::kColl || !recv_must_agree(op.id.func)) {
    out.verdict = "n/a";
    return out;
  }
  bool waiting = false;
  // Coverage (bytes, version) of each done fingerprint; voters share the most common one.
  std::map<std::pair<uint64_t, uint32_t>, int> coverage;
  if (!op.all_present()) waiting = true;
  for (const OpSlot& s : op.slots) {
    if (s.rec.fp_recv_status == kFpPending) waiting = true;
    if (!s.lost && s.rec.fp_recv_status == kFpDone) coverage[{s.rec.fp_bytes, s.rec.fp_version}]++;
  }
  if (waiting && !timed_out) return std::nullopt;
  if (coverage.empty()) {
    out.verdict = "not-sampled";
    return out;
  }
  auto best = std::max_element(coverage.begin(), coverage.end(), [](const auto& a, const auto& b) {
                return a.second < b.second;
              })->first;
  out.fp_bytes = best.first;
  out.fp_version = best.second;
  std::vector<std::pair<int, uint64_t>> ballots;
  for (const OpSlot& s : op.slots) {
    if (!s.lost && s.rec.fp_recv_status == kFpDone && s.rec.fp_bytes == best.first && s.rec.fp_version == best.second) {
      ballots.emplace_back(s.index, s.rec.fp_recv);
    }
  }
  out.voters = int(ballots.size());
  out.partial = out.voters < op.n;
  out.vote = strict_majority(ballots, op.n);
  switch (out.vote.verdict) {
    case VoteVerdict::kAgree: out.verdict = out.partial ? "partial" : "agree"; break;
    case VoteVerdict::kAttributed: out.verdict = "attributed"; break;
    case VoteVerdict::kInconclusive: out.verdict = "inconclusive"; break;
  }
  return out;
}

std::optional<Finding> sdc_finding(const Model& m, const Comm& c, const Op& op, const FpOutcome& out, int64_t now_ns) {
  if (out.vote.verdict == VoteVerdict::kAgree || out.vote.groups.empty()) return std::nullopt;
  Finding f;
  f.kind = FindingKind::kSdc;
  f.verdict = out.vote.verdict == VoteVerdict::kAttributed ? Verdict::kAttributed : Verdict::kInconclusive;
  set_comm(f, c);
  f.key = op_key(op.id);
  f.dedup_key = "sdc:recv:" + hex64(c.key.hash) + ":" + std::to_string(c.key.nranks) + ":" +
                shm::func_name(op.id.func) + ":" + std::to_string(op.id.seq);
  int64_t done = 0;
  uint64_t bytes = 0;
  uint8_t dtype = kTypeUnknown;
  for (const OpSlot& s : op.slots) {
    done = std::max({done, s.rec.complete_ns, s.rec.gpu_end_ns});
    bytes = s.rec.bytes;
    // The user's datatype when the record has it (NCCL describes AllGather and Broadcast tasks
    // in bytes of int8; the report shows the API's, and so does this evidence).
    dtype = s.rec.api_count ? s.rec.api_datatype : s.rec.datatype;
  }
  f.first_seen_ns = done > 0 ? done : now_ns;
  f.last_seen_ns = now_ns;
  SdcEvidence ev;
  ev.check = "recv";
  ev.op = ev_op(op.id);
  ev.votes.emplace();
  for (const auto& g : out.vote.groups) {
    ev.votes->push_back({fp_hex(g.value), global_ranks(m, c, g.voters), g.voters});
  }
  ev.majority.emplace();
  if (out.vote.has_majority) ev.majority->emplace(fp_hex(out.vote.groups[0].value));
  ev.voters = out.voters;
  ev.nranks = c.key.nranks;
  ev.partial = out.partial;
  ev.fp_bytes = out.fp_bytes;
  ev.fp_version = out.fp_version;
  ev.bytes = bytes;
  ev.datatype = shm::datatype_name(dtype);
  f.evidence = to_json(ev);
  std::string what = describe(op.id) + " of " + comm_label(c);
  if (f.verdict == Verdict::kAttributed) {
    std::string names;
    for (int r : out.vote.dissenters) {
      f.suspects.push_back(suspect_of(m, c, r));
      names += (names.empty() ? "" : ", ") + who(m, c, r);
    }
    f.summary = names + " received different bytes in " + what + ": " +
                std::to_string(out.vote.groups[0].voters.size()) + " of " + std::to_string(c.key.nranks) +
                " ranks agree on " + fp_hex(out.vote.groups[0].value);
  } else {
    f.summary = "ranks disagree on the result of " + what + " with no majority (" +
                std::to_string(out.vote.groups.size()) + " different fingerprints among " + std::to_string(out.voters) +
                " ranks)";
  }
  return f;
}

}  // namespace scout::obs

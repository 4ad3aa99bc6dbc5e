#include "observer/detect/metadata_check.h"

#include <algorithm>

#include "common/names.h"
#include "observer/detect/finding_util.h"

namespace scout::obs {

using namespace scout::shm;

EvMetaValue ev_meta(const MetaValue& v) { return EvMetaValue{shm::datatype_name(v.datatype), v.count, v.root}; }

MetaValue meta_value(const RecordSnapshot& r, bool api) {
  MetaValue v;
  v.datatype = api ? r.api_datatype : r.datatype;
  v.count = api ? r.api_count : r.count;
  v.root = r.kind == kKindColl && (r.func == kFuncBroadcast || r.func == kFuncReduce) ? r.peer : -1;
  return v;
}

MetaOutcome check_metadata(const Op& op) {
  MetaOutcome out;
  out.api_fields = true;
  for (const OpSlot& s : op.slots) {
    if (s.rec.api_count == 0) out.api_fields = false;
  }
  std::vector<std::pair<int, MetaValue>> ballots;
  for (const OpSlot& s : op.slots) ballots.emplace_back(op.comm_rank(s.index), meta_value(s.rec, out.api_fields));
  out.partial = int(ballots.size()) < op.n;
  out.vote = strict_majority(ballots, op.n);
  return out;
}

std::string desync_key(const Comm& c, const OpId& id) {
  std::string k = "desync:" + hex64(c.key.hash) + ":" + std::to_string(c.key.nranks) + ":" + shm::func_name(id.func) +
                  ":" + std::to_string(id.seq);
  if (id.cls == OpClass::kP2p) k += ":" + std::to_string(id.src) + ">" + std::to_string(id.dst);
  return k;
}

namespace {
std::string meta_words(const MetaValue& v) {
  std::string s = "count " + std::to_string(v.count) + " of " + shm::datatype_name(v.datatype);
  if (v.root >= 0) s += ", root " + std::to_string(v.root);
  return s;
}
}  // namespace

std::optional<Finding> desync_finding(const Model& m, const Comm& c, const Op& op, const MetaOutcome& out,
                                      int64_t now_ns) {
  if (out.vote.verdict == VoteVerdict::kAgree) return std::nullopt;
  Finding f;
  f.kind = FindingKind::kDesync;
  f.verdict = out.vote.verdict == VoteVerdict::kAttributed ? Verdict::kAttributed : Verdict::kInconclusive;
  set_comm(f, c);
  f.key = op_key(op.id);
  f.dedup_key = desync_key(c, op.id);
  int64_t first = 0;
  for (const OpSlot& s : op.slots) {
    if (s.rec.enqueue_ns > 0) first = first == 0 ? s.rec.enqueue_ns : std::min(first, s.rec.enqueue_ns);
  }
  f.first_seen_ns = first > 0 ? first : now_ns;
  f.last_seen_ns = now_ns;
  DesyncEvidence ev;
  ev.source = "metadata";
  ev.op = ev_op(op.id);
  ev.fields = out.api_fields ? "api" : "task";
  ev.votes.emplace();
  for (const auto& g : out.vote.groups) {
    ev.votes->push_back({ev_meta(g.value), global_ranks(m, c, g.voters), g.voters});
  }
  ev.majority.emplace();
  if (out.vote.has_majority) ev.majority->emplace(ev_meta(out.vote.groups[0].value));
  ev.partial = out.partial;
  f.evidence = to_json(ev);
  std::string what = describe(op.id) + " of " + comm_label(c);
  if (f.verdict == Verdict::kAttributed) {
    for (int r : out.vote.dissenters) f.suspects.push_back(suspect_of(m, c, r));
    const auto& maj = out.vote.groups[0];
    std::string minority;
    for (size_t g = 1; g < out.vote.groups.size(); ++g) {
      for (int r : out.vote.groups[g].voters) {
        if (!minority.empty()) minority += "; ";
        minority += who(m, c, r) + " called it with " + meta_words(out.vote.groups[g].value);
      }
    }
    f.summary = minority + " where " + std::to_string(maj.voters.size()) + " ranks used " + meta_words(maj.value) +
                " (" + what + ")";
  } else {
    f.summary = "ranks disagree on " + what + " with no majority (" + std::to_string(out.vote.groups.size()) +
                " different calls)";
  }
  return f;
}

}  // namespace scout::obs

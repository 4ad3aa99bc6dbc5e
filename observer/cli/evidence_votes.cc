// Evidence in words for desynchronization, silent data corruption and NaN/Inf origin
// (docs/findings.md, "desync", "sdc", "nan"): which ranks voted what, the majority if any, and
// what the vote covered.
#include "observer/cli/evidence_kinds.h"
#include "observer/cli/format.h"

namespace scout::cli::ev {
namespace {

// The value of a metadata vote {datatype, count, root}: "count 1000 of float32, root 1".
std::string meta_value(const obs::EvMetaValue& v) {
  std::string s = "count " + std::to_string(v.count) + " of " + v.datatype;
  if (v.root >= 0) s += ", root " + std::to_string(v.root);
  return s;
}

// A communicator's name, else its hash.
std::string comm_name(const obs::EvComm& c) { return c.name.empty() ? c.hash : c.name; }

// Vote groups, largest first (docs/findings.md): one line each,
//   "ranks 0-1,3 (3): <value> (majority)"; comm ranks are added when they differ from the global
// ranks. The first group is marked as the majority when it holds more than half of `nranks`.
template <class V, class Fn>
void vote_lines(EvidenceText& t, const std::vector<obs::EvVoteGroup<V>>& groups, int nranks, Fn value, int depth) {
  bool first = true;
  for (const auto& g : groups) {
    std::string s = ranks(g.ranks) + " (" + std::to_string(g.ranks.size());
    if (!g.comm_ranks.empty() && g.comm_ranks != g.ranks) {
      s += (g.comm_ranks.size() == 1 ? ", comm rank " : ", comm ranks ") + rank_list(g.comm_ranks);
    }
    s += "): " + value(g.value);
    if (first && nranks > 0 && 2 * static_cast<int>(g.ranks.size()) > nranks) s += " (majority)";
    first = false;
    t.line(s, depth);
  }
}

std::string frontier_value(const std::optional<obs::EvOp>& v) { return v ? op(*v) : "in no collective"; }

// What a rank called at one position of its collective sequence: "AllReduce, count 1024 of
// float32"; null: "not called (frozen at a deadlock)".
std::string seq_value(const std::optional<obs::EvSeqValue>& v) {
  if (!v) return "not called (frozen: its peers wait elsewhere)";
  std::string s = v->func + ", count " + std::to_string(v->count) + " of " + v->datatype;
  if (v->root >= 0) s += ", root " + std::to_string(v->root);
  return s;
}

// "operation: X" when the evidence names another operation than the finding's key.
void other_op(const obs::Finding& f, EvidenceText& t, const obs::EvOp& o) {
  std::string mine = f.key ? f.key->func + " #" + std::to_string(f.key->seq) : "";
  if (op(o) != mine) t.line("operation: " + op(o));
}

void hang_part(EvidenceText& t, const obs::HangEvidence& h) {
  t.line("hang: " + h.cls + ", " + stalled(t, h.stalled_ms, h.timeout_ms, h.last_progress_ns));
  wait_edges(t, "wait-for chain", h.chain, 1);
  comm_states(t, "communicators", h.comms, 1);
}

// Leaves every key in `keys` for the generic renderer.
void leave(EvidenceText& t, std::initializer_list<const char*> keys) {
  for (const char* k : keys) t.leave(k);
}

}  // namespace

void desync(const obs::Finding& f, const obs::DesyncEvidence& e, EvidenceText& t) {
  other_op(f, t, e.op);
  if (e.source == "metadata") {
    const std::string fields = e.fields.value_or("");
    t.line("source: metadata" + std::string(fields == "api"    ? " (values given to the API)"
                                            : fields == "task" ? " (values of NCCL's tasks)"
                                                               : ""));
    t.line("votes (datatype, count and root per rank):");
    if (e.votes) vote_lines(t, *e.votes, f.comm_nranks, meta_value, 1);
    const bool none = !e.majority || !*e.majority;
    t.line("majority: " +
           (none ? std::string("none (no value is held by more than half of the ranks)") : meta_value(**e.majority)));
    if (e.partial) {
      t.line(*e.partial ? "partial: yes (some ranks' records were missing)"
                        : "partial: no (every rank's record was present)");
    }
    leave(t, {"frontier_votes"});
  } else if (e.source == "hang") {
    t.line("source: hang (the communicator is hung and its ranks wait in different collectives)");
    t.line("votes (the collective each rank is in):");
    if (e.frontier_votes) vote_lines(t, *e.frontier_votes, f.comm_nranks, frontier_value, 1);
    leave(t, {"fields", "votes", "majority", "partial"});
  } else if (e.source == "sequence") {
    t.line(
        "source: sequence (the ranks called different collectives at the same position of the "
        "communicator's call order)");
    if (e.position) t.line("position: " + std::to_string(*e.position) + " (0-based, collectives only)");
    const std::string fields = e.fields.value_or("");
    t.line("votes (what each rank called there" +
           std::string(fields == "api"    ? ", values given to the API"
                       : fields == "task" ? ", values of NCCL's tasks"
                                          : "") +
           "):");
    if (e.sequence_votes) vote_lines(t, *e.sequence_votes, f.comm_nranks, seq_value, 1);
    if (e.agreed && !e.agreed->empty()) {
      t.line("agreed before it:");
      for (const obs::EvSeqAgreed& a : *e.agreed)
        t.line("position " + std::to_string(a.position) + ": " + seq_value(a.value), 1);
    }
    leave(t, {"votes", "majority", "partial", "frontier_votes"});
  } else {
    t.line("source: " + e.source);
    leave(t, {"fields", "votes", "majority", "partial", "frontier_votes"});
  }
  if (e.hang) hang_part(t, *e.hang);
}

namespace {

void sdc_recv(const obs::Finding& f, const obs::SdcEvidence& e, EvidenceText& t) {
  t.line("check: receive fingerprints (after " + (f.key ? f.key->func : std::string("the operation")) +
         " every rank holds the same bytes)");
  t.line("votes (receive fingerprint per rank):");
  if (e.votes)
    vote_lines(
        t, *e.votes, f.comm_nranks, [](const std::string& v) { return v; }, 1);
  const std::string nr = text(js(e.nranks));
  const bool none = !e.majority || !*e.majority;
  t.line("majority: " + (none ? "none (no fingerprint is held by more than half of the " + nr +
                                    " ranks: scout cannot tell which is wrong)"
                              : **e.majority));
  std::string voters = "voters: " + text(js(e.voters)) + " of " + nr + " ranks";
  if (e.partial && *e.partial) voters += " (partial: the others had no fingerprint in time)";
  t.line(voters);
  if (e.bytes) {
    std::string s = "message: " + fmt_bytes(*e.bytes) + " of " + text(js(e.datatype));
    if (e.fp_bytes) {
      s += "; the fingerprints cover " + fmt_bytes(*e.fp_bytes);
      if (e.fp_version) s += " (fingerprint version " + std::to_string(*e.fp_version) + ")";
    } else {
      leave(t, {"fp_version"});
    }
    t.line(s);
  } else {
    leave(t, {"datatype", "fp_bytes", "fp_version"});
  }
  leave(t, {"declaration", "group", "disagreements"});
}

void sdc_equiv(const obs::SdcEvidence& e, EvidenceText& t) {
  const char* what = e.check == "send-equiv" ? "send" : "receive";
  t.line(std::string("check: ") + what + " fingerprints of equivalent communicators, declared as '" +
         text(js(e.declaration)) + "'");
  std::string members;
  for (const auto& c : e.group.value_or(std::vector<obs::EvComm>{})) {
    members += (members.empty() ? "" : ", ") + comm(c);
  }
  t.line("group: " + members);
  for (const auto& d : e.disagreements.value_or(std::vector<obs::EvEquivDisagreement>{})) {
    t.line("comm rank " + std::to_string(d.comm_rank) + ":");
    for (const auto& v : d.votes) {
      std::string names;
      for (const auto& c : v.comms) names += (names.empty() ? "" : ", ") + comm_name(c);
      std::string s = ranks(v.ranks) + " in " + names + ": " + v.value;
      if (d.majority && v.value == *d.majority) s += " (majority)";
      t.line(s, 1);
    }
    if (!d.majority) t.line("majority: none", 1);
  }
  leave(t, {"votes", "majority", "voters", "nranks", "partial", "fp_bytes", "fp_version", "bytes", "datatype"});
}

}  // namespace

void sdc(const obs::Finding& f, const obs::SdcEvidence& e, EvidenceText& t) {
  other_op(f, t, e.op);
  if (e.check == "recv") {
    sdc_recv(f, e, t);
  } else if (e.check == "send-equiv" || e.check == "recv-equiv") {
    sdc_equiv(e, t);
  } else {
    t.line("check: " + e.check);
    leave(t, {"votes", "majority", "voters", "nranks", "partial", "fp_bytes", "fp_version", "bytes", "datatype",
              "declaration", "group", "disagreements"});
  }
}

void nan(const obs::Finding& f, const obs::NanEvidence& e, EvidenceText& t) {
  (void)f;
  const obs::EvNanOrigin& o = e.origin;
  t.line("first operation with non-finite sends: " + comm_op(o.comm, o.op) + ", called at " + t.when(o.time_ns));
  for (const auto& c : o.carriers) {
    t.line("rank " + std::to_string(c.global_rank) + " (comm rank " + std::to_string(c.comm_rank) +
               "): " + std::to_string(c.send_nan) + " NaN, " + std::to_string(c.send_inf) + " Inf in its send buffer",
           1);
  }
  t.line("operations with non-finite sends in this episode: " + std::to_string(e.ops_with_nonfinite));
  t.line("ranks that carried non-finite values: " + rank_list(e.ranks_with_nonfinite) + " (" +
         std::to_string(e.ranks_with_nonfinite.size()) + ")");
}

}  // namespace scout::cli::ev

// Evidence in words for desynchronization, silent data corruption and NaN/Inf origin
// (docs/findings.md, "desync", "sdc", "nan"): which ranks voted what, the majority if any, and
// what the vote covered.
#include "observer/cli/evidence_kinds.h"
#include "observer/cli/format.h"

namespace scout::cli::ev {
namespace {

// The value of a metadata vote {datatype, count, root}: "count 1000 of float32, root 1".
std::string meta_value(const nlohmann::json& v) {
  if (!v.is_object()) return text(v);
  std::string s = "count " + text(at(v, "count")) + " of " + text(at(v, "datatype"));
  const auto& root = at(v, "root");
  if (root.is_number_integer() && root.get<int64_t>() >= 0) s += ", root " + root.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return s;
}

// A communicator's name, else its hash.
std::string comm_name(const nlohmann::json& c) {
  const auto& n = at(c, "name");
  if (n.is_string() && !n.get<std::string>().empty()) return n.get<std::string>();
  return text(at(c, "hash"));
}

// Vote groups, largest first (docs/findings.md): one line each,
//   "ranks 0-1,3 (3): <value> (majority)"; comm ranks are added when they differ from the global
// ranks. The first group is marked as the majority when it holds more than half of `nranks`.
void vote_lines(EvidenceText& t, const nlohmann::json& groups, int nranks,
                std::string (*value)(const nlohmann::json&), int depth) {
  bool first = true;
  for (const auto& g : groups.is_array() ? groups : nlohmann::json::array()) {
    const auto& rk = at(g, "ranks");
    const auto& cr = at(g, "comm_ranks");
    std::string s = ranks(rk) + " (" + std::to_string(count(rk));
    if (count(cr) && cr != rk) s += (count(cr) == 1 ? ", comm rank " : ", comm ranks ") + rank_list(cr);
    s += "): " + value(at(g, "value"));
    if (first && nranks > 0 && 2 * static_cast<int>(count(rk)) > nranks) s += " (majority)";
    first = false;
    t.line(s, depth);
  }
}

std::string fingerprint_value(const nlohmann::json& v) { return text(v); }
std::string frontier_value(const nlohmann::json& v) { return v.is_null() ? "in no collective" : op(v); }

// "operation: X" when the evidence names another operation than the finding's key.
void other_op(const obs::Finding& f, EvidenceText& t, const nlohmann::json& o) {
  std::string mine = f.key ? f.key->func + " #" + std::to_string(f.key->seq) : "";
  if (!o.is_null() && op(o) != mine) t.line("operation: " + op(o));
}

void hang_part(EvidenceText& t, const nlohmann::json& h) {
  t.line("hang: " + str(at(h, "class")) + ", " +
         stalled(t, at(h, "stalled_ms"), at(h, "timeout_ms"), at(h, "last_progress_ns")));
  wait_edges(t, "wait-for chain", at(h, "chain"), 1);
  comm_states(t, "communicators", at(h, "comms"), 1);
}

}  // namespace

void desync(const obs::Finding& f, EvidenceText& t) {
  const std::string source = str(t.use("source"));
  other_op(f, t, t.use("op"));
  if (source == "metadata") {
    const std::string fields = str(t.use("fields"));
    t.line("source: metadata" + std::string(fields == "api"    ? " (values given to the API)"
                                            : fields == "task" ? " (values of NCCL's tasks)"
                                                               : ""));
    t.line("votes (datatype, count and root per rank):");
    vote_lines(t, t.use("votes"), f.comm_nranks, meta_value, 1);
    const auto& maj = t.use("majority");
    t.line("majority: " + (maj.is_null() ? std::string("none (no value is held by more than half of the ranks)")
                                         : meta_value(maj)));
    const auto& partial = t.use("partial");
    if (partial.is_boolean()) {
      t.line(partial.get<bool>() ? "partial: yes (some ranks' records were missing)"
                                 : "partial: no (every rank's record was present)");
    }
  } else if (source == "hang") {
    t.line("source: hang (the communicator is hung and its ranks wait in different collectives)");
    t.line("votes (the collective each rank is in):");
    vote_lines(t, t.use("frontier_votes"), f.comm_nranks, frontier_value, 1);
  } else {
    t.line("source: " + source);
  }
  if (t.has("hang")) hang_part(t, t.use("hang"));
}

void sdc(const obs::Finding& f, EvidenceText& t) {
  const std::string check = str(t.use("check"));
  other_op(f, t, t.use("op"));
  if (check == "recv") {
    t.line("check: receive fingerprints (after " + (f.key ? f.key->func : std::string("the operation")) +
           " every rank holds the same bytes)");
    t.line("votes (receive fingerprint per rank):");
    vote_lines(t, t.use("votes"), f.comm_nranks, fingerprint_value, 1);
    const auto& maj = t.use("majority");
    const auto& nr = t.use("nranks");
    t.line("majority: " + (maj.is_null() ? "none (no fingerprint is held by more than half of the " + text(nr) +
                                               " ranks: scout cannot tell which is wrong)"
                                         : text(maj)));
    const auto& partial = t.use("partial");
    std::string voters = "voters: " + text(t.use("voters")) + " of " + text(nr) + " ranks";
    if (partial.is_boolean() && partial.get<bool>()) {
      voters += " (partial: the others had no fingerprint in time)";
    }
    t.line(voters);
    auto bytes = [](const nlohmann::json& v) { return v.is_number_integer() ? fmt_bytes(v.get<uint64_t>()) : text(v); };
    if (t.has("bytes")) {
      std::string s = "message: " + bytes(t.use("bytes")) + " of " + text(t.use("datatype"));
      if (t.has("fp_bytes")) {
        s += "; the fingerprints cover " + bytes(t.use("fp_bytes"));
        if (t.has("fp_version")) s += " (fingerprint version " + text(t.use("fp_version")) + ")";
      }
      t.line(s);
    }
  } else if (check == "send-equiv" || check == "recv-equiv") {
    const char* what = check == "send-equiv" ? "send" : "receive";
    t.line(std::string("check: ") + what + " fingerprints of equivalent communicators, declared as '" +
           str(t.use("declaration")) + "'");
    const auto& group = t.use("group");
    std::string members;
    for (const auto& c : group.is_array() ? group : nlohmann::json::array()) {
      members += (members.empty() ? "" : ", ") + comm(c);
    }
    t.line("group: " + members);
    const auto& dis = t.use("disagreements");
    for (const auto& d : dis.is_array() ? dis : nlohmann::json::array()) {
      t.line("comm rank " + text(at(d, "comm_rank")) + ":");
      const auto& votes = at(d, "votes");
      const auto& maj = at(d, "majority");
      for (const auto& v : votes.is_array() ? votes : nlohmann::json::array()) {
        std::string names;
        for (const auto& c : at(v, "comms").is_array() ? at(v, "comms") : nlohmann::json::array()) {
          names += (names.empty() ? "" : ", ") + comm_name(c);
        }
        std::string s = ranks(at(v, "ranks")) + " in " + names + ": " + text(at(v, "value"));
        if (!maj.is_null() && at(v, "value") == maj) s += " (majority)";
        t.line(s, 1);
      }
      if (maj.is_null()) t.line("majority: none", 1);
    }
  } else {
    t.line("check: " + check);
  }
}

void nan(const obs::Finding& f, EvidenceText& t) {
  (void)f;
  const auto& o = t.use("origin");
  t.line("first operation with non-finite sends: " + comm_op(at(o, "comm"), at(o, "op")) + ", called at " +
         t.when(at(o, "time_ns")));
  const auto& carriers = at(o, "carriers");
  for (const auto& c : carriers.is_array() ? carriers : nlohmann::json::array()) {
    t.line("rank " + text(at(c, "global_rank")) + " (comm rank " + text(at(c, "comm_rank")) + "): " +
               text(at(c, "send_nan")) + " NaN, " + text(at(c, "send_inf")) + " Inf in its send buffer",
           1);
  }
  t.line("operations with non-finite sends in this episode: " + text(t.use("ops_with_nonfinite")));
  const auto& all = t.use("ranks_with_nonfinite");
  t.line("ranks that carried non-finite values: " + rank_list(all) + " (" + std::to_string(count(all)) + ")");
}

}  // namespace scout::cli::ev

// Evidence in words for hangs, deadlocks and crashes (docs/findings.md, "hang", "deadlock",
// "crash"): the root, the wait-for chain closest to the root first, and the state of every
// communicator involved.
#include "observer/cli/evidence_kinds.h"

namespace scout::cli::ev {
namespace {

// One root of a hang: {global_rank, reason, detail, process} or {reason: "stuck", comm, op}.
std::string root_words(const nlohmann::json& r) {
  const std::string reason = str(at(r, "reason"));
  if (reason == "stuck") {
    return comm_op(at(r, "comm"), at(r, "op")) + ": every rank started it and none can finish";
  }
  std::string who = "rank " + text(at(r, "global_rank"));
  const std::string detail = str(at(r, "detail"));
  const bool has_detail = !detail.empty() && detail != "-";
  std::string s;
  if (reason == "idle") {
    s = who + " never entered the operation and waits in no other communicator";
  } else if (reason == "gpu-blocked") {
    s = who + " enqueued " + (has_detail ? detail : "it") + " but its GPU never started it";
  } else if (reason == "running") {
    s = who + " is busy in " + (has_detail ? detail : "another operation") + ", a communicator that still progresses";
  } else if (reason == "dead") {
    s = who + "'s process died";
  } else {
    s = who + ": " + reason + (has_detail ? " (" + detail + ")" : "");
  }
  if (r.is_object() && r.contains("process")) s += " (process " + str(r["process"]) + ")";
  return s;
}

// One rank of a *comm state*.
std::string rank_state_words(const nlohmann::json& r, const nlohmann::json& comm_op_json) {
  std::string s = "rank " + text(at(r, "global_rank")) + " (comm rank " + text(at(r, "comm_rank")) + "): ";
  const std::string state = str(at(r, "state"));
  if (state == "running") {
    s += "running " + op(at(r, "op"));
  } else if (state == "enqueued") {
    s += "enqueued " + op(at(r, "op")) + ", its GPU has not started it";
  } else if (state == "absent") {
    s += "has not issued " + op(comm_op_json);
  } else if (state == "idle") {
    s += "idle";
  } else {
    s += state;
  }
  if (r.is_object() && r.contains("last_completed")) s += "; last completed " + op(r["last_completed"]);
  return s;
}

}  // namespace

std::string stalled(EvidenceText& t, const nlohmann::json& stalled_ms, const nlohmann::json& timeout_ms,
                    const nlohmann::json& last_progress_ns) {
  std::string s = ms(stalled_ms) + " without progress";
  if (!timeout_ms.is_null()) s += " (hang timeout " + ms(timeout_ms) + ")";
  if (!last_progress_ns.is_null()) s += "; last progress at " + t.when(last_progress_ns);
  return s;
}

void wait_edges(EvidenceText& t, const std::string& title, const nlohmann::json& edges, int depth) {
  if (count(edges) == 0) {
    t.line(title + ": none", depth);
    return;
  }
  t.line(title + ":", depth);
  for (const auto& e : edges) t.line(edge(e), depth + 1);
}

void comm_states(EvidenceText& t, const std::string& title, const nlohmann::json& comms, int depth) {
  if (count(comms) == 0) return;
  t.line(title + ":", depth);
  for (const auto& c : comms) {
    const nlohmann::json& o = at(c, "op");
    std::string head = comm_op(at(c, "comm"), o) + ": " + str(at(c, "class"));
    if (c.is_object() && c.contains("stalled_ms")) head += ", stalled " + ms(c["stalled_ms"]);
    if (c.is_object() && c.contains("waiting_in_op")) {
      const auto& w = at(c, "waiting_in_op");
      size_t n = w.is_number_integer() && w.get<int64_t>() > 0 ? static_cast<size_t>(w.get<int64_t>()) : 0;
      head += ", " + plural(n, "rank waits", "ranks wait") + " in it";
    }
    t.line(head, depth + 1);
    const nlohmann::json& rs = at(c, "ranks");
    for (const auto& r : rs.is_array() ? rs : nlohmann::json::array()) t.line(rank_state_words(r, o), depth + 2);
    const nlohmann::json& nr = at(at(c, "comm"), "nranks");
    if (nr.is_number_integer() && nr.get<int64_t>() > static_cast<int64_t>(count(rs))) {
      t.line("(the other ranks run " + op(o) + ")", depth + 2);
    }
  }
}

void hang(const obs::Finding& f, EvidenceText& t) {
  (void)f;
  const std::string cls = str(t.use("class"));
  if (cls == "absent") {
    t.line("class: absent (a participant never arrived)");
  } else if (cls == "stuck") {
    t.line("class: stuck (every participant started the operation and none can finish; the transfer that never "
           "arrives is not visible to scout)");
  } else {
    t.line("class: " + cls);
  }
  const nlohmann::json& root = t.use("root");
  t.line(count(root) == 1 ? "root:" : "roots:");
  for (const auto& r : root.is_array() ? root : nlohmann::json::array()) t.line(root_words(r), 1);
  if (cls == "stuck") {
    t.line("ranks inside it: " + ranks(t.use("waiting_ranks")));
    if (t.has("blocked_elsewhere")) {
      const auto& b = t.use("blocked_elsewhere");
      t.line("ranks of other communicators waiting on them: " + (count(b) ? ranks(b) : std::string("none")));
    }
  } else {
    const auto& w = t.use("waiting_ranks");
    t.line("waiting for the root: " + ranks(w) + " (" + std::to_string(count(w)) +
           ", directly or through other communicators)");
  }
  t.line("stalled: " + stalled(t, t.use("stalled_ms"), t.use("timeout_ms"), t.use("last_progress_ns")));
  if (cls != "stuck" || count(t.use("chain")) > 0) {
    wait_edges(t, "wait-for chain (closest to the root first)", t.use("chain"));
  }
  comm_states(t, "communicators", t.use("comms"));
}

void deadlock(const obs::Finding& f, EvidenceText& t) {
  (void)f;
  const auto& cycle = t.use("cycle");
  wait_edges(t, "cycle (each rank waits for the next, the last for the first)", cycle);
  t.line("stalled: " + stalled(t, t.use("stalled_ms"), t.use("timeout_ms"), t.use("last_progress_ns")));
  comm_states(t, "communicators", t.use("comms"));
}

void crash(const obs::Finding& f, EvidenceText& t) {
  (void)f;
  const auto& fin = t.use("finalized");
  std::string proc = "pid " + text(t.use("pid")) + " on " + text(t.use("host"));
  t.line("process: " + proc +
         (fin.is_boolean() && fin.get<bool>() ? " exited after finalizing its communicators"
                                              : " died without finalizing its communicators"));
  t.line("last event: " + t.when(t.use("last_event_ns")) + " (its last plugin callback); seen gone at " +
         t.when(t.use("gone_ns")));
  const auto& open = t.use("open_ops");
  if (count(open) == 0) {
    t.line("operations in flight: none");
  } else {
    t.line("operations in flight:");
    for (const auto& o : open) t.line(comm_op(at(o, "comm"), at(o, "op")) + " (" + str(at(o, "state")) + ")", 1);
  }
  const auto& w = t.use("waiting_ranks");
  t.line("waiting for it: " + ranks(w) + " (" + std::to_string(count(w)) + ")");
  wait_edges(t, "wait-for chain (closest to the dead rank first)", t.use("chain"));
}

}  // namespace scout::cli::ev

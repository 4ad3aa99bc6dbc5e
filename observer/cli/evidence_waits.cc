// Evidence in words for hangs, stalls, deadlocks and crashes (docs/findings.md, "hang", "stall",
// "deadlock", "crash"): the root, the wait-for chain closest to the root first, and the state of every
// communicator involved.
#include "observer/cli/evidence_kinds.h"

namespace scout::cli::ev {
std::string root_words(const obs::EvHangRoot& r) {
  if (r.reason == "stuck") { return comm_op(r.comm, r.op) + ": every rank started it and none can finish"; }
  std::string who = "rank " + (r.global_rank ? std::to_string(*r.global_rank) : std::string("-"));
  const std::string detail = r.detail.value_or("");
  const bool has_detail = !detail.empty() && detail != "-";
  std::string s;
  if (r.reason == "idle") {
    s = who + " never entered the operation and waits in no other communicator";
  } else if (r.reason == "gpu-blocked") {
    s = who + " enqueued " + (has_detail ? detail : "it") + " but its GPU never started it";
  } else if (r.reason == "running") {
    s = who + " is busy in " + (has_detail ? detail : "another operation") + ", a communicator that still progresses";
  } else if (r.reason == "dead") {
    s = who + "'s process died";
  } else {
    s = who + ": " + r.reason + (has_detail ? " (" + detail + ")" : "");
  }
  // The process state when the root was named; `scout explain` says beside the suspect when it
  // changed since (a running root that died later is never shown running alone).
  if (r.process) s += " (process " + *r.process + (*r.process == "running" ? " when it was named)" : ")");
  return s;
}

namespace {

// One rank of a *comm state*.
std::string rank_state_words(const obs::EvRankState& r, const obs::EvOp& comm_op) {
  std::string s = "rank " + std::to_string(r.global_rank) + " (comm rank " + std::to_string(r.comm_rank) + "): ";
  if (r.state == "running") {
    s += "running " + op(r.op);
  } else if (r.state == "enqueued") {
    s += "enqueued " + op(r.op) + ", its GPU has not started it";
  } else if (r.state == "absent") {
    s += "has not issued " + op(comm_op);
  } else if (r.state == "idle") {
    s += "idle";
  } else {
    s += r.state;
  }
  s += "; last completed " + op(r.last_completed);
  return s;
}

}  // namespace

std::string stalled(EvidenceText& t, double stalled_ms, std::optional<double> timeout_ms,
                    std::optional<int64_t> last_progress_ns) {
  std::string s = ms(stalled_ms) + " without progress";
  if (timeout_ms) s += " (hang timeout " + ms(*timeout_ms) + ")";
  if (last_progress_ns) s += "; last progress at " + t.when(*last_progress_ns);
  return s;
}

void wait_edges(EvidenceText& t, const std::string& title, const std::vector<obs::EvWaitEdge>& edges, int depth) {
  if (edges.empty()) {
    t.line(title + ": none", depth);
    return;
  }
  t.line(title + ":", depth);
  for (const auto& e : edges) t.line(edge(e), depth + 1);
}

void comm_states(EvidenceText& t, const std::string& title, const std::vector<obs::EvCommState>& comms, int depth) {
  if (comms.empty()) return;
  t.line(title + ":", depth);
  for (const auto& c : comms) {
    std::string head = comm_op(c.comm, c.op) + ": " + c.cls + ", stalled " + ms(c.stalled_ms);
    size_t n = c.waiting_in_op > 0 ? static_cast<size_t>(c.waiting_in_op) : 0;
    head += ", " + plural(n, "rank waits", "ranks wait") + " in it";
    t.line(head, depth + 1);
    for (const auto& r : c.ranks) t.line(rank_state_words(r, c.op), depth + 2);
    if (c.comm.nranks > static_cast<int>(c.ranks.size())) {
      t.line("(the other ranks run " + op(c.op) + ")", depth + 2);
    }
  }
}

// The ranks of a hang or stall: of class stuck, those inside the operation and those of other
// communicators waiting on them; otherwise those waiting for the root.
void waiting_lines(EvidenceText& t, const std::string& cls, const nlohmann::json& waiting,
                   const std::optional<std::vector<int>>& blocked_elsewhere) {
  if (cls == "stuck") {
    t.line("ranks inside it: " + ranks(waiting));
    if (blocked_elsewhere) {
      const auto& b = *blocked_elsewhere;
      t.line("ranks of other communicators waiting on them: " + (b.empty() ? std::string("none") : ranks(b)));
    }
  } else {
    t.line("waiting for the root: " + ranks(waiting) + " (" + std::to_string(count(waiting)) +
           ", directly or through other communicators)");
  }
}

// The progress sources of a stuck collective (docs/observer.md, "Stuck collectives").
void stuck_trace(const obs::EvStuckTrace& tr, EvidenceText& t) {
  if (tr.source == "replay") {
    // Replay's cycle decided (docs/replay.md, "Deadlines"): its words, below.
  } else if (tr.verdict == "link") {
    t.line("progress: the link between the suspects stopped delivering (" + tr.source + ")");
  } else if (tr.verdict == "host") {
    t.line("progress: the network of host " + tr.host.value_or("?") + " stopped delivering (" + tr.source + ")");
  } else if (tr.verdict == "gpu") {
    t.line("progress: the suspects' GPU stopped consuming what it received (" + tr.source + ")");
  } else {
    t.line("progress: no source names the transfer that does not arrive" +
           std::string(tr.source == "none" ? " (no ProxyStep progress of this operation was recorded)" : ""));
  }
  if (tr.channels_stuck && !tr.channels_stuck->empty())
    t.line("channels that never finished on any rank: " + ranks(*tr.channels_stuck) +
           (tr.channels_done && !tr.channels_done->empty() ? "; finished: " + ranks(*tr.channels_done) : ""));
  if (tr.requested_ns)
    t.line("trace asked for at " + t.when(*tr.requested_ns) + "; answered by " + std::to_string(tr.acked.value_or(0)) +
           " member processes");
  if (tr.replay) t.line("replay: " + *tr.replay);
  for (const obs::EvStuckPath& p : tr.paths) {
    t.line("rank " + std::to_string(p.global_rank) + " " + p.dir + (p.dir == "send" ? " to " : " from ") + "rank " +
               std::to_string(p.peer) + ", channel " + std::to_string(p.channel) + ": " + p.state + " (steps " +
               std::to_string(p.steps) + ", posted " + std::to_string(p.posted) + ", in the network " +
               std::to_string(p.in_net) + ", done " + std::to_string(p.done) + ", to the GPU " + std::to_string(p.gpu) +
               ", consumed " + std::to_string(p.consumed) + ")",
           1);
  }
}

// The replay cycle run while a collective inside one node was stuck (docs/replay.md, "Deadlines").
void stuck_replay(const std::optional<obs::EvStuckReplay>& r, EvidenceText& t) {
  if (!r) return;
  if (r->verdict == "none") t.line(r->words);  // a named verdict's words are in the trace's line
  t.line("replay: " + std::to_string(r->timed_out.size()) + " of " + std::to_string(r->recipes) +
         " recipes timed out (deadline " + ms(r->deadline_ms) + " each)" +
         (r->timed_out.empty() ? std::string() : ": " + text(js(r->timed_out))) + "; decided at " +
         t.when(r->named_ns));
}

void hang(const obs::Finding& f, const obs::HangEvidence& e, EvidenceText& t) {
  (void)f;
  if (e.cls == "absent") {
    t.line("class: absent (a participant never arrived)");
  } else if (e.cls == "stuck") {
    t.line("class: stuck (every participant started the operation and none can finish)");
    if (e.trace) stuck_trace(*e.trace, t);
    stuck_replay(e.replay, t);
  } else {
    t.line("class: " + e.cls);
  }
  const std::vector<obs::EvHangRoot> roots = e.root.value_or(std::vector<obs::EvHangRoot>{});
  t.line(roots.size() == 1 ? "root:" : "roots:");
  for (const auto& r : roots) t.line(root_words(r), 1);
  waiting_lines(t, e.cls, js(e.waiting_ranks), e.blocked_elsewhere);
  t.line("stalled: " + stalled(t, e.stalled_ms, e.timeout_ms, e.last_progress_ns));
  if (e.stall) {
    t.line("first reported as a stall: root named at " + t.when(e.stall->named_ns) + " (stall threshold " +
           ms(e.stall->threshold_ms) + ")");
  }
  if (e.cls != "stuck" || !e.chain.empty()) { wait_edges(t, "wait-for chain (closest to the root first)", e.chain); }
  comm_states(t, "communicators", e.comms);
}

void stall(const obs::Finding& f, const obs::StallEvidence& e, EvidenceText& t) {
  (void)f;
  if (e.cls == "stuck") {
    t.line("class: stuck (every participant started the operation and none has finished)");
    if (e.trace) stuck_trace(*e.trace, t);
    stuck_replay(e.replay, t);
  } else {
    t.line("class: " + e.cls + (e.cls == "absent" ? " (a participant has not arrived)" : ""));
  }
  t.line(e.root.size() == 1 ? "root:" : "roots:");
  for (const auto& r : e.root) t.line(root_words(r), 1);
  waiting_lines(t, e.cls, js(e.waiting_ranks), e.blocked_elsewhere);
  t.line("stalled: " + ms(e.stalled_ms) + " without progress, beyond the stall threshold " + ms(e.threshold_ms) +
         " (hang timeout " + ms(e.timeout_ms) + "); last progress at " + t.when(e.last_progress_ns));
  const obs::EvStallRule& r = e.rule;
  if (r.basis && *r.basis == "given") {
    t.line("threshold: the largest any node's observer had for the communicator (" + ms(e.threshold_ms) + ")");
  } else if (r.gaps < r.min_gaps && (r.held_ms || r.class_ms)) {
    std::string from;
    if (r.held_ms) from = "its operations were held at most " + ms(*r.held_ms) + " (x " + num(r.margin) + ")";
    if (r.class_ms) from += std::string(from.empty() ? "" : "; ") + "its class learned " + ms(*r.class_ms);
    t.line("threshold: the communicator has fewer than " + std::to_string(r.min_gaps) + " progress gaps (it has " +
           std::to_string(r.gaps) + "): " + from + "; at least " + ms(r.floor_ms) + ", at most the hang timeout");
  } else if (r.gaps < r.min_gaps) {
    t.line("threshold: " + ms(r.cold_ms) + " while the communicator has fewer than " + std::to_string(r.min_gaps) +
           " progress gaps (it has " + std::to_string(r.gaps) +
           ") and nothing else is known, at most the hang timeout");
  } else {
    t.line("threshold: p99 of its last " + std::to_string(r.gaps) + " progress gaps " + ms(r.p99_ms) + " x " +
           num(r.margin) + ", at least " + ms(r.floor_ms) + ", at most the hang timeout");
  }
  t.line("root named at " + t.when(e.named_ns));
  if (e.earlier_ms) {
    t.line("the job paused like this before (same communicator, function and root), for at most " + ms(*e.earlier_ms) +
           "; this one lasts longer");
  }
  if (e.cls != "stuck" || !e.chain.empty()) wait_edges(t, "wait-for chain (closest to the root first)", e.chain);
  comm_states(t, "communicators", e.comms);
}

void deadlock(const obs::Finding& f, const obs::DeadlockEvidence& e, EvidenceText& t) {
  (void)f;
  wait_edges(t, "cycle (each rank waits for the next, the last for the first)", e.cycle);
  t.line("stalled: " + stalled(t, e.stalled_ms, e.timeout_ms, std::nullopt));
  comm_states(t, "communicators", e.comms);
}

void crash(const obs::Finding& f, const obs::CrashEvidence& e, EvidenceText& t) {
  (void)f;
  std::string proc = "pid " + std::to_string(e.pid) + " on " + e.host;
  t.line("process: " + proc +
         (e.finalized ? " exited after finalizing its communicators" : " died without finalizing its communicators"));
  t.line("last event: " + t.when(e.last_event_ns) + " (its last plugin callback); seen gone at " + t.when(e.gone_ns));
  if (e.open_ops.empty()) {
    t.line("operations in flight: none");
  } else {
    t.line("operations in flight:");
    for (const auto& o : e.open_ops) t.line(comm_op(o.comm, o.op) + " (" + o.state + ")", 1);
  }
  t.line("waiting for it: " + ranks(e.waiting_ranks) + " (" + std::to_string(e.waiting_ranks.size()) + ")");
  wait_edges(t, "wait-for chain (closest to the dead rank first)", e.chain);
}

}  // namespace scout::cli::ev

#include "observer/detect/hang.h"

#include <algorithm>
#include <cstdio>
#include <unordered_set>

#include "common/names.h"
#include "observer/detect/finding_util.h"
#include "observer/detect/metadata_check.h"
#include "observer/detect/program_order.h"

namespace scout::obs {

namespace {
constexpr size_t kMaxChain = 256;      // edges listed in evidence
constexpr int kMaxRanksListed = 64;    // per communicator in evidence
constexpr size_t kMaxCommStates = 16;  // communicators whose state evidence lists (closest first)

// Appends the communicator of each edge of `tags` not listed yet, in order (a set keeps it linear
// in the edges when a hang runs through thousands of communicators).
template <typename Edges>
void add_comms(const Edges& edges, const std::vector<int>& tags, std::vector<const Comm*>* comms) {
  std::unordered_set<const Comm*> seen(comms->begin(), comms->end());
  for (int t : tags) {
    if (seen.insert(edges[t].comm).second) comms->push_back(edges[t].comm);
  }
}

std::string what_op(const Comm& c, const OpId& id) { return describe(id) + " of " + comm_label(c); }

// When the first participant enqueued `id` (INT64_MAX if unknown): of the operations a root is
// missing from, the one its peers reached first is the one it stopped before.
int64_t first_enqueue(const Comm& c, const OpId& id) {
  auto it = c.ops.find(id);
  int64_t t = INT64_MAX;
  if (it == c.ops.end()) return t;
  for (const OpSlot& s : it->second.slots) {
    if (s.rec.enqueue_ns > 0) t = std::min(t, s.rec.enqueue_ns);
  }
  return t;
}

// first_enqueue per (communicator, operation), each computed once per pass (a root thousands of
// ranks wait for is compared over thousands of edges into the same operation).
class FirstEnqueue {
 public:
  int64_t operator()(const Comm& c, const OpId& id) {
    auto [it, added] = known_.try_emplace({&c, id}, 0);
    if (added) it->second = first_enqueue(c, id);
    return it->second;
  }

 private:
  std::map<std::pair<const Comm*, OpId>, int64_t> known_;
};

// Orders candidate primary edges into a root `next` describes: the operation the root would have
// called first (program_order.h); where its history does not say, the one its peers enqueued
// first, then the earliest stalled communicator.
bool earlier(const NextCalls& next, FirstEnqueue& first, const Comm& a, const OpId& ia, const Comm& b, const OpId& ib) {
  const size_t pa = next.position(a.key, ia), pb = next.position(b.key, ib);
  if (pa != pb) return pa != 0 && (pb == 0 || pa < pb);
  int64_t ta = first(a, ia), tb = first(b, ib);
  if (ta != tb) return ta < tb;
  return a.last_progress_ns < b.last_progress_ns;
}

std::string seconds(int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f s", double(ns) / 1e9);
  return buf;
}
// Latest completion of any operation by any rank of `c` (ns; 0 when none): moves only when the
// communicator makes progress.
int64_t progress_mark(const Comm& c) {
  int64_t t = 0;
  for (const RankProgress& r : c.ranks) {
    if (r.last_completed.valid) t = std::max(t, r.last_completed.ns);
  }
  return t;
}

// "; the link between rank 1 (node0) and rank 2 (node1) stopped delivering (its sends never
// complete)" and the like, for a verdict that names someone; "" otherwise.
std::string stuck_words(const Model& m, const StuckVerdict& v) {
  if (v.suspects.empty()) return "";
  std::string names;
  for (size_t i = 0; i < v.suspects.size(); ++i) {
    names += (i == 0 ? "" : i + 1 == v.suspects.size() ? " and " : ", ") + who(m, v.suspects[i]);
  }
  if (v.trace.verdict == "host")
    return "; the network of host " + v.trace.host.value_or("?") +
           " stopped delivering (every stopped send is to or "
           "from it): " +
           names;
  if (v.trace.verdict == "gpu") return "; the GPU of " + names + " stopped: data it received was never consumed";
  return "; the link between " + names + " stopped delivering (sends in the network never complete)";
}

}  // namespace

std::string hang_key(const Comm& c, const OpId& id) {
  std::string k = "hang:" + hex64(c.key.hash) + ":" + std::to_string(c.key.nranks) + ":" + shm::func_name(id.func) +
                  ":" + std::to_string(id.seq);
  if (id.cls == OpClass::kP2p) k += ":" + std::to_string(id.src) + ">" + std::to_string(id.dst);
  return k;
}

std::string HangDetector::comm_state(const Model& m, const Comm& c, int64_t now_ns) const {
  if (c.finalized()) return "finalized";
  // A communicator an open hang, deadlock or stall holds shows that finding's word, whether its
  // waiters still wait or were killed with the job: the finding and the table say the same.
  std::string held;
  for (const auto& [key, comms] : involved_) {
    if (!open_.count(key)) continue;
    for (const auto& [ck, mark] : comms) {
      if (ck != c.key) continue;
      auto w = words_.find(key);
      const std::string word = w == words_.end() ? "hung" : w->second;
      if (held.empty() || word == "hung") held = word;
    }
  }
  if (!held.empty()) return held;
  // Member processes all gone, at least one dead without finalizing: dead, whatever their last
  // records say (a dead rank's operation stays in flight in its segment; nobody waits any more).
  if (c.members_known()) {
    bool gone = true, dead = false;
    for (int r : c.known_ranks) {
      const int p = c.ranks[r].proc;
      gone = gone && p >= 0 && m.proc(p).state != ProcState::kRunning;
      dead = dead || (p >= 0 && m.proc(p).state == ProcState::kDead);
    }
    if (gone && dead) return "dead";
  }
  auto it = waits_.find(c.key);
  if (it == waits_.end() || it->second.cls.empty()) return "active";
  int64_t idle = now_ns - c.last_progress_ns;
  if (idle > cfg_.timeout_ns) return "hung";
  int64_t soft = cfg_.timeout_ns / 2;
  if (cfg_.stall) soft = std::min(soft, stall_threshold(c.key));
  if (idle > soft) return "stalled";
  return "active";
}

int64_t HangDetector::stall_threshold(const CommKey& k) const {
  auto it = thresholds_.find(k);
  return it == thresholds_.end() ? StallClock().threshold_ns(cfg_.timeout_ns) : it->second;
}

bool HangDetector::waits_elsewhere(const Model& m, int proc) {
  for (const auto& [k, c] : m.comms()) {
    if (c.members_known()) continue;
    for (const RankProgress& r : c.ranks) {
      if (r.proc == proc && !r.inflight.empty()) return true;
    }
  }
  return false;
}

std::string HangDetector::root_reason(const Model& m, int proc, std::string* detail,
                                      const std::set<CommKey>& stalled_set) const {
  if (m.proc(proc).state == ProcState::kDead) return "dead";
  if (auto wc = wrong_comm_.find(proc); wc != wrong_comm_.end()) {
    const ProcEdge& e = edges_[wc->second.first];
    *detail = what_op(*e.comm, e.e.op);
    return "wrong-comm";
  }
  auto mit = member_of_.find(proc);
  std::string reason = "idle";
  if (mit == member_of_.end()) return reason;
  for (const Membership& mb : mit->second) {
    auto w = waits_.find(mb.comm->key);
    if (w == waits_.end()) continue;
    const CommWaits& cw = w->second;
    bool stalled = stalled_set.count(mb.comm->key) > 0;
    bool waiting = std::binary_search(cw.waiting.begin(), cw.waiting.end(), mb.rank);
    // Inside a collective every member started and none finished: that communicator is reported
    // by itself once it stalls (it may pass the timeout a pass after the waits on this rank).
    if (cw.cls == "stuck" && waiting) {
      *detail = what_op(*mb.comm, cw.op);
      return "stuck";
    }
    if (stalled && cw.cls == "mismatch" &&
        std::binary_search(cw.frontier_vote.dissenters.begin(), cw.frontier_vote.dissenters.end(), mb.rank)) {
      *detail = what_op(*mb.comm, cw.op);
      return "desync";
    }
    const RankWaitState& rs = cw.ranks[mb.rank];
    if (rs.state == "running") {
      reason = "running";
      *detail = what_op(*mb.comm, rs.op);
    } else if (rs.state == "enqueued" && reason == "idle") {
      reason = "gpu-blocked";
      *detail = what_op(*mb.comm, rs.op);
    }
  }
  // in-call: nothing in flight, but its latest API call on a communicator came after every
  // record it enqueued there: the call was made and never enqueued.
  if (reason == "idle") {
    for (const Membership& mb : mit->second) {
      const RankProgress& rp = mb.comm->ranks[mb.rank];
      if (rp.last_api_ns > 0 && rp.last_api_ns > rp.last_record_api_ns) {
        reason = "in-call";
        *detail = "an API call on " + comm_label(*mb.comm) + " that was never enqueued";
        break;
      }
    }
  }
  return reason;
}

std::vector<EvWaitEdge> HangDetector::chain(const Model& m, const std::vector<ProcEdge>& edges,
                                            const std::vector<int>& tags) const {
  std::vector<EvWaitEdge> out;
  for (int t : tags) {
    if (out.size() >= kMaxChain) break;
    const ProcEdge& e = edges[t];
    out.push_back(
        EvWaitEdge{m.proc(e.from).global_rank, m.proc(e.to).global_rank, ev_comm(*e.comm), ev_op(e.e.op), e.e.why});
  }
  return out;
}

std::vector<EvCommState> HangDetector::comm_states(const Model& m, const std::vector<const Comm*>& comms,
                                                   int64_t now_ns) const {
  std::vector<EvCommState> out;
  for (const Comm* c : comms) {
    if (out.size() >= kMaxCommStates) break;
    auto it = waits_.find(c->key);
    if (it == waits_.end()) continue;
    const CommWaits& w = it->second;
    EvCommState cs{ev_comm(*c), w.cls, ev_op(w.op), to_ms(now_ns - c->last_progress_ns), 0, {}};
    int listed = 0;
    for (int r = 0; r < int(w.ranks.size()); ++r) {
      const RankWaitState& rs = w.ranks[r];
      bool usual = rs.state == "running" && rs.op == w.op;
      cs.waiting_in_op += usual;
      if (int(w.ranks.size()) > kMaxRanksListed && usual) continue;  // large comms: list the odd ones
      if (listed++ >= kMaxRanksListed) continue;
      int proc = c->ranks[r].proc;
      EvRankState j{proc >= 0 ? m.proc(proc).global_rank : -1, r, rs.state, std::nullopt, std::nullopt};
      if (rs.state != "idle") j.op = ev_op(rs.op);
      bool issued = has_issued(*c, w.op, r);
      if (!issued) j.state = rs.state == "idle" ? "absent" : rs.state;
      const OpMark& lc = c->ranks[r].last_completed;
      if (lc.valid) j.last_completed = ev_op(lc.id);
      cs.ranks.push_back(std::move(j));
    }
    out.push_back(std::move(cs));
  }
  return out;
}

void HangDetector::report_deadlock(const Model& m, const std::vector<int>& cycle, const WaitGraph& g,
                                   const std::vector<ProcEdge>& edges, int64_t now_ns, FindingBoard& board) {
  std::vector<int> tags = g.edges_within(cycle);
  Finding f;
  f.kind = FindingKind::kDeadlock;
  f.verdict = Verdict::kAttributed;
  std::string ranks;
  for (int p : cycle) {
    f.suspects.push_back(suspect_of(m, p));
    ranks += (ranks.empty() ? "" : ",") + std::to_string(m.proc(p).global_rank);
  }
  std::vector<const Comm*> comms;
  int64_t since = now_ns;
  std::string words;
  for (int t : tags) {
    const ProcEdge& e = edges[t];
    if (std::find(comms.begin(), comms.end(), e.comm) == comms.end()) comms.push_back(e.comm);
    since = std::min(since, e.comm->last_progress_ns);
    if (!words.empty()) words += "; ";
    words += who(m, e.from) + " waits for rank " + std::to_string(m.proc(e.to).global_rank) + " in " +
             what_op(*e.comm, e.e.op);
  }
  const ProcEdge& first = edges[tags.front()];
  set_comm(f, *first.comm);
  f.key = op_key(first.e.op);
  std::string ops;
  for (const Comm* c : comms) ops += ":" + hex64(c->key.hash);
  f.dedup_key = "deadlock:" + ranks + ops;
  f.first_seen_ns = since;
  f.last_seen_ns = now_ns;
  f.evidence = to_json(DeadlockEvidence{chain(m, edges, tags), comm_states(m, comms, now_ns), to_ms(now_ns - since),
                                        to_ms(cfg_.timeout_ns)});
  f.summary = "deadlock across " + std::to_string(comms.size()) + " communicators: " + words;
  board.report(f);
  reported_.insert(f.dedup_key);
  track(f.dedup_key, comms, "hung");
}

bool HangDetector::sequence_deadlock(const Model& m, const std::vector<int>& cycle, const WaitGraph& g,
                                     const std::vector<ProcEdge>& edges, int64_t now_ns, FindingBoard& board) {
  if (!seq_) return false;
  std::vector<int> tags = g.edges_within(cycle);
  std::vector<const Comm*> comms;
  int64_t since = now_ns;
  for (int t : tags) {
    if (std::find(comms.begin(), comms.end(), edges[t].comm) == comms.end()) comms.push_back(edges[t].comm);
    since = std::min(since, edges[t].comm->last_progress_ns);
  }
  HangEvidence h;
  h.cls = "deadlock";
  h.stalled_ms = to_ms(now_ns - since);
  h.last_progress_ns = since;
  h.timeout_ms = to_ms(cfg_.timeout_ns);
  h.chain = chain(m, edges, tags);
  h.comms = comm_states(m, comms, now_ns);
  if (seq_->fold(m, comms, h, now_ns, board)) return true;
  for (const Comm* c : comms) {
    if (seq_->frozen(m, *c, waits_.at(c->key), h, now_ns, board)) return true;
  }
  return false;
}

void HangDetector::report_stuck(const Model& m, const Comm& c, const WaitGraph& g, const std::vector<ProcEdge>& edges,
                                int64_t now_ns, FindingBoard& board, bool stall) {
  const CommWaits& w = waits_.at(c.key);
  const std::string key = hang_key(c, w.op);
  // A hang already named stays a hang until its communicator progresses.
  if (stall && !w.meta_disagrees) {
    const Finding* old = board.find(key);
    if (old && old->open && old->kind == FindingKind::kHang) return;
  }
  std::set<int> upstream;
  std::vector<int> tags;
  for (int r : w.waiting) {
    int p = c.ranks[r].proc;
    for (int u : g.upstream_nodes(p)) upstream.insert(u);
    for (int t : g.upstream_edges(p)) tags.push_back(t);
  }
  std::vector<const Comm*> comms{&c};
  add_comms(edges, tags, &comms);
  HangEvidence hang;
  hang.cls = "stuck";
  EvHangRoot root;
  root.reason = "stuck";
  root.comm = ev_comm(c);
  root.op = ev_op(w.op);
  hang.root = std::vector<EvHangRoot>{root};
  // Where it stopped (stuck_trace.h).
  StuckVerdict sv = trace_stuck(m, c, w.op);
  if (auto t = traces_.find(c.key); t != traces_.end()) {
    sv.trace.requested_ns = t->second;
    int acked = 0;
    for (int r : c.known_ranks) {
      const int p = c.ranks[r].proc;
      if (p < 0) continue;
      const shm::ProgressTableInfo& pi = m.proc(p).progress_info;
      acked += m.proc(p).has_progress && pi.trace_comm_hash == c.key.hash && pi.ack_ns >= t->second;
    }
    sv.trace.acked = acked;
  }
  hang.trace = sv.trace;
  hang.stalled_ms = to_ms(now_ns - c.last_progress_ns);
  hang.last_progress_ns = c.last_progress_ns;
  hang.timeout_ms = to_ms(cfg_.timeout_ns);
  hang.waiting_ranks = global_ranks(m, c, w.waiting);
  hang.blocked_elsewhere.emplace();
  for (int p : upstream) hang.blocked_elsewhere->push_back(m.proc(p).global_rank);
  std::sort(hang.blocked_elsewhere->begin(), hang.blocked_elsewhere->end());
  hang.chain = chain(m, edges, tags);
  hang.comms = comm_states(m, comms, now_ns);

  if (w.meta_disagrees) {
    // Ranks entered the same collective with different arguments: the desync is the cause.
    auto it = c.ops.find(w.op);
    if (it == c.ops.end()) return;
    MetaOutcome meta = check_metadata(it->second);
    auto f = desync_finding(m, c, it->second, meta, now_ns);
    if (!f) return;
    DesyncEvidence ev;
    const Finding* old = board.find(f->dedup_key);
    if (!old || !read_evidence(old->evidence, &ev)) read_evidence(f->evidence, &ev);
    ev.hang = hang;
    f->evidence = to_json(ev);
    f->summary += "; the collective is stuck for " + seconds(now_ns - c.last_progress_ns);
    board.report(*f);
    return;
  }
  // The episode: its signature is the communicator and the stuck operation's function, with the
  // ranks inside it as the roots.
  std::vector<int> inside = *hang.waiting_ranks;
  std::sort(inside.begin(), inside.end());
  StallSignature sig{c.key.hash, c.key.nranks, shm::func_name(w.op.func), inside};
  const int64_t threshold = stall_threshold(c.key);
  const Episode* ep = note_episode(key, sig, c.last_progress_ns, stall, threshold, now_ns);
  if (!ep) return;  // a pause seen before: not again
  Finding f;
  f.kind = stall ? FindingKind::kStall : FindingKind::kHang;
  f.verdict = sv.suspects.empty() ? Verdict::kInconclusive : Verdict::kAttributed;
  for (int p : sv.suspects) f.suspects.push_back(suspect_of(m, p, rank_of(c, p)));
  set_comm(f, c);
  f.key = op_key(w.op);
  f.dedup_key = key;
  f.first_seen_ns = c.last_progress_ns;
  f.last_seen_ns = now_ns;
  if (ep->named_ns > 0) hang.stall = EvStallNote{ep->named_ns, ep->threshold_ms};
  if (stall) {
    StallEvidence st = stall_evidence(hang, c.key, *ep, sig, threshold);
    st.blocked_elsewhere = hang.blocked_elsewhere;
    st.trace = hang.trace;
    f.evidence = to_json(st);
  } else {
    f.evidence = to_json(hang);
  }
  f.summary =
      what_op(c, w.op) + " is stuck: " + std::to_string(w.waiting.size()) + " ranks started it and none completed";
  if (!stall) f.summary += " for " + seconds(now_ns - c.last_progress_ns);
  f.summary += stuck_words(m, sv);
  if (!upstream.empty()) f.summary += "; " + std::to_string(upstream.size()) + " more ranks wait on them";
  if (stall) f.summary += stall_words(now_ns - c.last_progress_ns, threshold);
  board.report(f);
  reported_.insert(f.dedup_key);
  track(f.dedup_key, {&c}, stall ? "stalled" : "hung");
}

void HangDetector::report_mismatch(const Model& m, const Comm& c, const WaitGraph& g,
                                   const std::vector<ProcEdge>& edges, int64_t now_ns, FindingBoard& board) {
  const CommWaits& w = waits_.at(c.key);
  const VoteResult<OpId>& v = w.frontier_vote;
  Finding f;
  f.kind = FindingKind::kDesync;
  f.verdict = v.verdict == VoteVerdict::kAttributed ? Verdict::kAttributed : Verdict::kInconclusive;
  set_comm(f, c);
  f.key = op_key(w.op);
  f.dedup_key = desync_key(c, w.op);
  f.first_seen_ns = c.last_progress_ns;
  f.last_seen_ns = now_ns;
  std::vector<EvVoteGroup<std::optional<EvOp>>> votes;
  for (const auto& grp : v.groups) {
    std::optional<EvOp> value;
    if (grp.value != kIdleOp) value = ev_op(grp.value);
    votes.push_back({value, global_ranks(m, c, grp.voters), grp.voters});
  }
  std::vector<int> tags;
  for (int d : v.dissenters) {
    for (int t : g.upstream_edges(c.ranks[d].proc)) tags.push_back(t);
  }
  std::vector<const Comm*> comms{&c};
  add_comms(edges, tags, &comms);
  HangEvidence hang;
  hang.cls = "mismatch";
  hang.stalled_ms = to_ms(now_ns - c.last_progress_ns);
  hang.last_progress_ns = c.last_progress_ns;
  hang.timeout_ms = to_ms(cfg_.timeout_ns);
  hang.chain = chain(m, edges, tags);
  hang.comms = comm_states(m, comms, now_ns);
  DesyncEvidence ev;
  const Finding* old = board.find(f.dedup_key);
  if (!old || !read_evidence(old->evidence, &ev)) {
    ev = DesyncEvidence{};
    ev.source = "hang";
    ev.op = ev_op(w.op);
  }
  ev.frontier_votes = std::move(votes);
  ev.hang = std::move(hang);
  f.evidence = to_json(ev);
  if (f.verdict == Verdict::kAttributed) {
    std::string names;
    for (int d : v.dissenters) {
      f.suspects.push_back(suspect_of(m, c, d));
      const RankWaitState& rs = w.ranks[d];
      names += (names.empty() ? "" : "; ") + who(m, c, d) +
               (rs.state == "idle" ? " is in no collective" : " is in " + describe(rs.op));
    }
    f.summary = names + " while " + std::to_string(v.groups[0].voters.size()) + " ranks wait in " + what_op(c, w.op) +
                " (ranks disagree on the next collective; stuck for " + seconds(now_ns - c.last_progress_ns) + ")";
  } else {
    f.summary = "ranks of " + comm_label(c) + " wait in different collectives with no majority (" +
                std::to_string(v.groups.size()) + " different ones; stuck for " + seconds(now_ns - c.last_progress_ns) +
                ")";
  }
  board.report(f);
}

const HangDetector::Episode* HangDetector::note_episode(const std::string& key, const StallSignature& sig,
                                                        int64_t start_ns, bool stall, int64_t threshold_ns,
                                                        int64_t now_ns) {
  auto [it, added] = episodes_.try_emplace(key);
  Episode& ep = it->second;
  if (added) {
    ep.sig = sig;
    ep.start_ns = start_ns;
  }
  ep.seen = true;
  if (!stall) {
    ep.became_hang = true;
  } else if (ep.named_ns == 0) {
    if (memory_.is_repeat(sig, now_ns - ep.start_ns)) return nullptr;
    ep.named_ns = now_ns;
    ep.threshold_ms = to_ms(threshold_ns);
  }
  return &ep;
}

StallEvidence HangDetector::stall_evidence(const HangEvidence& h, const CommKey& trigger, const Episode& ep,
                                           const StallSignature& sig, int64_t threshold_ns) const {
  StallEvidence st;
  st.cls = h.cls;
  st.root = h.root.value_or(std::vector<EvHangRoot>{});
  st.stalled_ms = h.stalled_ms;
  st.last_progress_ns = h.last_progress_ns;
  st.threshold_ms = to_ms(threshold_ns);
  st.timeout_ms = h.timeout_ms;
  auto clk = clocks_.find(trigger);
  const StallClock none;
  const StallClock& c = clk == clocks_.end() ? none : clk->second;
  auto b = bases_.find(trigger);
  const ColdBasis basis = b == bases_.end() ? ColdBasis{} : b->second;
  st.rule = EvStallRule{int(c.gaps()),
                        to_ms(c.p99_ns()),
                        kStallMargin,
                        to_ms(kStallFloorNs),
                        to_ms(std::min(kStallColdNs, cfg_.timeout_ns)),
                        int(kStallMinGaps),
                        c.basis(basis),
                        std::nullopt,
                        std::nullopt};
  if (c.cold() && basis.held_max_ns > 0) st.rule.held_ms = to_ms(basis.held_max_ns);
  if (c.cold() && basis.class_ns > 0) st.rule.class_ms = to_ms(basis.class_ns);
  st.named_ns = ep.named_ns;
  if (int64_t l = memory_.longest_ns(sig); l > 0) st.earlier_ms = to_ms(l);
  st.waiting_ranks = h.waiting_ranks.value_or(std::vector<int>{});
  st.chain = h.chain;
  st.comms = h.comms;
  return st;
}

std::string HangDetector::stall_words(int64_t idle_ns, int64_t threshold_ns) const {
  return " (no progress for " + seconds(idle_ns) + ", beyond its stall threshold of " + seconds(threshold_ns) +
         "; a hang at " + seconds(cfg_.timeout_ns) + ")";
}

StallSignature HangDetector::signature_of(const Model& m, const std::vector<int>& roots) const {
  std::vector<int> root_ranks;
  for (int p : roots) root_ranks.push_back(m.proc(p).global_rank);
  std::sort(root_ranks.begin(), root_ranks.end());
  StallSignature sig{0, 0, "", root_ranks};
  int64_t latest = 0;
  if (auto mit = member_of_.find(roots.front()); mit != member_of_.end()) {
    for (const Membership& mb : mit->second) {
      const OpMark& lc = mb.comm->ranks[mb.rank].last_completed;
      if (!lc.valid || lc.ns < latest) continue;
      latest = lc.ns;
      sig.comm_hash = mb.comm->key.hash;
      sig.comm_nranks = mb.comm->key.nranks;
      sig.func = shm::func_name(lc.id.func);
      if (lc.id.cls == OpClass::kP2p) sig.func += ":" + std::to_string(lc.id.src) + ">" + std::to_string(lc.id.dst);
    }
  }
  return sig;
}

const Comm* HangDetector::stall_trigger(const std::vector<int>& roots, const std::vector<ProcEdge>& edges,
                                        const Comm& c) const {
  const Comm* trigger = nullptr;
  for (int t = 0; t < int(edges.size()); ++t) {
    if (std::find(roots.begin(), roots.end(), edges[t].to) == roots.end() || !soft_.count(edges[t].comm->key)) continue;
    if (!trigger || stall_threshold(edges[t].comm->key) < stall_threshold(trigger->key)) trigger = edges[t].comm;
  }
  return trigger ? trigger : &c;
}

std::string HangDetector::root_summary(const Model& m, const std::vector<int>& roots, const std::string& names,
                                       const std::string& reason, const std::string& detail, const std::string& op,
                                       const std::string& waiters) const {
  if (reason == "wrong-comm") {
    const ProcEdge& e = edges_[wrong_comm_.at(roots.front()).first];
    return names + " never entered " + op + ": it waits in " + detail + ", which rank " +
           std::to_string(m.proc(e.to).global_rank) + " never issued there (a call on the wrong communicator); " +
           waiters + " for it";
  }
  if (reason == "in-call")
    return names + " never entered " + op + ": it is inside " + detail + "; " + waiters + " for it";
  if (reason == "gpu-blocked")
    return names + " enqueued " + op + " but the GPU never started it; " + waiters + " for it";
  if (reason == "running") return names + " never joined " + op + " (busy in " + detail + "); " + waiters + " for it";
  return names + " never entered " + op + "; " + waiters + " for it";
}

void HangDetector::report_root(const Model& m, const std::vector<int>& roots, const ProcEdge& primary,
                               const WaitGraph& g, const std::vector<ProcEdge>& edges, int64_t now_ns,
                               FindingBoard& board, bool stall) {
  const Comm& c = *primary.comm;
  std::string key = hang_key(c, primary.e.op);
  const Finding* old = board.find(key);
  bool all_dead = true;
  for (int p : roots) all_dead &= m.proc(p).state == ProcState::kDead;
  // A hang already named stays a hang until its communicators progress.
  if (stall && old && old->open && old->kind == FindingKind::kHang) return;
  // A wait in a communicator that progressed within the stall floor is a rank catching up after a
  // pause while the others' communicators have not moved yet: no stall.
  if (stall && now_ns - c.last_progress_ns < kStallFloorNs) return;
  // A root dead before it was named is a crash (the stall leaves it to the grace check below); one
  // that died after its stall or hang was reported stays that finding.
  if (all_dead && !board.is_open(key)) {
    if (!stall) {
      for (int p : roots) report_crash(m, p, primary, g, edges, now_ns, board);
    }
    return;
  }
  std::set<int> upstream;
  std::vector<int> tags;
  for (int p : roots) {
    for (int u : g.upstream_nodes(p)) upstream.insert(u);
    for (int t : g.upstream_edges(p)) tags.push_back(t);
  }
  std::vector<const Comm*> comms{&c};
  add_comms(edges, tags, &comms);
  // Stall: the signature, and whether this is a repeat of a pause the job has shown before.
  const StallSignature sig = signature_of(m, roots);
  const Comm* trigger = stall_trigger(roots, edges, c);
  const int64_t threshold = stall_threshold(trigger->key);
  const Episode* ep = note_episode(key, sig, c.last_progress_ns, stall, threshold, now_ns);
  if (!ep) return;  // a pause seen before: not again
  Finding f;
  f.kind = stall ? FindingKind::kStall : FindingKind::kHang;
  f.verdict = Verdict::kAttributed;
  set_comm(f, c);
  f.key = op_key(primary.e.op, primary.e.to);
  f.dedup_key = key;
  f.first_seen_ns = c.last_progress_ns;
  f.last_seen_ns = now_ns;
  HangEvidence ev;
  ev.cls = "absent";
  ev.root.emplace();
  std::string names, first_reason, first_detail;
  for (int p : roots) {
    std::string detail;
    std::string reason = root_reason(m, p, &detail, stall ? soft_ : stalled_);
    if (first_reason.empty()) {
      first_reason = reason;
      first_detail = detail;
    }
    f.suspects.push_back(suspect_of(m, p, rank_of(c, p)));
    EvHangRoot root;
    root.global_rank = m.proc(p).global_rank;
    root.reason = reason;
    root.detail = detail;
    root.process = to_string(m.proc(p).state);
    if (auto wc = wrong_comm_.find(p); wc != wrong_comm_.end()) {
      const ProcEdge& e = edges_[wc->second.first];
      root.comm = ev_comm(*e.comm);
      root.op = ev_op(e.e.op);
    }
    ev.root->push_back(std::move(root));
    names += (names.empty() ? "" : ", ") + who(m, p);
  }
  ev.stalled_ms = to_ms(now_ns - c.last_progress_ns);
  ev.last_progress_ns = c.last_progress_ns;
  ev.timeout_ms = to_ms(cfg_.timeout_ns);
  ev.waiting_ranks.emplace();
  for (int p : upstream) ev.waiting_ranks->push_back(m.proc(p).global_rank);
  std::sort(ev.waiting_ranks->begin(), ev.waiting_ranks->end());  // ascending, however processes were numbered
  ev.chain = chain(m, edges, tags);
  ev.comms = comm_states(m, comms, now_ns);
  if (seq_ && seq_->fold(m, comms, ev, now_ns, board)) return;  // follows from a sequence desync
  if (ep->named_ns > 0) ev.stall = EvStallNote{ep->named_ns, ep->threshold_ms};
  if (stall) {
    f.evidence = to_json(stall_evidence(ev, trigger->key, *ep, sig, threshold));
  } else {
    f.evidence = to_json(ev);
  }
  std::string op = what_op(c, primary.e.op);
  std::string waiters = std::to_string(upstream.size()) + (upstream.size() == 1 ? " rank waits" : " ranks wait");
  if (comms.size() > 1) waiters += " (through " + std::to_string(comms.size()) + " communicators)";
  f.summary = root_summary(m, roots, names, first_reason, first_detail, op, waiters);
  if (all_dead) f.summary += " (the process has since exited)";
  if (stall) f.summary += stall_words(now_ns - c.last_progress_ns, threshold);
  board.report(f);
  reported_.insert(f.dedup_key);
  track(f.dedup_key, {primary.comm}, stall ? "stalled" : "hung");
}

void HangDetector::report_crash(const Model& m, int proc, const ProcEdge& primary, const WaitGraph& g,
                                const std::vector<ProcEdge>& edges, int64_t now_ns, FindingBoard& board) {
  const Proc& p = m.proc(proc);
  const Comm& c = *primary.comm;
  Finding f;
  f.kind = FindingKind::kCrash;
  f.verdict = Verdict::kAttributed;
  f.suspects.push_back(suspect_of(m, proc, rank_of(c, proc)));
  set_comm(f, c);
  f.key = op_key(primary.e.op, primary.e.to);
  f.dedup_key = "crash:" + p.host + ":" + std::to_string(p.pid);
  f.first_seen_ns = p.last_event_ns > 0 ? p.last_event_ns : now_ns;
  f.last_seen_ns = now_ns;
  CrashEvidence ev;
  auto mit = member_of_.find(proc);
  if (mit != member_of_.end()) {
    for (const Membership& mb : mit->second) {
      for (const auto& [idx, id] : mb.comm->ranks[mb.rank].inflight) {
        auto it = mb.comm->ops.find(id);
        std::string state = "unknown";
        if (it != mb.comm->ops.end()) {
          if (const OpSlot* s = it->second.slot(it->second.index_of(mb.rank))) {
            state = shm::op_state_name(s->rec.state);
          }
        }
        ev.open_ops.push_back(EvOpenOp{ev_comm(*mb.comm), ev_op(id), state});
      }
    }
  }
  std::vector<int> upstream = g.upstream_nodes(proc);
  std::vector<int> tags = g.upstream_edges(proc);
  for (int u : upstream) ev.waiting_ranks.push_back(m.proc(u).global_rank);
  std::sort(ev.waiting_ranks.begin(), ev.waiting_ranks.end());
  ev.pid = p.pid;
  ev.host = p.host;
  ev.finalized = false;
  ev.last_event_ns = p.last_event_ns;
  ev.gone_ns = p.gone_ns;
  ev.chain = chain(m, edges, tags);
  f.evidence = to_json(ev);
  f.summary = who(m, proc) + " died without finalizing NCCL; " + std::to_string(upstream.size()) +
              (upstream.size() == 1 ? " rank waits" : " ranks wait") + " for it in " + what_op(c, primary.e.op);
  board.report(f);
  crashed_.insert(proc);
}

void HangDetector::pass(const Model& m, int64_t now_ns, FindingBoard& board) {
  waits_.clear();
  stalled_.clear();
  soft_.clear();
  member_of_.clear();
  member_of_.reserve(m.procs().size());
  reported_.clear();
  wrong_comm_.clear();
  for (auto& [k, ep] : episodes_) ep.seen = false;
  PassGraph pg = collect_waits(m, now_ns);
  const std::set<int> in_cycle = report_deadlocks(m, pg, now_ns, board);
  report_stalled_comms(m, pg, now_ns, board);
  report_roots(m, pg, in_cycle, now_ns, board);
  report_crashes(m, pg, now_ns, board);
  close_over(m, now_ns, board);
}

HangDetector::PassGraph HangDetector::collect_waits(const Model& m, int64_t now_ns) {
  // Every current wait edge; which of them belong to stalled communicators.
  PassGraph pg;
  for (const auto& [k, c] : m.comms()) {
    if (!c.members_known()) continue;
    bool inflight = false;
    for (const RankProgress& r : c.ranks) inflight = inflight || !r.inflight.empty();
    clocks_[k].observe(c.last_progress_ns, inflight);
    if (auto gv = given_.find(k); gv != given_.end()) clocks_[k] = gv->second;
  }
  // Clocks of communicators that left the model.
  for (auto it = clocks_.begin(); it != clocks_.end();)
    it = m.comms().count(it->first) ? std::next(it) : clocks_.erase(it);
  // Thresholds in force this pass; a cold clock's rests on its class and its own operations.
  bases_ = cold_bases(
      m,
      [&](const CommKey& k) -> const StallClock* {
        auto it = clocks_.find(k);
        return it == clocks_.end() ? nullptr : &it->second;
      },
      cfg_.timeout_ns);
  thresholds_.clear();
  for (const auto& [k, clk] : clocks_) {
    auto b = bases_.find(k);
    thresholds_[k] = clk.threshold_ns(cfg_.timeout_ns, b == bases_.end() ? ColdBasis{} : b->second);
  }
  trace_wanted_.clear();
  for (const auto& [k, c] : m.comms()) {
    if (!c.members_known()) continue;
    for (int r = 0; r < int(c.ranks.size()); ++r) member_of_[c.ranks[r].proc].push_back(Membership{&c, r});
    CommWaits w = analyze_waits(c, &m);
    if (w.cls != "stuck") traces_.erase(k);
    if (w.cls.empty()) continue;
    int64_t idle = now_ns - c.last_progress_ns;
    if (w.cls == "stuck" && idle >= kTraceAfterNs && !traces_.count(k)) trace_wanted_.push_back(k);
    bool stalled = idle > cfg_.timeout_ns;
    bool soft = !stalled && cfg_.stall && idle > stall_threshold(k);
    for (const WaitEdge& e : w.edges) {
      pg.g.add(c.ranks[e.from].proc, c.ranks[e.to].proc, int(pg.edges.size()));
      pg.edges.push_back(ProcEdge{c.ranks[e.from].proc, c.ranks[e.to].proc, &c, e});
      pg.stalled_edge.push_back(stalled);
      pg.soft_edge.push_back(soft);
    }
    if (stalled) stalled_.insert(k);
    if (stalled || soft) soft_.insert(k);
    waits_.emplace(k, std::move(w));
  }
  edges_ = pg.edges;
  return pg;
}

std::set<int> HangDetector::report_deadlocks(const Model& m, PassGraph& pg, int64_t now_ns, FindingBoard& board) {
  // Deadlocks: cycles whose every edge is in a communicator past its stall threshold or the hang
  // timeout (a cycle seen in a single snapshot could be an artefact of reading ranks at slightly
  // different moments; one that held for the communicators' learned threshold is not: ranks that
  // wait for each other never progress again).
  std::set<int> in_cycle;
  std::set<int> cut;  // edges of wrong-communicator cycles: the rank in the wrong one is a root
  for (const auto& cyc : pg.g.cycles()) {
    bool all_stalled = true;
    for (int t : pg.g.edges_within(cyc)) all_stalled = all_stalled && (pg.stalled_edge[t] || pg.soft_edge[t]);
    if (!all_stalled) continue;
    if (wrong_comm_cycle(cyc, pg.g, pg.edges)) {
      for (const auto& [proc, tags] : wrong_comm_)
        if (std::find(cyc.begin(), cyc.end(), proc) != cyc.end()) cut.insert(tags.first);
      continue;
    }
    if (!sequence_deadlock(m, cyc, pg.g, pg.edges, now_ns, board))
      report_deadlock(m, cyc, pg.g, pg.edges, now_ns, board);
    in_cycle.insert(cyc.begin(), cyc.end());
  }
  if (!cut.empty()) {
    WaitGraph without;
    for (size_t t = 0; t < pg.edges.size(); ++t)
      if (!cut.count(int(t))) without.add(pg.edges[t].from, pg.edges[t].to, int(t));
    pg.g = std::move(without);
  }
  return in_cycle;
}

void HangDetector::report_stalled_comms(const Model& m, const PassGraph& pg, int64_t now_ns, FindingBoard& board) {
  // Communicators that are roots by themselves, past their stall threshold or the hang timeout:
  // a stuck collective is a stall, then the hang; a mismatch is the desync at once.
  for (const CommKey& k : soft_) {
    const bool stall = !stalled_.count(k);
    const CommWaits& w = waits_.at(k);
    const Comm& c = m.comms().at(k);
    if (seq_ && seq_->diverged(k) && (w.cls == "stuck" || w.cls == "mismatch")) {
      HangEvidence h;
      h.cls = w.cls;
      h.stalled_ms = to_ms(now_ns - c.last_progress_ns);
      h.last_progress_ns = c.last_progress_ns;
      h.timeout_ms = to_ms(cfg_.timeout_ns);
      h.comms = comm_states(m, {&c}, now_ns);
      seq_->fold(m, {&c}, h, now_ns, board);
      continue;
    }
    if (w.cls == "stuck") report_stuck(m, c, pg.g, pg.edges, now_ns, board, stall);
    if (w.cls == "mismatch") report_mismatch(m, c, pg.g, pg.edges, now_ns, board);
  }
}

HangDetector::RootGroups HangDetector::group_roots(const Model& m, const PassGraph& pg, const std::set<int>& roots,
                                                   const std::set<CommKey>& stalled_set,
                                                   const FindingBoard& board) const {
  RootGroups groups;
  const std::vector<ProcEdge>& edges = pg.edges;
  FirstEnqueue first;
  for (int s : roots) {
    std::string detail;
    std::string reason = root_reason(m, s, &detail, stalled_set);
    if (reason == "stuck" || reason == "desync") continue;         // reported with their communicator
    if (cfg_.defer_cross_node && waits_elsewhere(m, s)) continue;  // the leader decides
    // The operation `s` is missing from that its peers reached first; one that is already an
    // open stall or hang keeps its finding (the edges of a stopped job appear over a few passes).
    int best = -1;
    bool best_open = false;
    const NextCalls next(m.proc(s));
    if (auto wc = wrong_comm_.find(s); wc != wrong_comm_.end()) best = wc->second.second;  // its peer's wait
    for (size_t t = 0; t < edges.size() && !wrong_comm_.count(s); ++t) {
      if (edges[t].to != s) continue;
      bool open = board.is_open(hang_key(*edges[t].comm, edges[t].e.op));
      if (best < 0 || (open && !best_open) ||
          (open == best_open &&
           earlier(next, first, *edges[t].comm, edges[t].e.op, *edges[best].comm, edges[best].e.op))) {
        best = int(t);
        best_open = open;
      }
    }
    if (best < 0) continue;
    auto& grp = groups[hang_key(*edges[best].comm, edges[best].e.op)];
    if (grp.second.empty()) grp.first = best;
    grp.second.push_back(s);
  }
  return groups;
}

void HangDetector::report_roots(const Model& m, const PassGraph& pg, const std::set<int>& in_cycle, int64_t now_ns,
                                FindingBoard& board) {
  // Roots: ranks downstream of a stalled wait that wait for nobody. Grouped by the operation they
  // are missing from (the one whose communicator stalled first).
  // Stall roots: reached only through communicators past their stall threshold.
  std::set<int> roots, soft_roots;
  std::vector<int> hard_from, soft_from;  // one walk each, however many edges (131,072 ranks' waits)
  for (size_t t = 0; t < pg.edges.size(); ++t) {
    if (pg.stalled_edge[t]) {
      hard_from.push_back(pg.edges[t].from);
    } else if (pg.soft_edge[t]) {
      soft_from.push_back(pg.edges[t].from);
    }
  }
  for (int v : pg.g.downstream_nodes(hard_from)) {
    if (!pg.g.waits(v) && !in_cycle.count(v)) roots.insert(v);
  }
  for (int v : pg.g.downstream_nodes(soft_from)) {
    if (!pg.g.waits(v) && !in_cycle.count(v)) soft_roots.insert(v);
  }
  for (int v : roots) soft_roots.erase(v);
  const RootGroups hangs = group_roots(m, pg, roots, stalled_, board);
  for (const auto& [key, grp] : hangs) report_root(m, grp.second, pg.edges[grp.first], pg.g, pg.edges, now_ns, board);
  for (const auto& [key, grp] : group_roots(m, pg, soft_roots, soft_, board)) {
    if (!hangs.count(key)) report_root(m, grp.second, pg.edges[grp.first], pg.g, pg.edges, now_ns, board, true);
  }
}

void HangDetector::report_crashes(const Model& m, const PassGraph& pg, int64_t now_ns, FindingBoard& board) {
  // Dead processes that peers wait for and that wait for nobody: a crash after the grace period,
  // without waiting for the hang timeout.
  const std::vector<ProcEdge>& edges = pg.edges;
  FirstEnqueue first;
  for (const Proc& p : m.procs()) {
    int primary = -1;
    if (p.state == ProcState::kDead && !pg.g.waits(p.id)) {
      const NextCalls next(p);
      for (size_t t = 0; t < edges.size(); ++t) {
        if (edges[t].to == p.id && (primary < 0 || earlier(next, first, *edges[t].comm, edges[t].e.op,
                                                           *edges[primary].comm, edges[primary].e.op))) {
          primary = int(t);
        }
      }
    }
    if (primary < 0) {
      blocking_since_.erase(p.id);
      continue;
    }
    auto [it, added] = blocking_since_.try_emplace(p.id, now_ns);
    // A root already named by an open hang or stall (under any operation it is missing from) that
    // dies, or is killed with the job, stays that finding: not a crash as well.
    bool hang_open = false;
    for (size_t t = 0; t < edges.size() && !hang_open; ++t)
      hang_open = edges[t].to == p.id && board.is_open(hang_key(*edges[t].comm, edges[t].e.op));
    bool grace = now_ns - it->second >= cfg_.crash_grace_ns ||
                 (p.last_event_ns > 0 && now_ns - p.last_event_ns >= cfg_.crash_grace_ns);
    if (!hang_open && (crashed_.count(p.id) || grace))
      report_crash(m, p.id, edges[primary], pg.g, edges, now_ns, board);
  }
}

void HangDetector::close_over(const Model& m, int64_t now_ns, FindingBoard& board) {
  // Hangs and deadlocks that are over: one of their communicators completed an operation since,
  // finalized, or left the model. One whose waiters vanished without progress (the job was killed
  // while hung) stays open: the failure was never resolved (docs/findings.md, "hang").
  for (const std::string& k : open_) {
    if (reported_.count(k)) continue;
    bool over = true;
    if (auto it = involved_.find(k); it != involved_.end()) {
      over = false;
      for (const auto& [key, mark] : it->second) {
        auto c = m.comms().find(key);
        over = over || c == m.comms().end() || c->second.finalized() || progress_mark(c->second) > mark;
      }
    }
    if (over) {
      board.close(k, now_ns);
      involved_.erase(k);
      words_.erase(k);
      // A stall that ended before the timeout: a pause the job may show again.
      if (auto e = episodes_.find(k); e != episodes_.end()) {
        if (e->second.named_ns > 0 && !e->second.became_hang)
          memory_.remember(e->second.sig, now_ns - e->second.start_ns);
        episodes_.erase(e);
      }
    } else {
      reported_.insert(k);
      refresh_roots(m, k, board);
    }
  }
  open_ = reported_;
  // Suppressed repeats that ended are remembered too; episodes of findings no longer open go.
  for (auto it = episodes_.begin(); it != episodes_.end();) {
    const Episode& e = it->second;
    if (e.seen || open_.count(it->first)) {
      ++it;
      continue;
    }
    if (e.named_ns == 0 && !e.became_hang) memory_.remember(e.sig, now_ns - e.start_ns);
    it = episodes_.erase(it);
  }
}

bool HangDetector::wrong_comm_cycle(const std::vector<int>& cycle, const WaitGraph& g,
                                    const std::vector<ProcEdge>& edges) {
  std::vector<int> tags = g.edges_within(cycle);
  if (cycle.size() != 2 || tags.size() != 2) return false;
  const ProcEdge& a = edges[tags[0]];
  const ProcEdge& b = edges[tags[1]];
  if (a.comm == b.comm || a.e.why != "absent" || b.e.why != "absent") return false;
  if (a.e.op.cls != OpClass::kP2p || b.e.op.cls != OpClass::kP2p) return false;
  const bool a_first = a.e.op.seq == 0, b_first = b.e.op.seq == 0;
  if (a_first == b_first) return false;
  const int novel = a_first ? tags[0] : tags[1];
  const int other = a_first ? tags[1] : tags[0];
  wrong_comm_[edges[novel].from] = {novel, other};
  return true;
}

int64_t HangDetector::stall_pending(const Model& m) const {
  int64_t due = 0;
  if (!cfg_.stall) return due;
  for (const auto& [k, w] : waits_) {
    auto c = m.comms().find(k);
    if (c == m.comms().end() || soft_.count(k) || stall_threshold(k) >= cfg_.timeout_ns) continue;
    const int64_t t = c->second.last_progress_ns + stall_threshold(k) + 1;  // "longer than" the threshold
    if (due == 0 || t < due) due = t;
  }
  return due;
}

void HangDetector::refresh_roots(const Model& m, const std::string& key, FindingBoard& board) const {
  const Finding* f = board.find(key);
  if (!f || !f->open || !f->evidence.contains("root") || !f->evidence["root"].is_array()) return;
  Finding g = *f;
  bool changed = false, all_dead = !g.evidence["root"].empty();
  for (nlohmann::json& r : g.evidence["root"]) {
    if (!r.contains("process") || !r.contains("global_rank") || !r["global_rank"].is_number_integer()) {
      all_dead = false;
      continue;
    }
    const int rank = r["global_rank"].get<int>();
    for (const Proc& p : m.procs()) {
      if (p.global_rank != rank) continue;
      if (r["process"] != to_string(p.state)) {
        r["process"] = to_string(p.state);
        changed = true;
      }
      break;
    }
    all_dead = all_dead && r["process"] == to_string(ProcState::kDead);
  }
  // The summary says so too, as report_root does for a root that died while peers still waited
  // (a stall's words stay last).
  const std::string exited = " (the process has since exited)";
  if (all_dead && g.summary.find(exited) == std::string::npos) {
    const size_t at = g.kind == FindingKind::kStall ? g.summary.rfind(" (no progress for ") : std::string::npos;
    g.summary.insert(at == std::string::npos ? g.summary.size() : at, exited);
    changed = true;
  }
  if (changed) board.report(std::move(g));
}

void HangDetector::track(const std::string& key, const std::vector<const Comm*>& comms, const char* word) {
  words_[key] = word;
  auto [it, added] = involved_.try_emplace(key);
  if (!added) return;
  for (const Comm* c : comms) {
    if (c) it->second.emplace_back(c->key, progress_mark(*c));
  }
}

}  // namespace scout::obs

#include "observer/detect/sequence_check.h"

#include <algorithm>

#include "common/names.h"
#include "observer/detect/finding_util.h"

namespace scout::obs {

using namespace scout::shm;

SeqValue seq_value(const SeqEntry& e, bool api) {
  SeqValue v;
  v.func = e.id.func;
  v.meta.datatype = api ? e.api_datatype : e.datatype;
  v.meta.count = api ? e.api_count : e.count;
  v.meta.root = e.root;
  return v;
}

EvSeqValue ev_seq(const SeqValue& v) {
  return EvSeqValue{func_name(v.func), datatype_name(v.meta.datatype), v.meta.count, v.meta.root};
}

std::string sequence_desync_key(const Comm& c, uint64_t pos) {
  return "desync:sequence:" + hex64(c.key.hash) + ":" + std::to_string(c.key.nranks) + ":" + std::to_string(pos);
}

namespace {
std::string seq_words(const std::optional<SeqValue>& v) {
  if (!v) return "nothing (it is blocked elsewhere)";
  std::string s = std::string(func_name(v->func)) + " (count " + std::to_string(v->meta.count) + " of " +
                  datatype_name(v->meta.datatype);
  if (v->meta.root >= 0) s += ", root " + std::to_string(v->meta.root);
  return s + ")";
}


}  // namespace

SequenceCheck::Ballots SequenceCheck::collect(Comm& c, uint64_t pos) const {
  Ballots b;
  for (int r = 0; r < int(c.ranks.size()); ++r) {
    if (!c.ranks.stored(r)) {  // nothing recorded about it (not written, so as not to store it)
      b.waiting = true;        // a default rank: position 0, known
      continue;
    }
    RankProgress& rp = c.ranks[r];
    auto& w = rp.seq_window;
    while (!w.empty() && w.front().pos < pos) w.pop_front();  // decided
    if (!w.empty() && w.front().pos == pos) {
      b.entries.push_back(&w.front());
      if (w.front().api_count == 0) b.api = false;
    } else if (rp.seq_synced() && rp.seq_next_pos() <= pos) {
      b.waiting = true;  // has not reached it yet
    }
    // else: position unknown (records lost) or passed without a kept entry: no vote
  }
  for (const SeqEntry* e : b.entries) b.votes.emplace_back(0, seq_value(*e, b.api));
  size_t i = 0;
  for (int r = 0; r < int(c.ranks.size()) && i < b.entries.size(); ++r) {
    const auto& w = std::as_const(c).ranks[r].seq_window;
    if (!w.empty() && &w.front() == b.entries[i]) b.votes[i++].first = r;
  }
  return b;
}

bool SequenceCheck::class_vote(const Model& m, const Comm& c, const State& st, const Ballots& b, uint64_t pos,
                               VoteResult<SeqValue>* vote, nlohmann::json* cls) const {
  std::vector<std::pair<int, SeqValue>> ballots = b.votes;
  int electorate = c.key.nranks;
  nlohmann::json peers = nlohmann::json::array();
  for (const auto& [other, ps] : state_) {
    if (other == c.key || ps.cls != st.cls) continue;
    auto at = std::lower_bound(ps.agreed.begin(), ps.agreed.end(), pos,
                               [](const Agreed& a, uint64_t p) { return a.pos < p; });
    if (at == ps.agreed.end() || at->pos != pos || at->api != b.api) continue;
    // Equivalent: equal at every position both kept (before `pos`), and at least one.
    int common = 0;
    bool same = true;
    auto pi = ps.agreed.begin();
    for (const Agreed& a : st.agreed) {
      while (pi != ps.agreed.end() && pi->pos < a.pos) ++pi;
      if (pi == ps.agreed.end()) break;
      if (pi->pos != a.pos) continue;
      if (!(pi->v == a.v) || pi->api != a.api) {
        same = false;
        break;
      }
      ++common;
    }
    if (!same || common == 0) continue;
    for (int r = 0; r < other.nranks; ++r) ballots.emplace_back(electorate + r, at->v);
    electorate += other.nranks;
    auto oc = m.comms().find(other);
    peers.push_back(oc != m.comms().end() ? to_json(ev_comm(oc->second)) : nlohmann::json(hex64(other.hash)));
  }
  VoteResult<SeqValue> all = strict_majority(ballots, electorate);
  if (peers.empty() || all.verdict != VoteVerdict::kAttributed) return false;
  const SeqValue majority = all.groups[0].value;
  VoteResult<SeqValue> own;
  own.verdict = VoteVerdict::kAttributed;
  own.has_majority = true;
  VoteGroup<SeqValue> agree{majority, {}};
  std::map<SeqValue, std::vector<int>> rest;
  for (const auto& [r, v] : b.votes) (v == majority ? agree.voters : rest[v]).push_back(r);
  own.groups.push_back(agree);
  for (auto& [v, rs] : rest) {
    own.groups.push_back(VoteGroup<SeqValue>{v, rs});
    own.dissenters.insert(own.dissenters.end(), rs.begin(), rs.end());
  }
  std::sort(own.dissenters.begin(), own.dissenters.end());
  *vote = own;
  *cls = {{"class", st.cls},
          {"peers", peers},
          {"majority_ranks", int(all.groups[0].voters.size())},
          {"electorate", electorate}};
  return true;
}

Finding SequenceCheck::finding(const Model& m, const Comm& c, const State& st, uint64_t pos,
                               const VoteResult<std::optional<SeqValue>>& vote,
                               const std::vector<std::pair<int, OpId>>& ops, bool api, int64_t first_ns,
                               int64_t now_ns) const {
  Finding f;
  f.kind = FindingKind::kDesync;
  f.verdict = vote.verdict == VoteVerdict::kAttributed ? Verdict::kAttributed : Verdict::kInconclusive;
  set_comm(f, c);
  // The operation: what the majority called there; without a majority (or when the majority called
  // nothing) what the lowest comm rank that called one called.
  OpId id = ops.empty() ? OpId{} : ops.front().second;
  if (vote.has_majority && vote.groups[0].value) {
    for (const auto& [r, op] : ops) {
      if (r == vote.groups[0].voters.front()) id = op;
    }
  }
  f.key = op_key(id);
  f.dedup_key = sequence_desync_key(c, pos);
  f.first_seen_ns = first_ns > 0 ? first_ns : now_ns;
  f.last_seen_ns = now_ns;
  DesyncEvidence ev;
  ev.source = "sequence";
  ev.op = ev_op(id);
  ev.position = pos;
  ev.fields = api ? "api" : "task";
  ev.sequence_votes.emplace();
  for (const auto& g : vote.groups) {
    std::optional<EvSeqValue> v;
    if (g.value) v = ev_seq(*g.value);
    ev.sequence_votes->push_back({v, global_ranks(m, c, g.voters), g.voters});
  }
  ev.agreed.emplace();
  size_t shown = 0;
  for (auto it = st.agreed.rbegin(); it != st.agreed.rend() && shown < kAgreedShown; ++it) {
    if (it->pos >= pos) continue;
    ev.agreed->insert(ev.agreed->begin(), EvSeqAgreed{it->pos, ev_seq(it->v)});
    ++shown;
  }
  f.evidence = to_json(ev);
  const std::string where = "position " + std::to_string(pos) + " of " + comm_label(c) + "'s collective sequence";
  if (f.verdict == Verdict::kAttributed) {
    std::string minority;
    for (int r : vote.dissenters) {
      f.suspects.push_back(suspect_of(m, c, r));
      for (size_t g = 1; g < vote.groups.size(); ++g) {
        if (!std::binary_search(vote.groups[g].voters.begin(), vote.groups[g].voters.end(), r)) continue;
        if (!minority.empty()) minority += "; ";
        minority += who(m, c, r) + " called " + seq_words(vote.groups[g].value);
      }
    }
    const auto& maj = vote.groups[0];
    const bool one = maj.voters.size() == 1;
    f.summary = minority + " at " + where + " where " + std::to_string(maj.voters.size()) +
                (maj.value ? (one ? " rank called " : " ranks called ") + seq_words(maj.value)
                           : (one ? " rank has" : " ranks have") + std::string(" not called it (blocked elsewhere)"));
  } else {
    f.summary = "ranks disagree at " + where + " with no majority (" + std::to_string(vote.groups.size()) +
                " different calls)";
  }
  return f;
}

namespace {
VoteResult<std::optional<SeqValue>> widen(const VoteResult<SeqValue>& v) {
  VoteResult<std::optional<SeqValue>> out;
  out.verdict = v.verdict;
  out.has_majority = v.has_majority;
  out.dissenters = v.dissenters;
  for (const auto& g : v.groups) out.groups.push_back({std::optional<SeqValue>(g.value), g.voters});
  return out;
}
}  // namespace

void SequenceCheck::check(const Model& m, Comm& c, State& st, int64_t now_ns, FindingBoard& board, bool settle) {
  auto open = open_.find(c.key);
  if (open != open_.end() && open->second.decided) return;
  for (;;) {
    const uint64_t pos = open != open_.end() ? open->second.pos : st.next;
    Ballots b = collect(c, pos);
    if (b.votes.empty()) return;
    VoteResult<SeqValue> vote = strict_majority(b.votes, c.key.nranks);
    // Every voter's record there is the same key (func, seqNumber): the ranks are in step and differ
    // only in datatype, count or root, which is the metadata check's desync, not this one's.
    bool same_key = true;
    for (const SeqEntry* e : b.entries) same_key = same_key && e->id == b.entries.front()->id;
    if ((vote.verdict == VoteVerdict::kAgree || same_key) && open == open_.end()) {
      if (b.waiting) return;  // the others have not reached it: decide once they have
      if (vote.verdict == VoteVerdict::kAgree) {
        st.agreed.push_back(Agreed{pos, vote.groups[0].value, b.api});
        if (st.agreed.size() > kHistory) st.agreed.pop_front();
      }
      st.next = pos + 1;
      continue;
    }
    // The ranks that reached `pos` disagree (or did once: late ranks may still change the vote).
    nlohmann::json cls;
    bool decided = vote.verdict == VoteVerdict::kAttributed;
    if (!decided && !settle) {
      open_[c.key].pos = pos;  // decided in the settle round of this pass
      return;
    }
    if (!decided && !b.waiting) decided = class_vote(m, c, st, b, pos, &vote, &cls);
    std::vector<std::pair<int, OpId>> ops;
    int64_t first = 0;
    for (size_t i = 0; i < b.entries.size(); ++i) {
      ops.emplace_back(b.votes[i].first, b.entries[i]->id);
      if (b.entries[i]->enqueue_ns > 0) first = first == 0 ? b.entries[i]->enqueue_ns : std::min(first, b.entries[i]->enqueue_ns);
    }
    Finding f = finding(m, c, st, pos, widen(vote), ops, b.api, first, now_ns);
    if (!cls.is_null()) {
      f.evidence["class"] = cls;
      const size_t n = cls["peers"].size();
      f.summary += "; " + std::to_string(n) + " equivalent " +
                   (n == 1 ? "communicator agrees" : "communicators agree") + " with the majority";
    }
    Divergence& d = open_[c.key];
    if (d.hang) {
      f.evidence["hang"] = *d.hang;
      f.summary += d.hang_words;
    }
    const bool changed = d.f.dedup_key.empty() || d.f.verdict != f.verdict || d.f.suspects.size() != f.suspects.size() ||
                         d.f.evidence != f.evidence;
    d.pos = pos;
    const int waited = d.passes++;
    d.decided = decided || (!b.waiting && d.passes >= kMaxPasses);
    if (changed) d.f = f;
    // An undecided one-against-one waits a little for its class before it is reported.
    if ((changed || !d.reported) && (decided || waited >= kQuietPasses || d.hang)) {
      d.reported = true;
      board.report(d.f);
    }
    return;
  }
}

void SequenceCheck::pass(Model& m, int64_t now_ns, FindingBoard& board) {
  for (auto& [key, c] : m.comms()) {
    if (!c.members_known() || c.key.nranks < 2) continue;
    auto [it, added] = state_.try_emplace(key);
    State& st = it->second;
    if (added) st.cls = comm_class(c);
    if (st.stamp == c.seq_stamp || open_.count(key)) continue;
    st.stamp = c.seq_stamp;
    check(m, c, st, now_ns, board, false);
  }
  // Disagreements still undecided: every communicator has compared its new positions by now.
  for (auto& [key, d] : open_) {
    if (d.decided) continue;
    Comm* c = m.find_comm(key);
    if (!c || !c->members_known()) continue;
    state_[key].stamp = c->seq_stamp;
    check(m, *c, state_[key], now_ns, board, true);
  }
}

bool SequenceCheck::suppresses(const Comm& c, const Op& op) const {
  auto it = open_.find(c.key);
  if (it == open_.end() || op.id.cls != OpClass::kColl) return false;
  for (const OpSlot& s : op.slots) {
    if (s.pos < 0 || uint64_t(s.pos) >= it->second.pos) return true;
  }
  return false;
}

bool SequenceCheck::fold(const Model& m, const std::vector<const Comm*>& comms, const HangEvidence& hang,
                         int64_t now_ns, FindingBoard& board) {
  (void)m;
  for (const Comm* c : comms) {
    if (!c) continue;
    auto it = open_.find(c->key);
    if (it == open_.end()) continue;
    Divergence& d = it->second;
    d.hang = to_json(hang);
    d.hang_words = "; then the job " + std::string(hang.cls == "deadlock" ? "deadlocked" : "hung");
    Finding& f = d.f;  // reported now if it was still waiting for its class: the hang is reason enough
    d.reported = true;
    f.evidence["hang"] = *d.hang;
    f.last_seen_ns = now_ns;
    if (f.summary.find(d.hang_words) == std::string::npos) f.summary += d.hang_words;
    board.report(f);
    return true;
  }
  return false;
}

bool SequenceCheck::frozen(const Model& m, const Comm& c, const CommWaits& w, const HangEvidence& hang,
                           int64_t now_ns, FindingBoard& board) {
  if (w.cls.empty() || w.op.cls != OpClass::kColl || open_.count(c.key)) return false;
  std::vector<std::pair<int, std::optional<SeqValue>>> ballots;
  std::vector<std::pair<int, OpId>> ops;
  std::vector<const SeqEntry*> in;
  for (int r = 0; r < int(c.ranks.size()) && r < int(w.ranks.size()); ++r) {
    const RankWaitState& rs = w.ranks[r];
    if (rs.state != "idle" && rs.op == w.op) {
      const SeqEntry* e = nullptr;
      for (const SeqEntry& x : c.ranks[r].seq_window) {
        if (x.id == w.op) e = &x;
      }
      if (!e) continue;  // its position is unknown
      in.push_back(e);
      ops.emplace_back(r, e->id);
      ballots.emplace_back(r, std::nullopt);  // value filled below (the API's fields need every voter)
    } else if (!has_issued(c, w.op, r) && c.ranks[r].seq_synced()) {
      ballots.emplace_back(r, std::nullopt);
    }
  }
  if (in.empty()) return false;
  bool api = true;
  for (const SeqEntry* e : in) api = api && e->api_count != 0;
  size_t k = 0;
  for (auto& [r, v] : ballots) {
    if (k < ops.size() && ops[k].first == r) v = seq_value(*in[k++], api);
  }
  VoteResult<std::optional<SeqValue>> vote = strict_majority(ballots, c.key.nranks);
  if (vote.verdict != VoteVerdict::kAttributed || vote.groups[0].value) return false;
  auto [it, added] = state_.try_emplace(c.key);
  if (added) it->second.cls = comm_class(c);
  uint64_t pos = in.front()->pos;
  Finding f = finding(m, c, it->second, pos, vote, ops, api, in.front()->enqueue_ns, now_ns);
  f.evidence["hang"] = to_json(hang);
  f.summary += "; the job deadlocked there";
  Divergence& d = open_[c.key];
  d.pos = pos;
  d.decided = true;
  d.reported = true;
  d.hang = f.evidence["hang"];
  d.hang_words = "; the job deadlocked there";
  d.f = f;
  board.report(f);
  return true;
}

}  // namespace scout::obs

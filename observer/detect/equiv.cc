#include "observer/detect/equiv.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "common/names.h"
#include "common/vote.h"
#include "observer/detect/finding_util.h"
#include "scout/shm_format.h"

namespace scout::obs {

namespace {
std::string trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t\r\n");
  if (a == std::string::npos) return "";
  size_t b = s.find_last_not_of(" \t\r\n");
  return s.substr(a, b - a + 1);
}

bool parse_hash(const std::string& tok, uint64_t* out) {
  if (tok.size() < 3 || tok.size() > 18 || tok[0] != '0' || (tok[1] != 'x' && tok[1] != 'X')) return false;
  char* end = nullptr;
  unsigned long long v = std::strtoull(tok.c_str() + 2, &end, 16);
  if (!end || *end != '\0') return false;
  *out = v;
  return true;
}
}  // namespace

bool parse_equiv(const std::string& text, char sep, std::vector<EquivGroup>* out, std::string* error) {
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, sep)) {
    size_t hash = item.find('#');
    if (hash != std::string::npos) item.resize(hash);
    std::string body = trim(item);
    if (body.empty()) continue;
    EquivGroup g;
    g.text = body;
    size_t colon = body.find(':');
    if (colon != std::string::npos && body.find_first_of(" ,\t") > colon) {
      std::string prefix = body.substr(0, colon);
      if (prefix == "send") {
        g.recv = false;
      } else if (prefix == "recv") {
        g.send = false;
      } else if (prefix != "both") {
        if (error) *error = "equivalence group '" + body + "': unknown prefix '" + prefix + ":' (send, recv or both)";
        return false;
      }
      body = body.substr(colon + 1);
    }
    for (char& ch : body) {
      if (ch == ',' || ch == '\t') ch = ' ';
    }
    std::stringstream ms(body);
    std::string tok;
    while (ms >> tok) {
      uint64_t h;
      if ((tok.rfind("0x", 0) == 0 || tok.rfind("0X", 0) == 0) && !parse_hash(tok, &h)) {
        if (error) *error = "equivalence group '" + g.text + "': '" + tok + "' is not a 64-bit hex commHash";
        return false;
      }
      g.members.push_back(tok);
    }
    if (g.members.size() < 2) {
      if (error) *error = "equivalence group '" + g.text + "' needs at least two members";
      return false;
    }
    out->push_back(std::move(g));
  }
  return true;
}

bool load_equiv_file(const std::string& path, std::vector<EquivGroup>* out, std::string* error) {
  std::ifstream f(path);
  if (!f) {
    if (error) *error = "cannot read equivalence file " + path;
    return false;
  }
  std::stringstream ss;
  ss << f.rdbuf();
  return parse_equiv(ss.str(), '\n', out, error);
}

bool EquivChecker::matches(const EquivGroup& g, const Comm& c) const {
  for (const std::string& tok : g.members) {
    uint64_t h;
    if (parse_hash(tok, &h) ? h == c.key.hash : (!c.name.empty() && tok == c.name)) return true;
  }
  return false;
}

void EquivChecker::observe(const Model& m, const JudgedOp& op, int64_t now_ns, FindingBoard& board) {
  if (groups_.empty() || op.id.cls != OpClass::kColl) return;
  auto cit = m.comms().find(op.comm);
  if (cit == m.comms().end()) return;
  const Comm& c = cit->second;
  bool stored = false;
  for (size_t g = 0; g < groups_.size(); ++g) {
    if (!matches(groups_[g], c)) continue;
    if (!stored) {
      auto& hist = history_[op.comm];
      std::map<int, Fp> fps;
      for (const auto& p : op.parts) {
        fps[p.comm_rank] = Fp{p.present, p.proc, p.fp_send_status, p.fp_recv_status, p.fp_send, p.fp_recv};
      }
      hist[{op.id.func, op.id.seq}] = std::move(fps);
      while (hist.size() > kHistoryPerComm) hist.erase(hist.begin());
      stored = true;
    }
    std::vector<const Comm*> members;
    for (const auto& [k, other] : m.comms()) {
      if (k.nranks == c.key.nranks && matches(groups_[g], other)) members.push_back(&other);
    }
    if (members.size() < 2) continue;
    Key key{op.id.func, op.id.seq};
    bool all = true;
    for (const Comm* mc : members) {
      auto h = history_.find(mc->key);
      if (h == history_.end() || !h->second.count(key)) all = false;
    }
    if (all) compare(m, g, members, key, now_ns, board);
  }
}

void EquivChecker::compare(const Model& m, size_t g, const std::vector<const Comm*>& members, const Key& key,
                           int64_t now_ns, FindingBoard& board) {
  const EquivGroup& grp = groups_[g];
  int nranks = members[0]->key.nranks;
  for (int which = 0; which < 2; ++which) {
    bool send = which == 0;
    if (send ? !grp.send : !grp.recv) continue;
    std::vector<EvEquivDisagreement> disagreements;
    std::vector<Suspect> suspects;
    bool all_attributed = true;
    const Comm* first_bad = nullptr;
    for (int r = 0; r < nranks; ++r) {
      std::vector<std::pair<int, uint64_t>> ballots;
      for (int i = 0; i < int(members.size()); ++i) {
        const auto& fps = history_[members[i]->key][key];
        auto fit = fps.find(r);
        if (fit == fps.end() || !fit->second.present) continue;
        const Fp& fp = fit->second;
        if ((send ? fp.send_status : fp.recv_status) != shm::kFpDone) continue;
        ballots.emplace_back(i, send ? fp.send : fp.recv);
      }
      VoteResult<uint64_t> v = strict_majority(ballots, int(members.size()));
      if (v.verdict == VoteVerdict::kAgree) continue;
      EvEquivDisagreement d;
      d.comm_rank = r;
      for (const auto& grpv : v.groups) {
        EvEquivVote vote;
        vote.value = fp_hex(grpv.value);
        for (int i : grpv.voters) {
          vote.comms.push_back(ev_comm(*members[i]));
          int proc = history_[members[i]->key][key][r].proc;
          vote.ranks.push_back(proc >= 0 ? m.proc(proc).global_rank : -1);
        }
        d.votes.push_back(std::move(vote));
      }
      if (v.has_majority) d.majority = fp_hex(v.groups[0].value);
      disagreements.push_back(std::move(d));
      if (v.verdict == VoteVerdict::kAttributed) {
        for (int i : v.dissenters) {
          suspects.push_back(suspect_of(m, history_[members[i]->key][key][r].proc, r));
          if (!first_bad) first_bad = members[i];
        }
      } else {
        all_attributed = false;
      }
    }
    if (disagreements.empty()) continue;
    Finding f;
    f.kind = FindingKind::kSdc;
    f.verdict = all_attributed ? Verdict::kAttributed : Verdict::kInconclusive;
    if (all_attributed) f.suspects = suspects;
    set_comm(f, first_bad ? *first_bad : *members[0]);
    f.key = OpKey{shm::func_name(key.first), key.second};
    f.dedup_key = "sdc:equiv:" + std::to_string(g) + ":" + (send ? "send:" : "recv:") + shm::func_name(key.first) +
                  ":" + std::to_string(key.second);
    f.first_seen_ns = now_ns;
    f.last_seen_ns = now_ns;
    SdcEvidence ev;
    ev.check = send ? "send-equiv" : "recv-equiv";
    ev.op = EvOp{shm::func_name(key.first), key.second, std::nullopt, std::nullopt};
    ev.declaration = grp.text;
    ev.group.emplace();
    for (const Comm* mc : members) ev.group->push_back(ev_comm(*mc));
    ev.disagreements = disagreements;
    f.evidence = to_json(ev);
    std::string what = std::string(send ? "send" : "receive") + " buffers of " + shm::func_name(key.first) + " #" +
                       std::to_string(key.second) + " in the equivalent communicators '" + grp.text + "'";
    if (all_attributed) {
      std::string names;
      for (const Suspect& s : suspects) {
        names += (names.empty() ? "rank " : ", rank ") + std::to_string(s.global_rank) + " (" + s.host + ", pid " +
                 std::to_string(s.pid) + ")";
      }
      f.summary = names + " differs from its replicas in the " + what;
    } else {
      f.summary = "replicas disagree with no majority in the " + what;
    }
    board.report(f);
  }
  for (const Comm* mc : members) history_[mc->key].erase(key);
}

}  // namespace scout::obs

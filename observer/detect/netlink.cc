#include "observer/detect/netlink.h"

#include <algorithm>
#include <cstdio>
#include <tuple>
#include <vector>

#include "common/paths.h"
#include "observer/detect/finding_util.h"
#include "observer/detect/stats.h"
#include "observer/model/evidence.h"

namespace scout::obs {
namespace {

// Whether finding `f`'s end `x` is `g_end` (the global rank of an end of replay's finding `g`,
// `g_comm_rank` its comm rank in f's communicator, -1 unknown): the same global rank, or (a far
// end f knows by its comm rank only) the same comm rank.
bool same_end(const Suspect& x, int g_end, int g_comm_rank) {
  if (x.global_rank >= 0) return x.global_rank == g_end;
  return x.comm_rank >= 0 && x.comm_rank == g_comm_rank;
}

bool replay_names_link(const FindingBoard& board, const Finding& f) {
  if (f.suspects.empty() || !f.peer) return false;
  for (const Finding* g : board.all()) {
    if (g->kind != FindingKind::kSlowLink || !g->open || g->suspects.empty() || !g->peer) continue;
    if (!g->evidence.is_object() || g->evidence.value("source", "") != "replay") continue;
    // The ends' comm ranks in f's communicator, from the communicators replay listed.
    int cx = -1, cy = -1;
    for (const auto& c : g->evidence.value("comms", nlohmann::json::array()))
      if (c.value("comm", "") == hex64(f.comm_hash) && c.value("nranks", 0) == f.comm_nranks &&
          c.value("ranks", nlohmann::json::array()).size() == 2) {
        cx = c["ranks"][0].get<int>();
        cy = c["ranks"][1].get<int>();
      }
    const Suspect &a = f.suspects[0], &b = *f.peer;
    const int x = g->suspects[0].global_rank, y = g->peer->global_rank;
    if ((same_end(a, x, cx) && same_end(b, y, cy)) || (same_end(a, y, cy) && same_end(b, x, cx))) return true;
  }
  return false;
}

// Middle of histogram bucket b, ns.
double bucket_mid(int b) {
  double lo = double(shm::link_hist_floor(b));
  double hi = b + 1 < shm::kLinkHistBuckets ? double(shm::link_hist_floor(b + 1)) : double(uint64_t(1) << 32);
  return (lo + hi) / 2;
}

// The q-quantile (0 < q < 1) of a histogram with n counts, ns.
double quantile(const std::array<uint64_t, shm::kLinkHistBuckets>& h, uint64_t n, double q) {
  uint64_t want = std::max<uint64_t>(1, uint64_t(double(n) * q + 0.5));
  uint64_t c = 0;
  for (int b = 0; b < shm::kLinkHistBuckets; ++b) {
    c += h[b];
    if (c >= want) return bucket_mid(b);
  }
  return bucket_mid(shm::kLinkHistBuckets - 1);
}

int log2_floor(uint64_t v) {
  int b = 0;
  while (v > 1) {
    v >>= 1;
    ++b;
  }
  return b;
}

std::string us_words(double ns) {
  char buf[32];
  if (ns >= 1e6) {
    std::snprintf(buf, sizeof(buf), "%.2f ms", ns / 1e6);
  } else {
    std::snprintf(buf, sizeof(buf), "%.1f us", ns / 1e3);
  }
  return buf;
}

// The process of global rank `g` (the latest one seen), -1 if none.
int proc_of_global(const Model& m, int g) {
  int found = -1;
  for (const Proc& p : m.procs()) {
    if (p.global_rank == g && g >= 0) found = p.id;
  }
  return found;
}

}  // namespace

// The window's figures of one pair.
struct NetLinkDetector::Judged {
  Pair pair;
  int src_proc = -1;
  int src_global = -1, dst_global = -1;
  int src_id = -1, dst_id = -1;  // ends for the intersection: the global rank, or a negative id
                                 // of (communicator, comm rank) when the global rank is unknown
  uint64_t transfers = 0, bytes = 0, busy = 0, total = 0;
  std::array<uint64_t, shm::kLinkHistBuckets> hist{};
  double median = 0, low = 0, peer = 0;
  int peers = 0, bucket = 0;
  bool slow = false;       // slow in this pass
  bool confirmed = false;  // slow for `confirm` passes
};

// Receiving ends a ProxyStep peer on another node is known by: negative ids of (communicator,
// comm rank) for ends whose global rank this observer does not know.
struct NetLinkDetector::AnonEnds {
  std::map<int, std::pair<const Comm*, int>> of;  // negative id -> (communicator, comm rank)
};

// Names, evidence channels and dedup keys of judged pairs for the findings of one pass.
class NetLinkDetector::Namer {
 public:
  Namer(const Model& m, const NetLinkConfig& cfg, const std::map<int, std::pair<const Comm*, int>>& anon)
      : m_(m), cfg_(cfg), anon_(anon) {
    th_.factor = cfg.factor;
    th_.min_ms = to_ms(cfg.min_ns);
    th_.window = int(std::min<int64_t>(cfg.window_ns / 1000000000, 1 << 30));
    th_.min_transfers = int(std::min<uint64_t>(cfg.min_transfers, 1u << 30));
    th_.window_s = double(cfg.window_ns) / 1e9;
    th_.confirm = cfg.confirm;
  }
  const EvSlowThresholds& thresholds() const { return th_; }

  Suspect suspect(int id, int proc_hint) const {
    if (id < -1) {  // known by its comm rank only
      auto [c, rank] = anon(id);
      return c != nullptr ? suspect_of(m_, *c, rank) : Suspect{};
    }
    int proc = proc_hint >= 0 ? proc_hint : proc_of_global(m_, id);
    if (proc >= 0) return suspect_of(m_, proc);
    Suspect s;
    s.global_rank = id;
    return s;
  }
  std::string end_words(int id) const {
    if (id >= 0) return "rank " + std::to_string(id);
    auto [c, rank] = anon(id);
    return "comm rank " + std::to_string(rank) + (c != nullptr ? " of " + comm_label(*c) : std::string());
  }
  EvChannel channel(const Judged& j) const {
    EvChannel c;
    auto cit = m_.comms().find(CommKey{j.pair.comm_hash, j.pair.comm_nranks});
    if (j.pair.source == shm::kLinkSourceProxy && cit != m_.comms().end()) c.comm = ev_comm(cit->second);
    c.kind = j.pair.source == shm::kLinkSourceNet ? "net" : "proxy";
    c.func = "Send";
    c.bytes_bucket = uint64_t(1) << j.bucket;
    c.ranks = {j.src_global, j.dst_global};
    c.median_ms = to_ms(int64_t(j.median));
    c.peer_median_ms = to_ms(int64_t(j.peer));
    c.ratio = j.peer > 0 ? j.median / j.peer : 0;
    c.samples = int(std::min<uint64_t>(j.transfers, 1u << 30));
    c.peers = j.peers;
    c.min_diff_ms = to_ms(cfg_.min_ns);
    c.source = c.kind;
    c.src = j.src_global;
    c.dst = j.dst_global;
    c.gbps = j.busy > 0 ? double(j.bytes) / double(j.busy) : 0;
    return c;
  }
  std::string where(const Judged& j) const {
    return std::string(j.pair.source == shm::kLinkSourceNet ? "net plugin" : "ProxyStep") + " transfers of about " +
           std::to_string(uint64_t(1) << j.bucket) + " bytes from rank " + std::to_string(j.src_global) + " to " +
           end_words(j.dst_id) + " take " + us_words(j.median) + " (median of " + std::to_string(j.transfers) +
           ") vs " + us_words(j.peer) + " on " + std::to_string(j.peers) + " other " +
           (j.peers == 1 ? "pair" : "pairs");
  }
  void set_comm_of(Finding& f, const Judged& j) const {
    if (j.pair.source != shm::kLinkSourceProxy) return;
    auto cit = m_.comms().find(CommKey{j.pair.comm_hash, j.pair.comm_nranks});
    if (cit != m_.comms().end()) set_comm(f, cit->second);
  }
  // Dedup keys: the slow-link detector's own (slowlink.h) when the processes are known, so that a
  // link both see is one finding (the later report of a pass carries its evidence); global ranks
  // otherwise.
  std::string endpoint_key(int g, int proc_hint) const {
    int proc = proc_hint >= 0 ? proc_hint : proc_of_global(m_, g);
    return proc >= 0 ? "slowlink:endpoint:" + proc_key(proc) : "slowlink:net_endpoint:" + std::to_string(g);
  }
  std::string link_key(int ga, int pa, int gb) const {
    int a = pa >= 0 ? pa : proc_of_global(m_, ga), b = gb >= 0 ? proc_of_global(m_, gb) : -1;
    if (a >= 0 && b >= 0) return "slowlink:link:" + proc_key(std::min(a, b)) + ":" + proc_key(std::max(a, b));
    if (gb >= 0) {
      return "slowlink:net_link:" + std::to_string(std::min(ga, gb)) + ":" + std::to_string(std::max(ga, gb));
    }
    auto [c, rank] = anon(gb);
    return "slowlink:net_link:" + std::to_string(ga) + ":" + (c != nullptr ? hex64(c->key.hash) : "?") + ":" +
           std::to_string(rank);
  }

 private:
  std::pair<const Comm*, int> anon(int id) const {
    auto it = anon_.find(id);
    return it == anon_.end() ? std::pair<const Comm*, int>{nullptr, -1} : it->second;
  }
  std::string proc_key(int proc) const { return m_.proc(proc).host + ":" + std::to_string(m_.proc(proc).pid); }

  const Model& m_;
  const NetLinkConfig& cfg_;
  const std::map<int, std::pair<const Comm*, int>>& anon_;
  EvSlowThresholds th_;
};

std::map<NetLinkDetector::Pair, NetLinkDetector::Judged> NetLinkDetector::collect(const Model& m, int64_t now_ns) {
  std::map<Pair, Judged> pairs;
  std::set<EntryKey> live;
  for (const Proc& p : m.procs()) {
    if (!p.has_links) continue;
    for (const shm::LinkSnapshot& e : p.links) {
      if (e.dir != shm::kLinkSend || (e.source != shm::kLinkSourceNet && e.source != shm::kLinkSourceProxy)) continue;
      Pair k;
      k.source = e.source;
      k.src_host = p.host;
      k.src_pid = p.pid;
      if (e.source == shm::kLinkSourceNet) {
        if (e.peer_global_rank < 0) continue;  // the peer is not known: nothing to name
        k.dst_global = e.peer_global_rank;
      } else {
        k.comm_hash = e.comm_hash;
        k.comm_nranks = e.comm_nranks;
        k.dst_comm_rank = e.peer_rank;
      }
      EntryKey ek{p.host, p.pid, e.index};
      live.insert(ek);
      std::deque<Snap>& q = snaps_[ek];
      Snap s;
      s.t = now_ns;
      s.transfers = e.transfers;
      s.bytes = e.bytes;
      s.busy = e.busy_ns;
      s.hist = e.hist;
      q.push_back(s);
      while (q.size() > 2 && q[1].t <= now_ns - cfg_.window_ns) q.pop_front();
      Judged& j = pairs[k];
      j.pair = k;
      j.src_proc = p.id;
      j.src_global = p.global_rank;
      j.total += e.transfers;
      const Snap& a = q.front();
      const Snap& b = q.back();
      if (b.transfers < a.transfers) continue;  // a reused table (new load cycle): no window yet
      j.transfers += b.transfers - a.transfers;
      j.bytes += b.bytes - a.bytes;
      j.busy += b.busy - a.busy;
      for (int i = 0; i < shm::kLinkHistBuckets; ++i) j.hist[i] += uint32_t(b.hist[i] - a.hist[i]);
    }
  }
  for (auto it = snaps_.begin(); it != snaps_.end();) it = live.count(it->first) ? std::next(it) : snaps_.erase(it);
  return pairs;
}

NetLinkDetector::AnonEnds NetLinkDetector::name_receivers(const Model& m, std::map<Pair, Judged>& pairs) {
  // Receiving ends by global rank (a ProxyStep peer on another node is known to this observer by
  // its comm rank only: it gets a negative id of its own).
  AnonEnds ends;
  std::map<std::tuple<uint64_t, int, int>, int> anon;
  for (auto& [k, j] : pairs) {
    if (k.source == shm::kLinkSourceNet) {
      j.dst_global = k.dst_global;
    } else {
      auto cit = m.comms().find(CommKey{k.comm_hash, k.comm_nranks});
      if (cit != m.comms().end() && k.dst_comm_rank >= 0 && k.dst_comm_rank < int(cit->second.ranks.size())) {
        int dp = cit->second.ranks[size_t(k.dst_comm_rank)].proc;
        if (dp >= 0) j.dst_global = m.proc(dp).global_rank;
      }
      if (j.dst_global < 0) {
        auto [it, fresh] = anon.try_emplace({k.comm_hash, k.comm_nranks, k.dst_comm_rank}, -int(anon.size()) - 2);
        j.dst_id = it->second;
        if (fresh) ends.of[j.dst_id] = {cit != m.comms().end() ? &cit->second : nullptr, k.dst_comm_rank};
      }
    }
    if (j.dst_id == -1) j.dst_id = j.dst_global;
    j.src_id = j.src_global >= 0 ? j.src_global : -1;
  }
  return ends;
}

std::vector<NetLinkDetector::Judged*> NetLinkDetector::judge(std::map<Pair, Judged>& pairs, int64_t now_ns) {
  // Judge within classes (source, size class).
  std::map<std::pair<uint8_t, int>, std::vector<Judged*>> classes;
  for (auto& [k, j] : pairs) {
    if (j.transfers < cfg_.min_transfers) continue;
    j.median = quantile(j.hist, j.transfers, 0.5);
    j.low = quantile(j.hist, j.transfers, 0.25);
    j.bucket = log2_floor(j.bytes / j.transfers);
    classes[{k.source, j.bucket}].push_back(&j);
  }
  std::vector<Judged*> judged;
  for (auto& [ck, v] : classes) {
    if (v.size() < 2) continue;
    for (Judged* j : v) {
      std::vector<double> others;
      for (Judged* o : v) {
        if (o != j) others.push_back(o->median);
      }
      j->peer = median(others);
      j->peers = int(others.size());
      j->slow = j->median >= cfg_.factor * j->peer && j->median - j->peer >= double(cfg_.min_ns) &&
                j->low >= cfg_.factor * j->peer;
      judged.push_back(j);
    }
  }
  for (Judged* j : judged) {
    int& n = slow_for_[j->pair];
    uint64_t& seen = seen_[j->pair];
    bool fresh = j->total > seen;
    seen = j->total;
    // The slow episode (its start in slow_since_) ends after `confirm` passes with new transfers
    // in which the pair was not slow: one pass within the noise does not restart its clock.
    int64_t& since = slow_since_[j->pair];
    int& calm = calm_for_[j->pair];
    if (!j->slow) {
      n = 0;
      if (fresh && ++calm >= cfg_.confirm) since = 0;
    } else if (fresh) {
      n++;
      calm = 0;
      if (since == 0) since = now_ns;
    }
    j->confirmed = j->slow && n >= cfg_.confirm && since > 0 && now_ns - since >= cfg_.confirm_ns;
  }
  return judged;
}

void NetLinkDetector::pass(const Model& m, int64_t now_ns, FindingBoard& board,
                           const std::set<std::string>& held_hosts) {
  std::map<Pair, Judged> pairs = collect(m, now_ns);
  // Without a new transfer on any pair (the job ended or paused) there is no new evidence: the
  // windows only drain, and judging what is left would compare a slow pair with fewer and fewer
  // others (as their transfers age out unevenly) before closing it. Verdicts, findings and their
  // evidence stay as the last pass with transfers left them.
  bool fresh = false;
  for (const auto& [k, j] : pairs) {
    auto it = seen_.find(k);
    fresh |= it == seen_.end() ? j.total > 0 : j.total > it->second;
  }
  if (!fresh) return;
  const AnonEnds anon = name_receivers(m, pairs);
  // Every pair is judged (its confirmation counts on while held); a pair from or to a host the
  // slow-link detector holds (observer.md, "Slow links") is that host's finding.
  auto on_held_host = [&](const Judged* j) {
    if (held_hosts.count(j->pair.src_host)) return true;
    const int dp = j->dst_global >= 0 ? proc_of_global(m, j->dst_global) : -1;
    return dp >= 0 && held_hosts.count(m.proc(dp).host) > 0;
  };
  std::vector<Judged*> judged;
  for (Judged* j : judge(pairs, now_ns)) {
    if (!on_held_host(j)) judged.push_back(j);
  }

  // Intersection by global rank.
  auto slow_or_normal = [](const Judged* j) { return j->confirmed || !j->slow; };
  std::map<int, std::set<int>> slow_peers;
  std::map<int, int> normal_n;
  for (const Judged* j : judged) {
    if (!slow_or_normal(j) || j->src_id < 0 || j->dst_id == -1) continue;
    if (j->confirmed) {
      slow_peers[j->src_id].insert(j->dst_id);
      slow_peers[j->dst_id].insert(j->src_id);
    } else {
      normal_n[j->src_id]++;
      normal_n[j->dst_id]++;
    }
  }
  std::set<int> endpoints;
  for (const auto& [g, peers] : slow_peers) {
    if (g >= 0 && peers.size() >= 2 && !normal_n.count(g)) endpoints.insert(g);
  }
  const Namer names(m, cfg_, anon.of);
  std::set<std::string> reported;
  report_endpoints(names, judged, endpoints, slow_peers, now_ns, board, &reported);
  report_links(names, judged, endpoints, now_ns, board, &reported);
  // Close what this detector no longer sees, unless the slow-link detector reported the same key
  // in this pass (it then still sees the failure).
  for (const std::string& k : open_) {
    if (reported.count(k)) continue;
    const Finding* f = board.find(k);
    if (f != nullptr && f->open && f->last_seen_ns >= now_ns) continue;
    board.close(k, now_ns);
  }
  open_ = reported;
}

void NetLinkDetector::report_endpoints(const Namer& names, const std::vector<Judged*>& judged,
                                       const std::set<int>& endpoints, const std::map<int, std::set<int>>& slow_peers,
                                       int64_t now_ns, FindingBoard& board, std::set<std::string>* reported) {
  for (int g : endpoints) {
    Finding f;
    f.kind = FindingKind::kSlowLink;
    f.verdict = Verdict::kAttributed;
    SlowLinkEvidence ev{"net_endpoint", {}, {}, names.thresholds(), {}, {}};
    const Judged* first = nullptr;
    for (const Judged* j : judged) {
      if (!j->confirmed || (j->src_id != g && j->dst_id != g)) continue;
      if (first == nullptr || j->median > first->median) first = j;
      ev.slow.push_back(names.channel(*j));
    }
    if (first == nullptr) continue;
    f.suspects.push_back(names.suspect(g, first->src_global == g ? first->src_proc : -1));
    names.set_comm_of(f, *first);
    f.first_seen_ns = now_ns;
    f.last_seen_ns = now_ns;
    f.dedup_key = names.endpoint_key(g, first->src_global == g ? first->src_proc : -1);
    f.evidence = to_json(ev);
    f.summary = "rank " + std::to_string(g) + " is a slow network endpoint: its transfers to or from " +
                std::to_string(slow_peers.at(g).size()) + " peers are slow (" + names.where(*first) + ")";
    board.report(f);
    reported->insert(f.dedup_key);
  }
}

void NetLinkDetector::report_links(const Namer& names, const std::vector<Judged*>& judged,
                                   const std::set<int>& endpoints, int64_t now_ns, FindingBoard& board,
                                   std::set<std::string>* reported) {
  std::map<std::pair<int, int>, std::vector<const Judged*>> links;
  for (const Judged* j : judged) {
    if (!j->confirmed || j->src_id < 0 || j->dst_id == -1) continue;
    if (endpoints.count(j->src_id) || endpoints.count(j->dst_id)) continue;
    links[{std::min(j->src_id, j->dst_id), std::max(j->src_id, j->dst_id)}].push_back(j);
  }
  for (const auto& [ab, v] : links) {
    const Judged* worst = v.front();
    for (const Judged* j : v) {
      if (j->median > worst->median) worst = j;
    }
    Finding f;
    f.kind = FindingKind::kSlowLink;
    f.verdict = Verdict::kAttributed;
    SlowLinkEvidence ev{"net_link", {}, {}, names.thresholds(), {}, {}};
    for (const Judged* j : v) ev.slow.push_back(names.channel(*j));
    for (const Judged* o : judged) {
      if (o->slow || ev.normal.size() >= 8) continue;
      bool shares = o->src_id == ab.first || o->src_id == ab.second || o->dst_id == ab.first || o->dst_id == ab.second;
      if (shares) ev.normal.push_back(names.channel(*o));
    }
    f.suspects.push_back(names.suspect(worst->src_global, worst->src_proc));
    f.peer = names.suspect(worst->dst_id, -1);
    names.set_comm_of(f, *worst);
    f.first_seen_ns = now_ns;
    f.last_seen_ns = now_ns;
    f.dedup_key = names.link_key(worst->src_global, worst->src_proc, worst->dst_id);
    if (!board.is_open(f.dedup_key) && replay_names_link(board, f)) continue;  // replay's finding stands
    f.evidence = to_json(ev);
    f.summary = "the network link between rank " + std::to_string(worst->src_global) + " and " +
                names.end_words(worst->dst_id) + " is slow: " + names.where(*worst);
    board.report(f);
    reported->insert(f.dedup_key);
  }
}

}  // namespace scout::obs

#include "observer/detect/slowlink.h"

#include <algorithm>
#include <cstdio>

#include "common/names.h"
#include "observer/detect/finding_util.h"
#include "observer/detect/stats.h"

namespace scout::obs {

namespace {
int log2_bucket(uint64_t bytes) {
  int b = 0;
  while (bytes > 1) {
    bytes >>= 1;
    ++b;
  }
  return b;
}

std::string size_words(int bucket) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = std::min(bucket / 10, 4);
  return std::to_string(1ull << (bucket - 10 * u)) + " " + units[u];
}

std::string ms_words(double ns) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f ms", ns / 1e6);
  return buf;
}
}  // namespace

void SlowLinkDetector::observe(const Model& m, const JudgedOp& op) {
  (void)m;
  if (!op.complete || op.parts.size() < 2) return;
  int64_t last_start = 0, last_end = 0;
  for (const auto& p : op.parts) {
    last_start = std::max(last_start, p.start_ns);
    last_end = std::max(last_end, p.end_ns);
  }
  Channel ch;
  ch.comm = op.comm;
  ch.func = op.id.func;
  ch.bucket = log2_bucket(op.bytes);
  if (op.id.cls == OpClass::kP2p) {
    ch.a = std::min(op.id.src, op.id.dst);
    ch.b = std::max(op.id.src, op.id.dst);
  }
  auto& w = samples_[ch];
  runs_[ch].total++;
  w.push_back(Sample{std::max<int64_t>(0, last_end - last_start), op.id, last_end});
  while (int(w.size()) > cfg_.window) w.pop_front();
  if (!procs_.count(ch)) {
    std::vector<int> procs;
    for (const auto& p : op.parts) procs.push_back(p.proc);
    std::sort(procs.begin(), procs.end());
    procs_[ch] = procs;
  }
}

EvChannel SlowLinkDetector::channel(const Model& m, const Judged& j) const {
  EvChannel ch;
  for (int p : j.procs) ch.ranks.push_back(p >= 0 ? m.proc(p).global_rank : -1);
  auto it = m.comms().find(j.ch.comm);
  if (it != m.comms().end()) ch.comm = ev_comm(it->second);
  ch.kind = j.ch.a >= 0 ? "p2p" : "coll";
  ch.func = shm::func_name(j.ch.func);
  ch.bytes_bucket = 1ull << j.ch.bucket;
  ch.median_ms = to_ms(int64_t(j.median_ns));
  ch.peer_median_ms = to_ms(int64_t(j.peer_ns));
  ch.ratio = j.peer_ns > 0 ? j.median_ns / j.peer_ns : 0;
  ch.samples = j.samples;
  ch.peers = j.peers;
  ch.min_diff_ms = to_ms(int64_t(j.noise_ns));
  return ch;
}

std::vector<SlowLinkDetector::Judged> SlowLinkDetector::judge_channels(const Model& m) {
  // Medians per channel, grouped by class.
  struct ClassKey {
    bool p2p;
    uint8_t func;
    int bucket, nranks, nnodes;
    std::string stem;
    auto operator<=>(const ClassKey&) const = default;
  };
  std::map<ClassKey, std::vector<Judged>> classes;
  for (const auto& [ch, w] : samples_) {
    if (int(w.size()) < cfg_.min_samples) continue;
    Judged j;
    j.ch = ch;
    j.procs = procs_[ch];
    std::vector<int64_t> d;
    for (const Sample& s : w) d.push_back(s.dur_ns);
    j.median_ns = median(d);
    {
      std::vector<int64_t> last;
      for (size_t k = w.size() - size_t(cfg_.min_samples); k < w.size(); ++k) last.push_back(w[k].dur_ns);
      j.recent_ns = median(last);
    }
    std::nth_element(d.begin(), d.begin() + d.size() / 4, d.end());
    j.low_ns = double(d[d.size() / 4]);
    j.samples = int(w.size());
    auto cit = m.comms().find(ch.comm);
    int nnodes = cit != m.comms().end() ? cit->second.nnodes : 0;
    std::string stem = cit != m.comms().end() ? name_stem(cit->second.name) : "";
    classes[ClassKey{ch.a >= 0, ch.func, ch.bucket, ch.a >= 0 ? 2 : ch.comm.nranks, nnodes, stem}].push_back(j);
  }
  std::vector<Judged> judged;
  for (auto& [ck, chans] : classes) {
    if (chans.size() < 2) continue;
    for (size_t i = 0; i < chans.size(); ++i) {
      std::vector<double> others;
      std::vector<int64_t> peer_samples;
      for (size_t k = 0; k < chans.size(); ++k) {
        if (k == i) continue;
        others.push_back(chans[k].median_ns);
        for (const Sample& s : samples_[chans[k].ch]) peer_samples.push_back(s.dur_ns);
      }
      Judged& j = chans[i];
      j.peer_ns = median(others);
      j.peers = int(others.size());
      j.noise_ns = std::max(double(cfg_.min_ns), cfg_.noise_k * mad(peer_samples));
      // Both the median and the lower quartile: a slow link is slow in most operations, a burst
      // of noise lifts only some of them.
      j.slow = j.median_ns >= cfg_.factor * j.peer_ns && j.median_ns - j.peer_ns >= j.noise_ns &&
               j.low_ns >= cfg_.factor * j.peer_ns && j.low_ns - j.peer_ns >= j.noise_ns;
      Run& run = runs_[j.ch];
      j.fresh = run.total - run.seen;
      // The slow episode begins with the earliest fresh operation of the evaluation that first
      // found the channel slow, and ends once `confirm` operations have completed while it was
      // not (a pass within the peers' noise on a busy host does not restart its clock).
      const std::deque<Sample>& w = samples_[j.ch];
      if (j.slow) {
        if (run.slow_since_ns == 0) {
          const size_t fresh = std::min<size_t>(std::max<uint64_t>(j.fresh, 1), w.size());
          run.slow_since_ns = w[w.size() - fresh].end_ns;
        }
        run.calm_for = 0;
      } else if ((run.calm_for += j.fresh) >= uint64_t(cfg_.confirm)) {
        run.slow_since_ns = 0;
      }
      run.slow_for = j.slow ? run.slow_for + j.fresh : 0;
      run.seen = run.total;
      const bool lasted = w.back().end_ns - run.slow_since_ns >= cfg_.confirm_ns;
      if (j.slow && (run.slow_for < uint64_t(cfg_.confirm) || !lasted)) {  // not yet persistent
        j.pending = true;
        judged.push_back(j);
        continue;
      }
      if (j.slow) {
        for (const Sample& s : samples_[j.ch]) {
          if (double(s.dur_ns) >= cfg_.factor * j.peer_ns) {
            j.first_slow = s.id;
            break;
          }
        }
      }
      judged.push_back(j);
    }
  }
  return judged;
}

// The host rule's view of one evaluation: hosts by index, the hosts of each judged channel.
struct SlowLinkDetector::Hosts {
  std::vector<std::string> names;    // index -> host name
  std::vector<std::vector<int>> of;  // per judged channel: its hosts (sorted indices)
  std::set<int> suspected;           // every inter-host channel looks slow, reaching two other hosts
  std::set<int> slow;                // slow hosts (reported)
  std::vector<bool> looks_slow;      // per judged inter-host channel: slow, pending or >= factor x peers
  std::vector<bool> held;            // per judged channel: inter-host, touching a suspected or slow host
  bool inter(size_t i) const { return of[i].size() >= 2; }
  bool touches(size_t i, int h) const { return std::binary_search(of[i].begin(), of[i].end(), h); }
  bool normal(size_t i) const { return inter(i) && !looks_slow[i]; }
};

SlowLinkDetector::Hosts SlowLinkDetector::judge_hosts(const Model& m, const std::vector<Judged>& judged) {
  Hosts h;
  std::map<std::string, int> index;
  for (const Judged& j : judged) {
    std::vector<int> v;
    for (int p : j.procs) {
      if (p < 0) continue;
      auto [it, fresh] = index.try_emplace(m.proc(p).host, int(h.names.size()));
      if (fresh) h.names.push_back(it->first);
      v.push_back(it->second);
    }
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    h.of.push_back(std::move(v));
  }
  // Per host: inter-host channels that look slow, are confirmed slow or are normal, and up to two
  // other hosts reached by the ones that look slow and by the confirmed ones (two suffice for the
  // rule; the first three hosts of a channel hold two others). A channel looks slow when it is
  // slow (confirmed or pending) or its window's or its last min_samples operations' median is at
  // least factor x its peers' (within the peers' noise, or slow only lately while its window
  // still holds older normal transfers).
  struct Count {
    int looks_slow = 0, confirmed = 0, normal = 0;
    std::vector<int> far_looks, far_confirmed;
  };
  auto reach = [](std::vector<int>& far, const std::vector<int>& hs, int x) {
    for (size_t k = 0; k < hs.size() && k < 3 && far.size() < 2; ++k) {
      if (hs[k] != x && std::find(far.begin(), far.end(), hs[k]) == far.end()) far.push_back(hs[k]);
    }
  };
  std::vector<Count> c(h.names.size());
  int normal_inter = 0;
  h.looks_slow.assign(judged.size(), false);
  for (size_t i = 0; i < judged.size(); ++i) {
    if (!h.inter(i)) continue;
    const Judged& j = judged[i];
    const bool looks = j.slow || j.median_ns >= cfg_.factor * j.peer_ns || j.recent_ns >= cfg_.factor * j.peer_ns;
    const bool confirmed = j.slow && !j.pending;
    h.looks_slow[i] = looks;
    normal_inter += !looks;
    for (int x : h.of[i]) {
      Count& cx = c[size_t(x)];
      if (!looks) {
        cx.normal++;
        continue;
      }
      cx.looks_slow++;
      reach(cx.far_looks, h.of[i], x);
      if (confirmed) {
        cx.confirmed++;
        reach(cx.far_confirmed, h.of[i], x);
      }
    }
  }
  std::map<std::string, std::map<Channel, uint64_t>> suspect_ops;
  for (size_t x = 0; x < c.size(); ++x) {
    // Suspected: every inter-host channel touching x looks slow, reaching two other hosts, and one
    // between other hosts is normal. Reported once the confirmed ones reach two other hosts, or
    // once every one has completed `confirm` + `window` operations while x stayed suspected,
    // confirmed or not (one that is still not confirmed by then is held back by the peers' noise
    // or flickers around it, not by its pace). Once reported, the host stays until none of its
    // channels looks slow and one is normal.
    const bool suspected = c[x].normal == 0 && c[x].far_looks.size() >= 2 && normal_inter > 0;
    bool aged = suspected;
    if (suspected) {
      h.suspected.insert(int(x));
      std::map<Channel, uint64_t>& ops = suspect_ops[h.names[x]];
      auto before = suspect_ops_.find(h.names[x]);
      for (size_t i = 0; i < judged.size(); ++i) {
        if (!h.inter(i) || !h.touches(i, int(x))) continue;
        uint64_t n = judged[i].fresh;
        if (before != suspect_ops_.end()) {
          auto it = before->second.find(judged[i].ch);
          if (it != before->second.end()) n += it->second;
        }
        ops[judged[i].ch] = n;
        aged = aged && n >= uint64_t(cfg_.confirm + cfg_.window);
      }
    }
    if (open_.count("slowlink:host:" + h.names[x])
            ? c[x].looks_slow > 0 || c[x].normal == 0
            : suspected && ((c[x].confirmed > 0 && c[x].far_confirmed.size() >= 2) || aged)) {
      h.slow.insert(int(x));
    }
  }
  suspect_ops_ = std::move(suspect_ops);
  h.held.assign(judged.size(), false);
  for (size_t i = 0; i < judged.size(); ++i) {
    if (!h.inter(i)) continue;
    for (int x : h.of[i]) h.held[i] = h.held[i] || h.suspected.count(x) > 0 || h.slow.count(x) > 0;
  }
  return h;
}

void SlowLinkDetector::report_hosts(const Model& m, const std::vector<Judged>& judged, const Hosts& h, int64_t now_ns,
                                    FindingBoard& board, std::set<std::string>* reported) const {
  for (int x : h.slow) {
    SlowLinkEvidence ev{"endpoint", {}, {}, thresholds(), h.names[size_t(x)], {}};
    const std::string key = "slowlink:host:" + h.names[size_t(x)];
    std::set<int> others;
    std::vector<std::pair<int, int>> ranks;  // (global rank, proc) of the host's ranks
    size_t n_slow = 0, n_undecided = 0, n_own_normal = 0, n_normal = 0;
    const Judged* worst = nullptr;
    std::vector<EvChannel> undecided;  // listed as slow while none is confirmed (an open host)
    for (size_t i = 0; i < judged.size(); ++i) {
      if (!h.inter(i)) continue;
      const Judged& j = judged[i];
      if (!h.touches(i, x)) {
        if (h.normal(i) && n_normal++ < 8) ev.normal.push_back(channel(m, j));
        continue;
      }
      const bool confirmed = j.slow && !j.pending;
      if (!h.looks_slow[i]) {
        n_own_normal++;
      } else if (!confirmed) {
        if (n_undecided++ < 8) undecided.push_back(channel(m, j));
      } else if (n_slow++ < 8) {
        ev.slow.push_back(channel(m, j));
      }
      const bool worst_confirmed = worst != nullptr && worst->slow && !worst->pending;
      if (worst == nullptr || (confirmed && !worst_confirmed) ||
          (confirmed == worst_confirmed && j.median_ns - j.peer_ns > worst->median_ns - worst->peer_ns)) {
        worst = &j;
      }
      for (int y : h.of[i]) {
        if (y != x) others.insert(y);
      }
      for (int p : j.procs) {
        if (p >= 0 && m.proc(p).host == h.names[size_t(x)]) ranks.push_back({m.proc(p).global_rank, p});
      }
    }
    if (worst == nullptr) {  // none of its channels compared in this pass: an open host stays
      if (open_.count(key)) reported->insert(key);
      continue;
    }
    std::sort(ranks.begin(), ranks.end());
    ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
    Finding f;
    f.kind = FindingKind::kSlowLink;
    f.verdict = Verdict::kAttributed;
    std::string rank_words;
    for (const auto& [g, p] : ranks) {
      f.suspects.push_back(suspect_of(m, p));
      rank_words += (rank_words.empty() ? "" : ", ") + std::to_string(g);
    }
    f.first_seen_ns = now_ns;
    f.last_seen_ns = now_ns;
    f.dedup_key = key;
    if (ev.slow.empty()) ev.slow = undecided;
    f.evidence = to_json(ev);
    const std::string reach =
        " of its compared inter-host channels, to " + std::to_string(others.size()) + " other hosts, are slow";
    std::string counts;
    if (n_undecided == 0 && n_own_normal == 0) {
      counts = "all " + std::to_string(n_slow) + reach;
    } else if (n_own_normal == 0) {
      counts = std::to_string(n_slow) + reach + " and " + std::to_string(n_undecided) + " undecided, none normal";
    } else {
      counts = std::to_string(n_slow) + reach + ", " + std::to_string(n_undecided) + " undecided and " +
               std::to_string(n_own_normal) + " normal";
    }
    f.summary = "host " + h.names[size_t(x)] + " (ranks " + rank_words + ") is a slow endpoint: " + counts +
                ", while " + std::to_string(n_normal) + " between other hosts are normal (" + where(m, *worst) + ")";
    board.report(f);
    reported->insert(f.dedup_key);
  }
}

EvSlowThresholds SlowLinkDetector::thresholds() const {
  EvSlowThresholds t;
  t.factor = cfg_.factor;
  t.min_ms = to_ms(cfg_.min_ns);
  t.window = cfg_.window;
  t.noise_k = cfg_.noise_k;
  return t;
}

std::string SlowLinkDetector::where(const Model& m, const Judged& j) const {
  auto it = m.comms().find(j.ch.comm);
  std::string c = it != m.comms().end() ? comm_label(it->second) : hex64(j.ch.comm.hash);
  return std::string(j.ch.a >= 0 ? "send/recv" : shm::func_name(j.ch.func)) + " of " + size_words(j.ch.bucket) +
         " on " + c + " takes " + ms_words(j.median_ns) + " (median) vs " + ms_words(j.peer_ns) + " on " +
         std::to_string(j.peers) + " peer " + (j.peers == 1 ? "channel" : "channels");
}

namespace {

// Comm rank of process `proc` in communicator `k` (-1 unknown).
int comm_rank_in(const Model& m, const CommKey& k, int proc) {
  auto it = m.comms().find(k);
  return it == m.comms().end() ? -1 : rank_of(it->second, proc);
}

}  // namespace

std::set<int> SlowLinkDetector::endpoints_of(const Model& m, const std::vector<Judged>& judged, const Hosts& hosts,
                                             std::map<int, int>* normal_n, std::set<int>* quiet) const {
  auto host_of = [&](int p) {
    auto it = std::find(hosts.names.begin(), hosts.names.end(), m.proc(p).host);
    return it == hosts.names.end() ? -1 : int(it - hosts.names.begin());
  };
  // Intersection: ranks (a rank of a slow or suspected host is that host's finding; one with a
  // held channel waits).
  std::map<int, int> slow_n;
  for (const Judged& j : judged) {
    if (j.pending) continue;
    for (int p : j.procs) (j.slow ? slow_n : *normal_n)[p]++;
  }
  std::set<int> endpoints;
  for (const auto& [p, n] : slow_n) {
    if (n >= 2 && !normal_n->count(p)) endpoints.insert(p);
  }
  for (int p : endpoints) {
    const int x = host_of(p);
    bool held = false;
    for (size_t i = 0; i < judged.size(); ++i) {
      held |= hosts.held[i] && std::binary_search(judged[i].procs.begin(), judged[i].procs.end(), p);
    }
    if (hosts.slow.count(x) || hosts.suspected.count(x) || held) quiet->insert(p);
  }
  return endpoints;
}

namespace {

// Replay's measurement of the pair of link finding `f`, from the finding on the board under the
// same key: replay's own evidence (source "replay") or the `replay` block kept earlier.
void keep_replay(const FindingBoard& board, Finding* f) {
  const Finding* old = board.find(f->dedup_key);
  if (old == nullptr || !old->evidence.is_object() || !f->evidence.is_object()) return;
  const nlohmann::json& e = old->evidence;
  if (e.value("source", "") == "replay") {
    EvReplayLink r;
    r.cycle = e.value("cycle", uint64_t(0));
    r.recipes = e.value("recipes", std::vector<std::string>{});
    r.ms = e.value("ms", 0.0);
    r.median_ms = e.value("median_ms", 0.0);
    f->evidence["replay"] = to_json(r);
  } else if (e.contains("replay")) {
    f->evidence["replay"] = e["replay"];
  }
}

}  // namespace

Finding SlowLinkDetector::base_finding(const Model& m, const Judged& j, int64_t now_ns) const {
  Finding f;
  f.kind = FindingKind::kSlowLink;
  auto it = m.comms().find(j.ch.comm);
  if (it != m.comms().end()) set_comm(f, it->second);
  f.key = op_key(j.first_slow);
  f.first_seen_ns = now_ns;
  f.last_seen_ns = now_ns;
  return f;
}

void SlowLinkDetector::report_endpoints(const Model& m, const std::vector<Judged>& judged,
                                        const std::set<int>& endpoints, const std::set<int>& quiet, int64_t now_ns,
                                        FindingBoard& board, std::set<std::string>* reported) const {
  for (int p : endpoints) {
    if (quiet.count(p)) continue;
    SlowLinkEvidence ev{"endpoint", {}, {}, thresholds(), {}, {}};
    const Judged* first = nullptr;
    for (const Judged& j : judged) {
      if (!j.slow || j.pending || !std::binary_search(j.procs.begin(), j.procs.end(), p)) continue;
      if (!first) first = &j;
      ev.slow.push_back(channel(m, j));
    }
    Finding f = base_finding(m, *first, now_ns);
    f.verdict = Verdict::kAttributed;
    f.suspects.push_back(suspect_of(m, p, comm_rank_in(m, first->ch.comm, p)));
    f.dedup_key = "slowlink:endpoint:" + m.proc(p).host + ":" + std::to_string(m.proc(p).pid);
    f.evidence = to_json(ev);
    f.summary = who(m, p) + " is a slow endpoint: all " + std::to_string(ev.slow.size()) +
                " of its compared channels are slow (" + where(m, *first) + ")";
    board.report(f);
    reported->insert(f.dedup_key);
  }
}

Finding SlowLinkDetector::channel_finding(const Model& m, const std::vector<Judged>& judged, const Judged& j,
                                          const std::vector<int>& cand, int64_t now_ns) const {
  Finding f = base_finding(m, j, now_ns);
  SlowLinkEvidence ev{"", {channel(m, j)}, {}, thresholds(), {}, {}};
  for (const Judged& o : judged) {
    if (o.slow || ev.normal.size() >= 8) continue;
    bool shares = false;
    for (int p : cand) shares |= std::binary_search(o.procs.begin(), o.procs.end(), p);
    if (shares) ev.normal.push_back(channel(m, o));
  }
  if (cand.size() == 2) {
    f.verdict = Verdict::kAttributed;
    f.suspects.push_back(suspect_of(m, cand[0], comm_rank_in(m, j.ch.comm, cand[0])));
    f.peer = suspect_of(m, cand[1], comm_rank_in(m, j.ch.comm, cand[1]));
    f.dedup_key = "slowlink:link:" + m.proc(cand[0]).host + ":" + std::to_string(m.proc(cand[0]).pid) + ":" +
                  m.proc(cand[1]).host + ":" + std::to_string(m.proc(cand[1]).pid);
    ev.cls = "link";
    f.summary = "the link between " + who(m, cand[0]) + " and " + who(m, cand[1]) + " is slow: " + where(m, j);
  } else if (cand.size() == 1) {
    f.verdict = Verdict::kAttributed;
    f.suspects.push_back(suspect_of(m, cand[0], comm_rank_in(m, j.ch.comm, cand[0])));
    f.dedup_key = "slowlink:endpoint:" + m.proc(cand[0]).host + ":" + std::to_string(m.proc(cand[0]).pid);
    ev.cls = "endpoint";
    f.summary = who(m, cand[0]) + " is the only rank of a slow communicator with no normal channel: " + where(m, j);
  } else {
    f.verdict = Verdict::kInconclusive;
    f.dedup_key = "slowlink:comm:" + hex64(j.ch.comm.hash) + ":" + std::to_string(j.ch.comm.nranks) + ":" +
                  std::to_string(j.ch.a) + ":" + std::to_string(j.ch.b);
    ev.cls = "comm";
    f.summary = "slow communication that no single rank or link explains: " + where(m, j);
  }
  f.evidence = to_json(ev);
  return f;
}

void SlowLinkDetector::evaluate(const Model& m, int64_t now_ns, FindingBoard& board) {
  // Every compared channel; pending ones (slow, not yet confirmed) count only for the host rule.
  const std::vector<Judged> judged = judge_channels(m);
  const Hosts hosts = judge_hosts(m, judged);
  held_hosts_.clear();
  for (int x : hosts.suspected) held_hosts_.insert(hosts.names[size_t(x)]);
  for (int x : hosts.slow) held_hosts_.insert(hosts.names[size_t(x)]);
  std::map<int, int> normal_n;
  std::set<int> quiet;  // endpoints not reported (host finding, or held)
  const std::set<int> endpoints = endpoints_of(m, judged, hosts, &normal_n, &quiet);
  std::set<std::string> reported;
  report_hosts(m, judged, hosts, now_ns, board, &reported);
  report_endpoints(m, judged, endpoints, quiet, now_ns, board, &reported);
  for (size_t i = 0; i < judged.size(); ++i) {
    const Judged& j = judged[i];
    if (!j.slow || j.pending || hosts.held[i]) continue;
    bool explained = false;
    for (int p : j.procs) explained |= endpoints.count(p) > 0;
    if (hosts.inter(i)) {
      for (int x : hosts.of[i]) explained |= hosts.slow.count(x) > 0;
    }
    if (explained) continue;
    std::vector<int> cand;
    if (j.procs.size() == 2) {
      cand = j.procs;
    } else {
      for (int p : j.procs) {
        if (!normal_n.count(p)) cand.push_back(p);
      }
    }
    Finding f = channel_finding(m, judged, j, cand, now_ns);
    if (reported.count(f.dedup_key)) continue;
    keep_replay(board, &f);
    board.report(f);
    reported.insert(f.dedup_key);
  }
  for (const std::string& k : open_) {
    if (!reported.count(k)) board.close(k, now_ns);
  }
  open_ = reported;
}

}  // namespace scout::obs

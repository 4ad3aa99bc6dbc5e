#include "observer/detect/straggler.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "observer/detect/finding_util.h"
#include "observer/detect/stats.h"

namespace scout::obs {

int64_t gap_before(const Proc& p, int64_t arrival, int64_t own_end, int64_t pass_ns) {
  // The timeline is ordered by end: the last interval ending at or before `arrival`.
  auto it = std::upper_bound(p.timeline.begin(), p.timeline.end(), arrival,
                             [](int64_t a, const GpuInterval& iv) { return a < iv.end_ns; });
  int passed = 0;
  int64_t last_end = -1;
  while (it != p.timeline.begin()) {
    --it;
    if (it->start_ns == arrival && it->end_ns == own_end) continue;
    if (it->end_ns <= 0) break;
    last_end = it->end_ns;
    // A send or receive that held the rank less than pass_ns did not make it wait: its own time
    // runs on through it (a late rank's first operation is often the receive its peer posted
    // long before).
    if (it->p2p_held_ns >= 0 && it->p2p_held_ns < pass_ns && ++passed <= kMaxPassedP2p) continue;
    return arrival - it->end_ns;
  }
  return last_end > 0 ? arrival - last_end : -1;
}

StragglerDetector::Entry StragglerDetector::score(const Model& m, const JudgedOp& op, const StragglerConfig& cfg) {
  Entry e;
  e.id = op.id;
  const int n = int(op.parts.size());
  std::vector<int64_t> a(n), gap(n, -1);
  int64_t amin = INT64_MAX;
  for (int i = 0; i < n; ++i) {
    a[i] = op.parts[i].start_ns;
    amin = std::min(amin, a[i]);
    e.procs.push_back(op.parts[i].proc);
    if (op.parts[i].proc >= 0) gap[i] = gap_before(m.proc(op.parts[i].proc), a[i], op.parts[i].end_ns, cfg.min_ns);
  }
  e.first_arrival_ns = amin;
  e.signal.resize(n);
  e.lateness.resize(n);
  e.late.resize(n);
  for (int i = 0; i < n; ++i) {
    int64_t L = a[i] - amin;
    e.lateness[i] = L;
    int64_t S = L;
    std::vector<int64_t> other_gaps, other_late;
    for (int j = 0; j < n; ++j) {
      if (j == i) continue;
      other_late.push_back(a[j] - amin);
      if (gap[j] >= 0) other_gaps.push_back(gap[j]);
    }
    if (gap[i] >= 0 && !other_gaps.empty()) {
      double excess = double(gap[i]) - median(other_gaps);
      S = std::min<int64_t>(L, std::max<int64_t>(0, int64_t(excess)));
    }
    e.signal[i] = S;
    bool late = S >= cfg.min_ns && double(S) >= cfg.rel * median(other_late);
    e.late[i] = late;
    e.any |= late;
  }
  return e;
}

StragglerDetector::Entry StragglerDetector::score(const CrossNodeArrivals& op, int nranks, const StragglerConfig& cfg) {
  Entry e;
  e.id = op.id;
  e.first_arrival_ns = op.first_arrival_ns;
  e.procs.assign(nranks, -1);
  e.signal.assign(nranks, 0);
  e.lateness.assign(nranks, 0);
  e.late.assign(nranks, 0);
  for (const auto& r : op.ranks) {
    if (r.comm_rank < 0 || r.comm_rank >= nranks) continue;
    int64_t S = r.lateness_ns;
    if (r.gap_ns >= 0 && op.min_gap_ns >= 0) S = std::min<int64_t>(S, std::max<int64_t>(0, r.gap_ns - op.min_gap_ns));
    std::vector<int64_t> other_late;
    for (const auto& o : op.ranks) {
      if (&o != &r) other_late.push_back(o.lateness_ns);
    }
    const int i = r.comm_rank;
    e.procs[i] = r.proc;
    e.signal[i] = S;
    e.lateness[i] = r.lateness_ns;
    e.late[i] = S >= cfg.min_ns && double(S) >= cfg.rel * median(other_late);
    e.any |= e.late[i] != 0;
  }
  e.any |= op.spread_ns >= cfg.min_ns;
  return e;
}

StragglerConfig StragglerDetector::calibrated(const Model* m, const CommKey& comm) {
  auto cit = class_of_.find(comm);
  if (cit == class_of_.end()) {
    std::string cls;
    if (m) {
      auto it = m->comms().find(comm);
      if (it != m->comms().end()) cls = comm_class(it->second);
    }
    if (cls.empty()) cls = "?/" + std::to_string(comm.nranks);
    cit = class_of_.emplace(comm, cls).first;
  }
  StragglerConfig c = cfg_;
  const Noise& n = noise_[cit->second];
  if (n.threshold_ns > c.min_ns) c.min_ns = n.threshold_ns;
  return c;
}

void StragglerDetector::learn(const CommKey& comm, const Entry& e) {
  Noise& n = noise_[class_of_.at(comm)];
  for (size_t i = 0; i < e.signal.size(); ++i) {
    if (e.procs[i] < 0) continue;
    n.signals.push_back(e.signal[i]);
    ++n.since;
  }
  while (n.signals.size() > kNoiseSamples) n.signals.pop_front();
  if (n.since >= kNoiseEvery || (n.threshold_ns < 0 && n.signals.size() >= 16)) {
    std::vector<int64_t> v(n.signals.begin(), n.signals.end());
    n.threshold_ns = int64_t(noise_threshold(std::move(v), cfg_.noise_k, double(cfg_.min_ns)));
    n.since = 0;
  }
}

void StragglerDetector::observe_cross_node(const CrossNodeArrivals& op) {
  if (op.id.cls != OpClass::kColl || op.comm.nranks < 2 || op.ranks.empty()) return;
  if (seen_[op.comm]++ < cfg_.warmup) return;
  Entry e = score(op, op.comm.nranks, calibrated(nullptr, op.comm));
  learn(op.comm, e);
  add(op.comm, std::move(e));
}

void StragglerDetector::observe(const Model& m, const JudgedOp& op) {
  if (op.id.cls != OpClass::kColl || !op.complete || op.parts.size() < 2) return;
  if (seen_[op.comm]++ < cfg_.warmup) return;
  Entry e = score(m, op, calibrated(&m, op.comm));
  learn(op.comm, e);
  add(op.comm, std::move(e));
}

void StragglerDetector::add(const CommKey& comm, Entry e) {
  for (size_t i = 0; i < e.procs.size(); ++i) {
    if (e.procs[i] < 0) continue;
    auto& w = procs_[e.procs[i]];
    w.push_back(Agg{bool(e.late[i]), e.any});
    while (int(w.size()) > cfg_.window) w.pop_front();
  }
  auto& w = comms_[comm];
  w.push_back(std::move(e));
  while (int(w.size()) > cfg_.window) w.pop_front();
}

StragglerDetector::Count StragglerDetector::comm_count(const std::deque<Entry>& w, int rank) const {
  Count c;
  for (const Entry& e : w) {
    if (rank >= int(e.late.size())) continue;
    c.ops++;
    c.late += e.late[rank];
    c.any += e.any;
  }
  return c;
}

bool StragglerDetector::persistent(const Count& c, double background) const {
  return c.late >= cfg_.min_late && double(c.late) >= cfg_.persist * double(c.any) &&
         beyond_rate(c.late, c.ops, background, cfg_.z, cfg_.min_late);
}

StragglerDetector::Rates StragglerDetector::rates(const Model& m) {
  Rates r;
  for (const auto& [proc, w] : procs_) {
    Count& agg = r.aggs[proc];
    for (const Agg& a : w) {
      agg.ops++;
      agg.late += a.late;
      agg.any += a.any;
    }
    r.agg_rates.push_back(agg.rate());
  }
  for (const auto& [key, w] : comms_) {
    auto cit = m.comms().find(key);
    if (cit == m.comms().end()) continue;
    class_of_[key] = comm_class(cit->second);
    r.class_comms[class_of_[key]].push_back(key);
    for (int q = 0; q < int(cit->second.ranks.size()); ++q) r.counts[{key, q}] = comm_count(w, q);
  }
  return r;
}

double StragglerDetector::comm_background(const Rates& r, const CommKey& key, int rank) const {
  std::vector<double> rates, all;
  for (const CommKey& o : r.class_comms.at(class_of_.at(key))) {
    for (int q = 0; q < o.nranks; ++q) {
      auto it = r.counts.find({o, q});
      if ((o == key && q == rank) || it == r.counts.end() || it->second.ops == 0) continue;
      all.push_back(it->second.rate());
      if (q == rank) rates.push_back(it->second.rate());
    }
  }
  if (rates.empty()) rates = all;
  double mean = 0;
  for (double x : all) mean += x / double(all.size());
  return std::max(median(rates), mean);
}

StragglerDetector::Judgement StragglerDetector::judge(const Model& m, const Proc& p, const Rates& r) const {
  Judgement j;
  auto pit = r.aggs.find(p.id);
  if (pit != r.aggs.end()) j.agg = pit->second;
  // The other processes' aggregated rates: `agg_rates` without one occurrence of this one's.
  std::vector<double> others = r.agg_rates;
  auto own = std::find(others.begin(), others.end(), j.agg.rate());
  if (own != others.end()) others.erase(own);
  j.background = median(others);
  j.flagged = persistent(j.agg, j.background);
  for (const auto& [key, w] : comms_) {
    auto cit = m.comms().find(key);
    if (cit == m.comms().end()) continue;
    const Comm& c = cit->second;
    for (int q = 0; q < int(c.ranks.size()); ++q) {
      if (c.ranks[q].proc != p.id) continue;
      const Count& cnt = r.counts.at({key, q});
      if (cnt.late > 0) j.hits.push_back(CommHit{&c, q, cnt});
      double bg = comm_background(r, key, q);
      if (persistent(cnt, bg)) {
        j.flagged = true;
        j.background = bg;
      }
    }
  }
  std::sort(j.hits.begin(), j.hits.end(),
            [](const CommHit& a, const CommHit& b) { return a.count.late > b.count.late; });
  return j;
}

const StragglerDetector::CommHit& StragglerDetector::main_hit(const Judgement& j, const Episode* open) {
  if (open) {
    for (const CommHit& h : j.hits) {
      if (h.comm->key == open->comm) return h;
    }
  }
  return j.hits.front();
}

StragglerDetector::Episode StragglerDetector::begin_episode(const Proc& p, const CommHit& main) const {
  Episode ep;
  for (const Entry& e : comms_.at(main.comm->key)) {
    if (main.rank < int(e.late.size()) && e.late[main.rank]) {
      ep.first_ns = e.first_arrival_ns + e.lateness[main.rank];
      ep.first_op = e.id;
      break;
    }
  }
  ep.comm = main.comm->key;
  ep.key = "straggler:" + p.host + ":" + std::to_string(p.pid) + ":" + std::to_string(ep.first_ns);
  return ep;
}

StragglerEvidence StragglerDetector::evidence(const Model& m, const Judgement& j, const CommHit& main,
                                              std::vector<int64_t>& late_signals) {
  StragglerEvidence ev;
  for (const CommHit& h : j.hits) {
    const auto& w = comms_.at(h.comm->key);
    EvStragglerComm sc;
    std::vector<int64_t> mine;
    size_t skip = w.size() > 32 ? w.size() - 32 : 0;  // series: the last 32 operations
    for (size_t i = 0; i < w.size(); ++i) {
      const Entry& e = w[i];
      if (h.rank >= int(e.signal.size())) continue;
      if (e.late[h.rank]) mine.push_back(e.signal[h.rank]);
      if (i < skip) continue;
      sc.series_ms.push_back(to_ms(e.signal[h.rank]));
      sc.lateness_ms.push_back(to_ms(e.lateness[h.rank]));
    }
    late_signals.insert(late_signals.end(), mine.begin(), mine.end());
    sc.comm = ev_comm(*h.comm);
    sc.comm_rank = h.rank;
    sc.window_ops = h.count.ops;
    sc.late_ops = h.count.late;
    sc.late_events = h.count.any;
    sc.median_late_ms = to_ms(int64_t(median(mine)));
    ev.comms.push_back(std::move(sc));
  }
  ev.aggregate = EvStragglerAggregate{j.agg.ops, j.agg.late, j.agg.any};
  ev.thresholds = EvStragglerThresholds{to_ms(cfg_.min_ns),
                                        cfg_.rel,
                                        cfg_.persist,
                                        cfg_.min_late,
                                        cfg_.window,
                                        cfg_.z,
                                        cfg_.noise_k,
                                        to_ms(calibrated(&m, main.comm->key).min_ns),
                                        std::round(j.background * 1000) / 1000};
  return ev;
}

Finding StragglerDetector::finding(const Model& m, const Proc& p, const Episode& ep, const Judgement& j,
                                   const CommHit& main, int64_t now_ns) {
  Finding f;
  f.kind = FindingKind::kStraggler;
  f.verdict = Verdict::kAttributed;
  f.dedup_key = ep.key;
  f.suspects.push_back(suspect_of(m, p.id, main.rank));
  set_comm(f, *main.comm);
  if (main.comm->key == ep.comm) f.key = op_key(ep.first_op);  // its first late operation
  f.first_seen_ns = ep.first_ns > 0 ? ep.first_ns : now_ns;
  f.last_seen_ns = now_ns;
  std::vector<int64_t> late_signals;
  f.evidence = to_json(evidence(m, j, main, late_signals));
  char ms[32];
  std::snprintf(ms, sizeof(ms), "%.1f ms", median(late_signals) / 1e6);
  f.summary = who(m, p.id) + " arrives late by " + ms + " (median, beyond the time it waited for others) in " +
              std::to_string(main.count.late) + " of the last " + std::to_string(main.count.ops) + " collectives of " +
              comm_label(*main.comm);
  return f;
}

void StragglerDetector::evaluate(const Model& m, int64_t now_ns, FindingBoard& board) {
  const Rates r = rates(m);
  for (const Proc& p : m.procs()) {
    const Judgement j = judge(m, p, r);
    auto oit = open_.find(p.id);
    if (!j.flagged) {
      if (oit == open_.end()) continue;
      if (j.agg.late <= cfg_.min_late / 2) {  // recovered
        board.close(oit->second.key, now_ns);
        open_.erase(oit);
        continue;
      }
      // Between the open and close thresholds: still open (hysteresis), keep it up to date.
    }
    if (j.hits.empty()) continue;
    const CommHit& main = main_hit(j, oit == open_.end() ? nullptr : &oit->second);
    if (oit == open_.end()) oit = open_.emplace(p.id, begin_episode(p, main)).first;
    board.report(finding(m, p, oit->second, j, main, now_ns));
  }
}

}  // namespace scout::obs

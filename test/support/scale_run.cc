#include "test/support/scale_run.h"

#include <malloc.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "observer/cluster/cross_node.h"
#include "observer/net/digest.h"
#include "observer/pipeline/observer.h"
#include "observer/store/writer.h"
#include "test/support/fake_job.h"

namespace scout::testing {

namespace {

namespace obs = scout::obs;

int64_t thread_cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return int64_t(ts.tv_sec) * kSec + ts.tv_nsec;
}

// Bytes this process handed to write(2) and friends (/proc/self/io wchar).
uint64_t wchar() {
  std::ifstream in("/proc/self/io");
  std::string k;
  uint64_t v = 0;
  while (in >> k >> v) {
    if (k == "wchar:") return v;
  }
  return 0;
}

net::DigestConfig digest_config() {
  net::DigestConfig c;
  c.stall_ns = ScaleScenario::kHangTimeoutNs;  // the observer's --hang-timeout (net::digest_config)
  return c;
}

}  // namespace

ScaleScenario::ScaleScenario(int nodes, ScalePhases phases) : job(nodes), ph(phases) {
  hang_rank = (nodes - 1) * ScaleJob::kTp + 3;
  sdc_rank = (nodes - 1) * ScaleJob::kTp + 5;
  sdc_step = ph.warmup_steps + ph.healthy_steps + 1;
  hang_step = ph.warmup_steps + ph.healthy_steps + ph.sdc_steps + 2;
  sdc_seq = uint64_t(sdc_step) * uint64_t(job.shape().dp_ops) + 1;
  job.hang(hang_rank, hang_step);
  job.corrupt(sdc_rank, sdc_seq);
}

const char* ScaleScenario::phase_of(int k) const {
  const int step = k / kPassesPerRound;
  if (step < ph.warmup_steps) return "warmup";
  if (step < ph.warmup_steps + ph.healthy_steps) return "healthy";
  if (step < ph.warmup_steps + ph.healthy_steps + ph.sdc_steps) return "sdc";
  return "hang";
}

std::vector<int> ScaleScenario::straggler_nodes() const {
  std::vector<int> out;
  for (int i = 1; i <= kStragglerNodes; ++i) {
    const int n = job.nodes() * i / (kStragglerNodes + 1);
    if (n > 0 && (out.empty() || out.back() != n)) out.push_back(n);
  }
  return out;
}

obs::Finding ScaleScenario::straggler(int node, int64_t t, bool open) const {
  const int g = node * ScaleJob::kTp + 2;
  obs::Finding f;
  f.kind = obs::FindingKind::kStraggler;
  f.verdict = obs::Verdict::kAttributed;
  f.open = open;
  f.suspects.push_back({g, job.host(node), job.pid(g), job.gpu(g), -1});
  f.first_seen_ns = kT0;
  f.last_seen_ns = t;
  f.summary = "rank " + std::to_string(g) + " is late";
  f.dedup_key = "straggler:" + job.host(node) + ":" + std::to_string(job.pid(g)) + (open ? ":gpu" : ":history");
  return f;
}

std::string describe_finding(const obs::Finding& f) {
  std::string s = std::string(obs::to_string(f.kind)) + " " + obs::to_string(f.verdict) + " " +
                  (f.open ? "open" : "closed") + " [" + f.comm_name +
                  (f.key ? " " + f.key->func + " #" + std::to_string(f.key->seq) : "") + "] suspects";
  for (const obs::Suspect& x : f.suspects) s += " " + std::to_string(x.global_rank);
  return s;
}

void run_simulated_node(const ScaleScenario& s, int n, net::Channel& ch, net::Judge* judge,
                        const std::function<void(int round)>& before_round) {
  ScaleJob::Node view(&s.job, n);
  net::DigestExchange ex(&ch, judge, digest_config());
  const std::vector<int> strag = s.straggler_nodes();
  const bool straggles = std::find(strag.begin(), strag.end(), n) != strag.end();
  for (int k = 0; k < s.passes(); ++k) {
    if (!ScaleScenario::has_round(k)) continue;
    const int r = k / ScaleScenario::kPassesPerRound;
    const int64_t t = ScaleScenario::pass_time(k);
    view.set_time(t);
    if (before_round) before_round(r);
    std::vector<obs::Finding> mine;
    if (straggles && r >= s.ph.warmup_steps && r % ScaleScenario::kRefreshRounds == n % ScaleScenario::kRefreshRounds)
      mine.push_back(s.straggler(n, t, true));
    ex.round(view, t, net::ClockEstimate{}, mine);
  }
}

bool run_other_nodes(const ScaleScenario& s, net::InprocNetwork& network, std::string* error,
                     const std::function<void(int round)>& before_round) {
  const int N = s.job.nodes();
  std::mutex mu;
  std::vector<std::thread> threads;
  threads.reserve(N);
  for (int n = 1; n < N; ++n) {
    net::Channel& ch = network.endpoint(n);
    ch.set_timeout(std::chrono::milliseconds(1200000));
    threads.emplace_back([&, n] {
      try {
        run_simulated_node(s, n, network.endpoint(n), nullptr, n == 1 ? before_round : std::function<void(int)>{});
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(mu);
        if (error && error->empty()) *error = "node-rank " + std::to_string(n) + ": " + e.what();
      }
    });
  }
  for (auto& th : threads) th.join();
  return !error || error->empty();
}

net::DigestConfig scale_digest_config() { return digest_config(); }

ScaleNode::ScaleNode(const ScaleScenario& s, int node, const std::string& dir)
    : s_(s), node_(node), cur_(ScaleJob::kTp) {
  const ScaleJob& job = s.job;
  const int g0 = node * ScaleJob::kTp;
  fj_ = std::make_unique<FakeJob>(dir, "scale", ScaleJob::kTp, job.host(node), 1024, 8, g0);
  // The node's communicators in its segments: FakeJob comm index and member index per rank.
  for (int q = 0; q < ScaleJob::kTp; ++q) {
    for (const auto& [c, r] : job.comms_of(g0 + q)) {
      if (fj_comm_.count(c)) continue;
      const ScaleJob::CommDef& cd = job.comms()[c];
      std::vector<int> procs, ranks;
      for (int q2 = 0; q2 < ScaleJob::kTp; ++q2) {
        for (const auto& [c2, r2] : job.comms_of(g0 + q2)) {
          if (c2 != c) continue;
          member_[{c, q2}] = int(procs.size());
          procs.push_back(q2);
          ranks.push_back(r2);
        }
      }
      fj_comm_[c] = fj_->add_comm(cd.hash, procs, cd.name, cd.nranks, ranks, cd.nnodes);
    }
  }
  store_ = store::StoreWriter::open(dir + "/node-" + std::to_string(node) + ".db", {}, &error_);
  if (!store_) {
    error_ = "store: " + error_;
    return;
  }
  obs::ObserverOptions opt;
  opt.job = "scale";
  opt.host = job.host(node);
  opt.shm_dir = dir;
  opt.node_rank = node;
  opt.nodes = job.nodes();
  opt.interval_ns = ScaleScenario::kPassNs;
  opt.reclaim_after_ns = -1;
  opt.hang.timeout_ns = ScaleScenario::kHangTimeoutNs;
  opt.hang.defer_cross_node = true;
  opt.liveness = fj_->liveness();
  opt.log = [](const std::string&) {};
  observer_ = std::make_unique<obs::Observer>(opt, store_.get());
  const net::DigestConfig cfg = digest_config();
  obs::CrossNodeOptions co;
  co.gloo.rank = node;
  co.gloo.size = job.nodes();
  co.view.settle_ns = opt.judge.settle_timeout_ns;
  co.view.retain_ops = cfg.max_range_ops + 256;
  co.view.hang_timeout_ns = opt.hang.timeout_ns;
  co.hang = opt.hang;
  step_ = std::make_unique<obs::CrossNodeStep>(observer_->model(), observer_->mutex(), co);
  // The leader's board holds one closed finding per node from earlier in the job.
  if (node == 0) {
    for (int n = 1; n < job.nodes(); ++n) pending_.findings.push_back(s.straggler(n, kT0, false));
  }
  observer_->set_cross_node_step([this](obs::Observer::CrossNodeIo& io) {
    std::vector<obs::Finding> out = step_->step(io, std::move(pending_), 0);
    pending_ = {};
    for (obs::Finding& f : out) outbox_.push_back(std::move(f));
  });
  ok_ = true;
}

ScaleNode::~ScaleNode() = default;

void ScaleNode::write_records(int64_t t) {
  const ScaleJob& job = s_.job;
  const int g0 = node_ * ScaleJob::kTp;
  const int64_t target = job.step_at(t);
  for (int q = 0; q < ScaleJob::kTp; ++q) {
    const int g = g0 + q;
    Cursor& c = cur_[q];
    for (;;) {
      job.reached(g, c.step, t, &reached_);
      for (size_t j = c.written; j < reached_.size(); ++j) {
        const ScaleJob::JobOp& op = reached_[j].op;
        if (reached_[j].state != shm::kStateComplete && c.running) break;
        FakeRec rec = fj_->enqueue(fj_comm_.at(op.comm), member_.at({op.comm, q}), op.spec);
        FakeJob::start(rec, op.gpu_start_ns);
        if (reached_[j].state != shm::kStateComplete) {
          c.running = true;
          break;
        }
        FakeJob::complete(rec, op.gpu_end_ns);
        if (uint64_t fp = job.fp_recv(g, op)) FakeJob::fp_recv(rec, fp);
        c.written = j + 1;
      }
      if (c.step >= target) break;
      c.step++;
      c.written = 0;
      c.running = false;
    }
  }
}

void ScaleNode::pass(int64_t t_ns) {
  write_records(t_ns);
  observer_->pass(t_ns);
}

void ScaleNode::harvest(net::RoundResult& r) {
  for (obs::Finding& f : r.findings) pending_.findings.push_back(std::move(f));
  for (obs::Finding& f : r.decided) pending_.decided.push_back(std::move(f));
  for (net::CrossNodeTiming& x : r.timings) pending_.timings.push_back(std::move(x));
}

std::vector<obs::Finding> ScaleNode::take_outbox() {
  std::vector<obs::Finding> out = std::move(outbox_);
  outbox_.clear();
  return out;
}

LeaderResult run_leader(const ScaleScenario& s, net::Channel& ch, const std::string& dir,
                        const std::function<uint64_t()>& other_writes, bool verbose) {
  const ScaleJob& job = s.job;
  LeaderResult res;
  ScaleNode leader(s, 0, dir);
  if (!leader.ok()) {
    res.why = leader.error();
    return res;
  }
  obs::Observer& observer = leader.observer();
  net::DigestExchange ex(&ch, leader.judge(), digest_config());

  const int healthy_end = (s.ph.warmup_steps + s.ph.healthy_steps) * ScaleScenario::kPassesPerRound;
  for (int k = 0; k < s.passes(); ++k) {
    const int64_t t = ScaleScenario::pass_time(k);
    if (k == healthy_end) {
      res.healthy_ok = true;
      for (const obs::Finding* f : observer.findings().all()) {
        if (f->dedup_key.rfind("straggler:", 0) == 0) continue;
        res.healthy_ok = false;
        res.why += "healthy phase: " + describe_finding(*f) + "; ";
      }
    }
    const uint64_t w0 = wchar(), b0 = other_writes ? other_writes() : 0;
    const int64_t c0 = thread_cpu_ns();
    leader.pass(t);
    const int64_t c1 = thread_cpu_ns();
    if (ScaleScenario::has_round(k)) {
      const net::Traffic before = ch.traffic();
      net::RoundResult r = ex.round(leader.view(), t, net::ClockEstimate{}, {});
      const net::Traffic got = ch.traffic() - before;
      if (verbose) {
        std::fprintf(stderr,
                     "round %d (%s): placed %d compared %d collisions %d partitions %llu narrowing %d stalls %zu "
                     "gathered %d waits %d (%llu members) decided %zu findings %zu received %.1f KiB; pass %.1f ms, "
                     "round %.1f ms (thread CPU)\n",
                     k / ScaleScenario::kPassesPerRound, s.phase_of(k), r.streams_placed, r.streams_compared,
                     r.collisions, (unsigned long long)r.partitions, r.narrowing_rounds, r.stalls.size(),
                     int(r.gathered), int(r.waits_gathered), (unsigned long long)r.waits_members, r.decided.size(),
                     r.findings.size(), got.wire_received() / 1024.0, double(c1 - c0) / 1e6,
                     double(thread_cpu_ns() - c1) / 1e6);
        for (const obs::Finding& f : r.decided) std::fprintf(stderr, "  decided: %s\n", describe_finding(f).c_str());
      }
      bool sdc = false, hang = false;
      for (const obs::Finding& f : r.decided) {
        sdc |= f.kind == obs::FindingKind::kSdc;
        hang |= f.kind == obs::FindingKind::kHang && f.open;
      }
      if (r.gathered && std::string(s.phase_of(k)) == "sdc" && !r.decided.empty()) res.digest_drills++;
      if (sdc && res.drill_kib < 0) res.drill_kib = double(got.wire_received()) / 1024.0;
      if (hang && res.hang_drill_kib < 0) res.hang_drill_kib = double(got.wire_received()) / 1024.0;
      leader.harvest(r);
    }
    const int64_t c2 = thread_cpu_ns();
    const uint64_t w1 = wchar(), b1 = other_writes ? other_writes() : 0;
    if (std::string(s.phase_of(k)) != "warmup")
      res.samples.push_back({s.phase_of(k), c2 - c0, c1 - c0, c2 - c1, (w1 - w0) - (b1 - b0)});
  }
  leader.pass(ScaleScenario::pass_time(s.passes()));  // applies the last round's harvest

  // ---- checks
  const std::string dp_of_sdc = job.comms()[job.comms_of(s.sdc_rank)[2].first].name;
  const std::string dp_of_hang = job.comms()[job.comms_of(s.hang_rank)[2].first].name;
  int sdc_found = 0, hang_found = 0, hang_bad = 0;
  res.others_ok = true;
  // The stragglers are the scenario's own, each exactly once: every other node's closed one from
  // earlier in the job and an open one per straggling node, naming its TP rank 2.
  std::multiset<std::string> stragglers, want_stragglers;
  for (int n = 1; n < job.nodes(); ++n) want_stragglers.insert(describe_finding(s.straggler(n, 0, false)));
  for (int n : s.straggler_nodes()) want_stragglers.insert(describe_finding(s.straggler(n, 0, true)));
  for (const obs::Finding* f : observer.findings().all()) {
    res.findings.push_back(*f);
    if (f->kind == obs::FindingKind::kSdc) {
      ++sdc_found;
      const bool ok = f->verdict == obs::Verdict::kAttributed && f->suspects.size() == 1 &&
                      f->suspects[0].global_rank == s.sdc_rank && f->comm_name == dp_of_sdc && f->key &&
                      f->key->func == "AllReduce" && f->key->seq == s.sdc_seq;
      res.sdc_ok = ok;
      if (!ok) res.why += "sdc: " + describe_finding(*f) + "; ";
    } else if (f->kind == obs::FindingKind::kHang) {
      const bool ok = f->open && f->verdict == obs::Verdict::kAttributed && f->suspects.size() == 1 &&
                      f->suspects[0].global_rank == s.hang_rank && f->comm_name == dp_of_hang && f->key &&
                      f->key->func == "AllReduce" && f->key->seq == uint64_t(s.hang_step) * uint64_t(job.shape().dp_ops);
      ++hang_found;
      if (!ok) {
        ++hang_bad;
        res.why += "hang: " + describe_finding(*f) + "; ";
      }
    } else if (f->kind == obs::FindingKind::kStraggler) {
      stragglers.insert(describe_finding(*f));
    } else {
      res.others_ok = false;
      res.why += "unexpected: " + describe_finding(*f) + "; ";
    }
  }
  if (stragglers != want_stragglers) {
    res.others_ok = false;
    res.why += "stragglers: " + std::to_string(stragglers.size()) + " found, " + std::to_string(want_stragglers.size()) +
               " expected";
    for (const std::string& d : stragglers)
      if (!want_stragglers.count(d)) res.why += "; unexpected " + d;
    for (const std::string& d : want_stragglers)
      if (!stragglers.count(d)) res.why += "; missing " + d;
    res.why += "; ";
  }
  res.hang_ok = hang_found == 1 && hang_bad == 0;
  if (sdc_found != 1) {
    res.sdc_ok = false;
    res.why += std::to_string(sdc_found) + " sdc findings; ";
  }
  if (hang_found != 1) res.why += std::to_string(hang_found) + " hang findings; ";
  return res;
}

NodeResult run_node(const ScaleScenario& s, int node, net::Channel& ch, const std::string& dir) {
  NodeResult res;
  ScaleNode me(s, node, dir);
  if (!me.ok()) {
    res.why = me.error();
    return res;
  }
  net::DigestExchange ex(&ch, nullptr, digest_config());
  for (int k = 0; k < s.passes(); ++k) {
    const int64_t t = ScaleScenario::pass_time(k);
    const int64_t c0 = thread_cpu_ns();
    me.pass(t);
    const int64_t c1 = thread_cpu_ns();
    uint64_t sent = 0;
    if (ScaleScenario::has_round(k)) {
      const net::Traffic before = ch.traffic();
      net::RoundResult r = ex.round(me.view(), t, net::ClockEstimate{}, me.take_outbox());
      sent = (ch.traffic() - before).wire_sent();
      res.waits_rounds += r.waits_gathered ? 1 : 0;
      if (std::string(s.phase_of(k)) != "warmup") {
        res.round_sent.push_back(sent);
        res.round_hang.push_back(std::string(s.phase_of(k)) == "hang");
      }
      me.harvest(r);
    }
    const int64_t c2 = thread_cpu_ns();
    const struct mallinfo2 mi = mallinfo2();
    res.peak_heap = std::max<uint64_t>(res.peak_heap, mi.uordblks + mi.hblkhd);
    if (std::string(s.phase_of(k)) != "warmup") res.samples.push_back({s.phase_of(k), c2 - c0, c1 - c0, c2 - c1, sent});
  }
  me.pass(ScaleScenario::pass_time(s.passes()));
  res.wire_sent = ch.traffic().wire_sent();
  res.ok = true;
  return res;
}

}  // namespace scout::testing

// The leader's work as the job grows (`make bench`): 1,024, 4,096 and 16,384 ranks on 128, 512 and
// 2,048 nodes of 8 ranks (test/support/scale_job.h: TP 8 inside each node, PP 4 across nodes, DP
// across the rest; per rank and second 128 TP AllReduce, 16 pipeline Send/Recv, 4 DP AllReduce, 4
// DP AllGather, 1 model-parallel AllReduce: 153 operations per rank per second).
//
// One process per size holds only the leader (node-rank 0): its Observer over its 8 ranks'
// segments (written by FakeJob, as the plugin does), its SQLite store, the cross-node step
// (observer/cluster/cross_node.h: NodeView, LeaderMerge, the CoreJudge) and its digest rounds. A
// second process runs the other nodes' observers (one thread each, net::DigestExchange over
// ScaleJob::Node views); the two share one in-process network bridged over a socket, so every
// message the leader receives is counted as on the wire (net::Traffic) and the leader's memory and
// CPU are its own. Observer passes every 250 ms and digest rounds every second (the defaults), hang
// timeout and stall 10 s. The job, in one run:
//   healthy  32 s; the leader's board holds one closed finding per node from earlier in the job,
//            four nodes keep an open straggler finding and refresh it every 10 s;
//   sdc      40 s: one rank on the last node receives different bytes in one DP AllReduce;
//   hang     64 s: one rank on the last node stops before its DP AllReduce; the job blocks behind
//            it (every other rank waits in a DP or model-parallel AllReduce).
// Per size, over every pass of the three phases: the leader's CPU per 250 ms interval (its pass and,
// once a second, its digest round with what it judges there: thread CPU time; median and p99), its
// peak RSS (VmHWM), bytes its store wrote per pass (write(2) bytes of the process, the network's
// own excluded), and the bytes it received in the round that decided the sdc (and the hang).
// Checked, not only timed: the sdc finding names the corrupted rank and operation, the hang finding
// names the stopped rank and the operation it never entered, and the healthy phase opens nothing.
// Printed: one line per size, the growth 16,384 vs 1,024 ranks, the targets.
//
// Usage: scale_bench [--ranks R] [--verbose]   (R: one size only; --verbose: a line per leader round)
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/names.h"
#include "observer/cluster/cross_node.h"
#include "observer/net/digest.h"
#include "observer/net/inproc_channel.h"
#include "observer/pipeline/observer.h"
#include "observer/store/writer.h"
#include "test/support/fake_job.h"
#include "test/support/scale_job.h"
#include "test/support/tmpdir.h"

namespace {

namespace obs = scout::obs;
namespace net = scout::net;
namespace shm = scout::shm;
using scout::testing::FakeJob;
using scout::testing::kMs;
using scout::testing::kSec;
using scout::testing::kT0;
using scout::testing::ScaleJob;

constexpr int64_t kPassNs = 250 * kMs;  // observer pass (SCOUT_OBSERVER_INTERVAL_MS default)
constexpr int kPassesPerRound = 4;      // digest round every second (SCOUT_NET_INTERVAL_MS default)
constexpr int64_t kHangTimeoutNs = 10 * kSec;
constexpr int kWarmupSteps = 4;
constexpr int kHealthySteps = 32, kSdcSteps = 40, kHangSteps = 64;
constexpr int kSdcStep = kWarmupSteps + kHealthySteps + 1;  // the corrupted DP AllReduce's step
constexpr int kHangStep = kWarmupSteps + kHealthySteps + kSdcSteps + 2;
constexpr int kSteps = kWarmupSteps + kHealthySteps + kSdcSteps + kHangSteps;
constexpr int kStragglerNodes = 4;
constexpr int kRefreshRounds = 10;
bool g_verbose = false;  // --verbose: one line per digest round of the leader

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

uint64_t vm_hwm_kib() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::strtoull(line.c_str() + 6, nullptr, 10);
  }
  return 0;
}

// ---- the network split over two processes: frames (dest, source, tag, length, bytes) on a socket ----

struct Frame {
  int32_t dest, source;
  uint64_t tag, len;
};

bool read_all(int fd, void* p, size_t n) {
  auto* b = static_cast<uint8_t*>(p);
  while (n > 0) {
    ssize_t k = ::read(fd, b, n);
    if (k <= 0) return false;
    b += k;
    n -= size_t(k);
  }
  return true;
}
void write_all(int fd, const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  while (n > 0) {
    ssize_t k = ::write(fd, b, n);
    if (k <= 0) {
      std::perror("scale_bench: bridge write");
      std::_Exit(3);
    }
    b += k;
    n -= size_t(k);
  }
}

class Bridge {
 public:
  Bridge(int fd, net::InprocNetwork& network, bool leader_side) : fd_(fd) {
    network.set_bridge({[leader_side](int dest) { return leader_side ? dest != 0 : dest == 0; },
                        [this](int dest, int source, uint64_t tag, std::vector<uint8_t> bytes) {
                          Frame f{dest, source, tag, bytes.size()};
                          std::lock_guard<std::mutex> lock(mu_);
                          write_all(fd_, &f, sizeof(f));
                          if (!bytes.empty()) write_all(fd_, bytes.data(), bytes.size());
                          written_ += sizeof(f) + bytes.size();
                        }});
    reader_ = std::thread([this, &network] {
      Frame f;
      while (read_all(fd_, &f, sizeof(f))) {
        std::vector<uint8_t> b(f.len);
        if (f.len && !read_all(fd_, b.data(), f.len)) break;
        network.deliver(f.dest, f.source, f.tag, std::move(b));
      }
    });
  }
  ~Bridge() {
    ::shutdown(fd_, SHUT_WR);
    reader_.join();
    ::close(fd_);
  }
  uint64_t written() {
    std::lock_guard<std::mutex> lock(mu_);
    return written_;
  }

 private:
  int fd_;
  std::mutex mu_;
  uint64_t written_ = 0;
  std::thread reader_;
};

// ---- the job and its faults, the same in both processes ----

struct Setup {
  explicit Setup(int nodes) : job(nodes) {
    hang_rank = (nodes - 1) * ScaleJob::kTp + 3;
    sdc_rank = (nodes - 1) * ScaleJob::kTp + 5;
    sdc_seq = uint64_t(kSdcStep) * uint64_t(job.shape().dp_ops) + 1;
    job.hang(hang_rank, kHangStep);
    job.corrupt(sdc_rank, sdc_seq);
  }
  ScaleJob job;
  int hang_rank, sdc_rank;
  uint64_t sdc_seq;
};

net::DigestConfig digest_config() {
  net::DigestConfig c;
  c.stall_ns = kHangTimeoutNs;  // the observer's --hang-timeout (net::digest_config)
  return c;
}

int64_t pass_time(int k) { return kT0 + int64_t(k + 1) * kPassNs; }
constexpr int kPasses = kSteps * kPassesPerRound;
bool has_round(int k) { return k % kPassesPerRound == kPassesPerRound - 1; }
const char* phase_of(int k) {
  const int step = k / kPassesPerRound;
  if (step < kWarmupSteps) return "warmup";
  if (step < kWarmupSteps + kHealthySteps) return "healthy";
  if (step < kWarmupSteps + kHealthySteps + kSdcSteps) return "sdc";
  return "hang";
}

std::vector<int> straggler_nodes(int nodes) {
  std::vector<int> out;
  for (int i = 1; i <= kStragglerNodes; ++i) out.push_back(nodes * i / (kStragglerNodes + 1));
  return out;
}

// A node's straggler finding: open ones are refreshed by their node; closed ones are the
// leader's history (one per node) from earlier in the job.
obs::Finding straggler(const ScaleJob& job, int node, int64_t t, bool open) {
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

// ---- the other nodes (second process) ----

[[noreturn]] void run_others(Setup& s, int fd) {
  const int N = s.job.nodes();
  const std::vector<int>& pos = s.job.hang_positions();
  write_all(fd, pos.data(), ScaleJob::kTp * sizeof(int));  // the leader's ranks
  net::InprocNetwork network(N);
  std::vector<std::unique_ptr<ScaleJob::Node>> views;
  std::vector<std::unique_ptr<net::DigestExchange>> ex;
  for (int n = 0; n < N; ++n) {
    views.push_back(std::make_unique<ScaleJob::Node>(&s.job, n));
    net::Channel& ch = network.endpoint(n);
    ch.set_timeout(std::chrono::milliseconds(1200000));
    ex.push_back(n == 0 ? nullptr : std::make_unique<net::DigestExchange>(&ch, nullptr, digest_config()));
  }
  const std::vector<int> strag = straggler_nodes(N);
  int rc = 0;
  {
    Bridge bridge(fd, network, false);
    std::vector<std::thread> threads;
    std::mutex err_mu;
    for (int n = 1; n < N; ++n) {
      threads.emplace_back([&, n] {
        const bool straggles = std::find(strag.begin(), strag.end(), n) != strag.end();
        try {
          for (int k = 0; k < kPasses; ++k) {
            if (!has_round(k)) continue;
            const int r = k / kPassesPerRound;
            const int64_t t = pass_time(k);
            views[n]->set_time(t);
            std::vector<obs::Finding> mine;
            if (straggles && r >= kWarmupSteps && r % kRefreshRounds == n % kRefreshRounds)
              mine.push_back(straggler(s.job, n, t, true));
            ex[n]->round(*views[n], t, net::ClockEstimate{}, mine);
          }
        } catch (const std::exception& e) {
          std::lock_guard<std::mutex> lock(err_mu);
          std::fprintf(stderr, "scale_bench: node %d: %s\n", n, e.what());
          rc = 2;
        }
      });
    }
    for (auto& th : threads) th.join();
  }
  std::fflush(stderr);
  std::_Exit(rc);
}

// ---- the leader (this process) ----

struct Sample {
  const char* phase;
  int64_t cpu_ns, pass_ns, round_ns;
  uint64_t store_bytes;
};

struct Result {
  int ranks = 0, nodes = 0;
  std::vector<Sample> samples;
  uint64_t rss_kib = 0;
  double drill_kib = -1, hang_drill_kib = -1;
  int drill_rounds = 0;  // rounds that gathered for the sdc drill-down
  bool sdc_ok = false, hang_ok = false, healthy_ok = false;
  std::string why;  // what a failed check saw
};

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, size_t(q * double(v.size() - 1) + 0.5));
  return v[i];
}

std::string describe(const obs::Finding& f) {
  std::string s = std::string(obs::to_string(f.kind)) + " " + obs::to_string(f.verdict) + " " +
                  (f.open ? "open" : "closed") + " [" + f.comm_name +
                  (f.key ? " " + f.key->func + " #" + std::to_string(f.key->seq) : "") + "] suspects";
  for (const obs::Suspect& x : f.suspects) s += " " + std::to_string(x.global_rank);
  return s;
}

Result run_leader(Setup& s, int fd) {
  const int N = s.job.nodes();
  Result res;
  res.ranks = s.job.ranks();
  res.nodes = N;
  {
    std::vector<int> pos(size_t(s.job.ranks()), 0);
    if (!read_all(fd, pos.data(), ScaleJob::kTp * sizeof(int))) {
      res.why = "the other nodes' process did not start";
      return res;
    }
    s.job.set_hang_positions(std::move(pos));
  }
  scout::testing::TempDir dir;
  FakeJob fj(dir.path(), "scale", ScaleJob::kTp, "node0", 1024, 8);
  // The leader's communicators in its segments: FakeJob comm index and member index per rank.
  std::map<int, int> fj_comm;
  std::map<std::pair<int, int>, int> member;
  for (int g = 0; g < ScaleJob::kTp; ++g) {
    for (const auto& [c, r] : s.job.comms_of(g)) {
      if (fj_comm.count(c)) continue;
      const ScaleJob::CommDef& cd = s.job.comms()[c];
      std::vector<int> procs, ranks;
      for (int q = 0; q < ScaleJob::kTp; ++q) {
        for (const auto& [c2, r2] : s.job.comms_of(q)) {
          if (c2 != c) continue;
          member[{c, q}] = int(procs.size());
          procs.push_back(q);
          ranks.push_back(r2);
        }
      }
      fj_comm[c] = fj.add_comm(cd.hash, procs, cd.name, cd.nranks, ranks, cd.nnodes);
    }
  }
  std::string err;
  auto store = scout::store::StoreWriter::open(dir.path() + "/node-0.db", {}, &err);
  if (!store) {
    res.why = "store: " + err;
    return res;
  }
  obs::ObserverOptions opt;
  opt.job = "scale";
  opt.host = "node0";
  opt.shm_dir = dir.path();
  opt.node_rank = 0;
  opt.nodes = N;
  opt.interval_ns = kPassNs;
  opt.reclaim_after_ns = -1;
  opt.hang.timeout_ns = kHangTimeoutNs;
  opt.hang.defer_cross_node = true;
  opt.liveness = fj.liveness();
  int logged = 0;
  opt.log = [&](const std::string&) { ++logged; };
  obs::Observer observer(opt, store.get());
  const net::DigestConfig cfg = digest_config();
  obs::CrossNodeOptions co;
  co.gloo.rank = 0;
  co.gloo.size = N;
  co.view.settle_ns = opt.judge.settle_timeout_ns;
  co.view.retain_ops = cfg.max_range_ops + 256;
  co.hang = opt.hang;
  obs::CrossNodeStep step(observer.model(), observer.mutex(), co);
  net::NetAgent::Harvest pending;
  for (int n = 1; n < N; ++n) pending.findings.push_back(straggler(s.job, n, kT0, false));
  observer.set_cross_node_step([&](obs::Observer::CrossNodeIo& io) {
    step.step(io, std::move(pending), 0);
    pending = {};
  });
  net::InprocNetwork network(N);
  auto bridge = std::make_unique<Bridge>(fd, network, true);
  net::Channel& ch = network.endpoint(0);
  ch.set_timeout(std::chrono::milliseconds(1200000));
  net::DigestExchange ex(&ch, &step.judge(), cfg);

  // What the leader's ranks wrote so far: per rank (step, operations of it written, running one).
  struct Cursor {
    int64_t step = 0;
    size_t written = 0;
    bool running = false;
  };
  std::vector<Cursor> cur(ScaleJob::kTp);
  std::vector<ScaleJob::Reached> reached;
  auto write_records = [&](int64_t t) {
    for (int g = 0; g < ScaleJob::kTp; ++g) {
      Cursor& c = cur[g];
      const int64_t target = s.job.step_at(t);
      for (;;) {
        s.job.reached(g, c.step, t, &reached);
        for (size_t j = c.written; j < reached.size(); ++j) {
          const ScaleJob::JobOp& op = reached[j].op;
          if (reached[j].state != shm::kStateComplete && c.running) break;
          scout::testing::FakeRec rec = fj.enqueue(fj_comm.at(op.comm), member.at({op.comm, g}), op.spec);
          FakeJob::start(rec, op.gpu_start_ns);
          if (reached[j].state != shm::kStateComplete) {
            c.running = true;
            break;
          }
          FakeJob::complete(rec, op.gpu_end_ns);
          if (uint64_t fp = s.job.fp_recv(g, op)) FakeJob::fp_recv(rec, fp);
          c.written = j + 1;
        }
        if (c.step >= target) break;
        c.step++;
        c.written = 0;
        c.running = false;
      }
    }
  };

  auto check_healthy = [&] {
    res.healthy_ok = true;
    for (const obs::Finding* f : observer.findings().all()) {
      if (f->dedup_key.rfind("straggler:", 0) == 0) continue;
      res.healthy_ok = false;
      res.why += "healthy phase: " + describe(*f) + "; ";
    }
  };
  for (int k = 0; k < kPasses; ++k) {
    const int64_t t = pass_time(k);
    if (k == (kWarmupSteps + kHealthySteps) * kPassesPerRound) check_healthy();
    write_records(t);
    const uint64_t w0 = wchar(), b0 = bridge->written();
    const int64_t c0 = thread_cpu_ns();
    observer.pass(t);
    const int64_t c1 = thread_cpu_ns();
    if (has_round(k)) {
      const net::Traffic before = ch.traffic();
      net::RoundResult r = ex.round(step.view(), t, net::ClockEstimate{}, {});
      const net::Traffic got = ch.traffic() - before;
      if (g_verbose)
        std::fprintf(stderr,
                     "round %d t %llds: placed %d compared %d coll %d mism %d gaps %d P %llu stalls %zu anywhere %d "
                     "gathered %d decided %zu findings %zu recv %.1f KiB\n",
                     k / kPassesPerRound, (long long)((t - kT0) / kSec), r.streams_placed, r.streams_compared,
                     r.collisions, r.range_mismatches, r.digest_gaps, (unsigned long long)r.partitions, r.stalls.size(),
                     int(r.stalled_anywhere), int(r.gathered), r.decided.size(), r.findings.size(),
                     got.wire_received() / 1024.0);
      bool sdc = false, hang = false;
      for (const obs::Finding& f : r.decided) {
        sdc |= f.kind == obs::FindingKind::kSdc;
        hang |= f.kind == obs::FindingKind::kHang && f.open;
      }
      if (r.gathered && std::string(phase_of(k)) == "sdc" && !r.decided.empty()) res.drill_rounds++;
      if (sdc && res.drill_kib < 0) res.drill_kib = double(got.wire_received()) / 1024.0;
      if (hang && res.hang_drill_kib < 0) res.hang_drill_kib = double(got.wire_received()) / 1024.0;
      for (obs::Finding& f : r.findings) pending.findings.push_back(std::move(f));
      for (obs::Finding& f : r.decided) pending.decided.push_back(std::move(f));
      for (net::CrossNodeTiming& x : r.timings) pending.timings.push_back(std::move(x));
    }
    const int64_t c2 = thread_cpu_ns();
    const uint64_t w1 = wchar(), b1 = bridge->written();
    if (std::string(phase_of(k)) != "warmup")
      res.samples.push_back({phase_of(k), c2 - c0, c1 - c0, c2 - c1, (w1 - w0) - (b1 - b0)});
  }
  observer.pass(pass_time(kPasses));  // applies the last round's harvest
  bridge.reset();
  res.rss_kib = vm_hwm_kib();

  // ---- checks
  const std::string dp_of_sdc = s.job.comms()[s.job.comms_of(s.sdc_rank)[2].first].name;
  const std::string dp_of_hang = s.job.comms()[s.job.comms_of(s.hang_rank)[2].first].name;
  int sdc_found = 0;
  for (const obs::Finding* f : observer.findings().all()) {
    if (f->kind == obs::FindingKind::kSdc) {
      ++sdc_found;
      const bool ok = f->verdict == obs::Verdict::kAttributed && f->suspects.size() == 1 &&
                      f->suspects[0].global_rank == s.sdc_rank && f->comm_name == dp_of_sdc && f->key &&
                      f->key->func == "AllReduce" && f->key->seq == s.sdc_seq;
      res.sdc_ok = ok;
      if (!ok) res.why += "sdc: " + describe(*f) + "; ";
    }
    if (f->kind == obs::FindingKind::kHang) {
      const bool ok = f->open && f->verdict == obs::Verdict::kAttributed && f->suspects.size() == 1 &&
                      f->suspects[0].global_rank == s.hang_rank && f->comm_name == dp_of_hang && f->key &&
                      f->key->func == "AllReduce" &&
                      f->key->seq == uint64_t(kHangStep) * uint64_t(s.job.shape().dp_ops);
      res.hang_ok = res.hang_ok || ok;
      if (!ok) res.why += "hang: " + describe(*f) + "; ";
    } else if (f->kind != obs::FindingKind::kSdc && f->kind != obs::FindingKind::kStraggler) {
      res.why += "unexpected: " + describe(*f) + "; ";
    }
  }
  if (sdc_found != 1) {
    res.sdc_ok = false;
    res.why += std::to_string(sdc_found) + " sdc findings; ";
  }
  if (!res.hang_ok && res.why.find("hang:") == std::string::npos) res.why += "no hang finding; ";
  return res;
}

struct Line {
  int ranks = 0, nodes = 0;
  double pass_ms = 0, p99_ms = 0, rss_mb = 0, store_kb = 0, drill_kib = 0;
  bool ok = false;
};

Line report(const Result& r) {
  Line l;
  l.ranks = r.ranks;
  l.nodes = r.nodes;
  std::vector<double> all, pass, round;
  std::map<std::string, std::vector<double>> by_phase;
  double store = 0;
  for (const Sample& x : r.samples) {
    all.push_back(double(x.cpu_ns) / 1e6);
    pass.push_back(double(x.pass_ns) / 1e6);
    if (x.round_ns > 0) round.push_back(double(x.round_ns) / 1e6);
    by_phase[x.phase].push_back(double(x.cpu_ns) / 1e6);
    store += double(x.store_bytes);
  }
  l.pass_ms = percentile(all, 0.5);
  l.p99_ms = percentile(all, 0.99);
  l.rss_mb = double(r.rss_kib) / 1024.0;
  l.store_kb = r.samples.empty() ? 0 : store / double(r.samples.size()) / 1024.0;
  l.drill_kib = r.drill_kib;
  l.ok = r.sdc_ok && r.hang_ok && r.healthy_ok;
  std::printf("ranks %d nodes %d pass_ms %.2f p99_ms %.2f rss_mb %.1f store_kb_per_pass %.1f drill_leader_kib %.1f\n",
              l.ranks, l.nodes, l.pass_ms, l.p99_ms, l.rss_mb, l.store_kb, l.drill_kib);
  std::printf("  per phase (median / p99 / max ms):");
  for (const char* ph : {"healthy", "sdc", "hang"}) {
    const auto& v = by_phase[ph];
    std::printf(" %s %.2f / %.2f / %.2f;", ph, percentile(v, 0.5), percentile(v, 0.99), percentile(v, 1.0));
  }
  std::printf(" observer pass %.2f / %.2f, digest round %.2f / %.2f\n", percentile(pass, 0.5), percentile(pass, 0.99),
              percentile(round, 0.5), percentile(round, 0.99));
  std::printf("  hang drill-down round: leader received %.1f KiB; sdc drill-down rounds %d\n", r.hang_drill_kib,
              r.drill_rounds);
  std::printf("  checks: healthy phase opens nothing: %s; sdc names rank %s: %s; hang names its root: %s%s%s\n",
              r.healthy_ok ? "yes" : "NO", "the corrupted", r.sdc_ok ? "yes" : "NO", r.hang_ok ? "yes" : "NO",
              r.why.empty() ? "" : " -- ", r.why.c_str());
  std::fflush(stdout);
  return l;
}

// One size in a child process (its own memory), the result as one line on `fd`.
Line run_size_child(int ranks) {
  int p[2];
  if (::pipe(p) != 0) std::abort();
  std::fflush(stdout);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(p[0]);
    Setup s(ranks / ScaleJob::kTp);
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) std::abort();
    std::fflush(stdout);
    const pid_t others = ::fork();
    if (others == 0) {
      ::close(sv[0]);
      ::close(p[1]);
      run_others(s, sv[1]);
    }
    ::close(sv[1]);
    Result r = run_leader(s, sv[0]);
    int st = 0;
    ::waitpid(others, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) r.why += "other nodes' process failed; ";
    Line l = report(r);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) l.ok = false;
    char buf[256];
    int n = std::snprintf(buf, sizeof(buf), "%d %d %f %f %f %f %f %d\n", l.ranks, l.nodes, l.pass_ms, l.p99_ms,
                          l.rss_mb, l.store_kb, l.drill_kib, l.ok ? 1 : 0);
    write_all(p[1], buf, size_t(n));
    std::fflush(stdout);
    std::_Exit(0);
  }
  ::close(p[1]);
  std::string text;
  char buf[256];
  ssize_t k;
  while ((k = ::read(p[0], buf, sizeof(buf))) > 0) text.append(buf, size_t(k));
  ::close(p[0]);
  int st = 0;
  ::waitpid(pid, &st, 0);
  Line l;
  int ok = 0;
  std::istringstream in(text);
  if (!(in >> l.ranks >> l.nodes >> l.pass_ms >> l.p99_ms >> l.rss_mb >> l.store_kb >> l.drill_kib >> ok)) {
    std::fprintf(stderr, "scale_bench: %d ranks: no result (exit status %d)\n", ranks, st);
    l.ranks = ranks;
    return l;
  }
  l.ok = ok != 0;
  return l;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> sizes = {1024, 4096, 16384};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--ranks" && i + 1 < argc) {
      sizes = {std::atoi(argv[++i])};
    } else if (a == "--verbose") {
      g_verbose = true;
    } else {
      std::fprintf(stderr, "usage: scale_bench [--ranks R] [--verbose]   (R a multiple of 32)\n");
      return 2;
    }
  }
  for (int r : sizes) {
    if (r < 32 || r % 32 != 0) {
      std::fprintf(stderr, "scale_bench: ranks must be a multiple of 32 (8 per node, 4 pipeline stages)\n");
      return 2;
    }
  }
  std::printf(
      "leader of a synthetic TP8 x PP4 x DP job, 8 ranks/node, 153 ops/rank/s; passes every 250 ms, digest rounds "
      "every 1 s; %d s healthy, %d s with one sdc, %d s hung behind one rank\n",
      kHealthySteps, kSdcSteps, kHangSteps);
  std::vector<Line> lines;
  bool ok = true;
  for (int r : sizes) {
    lines.push_back(run_size_child(r));
    ok = ok && lines.back().ok;
  }
  if (lines.size() > 1 && lines.front().pass_ms > 0) {
    const Line& a = lines.front();
    const Line& b = lines.back();
    std::printf("growth %d vs %d ranks: pass_ms %.2fx, p99_ms %.2fx, rss %.2fx, store %.2fx, drill %.2fx\n", b.ranks,
                a.ranks, b.pass_ms / a.pass_ms, b.p99_ms / a.p99_ms, b.rss_mb / a.rss_mb,
                a.store_kb > 0 ? b.store_kb / a.store_kb : 0.0, a.drill_kib > 0 ? b.drill_kib / a.drill_kib : 0.0);
    std::printf(
        "targets at %d ranks: pass median <= 50 ms: %s; p99 <= 200 ms: %s; rss <= 1024 MB: %s; drill-down <= 1024 "
        "KiB: %s; pass growth <= 4x: %s\n",
        b.ranks, b.pass_ms <= 50 ? "yes" : "NO", b.p99_ms <= 200 ? "yes" : "NO", b.rss_mb <= 1024 ? "yes" : "NO",
        b.drill_kib >= 0 && b.drill_kib <= 1024 ? "yes" : "NO", b.pass_ms / a.pass_ms <= 4 ? "yes" : "NO");
  }
  std::printf("checks (hang root, sdc attribution, quiet healthy phase) at every size: %s\n", ok ? "pass" : "FAIL");
  return ok ? 0 : 1;
}

// Cost per observer of the observer network: bytes sent per observer per second for 4,
// 64 and 1024 simulated nodes; the per-observer cost must stay flat as nodes grow.
//
// Workload (test/support/net_workload.h): 8 ranks per node, tensor parallelism inside the node,
// data parallelism across nodes: 8 DP communicators span every node, each with an AllReduce and
// an AllGather stream at 50 operations per second (16 cross-node streams per node). One digest
// round per simulated second, default settings (docs/observer-network.md). 4 nodes run twice:
// over real Gloo TCP (4 processes, loopback, file: rendezvous) and in process; 64 and 1024 nodes
// in process (one thread per observer, the same collectives and byte accounting).
// Printed per observer and round (= per second): payload and wire bytes sent, messages, CPU time
// of the round (the observer's thread; for Gloo also the whole process, Gloo's I/O thread
// included); then the ratio 1024 vs 4 nodes (flat means ~1), and the cost of one drill-down.
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <sstream>
#include <thread>
#include <vector>

#include "observer/cluster/core_judge.h"
#include "observer/net/digest.h"
#include "observer/net/gloo_channel.h"
#include "observer/net/inproc_channel.h"
#include "test/net/proc_util.h"
#include "test/support/net_workload.h"
#include "test/support/tmpdir.h"

namespace {

using namespace scout::net;
namespace obs = scout::obs;
using scout::testing::NetWorkload;

constexpr int64_t kSecond = 1000000000;
constexpr int kRanksPerNode = 8;
constexpr int kWarmup = 3;  // rounds before digests flow (watermarks) are not measured
constexpr int kMeasured = 8;

int64_t cpu_ns(clockid_t id) {
  timespec ts;
  clock_gettime(id, &ts);
  return int64_t(ts.tv_sec) * kSecond + ts.tv_nsec;
}

struct PerObserver {
  double payload_sent = 0, wire_sent = 0, messages_sent = 0, cpu_us = 0;  // per round
  double process_cpu_us = -1;  // Gloo only: the whole observer process, Gloo's I/O thread included
};

struct Row {
  std::string label;
  int nodes = 0;
  PerObserver mean, max, leader;
};

void add(PerObserver* acc, const PerObserver& x) {
  acc->process_cpu_us = acc->process_cpu_us < 0 || x.process_cpu_us < 0 ? -1 : acc->process_cpu_us + x.process_cpu_us;
  acc->payload_sent += x.payload_sent;
  acc->wire_sent += x.wire_sent;
  acc->messages_sent += x.messages_sent;
  acc->cpu_us += x.cpu_us;
}
void take_max(PerObserver* acc, const PerObserver& x) {
  acc->payload_sent = std::max(acc->payload_sent, x.payload_sent);
  acc->wire_sent = std::max(acc->wire_sent, x.wire_sent);
  acc->messages_sent = std::max(acc->messages_sent, x.messages_sent);
  acc->cpu_us = std::max(acc->cpu_us, x.cpu_us);
}

Row summarize(const std::string& label, const std::vector<PerObserver>& per) {
  Row r;
  r.label = label;
  r.nodes = int(per.size());
  r.mean.process_cpu_us = 0;
  for (const auto& p : per) {
    add(&r.mean, p);
    take_max(&r.max, p);
  }
  const double n = double(per.size());
  r.mean.payload_sent /= n;
  r.mean.wire_sent /= n;
  r.mean.messages_sent /= n;
  r.mean.cpu_us /= n;
  if (r.mean.process_cpu_us > 0) r.mean.process_cpu_us /= n;
  r.leader = per[0];
  return r;
}

// Runs warm-up + measured rounds of one observer; returns its per-round averages.
PerObserver observe(Channel& ch, NetWorkload::Node& view, DigestExchange& ex, clockid_t cpu_clock,
                    const std::function<void()>& between = {}) {
  PerObserver out;
  Traffic t0;
  int64_t cpu = 0, pcpu = 0;
  for (int r = 0; r < kWarmup + kMeasured; ++r) {
    if (r == kWarmup) t0 = ch.traffic();
    const int64_t t = (r + 1) * kSecond;
    view.set_time(t);
    const int64_t c0 = cpu_ns(cpu_clock), p0 = cpu_ns(CLOCK_PROCESS_CPUTIME_ID);
    ex.round(view, t, ClockEstimate{}, {});
    if (r >= kWarmup) {
      cpu += cpu_ns(cpu_clock) - c0;
      pcpu += cpu_ns(CLOCK_PROCESS_CPUTIME_ID) - p0;
    }
    if (between) between();
  }
  out.process_cpu_us = double(pcpu) / kMeasured / 1000.0;
  const Traffic d = ch.traffic() - t0;
  out.payload_sent = double(d.payload_sent) / kMeasured;
  out.wire_sent = double(d.wire_sent()) / kMeasured;
  out.messages_sent = double(d.messages_sent) / kMeasured;
  out.cpu_us = double(cpu) / kMeasured / 1000.0;
  return out;
}

Row run_inproc(int nodes) {
  NetWorkload job(nodes, kRanksPerNode);
  InprocNetwork net(nodes);
  obs::CoreJudge judge(obs::HangConfig{});
  std::vector<PerObserver> per(nodes);
  std::vector<std::thread> threads;
  threads.reserve(nodes);
  for (int n = 0; n < nodes; ++n) {
    threads.emplace_back([&, n] {
      Channel& ch = net.endpoint(n);
      ch.set_timeout(std::chrono::milliseconds(120000));
      NetWorkload::Node view(&job, n, 0);
      DigestExchange ex(&ch, &judge);
      per[n] = observe(ch, view, ex, CLOCK_THREAD_CPUTIME_ID);
      per[n].process_cpu_us = -1;  // one process for all observers: not per observer
    });
  }
  for (auto& t : threads) t.join();
  return summarize("in-process", per);
}

Row run_gloo(int nodes) {
  scout::testing::TempDir tmp;
  auto res = scout::net::testing::run_processes(nodes, [&](int n) {
    GlooOptions o;
    o.rdzv = "file:" + tmp.path();
    o.job = "bench";
    o.rank = n;
    o.size = nodes;
    o.hostname = "127.0.0.1";
    auto ch = GlooChannel::connect(o);
    NetWorkload job(nodes, kRanksPerNode);
    NetWorkload::Node view(&job, n, 0);
    obs::CoreJudge judge(obs::HangConfig{});
    DigestExchange ex(ch.get(), &judge);
    PerObserver p = observe(*ch, view, ex, CLOCK_THREAD_CPUTIME_ID);
    std::ostringstream out;
    out << p.payload_sent << " " << p.wire_sent << " " << p.messages_sent << " " << p.cpu_us << " " << p.process_cpu_us;
    return out.str();
  });
  std::vector<PerObserver> per(nodes);
  for (int n = 0; n < nodes; ++n) {
    if (res[n].status != 0) {
      std::fprintf(stderr, "gloo observer %d failed: %s\n", n, res[n].report.c_str());
      std::exit(1);
    }
    std::istringstream in(res[n].report);
    in >> per[n].payload_sent >> per[n].wire_sent >> per[n].messages_sent >> per[n].cpu_us >> per[n].process_cpu_us;
  }
  return summarize("Gloo TCP", per);
}

// One drill-down at `nodes`: a corrupted fingerprint on the last node; bytes the leader receives
// and the busiest non-leader sends in the round that drills.
void drill_cost(int nodes) {
  NetWorkload job(nodes, kRanksPerNode);
  job.corrupt_fp((nodes - 1) * kRanksPerNode + 3, 4 * 50);  // digested in round 5
  InprocNetwork net(nodes);
  obs::CoreJudge judge(obs::HangConfig{});
  std::vector<Traffic> before(nodes), after(nodes);
  std::vector<int> findings(nodes, 0);
  std::vector<std::thread> threads;
  for (int n = 0; n < nodes; ++n) {
    threads.emplace_back([&, n] {
      Channel& ch = net.endpoint(n);
      ch.set_timeout(std::chrono::milliseconds(120000));
      NetWorkload::Node view(&job, n, 0);
      DigestExchange ex(&ch, &judge);
      for (int r = 0; r < 6; ++r) {
        if (r == 5) before[n] = ch.traffic();
        view.set_time((r + 1) * kSecond);
        auto res = ex.round(view, (r + 1) * kSecond, ClockEstimate{}, {});
        if (r == 5) findings[n] = int(res.decided.size());
      }
      after[n] = ch.traffic();
    });
  }
  for (auto& t : threads) t.join();
  uint64_t max_sent = 0;
  for (int n = 1; n < nodes; ++n) max_sent = std::max(max_sent, (after[n] - before[n]).wire_sent());
  const Traffic leader = after[0] - before[0];
  std::printf(
      "drill-down round, %4d nodes (corrupted rank on the last node, its DP communicator "
      "spans every node): leader received %.1f KiB in %llu messages, decided %d finding(s); "
      "busiest other observer sent %.1f KiB\n",
      nodes, leader.wire_received() / 1024.0, (unsigned long long)leader.messages_received, findings[0],
      max_sent / 1024.0);
}

void print(const Row& r) {
  char proc[32] = "-";
  if (r.mean.process_cpu_us >= 0) std::snprintf(proc, sizeof(proc), "%.0f", r.mean.process_cpu_us);
  std::printf("%6d  %-10s  %10.0f  %10.0f  %10.0f  %6.1f  %8.0f  %8.0f  %10s  %10.0f\n", r.nodes, r.label.c_str(),
              r.mean.payload_sent, r.mean.wire_sent, r.max.wire_sent, r.mean.messages_sent, r.mean.cpu_us, r.max.cpu_us,
              proc, r.leader.wire_sent);
}

}  // namespace

int main() {
  DigestConfig cfg;
  std::printf(
      "observer network: cost per observer per round (1 round per second), digest vector "
      "%zu words = %zu bytes, %d ranks/node, 16 cross-node streams/node, 50 ops/s/stream\n",
      cfg.words(), cfg.words() * 8, kRanksPerNode);
  std::printf("%6s  %-10s  %10s  %10s  %10s  %6s  %8s  %8s  %10s  %10s\n", "nodes", "transport", "payload B", "wire B",
              "wire max", "msgs", "cpu us", "cpu max", "proc cpu", "leader B");
  const Row gloo4 = run_gloo(4);
  print(gloo4);
  const Row in4 = run_inproc(4);
  print(in4);
  const Row in64 = run_inproc(64);
  print(in64);
  const Row in1024 = run_inproc(1024);
  print(in1024);
  std::printf(
      "ratio 1024 vs 4 nodes (in-process, mean per observer): wire bytes %.2f, messages %.2f, "
      "cpu %.2f; leader wire bytes %.2f\n",
      in1024.mean.wire_sent / in4.mean.wire_sent, in1024.mean.messages_sent / in4.mean.messages_sent,
      in1024.mean.cpu_us / in4.mean.cpu_us, in1024.leader.wire_sent / in4.leader.wire_sent);
  std::printf(
      "ratio 1024 vs 64 nodes: wire bytes %.2f; bound on payload for any N: 2 x %zu = %zu bytes "
      "(+ 288 bytes of framing per log2 N)\n",
      in1024.mean.wire_sent / in64.mean.wire_sent, cfg.words() * 8, 2 * cfg.words() * 8);
  std::printf("check: Gloo TCP and in-process move the same bytes at 4 nodes: %s (%.0f vs %.0f)\n",
              gloo4.mean.wire_sent == in4.mean.wire_sent ? "yes" : "NO", gloo4.mean.wire_sent, in4.mean.wire_sent);
  drill_cost(64);
  drill_cost(1024);
  return gloo4.mean.wire_sent == in4.mean.wire_sent ? 0 : 1;
}

// The leader's work as the job grows (`make bench`): 1,024, 4,096 and 16,384 ranks on 128, 512 and
// 2,048 nodes of 8 ranks (test/support/scale_job.h: TP 8 inside each node, PP 4 across nodes, DP
// across the rest; per rank and second 128 TP AllReduce, 16 pipeline Send/Recv, 4 DP AllReduce, 4
// DP AllGather, 1 model-parallel AllReduce: 153 operations per rank per second).
//
// One process per size holds only the leader (node-rank 0), as scout-observer runs it
// (test/support/scale_run.h: its Observer over its 8 ranks' segments, its SQLite store, the
// cross-node step with NodeView, LeaderMerge and the CoreJudge, its digest rounds); a second
// process runs the other nodes' observers (one thread each). The two share one in-process network
// bridged over a socket, so every byte the leader receives is counted as on the wire (net::Traffic)
// and the leader's memory and CPU are its own. Passes every 250 ms, digest rounds every second,
// hang timeout and stall 10 s; after a warm-up, in one run:
//   healthy  32 s; the leader's board holds one closed finding per node from earlier in the job,
//            four nodes keep an open straggler finding and refresh it every 10 s;
//   sdc      72 s: one rank on the last node receives different bytes in one DP AllReduce;
//   hang     96 s: one rank on the last node stops before its DP AllReduce; the job blocks behind
//            it (every other rank waits in a DP or model-parallel AllReduce).
// Per size, over every pass of the three phases: the leader's CPU per 250 ms interval (its pass and,
// once a second, its digest round with what it judges there: thread CPU time; median and p99), its
// peak RSS (VmHWM), bytes its store wrote per pass (write(2) bytes of the process, the network's
// own excluded), and the bytes it received in the round that decided the sdc (and the hang).
// Checked, not only timed: the sdc finding names the corrupted rank and operation, the hang finding
// names the stopped rank and the operation it never entered, the healthy phase opens nothing, and
// no other finding appears.
// Printed: one line per size (with the hang phase's p99 and its drill-down bytes), the growth
// 16,384 vs 1,024 ranks, the targets at the largest size run. Exit status 1 when a check fails or
// a target is missed (NO).
//
// Usage: scale_bench [--ranks R] [--verbose]   (R: one size only, e.g. 16384 in about a third of the
// full run; --verbose: a line per leader round)
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "observer/net/inproc_channel.h"
#include "test/support/scale_run.h"
#include "test/support/tmpdir.h"

namespace {

namespace net = scout::net;
using scout::testing::LeaderResult;
using scout::testing::ScaleJob;
using scout::testing::ScaleScenario;

bool g_verbose = false;  // --verbose: one line per digest round of the leader

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

// Carries the messages between the endpoint(s) of this process and those of the other.
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

// The other nodes, in the second process.
[[noreturn]] void others_process(ScaleScenario& s, int fd) {
  const std::vector<int>& pos = s.job.hang_positions();
  write_all(fd, pos.data(), ScaleJob::kTp * sizeof(int));  // where the leader's ranks stop
  net::InprocNetwork network(s.job.nodes());
  std::string error;
  {
    Bridge bridge(fd, network, false);
    scout::testing::run_other_nodes(s, network, &error);
  }
  if (!error.empty()) std::fprintf(stderr, "scale_bench: %s\n", error.c_str());
  std::fflush(stderr);
  std::_Exit(error.empty() ? 0 : 2);
}

struct Line {
  int ranks = 0, nodes = 0;
  double pass_ms = 0, p99_ms = 0, rss_mb = 0, store_kb = 0, drill_kib = 0;
  double hang_p99_ms = 0, hang_drill_kib = 0;  // the hang phase's p99 and its drill-down at the leader
  bool ok = false;
};

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, size_t(q * double(v.size() - 1) + 0.5));
  return v[i];
}

Line report(const ScaleScenario& s, const LeaderResult& r, uint64_t rss_kib, bool others_ok) {
  Line l;
  l.ranks = s.job.ranks();
  l.nodes = s.job.nodes();
  std::vector<double> all, pass, round;
  std::map<std::string, std::vector<double>> by_phase;
  double store = 0;
  for (const scout::testing::LeaderSample& x : r.samples) {
    all.push_back(double(x.cpu_ns) / 1e6);
    pass.push_back(double(x.pass_ns) / 1e6);
    if (x.round_ns > 0) round.push_back(double(x.round_ns) / 1e6);
    by_phase[x.phase].push_back(double(x.cpu_ns) / 1e6);
    store += double(x.store_bytes);
  }
  l.pass_ms = percentile(all, 0.5);
  l.p99_ms = percentile(all, 0.99);
  l.rss_mb = double(rss_kib) / 1024.0;
  l.store_kb = r.samples.empty() ? 0 : store / double(r.samples.size()) / 1024.0;
  l.drill_kib = r.drill_kib;
  l.hang_p99_ms = percentile(by_phase["hang"], 0.99);
  l.hang_drill_kib = r.hang_drill_kib;
  l.ok = r.sdc_ok && r.hang_ok && r.healthy_ok && r.others_ok && others_ok;
  std::printf(
      "ranks %d nodes %d pass_ms %.2f p99_ms %.2f hang_p99_ms %.2f rss_mb %.1f store_kb_per_pass %.1f "
      "drill_leader_kib %.1f hang_drill_leader_kib %.1f\n",
      l.ranks, l.nodes, l.pass_ms, l.p99_ms, l.hang_p99_ms, l.rss_mb, l.store_kb, l.drill_kib, l.hang_drill_kib);
  std::printf("  per phase, ms (median / p99 / max):");
  for (const char* ph : {"healthy", "sdc", "hang"}) {
    const auto& v = by_phase[ph];
    std::printf(" %s %.2f / %.2f / %.2f;", ph, percentile(v, 0.5), percentile(v, 0.99), percentile(v, 1.0));
  }
  std::printf(" observer pass %.2f / %.2f / %.2f, digest round %.2f / %.2f / %.2f\n", percentile(pass, 0.5),
              percentile(pass, 0.99), percentile(pass, 1.0), percentile(round, 0.5), percentile(round, 0.99),
              percentile(round, 1.0));
  std::printf("  hang drill-down round: leader received %.1f KiB; sdc phase rounds with a digest drill-down: %d\n",
              r.hang_drill_kib, r.digest_drills);
  std::printf(
      "  checks: healthy phase opens nothing: %s; sdc attributed to rank %d (%s): %s; hang root rank %d named: %s; no "
      "other finding: %s%s%s\n",
      r.healthy_ok ? "yes" : "NO", s.sdc_rank, "DP AllReduce", r.sdc_ok ? "yes" : "NO", s.hang_rank,
      r.hang_ok ? "yes" : "NO", r.others_ok ? "yes" : "NO", r.why.empty() ? "" : " -- ", r.why.c_str());
  if (!others_ok) std::printf("  the other nodes' process failed\n");
  std::fflush(stdout);
  return l;
}

// One size: the leader in this process, the other nodes in a child.
Line run_size(int ranks) {
  ScaleScenario s(ranks / ScaleJob::kTp);
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) std::abort();
  std::fflush(stdout);
  const pid_t others = ::fork();
  if (others == 0) {
    ::close(sv[0]);
    others_process(s, sv[1]);
  }
  ::close(sv[1]);
  Line l;
  {
    std::vector<int> pos(size_t(s.job.ranks()), 0);
    if (!read_all(sv[0], pos.data(), ScaleJob::kTp * sizeof(int))) {
      std::fprintf(stderr, "scale_bench: the other nodes' process did not start\n");
      return l;
    }
    s.job.set_hang_positions(std::move(pos));  // only the leader's ranks are read here
  }
  LeaderResult r;
  {
    scout::testing::TempDir dir;
    net::InprocNetwork network(s.job.nodes());
    auto bridge = std::make_unique<Bridge>(sv[0], network, true);
    net::Channel& ch = network.endpoint(0);
    ch.set_timeout(std::chrono::milliseconds(1200000));
    r = scout::testing::run_leader(s, ch, dir.path(), [&] { return bridge->written(); }, g_verbose);
  }
  const uint64_t rss = vm_hwm_kib();
  int st = 0;
  ::waitpid(others, &st, 0);
  return report(s, r, rss, WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

// One size in a child process (so that each size's peak RSS is its own); the result comes back as
// one line on a pipe.
Line run_size_child(int ranks) {
  int p[2];
  if (::pipe(p) != 0) std::abort();
  std::fflush(stdout);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(p[0]);
    const Line l = run_size(ranks);
    char buf[256];
    const int n = std::snprintf(buf, sizeof(buf), "%d %d %f %f %f %f %f %f %f %d\n", l.ranks, l.nodes, l.pass_ms,
                                l.p99_ms, l.rss_mb, l.store_kb, l.drill_kib, l.hang_p99_ms, l.hang_drill_kib,
                                l.ok ? 1 : 0);
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
  l.ranks = ranks;
  int ok = 0;
  std::istringstream in(text);
  if (!(in >> l.ranks >> l.nodes >> l.pass_ms >> l.p99_ms >> l.rss_mb >> l.store_kb >> l.drill_kib >> l.hang_p99_ms >>
        l.hang_drill_kib >> ok)) {
    std::fprintf(stderr, "scale_bench: %d ranks: no result (exit status %d)\n", ranks, st);
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
  const scout::testing::ScalePhases ph;
  std::printf(
      "leader of a synthetic TP8 x PP4 x DP job, 8 ranks/node, 153 ops/rank/s; passes every 250 ms, digest rounds "
      "every 1 s; %d s healthy, %d s with one sdc, %d s hung behind one rank\n",
      ph.healthy_steps, ph.sdc_steps, ph.hang_steps);
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
  }
  bool targets = true;
  if (!lines.empty() && lines.back().pass_ms > 0) {
    // One size alone (--ranks) is checked against the same targets, without the growth.
    const Line& b = lines.back();
    const bool grew = lines.size() > 1 && lines.front().pass_ms > 0 && b.pass_ms / lines.front().pass_ms > 4;
    const std::string growth = lines.size() > 1 && lines.front().pass_ms > 0 ? std::string(grew ? "NO" : "yes")
                                                                               : std::string("n/a (one size)");
    targets = b.pass_ms <= 50 && b.p99_ms <= 200 && b.hang_p99_ms <= 200 && b.rss_mb <= 1024 && b.drill_kib >= 0 &&
              b.drill_kib <= 1024 && b.hang_drill_kib >= 0 && b.hang_drill_kib <= 1024 && !grew;
    std::printf(
        "targets at %d ranks: pass median <= 50 ms: %s; p99 <= 200 ms: %s; hang-phase p99 <= 200 ms: %s; rss <= 1024 "
        "MB: %s; sdc drill-down <= 1024 KiB: %s; hang drill-down <= 1024 KiB: %s; pass growth <= 4x: %s\n",
        b.ranks, b.pass_ms <= 50 ? "yes" : "NO", b.p99_ms <= 200 ? "yes" : "NO", b.hang_p99_ms <= 200 ? "yes" : "NO",
        b.rss_mb <= 1024 ? "yes" : "NO", b.drill_kib >= 0 && b.drill_kib <= 1024 ? "yes" : "NO",
        b.hang_drill_kib >= 0 && b.hang_drill_kib <= 1024 ? "yes" : "NO", growth.c_str());
  }
  std::printf("checks (hang root, sdc attribution, quiet healthy phase) at every size: %s\n", ok ? "pass" : "FAIL");
  if (!targets) std::printf("scale_bench: a target was MISSED (a NO above)\n");
  return ok && targets ? 0 : 1;
}

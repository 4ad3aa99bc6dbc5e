// The leader's work, and one other node's, as the job grows (`make bench`): 1,024, 16,384 and
// 131,072 ranks on 128, 2,048 and 16,384 nodes of 8 ranks (test/support/scale_job.h: TP 8 inside
// each node, PP 4 across nodes, DP across the rest; per rank and second 128 TP AllReduce, 16
// pipeline Send/Recv, 4 DP AllReduce, 4 DP AllGather, 1 model-parallel AllReduce: 153 operations
// per rank per second).
//
// Three processes per size. The leader (node-rank 0) runs alone in one, as scout-observer runs it
// (test/support/scale_run.h: its Observer over its 8 ranks' segments, its SQLite store, the
// cross-node step with NodeView, LeaderMerge and the CoreJudge, its digest rounds); the last node
// (which holds the faulty ranks) runs alone in another, the same way without the leader's part.
// Every other node's observer is played in a third process by one fiber each on one thread
// (test/support/fiber_network.h): its digest rounds over ScaleJob::Node's view of its ranks run the
// real protocol and channel algorithms, so every message the two measured observers receive is the
// one a real peer would send, byte for byte, and arrives when that peer's round has computed it.
// The three processes share one network, bridged over sockets: every byte the measured observers
// receive or send is counted as on the wire (net::Traffic), and their memory and CPU are their own.
// Passes every 250 ms, digest rounds every second, hang timeout and stall 10 s; after a warm-up,
// in one run:
//   healthy  32 s; the leader's board holds one closed finding per node from earlier in the job,
//            four nodes keep an open straggler finding and refresh it every 10 s;
//   sdc      72 s: one rank on the last node receives different bytes in one DP AllReduce;
//   hang     96 s: one rank on the last node stops before its DP AllReduce; the job blocks behind
//            it (every other rank waits in a DP or model-parallel AllReduce).
// Per size, over every pass of the three phases: the leader's CPU per 250 ms interval (its pass and,
// once a second, its digest round with what it judges there: thread CPU time; median, p99, and
// the hang phase's p99 and max), its peak RSS (VmHWM), bytes its store wrote per pass (write(2)
// bytes of the process, the network's own excluded), the bytes it received in the round that
// decided the sdc and in the one that decided the hang; the node's CPU per interval, peak RSS and
// bytes sent. Checked, not only timed: the sdc finding names the corrupted rank and operation, the
// hang finding names the stopped rank and the operation it never entered, the healthy phase opens
// nothing, and no other finding appears.
// A process that dies (a crash, the kernel's OOM killer) fails the bench at once with its exit
// status: the others' waits for its messages fail as soon as its socket closes.
// Printed: one line per size, the growth largest vs smallest size, the targets at the largest size
// run. Exit status 1 when a check fails or a target is missed (NO).
//
// Usage: scale_bench [--ranks R] [--smoke] [--verbose] [--kill-others-at ROUND]
//   --ranks R  one size only (a multiple of 32);
//   --smoke    256 and 2,048 ranks with the same phases (CI: about a minute), checked against the
//              same targets plus the node's memory growth;
//   --verbose  a line per leader round;
//   --kill-others-at ROUND  the fibers' process kills itself (SIGKILL) at that round (the bench
//              must then fail at once with status 137).
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
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

#include "observer/cluster/core_judge.h"
#include "observer/net/inproc_channel.h"
#include "test/support/fiber_network.h"
#include "test/support/scale_run.h"
#include "test/support/tmpdir.h"

namespace {

namespace net = scout::net;
using scout::testing::FiberNetwork;
using scout::testing::LeaderResult;
using scout::testing::NodeResult;
using scout::testing::ScaleJob;
using scout::testing::ScaleScenario;

bool g_verbose = false;  // --verbose: one line per digest round of the leader
int g_kill_round = -1;   // --kill-others-at R: the fibers' process kills itself (SIGKILL) at round R
constexpr auto kTimeout = std::chrono::milliseconds(1200000);

uint64_t vm_hwm_kib() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::strtoull(line.c_str() + 6, nullptr, 10);
  }
  return 0;
}

// ---- the network split over processes: frames (dest, source, tag, length, bytes) on sockets ----

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
bool write_all(int fd, const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  while (n > 0) {
    ssize_t k = ::write(fd, b, n);
    if (k <= 0) return false;
    b += k;
    n -= size_t(k);
  }
  return true;
}

// One end of a socket to another process: frames out (under a lock; counted), and a reader thread
// handing each frame that comes in to `deliver` and calling `gone` when the other end closes (it
// exited, crashed or was killed).
class Link {
 public:
  Link(int fd, std::function<void(int, int, uint64_t, std::vector<uint8_t>)> deliver, std::function<void()> gone)
      : fd_(fd) {
    reader_ = std::thread([this, deliver = std::move(deliver), gone = std::move(gone)] {
      Frame f;
      while (read_all(fd_, &f, sizeof(f))) {
        std::vector<uint8_t> b(f.len);
        if (f.len && !read_all(fd_, b.data(), f.len)) break;
        deliver(f.dest, f.source, f.tag, std::move(b));
      }
      gone();
    });
  }
  ~Link() {
    ::shutdown(fd_, SHUT_WR);
    reader_.join();
    ::close(fd_);
  }
  void send(int dest, int source, uint64_t tag, const std::vector<uint8_t>& bytes) {
    Frame f{dest, source, tag, bytes.size()};
    std::lock_guard<std::mutex> lock(mu_);
    // A peer that went away: its reader reports it; nothing more to write.
    if (!write_all(fd_, &f, sizeof(f)) || (!bytes.empty() && !write_all(fd_, bytes.data(), bytes.size()))) return;
    written_ += sizeof(f) + bytes.size();
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

// A measured observer's side: its endpoint of an in-process network whose other endpoints are all
// across `fd` (the fibers' process routes them). When that process goes away, every other
// endpoint is gone.
struct Side {
  Side(int nodes, int me, int fd) : network(nodes) {
    link = std::make_unique<Link>(
        fd, [this](int d, int s, uint64_t t, std::vector<uint8_t> b) { network.deliver(d, s, t, std::move(b)); },
        [this, me] {
          for (int r = 0; r < network.size(); ++r) {
            if (r != me) network.kill(r);
          }
        });
    network.set_bridge({[me](int dest) { return dest != me; },
                        [this](int dest, int source, uint64_t tag, std::vector<uint8_t> bytes) {
                          link->send(dest, source, tag, bytes);
                        }});
  }
  net::InprocNetwork network;
  std::unique_ptr<Link> link;
};

// "exited with status N" / "was killed by signal S (name)".
std::string exit_words(int st) {
  if (WIFEXITED(st)) return "exited with status " + std::to_string(WEXITSTATUS(st));
  if (WIFSIGNALED(st))
    return "was killed by signal " + std::to_string(WTERMSIG(st)) + " (" + strsignal(WTERMSIG(st)) + ")";
  return "ended with wait status " + std::to_string(st);
}
// The bench's exit status for a process that ended with `st`: its own status, or 128 + its signal
// (as a shell reports it); never 0.
int exit_code(int st) {
  if (WIFEXITED(st) && WEXITSTATUS(st) != 0) return WEXITSTATUS(st);
  if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
  return 3;
}
bool clean_exit(int st) { return WIFEXITED(st) && WEXITSTATUS(st) == 0; }

// The other nodes, as fibers, in their own process: ranks other than 0 and `node`.
[[noreturn]] void fibers_process(const ScaleScenario& s, int node, int leader_fd, int node_fd) {
  const int N = s.job.nodes();
  // Where the two measured observers' ranks stop in the hang step (computed once, here).
  const std::vector<int>& pos = s.job.hang_positions();
  if (!write_all(leader_fd, pos.data(), ScaleJob::kTp * sizeof(int)) ||
      !write_all(node_fd, pos.data() + size_t(node) * ScaleJob::kTp, ScaleJob::kTp * sizeof(int)))
    std::_Exit(4);
  FiberNetwork network(N, [node](int r) { return r != 0 && r != node; });
  int failed = 0;
  std::string first;
  {
    Link to_leader(
        leader_fd, [&](int d, int src, uint64_t t, std::vector<uint8_t> b) { network.deliver(d, src, t, std::move(b)); },
        [&] { network.remote_gone(0); });
    Link to_node(
        node_fd, [&](int d, int src, uint64_t t, std::vector<uint8_t> b) { network.deliver(d, src, t, std::move(b)); },
        [&, node] { network.remote_gone(node); });
    network.set_forward([&, node](int dest, int source, uint64_t tag, std::vector<uint8_t> bytes) {
      (dest == node ? to_node : to_leader).send(dest, source, tag, bytes);
    });
    for (int n = 1; n < N; ++n) {
      if (n == node) continue;
      network.endpoint(n).set_timeout(kTimeout);
      network.spawn(n, [&, n] {
        try {
          scout::testing::run_simulated_node(s, n, network.endpoint(n), nullptr, [n](int round) {
            if (n == 1 && round == g_kill_round) ::kill(::getpid(), SIGKILL);  // as the OOM killer would
          });
        } catch (const std::exception& e) {
          if (failed++ == 0) first = "node-rank " + std::to_string(n) + ": " + e.what();
        }
      });
    }
    network.run();
    network.forward_until_gone({0, node});
  }
  if (failed) std::fprintf(stderr, "scale_bench: %d simulated nodes failed; first: %s\n", failed, first.c_str());
  std::fflush(stderr);
  std::_Exit(failed ? 2 : 0);
}

struct NodeLine {
  double pass_ms = 0, p99_ms = 0, max_ms = 0, rss_mb = 0, sent_kib_per_round = 0, hang_sent_kib = 0, heap_mb = 0;
  int waits_rounds = 0;
  bool ok = false;
};

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, size_t(q * double(v.size() - 1) + 0.5));
  return v[i];
}

// The measured non-leader node in its own process: writes one NodeLine to `out_fd`.
[[noreturn]] void node_process(ScaleScenario& s, int node, int fd, int out_fd) {
  std::vector<int> pos(size_t(s.job.ranks()), 0);
  if (!read_all(fd, pos.data() + size_t(node) * ScaleJob::kTp, ScaleJob::kTp * sizeof(int))) std::_Exit(4);
  s.job.set_hang_positions(std::move(pos));  // only this node's ranks are read here
  NodeResult r;
  std::string failure;
  {
    scout::testing::TempDir dir;
    Side side(s.job.nodes(), node, fd);
    net::Channel& ch = side.network.endpoint(node);
    ch.set_timeout(kTimeout);
    try {
      r = scout::testing::run_node(s, node, ch, dir.path());
    } catch (const std::exception& e) {
      failure = e.what();
    }
  }
  if (!failure.empty()) {
    std::fprintf(stderr, "scale_bench: node-rank %d stopped: %s\n", node, failure.c_str());
    std::fflush(stderr);
    std::_Exit(2);
  }
  NodeLine l;
  std::vector<double> cpu, sent;
  double hang_sent = 0;
  for (const auto& x : r.samples) cpu.push_back(double(x.cpu_ns) / 1e6);
  for (size_t i = 0; i < r.round_sent.size(); ++i) {
    sent.push_back(double(r.round_sent[i]) / 1024.0);
    if (r.round_hang[i]) hang_sent = std::max(hang_sent, double(r.round_sent[i]) / 1024.0);
  }
  l.pass_ms = percentile(cpu, 0.5);
  l.p99_ms = percentile(cpu, 0.99);
  l.max_ms = percentile(cpu, 1.0);
  l.rss_mb = double(vm_hwm_kib()) / 1024.0;
  l.sent_kib_per_round = percentile(sent, 0.5);
  l.hang_sent_kib = hang_sent;
  l.waits_rounds = r.waits_rounds;
  l.heap_mb = double(r.peak_heap) / (1 << 20);
  l.ok = r.ok;
  char buf[256];
  const int n = std::snprintf(buf, sizeof(buf), "%f %f %f %f %f %f %f %d %d\n", l.pass_ms, l.p99_ms, l.max_ms,
                              l.rss_mb, l.sent_kib_per_round, l.hang_sent_kib, l.heap_mb, l.waits_rounds, l.ok ? 1 : 0);
  write_all(out_fd, buf, size_t(n));
  std::_Exit(r.ok ? 0 : 2);
}

struct Line {
  int ranks = 0, nodes = 0;
  double pass_ms = 0, p99_ms = 0, rss_mb = 0, store_kb = 0, drill_kib = 0;
  double hang_p99_ms = 0, hang_max_ms = 0, hang_drill_kib = 0;  // the hang phase, and its drill-down at the leader
  NodeLine node;
  bool ok = false;
  int died = 0;  // a process of the size failed: the exit status to end the bench with
};

Line report(const ScaleScenario& s, const LeaderResult& r, uint64_t rss_kib, const NodeLine& node, bool procs_ok) {
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
  l.hang_max_ms = percentile(by_phase["hang"], 1.0);
  l.hang_drill_kib = r.hang_drill_kib;
  l.node = node;
  l.ok = r.sdc_ok && r.hang_ok && r.healthy_ok && r.others_ok && node.ok && procs_ok;
  std::printf(
      "ranks %d nodes %d pass_ms %.2f p99_ms %.2f hang_p99_ms %.2f hang_max_ms %.2f rss_mb %.1f node_rss_mb %.1f "
      "store_kb_per_pass %.1f drill_leader_kib %.1f hang_drill_leader_kib %.1f\n",
      l.ranks, l.nodes, l.pass_ms, l.p99_ms, l.hang_p99_ms, l.hang_max_ms, l.rss_mb, node.rss_mb, l.store_kb,
      l.drill_kib, l.hang_drill_kib);
  std::printf("  leader per phase, ms (median / p99 / max):");
  for (const char* ph : {"healthy", "sdc", "hang"}) {
    const auto& v = by_phase[ph];
    std::printf(" %s %.2f / %.2f / %.2f;", ph, percentile(v, 0.5), percentile(v, 0.99), percentile(v, 1.0));
  }
  std::printf(" observer pass %.2f / %.2f / %.2f, digest round %.2f / %.2f / %.2f\n", percentile(pass, 0.5),
              percentile(pass, 0.99), percentile(pass, 1.0), percentile(round, 0.5), percentile(round, 0.99),
              percentile(round, 1.0));
  std::printf(
      "  node-rank %d (the last): pass+round ms %.2f / %.2f / %.2f (median / p99 / max), rss %.1f MB (heap %.2f MiB), "
      "sent %.1f KiB per round (median), %.1f KiB in its largest hang-phase round, %d hang drill-downs\n",
      s.job.nodes() - 1, node.pass_ms, node.p99_ms, node.max_ms, node.rss_mb, node.heap_mb, node.sent_kib_per_round,
      node.hang_sent_kib, node.waits_rounds);
  std::printf("  hang drill-down round: leader received %.1f KiB; sdc phase rounds with a digest drill-down: %d\n",
              r.hang_drill_kib, r.digest_drills);
  std::printf(
      "  checks: healthy phase opens nothing: %s; sdc attributed to rank %d (%s): %s; hang root rank %d named: %s; no "
      "other finding: %s%s%s\n",
      r.healthy_ok ? "yes" : "NO", s.sdc_rank, "DP AllReduce", r.sdc_ok ? "yes" : "NO", s.hang_rank,
      r.hang_ok ? "yes" : "NO", r.others_ok ? "yes" : "NO", r.why.empty() ? "" : " -- ", r.why.c_str());
  if (!procs_ok) std::printf("  a peer process failed\n");
  std::fflush(stdout);
  return l;
}

// One size: the leader in this process, the last node and the fibers in two children.
Line run_size(int ranks) {
  ScaleScenario s(ranks / ScaleJob::kTp);
  const int node = s.job.nodes() - 1;
  int lf[2], nf[2], out[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM, 0, lf) != 0 || ::socketpair(AF_UNIX, SOCK_STREAM, 0, nf) != 0 ||
      ::pipe(out) != 0)
    std::abort();
  std::fflush(stdout);
  const pid_t fibers = ::fork();
  if (fibers == 0) {
    ::close(lf[0]);
    ::close(nf[0]);
    ::close(out[0]);
    ::close(out[1]);
    fibers_process(s, node, lf[1], nf[1]);
  }
  ::close(lf[1]);
  ::close(nf[1]);
  const pid_t measured_node = ::fork();
  if (measured_node == 0) {
    ::close(lf[0]);
    ::close(out[0]);
    node_process(s, node, nf[0], out[1]);
  }
  ::close(nf[0]);
  ::close(out[1]);
  Line l;
  {
    std::vector<int> pos(size_t(s.job.ranks()), 0);
    if (!read_all(lf[0], pos.data(), ScaleJob::kTp * sizeof(int))) {
      int st = 0;
      ::waitpid(fibers, &st, 0);
      std::fprintf(stderr, "scale_bench: the other nodes' process did not start: it %s\n", exit_words(st).c_str());
      std::_Exit(exit_code(st));
    }
    s.job.set_hang_positions(std::move(pos));  // only the leader's ranks are read here
  }
  LeaderResult r;
  std::string failure;
  {
    scout::testing::TempDir dir;
    Side side(s.job.nodes(), 0, lf[0]);
    net::Channel& ch = side.network.endpoint(0);
    ch.set_timeout(kTimeout);
    try {
      r = scout::testing::run_leader(s, ch, dir.path(), [&] { return side.link->written(); }, g_verbose);
    } catch (const std::exception& e) {
      failure = e.what();
    }
  }
  const uint64_t rss = vm_hwm_kib();
  std::string text;
  char buf[256];
  ssize_t k;
  while ((k = ::read(out[0], buf, sizeof(buf))) > 0) text.append(buf, size_t(k));
  ::close(out[0]);
  int fst = 0, nst = 0;
  ::waitpid(measured_node, &nst, 0);
  ::waitpid(fibers, &fst, 0);
  if (!failure.empty() || !clean_exit(fst) || !clean_exit(nst)) {
    // A dead process: the bench fails now, with its exit status (no wait for a timeout).
    const int st = !clean_exit(fst) ? fst : nst;
    std::fprintf(stderr, "scale_bench: %d ranks: the other nodes' process %s, node-rank %d's process %s; %s%s\n",
                 ranks, exit_words(fst).c_str(), node, exit_words(nst).c_str(),
                 failure.empty() ? "" : "the leader stopped: ", failure.c_str());
    std::fflush(stderr);
    std::_Exit(exit_code(st));
  }
  NodeLine nl;
  int ok = 0;
  std::istringstream in(text);
  in >> nl.pass_ms >> nl.p99_ms >> nl.max_ms >> nl.rss_mb >> nl.sent_kib_per_round >> nl.hang_sent_kib >> nl.heap_mb >>
      nl.waits_rounds >> ok;
  nl.ok = ok != 0;
  return report(s, r, rss, nl, true);
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
    char buf[512];
    const int n = std::snprintf(buf, sizeof(buf), "%d %d %f %f %f %f %f %f %f %f %f %f %f %d\n", l.ranks, l.nodes,
                                l.pass_ms, l.p99_ms, l.rss_mb, l.store_kb, l.drill_kib, l.hang_p99_ms, l.hang_max_ms,
                                l.hang_drill_kib, l.node.rss_mb, l.node.pass_ms, l.node.heap_mb, l.ok ? 1 : 0);
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
        l.hang_max_ms >> l.hang_drill_kib >> l.node.rss_mb >> l.node.pass_ms >> l.node.heap_mb >> ok)) {
    std::fprintf(stderr, "scale_bench: %d ranks: no result: the run %s\n", ranks, exit_words(st).c_str());
    l.died = exit_code(st);
    return l;
  }
  l.ok = ok != 0;
  return l;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> sizes = {1024, 16384, 131072};
  bool smoke = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--ranks" && i + 1 < argc) {
      sizes = {std::atoi(argv[++i])};
    } else if (a == "--smoke") {
      smoke = true;
      sizes = {256, 2048};
    } else if (a == "--verbose") {
      g_verbose = true;
    } else if (a == "--kill-others-at" && i + 1 < argc) {
      g_kill_round = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr,
                   "usage: scale_bench [--ranks R] [--smoke] [--verbose] [--kill-others-at ROUND]   (R a multiple "
                   "of 32)\n");
      return 2;
    }
  }
  for (int r : sizes) {
    if (r < 64 || r % 32 != 0) {
      std::fprintf(stderr, "scale_bench: ranks must be a multiple of 32 (8 per node, 4 pipeline stages), at least 64\n");
      return 2;
    }
  }
  const scout::testing::ScalePhases ph;
  std::printf(
      "leader and last node of a synthetic TP8 x PP4 x DP job, 8 ranks/node, 153 ops/rank/s (the other nodes as "
      "fibers); passes every 250 ms, digest rounds every 1 s; %d s healthy, %d s with one sdc, %d s hung behind one "
      "rank\n",
      ph.healthy_steps, ph.sdc_steps, ph.hang_steps);
  std::vector<Line> lines;
  bool ok = true;
  for (int r : sizes) {
    lines.push_back(run_size_child(r));
    if (lines.back().died) return lines.back().died;  // at once: nothing more to measure
    ok = ok && lines.back().ok;
  }
  const Line& a = lines.front();
  const Line& b = lines.back();
  const bool several = lines.size() > 1 && a.pass_ms > 0;
  if (several) {
    std::printf(
        "growth %d vs %d ranks: pass_ms %.2fx, p99_ms %.2fx, rss %.2fx, node rss %.2fx, store %.2fx, drill %.2fx, "
        "hang drill %.2fx\n",
        b.ranks, a.ranks, b.pass_ms / a.pass_ms, b.p99_ms / a.p99_ms, b.rss_mb / a.rss_mb, b.node.rss_mb / a.node.rss_mb,
        a.store_kb > 0 ? b.store_kb / a.store_kb : 0.0, a.drill_kib > 0 ? b.drill_kib / a.drill_kib : 0.0,
        a.hang_drill_kib > 0 ? b.hang_drill_kib / a.hang_drill_kib : 0.0);
  }
  // Targets (at 131,072 ranks), checked at the largest size run. The smoke run adds the node's
  // memory growth: one node's observer must not grow with the job (8x the ranks here; its heap
  // grew by 2.7 MiB more from 256 to 2,048 ranks when each communicator held every rank's state).
  const bool grew = several && b.pass_ms / a.pass_ms > 4;
  const bool node_grew = smoke && several && b.node.heap_mb > a.node.heap_mb + 2.0;
  const bool targets = b.pass_ms <= 50 && b.hang_max_ms <= 500 && b.rss_mb <= 2048 && b.node.rss_mb <= 256 &&
                       b.drill_kib >= 0 && b.drill_kib <= 1024 && b.hang_drill_kib >= 0 && b.hang_drill_kib <= 1024 &&
                       !grew && !node_grew;
  auto yn = [](bool x) { return x ? "yes" : "NO"; };
  std::printf(
      "targets at %d ranks: pass median <= 50 ms: %s; hang-phase max <= 500 ms: %s; leader rss <= 2048 MB: %s; node "
      "rss <= 256 MB: %s; sdc drill-down <= 1024 KiB: %s; hang drill-down <= 1024 KiB: %s; pass growth <= 4x: %s%s%s\n",
      b.ranks, yn(b.pass_ms <= 50), yn(b.hang_max_ms <= 500), yn(b.rss_mb <= 2048), yn(b.node.rss_mb <= 256),
      yn(b.drill_kib >= 0 && b.drill_kib <= 1024), yn(b.hang_drill_kib >= 0 && b.hang_drill_kib <= 1024),
      several ? yn(!grew) : "n/a (one size)", smoke ? "; node heap growth <= 2 MiB: " : "",
      smoke ? yn(several && !node_grew) : "");
  std::printf("checks (hang root, sdc attribution, quiet healthy phase) at every size: %s\n", ok ? "pass" : "FAIL");
  if (!targets) std::printf("scale_bench: a target was MISSED (a NO above)\n");
  return ok && targets ? 0 : 1;
}

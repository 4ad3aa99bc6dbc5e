// Cost of the net plugin half per transfer (docs/net-plugin.md, "Threads and cost"): one 64-byte
// transfer (irecv posted, isend posted, both tested until done) through scout's ncclNetPlugin_v11
// wrapping the test delegate, next to the same transfer on the delegate's own v11 table, in the
// same run, alternating batch by batch. The delegate's in-process channel (both ends in this
// process) does no system call, so the difference is scout's own work: its request slots, two
// clock reads, the link table entry's counters and histogram, the unwrapping of its objects.
// Median and p99 over batches of 1000 transfers; of several rounds the one with the quietest
// baseline is reported (shared, noisy machines).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "test/sim/net_driver.h"
#include "test/support/tmpdir.h"

namespace {

using namespace scout;

constexpr int kBatch = 1000;
constexpr size_t kBytes = 64;

struct Side {
  const abi::NetV11* t = nullptr;
  void* ca = nullptr;
  void* cb = nullptr;
  sim::NetLink l;
  std::vector<unsigned char> sbuf = std::vector<unsigned char>(kBytes, 1), rbuf = std::vector<unsigned char>(kBytes);
};

bool setup(Side& s, const abi::NetV11* t, std::string* err) {
  s.t = t;
  abi::NetCommConfig cfg{-1};
  if (t->init(&s.ca, 1, &cfg, nullptr, nullptr) != abi::kSuccess || t->init(&s.cb, 1, &cfg, nullptr, nullptr) != 0) {
    *err = "init failed";
    return false;
  }
  if (sim::net_listen(t, s.cb, &s.l) != abi::kSuccess) {
    *err = "listen failed";
    return false;
  }
  if (!sim::net_establish(t, s.ca, &s.l, true, true, 10, err)) return false;
  return sim::net_register(t, &s.l, s.sbuf.data(), kBytes, s.rbuf.data(), kBytes) == abi::kSuccess;
}

// ns per transfer over one batch.
double batch(Side& s) {
  static void* ph = nullptr;
  auto t0 = std::chrono::steady_clock::now();
  for (int k = 0; k < kBatch; ++k) {
    void* rr = nullptr;
    void* sr = nullptr;
    void* data[1] = {s.rbuf.data()};
    size_t sizes[1] = {kBytes};
    int tags[1] = {0};
    void* mh[1] = {s.l.rmr};
    void* phs[1] = {&ph};
    s.t->irecv(s.l.recv, 1, data, sizes, tags, mh, phs, &rr);
    s.t->isend(s.l.send, s.sbuf.data(), kBytes, 0, s.l.smr, &ph, &sr);
    int d1 = 0, d2 = 0, n = 0;
    while (!d1) s.t->test(sr, &d1, &n);
    while (!d2) s.t->test(rr, &d2, &n);
  }
  auto t1 = std::chrono::steady_clock::now();
  return double(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count()) / kBatch;
}

double pct(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[size_t(q * double(v.size() - 1))];
}

}  // namespace

int main(int argc, char** argv) {
  int batches = 400, rounds = 5;
  if (argc > 1 && std::string(argv[1]) == "--quick") batches = 100, rounds = 2;
  scout::testing::TempDir dir;
  setenv("SCOUT_SHM_DIR", dir.path().c_str(), 1);
  setenv("SCOUT_JOB_ID", "bench", 1);
  setenv("SCOUT_FP", "0", 1);
  const std::string delegate = scout::testing::build_path("lib/libnccl-net-scouttest.so");
  setenv("SCOUT_NET_DELEGATE", delegate.c_str(), 1);
  sim::LoadedNet scout_net = sim::load_net_plugin(scout::testing::build_path("lib/libnccl-profiler-scout.so").c_str());
  sim::LoadedNet direct = sim::load_net_plugin(delegate.c_str());
  if (!scout_net.ok() || !direct.ok()) {
    std::fprintf(stderr, "net_plugin_bench: cannot load: %s %s\n", scout_net.error.c_str(), direct.error.c_str());
    return 1;
  }
  Side a, b;
  std::string err;
  if (!setup(a, direct.v11, &err) || !setup(b, scout_net.v11, &err)) {
    std::fprintf(stderr, "net_plugin_bench: %s\n", err.c_str());
    return 1;
  }
  for (int k = 0; k < 20; ++k) batch(a), batch(b);  // warm-up
  std::printf(
      "net_plugin_bench: ns per %zu-byte transfer (irecv + isend + tests until done), %d transfers per batch, "
      "%d batches per round, alternating\n(direct: the test delegate's v11 table; scout: "
      "libnccl-profiler-scout.so's v11 table wrapping it)\n\n",
      kBytes, kBatch, batches);
  std::printf("%8s | %10s %10s | %10s %10s | %10s %10s | %s\n", "round", "direct p50", "direct p99", "scout p50",
              "scout p99", "diff p50", "ratio p50", "");
  double best = 1e18, d50 = 0, s50 = 0;
  for (int r = 0; r < rounds; ++r) {
    std::vector<double> da, db;
    for (int k = 0; k < batches; ++k) {
      if (k & 1) {
        db.push_back(batch(b));
        da.push_back(batch(a));
      } else {
        da.push_back(batch(a));
        db.push_back(batch(b));
      }
    }
    double a50 = pct(da, 0.5), b50 = pct(db, 0.5);
    std::printf("%8d | %10.0f %10.0f | %10.0f %10.0f | %10.0f %10.2f |%s\n", r, a50, pct(da, 0.99), b50, pct(db, 0.99),
                b50 - a50, b50 / a50, a50 < best ? " (quietest so far)" : "");
    if (a50 < best) best = a50, d50 = a50, s50 = b50;
  }
  std::printf("\nquietest round: direct %.0f ns, through scout %.0f ns per transfer: +%.0f ns (x%.2f)\n", d50, s50,
              s50 - d50, s50 / d50);
  sim::net_close(a.t, &a.l);
  sim::net_close(b.t, &b.l);
  a.t->finalize(a.ca), a.t->finalize(a.cb);
  b.t->finalize(b.ca), b.t->finalize(b.cb);
  return 0;
}

// `scout explain` on findings of every kind produced by the real detectors: each scenario writes
// records for an emulated job (test/support/fake_job.h, every time chosen by the test), runs
// observer passes on a synthetic clock into a real store, and compares the explanation of each
// finding with test/fixtures/cli/explain_kinds.txt. The evidence is therefore exactly what the
// observer writes (docs/findings.md), and the words are checked for every kind and class.
//
// To regenerate the golden file after an intended change: `make update-golden`, then review
// `git diff test/fixtures/cli` (test/support/golden.h).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>

#include "observer/cli/common.h"
#include "observer/cli/evidence.h"
#include "observer/detect/equiv.h"
#include "observer/store/reader.h"
#include "observer/store/writer.h"
#include "test/support/golden.h"
#include "test/support/observer_harness.h"

namespace {

using namespace scout::testing;
namespace shm = scout::shm;
namespace obs = scout::obs;

// An emulated job whose observer writes into a real store.
struct Scenario {
  explicit Scenario(int nprocs) : h(nprocs) { store_path = h.dir.path() + "/store.db"; }

  void pass(int64_t now) {
    if (!h.observer) {
      std::string err;
      scout::store::WriterOptions wo;
      wo.on_error = [](const std::string& e) { ADD_FAILURE() << e; };
      writer = scout::store::StoreWriter::open(store_path, wo, &err);
      ASSERT_TRUE(writer) << err;
      h.observer = std::make_unique<obs::Observer>(h.opt, writer.get());
    }
    h.observer->pass(now);
  }

  // `scout explain` of every finding, in id order.
  std::string explain_all() {
    writer.reset();
    auto rd = scout::store::StoreReader::open(store_path);
    std::string out;
    for (const auto& f : rd->findings()) {
      std::ostringstream s;
      scout::cli::cmd_explain(*rd, f.id, false, s);
      out += s.str();
    }
    return out;
  }
  // The evidence objects, for reading when a scenario changes.
  std::string evidence_json() {
    writer.reset();
    auto rd = scout::store::StoreReader::open(store_path);
    std::string out;
    for (const auto& f : rd->findings()) out += obs::to_json(f).dump() + "\n";
    return out;
  }

  ObserverHarness h;
  std::string store_path;
  std::unique_ptr<scout::store::StoreWriter> writer;
};

constexpr uint64_t kA = 0xaaaa000000000001ull, kB = 0xbbbb000000000002ull;

// ---------------------------------------------------------------- scenarios, one per kind/class

// Rank 3 stopped issuing; rank 2 waits for it in c, rank 1 for rank 2 in b, rank 0 for rank 1 in a.
std::string hang_chain(bool json) {
  Scenario s(4);
  auto& j = s.h.job;
  int a = j.add_comm(0xa, {0, 1}, "a");
  int b = j.add_comm(0xb, {1, 2}, "b");
  int c = j.add_comm(0xc, {2, 3}, "c");
  op(j, c, 0, shm::kFuncAllReduce, 0, kT0);
  op(j, b, 0, shm::kFuncAllReduce, 0, kT0 + kMs);
  op(j, a, 0, shm::kFuncAllReduce, 0, kT0 + 2 * kMs);
  s.pass(kT0 + 20 * kSec);
  return json ? s.evidence_json() : s.explain_all();
}

// Every rank is inside AllReduce #2 and none finishes.
std::string hang_stuck(bool json) {
  Scenario s(4);
  auto& j = s.h.job;
  int dp = j.add_comm(0xd1, {0, 1, 2, 3}, "dp");
  history(j, dp, 2);
  for (int r = 0; r < 4; ++r) op(j, dp, r, shm::kFuncAllReduce, 2, kT0 + kSec);
  s.pass(kT0 + 20 * kSec);
  return json ? s.evidence_json() : s.explain_all();
}

// Ranks 0-2 wait in AllReduce #2 of a communicator with two completed operations (a cold
// rhythm: the 10 s threshold) for rank 3, under a 60 s hang timeout: a stall at 11 s; with
// `until_hang`, still at 61 s: the same finding is then the hang.
std::string stall(bool json, bool until_hang) {
  Scenario s(4);
  s.h.opt.hang.timeout_ns = 60 * kSec;
  auto& j = s.h.job;
  int dp = j.add_comm(0xd1, {0, 1, 2, 3}, "dp");
  history(j, dp, 2);
  for (int r = 0; r < 3; ++r) op(j, dp, r, shm::kFuncAllReduce, 2, kT0 + kSec);
  s.pass(kT0 + kSec + 500 * kMs);
  s.pass(kT0 + 12 * kSec);
  if (until_hang) s.pass(kT0 + 62 * kSec);
  return json ? s.evidence_json() : s.explain_all();
}

// Ranks 0 and 1 use communicators x and y in opposite orders on one stream each.
std::string deadlock(bool json) {
  Scenario s(2);
  auto& j = s.h.job;
  int x = j.add_comm(0x10, {0, 1}, "x");
  int y = j.add_comm(0x20, {0, 1}, "y");
  op(j, x, 0, shm::kFuncAllReduce, 0, kT0);
  op(j, y, 0, shm::kFuncAllReduce, 0, kT0 + kMs, false);
  op(j, y, 1, shm::kFuncAllReduce, 0, kT0);
  op(j, x, 1, shm::kFuncAllReduce, 0, kT0 + kMs, false);
  s.pass(kT0 + 20 * kSec);
  return json ? s.evidence_json() : s.explain_all();
}

// Rank 1 dies inside AllReduce #2 of dp while the others wait in it.
std::string crash(bool json) {
  Scenario s(4);
  auto& j = s.h.job;
  int dp = j.add_comm(0xd1, {0, 1, 2, 3}, "dp");
  history(j, dp, 2);
  for (int r = 0; r < 4; ++r) op(j, dp, r, shm::kFuncAllReduce, 2, kT0 + kSec);
  j.header(1)->last_event_ns.store(kT0 + kSec + 20'000, std::memory_order_relaxed);
  j.kill(1);
  s.pass(kT0 + 2 * kSec);
  s.pass(kT0 + 4 * kSec);
  return json ? s.evidence_json() : s.explain_all();
}

// Rank 2 passes count 1000 where the others pass 1024.
std::string desync_metadata(bool json) {
  Scenario s(4);
  auto& j = s.h.job;
  int dp = j.add_comm(0xd1, {0, 1, 2, 3}, "dp");
  FakeColl c = allreduce_with(7, {});
  c.counts = {1024, 1024, 1000, 1024};
  j.collective(dp, c);
  s.pass(kT0 + kSec);
  return json ? s.evidence_json() : s.explain_all();
}

// The communicator hangs with rank 3 in AllGather while the others are in AllReduce #3.
std::string desync_hang(bool json) {
  Scenario s(4);
  auto& j = s.h.job;
  int dp = j.add_comm(0xd1, {0, 1, 2, 3}, "dp");
  history(j, dp, 3);
  for (int r = 0; r < 3; ++r) op(j, dp, r, shm::kFuncAllReduce, 3, kT0 + kSec);
  op(j, dp, 3, shm::kFuncAllGather, 0, kT0 + kSec);
  s.pass(kT0 + 20 * kSec);
  return json ? s.evidence_json() : s.explain_all();
}

// Rank 2 of 4 receives different bytes in AllReduce #1; then a pair that disagrees.
std::string sdc(bool json) {
  Scenario s(6);
  auto& j = s.h.job;
  int dp = j.add_comm(0xd1, {0, 1, 2, 3}, "dp");
  int tp = j.add_comm(0x71, {4, 5}, "tp");
  j.collective(dp, allreduce_with(0, {kA, kA, kA, kA}));
  j.collective(dp, allreduce_with(1, {kA, kA, kB, kA}));
  j.collective(tp, allreduce_with(0, {kA, kB}));
  s.pass(kT0 + kSec);
  return json ? s.evidence_json() : s.explain_all();
}

// Three replicas declared equivalent; shard2's AllGather differs.
std::string sdc_equiv(bool json) {
  Scenario s(6);
  std::string err;
  EXPECT_TRUE(obs::parse_equiv("recv: shard0, shard1 0xa3", ';', &s.h.opt.equiv, &err)) << err;
  auto& j = s.h.job;
  int c0 = j.add_comm(0xa1, {0, 1}, "shard0");
  int c1 = j.add_comm(0xa2, {2, 3}, "shard1");
  int c2 = j.add_comm(0xa3, {4, 5}, "shard2");
  for (int c : {c0, c1, c2}) {
    FakeColl g = allreduce_with(0, {});
    g.func = shm::kFuncAllGather;
    uint64_t v = c == c2 ? kB : kA;
    g.fp_recv = {v, v};
    j.collective(c, g);
  }
  s.pass(kT0 + kSec);
  return json ? s.evidence_json() : s.explain_all();
}

// Rank 2's send buffer carries NaN in AllReduce #1; from #2 on every rank does.
std::string nan(bool json) {
  Scenario s(4);
  auto& j = s.h.job;
  int dp = j.add_comm(0xd1, {0, 1, 2, 3}, "dp");
  FakeColl c0 = allreduce_with(0, {});
  c0.send_nan = {0, 0, 0, 0};
  j.collective(dp, c0);
  FakeColl c1 = allreduce_with(1, {});
  c1.send_nan = {0, 0, 3, 0};
  j.collective(dp, c1);
  FakeColl c2 = allreduce_with(2, {});
  c2.send_nan = {4, 4, 4, 4};
  j.collective(dp, c2);
  s.pass(kT0 + kSec);
  return json ? s.evidence_json() : s.explain_all();
}

// 4 ranks: TP pairs {0,1} {2,3}, DP pairs {0,2} {1,3}; rank 2 computes 30 ms longer from step 5.
std::string straggler(bool json) {
  Scenario s(4);
  auto& j = s.h.job;
  s.h.opt.straggler.window = 16;
  s.h.opt.straggler.warmup = 0;  // the scenario is 10 steps: score from the first collective
  // Phi(-3) = 1.3e-3: 4 late of 9 at the quiet background 0.05 (6.4e-4) count, as min_late says.
  s.h.opt.straggler.z = 3.0;
  int tp0 = j.add_comm(0x70, {0, 1}, "tp0");
  int tp1 = j.add_comm(0x71, {2, 3}, "tp1");
  int dp0 = j.add_comm(0xd0, {0, 2}, "dp0");
  int dp1 = j.add_comm(0xd1, {1, 3}, "dp1");
  for (int st = 0; st < 10; ++st) {
    int64_t base = kT0 + int64_t(st) * 100 * kMs;
    auto coll = [&](int comm, int64_t a0, int64_t a1) {
      FakeColl c;
      c.seq = uint64_t(st);
      c.t0 = base;
      c.start = {a0, a1};
      c.duration_ns = kMs;
      j.collective(comm, c);
      return std::max(a0, a1) + kMs;
    };
    std::vector<int64_t> a(4);
    for (int r = 0; r < 4; ++r) a[r] = base + 20 * kMs + (r == 2 && st >= 5 ? 30 * kMs : 0);
    int64_t e0 = coll(tp0, a[0], a[1]);
    int64_t e1 = coll(tp1, a[2], a[3]);
    coll(dp0, e0 + 10 * kMs, e1 + 10 * kMs);
    coll(dp1, e0 + 10 * kMs, e1 + 10 * kMs);
    s.pass(base + 90 * kMs);
  }
  return json ? s.evidence_json() : s.explain_all();
}

// 8 ranks: TP pairs {0,1} {2,3} {4,5} {6,7}, DP groups {0,2,4,6} {1,3,5,7}, with the given
// transfer times per TP pair and DP group.
std::string slowlink(const std::vector<int64_t>& tp_ns, const std::vector<int64_t>& dp_ns, bool json) {
  Scenario s(8);
  auto& j = s.h.job;
  std::vector<int> tp, dp;
  for (int p = 0; p < 4; ++p) tp.push_back(j.add_comm(0x70 + p, {2 * p, 2 * p + 1}, "tp" + std::to_string(p)));
  dp.push_back(j.add_comm(0xd0, {0, 2, 4, 6}, "dp0"));
  dp.push_back(j.add_comm(0xd1, {1, 3, 5, 7}, "dp1"));
  // 22 steps: a slow channel is confirmed once slow for 2 s (docs/observer.md, "Slow links").
  for (int st = 0; st < 22; ++st) {
    int64_t base = kT0 + int64_t(st) * 100 * kMs;
    for (int p = 0; p < 4; ++p) {
      FakeColl c;
      c.seq = uint64_t(st);
      c.t0 = base;
      c.count = 1 << 20;
      c.duration_ns = tp_ns[p];
      j.collective(tp[p], c);
    }
    for (int d = 0; d < 2; ++d) {
      FakeColl c;
      c.seq = uint64_t(st);
      c.t0 = base + 20 * kMs;
      c.count = 1 << 22;
      c.duration_ns = dp_ns[d];
      j.collective(dp[d], c);
    }
    s.pass(base + 90 * kMs);
  }
  return json ? s.evidence_json() : s.explain_all();
}

struct Case {
  const char* name;
  std::function<std::string(bool)> run;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> v = {
      {"hang: wait-for chain across three communicators", hang_chain},
      {"hang: stuck collective", hang_stuck},
      {"stall: the root named before the hang timeout", [](bool j) { return stall(j, false); }},
      {"hang: first reported as a stall", [](bool j) { return stall(j, true); }},
      {"deadlock", deadlock},
      {"crash: rank dies inside a collective", crash},
      {"desync: metadata", desync_metadata},
      {"desync: ranks hung in different collectives", desync_hang},
      {"sdc: receive fingerprints (attributed, then a pair)", sdc},
      {"sdc: equivalent communicators", sdc_equiv},
      {"nan", nan},
      {"straggler", straggler},
      {"slowlink: link",
       [](bool j) {
         return slowlink({kMs, 5 * kMs, kMs, kMs}, {2 * kMs, 2 * kMs}, j);
       }},
      {"slowlink: endpoint",
       [](bool j) {
         return slowlink({kMs, kMs, 5 * kMs, kMs}, {2 * kMs, 6 * kMs}, j);
       }},
      {"slowlink: communicator",
       [](bool j) {
         return slowlink({kMs, kMs, kMs, kMs}, {2 * kMs, 8 * kMs}, j);
       }},
  };
  return v;
}

TEST(Explain, EveryKindInWords) {
  std::string all;
  for (const auto& c : cases()) {
    if (std::getenv("SCOUT_PRINT_EVIDENCE")) std::cout << "== " << c.name << "\n" << c.run(true);
    all += std::string("==== ") + c.name + "\n" + c.run(false);
  }
  scout::testing::expect_golden(source_path("test/fixtures/cli/explain_kinds.txt"), all);
}

// What replay found, in words: each check that named the rank with its vote once (no JSON, no
// second copy of the first check's vote), the slow pair of a link sweep.
TEST(Explain, ReplayFindingsInSentencesWithTheVoteOnce) {
  const char* votes = R"({"groups":[{"value":"0x230f2774821460e3","voters":[0,1,2,3,4,5,7]},
    {"value":"0x8bed171e9a3ff4ac","voters":[6]}],"majority":"0x230f2774821460e3","outcome":"attributed"})";
  obs::Finding g;
  g.kind = obs::FindingKind::kSdc;
  nlohmann::json v = nlohmann::json::parse(votes);
  nlohmann::json gpus = nlohmann::json::array();
  for (int r = 0; r < 8; ++r) gpus.push_back({{"global_rank", r}, {"gpu", "GPU-sim-node0-" + std::to_string(r)}});
  g.evidence = {{"source", "replay"},
                {"cycle", 4},
                {"last_cycle", 9},
                {"trigger", "periodic"},
                {"check", "gemm-vote"},
                {"recipe", "gemm:bf16:4096x4096x4096"},
                {"votes", v},
                {"checks",
                 {{{"check", "gemm-vote"}, {"recipe", "gemm:bf16:4096x4096x4096"}, {"votes", v}, {"peer", nullptr}},
                  {{"check", "gemm-self"},
                   {"recipe", "gemm:fp32:4096x4096x4096"},
                   {"votes", {{"round0", "0x0000000000000001"}, {"round1", "0x0000000000000002"}}},
                   {"peer", nullptr}}}},
                {"gpus", gpus},
                {"gpu", "GPU-sim-node0-6"}};
  obs::Finding l;
  l.kind = obs::FindingKind::kSdc;
  nlohmann::json lv = {{"expected", "0x00000000000000e0"}, {"got", "0x00000000000000e1"}};
  l.evidence = {{"source", "replay"},
                {"cycle", 7},
                {"trigger", "sdc"},
                {"check", "link"},
                {"recipe", "link:2->3"},
                {"votes", lv},
                {"checks", {{{"check", "link"}, {"recipe", "link:2->3"}, {"votes", lv}, {"peer", 2}}}},
                {"gpus", {{{"global_rank", 2}, {"gpu", "GPU-2"}}, {{"global_rank", 3}, {"gpu", "GPU-3"}}}},
                {"gpu", "GPU-3"}};
  obs::Finding s;
  s.kind = obs::FindingKind::kSlowLink;
  s.evidence = {{"class", "link"},
                {"source", "replay"},
                {"cycle", 9},
                {"recipes", {"link:1->6", "link:6->1"}},
                {"ms", 14.2},
                {"median_ms", 1.9},
                {"thresholds", {{"min_ratio", 3.0}, {"min_ms", 2.0}}}};
  // The live detector's link finding for a pair replay found first keeps replay's measurement,
  // and a normal channel above the factor says why it is normal.
  obs::Finding k;
  k.kind = obs::FindingKind::kSlowLink;
  nlohmann::json ch = {{"comm", {{"hash", "0x00000000000000d3"}, {"name", "dp3"}, {"nranks", 2}}},
                       {"kind", "coll"},
                       {"func", "AllReduce"},
                       {"bytes_bucket", 262144},
                       {"ranks", {5, 7}},
                       {"median_ms", 20.36},
                       {"peer_median_ms", 0.59},
                       {"ratio", 34.5},
                       {"samples", 16},
                       {"peers", 3},
                       {"min_diff_ms", 1.0}};
  nlohmann::json normal = ch;
  normal["comm"] = {{"hash", "0x0000000000000072"}, {"name", "tp2"}, {"nranks", 2}};
  normal["func"] = "AllGather";
  normal["ranks"] = {4, 5};
  normal["median_ms"] = 1.42;
  normal["peer_median_ms"] = 0.6;
  normal["ratio"] = 2.37;
  normal["min_diff_ms"] = 1.05;
  k.evidence = {{"class", "link"},
                {"slow", {ch}},
                {"normal", {normal}},
                {"thresholds", {{"factor", 2.0}, {"min_ms", 1.0}, {"window", 16}, {"noise_k", 3.0}}},
                {"replay", {{"cycle", 1}, {"recipes", {"link:5->7"}}, {"ms", 20.1}, {"median_ms", 0.2}}}};
  const std::string gemm = scout::cli::render_evidence(g, kT0, "  ");
  EXPECT_EQ(gemm.find('{'), std::string::npos) << gemm;
  size_t n = 0;
  for (size_t p = gemm.find("0x8bed171e9a3ff4ac"); p != std::string::npos; p = gemm.find("0x8bed171e9a3ff4ac", p + 1)) ++n;
  EXPECT_EQ(n, 1u) << gemm;
  const std::string all = "==== replay sdc: gemm-vote and gemm-self\n" + gemm + "==== replay sdc: link\n" +
                          scout::cli::render_evidence(l, kT0, "  ") + "==== replay slowlink\n" +
                          scout::cli::render_evidence(s, kT0, "  ") + "==== live slowlink replay found first\n" +
                          scout::cli::render_evidence(k, kT0, "  ");
  scout::testing::expect_golden(source_path("test/fixtures/cli/explain_replay.txt"), all);
}

// Keys a kind's renderer does not know are still shown (generically, after the words), and
// evidence of another shape -- the observer network's drill-down -- is rendered by shape.
TEST(Explain, UnknownKeysAndOtherShapesAreRenderedGenerically) {
  obs::Finding f;
  f.kind = obs::FindingKind::kNan;
  f.key = obs::OpKey{"AllReduce", 1};
  f.evidence = nlohmann::json::parse(R"({
    "origin": {"comm": {"hash": "0x00000000000000d1", "name": "dp", "nranks": 4},
               "op": {"func": "AllReduce", "seq": 1}, "time_ns": 1700000000010000000,
               "carriers": [{"global_rank": 2, "comm_rank": 2, "send_nan": 3, "send_inf": 0}]},
    "ops_with_nonfinite": 2, "ranks_with_nonfinite": [2, 0, 1, 3],
    "first_step_ns": 1700000000500000000, "layer": "mlp.3"})");
  EXPECT_EQ(scout::cli::render_evidence(f, kT0, "  "),
            "  first operation with non-finite sends: dp (0x00000000000000d1) AllReduce #1, called at +0.010s\n"
            "    rank 2 (comm rank 2): 3 NaN, 0 Inf in its send buffer\n"
            "  operations with non-finite sends in this episode: 2\n"
            "  ranks that carried non-finite values: 0-3 (4)\n"
            "  first_step_ns: 1700000000500000000 (+0.500s)\n"
            "  layer: mlp.3\n");

  obs::Finding d;
  d.kind = obs::FindingKind::kSdc;
  d.evidence = nlohmann::json::parse(R"({
    "field": "fingerprint", "seq": 12,
    "groups": [{"value": "0x00000000000000aa", "ranks": [0, 1, 2, 4, 5, 6, 7]},
               {"value": "0x00000000000000bb", "ranks": [3]}],
    "ranks_reporting": 8, "nranks": 8, "majority": "0x00000000000000aa"})");
  EXPECT_EQ(scout::cli::render_evidence(d, kT0, "  "),
            "  field: fingerprint\n"
            "  groups:\n"
            "    ranks 0-2,4-7 (7): 0x00000000000000aa\n"
            "    rank 3 (1): 0x00000000000000bb\n"
            "  majority: 0x00000000000000aa\n"
            "  nranks: 8\n"
            "  ranks_reporting: 8\n"
            "  seq: 12\n");

  obs::Finding none;
  none.kind = obs::FindingKind::kCrash;
  EXPECT_EQ(scout::cli::render_evidence(none, kT0, "  "), "  (no evidence recorded)\n");
}

}  // namespace

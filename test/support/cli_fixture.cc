#include "test/support/cli_fixture.h"

#include <stdexcept>

#include "common/gemm_names.h"
#include "observer/ckpt/ckpt_store.h"
#include "observer/store/writer.h"

namespace scout::testing {
namespace {

using obs::CommInfo;
using obs::Finding;
using obs::OpRankTiming;
using obs::OpSummary;
using obs::RankInfo;

constexpr int64_t kMs = 1000000;
constexpr int64_t kS = 1000000000;
constexpr uint64_t kWorld = 0x1111aaaa2222bbbbull;
constexpr uint64_t kTp0 = 0x7a0000000000a0a0ull;
constexpr uint64_t kDp3 = 0xd3d3d3d3d3d3d3d3ull;

obs::Suspect rank_suspect(int r, int comm_rank) {
  return {r, r < 4 ? "node0" : "node1", 1000 + r, "GPU-" + std::to_string(r), comm_rank};
}

// AllReduce of `bytes` over n ranks in `dur` ns: bus bandwidth in GB/s (nccl-tests convention).
double allreduce_busbw(uint64_t bytes, int n, int64_t dur) {
  return static_cast<double>(bytes) / static_cast<double>(dur) * 2.0 * (n - 1) / n;
}

// One world AllReduce: ranks arrive at t + late[r]; all end `dur` after the last arrival.
void world_allreduce(uint64_t seq, int64_t t, const int64_t late[8], int64_t dur, uint64_t odd_fp_rank,
                     std::vector<OpSummary>* ops, std::vector<OpRankTiming>* ts) {
  OpSummary o;
  o.comm_hash = kWorld;
  o.comm_name = "world";
  o.nranks = 8;
  o.kind = "coll";
  o.func = "AllReduce";
  o.seq = seq;
  o.datatype = "float32";
  o.count = 1 << 20;
  o.bytes = 4 << 20;
  o.algo = "RING";
  o.proto = "SIMPLE";
  o.n_channels = 4;
  o.ranks_reported = 8;
  o.ranks_complete = 8;
  int64_t first = t + late[0], last = t + late[0];
  int last_rank = 0;
  for (int r = 0; r < 8; ++r) {
    first = std::min(first, t + late[r]);
    if (t + late[r] > last) {
      last = t + late[r];
      last_rank = r;
    }
  }
  o.first_arrival_ns = first;
  o.last_arrival_ns = last;
  o.last_rank = last_rank;
  o.end_ns = last + dur;
  o.duration_ns = dur;
  o.busbw_gbps = allreduce_busbw(o.bytes, 8, dur);
  o.fp_verdict = odd_fp_rank < 8 ? "attributed" : "agree";
  o.meta_verdict = "agree";
  ops->push_back(o);
  for (int r = 0; r < 8; ++r) {
    OpRankTiming tm;
    tm.comm_hash = kWorld;
    tm.func = "AllReduce";
    tm.seq = seq;
    tm.global_rank = r;
    tm.comm_rank = r;
    tm.api_ns = t + late[r] - 20000;
    tm.start_ns = t + late[r];
    tm.end_ns = o.end_ns;
    tm.fp_recv = static_cast<uint64_t>(r) == odd_fp_rank ? 0x0badc0ffee000005ull : 0x1f2e3d4c5b6a7988ull + seq;
    tm.fp_status = "done";
    ts->push_back(tm);
  }
}

}  // namespace

void write_demo_store(const std::string& path) {
  std::vector<std::string> errors;
  store::WriterOptions opt;
  opt.max_ops = 1000;
  opt.on_error = [&](const std::string& m) { errors.push_back(m); };
  std::string err;
  auto w = store::StoreWriter::open(path, opt, &err);
  if (!w) throw std::runtime_error(err);
  const int64_t t0 = kFixtureT0;

  w->put_job({"demo", 2, 0, t0, t0 + 12 * kS + 500 * kMs, "scout-fixture", 0, 0, 0, 0, "", {}, {}, 0});
  std::vector<RankInfo> ranks;
  for (int r = 0; r < 8; ++r) {
    RankInfo ri;
    ri.global_rank = r;
    ri.local_rank = r % 4;
    ri.host = r < 4 ? "node0" : "node1";
    ri.pid = 1000 + r;
    ri.gpu = "GPU-" + std::to_string(r);
    ri.cuda_dev = r % 4;
    ri.node_rank = r / 4;
    ri.segment = "/dev/shm/scout.demo." + ri.host + "." + std::to_string(ri.pid);
    ri.state = r == 7 ? "dead" : "running";
    ri.first_seen_ns = t0 + 100 * kMs;
    ri.last_event_ns = r == 7 ? t0 + 9 * kS : t0 + 12 * kS + 400 * kMs;
    ranks.push_back(ri);
  }
  w->put_ranks(ranks);

  CommInfo world;
  world.comm_hash = kWorld;
  world.name = "world";
  world.nranks = 8;
  world.nnodes = 2;
  world.global_ranks = {0, 1, 2, 3, 4, 5, 6, 7};
  world.ops_complete = 41;
  world.last_seq[4] = 41;
  world.last_progress_ns = t0 + 10 * kS + 201 * kMs;
  world.state = "active";
  CommInfo tp0;
  tp0.comm_hash = kTp0;
  tp0.name = "tp0";
  tp0.nranks = 2;
  tp0.nnodes = 1;
  tp0.global_ranks = {0, 1};
  tp0.ops_complete = 24;
  tp0.last_seq[2] = 12;
  tp0.last_seq[3] = 12;
  tp0.last_progress_ns = t0 + 12 * kS + 200 * kMs;
  tp0.state = "active";
  CommInfo dp3;
  dp3.comm_hash = kDp3;
  dp3.name = "dp3";
  dp3.nranks = 2;
  dp3.nnodes = 2;
  dp3.global_ranks = {3, 7};
  dp3.ops_complete = 7;
  dp3.last_seq[4] = 7;
  dp3.last_progress_ns = t0 + 8 * kS + 900 * kMs;
  dp3.state = "hung";
  w->put_comms({world, tp0, dp3});

  std::vector<OpSummary> ops;
  std::vector<OpRankTiming> ts;
  // Rank 3 arrives ~2 ms late in #38 and #39 (a straggler that recovered), rank 5's result
  // differs in #40 (SDC).
  const int64_t late_a[8] = {0, 15000, 8000, 2100000, 30000, 12000, 22000, 5000};
  const int64_t late_b[8] = {4000, 0, 9000, 2080000, 26000, 11000, 18000, 7000};
  const int64_t late_c[8] = {0, 14000, 6000, 21000, 40000, 9000, 25000, 3000};
  world_allreduce(38, t0 + 10 * kS, late_a, 350000, 99, &ops, &ts);
  world_allreduce(39, t0 + 10 * kS + 100 * kMs, late_b, 352000, 99, &ops, &ts);
  world_allreduce(40, t0 + 10 * kS + 200 * kMs, late_c, 349000, 5, &ops, &ts);

  // tp0 AllGather #11: 2 ranks, 8 MiB gathered.
  OpSummary ag;
  ag.comm_hash = kTp0;
  ag.comm_name = "tp0";
  ag.nranks = 2;
  ag.kind = "coll";
  ag.func = "AllGather";
  ag.seq = 11;
  ag.datatype = "bfloat16";
  ag.count = 2 << 20;
  ag.bytes = 4 << 20;
  ag.algo = "RING";
  ag.proto = "LL128";
  ag.n_channels = 2;
  ag.ranks_reported = 2;
  ag.ranks_complete = 2;
  ag.first_arrival_ns = t0 + 12 * kS + 100 * kMs;
  ag.last_arrival_ns = ag.first_arrival_ns + 3000;
  ag.last_rank = 1;
  ag.duration_ns = 120000;
  ag.end_ns = ag.last_arrival_ns + ag.duration_ns;
  ag.busbw_gbps = static_cast<double>(ag.bytes) * 2 / static_cast<double>(ag.duration_ns) * 0.5;
  ag.fp_verdict = "agree";
  ag.meta_verdict = "agree";
  ops.push_back(ag);
  for (int r = 0; r < 2; ++r) {
    OpRankTiming tm;
    tm.comm_hash = kTp0;
    tm.func = "AllGather";
    tm.seq = 11;
    tm.global_rank = r;
    tm.comm_rank = r;
    tm.api_ns = ag.first_arrival_ns - 15000;
    tm.start_ns = ag.first_arrival_ns + 3000 * r;
    tm.end_ns = ag.end_ns;
    tm.fp_recv = 0x5eed000000000011ull;
    tm.fp_status = "done";
    ts.push_back(tm);
  }

  // dp3 AllReduce #7: rank 3 waits inside it, rank 7 never entered (its process died).
  OpSummary hung;
  hung.comm_hash = kDp3;
  hung.comm_name = "dp3";
  hung.nranks = 2;
  hung.kind = "coll";
  hung.func = "AllReduce";
  hung.seq = 7;
  hung.datatype = "float32";
  hung.count = 1 << 18;
  hung.bytes = 1 << 20;
  hung.algo = "RING";
  hung.proto = "SIMPLE";
  hung.n_channels = 2;
  hung.ranks_reported = 1;
  hung.ranks_complete = 0;
  hung.first_arrival_ns = t0 + 8 * kS + 951 * kMs;
  hung.last_arrival_ns = hung.first_arrival_ns;
  hung.last_rank = 3;
  hung.fp_verdict = "partial";
  hung.meta_verdict = "partial";
  ops.push_back(hung);
  OpRankTiming wait;
  wait.comm_hash = kDp3;
  wait.func = "AllReduce";
  wait.seq = 7;
  wait.global_rank = 3;
  wait.comm_rank = 0;
  wait.api_ns = t0 + 8 * kS + 950 * kMs;
  wait.start_ns = hung.first_arrival_ns;
  wait.fp_status = "none";
  ts.push_back(wait);
  w->put_ops(ops, ts);

  Finding sdc;
  sdc.kind = obs::FindingKind::kSdc;
  sdc.verdict = obs::Verdict::kAttributed;
  sdc.suspects = {rank_suspect(5, 5)};
  sdc.comm_hash = kWorld;
  sdc.comm_name = "world";
  sdc.comm_nranks = 8;
  sdc.key = obs::OpKey{"AllReduce", 40};
  sdc.first_seen_ns = ops[2].end_ns;
  sdc.last_seen_ns = ops[2].end_ns + 300 * kMs;
  sdc.summary =
      "rank 5 (node1, pid 1005) received different bytes in AllReduce #40 of world: 7 of 8 "
      "ranks agree on 0x1f2e3d4c5b6a79b0";
  sdc.evidence = {
      {"check", "recv"},
      {"op", {{"func", "AllReduce"}, {"seq", 40}}},
      {"votes",
       {{{"value", "0x1f2e3d4c5b6a79b0"}, {"ranks", {0, 1, 2, 3, 4, 6, 7}}, {"comm_ranks", {0, 1, 2, 3, 4, 6, 7}}},
        {{"value", "0x0badc0ffee000005"}, {"ranks", {5}}, {"comm_ranks", {5}}}}},
      {"majority", "0x1f2e3d4c5b6a79b0"},
      {"voters", 8},
      {"nranks", 8},
      {"partial", false},
      {"fp_bytes", 4 << 20},
      {"fp_version", 1},
      {"bytes", 4 << 20},
      {"datatype", "float32"}};
  sdc.dedup_key = "sdc:recv:world:40";
  w->upsert_finding(&sdc);

  Finding slow;
  slow.kind = obs::FindingKind::kStraggler;
  slow.verdict = obs::Verdict::kAttributed;
  slow.open = false;
  slow.suspects = {rank_suspect(3, 3)};
  slow.comm_hash = kWorld;
  slow.comm_name = "world";
  slow.comm_nranks = 8;
  slow.key = obs::OpKey{"AllReduce", 38};
  slow.first_seen_ns = ops[0].end_ns;
  slow.last_seen_ns = ops[1].end_ns;
  slow.summary =
      "rank 3 (node0, pid 1003) arrives late by 2.09 ms (median, beyond the time it waited for "
      "others) in 2 of the last 2 collectives of world (0x1111aaaa2222bbbb)";
  // Evidence shapes of docs/findings.md.
  const nlohmann::json world_j = {{"hash", "0x1111aaaa2222bbbb"}, {"name", "world"}, {"nranks", 8}};
  const nlohmann::json dp3_j = {{"hash", "0xd3d3d3d3d3d3d3d3"}, {"name", "dp3"}, {"nranks", 2}};
  const nlohmann::json ar7 = {{"func", "AllReduce"}, {"seq", 7}};
  slow.evidence = {
      {"comms", nlohmann::json::array({nlohmann::json{{"comm", world_j},
                                                      {"comm_rank", 3},
                                                      {"window_ops", 2},
                                                      {"late_ops", 2},
                                                      {"late_events", 2},
                                                      {"median_late_ms", 2.09},
                                                      {"series_ms", {2.1, 2.08}},
                                                      {"lateness_ms", {2.1, 2.08}}}})},
      {"aggregate", nlohmann::json{{"window_ops", 2}, {"late_ops", 2}, {"late_events", 2}}},
      {"thresholds", nlohmann::json{{"min_ms", 1.0}, {"rel", 3.0}, {"persist", 0.6}, {"min_late", 2}, {"window", 64}}}};
  slow.dedup_key = "straggler:world:3";
  w->upsert_finding(&slow);

  Finding hang;
  hang.kind = obs::FindingKind::kHang;
  hang.verdict = obs::Verdict::kAttributed;
  hang.suspects = {rank_suspect(7, 1)};
  hang.comm_hash = kDp3;
  hang.comm_name = "dp3";
  hang.comm_nranks = 2;
  hang.key = obs::OpKey{"AllReduce", 7};
  hang.first_seen_ns = t0 + 11 * kS;
  hang.last_seen_ns = t0 + 12 * kS + 500 * kMs;
  hang.summary =
      "rank 7 (node1, pid 1007) never entered AllReduce #7 of dp3; 1 rank waits for it (the process "
      "has since exited)";
  const nlohmann::json ar6 = {{"func", "AllReduce"}, {"seq", 6}};
  nlohmann::json rank3 = {
      {"global_rank", 3}, {"comm_rank", 0}, {"state", "running"}, {"op", ar7}, {"last_completed", ar6}};
  nlohmann::json rank7 = {{"global_rank", 7}, {"comm_rank", 1}, {"state", "absent"}, {"last_completed", ar6}};
  nlohmann::json dp3_state = {{"comm", dp3_j},        {"class", "absent"},  {"op", ar7},
                              {"stalled_ms", 3550.0}, {"waiting_in_op", 1}, {"ranks", {rank3, rank7}}};
  nlohmann::json root7 = {{"global_rank", 7}, {"reason", "idle"}, {"detail", ""}, {"process", "dead"}};
  nlohmann::json edge = {{"rank", 3}, {"waits_for", 7}, {"comm", dp3_j}, {"op", ar7}, {"why", "absent"}};
  hang.evidence = {{"class", "absent"},
                   {"root", nlohmann::json::array({root7})},
                   {"stalled_ms", 3550.0},
                   {"last_progress_ns", t0 + 8 * kS + 950 * kMs},
                   {"timeout_ms", 3000.0},
                   {"waiting_ranks", {3}},
                   {"chain", nlohmann::json::array({edge})},
                   {"comms", nlohmann::json::array({dp3_state})}};
  hang.dedup_key = "hang:dp3:7";
  w->upsert_finding(&hang);
  w->flush();
  if (!errors.empty()) throw std::runtime_error(errors.front());
}

void write_demo_history(const std::string& path) {
  std::vector<std::string> errors;
  store::WriterOptions opt;
  opt.on_error = [&](const std::string& m) { errors.push_back(m); };
  std::string err;
  auto w = store::StoreWriter::open(path, opt, &err);
  if (!w) throw std::runtime_error(err);
  const int64_t t0 = kFixtureT0;

  std::vector<obs::GemmCaptureInfo> cap;
  std::vector<obs::GemmShapeInfo> shapes;
  for (int r = 0; r < 2; ++r) {
    obs::GemmCaptureInfo c;
    c.global_rank = r;
    c.host = "node0";
    c.pid = 1000 + r;
    c.state = shm::kGemmWaiting;
    c.capacity = 256;
    c.n_entries = 1;
    c.windows = 3;
    c.lines = 120;
    c.captured = 96;
    c.ignored = 24;
    c.window_ns = 2 * kS;
    cap.push_back(c);
    obs::GemmShapeInfo g;
    g.global_rank = r;
    g.host = "node0";
    g.pid = 1000 + r;
    g.key.m = 4096;
    g.key.n = 4096;
    g.key.k = 1024;
    g.key.a_type = g.key.b_type = g.key.c_type = g.key.d_type = shm::gemm_type_id("R_16BF");
    g.key.scale_type = shm::gemm_type_id("R_32F");
    g.key.compute = shm::gemm_compute_id("COMPUTE_32F");
    g.key.algo = 21;
    g.key.tile_m = 256;
    g.key.tile_n = 128;
    g.count = 96;
    shapes.push_back(g);
  }
  w->put_gemm(cap, shapes);

  obs::ReplayCycleRecord pass;
  pass.cycle = 1;
  pass.trigger = "periodic";
  pass.started_ns = t0 + 5 * kS;
  pass.ended_ns = pass.started_ns + 800 * kMs;
  pass.outcome = "pass";
  pass.backend = "emu";
  pass.detail = {{"recipes", {"gemm:bf16:4096x4096x1024"}}, {"participants", {{{"global_rank", 0}}, {{"global_rank", 1}}}}};
  w->put_replay_cycle(&pass);
  obs::ReplayCycleRecord fail;
  fail.cycle = 2;
  fail.trigger = "sdc";
  fail.started_ns = t0 + 11 * kS;
  fail.ended_ns = fail.started_ns + 900 * kMs;
  fail.outcome = "fail";
  fail.backend = "emu";
  fail.detail = {{"recipes", {"coll:AllReduce:float32:4194304:RING/SIMPLE"}},
                 {"participants", {{{"global_rank", 4}}, {{"global_rank", 5}}, {{"global_rank", 6}}}},
                 {"verdict", {{"sdc", {{{"ranks", {5}}, {"recipe", "coll:AllReduce:float32:4194304:RING/SIMPLE"}}}}}}};
  w->put_replay_cycle(&fail);
  w->flush();
  if (!errors.empty()) throw std::runtime_error(errors.front());
  w.reset();

  auto ck = ckpt::CkptStore::open_writer(path);
  ck->begin();
  for (int64_t i = 3; i <= 5; ++i) {
    ckpt::CycleVerdict v;
    v.index = i;
    v.begin_ns = t0 + (i - 3) * 4 * kS;
    v.end_ns = v.begin_ns + 4 * kS;
    v.status = i == 5 ? ckpt::CycleStatus::kDirty : ckpt::CycleStatus::kClean;
    if (i == 5) {
      v.reasons = {"finding 1 (sdc, rank 5)"};
      v.finding_ids = {1};
    }
    v.comparisons = 12;
    v.comms_ran = 3;
    v.comms_covered = 3;
    v.voters = {{8, 10}, {2, 2}};
    v.bytes_fingerprinted = 96 << 20;
    v.replay = i == 5 ? ckpt::ReplayStatus::kFail : ckpt::ReplayStatus::kPass;
    ck->put_cycle(v);
  }
  const char* paths[] = {"/ckpt/iter_0000100", "/ckpt/iter_0000200", "/ckpt/iter_0000300"};
  for (int i = 0; i < 3; ++i) {
    ckpt::Checkpoint c;
    c.path = paths[i];
    c.framework = "megatron";
    c.step = 100 * (i + 1);
    c.completed_ns = t0 + (1 + 4 * i) * kS;
    c.discovered_ns = c.completed_ns + 250 * kMs;
    if (i == 0) {
      c.state = ckpt::State::kVerified;
      c.reason = "2 clean check cycles (3, 4)";
      c.cycles = {3, 4};
      c.decided_ns = t0 + 8 * kS + 100 * kMs;
    } else if (i == 1) {
      c.state = ckpt::State::kRejected;
      c.reason = "finding 1 (sdc on rank 5) after it";
      c.finding_ids = {1};
      c.decided_ns = t0 + 10 * kS + 600 * kMs;
    }
    ck->put_checkpoint(&c);
  }
  ckpt::CertificateRow cert;
  cert.seq = 1;
  cert.checkpoint_id = 1;
  cert.sha256 = std::string(64, 'a');
  cert.prev_sha256 = "";
  cert.file = "/state/demo/certificates/0001.json";
  cert.json = R"({"checkpoint":"/ckpt/iter_0000100","step":100,"cycles":[3,4],"seq":1})";
  ck->put_certificate(cert);
  ck->put_meta("cycle_ns", std::to_string(4 * kS));  // as the certifier writes them
  ck->put_meta("k", "2");
  ck->commit();
}

}  // namespace scout::testing

// The SQLite store: round trips through obs::Sink and StoreReader, finding upsert by dedup_key,
// bounded operation history, schema version checks, and a reader running while the writer
// commits (WAL).
#include <sqlite3.h>

#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <thread>

#include "common/paths.h"
#include "observer/store/reader.h"
#include "observer/store/schema.h"
#include "observer/store/sqlite.h"
#include "observer/store/writer.h"
#include "scout/config.h"
#include "test/support/tmpdir.h"

namespace {

using namespace scout;
using scout::testing::TempDir;
using store::StoreReader;
using store::StoreWriter;

constexpr uint64_t kHash = 0xfedcba9876543210ull;  // high bit set: stored as a negative int64

std::unique_ptr<StoreWriter> open_writer(const std::string& path, int64_t max_ops = 1000,
                                         std::vector<std::string>* errors = nullptr) {
  store::WriterOptions o;
  o.max_ops = max_ops;
  o.on_error = [errors](const std::string& m) {
    if (errors) errors->push_back(m);
    ADD_FAILURE() << m;
  };
  std::string err;
  auto w = StoreWriter::open(path, o, &err);
  EXPECT_TRUE(w) << err;
  return w;
}

obs::OpSummary op(uint64_t seq, int64_t t0) {
  obs::OpSummary o;
  o.comm_hash = kHash;
  o.comm_name = "dp";
  o.nranks = 4;
  o.kind = "coll";
  o.func = "AllReduce";
  o.seq = seq;
  o.datatype = "float32";
  o.count = 1 << 20;
  o.bytes = 4 << 20;
  o.algo = "RING";
  o.proto = "SIMPLE";
  o.n_channels = 2;
  o.ranks_reported = 4;
  o.ranks_complete = 4;
  o.first_arrival_ns = t0;
  o.last_arrival_ns = t0 + 1500;
  o.last_rank = 3;
  o.end_ns = t0 + 101500;
  o.duration_ns = 100000;
  o.busbw_gbps = 62.9145728;
  o.fp_verdict = "agree";
  o.meta_verdict = "agree";
  return o;
}

std::vector<obs::OpRankTiming> timings(uint64_t seq, int64_t t0, int nranks = 4) {
  std::vector<obs::OpRankTiming> v;
  for (int r = 0; r < nranks; ++r) {
    obs::OpRankTiming t;
    t.comm_hash = kHash;
    t.func = "AllReduce";
    t.seq = seq;
    t.global_rank = r;
    t.comm_rank = r;
    t.api_ns = t0 - 1000;
    t.start_ns = t0 + 500 * r;
    t.end_ns = t0 + 101500;
    t.fp_recv = 0x8000000000000001ull + r;
    t.fp_status = "done";
    v.push_back(t);
  }
  return v;
}

template <typename F>
store::OpFilter filter(F&& set) {
  store::OpFilter f;
  set(f);
  return f;
}

obs::Finding sdc_finding() {
  obs::Finding f;
  f.kind = obs::FindingKind::kSdc;
  f.verdict = obs::Verdict::kAttributed;
  f.suspects = {{5, "node1", 4242, "GPU-5", 1}};
  f.comm_hash = kHash;
  f.comm_name = "dp";
  f.comm_nranks = 4;
  f.key = obs::OpKey{"AllReduce", 40};
  f.first_seen_ns = 1000;
  f.last_seen_ns = 2000;
  f.summary = "rank 5 received different AllReduce #40 bytes";
  f.evidence = {{"votes", {{"0x1", {4, 6, 7}}, {"0x2", {5}}}}};
  f.dedup_key = "sdc:0xfedcba9876543210:AllReduce:40";
  return f;
}

TEST(StorePaths, DefaultPathRule) {
  std::string err;
  EXPECT_EQ(store::default_store_path("/tmp/scout", "demo", 0, &err), "/tmp/scout/demo/node-0.db");
  EXPECT_EQ(store::default_store_path("/var/lib/scout/", "job 7/../x", 3, &err),
            "/var/lib/scout/job_207_2f_2e_2e_2fx/node-3.db");  // injective escapes (docs/store.md)
  EXPECT_EQ(store::default_store_path("/tmp/scout", "", 0, &err), "");
  EXPECT_EQ(err, "empty job id");
  EXPECT_EQ(store::default_store_path("/tmp/scout", "j", -1, &err), "");
  EXPECT_EQ(err, "negative node rank");
}

TEST(StorePaths, JobIdResolution) {
  std::map<std::string, std::string> env;
  auto get = [&](const char* n) -> const char* {
    auto it = env.find(n);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  EXPECT_EQ(scout::config::resolve_job_id("", get), "default");
  env["SLURM_JOB_ID"] = "123";
  EXPECT_EQ(scout::config::resolve_job_id("", get), "123");
  env["TORCHELASTIC_RUN_ID"] = "te";
  EXPECT_EQ(scout::config::resolve_job_id("", get), "te");
  EXPECT_EQ(scout::config::resolve_job_id("mine", get), "mine");
}

TEST(Store, RoundTripEveryTable) {
  TempDir dir;
  std::string path = dir.path() + "/sub/node-0.db";  // the directory is created
  {
    auto w = open_writer(path);
    obs::NetState net;
    net.present = true;
    net.connected = true;
    net.peers = 1;
    net.epoch = 7;
    net.rounds = 99;
    net.formed = 3;
    net.failures = 4;
    net.since_ns = 150;
    net.last_round_ns = 210;
    net.rendezvous = "file:/shared/rdzv";
    net.last_error = "observer network: barrier failed";
    w->put_job({"demo", 2, 0, 111, 222, "scout test", 0, 0, 0, 0, "", net, {}, 0});
    obs::RankInfo r{5, 1, "node1", 4242, "GPU-5", 1, 1, "/dev/shm/scout.demo.node1.4242", "running", 10, 20};
    w->put_ranks({r});
    obs::CommInfo c;
    c.comm_hash = kHash;
    c.name = "dp";
    c.nranks = 4;
    c.nnodes = 2;
    c.global_ranks = {1, 3, 5, -1};
    c.ops_complete = 77;
    for (int i = 0; i < 5; ++i) c.last_seq[i] = 10 + i;
    c.last_progress_ns = 333;
    c.state = "active";
    w->put_comms({c});
    w->put_ops({op(7, 5000)}, timings(7, 5000));
    obs::Finding f = sdc_finding();
    f.peer = obs::Suspect{6, "node1", 4243, "GPU-6", 2};
    w->upsert_finding(&f);
    EXPECT_EQ(f.id, 1);
    w->flush();
    EXPECT_EQ(w->stats().batches, 1u);
  }
  auto rd = StoreReader::open(path);
  auto job = rd->job();
  ASSERT_TRUE(job);
  EXPECT_EQ(job->job, "demo");
  EXPECT_EQ(job->nodes, 2);
  EXPECT_EQ(job->started_ns, 111);
  EXPECT_EQ(job->updated_ns, 222);
  EXPECT_EQ(job->observer_version, "scout test");
  EXPECT_TRUE(job->net.present);  // meta "network"
  EXPECT_TRUE(job->net.connected);
  EXPECT_EQ(job->net.peers, 1);
  EXPECT_EQ(job->net.epoch, 7u);
  EXPECT_EQ(job->net.rounds, 99u);
  EXPECT_EQ(job->net.formed, 3u);
  EXPECT_EQ(job->net.failures, 4u);
  EXPECT_EQ(job->net.since_ns, 150);
  EXPECT_EQ(job->net.last_round_ns, 210);
  EXPECT_EQ(job->net.rendezvous, "file:/shared/rdzv");
  EXPECT_EQ(job->net.last_error, "observer network: barrier failed");

  auto ranks = rd->ranks();
  ASSERT_EQ(ranks.size(), 1u);
  EXPECT_EQ(ranks[0].global_rank, 5);
  EXPECT_EQ(ranks[0].local_rank, 1);
  EXPECT_EQ(ranks[0].host, "node1");
  EXPECT_EQ(ranks[0].pid, 4242);
  EXPECT_EQ(ranks[0].gpu, "GPU-5");
  EXPECT_EQ(ranks[0].segment, "/dev/shm/scout.demo.node1.4242");
  EXPECT_EQ(ranks[0].state, "running");
  EXPECT_EQ(ranks[0].last_event_ns, 20);

  auto comms = rd->comms();
  ASSERT_EQ(comms.size(), 1u);
  EXPECT_EQ(comms[0].comm_hash, kHash);
  EXPECT_EQ(comms[0].global_ranks, (std::vector<int>{1, 3, 5, -1}));
  EXPECT_EQ(comms[0].ops_complete, 77u);
  EXPECT_EQ(comms[0].last_seq[0], 10u);
  EXPECT_EQ(comms[0].last_seq[4], 14u);
  EXPECT_EQ(comms[0].state, "active");

  auto ops = rd->ops();
  ASSERT_EQ(ops.size(), 1u);
  const obs::OpSummary& o = ops[0].op;
  EXPECT_EQ(o.comm_hash, kHash);
  EXPECT_EQ(o.seq, 7u);
  EXPECT_EQ(o.bytes, 4u << 20);
  EXPECT_EQ(o.algo, "RING");
  EXPECT_EQ(o.last_rank, 3);
  EXPECT_EQ(o.duration_ns, 100000);
  EXPECT_DOUBLE_EQ(o.busbw_gbps, 62.9145728);
  EXPECT_EQ(o.fp_verdict, "agree");
  auto ts = rd->timings({ops[0].op_id});
  ASSERT_EQ(ts.size(), 4u);
  EXPECT_EQ(ts[2].t.global_rank, 2);
  EXPECT_EQ(ts[2].t.start_ns, 6000);
  EXPECT_EQ(ts[2].t.fp_recv, 0x8000000000000003ull);
  EXPECT_EQ(ts[2].t.func, "AllReduce");
  EXPECT_EQ(ts[2].t.comm_hash, kHash);

  auto fs = rd->findings();
  ASSERT_EQ(fs.size(), 1u);
  obs::Finding want = sdc_finding();
  want.id = 1;
  want.peer = obs::Suspect{6, "node1", 4243, "GPU-6", 2};
  EXPECT_EQ(obs::to_json(fs[0]), obs::to_json(want));
  EXPECT_EQ(fs[0].dedup_key, want.dedup_key);
  EXPECT_EQ(rd->meta().schema_version, store::kSchemaVersion);
}

TEST(Store, UpsertFindingByDedupKey) {
  TempDir dir;
  std::string path = dir.path() + "/s.db";
  auto w = open_writer(path);
  obs::Finding f = sdc_finding();
  w->upsert_finding(&f);
  ASSERT_EQ(f.id, 1);
  w->flush();

  obs::Finding later = sdc_finding();  // same failure, seen again
  later.first_seen_ns = 1500;
  later.last_seen_ns = 9000;
  later.open = false;
  later.suspects = {{5, "node1", 4242, "GPU-5", 1}, {6, "node1", 4243, "GPU-6", 2}};
  later.summary = "updated";
  later.evidence = {{"n", 2}};
  w->upsert_finding(&later);
  EXPECT_EQ(later.id, 1);
  EXPECT_EQ(later.first_seen_ns, 1000);  // kept from the first store

  obs::Finding other = sdc_finding();
  other.dedup_key = "sdc:other";
  w->upsert_finding(&other);
  EXPECT_EQ(other.id, 2);

  obs::Finding anon1 = sdc_finding(), anon2 = sdc_finding();
  anon1.dedup_key.clear();
  anon2.dedup_key.clear();
  w->upsert_finding(&anon1);
  w->upsert_finding(&anon2);
  EXPECT_EQ(anon1.id, 3);
  EXPECT_EQ(anon2.id, 4);
  anon1.summary = "by id";
  w->upsert_finding(&anon1);  // no dedup key, but its id: updates row 3
  EXPECT_EQ(anon1.id, 3);
  w->flush();

  auto rd = StoreReader::open(path);
  auto fs = rd->findings();
  ASSERT_EQ(fs.size(), 4u);
  EXPECT_EQ(fs[0].first_seen_ns, 1000);
  EXPECT_EQ(fs[0].last_seen_ns, 9000);
  EXPECT_FALSE(fs[0].open);
  EXPECT_EQ(fs[0].summary, "updated");
  EXPECT_EQ(fs[0].evidence, (nlohmann::json{{"n", 2}}));
  ASSERT_EQ(fs[0].suspects.size(), 2u);
  EXPECT_EQ(fs[0].suspects[1].global_rank, 6);
  EXPECT_EQ(fs[2].summary, "by id");
  EXPECT_EQ(rd->findings(store::FindingFilter{true}).size(), 3u);
  EXPECT_EQ(rd->finding(2)->dedup_key, "sdc:other");
  EXPECT_FALSE(rd->finding(99));
}

// A slow link replay found first has no communicator or operation; the live detector's report on
// the same key names them (dp3 AllReduce #0), and the stored row takes them; a later report
// naming another communicator does not move a row that already has one.
TEST(Store, UpsertFillsTheCommunicatorAndOperationOnce) {
  TempDir dir;
  std::string path = dir.path() + "/s.db";
  auto w = open_writer(path);
  obs::Finding replay = sdc_finding();
  replay.kind = obs::FindingKind::kSlowLink;
  replay.dedup_key = "slowlink:link:vm:5:vm:7";
  replay.comm_hash = 0;
  replay.comm_name.clear();
  replay.comm_nranks = 0;
  replay.key.reset();
  w->upsert_finding(&replay);
  obs::Finding live = replay;
  live.comm_hash = 0xd3d3d3d3d3d3d3d3ull;
  live.comm_name = "dp3";
  live.comm_nranks = 2;
  live.key = obs::OpKey{"AllReduce", 0};
  w->upsert_finding(&live);
  obs::Finding again = live;
  again.comm_hash = 0x1111;
  again.comm_name = "world";
  again.comm_nranks = 8;
  again.key = obs::OpKey{"AllGather", 4};
  w->upsert_finding(&again);
  w->flush();
  auto fs = StoreReader::open(path)->findings();
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].comm_hash, 0xd3d3d3d3d3d3d3d3ull);
  EXPECT_EQ(fs[0].comm_name, "dp3");
  EXPECT_EQ(fs[0].comm_nranks, 2);
  ASSERT_TRUE(fs[0].key);
  EXPECT_EQ(fs[0].key->func, "AllReduce");
  EXPECT_EQ(fs[0].key->seq, 0u);
}

TEST(Store, OpsUpsertByKeyAndFilters) {
  TempDir dir;
  std::string path = dir.path() + "/s.db";
  auto w = open_writer(path);
  w->put_ops({op(1, 1000), op(2, 2000)}, timings(1, 1000));
  obs::OpSummary again = op(1, 1000);
  again.ranks_complete = 3;
  again.fp_verdict = "attributed";
  obs::OpSummary ag = op(1, 3000);
  ag.func = "AllGather";
  ag.comm_name = "tp";
  ag.comm_hash = 0x1234;
  w->put_ops({again, ag}, timings(2, 2000, 2));
  w->flush();

  auto rd = StoreReader::open(path);
  auto all = rd->ops();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].op.seq, 1u);
  EXPECT_EQ(all[0].op.ranks_complete, 3);
  EXPECT_EQ(all[0].op.fp_verdict, "attributed");
  EXPECT_EQ(all[0].op_id, 1);  // kept its place in the history
  EXPECT_EQ(rd->ops(filter([](auto& f) { f.comm_name = "tp"; })).size(), 1u);
  EXPECT_EQ(rd->ops(filter([](auto& f) { f.comm_hash = kHash; })).size(), 2u);
  EXPECT_EQ(rd->ops(filter([](auto& f) { f.func = "allgather"; })).size(), 1u);
  // Rank 3 has timings only for seq 1 (seq 2 got 2 ranks).
  auto r3 = rd->ops(filter([](auto& f) { f.global_rank = 3; }));
  ASSERT_EQ(r3.size(), 1u);
  EXPECT_EQ(r3[0].op.seq, 1u);
  auto last2 = rd->ops(filter([](auto& f) { f.last = 2; }));
  ASSERT_EQ(last2.size(), 2u);
  EXPECT_EQ(last2[0].op.seq, 2u);
  EXPECT_EQ(last2[1].op.func, "AllGather");
  EXPECT_EQ(rd->timings().size(), 6u);
}

TEST(Store, TimingWithoutSummaryGetsPlaceholder) {
  TempDir dir;
  std::string path = dir.path() + "/s.db";
  auto w = open_writer(path);
  auto t = timings(9, 100, 1);
  t[0].func = "Send";
  w->put_ops({}, t);
  w->flush();
  EXPECT_EQ(w->stats().placeholder_ops, 1u);
  auto rd = StoreReader::open(path);
  auto ops = rd->ops();
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].op.kind, "send");
  EXPECT_EQ(ops[0].op.func, "Send");
  EXPECT_EQ(ops[0].op.seq, 9u);
  EXPECT_EQ(rd->timings().size(), 1u);
}

TEST(Store, BoundedHistoryDropsOldestWithTheirTimings) {
  TempDir dir;
  std::string path = dir.path() + "/s.db";
  auto w = open_writer(path, /*max_ops=*/16);
  for (uint64_t seq = 0; seq < 40; ++seq) {
    w->put_ops({op(seq, 1000 * static_cast<int64_t>(seq))}, timings(seq, 1000 * seq));
    if (seq % 5 == 4) w->flush();
  }
  w->flush();
  EXPECT_EQ(w->stats().ops_dropped, 24u);
  // Re-stating an old, kept operation does not move it to the end.
  w->put_ops({op(30, 30000)}, {});
  w->flush();
  auto rd = StoreReader::open(path);
  auto ops = rd->ops();
  ASSERT_EQ(ops.size(), 16u);
  EXPECT_EQ(ops.front().op.seq, 24u);
  EXPECT_EQ(ops.back().op.seq, 39u);
  EXPECT_EQ(rd->timings().size(), 16u * 4u);
  EXPECT_EQ(rd->meta().ops_dropped, 24u);
}

// Point-to-point pairs: put_p2p replaces a pair's row with its totals; the communicator's
// p2p_complete is stored with it; a store written before the column reads 0 and gains it when an
// observer opens it.
TEST(Store, P2pPairsAndCountRoundTrip) {
  TempDir dir;
  std::string path = dir.path() + "/s.db";
  auto w = open_writer(path);
  obs::P2pPairInfo p;
  p.comm_hash = kHash;
  p.nranks = 2;
  p.comm_name = "pp0";
  p.src_rank = 0;
  p.dst_rank = 1;
  p.src_global = 0;
  p.dst_global = 4;
  p.ops = 3;
  p.bytes = 3 * 131072;
  p.last_seq = 2;
  p.last_end_ns = 1'700'000'000'000'000'000;
  p.total_ns = 3'000'000;
  p.max_ns = 1'500'000;
  obs::P2pPairInfo back = p;
  back.src_rank = 1;
  back.dst_rank = 0;
  back.src_global = 4;
  back.dst_global = 0;
  w->put_p2p({p, back});
  p.ops = 4;  // a later pass: the same pair's new totals replace the row
  p.last_seq = 3;
  w->put_p2p({p});
  obs::CommInfo c;
  c.comm_hash = kHash;
  c.nranks = 2;
  c.name = "pp0";
  c.nnodes = 1;
  c.global_ranks = {0, 4};
  c.ops_complete = 7;
  c.p2p_complete = 7;
  c.state = "active";
  w->put_comms({c});
  ASSERT_TRUE(w->flush());
  w.reset();
  auto r = StoreReader::open(path);
  std::vector<obs::P2pPairInfo> got = r->p2p_pairs();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].comm_hash, kHash);
  EXPECT_EQ(got[0].comm_name, "pp0");
  EXPECT_EQ(std::make_pair(got[0].src_rank, got[0].dst_rank), std::make_pair(0, 1));
  EXPECT_EQ(std::make_pair(got[0].src_global, got[0].dst_global), std::make_pair(0, 4));
  EXPECT_EQ(got[0].ops, 4u);
  EXPECT_EQ(got[0].bytes, 3u * 131072);
  EXPECT_EQ(got[0].last_seq, 3u);
  EXPECT_EQ(got[0].last_end_ns, 1'700'000'000'000'000'000);
  EXPECT_EQ(got[0].total_ns, 3'000'000);
  EXPECT_EQ(got[0].max_ns, 1'500'000);
  EXPECT_EQ(std::make_pair(got[1].src_rank, got[1].dst_rank), std::make_pair(1, 0));
  EXPECT_EQ(got[1].ops, 3u);
  ASSERT_EQ(r->comms().size(), 1u);
  EXPECT_EQ(r->comms()[0].p2p_complete, 7u);
  r.reset();
  // The same store as an older scout wrote it: no column, no table.
  {
    store::Db db(path, SQLITE_OPEN_READWRITE);
    db.exec("DROP TABLE p2p_pairs; ALTER TABLE comms DROP COLUMN p2p_complete");
  }
  r = StoreReader::open(path);
  EXPECT_TRUE(r->p2p_pairs().empty());
  EXPECT_EQ(r->comms()[0].p2p_complete, 0u);
  EXPECT_EQ(r->comms()[0].ops_complete, 7u);
  r.reset();
  w = open_writer(path);
  c.p2p_complete = 9;
  w->put_comms({c});
  ASSERT_TRUE(w->flush());
  w.reset();
  EXPECT_EQ(StoreReader::open(path)->comms()[0].p2p_complete, 9u);
}

TEST(Store, NewerSchemaIsRefusedInOneLine) {
  TempDir dir;
  std::string path = dir.path() + "/s.db";
  open_writer(path).reset();
  {
    store::Db db(path, SQLITE_OPEN_READWRITE);
    db.exec("PRAGMA user_version = " + std::to_string(store::kSchemaVersion + 1));
  }
  std::string want = "store " + path + " has schema version " + std::to_string(store::kSchemaVersion + 1) +
                     "; this scout reads up to version " + std::to_string(store::kSchemaVersion) +
                     " (use a newer scout)";
  try {
    StoreReader::open(path);
    FAIL() << "opened a newer store";
  } catch (const store::Error& e) { EXPECT_EQ(std::string(e.what()), want); }
  std::string err;
  EXPECT_FALSE(StoreWriter::open(path, {}, &err));
  EXPECT_EQ(err, want);
}

TEST(Store, MissingAndForeignFilesAreRefused) {
  TempDir dir;
  std::string missing = dir.path() + "/none.db";
  try {
    StoreReader::open(missing);
    FAIL();
  } catch (const store::Error& e) { EXPECT_EQ(std::string(e.what()), "no store at " + missing); }
  std::string text = dir.path() + "/text.db";
  std::ofstream(text) << "this is not a database, just some text long enough to have a header\n";
  try {
    StoreReader::open(text);
    FAIL();
  } catch (const store::Error& e) {
    EXPECT_EQ(std::string(e.what()), text + " is not a scout store (not an SQLite database)");
  }
  std::string err;
  EXPECT_FALSE(StoreWriter::open(text, {}, &err));
  EXPECT_EQ(err, text + " is not a scout store (not an SQLite database)");
  std::string other = dir.path() + "/other.db";
  {
    store::Db db(other, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    db.exec("CREATE TABLE t (x)");
  }
  EXPECT_FALSE(StoreWriter::open(other, {}, &err));
  EXPECT_EQ(err, other + " is not a scout store");
  EXPECT_THROW(StoreReader::open(other), store::Error);
}

// A reader sees whole batches only, is never blocked by the writer, and sees new batches after
// refresh(); the writer is never blocked by the reader's open snapshot.
TEST(Store, ReaderWhileWriterCommits) {
  TempDir dir;
  std::string path = dir.path() + "/s.db";
  auto w = open_writer(path);
  w->put_ops({op(0, 0)}, timings(0, 0));
  w->flush();

  constexpr uint64_t kBatches = 60;
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (uint64_t b = 1; b <= kBatches; ++b) {
      w->put_ops({op(2 * b, 10 * b)}, timings(2 * b, 10 * b));
      w->put_ops({op(2 * b + 1, 10 * b + 1)}, timings(2 * b + 1, 10 * b + 1));
      w->flush();
    }
    done = true;
  });
  auto rd = StoreReader::open(path);
  uint64_t last = 0, snapshots = 0;
  while (true) {
    bool finished = done.load();
    rd->refresh();
    uint64_t n = rd->op_count();
    EXPECT_EQ(n % 2, 1u) << "a half-committed batch was visible";
    EXPECT_EQ(rd->timings().size(), 4 * n);
    EXPECT_GE(n, last);
    last = n;
    ++snapshots;
    if (finished) break;
  }
  writer.join();
  EXPECT_EQ(last, 2 * kBatches + 1);
  // An open snapshot does not move until refresh().
  w->put_ops({op(1000, 99999)}, {});
  w->flush();
  EXPECT_EQ(rd->op_count(), last);
  rd->refresh();
  EXPECT_EQ(rd->op_count(), last + 1);
  EXPECT_GE(snapshots, 1u);
}

}  // namespace

// Store write and read cost. Prints the cost per stored operation (one OpSummary with 8 per-rank
// timings) through StoreWriter (upsert by key, timing lookup, savepoints, one transaction per
// flush, history bound) next to a baseline measured in the same run: the same rows written with
// plain prepared INSERTs in one transaction on the same schema. Also the read side: loading the
// operations and their timings as `scout export` does.
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "observer/store/reader.h"
#include "observer/store/sqlite.h"
#include "observer/store/writer.h"
#include "test/support/tmpdir.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kRanks = 8;
constexpr int kBatch = 256;   // operations per flush (one observer pass)
constexpr int kBatches = 40;  // 10240 operations per measurement
constexpr int kRepeats = 3;   // best of

void make_batch(int b, std::vector<scout::obs::OpSummary>* ops, std::vector<scout::obs::OpRankTiming>* ts) {
  ops->clear();
  ts->clear();
  for (int i = 0; i < kBatch; ++i) {
    uint64_t seq = static_cast<uint64_t>(b) * kBatch + i;
    scout::obs::OpSummary o;
    o.comm_hash = 0xabcdef0123456789ull;
    o.comm_name = "dp";
    o.nranks = kRanks;
    o.kind = "coll";
    o.func = "AllReduce";
    o.seq = seq;
    o.datatype = "float32";
    o.bytes = 1 << 22;
    o.algo = "RING";
    o.proto = "SIMPLE";
    o.first_arrival_ns = static_cast<int64_t>(seq) * 1000;
    o.fp_verdict = "agree";
    o.meta_verdict = "agree";
    ops->push_back(o);
    for (int r = 0; r < kRanks; ++r) {
      scout::obs::OpRankTiming t;
      t.comm_hash = o.comm_hash;
      t.func = o.func;
      t.seq = seq;
      t.global_rank = r;
      t.comm_rank = r;
      t.start_ns = o.first_arrival_ns + r;
      t.end_ns = t.start_ns + 500;
      t.fp_status = "done";
      ts->push_back(t);
    }
  }
}

double store_ns_per_op() {
  double best = 1e30;
  for (int rep = 0; rep < kRepeats; ++rep) {
    scout::testing::TempDir dir;
    std::string err;
    scout::store::WriterOptions opt;
    opt.max_ops = 1000000;
    auto w = scout::store::StoreWriter::open(dir.path() + "/s.db", opt, &err);
    std::vector<scout::obs::OpSummary> ops;
    std::vector<scout::obs::OpRankTiming> ts;
    double ns = 0;
    for (int b = 0; b < kBatches; ++b) {
      make_batch(b, &ops, &ts);
      auto t0 = Clock::now();
      w->put_ops(ops, ts);
      w->flush();
      ns += std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
    }
    best = std::min(best, ns / (kBatch * kBatches));
  }
  return best;
}

double baseline_ns_per_op() {
  double best = 1e30;
  for (int rep = 0; rep < kRepeats; ++rep) {
    scout::testing::TempDir dir;
    std::string path = dir.path() + "/s.db";
    std::string err;
    scout::store::StoreWriter::open(path, {}, &err).reset();  // same schema and pragmas
    scout::store::Db db(path, SQLITE_OPEN_READWRITE);
    db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL");
    std::vector<scout::obs::OpSummary> ops;
    std::vector<scout::obs::OpRankTiming> ts;
    double ns = 0;
    for (int b = 0; b < kBatches; ++b) {
      make_batch(b, &ops, &ts);
      auto t0 = Clock::now();
      db.exec("BEGIN");
      scout::store::Stmt op(db,
                            "INSERT INTO ops (comm_hash, kind, func, seq, comm_name, nranks, "
                            "datatype, count, bytes, algo, proto, n_channels, ranks_reported, "
                            "ranks_complete, first_arrival_ns, last_arrival_ns, last_rank, end_ns, "
                            "duration_ns, busbw_gbps, fp_verdict, meta_verdict) VALUES (?, ?, ?, "
                            "?, ?, ?, ?, 0, ?, ?, ?, 0, 0, 0, ?, 0, 0, 0, 0, 0.0, ?, ?)");
      scout::store::Stmt tm(db,
                            "INSERT INTO op_timings (op_id, global_rank, comm_rank, api_ns, "
                            "start_ns, end_ns, fp_recv, fp_status) VALUES (?, ?, ?, 0, ?, ?, 0, ?)");
      size_t k = 0;
      for (const auto& o : ops) {
        op.bind(1, o.comm_hash)
            .bind(2, o.kind)
            .bind(3, o.func)
            .bind(4, o.seq)
            .bind(5, o.comm_name)
            .bind(6, o.nranks)
            .bind(7, o.datatype)
            .bind(8, o.bytes)
            .bind(9, o.algo)
            .bind(10, o.proto)
            .bind(11, o.first_arrival_ns)
            .bind(12, o.fp_verdict)
            .bind(13, o.meta_verdict)
            .run();
        op.reset();
        int64_t id = db.last_insert_rowid();
        for (int r = 0; r < kRanks; ++r, ++k) {
          const auto& t = ts[k];
          tm.bind(1, id)
              .bind(2, t.global_rank)
              .bind(3, t.comm_rank)
              .bind(4, t.start_ns)
              .bind(5, t.end_ns)
              .bind(6, t.fp_status)
              .run();
          tm.reset();
        }
      }
      db.exec("COMMIT");
      ns += std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
    }
    best = std::min(best, ns / (kBatch * kBatches));
  }
  return best;
}

double read_ns_per_op() {
  scout::testing::TempDir dir;
  std::string err;
  scout::store::WriterOptions opt;
  opt.max_ops = 1000000;
  {
    auto w = scout::store::StoreWriter::open(dir.path() + "/s.db", opt, &err);
    std::vector<scout::obs::OpSummary> ops;
    std::vector<scout::obs::OpRankTiming> ts;
    for (int b = 0; b < kBatches; ++b) {
      make_batch(b, &ops, &ts);
      w->put_ops(ops, ts);
      w->flush();
    }
  }
  double best = 1e30;
  for (int rep = 0; rep < kRepeats; ++rep) {
    auto t0 = Clock::now();
    auto rd = scout::store::StoreReader::open(dir.path() + "/s.db");
    auto ops = rd->ops();
    auto ts = rd->timings();
    double ns = std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
    if (ops.size() != static_cast<size_t>(kBatch * kBatches)) std::fprintf(stderr, "bad read\n");
    best = std::min(best, ns / static_cast<double>(ops.size()));
    (void)ts;
  }
  return best;
}

}  // namespace

int main() {
  double base = baseline_ns_per_op();
  double store = store_ns_per_op();
  double read = read_ns_per_op();
  std::printf("store write: %.2f us per operation (1 summary + %d timings, %d per flush)\n", store / 1e3, kRanks,
              kBatch);
  std::printf("baseline (plain INSERTs, same schema, one transaction): %.2f us per operation\n", base / 1e3);
  std::printf("ratio store/baseline: %.2f\n", store / base);
  std::printf("store read (ops + timings, as scout export): %.2f us per operation\n", read / 1e3);
  return 0;
}

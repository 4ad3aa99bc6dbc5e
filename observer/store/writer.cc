#include "observer/store/writer.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <unordered_map>

#include "common/clock.h"
#include "common/utf8.h"
#include "observer/model/net_state.h"
#include "observer/store/health.h"
#include "observer/store/schema.h"
#include "observer/store/sqlite.h"
#include "scout/config.h"
#include "scout/version.h"

namespace scout::store {
namespace {

std::string placeholder_kind(const std::string& func) {
  if (func == "Send") return "send";
  if (func == "Recv") return "recv";
  return "coll";
}

// Runs `body` inside a savepoint: on failure only this call's writes are undone.
template <typename F>
void guarded(Db& db, F&& body) {
  db.exec("SAVEPOINT sink_call");
  try {
    body();
  } catch (...) {
    try {
      db.exec("ROLLBACK TO sink_call; RELEASE sink_call");
    } catch (...) {}
    throw;
  }
  db.exec("RELEASE sink_call");
}

}  // namespace

namespace {

// One attempt at opening (creating when empty) the store at `path` for writing; throws Error.
std::unique_ptr<Db> open_writable(const std::string& path, const WriterOptions& options) {
  std::filesystem::path p(path);
  if (p.has_parent_path()) {
    std::error_code ec;
    std::filesystem::create_directories(p.parent_path(), ec);
    if (ec) throw Error("cannot create directory " + p.parent_path().string() + ": " + ec.message(), SQLITE_CANTOPEN);
  }
  auto db = open_db(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  bool created = false;
  if (is_empty(*db)) {
    db->exec("PRAGMA journal_mode = WAL");
    db->exec("BEGIN IMMEDIATE");
    try {
      // Two observers creating one store: the second, holding the write lock now, finds the
      // first's schema and opens it as an existing store instead of failing on it.
      if (is_empty(*db)) {
        create_schema(*db, shm::wall_ns());
        created = true;
      }
      db->exec("COMMIT");
    } catch (...) {
      try {
        db->exec("ROLLBACK");
      } catch (...) {}
      throw;
    }
  }
  if (!created) {
    check_schema(*db);
    check_integrity(*db);
    if (!options.job.empty()) {
      Stmt owner(*db, "SELECT job FROM job WHERE id = 1");
      if (owner.step() && owner.str(0) != options.job) {
        throw Error("store " + path + " belongs to job '" + printable(owner.str(0)) + "', not '" +
                    printable(options.job) + "': refused (another job's store is never rewritten)");
      }
    }
    upgrade_schema(*db);
    db->exec("PRAGMA journal_mode = WAL");
  }
  add_optional_tables(*db);
  db->exec("PRAGMA synchronous = NORMAL");
  ensure_gemm_tables(*db);
  Stmt last(*db, "INSERT OR REPLACE INTO meta (key, value) VALUES ('last_writer', ?)");
  last.bind(1, std::string("scout ") + kVersion).run();
  return db;
}

}  // namespace

std::unique_ptr<StoreWriter> StoreWriter::open(const std::string& path, const WriterOptions& options,
                                               std::string* error, bool* transient) {
  if (transient) *transient = false;
  // SQLite answers SQLITE_BUSY at once, without its busy handler, when two connections would
  // deadlock (both switching a new file to WAL, or upgrading a read lock): two observers creating
  // one store. Such a quick BUSY is tried again; a lock held past the busy timeout is not.
  constexpr int kQuickBusyRetries = 50;
  constexpr int64_t kQuickBusyNs = 500'000'000;
  for (int attempt = 0;; ++attempt) {
    const int64_t t0 = shm::mono_ns();
    try {
      return std::unique_ptr<StoreWriter>(new StoreWriter(open_writable(path, options), options));
    } catch (const Error& e) {
      if (e.code() == SQLITE_BUSY && attempt < kQuickBusyRetries && shm::mono_ns() - t0 < kQuickBusyNs) {
        ::usleep(useconds_t(1000 + 2000 * attempt % 20000));
        continue;
      }
      if (error) *error = e.what();
      if (transient) *transient = e.transient();
      return nullptr;
    }
  }
}

StoreWriter::StoreWriter(std::unique_ptr<Db> db, const WriterOptions& options) : db_(std::move(db)), options_(options) {
  if (options_.max_ops <= 0) options_.max_ops = config::load().store_max_ops;
  health_file_ = std::make_unique<HealthFile>(db_->path());
  // Counters of an earlier observer of this store carry on (cumulative per store).
  Stmt m(*db_, "SELECT key, value FROM meta WHERE key IN ('store_failed_batches', 'store_ops_unstored')");
  while (m.step()) {
    const uint64_t n = std::strtoull(m.str(1).c_str(), nullptr, 10);
    if (m.str(0) == "store_failed_batches") health_.failed_batches = n;
    if (m.str(0) == "store_ops_unstored") health_.ops_unstored = n;
  }
  failed_stored_ = health_.failed_batches;
  health_.updated_ns = shm::wall_ns();
  health_file_->write(health_);
}

StoreWriter::~StoreWriter() {
  if (in_batch_) flush();
}

const std::string& StoreWriter::path() const { return db_->path(); }

void StoreWriter::fail(const std::string& what) {
  ++stats_.errors;
  batch_failed_ = true;
  if (first_error_.empty()) first_error_ = what;
}

namespace {
void say(const WriterOptions& o, const std::string& line) {
  if (o.on_error) {
    o.on_error("scout store: " + line);
  } else {
    std::fprintf(stderr, "scout store: %s\n", line.c_str());
  }
}
}  // namespace

void StoreWriter::batch_failed(int64_t now_ns) {
  constexpr int64_t kSayEveryNs = 60'000'000'000;
  health_.failed_batches++;
  health_.unstored_findings = findings_in_batch_;
  health_.ops_unstored += ops_in_batch_;
  health_.last_error = first_error_;
  health_.updated_ns = now_ns;
  const bool first = health_.failing_since_ns == 0;
  if (first) health_.failing_since_ns = now_ns;
  if (first || now_ns - said_ns_ >= kSayEveryNs) {
    say(options_, (first ? "cannot write the store: "
                         : "store writes still failing (" + std::to_string(health_.failed_batches) + " batches): ") +
                      first_error_ + "; " + std::to_string(findings_in_batch_) +
                      " findings kept in memory and written again at every pass");
    said_ns_ = now_ns;
  }
  health_file_->write(health_);
  findings_in_batch_ = ops_in_batch_ = 0;
  first_error_.clear();
}

void StoreWriter::carry(const obs::StoreHealth& before) {
  health_.failed_batches += before.failed_batches;
  health_.ops_unstored += before.ops_unstored;
  health_.failing_since_ns = before.failing_since_ns;
  health_.last_error = before.last_error;
  health_.unstored_findings = before.unstored_findings;
}

void StoreWriter::batch_stored(int64_t now_ns) {
  if (health_.failing_since_ns != 0) {
    say(options_, "store writes succeed again after " +
                      std::to_string((now_ns - health_.failing_since_ns) / 1'000'000) +
                      " ms; the findings kept in memory are stored");
    health_.failing_since_ns = 0;
    health_.unstored_findings = 0;
    health_.updated_ns = now_ns;
    health_file_->write(health_);
  }
  findings_in_batch_ = ops_in_batch_ = 0;
  first_error_.clear();
}

void StoreWriter::begin() {
  if (in_batch_) return;
  // A batch that could not begin (the write lock held by another process past the busy timeout)
  // is not tried again by its next calls: one wait per pass, not one per call.
  if (!begin_error_.empty()) throw Error(begin_error_, begin_code_);
  try {
    db_->exec("BEGIN IMMEDIATE");
  } catch (const Error& e) {
    begin_error_ = e.what();
    begin_code_ = e.code();
    throw;
  }
  in_batch_ = true;
}

void StoreWriter::put_job(const obs::JobInfo& job) {
  try {
    begin();
    guarded(*db_, [&] {
      Stmt st(*db_,
              "INSERT OR REPLACE INTO job (id, job, nodes, node_rank, started_ns, updated_ns, "
              "observer_version) VALUES (1, ?, ?, ?, ?, ?, ?)");
      st.bind(1, job.job)
          .bind(2, job.nodes)
          .bind(3, job.node_rank)
          .bind(4, job.started_ns)
          .bind(5, job.updated_ns)
          .bind(6, job.observer_version)
          .run();
      // Ingestion health lives in meta (no schema change; docs/store.md, "meta").
      Stmt m(*db_, "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)");
      auto put = [&](const char* key, const std::string& value) {
        m.bind(1, key).bind(2, value).run();
        m.reset();
      };
      put("records_read", std::to_string(job.records_read));
      put("records_lost", std::to_string(job.records_lost));
      put("records_invalid", std::to_string(job.records_invalid));
      put("segments_refused", std::to_string(job.segments_refused));
      put("rings_refused", std::to_string(job.rings_refused));
      put("ingest_warning", job.warning);
      if (job.net.present) {
        put("network", obs::to_json(job.net).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
      } else {
        db_->exec("DELETE FROM meta WHERE key = 'network'");  // a single-node observer now
      }
    });
  } catch (const Error& e) { fail(std::string("put_job: ") + e.what()); }
}

void StoreWriter::put_ranks(const std::vector<obs::RankInfo>& ranks) {
  try {
    begin();
    guarded(*db_, [&] {
      Stmt st(*db_,
              "INSERT OR REPLACE INTO ranks (host, pid, global_rank, local_rank, gpu, cuda_dev, "
              "node_rank, segment, state, first_seen_ns, last_event_ns) "
              "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
      for (const obs::RankInfo& r : ranks) {
        st.bind(1, r.host)
            .bind(2, r.pid)
            .bind(3, r.global_rank)
            .bind(4, r.local_rank)
            .bind(5, r.gpu)
            .bind(6, r.cuda_dev)
            .bind(7, r.node_rank)
            .bind(8, r.segment)
            .bind(9, r.state)
            .bind(10, r.first_seen_ns)
            .bind(11, r.last_event_ns)
            .run();
        st.reset();
      }
    });
  } catch (const Error& e) { fail(std::string("put_ranks: ") + e.what()); }
}

void StoreWriter::put_comms(const std::vector<obs::CommInfo>& comms) {
  try {
    begin();
    guarded(*db_, [&] {
      Stmt st(*db_,
              "INSERT OR REPLACE INTO comms (comm_hash, nranks, name, nnodes, global_ranks, "
              "ops_complete, last_seq_broadcast, last_seq_reduce, last_seq_allgather, "
              "last_seq_reducescatter, last_seq_allreduce, last_progress_ns, state, p2p_complete) "
              "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
      Stmt progress(*db_,
                    "UPDATE comms SET ops_complete = ?, last_seq_broadcast = ?, last_seq_reduce = ?, "
                    "last_seq_allgather = ?, last_seq_reducescatter = ?, last_seq_allreduce = ?, "
                    "last_progress_ns = ?, state = ?, p2p_complete = ? WHERE comm_hash = ? AND nranks = ?");
      for (const obs::CommInfo& c : comms) {
        if (!c.members) {
          progress.bind(1, c.ops_complete);
          for (int i = 0; i < 5; ++i) progress.bind(2 + i, c.last_seq[i]);
          progress.bind(7, c.last_progress_ns)
              .bind(8, c.state)
              .bind(9, c.p2p_complete)
              .bind(10, c.comm_hash)
              .bind(11, c.nranks)
              .run();
          progress.reset();
          continue;
        }
        nlohmann::json ranks = c.global_ranks;
        st.bind(1, c.comm_hash)
            .bind(2, c.nranks)
            .bind(3, c.name)
            .bind(4, c.nnodes)
            .bind(5, ranks.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace))
            .bind(6, c.ops_complete);
        for (int i = 0; i < 5; ++i) st.bind(7 + i, c.last_seq[i]);
        st.bind(12, c.last_progress_ns).bind(13, c.state).bind(14, c.p2p_complete).run();
        st.reset();
      }
    });
  } catch (const Error& e) { fail(std::string("put_comms: ") + e.what()); }
}

void StoreWriter::put_p2p(const std::vector<obs::P2pPairInfo>& pairs) {
  try {
    begin();
    guarded(*db_, [&] {
      Stmt st(*db_,
              "INSERT OR REPLACE INTO p2p_pairs (comm_hash, nranks, comm_name, src_rank, dst_rank, src_global, "
              "dst_global, ops, bytes, last_seq, last_end_ns, total_ns, max_ns) "
              "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
      for (const obs::P2pPairInfo& p : pairs) {
        st.bind(1, p.comm_hash)
            .bind(2, p.nranks)
            .bind(3, p.comm_name)
            .bind(4, p.src_rank)
            .bind(5, p.dst_rank)
            .bind(6, p.src_global)
            .bind(7, p.dst_global)
            .bind(8, int64_t(p.ops))
            .bind(9, int64_t(p.bytes))
            .bind(10, int64_t(p.last_seq))
            .bind(11, p.last_end_ns)
            .bind(12, p.total_ns)
            .bind(13, p.max_ns)
            .run();
        st.reset();
      }
    });
  } catch (const Error& e) { fail(std::string("put_p2p: ") + e.what()); }
}

void StoreWriter::put_ops(const std::vector<obs::OpSummary>& ops, const std::vector<obs::OpRankTiming>& timings) {
  ops_in_batch_ += ops.size();
  try {
    begin();
    guarded(*db_, [&] {
      Stmt st(*db_,
              "INSERT INTO ops (comm_hash, kind, func, seq, comm_name, nranks, datatype, count, "
              "bytes, algo, proto, n_channels, ranks_reported, ranks_complete, first_arrival_ns, "
              "last_arrival_ns, last_rank, end_ns, duration_ns, busbw_gbps, fp_verdict, "
              "meta_verdict) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
              "?, ?) ON CONFLICT (comm_hash, func, seq, kind) DO UPDATE SET "
              "comm_name = excluded.comm_name, nranks = excluded.nranks, "
              "datatype = excluded.datatype, count = excluded.count, bytes = excluded.bytes, "
              "algo = excluded.algo, proto = excluded.proto, n_channels = excluded.n_channels, "
              "ranks_reported = excluded.ranks_reported, ranks_complete = excluded.ranks_complete, "
              "first_arrival_ns = excluded.first_arrival_ns, "
              "last_arrival_ns = excluded.last_arrival_ns, last_rank = excluded.last_rank, "
              "end_ns = excluded.end_ns, duration_ns = excluded.duration_ns, "
              "busbw_gbps = excluded.busbw_gbps, fp_verdict = excluded.fp_verdict, "
              "meta_verdict = excluded.meta_verdict RETURNING op_id");
      // op_id of each operation of this batch, for its timings (saves a lookup per timing).
      std::unordered_map<std::string, int64_t> batch_ids;
      auto key_of = [](uint64_t hash, const std::string& func, uint64_t seq) {
        return std::to_string(hash) + "/" + func + "/" + std::to_string(seq);
      };
      for (const obs::OpSummary& o : ops) {
        st.bind(1, o.comm_hash)
            .bind(2, o.kind)
            .bind(3, o.func)
            .bind(4, o.seq)
            .bind(5, o.comm_name)
            .bind(6, o.nranks)
            .bind(7, o.datatype)
            .bind(8, o.count)
            .bind(9, o.bytes)
            .bind(10, o.algo)
            .bind(11, o.proto)
            .bind(12, o.n_channels)
            .bind(13, o.ranks_reported)
            .bind(14, o.ranks_complete)
            .bind(15, o.first_arrival_ns)
            .bind(16, o.last_arrival_ns)
            .bind(17, o.last_rank)
            .bind(18, o.end_ns)
            .bind(19, o.duration_ns)
            .bind(20, o.busbw_gbps)
            .bind(21, o.fp_verdict)
            .bind(22, o.meta_verdict);
        if (st.step()) batch_ids[key_of(o.comm_hash, o.func, o.seq)] = st.i64(0);
        st.run();
        st.reset();
      }
      Stmt tt(*db_,
              "INSERT OR REPLACE INTO op_timings (op_id, global_rank, comm_rank, api_ns, "
              "start_ns, end_ns, fp_recv, fp_status) VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
      Stmt find(*db_,
                "SELECT op_id FROM ops WHERE comm_hash = ? AND func = ? AND seq = ? "
                "ORDER BY op_id DESC LIMIT 1");
      Stmt add(*db_,
               "INSERT INTO ops (comm_hash, kind, func, seq, comm_name, nranks, datatype, count, "
               "bytes, algo, proto, n_channels, ranks_reported, ranks_complete, first_arrival_ns, "
               "last_arrival_ns, last_rank, end_ns, duration_ns, busbw_gbps, fp_verdict, "
               "meta_verdict) VALUES (?, ?, ?, ?, '', 0, '', 0, 0, '', '', 0, 0, 0, 0, 0, -1, 0, "
               "0, 0.0, '', '')");
      for (const obs::OpRankTiming& t : timings) {
        int64_t op_id = 0;
        auto known = batch_ids.find(key_of(t.comm_hash, t.func, t.seq));
        find.bind(1, t.comm_hash).bind(2, t.func).bind(3, t.seq);
        if (known != batch_ids.end()) {
          op_id = known->second;
        } else if (find.step()) {
          op_id = find.i64(0);
        } else {
          add.bind(1, t.comm_hash).bind(2, placeholder_kind(t.func)).bind(3, t.func).bind(4, t.seq).run();
          add.reset();
          op_id = db_->last_insert_rowid();
          ++stats_.placeholder_ops;
        }
        find.reset();
        tt.bind(1, op_id)
            .bind(2, t.global_rank)
            .bind(3, t.comm_rank)
            .bind(4, t.api_ns)
            .bind(5, t.start_ns)
            .bind(6, t.end_ns)
            .bind(7, t.fp_recv)
            .bind(8, t.fp_status)
            .run();
        tt.reset();
      }
    });
  } catch (const Error& e) { fail(std::string("put_ops: ") + e.what()); }
}

void StoreWriter::write_suspects(int64_t finding_id, const obs::Finding& f) {
  Stmt del(*db_, "DELETE FROM finding_suspects WHERE finding_id = ?");
  del.bind(1, finding_id).run();
  Stmt st(*db_,
          "INSERT INTO finding_suspects (finding_id, role, idx, global_rank, host, pid, gpu, "
          "comm_rank) VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
  auto put = [&](const char* role, int idx, const obs::Suspect& s) {
    st.bind(1, finding_id)
        .bind(2, role)
        .bind(3, idx)
        .bind(4, s.global_rank)
        .bind(5, s.host)
        .bind(6, s.pid)
        .bind(7, s.gpu)
        .bind(8, s.comm_rank)
        .run();
    st.reset();
  };
  for (size_t i = 0; i < f.suspects.size(); ++i) put("suspect", static_cast<int>(i), f.suspects[i]);
  if (f.peer) put("peer", 0, *f.peer);
}

void StoreWriter::put_gemm(const std::vector<obs::GemmCaptureInfo>& capture,
                           const std::vector<obs::GemmShapeInfo>& shapes) {
  try {
    begin();
    guarded(*db_, [&] {
      Stmt cap(*db_,
               "INSERT OR REPLACE INTO gemm_capture (host, pid, global_rank, state, capacity, n_entries, "
               "windows, lines, captured, ignored, malformed, dropped_full, dropped_busy, window_ns) "
               "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
      Stmt del(*db_, "DELETE FROM gemm_shapes WHERE host = ? AND pid = ?");
      for (const obs::GemmCaptureInfo& c : capture) {
        cap.bind(1, c.host)
            .bind(2, c.pid)
            .bind(3, c.global_rank)
            .bind(4, int64_t(c.state))
            .bind(5, int64_t(c.capacity))
            .bind(6, int64_t(c.n_entries))
            .bind(7, c.windows)
            .bind(8, c.lines)
            .bind(9, c.captured)
            .bind(10, c.ignored)
            .bind(11, c.malformed)
            .bind(12, c.dropped_full)
            .bind(13, c.dropped_busy)
            .bind(14, c.window_ns)
            .run();
        cap.reset();
        del.bind(1, c.host).bind(2, c.pid).run();
        del.reset();
      }
      Stmt ins(*db_,
               "INSERT INTO gemm_shapes (host, pid, global_rank, m, n, k, batch, a_type, b_type, c_type, "
               "d_type, compute, scale_type, layout, algo, tile_m, tile_n, count) "
               "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
      for (const obs::GemmShapeInfo& s : shapes) {
        const shm::GemmKey& k = s.key;
        ins.bind(1, s.host)
            .bind(2, s.pid)
            .bind(3, s.global_rank)
            .bind(4, k.m)
            .bind(5, k.n)
            .bind(6, k.k)
            .bind(7, int64_t(k.batch))
            .bind(8, int64_t(k.a_type))
            .bind(9, int64_t(k.b_type))
            .bind(10, int64_t(k.c_type))
            .bind(11, int64_t(k.d_type))
            .bind(12, int64_t(k.compute))
            .bind(13, int64_t(k.scale_type))
            .bind(14, int64_t(k.layout))
            .bind(15, int64_t(k.algo))
            .bind(16, int64_t(k.tile_m))
            .bind(17, int64_t(k.tile_n))
            .bind(18, s.count)
            .run();
        ins.reset();
      }
    });
  } catch (const Error& e) { fail(std::string("put_gemm: ") + e.what()); }
}

void StoreWriter::upsert_finding(obs::Finding* f) {
  ++findings_in_batch_;
  try {
    begin();
    guarded(*db_, [&] {
      int64_t id = 0, first_seen = 0;
      {
        Stmt find(*db_, f->dedup_key.empty() ? "SELECT id, first_seen_ns FROM findings WHERE id = ?"
                                             : "SELECT id, first_seen_ns FROM findings WHERE dedup_key = ?");
        if (f->dedup_key.empty()) {
          find.bind(1, f->id);
        } else {
          find.bind(1, f->dedup_key);
        }
        if ((!f->dedup_key.empty() || f->id > 0) && find.step()) {
          id = find.i64(0);
          first_seen = find.i64(1);
        }
      }
      std::string evidence = f->evidence.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      const char* status = f->open ? "open" : "closed";
      if (id != 0) {
        // The communicator and operation are filled in once a report names them (a slow link
        // replay found first, then the live detector on the same key); one already stored stays.
        Stmt up(*db_,
                "UPDATE findings SET kind = ?, verdict = ?, status = ?, last_seen_ns = ?, summary = ?, "
                "evidence = ?, evidence_version = ?, "
                "comm_name = CASE WHEN comm_hash = 0 AND ?9 != 0 THEN ?10 ELSE comm_name END, "
                "comm_nranks = CASE WHEN comm_hash = 0 AND ?9 != 0 THEN ?11 ELSE comm_nranks END, "
                "comm_hash = CASE WHEN comm_hash = 0 AND ?9 != 0 THEN ?9 ELSE comm_hash END, "
                "key_seq = CASE WHEN key_func IS NULL AND ?12 IS NOT NULL THEN ?13 ELSE key_seq END, "
                "key_func = CASE WHEN key_func IS NULL AND ?12 IS NOT NULL THEN ?12 ELSE key_func END "
                "WHERE id = ?8");
        // kind too: a stall that reaches the hang timeout becomes the hang (docs/findings.md, "stall").
        up.bind(1, obs::to_string(f->kind))
            .bind(2, obs::to_string(f->verdict))
            .bind(3, status)
            .bind(4, f->last_seen_ns)
            .bind(5, f->summary)
            .bind(6, evidence)
            .bind(7, f->evidence_version)
            .bind(8, id)
            .bind(9, f->comm_hash)
            .bind(10, f->comm_name)
            .bind(11, f->comm_nranks);
        if (f->key) {
          up.bind(12, f->key->func).bind(13, f->key->seq);
        } else {
          up.bind_null(12).bind_null(13);
        }
        up.run();
      } else {
        Stmt ins(*db_,
                 "INSERT INTO findings (dedup_key, kind, verdict, status, comm_hash, comm_name, "
                 "comm_nranks, key_func, key_seq, first_seen_ns, last_seen_ns, summary, evidence, "
                 "evidence_version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
        if (f->dedup_key.empty()) {
          ins.bind_null(1);
        } else {
          ins.bind(1, f->dedup_key);
        }
        ins.bind(2, obs::to_string(f->kind))
            .bind(3, obs::to_string(f->verdict))
            .bind(4, status)
            .bind(5, f->comm_hash)
            .bind(6, f->comm_name)
            .bind(7, f->comm_nranks);
        if (f->key) {
          ins.bind(8, f->key->func).bind(9, f->key->seq);
        } else {
          ins.bind_null(8).bind_null(9);
        }
        ins.bind(10, f->first_seen_ns)
            .bind(11, f->last_seen_ns)
            .bind(12, f->summary)
            .bind(13, evidence)
            .bind(14, f->evidence_version)
            .run();
        id = db_->last_insert_rowid();
        first_seen = f->first_seen_ns;
      }
      write_suspects(id, *f);
      f->id = id;
      f->first_seen_ns = first_seen;
    });
  } catch (const Error& e) { fail(std::string("upsert_finding: ") + e.what()); }
}

void StoreWriter::put_replay_cycle(obs::ReplayCycleRecord* c) {
  try {
    begin();
    guarded(*db_, [&] {
      // Put again after a batch that failed: the row of a batch that did commit is kept, not doubled.
      // The same record is the same cycle, trigger, start and detail (a restarted observer numbers
      // its cycles from 1 again; an on-demand cycle's detail names its request).
      const std::string detail = c->detail.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      // Parameters 1-6 of both statements: what makes the record the same cycle.
      auto bind_same = [&](Stmt& s) -> Stmt& {
        return s.bind(1, int64_t(c->cycle))
            .bind(2, c->trigger)
            .bind(3, c->started_ns)
            .bind(4, c->ended_ns)
            .bind(5, c->outcome)
            .bind(6, detail);
      };
      Stmt find(*db_,
                "SELECT id FROM replay_cycles WHERE cycle = ? AND trigger = ? AND started_ns = ? AND ended_ns = ? AND "
                "outcome = ? AND detail = ?");
      if (bind_same(find).step()) {
        c->id = find.i64(0);
        return;
      }
      Stmt ins(*db_,
               "INSERT INTO replay_cycles (cycle, trigger, started_ns, ended_ns, outcome, detail, backend) "
               "VALUES (?, ?, ?, ?, ?, ?, ?)");
      bind_same(ins).bind(7, c->backend).run();
      c->id = db_->last_insert_rowid();
    });
  } catch (const Error& e) { fail(std::string("put_replay_cycle: ") + e.what()); }
}

bool StoreWriter::flush() {
  const int64_t now_ns = shm::wall_ns();
  begin_error_.clear();
  if (!in_batch_) {
    const bool ok = !batch_failed_;
    batch_failed_ = false;
    if (ok) {
      batch_stored(now_ns);
    } else {
      ++stats_.failed_batches;
      batch_failed(now_ns);
    }
    return ok;
  }
  try {
    if (health_.failed_batches != failed_stored_) {
      // The failure counters, as they stand once this batch commits.
      Stmt m(*db_, "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)");
      m.bind(1, "store_failed_batches").bind(2, std::to_string(health_.failed_batches)).run();
      m.reset();
      m.bind(1, "store_ops_unstored").bind(2, std::to_string(health_.ops_unstored)).run();
      m.reset();
      m.bind(1, "store_last_error").bind(2, health_.last_error).run();
    }
    int64_t max_id = db_->query_int("SELECT max(op_id) FROM ops", 0);
    int64_t cutoff = max_id - options_.max_ops;
    if (cutoff > 0) {
      Stmt dt(*db_, "DELETE FROM op_timings WHERE op_id <= ?");
      dt.bind(1, cutoff).run();
      Stmt dop(*db_, "DELETE FROM ops WHERE op_id <= ?");
      dop.bind(1, cutoff).run();
      int64_t n = db_->changes();
      if (n > 0) {
        Stmt m(*db_,
               "UPDATE meta SET value = CAST(CAST(value AS INTEGER) + ? AS TEXT) "
               "WHERE key = 'ops_dropped'");
        m.bind(1, n).run();
        stats_.ops_dropped += static_cast<uint64_t>(n);
      }
    }
    db_->exec("COMMIT");
    in_batch_ = false;
    ++stats_.batches;
    failed_stored_ = health_.failed_batches;
    const bool ok = !batch_failed_;  // a call of this batch failed (its own writes were undone)
    batch_failed_ = false;
    if (ok) {
      batch_stored(now_ns);
    } else {
      batch_failed(now_ns);
    }
    return ok;
  } catch (const Error& e) {
    try {
      db_->exec("ROLLBACK");
    } catch (...) {}
    in_batch_ = false;
    ++stats_.failed_batches;
    fail(std::string("flush: ") + e.what());
    batch_failed_ = false;
    batch_failed(now_ns);
    return false;
  }
}

}  // namespace scout::store

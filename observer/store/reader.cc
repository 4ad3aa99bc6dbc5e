#include "observer/store/reader.h"

#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <unordered_set>

#include "observer/model/net_state.h"
#include "observer/store/health.h"
#include "observer/store/schema.h"
#include "observer/store/sqlite.h"

namespace scout::store {
namespace {

constexpr const char* kOpColumns =
    "op_id, comm_hash, comm_name, nranks, kind, func, seq, datatype, count, bytes, algo, proto, "
    "n_channels, ranks_reported, ranks_complete, first_arrival_ns, last_arrival_ns, last_rank, "
    "end_ns, duration_ns, busbw_gbps, fp_verdict, meta_verdict";

constexpr const char* kOpOrder = "first_arrival_ns, comm_hash, func, seq, kind";
constexpr const char* kOpOrderDesc = "first_arrival_ns DESC, comm_hash DESC, func DESC, seq DESC, kind DESC";

OpRow op_from(const Stmt& s) {
  OpRow r;
  r.op_id = s.i64(0);
  obs::OpSummary& o = r.op;
  o.comm_hash = s.u64(1);
  o.comm_name = s.text(2);
  o.nranks = s.i32(3);
  o.kind = s.text(4);
  o.func = s.text(5);
  o.seq = s.u64(6);
  o.datatype = s.text(7);
  o.count = s.u64(8);
  o.bytes = s.u64(9);
  o.algo = s.text(10);
  o.proto = s.text(11);
  o.n_channels = s.i32(12);
  o.ranks_reported = s.i32(13);
  o.ranks_complete = s.i32(14);
  o.first_arrival_ns = s.i64(15);
  o.last_arrival_ns = s.i64(16);
  o.last_rank = s.i32(17);
  o.end_ns = s.i64(18);
  o.duration_ns = s.i64(19);
  o.busbw_gbps = s.f64(20);
  o.fp_verdict = s.text(21);
  o.meta_verdict = s.text(22);
  return r;
}

nlohmann::json parse_json(const std::string& text, nlohmann::json fallback) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  return j.is_discarded() ? fallback : j;
}

}  // namespace

std::unique_ptr<StoreReader> StoreReader::open(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) throw Error("no store at " + path);
  if (!S_ISREG(st.st_mode)) throw Error(path + " is not a scout store");
  auto db = open_reader_db(path);
  check_schema(*db);
  check_integrity_once(*db);
  db->exec("BEGIN");
  return std::unique_ptr<StoreReader>(new StoreReader(std::move(db)));
}

StoreReader::StoreReader(std::unique_ptr<Db> db)
    : db_(std::move(db)), has_evidence_version_(has_column(*db_, "findings", "evidence_version")) {}

StoreReader::~StoreReader() {
  try {
    db_->exec("COMMIT");
  } catch (...) {}
}

const std::string& StoreReader::path() const { return db_->path(); }

void StoreReader::refresh() {
  db_->exec("COMMIT");
  db_->exec("BEGIN");
}

StoreMeta StoreReader::meta() {
  StoreMeta m;
  m.schema_version = static_cast<int>(db_->query_int("PRAGMA user_version"));
  Stmt s(*db_, "SELECT key, value FROM meta");
  while (s.step()) {
    std::string k = s.text(0), v = s.text(1);
    if (k == "created_by") m.created_by = v;
    if (k == "created_ns") m.created_ns = std::strtoll(v.c_str(), nullptr, 10);
    if (k == "ops_dropped") m.ops_dropped = std::strtoull(v.c_str(), nullptr, 10);
  }
  return m;
}

std::optional<obs::JobInfo> StoreReader::job() {
  Stmt s(*db_,
         "SELECT job, nodes, node_rank, started_ns, updated_ns, observer_version FROM job "
         "WHERE id = 1");
  if (!s.step()) return std::nullopt;
  obs::JobInfo j;
  j.job = s.text(0);
  j.nodes = s.i32(1);
  j.node_rank = s.i32(2);
  j.started_ns = s.i64(3);
  j.updated_ns = s.i64(4);
  j.observer_version = s.text(5);
  Stmt m(*db_, "SELECT key, value FROM meta");
  while (m.step()) {
    std::string k = m.text(0), v = m.text(1);
    uint64_t n = std::strtoull(v.c_str(), nullptr, 10);
    if (k == "records_read") j.records_read = n;
    if (k == "records_lost") j.records_lost = n;
    if (k == "records_invalid") j.records_invalid = n;
    if (k == "segments_refused") j.segments_refused = n;
    if (k == "rings_refused") j.rings_refused = n;
    if (k == "ingest_warning") j.warning = v;
    if (k == "network") j.net = obs::net_state_from_json(parse_json(v, nullptr));
    if (k == "store_failed_batches") j.store.failed_batches = n;
    if (k == "store_ops_unstored") j.store.ops_unstored = n;
    if (k == "store_last_error") j.store.last_error = v;
  }
  // While the observer cannot write the store, the health file beside it is newer than the store.
  if (auto h = read_health(db_->path()); h && h->updated_ns > j.updated_ns) j.store = *h;
  return j;
}

std::vector<obs::RankInfo> StoreReader::ranks() {
  Stmt s(*db_,
         "SELECT global_rank, local_rank, host, pid, gpu, cuda_dev, node_rank, segment, state, "
         "first_seen_ns, last_event_ns FROM ranks ORDER BY global_rank, host, pid");
  std::vector<obs::RankInfo> out;
  while (s.step()) {
    obs::RankInfo r;
    r.global_rank = s.i32(0);
    r.local_rank = s.i32(1);
    r.host = s.text(2);
    r.pid = s.i32(3);
    r.gpu = s.text(4);
    r.cuda_dev = s.i32(5);
    r.node_rank = s.i32(6);
    r.segment = s.text(7);
    r.state = s.text(8);
    r.first_seen_ns = s.i64(9);
    r.last_event_ns = s.i64(10);
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<obs::CommInfo> StoreReader::comms() {
  const bool p2p = has_column(*db_, "comms", "p2p_complete");  // stores before it: none counted
  Stmt s(*db_, std::string("SELECT comm_hash, nranks, name, nnodes, global_ranks, ops_complete, last_seq_broadcast, "
                           "last_seq_reduce, last_seq_allgather, last_seq_reducescatter, last_seq_allreduce, "
                           "last_progress_ns, state, ") +
                   (p2p ? "p2p_complete" : "0") + " FROM comms ORDER BY name, comm_hash, nranks");
  std::vector<obs::CommInfo> out;
  while (s.step()) {
    obs::CommInfo c;
    c.comm_hash = s.u64(0);
    c.nranks = s.i32(1);
    c.name = s.text(2);
    c.nnodes = s.i32(3);
    nlohmann::json ranks = parse_json(s.text(4), nlohmann::json::array());
    if (ranks.is_array()) {
      for (const auto& r : ranks) c.global_ranks.push_back(r.is_number_integer() ? r.get<int>() : -1);
    }
    c.ops_complete = s.u64(5);
    for (int i = 0; i < 5; ++i) c.last_seq[i] = s.u64(6 + i);
    c.last_progress_ns = s.i64(11);
    c.state = s.text(12);
    c.p2p_complete = s.u64(13);
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<obs::P2pPairInfo> StoreReader::p2p_pairs() {
  std::vector<obs::P2pPairInfo> out;
  if (!has_table(*db_, "p2p_pairs")) return out;
  Stmt s(*db_,
         "SELECT comm_hash, nranks, comm_name, src_rank, dst_rank, src_global, dst_global, ops, bytes, last_seq, "
         "last_end_ns, total_ns, max_ns FROM p2p_pairs ORDER BY comm_name, comm_hash, nranks, src_rank, dst_rank");
  while (s.step()) {
    obs::P2pPairInfo p;
    p.comm_hash = s.u64(0);
    p.nranks = s.i32(1);
    p.comm_name = s.text(2);
    p.src_rank = s.i32(3);
    p.dst_rank = s.i32(4);
    p.src_global = s.i32(5);
    p.dst_global = s.i32(6);
    p.ops = uint64_t(s.i64(7));
    p.bytes = uint64_t(s.i64(8));
    p.last_seq = uint64_t(s.i64(9));
    p.last_end_ns = s.i64(10);
    p.total_ns = s.i64(11);
    p.max_ns = s.i64(12);
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<obs::GemmCaptureInfo> StoreReader::gemm_capture() {
  std::vector<obs::GemmCaptureInfo> out;
  if (!has_table(*db_, "gemm_capture")) return out;
  Stmt s(*db_,
         "SELECT host, pid, global_rank, state, capacity, n_entries, windows, lines, captured, ignored, "
         "malformed, dropped_full, dropped_busy, window_ns FROM gemm_capture ORDER BY global_rank, host, pid");
  while (s.step()) {
    obs::GemmCaptureInfo c;
    c.host = s.text(0);
    c.pid = s.i32(1);
    c.global_rank = s.i32(2);
    c.state = uint32_t(s.i64(3));
    c.capacity = uint32_t(s.i64(4));
    c.n_entries = uint32_t(s.i64(5));
    c.windows = s.u64(6);
    c.lines = s.u64(7);
    c.captured = s.u64(8);
    c.ignored = s.u64(9);
    c.malformed = s.u64(10);
    c.dropped_full = s.u64(11);
    c.dropped_busy = s.u64(12);
    c.window_ns = s.u64(13);
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<obs::GemmShapeInfo> StoreReader::gemm_shapes() {
  std::vector<obs::GemmShapeInfo> out;
  if (!has_table(*db_, "gemm_shapes")) return out;
  Stmt s(*db_,
         "SELECT host, pid, global_rank, m, n, k, batch, a_type, b_type, c_type, d_type, compute, scale_type, "
         "layout, algo, tile_m, tile_n, count FROM gemm_shapes ORDER BY global_rank, host, pid, m, n, k");
  while (s.step()) {
    obs::GemmShapeInfo g;
    g.host = s.text(0);
    g.pid = s.i32(1);
    g.global_rank = s.i32(2);
    g.key.m = s.u64(3);
    g.key.n = s.u64(4);
    g.key.k = s.u64(5);
    g.key.batch = uint32_t(s.i64(6));
    g.key.a_type = uint8_t(s.i64(7));
    g.key.b_type = uint8_t(s.i64(8));
    g.key.c_type = uint8_t(s.i64(9));
    g.key.d_type = uint8_t(s.i64(10));
    g.key.compute = uint8_t(s.i64(11));
    g.key.scale_type = uint8_t(s.i64(12));
    g.key.layout = uint8_t(s.i64(13));
    g.key.algo = int32_t(s.i64(14));
    g.key.tile_m = uint16_t(s.i64(15));
    g.key.tile_n = uint16_t(s.i64(16));
    g.count = s.u64(17);
    out.push_back(std::move(g));
  }
  return out;
}

std::vector<obs::Finding> StoreReader::findings(const FindingFilter& filter) {
  return select_findings(filter.open_only, 0);
}

std::optional<obs::Finding> StoreReader::finding(int64_t id) {
  std::vector<obs::Finding> one = select_findings(false, id);
  if (one.empty()) return std::nullopt;
  return std::move(one.front());
}

std::vector<obs::Finding> StoreReader::select_findings(bool open_only, int64_t only_id) {
  std::string sql =
      "SELECT id, dedup_key, kind, verdict, status, comm_hash, comm_name, comm_nranks, key_func, "
      "key_seq, first_seen_ns, last_seen_ns, summary, evidence, " +
      std::string(has_evidence_version_ ? "evidence_version" : "1") + " FROM findings WHERE 1";
  if (open_only) sql += " AND status = 'open'";
  if (only_id != 0) sql += " AND id = ?";
  sql += " ORDER BY id";
  Stmt s(*db_, sql);
  if (only_id != 0) s.bind(1, only_id);
  std::vector<obs::Finding> out;
  std::map<int64_t, size_t> index;
  while (s.step()) {
    obs::Finding f;
    f.id = s.i64(0);
    f.dedup_key = s.text(1);
    f.kind = obs::kind_from_string(s.text(2)).value_or(obs::FindingKind::kHang);
    f.verdict = obs::verdict_from_string(s.text(3)).value_or(obs::Verdict::kInconclusive);
    f.open = s.text(4) == "open";
    f.comm_hash = s.u64(5);
    f.comm_name = s.text(6);
    f.comm_nranks = s.i32(7);
    if (!s.is_null(8)) f.key = obs::OpKey{s.text(8), s.u64(9)};
    f.first_seen_ns = s.i64(10);
    f.last_seen_ns = s.i64(11);
    f.summary = s.text(12);
    f.evidence = parse_json(s.text(13), nlohmann::json::object());
    f.evidence_version = s.i32(14);
    index[f.id] = out.size();
    out.push_back(std::move(f));
  }
  if (out.empty()) return out;
  Stmt sus(*db_,
           "SELECT finding_id, role, global_rank, host, pid, gpu, comm_rank FROM finding_suspects "
           "WHERE finding_id BETWEEN ? AND ? ORDER BY finding_id, role DESC, idx");
  sus.bind(1, out.front().id).bind(2, out.back().id);
  while (sus.step()) {
    auto it = index.find(sus.i64(0));
    if (it == index.end()) continue;
    obs::Suspect p;
    p.global_rank = sus.i32(2);
    p.host = sus.text(3);
    p.pid = sus.i32(4);
    p.gpu = sus.text(5);
    p.comm_rank = sus.i32(6);
    obs::Finding& f = out[it->second];
    if (sus.text(1) == "peer") {
      f.peer = p;
    } else {
      f.suspects.push_back(p);
    }
  }
  return out;
}

std::vector<OpRow> StoreReader::ops(const OpFilter& filter) {
  std::string where;
  auto add = [&](const char* cond) { where += (where.empty() ? " WHERE " : " AND ") + std::string(cond); };
  if (filter.comm_hash) add("comm_hash = ?");
  if (filter.comm_name) add("comm_name = ?");
  if (filter.global_rank) add("op_id IN (SELECT op_id FROM op_timings WHERE global_rank = ?)");
  if (filter.func) add("func = ? COLLATE NOCASE");
  std::string sql = std::string("SELECT ") + kOpColumns + " FROM ops" + where;
  if (filter.last > 0) {
    sql = std::string("SELECT * FROM (") + sql + " ORDER BY " + kOpOrderDesc + " LIMIT ?) ORDER BY " + kOpOrder;
  } else {
    sql += std::string(" ORDER BY ") + kOpOrder;
  }
  Stmt s(*db_, sql);
  int i = 1;
  if (filter.comm_hash) s.bind(i++, *filter.comm_hash);
  if (filter.comm_name) s.bind(i++, *filter.comm_name);
  if (filter.global_rank) s.bind(i++, *filter.global_rank);
  if (filter.func) s.bind(i++, *filter.func);
  if (filter.last > 0) s.bind(i++, filter.last);
  std::vector<OpRow> out;
  while (s.step()) out.push_back(op_from(s));
  return out;
}

std::vector<TimingRow> StoreReader::timings(const std::vector<int64_t>& op_ids) {
  std::string sql =
      "SELECT t.op_id, t.global_rank, t.comm_rank, t.api_ns, t.start_ns, t.end_ns, t.fp_recv, "
      "t.fp_status, o.comm_hash, o.func, o.seq FROM op_timings t JOIN ops o ON o.op_id = t.op_id";
  std::unordered_set<int64_t> wanted(op_ids.begin(), op_ids.end());
  if (!op_ids.empty()) sql += " WHERE t.op_id BETWEEN ? AND ?";
  sql += " ORDER BY t.op_id, t.global_rank";
  Stmt s(*db_, sql);
  if (!op_ids.empty()) {
    auto [lo, hi] = std::minmax_element(op_ids.begin(), op_ids.end());
    s.bind(1, *lo).bind(2, *hi);
  }
  std::vector<TimingRow> out;
  while (s.step()) {
    TimingRow r;
    r.op_id = s.i64(0);
    if (!wanted.empty() && !wanted.count(r.op_id)) continue;
    r.t.global_rank = s.i32(1);
    r.t.comm_rank = s.i32(2);
    r.t.api_ns = s.i64(3);
    r.t.start_ns = s.i64(4);
    r.t.end_ns = s.i64(5);
    r.t.fp_recv = s.u64(6);
    r.t.fp_status = s.text(7);
    r.t.comm_hash = s.u64(8);
    r.t.func = s.text(9);
    r.t.seq = s.u64(10);
    out.push_back(std::move(r));
  }
  return out;
}

uint64_t StoreReader::op_count() { return static_cast<uint64_t>(db_->query_int("SELECT count(*) FROM ops")); }

std::vector<obs::ReplayCycleRecord> StoreReader::select_cycles(const std::string& where, int64_t a, int64_t b) {
  std::vector<obs::ReplayCycleRecord> out;
  if (!has_table(*db_, "replay_cycles")) return out;
  Stmt s(*db_,
         "SELECT id, cycle, trigger, started_ns, ended_ns, outcome, backend, detail FROM replay_cycles WHERE " + where);
  s.bind(1, a).bind(2, b);
  while (s.step()) {
    obs::ReplayCycleRecord c;
    c.id = s.i64(0);
    c.cycle = uint64_t(s.i64(1));
    c.trigger = s.text(2);
    c.started_ns = s.i64(3);
    c.ended_ns = s.i64(4);
    c.outcome = s.text(5);
    c.backend = s.text(6);
    c.detail = parse_json(s.text(7), nlohmann::json::object());
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<obs::ReplayCycleRecord> StoreReader::replay_cycles(int64_t from_ns, int64_t to_ns) {
  return select_cycles("started_ns >= ? AND started_ns <= ? ORDER BY started_ns, id", from_ns, to_ns);
}

std::optional<obs::ReplayCycleRecord> StoreReader::replay_cycle_covering(int64_t t_ns) {
  auto running =
      select_cycles("started_ns <= ? AND ended_ns >= ? ORDER BY started_ns DESC, id DESC LIMIT 1", t_ns, t_ns);
  if (!running.empty()) return running[0];
  auto after = select_cycles("started_ns > ? AND started_ns <= ? ORDER BY started_ns, id LIMIT 1", t_ns, INT64_MAX);
  if (!after.empty()) return after[0];
  return std::nullopt;
}

}  // namespace scout::store

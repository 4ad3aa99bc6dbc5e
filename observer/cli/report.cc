// `scout report`: the per-collective table: key, function, datatype, bytes,
// algorithm/protocol, per-rank arrival spread, duration, bus bandwidth, fingerprint verdict; then
// the point-to-point operations summed per directed pair. `--html FILE`: observer/cli/report_html.cc.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>

#include "observer/cli/common.h"
#include "observer/cli/format.h"
#include "observer/export/json.h"
#include "observer/model/finding.h"

namespace scout::cli {
namespace {

store::OpFilter make_filter(const ReportOptions& o) {
  store::OpFilter f;
  if (!o.comm.empty()) {
    if (o.comm.size() > 2 && (o.comm.rfind("0x", 0) == 0 || o.comm.rfind("0X", 0) == 0)) {
      char* end = nullptr;
      uint64_t h = std::strtoull(o.comm.c_str() + 2, &end, 16);
      if (*end != '\0' || o.comm.size() > 18) {
        throw UsageError("--comm " + o.comm + ": not a commHash (0x + up to 16 hex digits)");
      }
      f.comm_hash = h;
    } else {
      f.comm_name = o.comm;
    }
  }
  if (o.rank) f.global_rank = *o.rank;
  if (!o.func.empty()) f.func = o.func;
  f.last = o.last;
  return f;
}

std::string dash_if_empty(const std::string& s) { return s.empty() ? "-" : s; }

// --comm must name a communicator of the store (by name or commHash): an unknown one is a usage
// error that lists the known names, not an empty table.
void check_comm(store::StoreReader& rd, const store::OpFilter& f, const std::string& given) {
  if (!f.comm_hash && !f.comm_name) return;
  std::vector<obs::CommInfo> comms = rd.comms();
  std::vector<std::string> names;
  for (const auto& c : comms) {
    if ((f.comm_hash && c.comm_hash == *f.comm_hash) || (f.comm_name && c.name == *f.comm_name)) return;
    std::string n = c.name.empty() ? obs::hex64(c.comm_hash) : c.name;
    if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  }
  std::string known;
  constexpr size_t kListed = 24;
  for (size_t i = 0; i < names.size() && i < kListed; ++i) known += (i ? ", " : "") + names[i];
  if (names.size() > kListed) known += ", ... (" + std::to_string(names.size()) + " in all: scout status --json)";
  throw UsageError("--comm " + given + ": no such communicator in " + rd.path() +
                   (names.empty() ? std::string(" (it has none yet)") : "; known: " + known));
}

// The point-to-point pairs of the communicators --comm names (all without it), one line per
// directed pair (not per operation): skipped when --func names a collective.
std::vector<obs::P2pPairInfo> p2p_pairs(store::StoreReader& rd, const ReportOptions& o) {
  std::string func = o.func;
  for (char& ch : func) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  if (!func.empty() && func != "send" && func != "recv") return {};
  const store::OpFilter f = make_filter(o);
  std::vector<obs::P2pPairInfo> out;
  for (const obs::P2pPairInfo& p : rd.p2p_pairs()) {
    if (f.comm_hash && p.comm_hash != *f.comm_hash) continue;
    if (f.comm_name && p.comm_name != *f.comm_name) continue;
    if (o.rank && p.src_global != *o.rank && p.dst_global != *o.rank) continue;
    out.push_back(p);
  }
  return out;
}

void print_p2p_pairs(store::StoreReader& rd, const ReportOptions& o, std::ostream& out) {
  Table t;
  t.headers = {"COMM", "SRC", "DST", "OPS", "BYTES", "LAST SEQ", "MEAN", "MAX"};
  t.right_align = {false, true, true, true, true, true, true, true};
  auto rank_words = [](int global, int comm_rank) {
    return global >= 0 ? "r" + std::to_string(global) : "comm rank " + std::to_string(comm_rank);
  };
  for (const obs::P2pPairInfo& p : p2p_pairs(rd, o)) {
    t.rows.push_back({p.comm_name.empty() ? obs::hex64(p.comm_hash) : p.comm_name, rank_words(p.src_global, p.src_rank),
                      rank_words(p.dst_global, p.dst_rank), std::to_string(p.ops), fmt_bytes(p.bytes),
                      std::to_string(p.last_seq), p.ops ? fmt_duration(p.total_ns / int64_t(p.ops)) : "-",
                      fmt_duration(p.max_ns)});
  }
  if (t.rows.empty()) return;
  out << "\npoint-to-point pairs:\n" << t.render();
}

}  // namespace

int cmd_report(store::StoreReader& rd, const ReportOptions& o, std::ostream& out) {
  if (!o.html.empty()) {
    if (o.json || !o.comm.empty() || o.rank || !o.func.empty() || o.last) {
      throw UsageError("--html reports the whole job: it takes none of --comm, --rank, --func, --last, --json");
    }
    return cmd_report_html(rd, o.html, out);
  }
  const store::OpFilter filter = make_filter(o);
  check_comm(rd, filter, o.comm);
  std::vector<store::OpRow> ops = rd.ops(filter);
  // Timings of the chosen rank, for its lateness column.
  std::map<int64_t, obs::OpRankTiming> mine;
  if (o.rank && !ops.empty()) {
    std::vector<int64_t> ids;
    for (const auto& r : ops) ids.push_back(r.op_id);
    for (const auto& t : rd.timings(ids)) {
      if (t.t.global_rank == *o.rank) mine[t.op_id] = t.t;
    }
  }
  auto lateness = [&](const store::OpRow& r) -> std::optional<int64_t> {
    auto it = mine.find(r.op_id);
    if (it == mine.end()) return std::nullopt;
    return exporter::lateness_ns(r.op, it->second);
  };

  if (o.json) {
    for (const auto& r : ops) {
      nlohmann::json j = exporter::op_json(r.op);
      if (o.rank) {
        auto it = mine.find(r.op_id);
        auto late = lateness(r);
        j["rank"] = {{"global_rank", *o.rank},
                     {"start_ns", it == mine.end() ? 0 : it->second.start_ns},
                     {"end_ns", it == mine.end() ? 0 : it->second.end_ns},
                     {"lateness_ns", late ? nlohmann::json(*late) : nlohmann::json(nullptr)}};
      }
      out << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    }
    for (const obs::P2pPairInfo& p : p2p_pairs(rd, o)) {
      nlohmann::json j = {{"kind", "p2p_pair"},    {"comm_hash", obs::hex64(p.comm_hash)},
                          {"comm_name", p.comm_name}, {"nranks", p.nranks},
                          {"src_rank", p.src_rank},  {"dst_rank", p.dst_rank},
                          {"src_global", p.src_global}, {"dst_global", p.dst_global},
                          {"ops", p.ops},            {"bytes", p.bytes},
                          {"last_seq", p.last_seq},  {"last_end_ns", p.last_end_ns},
                          {"total_ns", p.total_ns},  {"max_ns", p.max_ns}};
      out << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    }
    return kExitOk;
  }

  if (ops.empty()) {
    out << "no operations match (" << rd.op_count() << " stored)\n";
    print_p2p_pairs(rd, o, out);
    return kExitOk;
  }
  Table t;
  t.headers = {"COMM",   "FUNC", "SEQ",      "DTYPE",      "BYTES", "ALGO/PROTO", "RANKS",
               "SPREAD", "LAST", "DURATION", "BUSBW GB/s", "FP",    "META"};
  t.right_align = {false, false, true, false, true, false, true, true, true, true, true, false, false};
  if (o.rank) {
    t.headers.push_back("LATE r" + std::to_string(*o.rank));
    t.right_align.push_back(true);
  }
  for (const auto& r : ops) {
    const obs::OpSummary& op = r.op;
    // Spread and last arrival only mean something once every rank has arrived.
    const bool all_arrived = exporter::all_arrived(op);
    std::string algo =
        op.algo.empty() && op.proto.empty() ? "-" : dash_if_empty(op.algo) + "/" + dash_if_empty(op.proto);
    std::vector<std::string> row = {op.comm_name.empty() ? obs::hex64(op.comm_hash) : op.comm_name,
                                    op.func,
                                    std::to_string(op.seq),
                                    dash_if_empty(op.datatype),
                                    fmt_bytes(op.bytes),
                                    algo,
                                    std::to_string(op.ranks_complete) + "/" + std::to_string(op.nranks),
                                    all_arrived ? fmt_duration(exporter::arrival_spread_ns(op)) : "-",
                                    all_arrived && op.last_rank >= 0 ? "r" + std::to_string(op.last_rank) : "-",
                                    op.duration_ns > 0 ? fmt_duration(op.duration_ns) : "-",
                                    op.busbw_gbps > 0 ? fmt_fixed(op.busbw_gbps, 2) : "-",
                                    dash_if_empty(op.fp_verdict),
                                    dash_if_empty(op.meta_verdict)};
    if (o.rank) {
      auto late = lateness(r);
      row.push_back(late ? fmt_duration(*late) : "-");
    }
    t.rows.push_back(std::move(row));
  }
  out << t.render();
  out << ops.size() << (ops.size() == 1 ? " operation" : " operations") << " shown, " << rd.op_count() << " stored\n";
  print_p2p_pairs(rd, o, out);
  return kExitOk;
}

}  // namespace scout::cli

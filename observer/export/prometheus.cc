#include "observer/export/prometheus.h"

#include <fmt/format.h>

#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <vector>

#include "common/utf8.h"
#include "observer/export/json.h"
#include "observer/model/finding.h"
#include "observer/model/replay_cycle.h"

namespace scout::exporter {
namespace {

using Labels = std::vector<std::pair<std::string, std::string>>;

// One metric family: HELP, TYPE, then its samples in insertion order.
class Family {
 public:
  Family(std::ostream& out, const char* name, const char* type, const char* help) : out_(out), name_(name) {
    out_ << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n";
  }
  void sample(const Labels& labels, double value) {
    out_ << name_;
    if (!labels.empty()) {
      out_ << "{";
      for (size_t i = 0; i < labels.size(); ++i) {
        out_ << (i ? "," : "") << labels[i].first << "=\"" << prom_escape(labels[i].second) << "\"";
      }
      out_ << "}";
    }
    out_ << " " << fmt::format("{}", value) << "\n";
  }

 private:
  std::ostream& out_;
  std::string name_;
};

constexpr const char* kRankStates[] = {"running", "exited", "dead"};
constexpr const char* kCommStates[] = {"active", "stalled", "hung", "dead", "finalized"};

struct Agg {
  uint64_t n = 0;
  uint64_t n_done = 0;  // with a duration
  double dur_sum = 0, dur_max = 0;
  uint64_t n_bw = 0;
  double bw_sum = 0;
  uint64_t n_spread = 0;
  double spread_sum = 0;
};

}  // namespace

std::string prom_escape(const std::string& raw) {
  // The exposition format is UTF-8: bytes that are not become U+FFFD (a hostile or damaged
  // store must not make the whole scrape invalid).
  std::string v = utf8_clean(raw);
  std::string o;
  for (char c : v) {
    if (c == '\\') {
      o += "\\\\";
    } else if (c == '"') {
      o += "\\\"";
    } else if (c == '\n') {
      o += "\\n";
    } else {
      o += c;
    }
  }
  return o;
}

namespace {

// The families of the store's identity and of the ranks (state, liveness, lateness).
void write_rank_families(const Snapshot& s, const std::string& job, std::ostream& out) {
  {
    Family f(out, "scout_info", "gauge", "Identity of the store this file was exported from (always 1).");
    f.sample({{"job", job},
              {"node_rank", std::to_string(s.job ? s.job->node_rank : 0)},
              {"nodes", std::to_string(s.job ? s.job->nodes : 0)},
              {"schema_version", std::to_string(s.meta.schema_version)}},
             1);
  }
  {
    Family f(out, "scout_last_update_timestamp_seconds", "gauge",
             "Time of the observer's last store update (Unix seconds).");
    f.sample({{"job", job}}, static_cast<double>(s.as_of_ns()) / 1e9);
  }
  {
    Family f(out, "scout_ranks", "gauge", "Training processes (ranks) by state.");
    std::map<std::string, int> by_state;
    for (const char* st : kRankStates) by_state[st] = 0;
    for (const auto& r : s.ranks) by_state[r.state]++;
    for (const auto& [st, n] : by_state) f.sample({{"job", job}, {"state", st}}, n);
  }
  {
    Family f(out, "scout_rank_alive", "gauge", "1 while the rank's process runs (state running), else 0.");
    for (const auto& r : s.ranks) {
      f.sample({{"job", job}, {"global_rank", std::to_string(r.global_rank)}, {"host", r.host}, {"gpu", r.gpu}},
               r.state == "running" ? 1 : 0);
    }
  }
  // Lateness per rank: GPU start minus the earliest start of the same operation.
  {
    std::map<int64_t, const obs::OpSummary*> op_of;
    for (const auto& o : s.ops) op_of[o.op_id] = &o.op;
    std::map<int, std::pair<double, uint64_t>> late;
    for (const auto& t : s.timings) {
      auto it = op_of.find(t.op_id);
      if (it == op_of.end()) continue;
      const std::optional<int64_t> l = exporter::lateness_ns(*it->second, t.t);
      if (!l) continue;
      auto& [sum, n] = late[t.t.global_rank];
      sum += static_cast<double>(*l) / 1e9;
      ++n;
    }
    std::map<int, std::string> host;
    for (const auto& r : s.ranks) host[r.global_rank] = r.host;
    Family f(out, "scout_rank_lateness_seconds", "gauge",
             "Mean lateness of the rank's GPU start behind the first rank, over stored operations.");
    for (const auto& [rank, sn] : late) {
      f.sample({{"job", job}, {"global_rank", std::to_string(rank)}, {"host", host[rank]}},
               sn.first / static_cast<double>(sn.second));
    }
  }
}

// The families of the communicators (progress and state).
void write_comm_families(const Snapshot& s, const std::string& job, std::ostream& out) {
  auto comm_labels = [&](const obs::CommInfo& c) {
    return Labels{{"job", job}, {"comm", c.name}, {"comm_hash", obs::hex64(c.comm_hash)}};
  };
  {
    Family f(out, "scout_comm_ops_complete", "gauge", "Operations complete on every rank of the communicator.");
    for (const auto& c : s.comms) f.sample(comm_labels(c), static_cast<double>(c.ops_complete));
  }
  {
    Family f(out, "scout_comm_last_progress_timestamp_seconds", "gauge",
             "Last time any rank of the communicator completed an operation (Unix seconds).");
    for (const auto& c : s.comms) { f.sample(comm_labels(c), static_cast<double>(c.last_progress_ns) / 1e9); }
  }
  {
    Family f(out, "scout_comm_state", "gauge",
             "1 for the communicator's current state (active, stalled, hung, dead, finalized), else 0.");
    for (const auto& c : s.comms) {
      std::set<std::string> states(std::begin(kCommStates), std::end(kCommStates));
      states.insert(c.state);
      for (const auto& st : states) {
        Labels l = comm_labels(c);
        l.emplace_back("state", st);
        f.sample(l, st == c.state ? 1 : 0);
      }
    }
  }
}

// The families of the findings (counts by kind, suspects of open ones).
void write_finding_families(const Snapshot& s, const std::string& job, std::ostream& out) {
  {
    std::map<std::string, std::pair<int, int>> by_kind;  // open, closed
    for (obs::FindingKind k : obs::kAllFindingKinds) by_kind[obs::to_string(k)] = {0, 0};
    for (const auto& fd : s.findings) {
      auto& p = by_kind[obs::to_string(fd.kind)];
      (fd.open ? p.first : p.second)++;
    }
    {
      Family f(out, "scout_findings_open", "gauge", "Open findings by kind.");
      for (const auto& [k, p] : by_kind) f.sample({{"job", job}, {"kind", k}}, p.first);
    }
    {
      Family f(out, "scout_findings_closed", "gauge", "Closed findings (failures that stopped) by kind.");
      for (const auto& [k, p] : by_kind) f.sample({{"job", job}, {"kind", k}}, p.second);
    }
  }
  {
    Family f(out, "scout_finding_suspect", "gauge", "1 for each suspect rank of each open finding.");
    for (const auto& fd : s.findings) {
      if (!fd.open) continue;
      for (const auto& su : fd.suspects) {
        f.sample({{"job", job},
                  {"id", std::to_string(fd.id)},
                  {"kind", obs::to_string(fd.kind)},
                  {"verdict", obs::to_string(fd.verdict)},
                  {"global_rank", std::to_string(su.global_rank)},
                  {"host", su.host},
                  {"gpu", su.gpu}},
                 1);
      }
    }
  }
}

// The families of per (communicator, function) aggregates over the stored operations.
void write_collective_families(const Snapshot& s, const std::string& job, std::ostream& out) {
  std::map<std::tuple<std::string, uint64_t, std::string>, Agg> aggs;
  for (const auto& row : s.ops) {
    const obs::OpSummary& o = row.op;
    Agg& a = aggs[{o.comm_name, o.comm_hash, o.func}];
    ++a.n;
    if (o.duration_ns > 0) {
      ++a.n_done;
      double d = static_cast<double>(o.duration_ns) / 1e9;
      a.dur_sum += d;
      if (d > a.dur_max) a.dur_max = d;
    }
    if (o.busbw_gbps > 0) {
      ++a.n_bw;
      a.bw_sum += o.busbw_gbps;
    }
    if (exporter::all_arrived(o) && o.last_arrival_ns >= o.first_arrival_ns) {
      ++a.n_spread;
      a.spread_sum += static_cast<double>(exporter::arrival_spread_ns(o)) / 1e9;
    }
  }
  auto op_labels = [&](const auto& key) {
    return Labels{{"job", job},
                  {"comm", std::get<0>(key)},
                  {"comm_hash", obs::hex64(std::get<1>(key))},
                  {"func", std::get<2>(key)}};
  };
  {
    Family f(out, "scout_collectives_stored", "gauge",
             "Operations the store holds per communicator and function (the aggregates' sample).");
    for (const auto& [k, a] : aggs) f.sample(op_labels(k), static_cast<double>(a.n));
  }
  {
    Family f(out, "scout_collective_duration_seconds", "gauge",
             "Mean duration (last arrival to end) of stored operations.");
    for (const auto& [k, a] : aggs) {
      if (a.n_done) f.sample(op_labels(k), a.dur_sum / static_cast<double>(a.n_done));
    }
  }
  {
    Family f(out, "scout_collective_duration_max_seconds", "gauge",
             "Longest duration (last arrival to end) of stored operations.");
    for (const auto& [k, a] : aggs) {
      if (a.n_done) f.sample(op_labels(k), a.dur_max);
    }
  }
  {
    Family f(out, "scout_collective_arrival_spread_seconds", "gauge",
             "Mean spread between the first and the last rank's GPU start (operations every rank "
             "reached).");
    for (const auto& [k, a] : aggs) {
      if (a.n_spread) f.sample(op_labels(k), a.spread_sum / static_cast<double>(a.n_spread));
    }
  }
  {
    Family f(out, "scout_bus_bandwidth_gbps", "gauge",
             "Mean bus bandwidth in GB/s (nccl-tests convention) of stored operations.");
    for (const auto& [k, a] : aggs) {
      if (a.n_bw) f.sample(op_labels(k), a.bw_sum / static_cast<double>(a.n_bw));
    }
  }
}

// The families of checkpoint certification (docs/certification.md): checkpoints by state, the
// newest step per state, check cycles by status.
void write_checkpoint_families(const Snapshot& s, const std::string& job, std::ostream& out) {
  constexpr ckpt::State kStates[] = {ckpt::State::kCandidate, ckpt::State::kVerified, ckpt::State::kRejected};
  {
    Family f(out, "scout_checkpoints", "gauge",
             "Checkpoints seen, by certification state (candidate, verified, rejected).");
    for (ckpt::State st : kStates) {
      int n = 0;
      for (const auto& c : s.checkpoints) n += c.state == st;
      f.sample({{"job", job}, {"state", ckpt::to_string(st)}}, n);
    }
  }
  {
    Family f(out, "scout_checkpoint_last_step", "gauge",
             "Newest training step of a checkpoint in that state (absent while none is in it).");
    for (ckpt::State st : kStates) {
      std::optional<int64_t> step;
      for (const auto& c : s.checkpoints)
        if (c.state == st && (!step || c.step > *step)) step = c.step;
      if (step) f.sample({{"job", job}, {"state", ckpt::to_string(st)}}, static_cast<double>(*step));
    }
  }
  {
    Family f(out, "scout_check_cycles", "gauge", "Judged check cycles by status (clean, dirty, incomplete).");
    for (ckpt::CycleStatus st :
         {ckpt::CycleStatus::kClean, ckpt::CycleStatus::kDirty, ckpt::CycleStatus::kIncomplete}) {
      int n = 0;
      for (const auto& v : s.check_cycles) n += v.status == st;
      f.sample({{"job", job}, {"status", ckpt::to_string(st)}}, n);
    }
  }
}

// The families of replay (docs/replay.md): cycles by outcome, the latest cycle's outcome and end.
void write_replay_families(const Snapshot& s, const std::string& job, std::ostream& out) {
  // "slow": passed, but found a slow GPU or link (obs::outcome_word, as `scout replay list`).
  constexpr const char* kOutcomes[] = {"pass", "slow", "fail", "inconclusive"};
  {
    Family f(out, "scout_replay_cycles_total", "counter",
             "Replay cycles run, by outcome (pass, slow, fail, inconclusive).");
    std::map<std::string, int> by;
    for (const char* o : kOutcomes) by[o] = 0;
    for (const auto& c : s.replay_cycles) by[obs::outcome_word(c)]++;
    for (const auto& [o, n] : by) f.sample({{"job", job}, {"outcome", o}}, n);
  }
  if (s.replay_cycles.empty()) return;
  const obs::ReplayCycleRecord& last = s.replay_cycles.back();
  {
    Family f(out, "scout_replay_last_outcome", "gauge", "1 for the outcome of the latest replay cycle, else 0.");
    std::set<std::string> outcomes(std::begin(kOutcomes), std::end(kOutcomes));
    const std::string word = obs::outcome_word(last);
    outcomes.insert(word);
    for (const auto& o : outcomes) f.sample({{"job", job}, {"outcome", o}}, o == word ? 1 : 0);
  }
  {
    Family f(out, "scout_replay_last_timestamp_seconds", "gauge",
             "When the latest replay cycle reached its verdict (Unix seconds).");
    f.sample({{"job", job}}, static_cast<double>(last.ended_ns) / 1e9);
  }
}

}  // namespace

void write_prometheus(const Snapshot& s, std::ostream& out) {
  const std::string job = s.job_name();
  write_rank_families(s, job, out);
  write_comm_families(s, job, out);
  write_finding_families(s, job, out);
  write_collective_families(s, job, out);
  write_checkpoint_families(s, job, out);
  write_replay_families(s, job, out);
  {
    Family f(out, "scout_records_lost_total", "counter",
             "Records overwritten in a ring before the observer read them (or before they were "
             "final): a finding may be missing (raise SCOUT_RING_SLOTS).");
    f.sample({{"job", job}}, static_cast<double>(s.job ? s.job->records_lost : 0));
  }
  {
    Family f(out, "scout_records_invalid_total", "counter",
             "Records rejected by validation or abandoned half-written.");
    f.sample({{"job", job}}, static_cast<double>(s.job ? s.job->records_invalid : 0));
  }
  {
    Family f(out, "scout_segments_refused", "gauge",
             "Files named like the job's segments that the observer does not read now.");
    f.sample({{"job", job}}, static_cast<double>(s.job ? s.job->segments_refused : 0));
  }
  {
    Family f(
        out, "scout_rings_refused", "gauge",
        "Communicator rings the observer refuses to read (impossible headers, or claims beyond its rank-slot bounds).");
    f.sample({{"job", job}}, static_cast<double>(s.job ? s.job->rings_refused : 0));
  }
  {
    const obs::StoreHealth h = s.job ? s.job->store : obs::StoreHealth{};
    {
      Family f(out, "scout_store_failed_batches_total", "counter",
               "Observer passes whose store writes failed (full disk, lock held, read-only); each was retried.");
      f.sample({{"job", job}}, static_cast<double>(h.failed_batches));
    }
    {
      Family f(out, "scout_store_unstored_findings", "gauge",
               "Findings the observer holds in memory because its store cannot be written now.");
      f.sample({{"job", job}}, static_cast<double>(h.unstored_findings));
    }
    {
      Family f(out, "scout_store_failing", "gauge", "1 while the observer cannot write its store, else 0.");
      f.sample({{"job", job}}, h.failing_since_ns != 0 ? 1.0 : 0.0);
    }
  }
  if (s.job && s.job->net.present) {
    const obs::NetState& n = s.job->net;
    {
      Family f(out, "scout_net_connected", "gauge",
               "1 while this observer's channel to the other observers is formed, else 0.");
      f.sample({{"job", job}}, n.connected ? 1.0 : 0.0);
    }
    {
      Family f(out, "scout_net_peers", "gauge", "Other observers on the current channel.");
      f.sample({{"job", job}}, static_cast<double>(n.peers));
    }
    {
      Family f(out, "scout_net_rounds_total", "counter", "Digest rounds completed with the other observers.");
      f.sample({{"job", job}}, static_cast<double>(n.rounds));
    }
    {
      Family f(out, "scout_net_reforms_total", "counter",
               "Times the observers' channel was formed again after it was lost.");
      f.sample({{"job", job}}, static_cast<double>(n.formed > 0 ? n.formed - 1 : 0));
    }
    {
      Family f(out, "scout_net_failures_total", "counter", "Channels lost or not formed.");
      f.sample({{"job", job}}, static_cast<double>(n.failures));
    }
  }
  {
    Family f(out, "scout_store_ops_dropped_total", "counter",
             "Operations deleted from the store by its history bound (SCOUT_STORE_MAX_OPS).");
    f.sample({{"job", job}}, static_cast<double>(s.meta.ops_dropped));
  }
}

}  // namespace scout::exporter

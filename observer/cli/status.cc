// `scout status`: the job on one screen, like NCCL RAS's summary (docs/nccl-notes.md §7.2): nodes, ranks
// alive and dead, communicators and their progress, open findings with their suspects.
#include <algorithm>
#include <map>
#include <vector>

#include "common/clock.h"
#include "common/utf8.h"
#include "observer/ckpt/certifier.h"
#include "observer/ckpt/ckpt_store.h"
#include "observer/ckpt/trust.h"
#include "observer/cli/ckpt_words.h"
#include "observer/cli/common.h"
#include "observer/cli/format.h"
#include "observer/cli/words.h"
#include "observer/export/json.h"
#include "observer/export/snapshot.h"

namespace scout::cli {
namespace {

// Lists longer than these are cut, with a pointer to the full view, to keep one screen.
constexpr size_t kMaxRankLines = 8;
constexpr size_t kMaxCommLines = 16;
constexpr size_t kMaxFindingLines = 10;
constexpr size_t kMaxHostsListed = 4;

int state_order(const std::string& s) {
  if (s == "hung") return 0;
  if (s == "stalled") return 1;
  if (s == "dead") return 2;  // shown for an active communicator whose ranks are all gone (print_comms)
  if (s == "active") return 3;
  if (s == "finalized") return 4;
  return 5;
}

std::string per_func(const obs::CommInfo& c) {
  std::string out;
  for (int i = 4; i >= 0; --i) {  // AllReduce first: the usual workhorse
    if (c.last_seq[i] == 0) continue;
    if (!out.empty()) out += " ";
    out += std::string(exporter::kSeqFuncs[i]) + "=" + std::to_string(c.last_seq[i]);
  }
  if (c.p2p_complete > 0) out += (out.empty() ? "" : " ") + std::string("Send/Recv=") + std::to_string(c.p2p_complete);
  return out.empty() ? "-" : out;
}

// Hung and stalled first; then the largest communicators (world before its splits), then by
// name and hash.
std::vector<obs::CommInfo> comms_by_severity(std::vector<obs::CommInfo> v) {
  std::stable_sort(v.begin(), v.end(), [](const obs::CommInfo& a, const obs::CommInfo& b) {
    if (state_order(a.state) != state_order(b.state)) return state_order(a.state) < state_order(b.state);
    if (a.nranks != b.nranks) return a.nranks > b.nranks;
    if (a.name != b.name) return a.name < b.name;
    return a.comm_hash < b.comm_hash;
  });
  return v;
}

// Checkpoints certified in the store (docs/certification.md): counts per state and the newest
// verified one (highest step, then latest completion; null when none).
struct CkptSummary {
  std::vector<ckpt::Checkpoint> all;
  int n[3] = {0, 0, 0};  // by ckpt::State
  const ckpt::Checkpoint* newest_verified = nullptr;
};

// newest_verified: the newest that `scout ckpt latest --verified` would name now (its files and
// certificate re-checked, observer/ckpt/trust.h).
void summarize_checkpoints(const std::string& store_path, CkptSummary* s) {
  auto st = ckpt::CkptStore::open_reader(store_path);
  s->all = st->checkpoints();
  bool any_verified = false;
  for (const auto& c : s->all) {
    s->n[int(c.state)]++;
    any_verified |= c.state == ckpt::State::kVerified;
  }
  if (!any_verified) return;
  const ckpt::TrustContext trust = ckpt::trust_context(*st, ckpt::certificate_dir(store_path), shm::wall_ns());
  for (const auto& c : s->all) {
    const ckpt::Checkpoint* b = s->newest_verified;
    if (c.state == ckpt::State::kVerified &&
        (!b || c.step > b->step || (c.step == b->step && c.completed_ns > b->completed_ns)) &&
        ckpt::restart_problem(c, trust).empty())
      s->newest_verified = &c;
  }
}

// `checkpoints` of status --json: {total, verified, rejected, candidates, newest_verified: {id,
// path, framework, step, completed_ns} or null}; total 0 when the observer certified none.
nlohmann::json checkpoints_json(const CkptSummary& s) {
  nlohmann::json newest = nullptr;
  if (const ckpt::Checkpoint* c = s.newest_verified)
    newest = {{"id", c->id},
              {"path", utf8_clean(c->path)},
              {"framework", utf8_clean(c->framework)},
              {"step", c->step},
              {"completed_ns", c->completed_ns}};
  return {{"total", s.all.size()},
          {"verified", s.n[int(ckpt::State::kVerified)]},
          {"rejected", s.n[int(ckpt::State::kRejected)]},
          {"candidates", s.n[int(ckpt::State::kCandidate)]},
          {"newest_verified", newest}};
}

void print_json(const exporter::Snapshot& s, std::ostream& out) {
  nlohmann::json j;
  j["store"] = s.store_path;
  j["schema_version"] = s.meta.schema_version;
  j["job"] = s.job ? exporter::job_json(*s.job) : nlohmann::json(nullptr);
  j["as_of_ns"] = s.as_of_ns();
  std::map<std::string, int> states = {{"running", 0}, {"exited", 0}, {"dead", 0}};
  std::map<std::string, std::vector<int>> hosts;
  nlohmann::json not_running = nlohmann::json::array();
  for (const auto& r : s.ranks) {
    states[r.state]++;
    hosts[r.host].push_back(r.global_rank);
    if (r.state != "running") not_running.push_back(exporter::rank_json(r));
  }
  nlohmann::json host_json = nlohmann::json::object();
  for (const auto& [h, rs] : hosts) host_json[h] = rs;
  j["ranks"] = {{"total", s.ranks.size()}, {"by_state", states}, {"hosts", host_json}, {"not_running", not_running}};
  nlohmann::json comms = nlohmann::json::array();
  for (const auto& c : comms_by_severity(s.comms)) comms.push_back(exporter::comm_json(c));
  j["comms"] = comms;
  int open = 0, closed = 0;
  nlohmann::json open_findings = nlohmann::json::array();
  for (const auto& f : s.findings) {
    if (f.open) {
      ++open;
      open_findings.push_back(obs::to_json(f));
    } else {
      ++closed;
    }
  }
  j["findings"] = {{"open", open}, {"closed", closed}, {"open_findings", open_findings}};
  CkptSummary ck;
  summarize_checkpoints(s.store_path, &ck);
  j["checkpoints"] = checkpoints_json(ck);
  out << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

}  // namespace

// The commands the hints print: the path scout was invoked by, the subcommand, and the flags that
// named this store, so each can be pasted as printed.
namespace {
struct Hint {
  std::string prog;  // the program the hints name
  std::string sel;   // " --job demo" or ""
  std::string operator()(const std::string& sub) const { return prog + " " + sub + sel; }
};
}  // namespace

// "checkpoints: N (V verified, R rejected, C candidates); newest verified: PATH (step S)", only
// when the observer certified checkpoints (docs/certification.md).
static void print_checkpoint_line(const std::string& store_path, const Hint& hint, std::ostream& out) {
  CkptSummary s;
  summarize_checkpoints(store_path, &s);
  if (s.all.empty()) return;
  out << "checkpoints: " << s.all.size() << " (" << s.n[int(ckpt::State::kVerified)] << " verified, "
      << s.n[int(ckpt::State::kRejected)] << " rejected, " << s.n[int(ckpt::State::kCandidate)] << " candidates); ";
  if (s.newest_verified)
    out << "newest verified: " << printable(s.newest_verified->path) << " (step " << s.newest_verified->step << ")\n";
  else if (s.n[int(ckpt::State::kVerified)] > 0)  // verified once, but none passes its re-check now
    out << "none to restart from now: every verified one failed its re-check (" << hint("ckpt latest --verified")
        << " says why)\n";
  else
    out << "none verified yet (" << hint("ckpt list") << ")\n";
  if (const int n = s.n[int(ckpt::State::kCandidate)]; n > 0) {
    const CandidateContext x = candidate_context(store_path, shm::wall_ns());
    int doomed = 0;
    for (const auto& c : s.all) doomed += !finding_rejection(c, x).empty();
    out << candidates_lines(doomed, n - doomed, x, hint("ckpt list"));
  }
}

namespace {

// The observer network of a multi-node job (docs/cli.md, "scout status"): one line of state,
// and a warning while the channel is down (operations spanning nodes are not compared then).
void print_network(const obs::JobInfo& j, int64_t now, std::ostream& out) {
  const obs::NetState& n = j.net;
  const uint64_t reforms = n.formed > 0 ? n.formed - 1 : 0;
  out << "network: node-rank " << j.node_rank << " of " << j.nodes << ", ";
  if (n.connected) {
    out << "connected to " << n.peers << (n.peers == 1 ? " peer" : " peers");
  } else {
    out << "not connected" << (n.since_ns ? " since " + fmt_ago(n.since_ns, now) : std::string());
  }
  out << " (epoch " << n.epoch << ", rendezvous " << n.rendezvous << "), " << n.rounds << " rounds";
  if (n.last_round_ns) out << ", last " << fmt_ago(n.last_round_ns, now);
  out << ", re-formed " << reforms << (reforms == 1 ? " time" : " times") << ", " << n.failures
      << (n.failures == 1 ? " failure" : " failures") << "\n";
  if (!n.connected) {
    out << "warning: the observer network is down: operations of communicators that span nodes are not "
           "compared until it re-forms"
        << (n.last_error.empty() ? std::string() : "; last error: " + n.last_error) << "\n";
  }
}

// "job ...: node K of N, as of ..." and the warnings about what the observer could not see, said
// before anything that may be incomplete because of it; then the network's state (several nodes).
void print_job(const exporter::Snapshot& s, int64_t now, std::ostream& out) {
  if (s.job) {
    const obs::JobInfo& j = *s.job;
    out << "job " << j.job << ": node " << j.node_rank << " of " << j.nodes << ", as of " << fmt_utc(now)
        << " (observer " << j.observer_version << ", up " << fmt_duration(j.updated_ns - j.started_ns) << ")\n";
  } else {
    out << "job (no header yet): as of " << fmt_utc(now) << "\n";
  }
  if (!s.job) return;
  if (!s.job->warning.empty()) out << "warning: " << s.job->warning << "\n";
  if (s.job->records_lost > 0) {
    out << "warning: " << s.job->records_lost << " of " << (s.job->records_read + s.job->records_lost)
        << " records lost (ring overwritten before the observer read them): a finding may be "
           "missing; raise SCOUT_RING_SLOTS or start the observer before the job\n";
  }
  if (s.job->segments_refused > 0) {
    out << "warning: " << s.job->segments_refused << " segment files refused (see the observer's log)\n";
  }
  if (s.job->rings_refused > 0) {
    out << "warning: " << s.job->rings_refused
        << " communicator rings refused (impossible headers, or claims beyond the observer's rank-slot bounds; "
           "see its log): their records are not read\n";
  }
  const obs::StoreHealth& h = s.job->store;
  if (h.failing_since_ns != 0) {
    out << "warning: the observer cannot write this store since " << fmt_utc(h.failing_since_ns) << " ("
        << h.failed_batches << " failed batches, last: " << printable(h.last_error) << "): " << h.unstored_findings
        << " findings kept in its memory, not stored yet (written as soon as the store takes them)\n";
  } else if (h.failed_batches > 0) {
    out << "note: " << h.failed_batches << " store batches failed and were written again later (no finding lost";
    if (h.ops_unstored > 0) out << "; " << h.ops_unstored << " operation summaries not stored";
    out << ")\n";
  }
  if (s.job->net.present) print_network(*s.job, now, out);
}

// "ranks: N on H hosts (...); R running, E exited, D dead", exited ranks on one line, dead ranks
// (gone without finalizing) one by one.
void print_ranks(const exporter::Snapshot& s, int64_t now, const Hint& hint, std::ostream& out) {
  std::map<std::string, std::vector<int>> hosts;
  std::map<std::string, int> states;
  for (const auto& r : s.ranks) {
    hosts[r.host].push_back(r.global_rank);
    states[r.state]++;
  }
  out << "ranks: " << s.ranks.size() << " on " << hosts.size() << (hosts.size() == 1 ? " host" : " hosts");
  if (!hosts.empty() && hosts.size() <= kMaxHostsListed) {
    out << " (";
    bool first = true;
    for (const auto& [h, rs] : hosts) {
      out << (first ? "" : "; ") << h << ": " << fmt_ranges(rs);
      first = false;
    }
    out << ")";
  }
  out << "; " << states["running"] << " running, " << states["exited"] << " exited, " << states["dead"] << " dead\n";
  std::vector<int> exited;
  for (const auto& r : s.ranks) {
    if (r.state == "exited") exited.push_back(r.global_rank);
  }
  if (!exited.empty()) {
    out << "  exited: " << (exited.size() == 1 ? "rank " : "ranks ") << fmt_ranges(exited) << "\n";
  }
  size_t listed = 0, dead = 0;
  for (const auto& r : s.ranks) {
    if (r.state == "running" || r.state == "exited") continue;
    ++dead;
    if (listed >= kMaxRankLines) continue;
    ++listed;
    obs::Suspect who{r.global_rank, r.host, r.pid, r.gpu, -1};
    out << "  " << r.state << ": " << suspect_words(who) << ", last event " << fmt_ago(r.last_event_ns, now) << "\n";
  }
  if (dead > listed) out << "  ... and " << (dead - listed) << " more (" << hint("status") << " --json)\n";
}

// "communicators: N (per state)" and the table of the most severe ones.
void print_comms(const exporter::Snapshot& s, int64_t now, const Hint& hint, std::ostream& out) {
  std::vector<obs::CommInfo> comms = s.comms;
  for (auto& c : comms) c.state = comm_state_shown(c, s.ranks);
  comms = comms_by_severity(std::move(comms));
  std::map<int, std::pair<std::string, int>> by_state;
  for (const auto& c : comms) {
    auto& e = by_state[state_order(c.state)];
    e.first = c.state;
    e.second++;
  }
  out << "communicators: " << comms.size();
  if (!comms.empty()) {
    out << " (";
    bool first = true;
    for (const auto& [order, e] : by_state) {
      out << (first ? "" : ", ") << e.second << " " << e.first;
      first = false;
    }
    out << ")";
  }
  out << "\n";
  if (comms.empty()) return;
  Table t;
  t.headers = {"NAME", "HASH", "RANKS", "NODES", "STATE", "OPS DONE", "LAST PROGRESS", "COMPLETED PER FUNCTION"};
  t.right_align = {false, false, true, true, false, true, false, false};
  for (size_t i = 0; i < comms.size() && i < kMaxCommLines; ++i) {
    const auto& c = comms[i];
    t.rows.push_back({c.name.empty() ? "-" : c.name, obs::hex64(c.comm_hash), std::to_string(c.nranks),
                      std::to_string(c.nnodes), c.state, std::to_string(c.ops_complete),
                      fmt_ago(c.last_progress_ns, now), per_func(c)});
  }
  out << t.render("  ");
  if (comms.size() > kMaxCommLines) {
    out << "  ... and " << (comms.size() - kMaxCommLines) << " more (" << hint("status") << " --json)\n";
  }
}

// One finding on two lines: "#ID kind verdict: suspects <-> peer in comm key" and its summary.
void print_finding_line(const obs::Finding& f, std::ostream& out) {
  out << "  #" << f.id << " " << obs::to_string(f.kind) << " " << obs::to_string(f.verdict)
      << (f.open ? "" : " (closed)") << ": ";
  if (f.suspects.empty()) {
    out << "no suspect named";
  } else {
    for (size_t i = 0; i < f.suspects.size(); ++i) {
      if (i == 3) {
        out << " and " << (f.suspects.size() - 3) << " more";
        break;
      }
      out << (i ? ", " : "") << suspect_words(f.suspects[i]);
    }
  }
  if (f.peer) out << " <-> " << suspect_words(*f.peer);
  if (f.comm_hash != 0 || f.key) {
    out << " in " << comm_words(f);
    if (f.key) out << " " << key_words(f);
  }
  out << "\n";
  if (!f.summary.empty()) out << "     " << f.summary << "\n";
  if (std::string cause = cause_words(f); !cause.empty()) out << "     cause: " << cause << "\n";
}

// "findings: O open, C closed"; open findings first, then closed ones (a finished job's closed
// hang or NaN episode still names its rank), within one budget of lines. Returns the id of the
// first finding listed (0: none).
int64_t print_findings(const exporter::Snapshot& s, const Hint& hint, std::ostream& out) {
  size_t open = 0, closed = 0;
  for (const auto& f : s.findings) (f.open ? open : closed)++;
  out << "findings: " << open << " open, " << closed << " closed\n";
  std::vector<const obs::Finding*> order;
  for (const auto& f : s.findings) {
    if (f.open) order.push_back(&f);
  }
  for (const auto& f : s.findings) {
    if (!f.open) order.push_back(&f);
  }
  for (size_t i = 0; i < order.size() && i < kMaxFindingLines; ++i) print_finding_line(*order[i], out);
  if (order.size() > kMaxFindingLines) {
    out << "  ... and " << (order.size() - kMaxFindingLines) << " more (" << hint("findings") << ")\n";
  }
  return order.empty() ? 0 : order.front()->id;
}

}  // namespace

int cmd_status(store::StoreReader& rd, const StatusOptions& o, std::ostream& out) {
  exporter::Snapshot s = exporter::load_snapshot(rd, /*with_ops=*/false);
  if (o.json) {
    print_json(s, out);
    return kExitOk;
  }
  const int64_t now = s.as_of_ns();
  print_job(s, now, out);
  const Hint hint{o.prog.empty() ? program_name() : o.prog, o.selector.empty() ? "" : " " + o.selector};
  print_ranks(s, now, hint, out);
  print_comms(s, now, hint, out);
  const int64_t first = print_findings(s, hint, out);
  print_checkpoint_line(rd.path(), hint, out);
  if (first > 0) {
    out << "details: " << hint("explain") << " " << first << "; per-collective table: " << hint("report") << "\n";
  }
  return kExitOk;
}

}  // namespace scout::cli

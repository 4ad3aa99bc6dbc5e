// `scout jobs`: the jobs whose stores are in the state directory (docs/cli.md, "scout jobs"), so a
// generated job id (`scout run` without --job) never has to be copied from a log by hand.
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "observer/cli/common.h"
#include "observer/cli/format.h"
#include "scout/config.h"

namespace scout::cli {
namespace {

namespace fs = std::filesystem;

struct JobRow {
  std::string job, store, problem;  // problem: why the store could not be read ("" when read)
  int64_t started_ns = 0, updated_ns = 0;
  int nodes = 0;
  size_t ranks = 0, findings = 0, open = 0;
};

// The store of a job folder that `scout status --job` reads: node-0.db, else the lowest node's.
std::string job_store(const fs::path& dir) {
  std::string best;
  long best_k = -1;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string n = e.path().filename().string();
    if (n.rfind("node-", 0) != 0 || n.size() < 9 || n.compare(n.size() - 3, 3, ".db") != 0) continue;
    const std::string k = n.substr(5, n.size() - 8);
    if (k.empty() || k.find_first_not_of("0123456789") != std::string::npos || k.size() > 9) continue;
    const long v = std::stol(k);
    if (best_k < 0 || v < best_k) {
      best_k = v;
      best = e.path().string();
    }
  }
  return best;
}

JobRow read_row(const std::string& folder, const std::string& store) {
  JobRow r;
  r.job = folder;
  r.store = store;
  try {
    auto rd = store::StoreReader::open(store);
    if (std::optional<obs::JobInfo> j = rd->job()) {
      r.job = j->job;
      r.started_ns = j->started_ns;
      r.updated_ns = j->updated_ns;
      r.nodes = j->nodes;
    } else {
      r.problem = "no job header yet";
    }
    r.ranks = rd->ranks().size();
    for (const auto& f : rd->findings()) {
      r.findings++;
      if (f.open) r.open++;
    }
  } catch (const std::exception& e) {
    r.problem = e.what();
    if (r.problem.rfind(store + " ", 0) == 0) r.problem = r.problem.substr(store.size() + 1);  // the path is in STORE
  }
  return r;
}

}  // namespace

int cmd_jobs(const JobsOptions& o, std::ostream& out) {
  const std::string dir = o.state_dir.empty() ? config::load().state_dir : o.state_dir;
  std::vector<JobRow> rows;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (!e.is_directory(ec)) continue;
    const std::string store = job_store(e.path());
    if (!store.empty()) rows.push_back(read_row(e.path().filename().string(), store));
  }
  // Newest first: the job just run is the first line.
  std::stable_sort(rows.begin(), rows.end(), [](const JobRow& a, const JobRow& b) {
    if (a.started_ns != b.started_ns) return a.started_ns > b.started_ns;
    return a.job < b.job;
  });
  if (o.json) {
    for (const auto& r : rows) {
      nlohmann::json j = {{"job", r.job},           {"store", r.store},     {"started_ns", r.started_ns},
                          {"updated_ns", r.updated_ns}, {"nodes", r.nodes}, {"ranks", r.ranks},
                          {"findings", r.findings}, {"open", r.open}};
      j["problem"] = r.problem.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.problem);
      out << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    }
    return kExitOk;
  }
  if (rows.empty()) {
    out << "no jobs in " << dir << " (SCOUT_STATE_DIR)\n";
    return kExitOk;
  }
  Table t;
  t.headers = {"JOB", "STARTED", "NODES", "RANKS", "FINDINGS", "STORE"};
  t.right_align = {false, false, true, true, false, false};
  for (const auto& r : rows) {
    if (!r.problem.empty()) {
      t.rows.push_back({r.job, "-", "-", "-", "-", r.store + " (unreadable: " + r.problem + ")"});
      continue;
    }
    t.rows.push_back({r.job, fmt_utc(r.started_ns), std::to_string(r.nodes), std::to_string(r.ranks),
                      std::to_string(r.findings) + " (" + std::to_string(r.open) + " open)", r.store});
  }
  out << t.render();
  out << "status of the newest: " << program_name() << " status --job " << shell_word(rows.front().job) << "\n";
  return kExitOk;
}

}  // namespace scout::cli

#include "observer/pipeline/command_line.h"

#include <unistd.h>
#include <algorithm>

#include <CLI/CLI.hpp>
#include <cmath>
#include <filesystem>

#include "common/flag_check.h"
#include "common/paths.h"

namespace scout::obs {

namespace {

bool valid_rdzv(const std::string& r) {
  if (r.rfind("file:", 0) == 0) return r.size() > 5;
  if (r.rfind("redis:", 0) == 0) {
    std::string rest = r.substr(6);
    size_t colon = rest.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 >= rest.size()) return false;
    for (char c : rest.substr(colon + 1)) {
      if (c < '0' || c > '9') return false;
    }
    long port = std::stol(rest.substr(colon + 1));
    return port > 0 && port < 65536;
  }
  return false;
}

std::string first_line(std::string s) {
  size_t nl = s.find('\n');
  if (nl != std::string::npos) s.resize(nl);
  return s;
}
}  // namespace

ParseResult parse_command_line(int argc, const char* const* argv, const config::Config& cfg, CommandLine* out,
                               std::string* message, const std::function<const char*(const char*)>& getenv_fn,
                               const std::string& hostname) {
  CommandLine cl;
  std::string err;
  if (!options_from_config(cfg, &cl.opt, &err)) {
    *message = err;
    return ParseResult::kError;
  }
  std::string job, host, shm_dir, equiv_file;
  double hang_timeout = cfg.observer_hang_timeout_s;
  int64_t interval_ms = cfg.observer_interval_ms;
  int nodes = 1, node_rank = 0;

  CLI::App app{
      "scout-observer: reads every scout segment of a job on this node, finds hangs, "
      "stragglers, slow links and silent data corruption, and writes the store.",
      "scout-observer"};
  app.add_option("--job", job, "job id (default: SCOUT_JOB_ID, TORCHELASTIC_RUN_ID, SLURM_JOB_ID, \"default\")");
  app.add_option("--store", cl.store, "SQLite store (default: <SCOUT_STATE_DIR>/<job>/node-<K>.db)");
  app.add_option("--nodes", nodes, "observers in the job (one per node)")->check(CLI::Range(1, 1 << 20));
  app.add_option("--node-rank", node_rank, "this observer's node, 0..N-1")->check(CLI::Range(0, (1 << 20) - 1));
  app.add_option("--rdzv", cl.rdzv, "rendezvous of the observers: file:DIR or redis:HOST:PORT");
  app.add_option("--hang-timeout", hang_timeout, "seconds without progress before a waiting communicator is hung")
      ->check(config::finite_range(0.1, 86400.0));
  app.add_option("--interval", interval_ms, "milliseconds between passes")
      ->check(CLI::Range(int64_t(10), int64_t(60000)));
  app.add_flag("--once", cl.once, "one pass: read, judge, write the store, exit");
  app.add_option("--host", host,
                 "host whose segments to read (default: SCOUT_HOST, else the hostname; '*': every host)");
  app.add_option("--shm-dir", shm_dir, "directory of the segments (default: SCOUT_SHM_DIR)");
  app.add_option("--equiv", equiv_file, "file declaring equivalent communicators (docs/observer.md)");
  app.add_flag("--quiet", cl.quiet, "print only errors");
  app.add_option("--ckpt-dir", cl.ckpt_dirs,
                 "checkpoint directory to watch and certify (repeatable; default: SCOUT_CKPT_DIR, ':'-separated)");
  app.add_flag("--ckpt-write-certificate", cl.ckpt_write_certificate,
               "also write scout-certificate.json into each certified checkpoint directory");
  app.add_option("--ready-fd", cl.ready_fd, "descriptor told 'ready' after the first pass (used by scout run)")
      ->check(CLI::Range(3, 1 << 20));
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    *message = app.help();
    return ParseResult::kHelp;
  } catch (const CLI::ParseError& e) {
    *message = first_line(e.what());
    return ParseResult::kError;
  }

  if (node_rank >= nodes) {
    *message = "--node-rank " + std::to_string(node_rank) + " is not below --nodes " + std::to_string(nodes);
    return ParseResult::kError;
  }
  if (!cl.rdzv.empty() && !valid_rdzv(cl.rdzv)) {
    *message = "--rdzv " + cl.rdzv + ": expected file:DIR or redis:HOST:PORT";
    return ParseResult::kError;
  }
  if (nodes > 1 && cl.rdzv.empty()) {
    *message = "--nodes " + std::to_string(nodes) +
               " needs --rdzv file:DIR (a directory every node reaches) or redis:HOST:PORT";
    return ParseResult::kError;
  }
  cl.opt.job = !job.empty() ? job : config::resolve_job_id(cfg.job_id, getenv_fn);
  cl.opt.host = !host.empty()       ? host
                : !cfg.host.empty() ? cfg.host
                : !hostname.empty() ? hostname
                                    : config::resolve_host("");
  if (cl.opt.host == "*") cl.opt.host.clear();  // every host's segments in the directory
  if (!shm_dir.empty()) cl.opt.shm_dir = shm_dir;
  cl.opt.nodes = nodes;
  cl.opt.node_rank = node_rank;
  cl.opt.hang.timeout_ns = int64_t(std::llround(hang_timeout * 1e9));
  cl.opt.hang.defer_cross_node = nodes > 1;  // the leader's job-wide analysis names those roots
  cl.opt.interval_ns = interval_ms * 1'000'000;
  if (!equiv_file.empty() && !load_equiv_file(equiv_file, &cl.opt.equiv, &err)) {
    *message = err;
    return ParseResult::kError;
  }
  if (cl.ckpt_dirs.empty()) {
    size_t b = 0;
    while (b <= cfg.ckpt_dir.size() && !cfg.ckpt_dir.empty()) {
      const size_t e = std::min(cfg.ckpt_dir.find(':', b), cfg.ckpt_dir.size());
      if (e > b) cl.ckpt_dirs.push_back(cfg.ckpt_dir.substr(b, e - b));
      b = e + 1;
    }
  }
  // Absolute from the observer's working directory (scout run starts it in the job's): the
  // paths stored and printed by `scout ckpt latest` load from any directory (docs/certification.md).
  for (auto& d : cl.ckpt_dirs) {
    std::error_code ec;
    const std::filesystem::path abs = std::filesystem::absolute(d, ec);
    if (!ec) d = abs.lexically_normal().string();
    while (d.size() > 1 && d.back() == '/') d.pop_back();
  }
  if (cl.store.empty()) {
    cl.store = store::default_store_path(cfg.state_dir, cl.opt.job, node_rank, &err);
    if (cl.store.empty()) {
      *message = "no store path: " + err;
      return ParseResult::kError;
    }
  }
  *out = std::move(cl);
  return ParseResult::kOk;
}

}  // namespace scout::obs

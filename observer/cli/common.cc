#include "observer/cli/common.h"

#include <cctype>
#include <cstring>

#include "common/paths.h"
#include "observer/store/sqlite.h"
#include "scout/config.h"

namespace scout::cli {
namespace {

std::string g_program = "scout";

}  // namespace

const std::string& program_name() { return g_program; }

void set_program_name(const char* argv0) {
  const std::string a = argv0 != nullptr ? argv0 : "";
  g_program = a.find('/') != std::string::npos ? shell_word(a) : "scout";
}

std::string shell_word(const std::string& s) {
  bool safe = !s.empty();
  for (char c : s) {
    safe = safe && (std::isalnum(static_cast<unsigned char>(c)) || (c != 0 && std::strchr("@%_+=:,./-", c) != nullptr));
  }
  if (safe) return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string store_selector(const StoreOptions& o) {
  if (!o.store.empty()) return "--store " + shell_word(o.store);
  if (o.job.empty()) return "";
  return "--job " + shell_word(o.job) + (o.node != 0 ? " --node-rank " + std::to_string(o.node) : "");
}

std::string store_path(const StoreOptions& o) {
  if (!o.store.empty()) return o.store;
  config::Config cfg = config::load();
  std::string job = o.job.empty() ? config::resolve_job_id(cfg.job_id) : o.job;
  std::string err;
  std::string path = store::default_store_path(cfg.state_dir, job, o.node, &err);
  if (path.empty()) throw UsageError(err);
  return path;
}

std::unique_ptr<store::StoreReader> open_store(const StoreOptions& o) {
  std::string path = store_path(o);
  try {
    return store::StoreReader::open(path);
  } catch (const store::Error& e) {
    std::string msg = e.what();
    if (o.store.empty() && msg.rfind("no store at ", 0) == 0) {
      msg += " (give --store PATH, or --job ID of a job whose observer runs on this node: " + program_name() +
             " jobs lists them)";
    }
    throw UsageError(msg);
  }
}

}  // namespace scout::cli

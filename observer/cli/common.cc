#include "observer/cli/common.h"

#include "observer/store/paths.h"
#include "observer/store/sqlite.h"
#include "scout/config.h"

namespace scout::cli {

std::string store_path(const StoreOptions& o) {
  if (!o.store.empty()) return o.store;
  config::Config cfg = config::load();
  std::string job = o.job.empty() ? store::resolve_job_id(cfg.job_id) : o.job;
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
      msg += " (give --store PATH, or --job ID of a job whose observer runs on this node)";
    }
    throw UsageError(msg);
  }
}

}  // namespace scout::cli

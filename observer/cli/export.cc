// `scout export --format jsonl|prometheus|chrome-trace [--out PATH]`.
#include <sstream>

#include "observer/cli/common.h"
#include "observer/export/atomic_file.h"
#include "observer/export/chrome_trace.h"
#include "observer/export/jsonl.h"
#include "observer/export/prometheus.h"

namespace scout::cli {

int cmd_export(store::StoreReader& rd, const ExportOptions& o, std::ostream& out) {
  if (o.format != "jsonl" && o.format != "prometheus" && o.format != "chrome-trace") {
    throw UsageError("--format " + o.format + ": expected jsonl, prometheus or chrome-trace");
  }
  exporter::Snapshot s = exporter::load_snapshot(rd, /*with_ops=*/true, /*with_history=*/true);
  std::ostringstream text;
  if (o.format == "jsonl") {
    exporter::write_jsonl(s, text);
  } else if (o.format == "prometheus") {
    exporter::write_prometheus(s, text);
  } else {
    text << exporter::chrome_trace(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  }
  if (o.out.empty() || o.out == "-") {
    out << text.str();
    return kExitOk;
  }
  // Beside the target, then renamed, so a collector (node-exporter's textfile directory) never
  // reads a half-written file; never through a planted link (observer/export/atomic_file.h).
  std::string err;
  if (!exporter::write_file_atomic(o.out, text.str(), &err)) throw UsageError(err);
  return kExitOk;
}

}  // namespace scout::cli

// `scout export --format jsonl|prometheus|chrome-trace [--out PATH]`.
#include <cstdio>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "observer/cli/common.h"
#include "observer/export/chrome_trace.h"
#include "observer/export/jsonl.h"
#include "observer/export/prometheus.h"

namespace scout::cli {

int cmd_export(store::StoreReader& rd, const ExportOptions& o, std::ostream& out) {
  if (o.format != "jsonl" && o.format != "prometheus" && o.format != "chrome-trace") {
    throw UsageError("--format " + o.format + ": expected jsonl, prometheus or chrome-trace");
  }
  exporter::Snapshot s = exporter::load_snapshot(rd, /*with_ops=*/true);
  std::ostringstream text;
  if (o.format == "jsonl") {
    exporter::write_jsonl(s, text);
  } else if (o.format == "prometheus") {
    exporter::write_prometheus(s, text);
  } else {
    text << exporter::chrome_trace(s).dump() << "\n";
  }
  if (o.out.empty() || o.out == "-") {
    out << text.str();
    return kExitOk;
  }
  // Write beside the target and rename, so a collector (node-exporter's textfile directory)
  // never reads a half-written file.
  std::string tmp = o.out + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw UsageError("cannot write " + o.out);
    f << text.str();
    f.close();
    if (!f) {
      std::remove(tmp.c_str());
      throw UsageError("cannot write " + o.out);
    }
  }
  if (std::rename(tmp.c_str(), o.out.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw UsageError("cannot write " + o.out);
  }
  return kExitOk;
}

}  // namespace scout::cli

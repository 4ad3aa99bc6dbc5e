// `scout export --format prometheus`: a text file in the Prometheus exposition format (0.0.4)
// for node-exporter's textfile collector. Metric and label names: docs/cli.md
// ("Prometheus"). Aggregates over operations cover the operations the store keeps
// (SCOUT_STORE_MAX_OPS); series are sorted and complete (e.g. every finding kind), so the file
// is stable for a given store.
#pragma once

#include <ostream>
#include <string>

#include "observer/export/snapshot.h"

namespace scout::exporter {

void write_prometheus(const Snapshot& s, std::ostream& out);

// Escapes a label value: backslash, double quote and newline (exposition format rules).
std::string prom_escape(const std::string& v);

}  // namespace scout::exporter

// `scout export --format chrome-trace`: Chrome trace-event JSON (opens in Perfetto and
// chrome://tracing). Mapping (docs/cli.md, "Chrome trace"):
//   - one process per host: pid = 1 + index of the host in sorted host names, named by the
//     host ("process_name" metadata), sorted by that index;
//   - one thread (track) per rank: tid = global rank, named "rank R (pid P, GPU G)";
//   - one complete ("X") slice per rank per operation from GPU start to GPU end, named
//     "<func> <comm>", category = op kind, args: comm, comm_hash, seq, bytes, datatype,
//     algo, proto, verdict (fingerprint), meta_verdict, lateness_ns, comm_rank, fp_status,
//     complete; an operation still running at the store's last update ends there with
//     complete=false; a rank that enqueued but never started gets an instant ("i") event;
//   - findings: process pid 0 "scout findings", one thread per finding (tid = finding id) with
//     an "X" slice from first to last seen, and an instant event on each suspect's track.
// ts/dur are microseconds relative to origin_ns (otherData.origin_ns, CLOCK_REALTIME ns).
#pragma once

#include <nlohmann/json.hpp>

#include "observer/export/snapshot.h"

namespace scout::exporter {

constexpr int kChromeTraceVersion = 1;

nlohmann::json chrome_trace(const Snapshot& s);

// The schema check of docs/cli.md: a top-level object with a traceEvents array; every event has
// name (string), ph (string), ts (number), pid and tid (integers); "X" events have dur >= 0;
// every pid and (pid, tid) used by a non-metadata event is named by a process_name /
// thread_name metadata ("M") event. Returns "" when valid, else the first problem found.
std::string check_chrome_trace(const nlohmann::json& trace);

}  // namespace scout::exporter

// `scout export --format jsonl`: the store as JSON lines (docs/cli.md, "JSON lines").
//   line 1: {"type":"header","format":"scout-jsonl","version":1,"schema_version":N,"job":{...}|null}
//   then one line per rank ("type":"rank"), communicator ("comm"), finding ("finding": the keys
//   of obs::to_json) and operation ("op": op_json keys plus "timings": [timing_json...]), then
//   checkpoint ("checkpoint"), check cycle ("check_cycle"), certificate ("certificate"), replay
//   cycle ("replay_cycle"), GEMM capture counters ("gemm_capture") and GEMM shape class
//   ("gemm_shape") lines (observer/export/json.h), in the Snapshot's orders. The snapshot must
//   be loaded with_ops and with_history for the whole store.
#pragma once

#include <ostream>

#include "observer/export/snapshot.h"

namespace scout::exporter {

constexpr int kJsonlVersion = 1;

void write_jsonl(const Snapshot& s, std::ostream& out);

}  // namespace scout::exporter

// A finding's evidence in words (`scout explain`).
//
// Each kind of docs/findings.md has its own renderer (observer/cli/evidence_kinds.h): which ranks
// voted what, the wait-for chain, the lateness series, the slow and normal channels, the crashed
// process. Evidence of another shape (e.g. findings of the observer network's drill-down) and any
// key a renderer does not know are rendered generically, by shape:
//   - "comm" {hash, name} -> "dp (0x...)"; "op" {func, seq[, src, dst]} -> "AllReduce #40";
//   - lists of votes {value, ranks} -> "ranks 0-4,6-7 (7): 0x..." (one line per group);
//   - lists of wait-for edges {rank, waits_for, comm, op, why} -> "rank 3 waits for rank 7 in
//     dp3 AllReduce #7 (why)";
//   - *_ns / *_ms numbers and lists -> durations ("2.10ms"), *_ns instants -> "+12.345s" after
//     the job start; sorted lists of ranks -> "0-3,5";
//   - anything else: nested keys as indented lines.
#pragma once

#include <cstdint>
#include <string>

#include "observer/model/finding.h"

namespace scout::cli {

// Lines (each ending in '\n', indented by `indent`) describing f.evidence. `origin_ns` is the
// job start used for times. Never throws on unexpected shapes.
std::string render_evidence(const obs::Finding& f, int64_t origin_ns, const std::string& indent);

// Generic rendering of any JSON value (the fallback of render_evidence).
std::string render_json_generic(const nlohmann::json& j, int64_t origin_ns, const std::string& indent);

// Generic rendering of one "key: value" entry of an object (lines ending in '\n').
std::string render_generic_entry(const std::string& key, const nlohmann::json& value, int64_t origin_ns,
                                 const std::string& indent);

}  // namespace scout::cli

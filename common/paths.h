// Where a job's files live on a node: segment names in the shared-memory directory (written by
// the plugin, listed by the observer and the tools) and store paths in the state directory
// (written by scout-observer, found by the scout CLI from --job). One rule for every part.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace scout::shm {

// 64-bit FNV-1a of `s`: names long components apart, and host names in net listen handles
// (docs/net-plugin.md). Not a security boundary.
uint64_t fnv1a64(std::string_view s);

// Longest encoded component (job or host) in a segment or store name.
constexpr size_t kMaxComponentChars = 64;

// Encodes a job or host name as a file name component, injectively: [A-Za-z0-9-] stay, every
// other byte (including '_' and '.') becomes "_" and two lowercase hex digits ("a.b" -> "a_2eb",
// "a_b" -> "a_5fb"); "" becomes "_". An encoding longer than kMaxComponentChars keeps its first
// 46 characters followed by "_h" and the 16 hex digits of a 64-bit FNV-1a hash of the whole
// name (no short encoding contains "_h"). docs/record-format.md, "Naming and lifetime".
std::string encode_component(std::string_view s);

// "scout.<job>.<host>.<pid>" with job and host encoded (encode_component).
std::string segment_name(std::string_view job, std::string_view host, int pid);

// Paths of the segments in `dir` whose names start with "scout.<job>." (and, when `host` is not
// empty, "scout.<job>.<host>."), job and host encoded as in segment_name(). Sorted by name.
std::vector<std::string> list_segments(const std::string& dir, std::string_view job, std::string_view host = {});

// Parses "scout.<job>.<host>.<pid>" (a file name, no directory); false if it is not one.
bool parse_segment_name(std::string_view name, std::string* job, std::string* host, int* pid);

// What keeps the plugin from creating segments in `dir` (missing, not a directory, not writable
// by this user), in one line naming SCOUT_SHM_DIR; "" when nothing does. Used by the observer's
// ingestion and by `scout run`.
std::string shm_dir_problem(const std::string& dir);

}  // namespace scout::shm

namespace scout::store {

// Default store of node `node_rank` of job `job`:
//   <state_dir>/<job>/node-<node_rank>.db
// `state_dir` is SCOUT_STATE_DIR (default /tmp/scout); `job` is encoded the same way segment
// names encode it (shm::encode_component), so a job id can never escape state_dir and two job
// ids never share a store. Returns "" with *error set when job is empty, state_dir is empty or node_rank < 0.
std::string default_store_path(std::string_view state_dir, std::string_view job, int node_rank, std::string* error);

}  // namespace scout::store

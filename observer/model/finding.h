// Findings: what the observer concludes, as stored in SQLite and printed by `scout findings`.
//
// Contract between the detectors (observer/detect), the store (observer/store), the observers'
// channel (observer/net) and the CLI (observer/cli). The JSON form is the one `scout findings
// --json` prints: one object per finding with at least the keys
//   id, kind, verdict, status, suspects[{global_rank, host, pid, gpu}], peer, comm{hash, name},
//   key{func, seq}, first_seen_ns, last_seen_ns, summary, evidence
// Kinds and their evidence objects are documented in docs/findings.md; every detector fills
// `evidence` exactly as documented there, and `scout explain` renders it in words.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/hex.h"
#include "observer/model/evidence.h"

namespace scout::obs {

// Kinds: hang, deadlock, desync, straggler, slowlink, sdc, nan, crash, stall (a hang's root named
// before the hang timeout; the same finding becomes the hang if it lasts, docs/findings.md).
enum class FindingKind { kHang, kDeadlock, kDesync, kStraggler, kSlowLink, kSdc, kNan, kCrash, kStall };
// Every kind, in declaration order (for per-kind tables and metrics).
inline constexpr FindingKind kAllFindingKinds[] = {
    FindingKind::kHang, FindingKind::kDeadlock, FindingKind::kDesync, FindingKind::kStraggler, FindingKind::kSlowLink,
    FindingKind::kSdc,  FindingKind::kNan,      FindingKind::kCrash,  FindingKind::kStall};

// Verdicts (docs/observer.md#consensus). Agree produces no finding.
enum class Verdict { kAttributed, kInconclusive };

// One suspect (or the peer of a link): who to blame, with the identity a person needs.
struct Suspect {
  int global_rank = -1;  // -1 if unknown
  std::string host;
  int pid = 0;
  std::string gpu;     // GPU UUID or SCOUT_GPU, "" if unknown
  int comm_rank = -1;  // rank inside the finding's communicator, -1 if not applicable
};

// The operation a finding is about (collectives: NCCL seqNumber; p2p: scout's counter).
struct OpKey {
  std::string func;  // "AllReduce", "Send", ...
  uint64_t seq = 0;
};

struct Finding {
  int64_t id = 0;  // store row id; 0 until stored
  FindingKind kind = FindingKind::kHang;
  Verdict verdict = Verdict::kAttributed;
  bool open = true;               // false once the failure stopped (e.g. a straggler recovered)
  std::vector<Suspect> suspects;  // attributed: the guilty; inconclusive: may be empty
  std::optional<Suspect> peer;    // slowlink: the other end of the link
  uint64_t comm_hash = 0;         // 0 if the finding is not about one communicator
  std::string comm_name;
  int comm_nranks = 0;
  std::optional<OpKey> key;   // the first operation that showed the failure
  int64_t first_seen_ns = 0;  // CLOCK_REALTIME
  int64_t last_seen_ns = 0;
  std::string summary;                                 // one line in words, e.g. "rank 5 (node2, pid 4242) never
                                                       // entered AllReduce #812 of dp; 7 ranks wait in it"
  nlohmann::json evidence = nlohmann::json::object();  // per kind, docs/findings.md
  // Version of the evidence shapes (observer/model/evidence.h); stored with the finding
  // (docs/store.md), not part of the JSON object.
  int evidence_version = kEvidenceVersion;
  // Identity of the failure: a finding with the same dedup key updates the stored one instead of
  // adding a new row ("one finding per failure, updated while it lasts").
  std::string dedup_key;
};

const char* to_string(FindingKind k);  // "hang", "deadlock", ...
const char* to_string(Verdict v);      // "attributed", "inconclusive"
std::optional<FindingKind> kind_from_string(const std::string& s);
std::optional<Verdict> verdict_from_string(const std::string& s);

// The JSON object of `scout findings --json` (keys listed at the top of this file). comm is null when
// comm_hash == 0, key and peer are null when absent. comm.hash is "0x" + 16 hex digits.
nlohmann::json to_json(const Finding& f);

// Inverse of to_json; false with *error on a missing or mistyped key.
bool from_json(const nlohmann::json& j, Finding* out, std::string* error);

// "0x%016llx" (common/hex.h).
using shm::hex64;

}  // namespace scout::obs

// Per-kind renderers of a finding's evidence in words (`scout explain`), following the evidence
// of each kind in docs/findings.md exactly. Each reads the evidence through its struct
// (observer/model/evidence.h) and writes lines into an ev::EvidenceText; render_evidence
// (observer/cli/evidence.h) picks the renderer, renders any key the struct does not know (or the
// renderer left) generically, and falls back to the generic renderer alone for evidence that
// does not read as its kind's struct.
#pragma once

#include <optional>

#include "observer/cli/evidence_words.h"
#include "observer/model/evidence.h"
#include "observer/model/finding.h"

namespace scout::cli::ev {

// hang (class absent or stuck), stall, deadlock, crash: roots, wait-for chains, communicator states
// (observer/cli/evidence_waits.cc).
void hang(const obs::Finding& f, const obs::HangEvidence& e, EvidenceText& t);
void stall(const obs::Finding& f, const obs::StallEvidence& e, EvidenceText& t);
void deadlock(const obs::Finding& f, const obs::DeadlockEvidence& e, EvidenceText& t);
void crash(const obs::Finding& f, const obs::CrashEvidence& e, EvidenceText& t);

// desync (metadata or hang mismatch), sdc (receive or equivalent communicators), nan: which
// ranks voted what (observer/cli/evidence_votes.cc).
void desync(const obs::Finding& f, const obs::DesyncEvidence& e, EvidenceText& t);
void sdc(const obs::Finding& f, const obs::SdcEvidence& e, EvidenceText& t);
void nan(const obs::Finding& f, const obs::NanEvidence& e, EvidenceText& t);

// straggler (lateness series per communicator), slowlink (slow and normal channels)
// (observer/cli/evidence_timing.cc).
void straggler(const obs::Finding& f, const obs::StragglerEvidence& e, EvidenceText& t);
void slowlink(const obs::Finding& f, const obs::SlowLinkEvidence& e, EvidenceText& t);

// What replay found (observer/cli/evidence_replay.cc): an sdc or slowlink finding of replay
// (source "replay"), and a straggler's cause (called by straggler()).
void replay_sdc(const obs::Finding& f, const obs::ReplaySdcEvidence& e, EvidenceText& t);
void replay_slowlink(const obs::Finding& f, const obs::ReplaySlowLinkEvidence& e, EvidenceText& t);
void replay_cause(const obs::StragglerEvidence& e, EvidenceText& t);
// A replay check's votes in words, one line per value (gemm-vote: "ranks 0-5,7 (7): 0x...
// (majority)"); gemm-self, link and coll fingerprints as "round 0 0x...; round 1 0x..." or
// "expected 0x...; got 0x..."; any other shape as JSON text. Shared with `scout replay show`.
std::vector<std::string> replay_vote_lines(const nlohmann::json& votes);

// One root of a hang or stall in words: {global_rank, reason, detail, process} -> "rank 6 never
// entered the operation and waits in no other communicator (process running)"; {reason: "stuck",
// comm, op} -> "tp1 (0x...) AllReduce #7: every rank started it and none can finish".
std::string root_words(const obs::EvHangRoot& r);

// Shared by hang, deadlock, crash and desync: a list of wait edges under `title` ("none" when
// empty), and the *comm state* objects of the communicators involved.
void wait_edges(EvidenceText& t, const std::string& title, const std::vector<obs::EvWaitEdge>& edges, int depth = 0);
void comm_states(EvidenceText& t, const std::string& title, const std::vector<obs::EvCommState>& comms, int depth = 0);
// "20.0s without progress (hang timeout 10.0s); last progress at +1.000s" (the parts in
// parentheses and after ';' only when known).
std::string stalled(EvidenceText& t, double stalled_ms, std::optional<double> timeout_ms,
                    std::optional<int64_t> last_progress_ns);

}  // namespace scout::cli::ev

// Per-kind renderers of a finding's evidence in words (`scout explain`), following the evidence
// of each kind in docs/findings.md exactly. Each writes lines into an ev::EvidenceText and marks
// the keys it used; render_evidence (observer/cli/evidence.h) then renders any key left over
// generically, and picks the generic renderer alone for evidence of another shape.
#pragma once

#include "observer/cli/evidence_words.h"
#include "observer/model/finding.h"

namespace scout::cli::ev {

// hang (class absent or stuck), deadlock, crash: roots, wait-for chains, communicator states
// (observer/cli/evidence_waits.cc).
void hang(const obs::Finding& f, EvidenceText& t);
void deadlock(const obs::Finding& f, EvidenceText& t);
void crash(const obs::Finding& f, EvidenceText& t);

// desync (metadata or hang mismatch), sdc (receive or equivalent communicators), nan: which
// ranks voted what (observer/cli/evidence_votes.cc).
void desync(const obs::Finding& f, EvidenceText& t);
void sdc(const obs::Finding& f, EvidenceText& t);
void nan(const obs::Finding& f, EvidenceText& t);

// straggler (lateness series per communicator), slowlink (slow and normal channels)
// (observer/cli/evidence_timing.cc).
void straggler(const obs::Finding& f, EvidenceText& t);
void slowlink(const obs::Finding& f, EvidenceText& t);

// Shared by hang, deadlock, crash and desync: a list of wait edges under `title` ("none" when
// empty), and the *comm state* objects of the communicators involved.
void wait_edges(EvidenceText& t, const std::string& title, const nlohmann::json& edges, int depth = 0);
void comm_states(EvidenceText& t, const std::string& title, const nlohmann::json& comms, int depth = 0);
// "stalled: 20.0s without progress (hang timeout 10.0s); last progress at +1.000s" from an
// object holding stalled_ms, timeout_ms and optionally last_progress_ns.
std::string stalled(EvidenceText& t, const nlohmann::json& stalled_ms, const nlohmann::json& timeout_ms,
                    const nlohmann::json& last_progress_ns);

}  // namespace scout::cli::ev

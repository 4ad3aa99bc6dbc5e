// Whether a checkpoint may be named for a restart now (`scout ckpt latest`, `scout ckpt show`;
// docs/certification.md, "Restarting from a verified checkpoint"). What the store says is checked
// against the disk and the certificate chain at query time, because both can change after the
// verdict: a directory deleted by retention, a shard overwritten, a certificate edited.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "observer/ckpt/certificate.h"
#include "observer/ckpt/ckpt_store.h"
#include "observer/ckpt/states.h"

namespace scout::ckpt {

struct TrustContext {
  std::vector<CertificateRow> certs;  // the store's chain, by seq
  ChainCheck chain;                   // verify_chain over the certificate directory
  std::vector<FindingEvent> events;   // sdc, nan and desync findings known to the store
  int64_t now_ns = 0;
};

// The sdc, nan and desync findings the certifier noted in `st`, then those of the observer's store
// it has not noted yet (it may be behind, stopped, or dead): each finding once, by id.
std::vector<FindingEvent> known_finding_events(const CkptStore& st);

// Loads the context for the store `st` whose certificates are in `cert_dir`.
TrustContext trust_context(const CkptStore& st, const std::string& cert_dir, int64_t now_ns);

// "" when checkpoint `c` can be named for a restart; else why not, in words (names escaped):
//  - its path is not printable (it would be misread by a script);
//  - rejected, or (a candidate) a known sdc/nan/desync finding rejects it by the rule of
//    observer/ckpt/states.h, even if the observer has not said so yet;
//  - the directory is gone or its files differ from what was recorded when it completed
//    (observer/ckpt/manifest.h);
//  - verified: the certificate chain is broken, its certificate is missing, edited or differs from
//    the chain's, or the copy inside the checkpoint differs (check_certificate_of).
std::string restart_problem(const Checkpoint& c, const TrustContext& t);

}  // namespace scout::ckpt

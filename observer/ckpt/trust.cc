#include "observer/ckpt/trust.h"

#include "common/utf8.h"
#include "observer/ckpt/manifest.h"
#include "observer/ckpt/markers.h"

namespace scout::ckpt {

std::vector<FindingEvent> known_finding_events(const CkptStore& st) {
  std::vector<FindingEvent> events = st.finding_events();
  for (FindingEvent& e : st.store_finding_events()) {
    bool known = false;
    for (const FindingEvent& k : events) known |= k.id == e.id;
    if (!known) events.push_back(std::move(e));
  }
  return events;
}

TrustContext trust_context(const CkptStore& st, const std::string& cert_dir, int64_t now_ns) {
  TrustContext t;
  t.certs = st.certificates();
  std::vector<std::string> hashes;
  for (const CertificateRow& r : t.certs) hashes.push_back(r.sha256);
  t.chain = verify_chain(cert_dir, hashes);
  t.events = known_finding_events(st);
  t.now_ns = now_ns;
  return t;
}

std::string restart_problem(const Checkpoint& c, const TrustContext& t) {
  if (!plausible_name(c.path)) return "its path holds bytes a script would misread (" + printable(c.path) + ")";
  if (c.state == State::kRejected) return "rejected: " + printable(c.reason);
  if (c.state == State::kCandidate) {
    Checkpoint copy = c;
    if (reject_on_findings(copy, t.events, t.now_ns, t.now_ns)) return "a finding rejects it: " + copy.reason;
  }
  const std::string files = compare_manifest(c.path, c.manifest);
  if (!files.empty()) return files;
  if (c.state != State::kVerified) return "";
  if (!t.chain.intact) return "the certificate chain is broken: " + t.chain.problem;
  const CertificateRow* row = nullptr;
  for (const CertificateRow& r : t.certs)
    if (r.checkpoint_id == c.id) row = &r;
  if (row == nullptr) return "no certificate was recorded for it";
  std::string err;
  const nlohmann::json doc = read_certificate(row->file, &err);
  if (doc.is_discarded()) return "its certificate cannot be read: " + err;
  return check_certificate_of(c, doc, row->sha256);
}

}  // namespace scout::ckpt

// `scout ckpt list|show|latest` (docs/cli.md, "scout ckpt"; rules in docs/certification.md).
#include <algorithm>
#include <fstream>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "common/utf8.h"
#include "observer/ckpt/certificate.h"
#include "observer/ckpt/certifier.h"
#include "observer/ckpt/ckpt_store.h"
#include "observer/ckpt/trust.h"
#include "observer/cli/ckpt_words.h"
#include "observer/cli/common.h"
#include "observer/cli/format.h"
#include "observer/export/json.h"

namespace scout::cli {

namespace {

const ckpt::CertificateRow* certificate_of(const std::vector<ckpt::CertificateRow>& certs, int64_t id) {
  for (const auto& r : certs)
    if (r.checkpoint_id == id) return &r;
  return nullptr;
}

// Encodes with invalid bytes replaced (the strings in `j` are already valid: belt and braces).
std::string dump(const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

// Newest first: by step, then completion time.
bool newer(const ckpt::Checkpoint& a, const ckpt::Checkpoint& b) {
  return a.step != b.step ? a.step > b.step : a.completed_ns > b.completed_ns;
}

int list(const std::vector<ckpt::Checkpoint>& all, const std::vector<ckpt::CertificateRow>& certs, bool json,
         const CandidateContext& ctx, std::ostream& out) {
  if (json) {
    for (const auto& c : all) out << dump(exporter::checkpoint_json(c, certificate_of(certs, c.id))) << "\n";
    return kExitOk;
  }
  if (all.empty()) {
    out << "no checkpoints seen (is the observer watching the checkpoint directory? --ckpt-dir, SCOUT_CKPT_DIR)\n";
    return kExitOk;
  }
  size_t w = 4;
  for (const auto& c : all) w = std::max(w, printable(c.path).size());
  char line[256];
  std::snprintf(line, sizeof(line), "%4s  %-*s  %8s  %-9s  %-9s  %s\n", "ID", int(w), "PATH", "STEP", "FRAMEWORK",
                "STATE", "REASON");
  out << line;
  for (const auto& c : all) {
    const std::string path = printable(c.path);
    out << std::string(4 - std::min<size_t>(4, std::to_string(c.id).size()), ' ') << c.id << "  " << path
        << std::string(w - path.size(), ' ') << "  ";
    std::snprintf(line, sizeof(line), "%8lld  %-9s  %-9s  ", static_cast<long long>(c.step), c.framework.c_str(),
                  ckpt::to_string(c.state));
    out << line << (c.state == ckpt::State::kCandidate ? candidate_reason(c, ctx) : printable(c.reason)) << "\n";
  }
  return kExitOk;
}

}  // namespace

int cmd_ckpt(const std::string& store_path, const CkptOptions& o, std::ostream& out) {
  auto st = ckpt::CkptStore::open_reader(store_path);
  std::vector<ckpt::Checkpoint> all = st->checkpoints();
  const std::vector<ckpt::CertificateRow> certs = st->certificates();
  const std::string dir = ckpt::certificate_dir(store_path);
  if (o.action == "list") return list(all, certs, o.json, candidate_context(store_path, shm::wall_ns()), out);

  if (o.action == "latest") {
    // Newest first; each is re-checked now against the disk, the chain and the findings
    // (observer/ckpt/trust.h): one that fails is skipped with its reason on stderr, never named.
    std::sort(all.begin(), all.end(), newer);
    const int64_t now_ns = shm::wall_ns();
    const ckpt::TrustContext trust = ckpt::trust_context(*st, dir, now_ns);
    const CandidateContext ctx = candidate_context(store_path, now_ns);
    int candidates = 0, doomed = 0, rejected = 0, failed = 0;
    for (const auto& c : all) {
      const bool rejected_by_finding = !finding_rejection(c, ctx).empty();
      candidates += c.state == ckpt::State::kCandidate && !rejected_by_finding;
      doomed += rejected_by_finding;
      rejected += c.state == ckpt::State::kRejected;
      if (c.state == ckpt::State::kRejected) continue;
      if (o.verified && c.state != ckpt::State::kVerified) continue;
      const std::string problem = ckpt::restart_problem(c, trust);
      if (!problem.empty()) {
        failed += !rejected_by_finding;
        std::cerr << "scout: not naming " << printable(c.path) << " (" << ckpt::to_string(c.state) << "): " << problem
                  << "\n";
        continue;
      }
      out << c.path << "\n";
      return kExitOk;
    }
    std::cerr << "scout: no " << (o.verified ? "verified " : "") << "checkpoint: " << all.size() << " seen, "
              << candidates_summary(candidates, ctx) << ", ";
    if (doomed > 0) std::cerr << doomed << " candidate(s) a finding rejects, ";
    std::cerr << rejected << " rejected";
    if (failed > 0) std::cerr << ", " << failed << " not named (reasons above)";
    std::cerr << "\n";
    return 1;
  }

  // show PATH|ID
  const ckpt::Checkpoint* found = nullptr;
  for (const auto& c : all) {
    if (c.path == o.target || std::to_string(c.id) == o.target) found = &c;
  }
  if (!found)
    throw UsageError("no checkpoint '" + printable(o.target) + "' in " + printable(store_path) + " (scout ckpt list)");
  const ckpt::Checkpoint& c = *found;
  const ckpt::CertificateRow* cert = certificate_of(certs, c.id);
  const ckpt::TrustContext trust = ckpt::trust_context(*st, dir, shm::wall_ns());
  const ckpt::ChainCheck& chain = trust.chain;
  // What `latest` would say of it now (rejected ones are not restart points whatever their files).
  const std::string problem = c.state == ckpt::State::kRejected ? "" : ckpt::restart_problem(c, trust);
  std::string err;
  const nlohmann::json doc = cert ? ckpt::read_certificate(cert->file, &err) : nlohmann::json();
  const bool ok = chain.intact && problem.empty();
  if (o.json) {
    nlohmann::json j = exporter::checkpoint_json(c, cert);
    j["chain"] = {
        {"intact", chain.intact}, {"certificates", chain.certificates}, {"problem", utf8_clean(chain.problem)}};
    j["restart_problem"] = utf8_clean(problem);
    if (cert) j["certificate_json"] = doc;
    out << dump(j) << "\n";
    return ok ? kExitOk : 1;
  }
  out << "checkpoint " << c.id << ": " << printable(c.path) << "\n";
  out << "  framework " << printable(c.framework) << ", step " << c.step << ", completed " << fmt_utc(c.completed_ns)
      << "\n";
  out << "  state: " << ckpt::to_string(c.state);
  if (!c.reason.empty()) out << " (" << printable(c.reason) << ")";
  out << "\n";
  if (c.state == ckpt::State::kCandidate) out << "  clean check cycles after it so far: " << c.cycles.size() << "\n";
  if (c.manifest.present)
    out << "  files when it completed: " << c.manifest.files.size() << " (" << c.manifest.bytes << " bytes)"
        << (c.manifest.truncated ? ", more not recorded" : "") << "\n";
  if (c.state != ckpt::State::kRejected)
    out << "  restart from it now: " << (problem.empty() ? "yes" : "NO: " + problem) << "\n";
  if (cert) {
    out << "  certificate " << cert->seq << ": " << printable(cert->file) << "\n";
    if (doc.is_object()) {
      // An edited certificate may hold any types: read each field only when it has the right one.
      auto num = [&](const char* k) { return doc.contains(k) && doc[k].is_number() ? doc[k].get<double>() : 0.0; };
      const size_t cycles = doc.contains("cycles") && doc["cycles"].is_array() ? doc["cycles"].size() : 0;
      out << "    cycles " << cycles << ", comparisons " << int64_t(num("comparisons")) << ", communicators covered "
          << int64_t(num("communicators_covered")) << ", voters min " << int64_t(num("voters_min")) << " median "
          << num("voters_median") << ", bytes fingerprinted " << uint64_t(num("bytes_fingerprinted")) << "\n";
      const std::string sha =
          doc.contains("sha256") && doc["sha256"].is_string() ? doc["sha256"].get<std::string>() : "";
      out << "    sha256 " << printable(sha) << "\n";
    }
  }
  if (chain.intact)
    out << "  certificate chain: intact (" << chain.certificates << " certificates)\n";
  else
    out << "  certificate chain: BROKEN: " << printable(chain.problem) << "\n";
  return ok ? kExitOk : 1;
}

}  // namespace scout::cli

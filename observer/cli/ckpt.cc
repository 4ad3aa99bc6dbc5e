// `scout ckpt list|show|latest` (docs/cli.md, "scout ckpt"; rules in docs/certification.md).
#include <algorithm>
#include <fstream>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "observer/ckpt/certificate.h"
#include "observer/ckpt/certifier.h"
#include "observer/ckpt/ckpt_store.h"
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

// Newest first: by step, then completion time.
bool newer(const ckpt::Checkpoint& a, const ckpt::Checkpoint& b) {
  return a.step != b.step ? a.step > b.step : a.completed_ns > b.completed_ns;
}

std::vector<std::string> hashes(const std::vector<ckpt::CertificateRow>& certs) {
  std::vector<std::string> h;
  for (const auto& r : certs) h.push_back(r.sha256);
  return h;
}

int list(const std::vector<ckpt::Checkpoint>& all, const std::vector<ckpt::CertificateRow>& certs, bool json,
         const CandidateContext& ctx, std::ostream& out) {
  if (json) {
    for (const auto& c : all) out << exporter::checkpoint_json(c, certificate_of(certs, c.id)).dump() << "\n";
    return kExitOk;
  }
  if (all.empty()) {
    out << "no checkpoints seen (is the observer watching the checkpoint directory? --ckpt-dir, SCOUT_CKPT_DIR)\n";
    return kExitOk;
  }
  size_t w = 4;
  for (const auto& c : all) w = std::max(w, c.path.size());
  char line[256];
  std::snprintf(line, sizeof(line), "%4s  %-*s  %8s  %-9s  %-9s  %s\n", "ID", int(w), "PATH", "STEP", "FRAMEWORK",
                "STATE", "REASON");
  out << line;
  for (const auto& c : all) {
    out << std::string(4 - std::min<size_t>(4, std::to_string(c.id).size()), ' ') << c.id << "  " << c.path
        << std::string(w - c.path.size(), ' ') << "  ";
    std::snprintf(line, sizeof(line), "%8lld  %-9s  %-9s  ", static_cast<long long>(c.step), c.framework.c_str(),
                  ckpt::to_string(c.state));
    out << line << (c.state == ckpt::State::kCandidate ? candidate_reason(c, ctx) : c.reason) << "\n";
  }
  return kExitOk;
}

}  // namespace

int cmd_ckpt(const std::string& store_path, const CkptOptions& o, std::ostream& out) {
  auto st = ckpt::CkptStore::open_reader(store_path);
  std::vector<ckpt::Checkpoint> all = st->checkpoints();
  const std::vector<ckpt::CertificateRow> certs = st->certificates();
  const std::string dir = ckpt::certificate_dir(store_path);
  if (o.action == "list") return list(all, certs, o.json, candidate_context(store_path), out);

  if (o.action == "latest") {
    std::sort(all.begin(), all.end(), newer);
    int candidates = 0, rejected = 0;
    for (const auto& c : all) {
      if (c.state == ckpt::State::kVerified || (!o.verified && c.state == ckpt::State::kCandidate)) {
        if (c.state == ckpt::State::kVerified) {
          const ckpt::ChainCheck chain = ckpt::verify_chain(dir, hashes(certs));
          if (!chain.intact) {
            std::cerr << "scout: the certificate chain is broken, no checkpoint can be trusted from it: "
                      << chain.problem << "\n";
            return 1;
          }
        }
        out << c.path << "\n";
        return kExitOk;
      }
      candidates += c.state == ckpt::State::kCandidate;
      rejected += c.state == ckpt::State::kRejected;
    }
    std::cerr << "scout: no " << (o.verified ? "verified " : "") << "checkpoint: " << all.size() << " seen, "
              << candidates << " candidate(s) waiting for clean check cycles, " << rejected << " rejected\n";
    return 1;
  }

  // show PATH|ID
  const ckpt::Checkpoint* found = nullptr;
  for (const auto& c : all) {
    if (c.path == o.target || std::to_string(c.id) == o.target) found = &c;
  }
  if (!found) throw UsageError("no checkpoint '" + o.target + "' in " + store_path + " (scout ckpt list)");
  const ckpt::Checkpoint& c = *found;
  const ckpt::CertificateRow* cert = certificate_of(certs, c.id);
  const ckpt::ChainCheck chain = ckpt::verify_chain(dir, hashes(certs));
  if (o.json) {
    nlohmann::json j = exporter::checkpoint_json(c, cert);
    j["chain"] = {{"intact", chain.intact}, {"certificates", chain.certificates}, {"problem", chain.problem}};
    if (cert) {
      std::ifstream in(cert->file);
      j["certificate_json"] = nlohmann::json::parse(in, nullptr, false);
    }
    out << j.dump() << "\n";
    return chain.intact ? kExitOk : 1;
  }
  out << "checkpoint " << c.id << ": " << c.path << "\n";
  out << "  framework " << c.framework << ", step " << c.step << ", completed " << fmt_utc(c.completed_ns) << "\n";
  out << "  state: " << ckpt::to_string(c.state);
  if (!c.reason.empty()) out << " (" << c.reason << ")";
  out << "\n";
  if (c.state == ckpt::State::kCandidate) out << "  clean check cycles after it so far: " << c.cycles.size() << "\n";
  if (cert) {
    std::ifstream in(cert->file);
    nlohmann::json doc = nlohmann::json::parse(in, nullptr, false);
    out << "  certificate " << cert->seq << ": " << cert->file << "\n";
    if (doc.is_object()) {
      out << "    cycles " << doc.value("cycles", nlohmann::json::array()).size() << ", comparisons "
          << doc.value("comparisons", int64_t(0)) << ", communicators covered " << doc.value("communicators_covered", 0)
          << ", voters min " << doc.value("voters_min", 0) << " median " << doc.value("voters_median", 0.0)
          << ", bytes fingerprinted " << doc.value("bytes_fingerprinted", uint64_t(0)) << "\n";
      out << "    sha256 " << doc.value("sha256", "") << "\n";
    }
  }
  if (chain.intact)
    out << "  certificate chain: intact (" << chain.certificates << " certificates)\n";
  else
    out << "  certificate chain: BROKEN: " << chain.problem << "\n";
  return chain.intact ? kExitOk : 1;
}

}  // namespace scout::cli

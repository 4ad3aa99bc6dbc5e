// `scout explain ID`: one finding with its evidence in words.
#include <sstream>

#include "observer/cli/common.h"
#include "observer/cli/evidence.h"
#include "observer/cli/format.h"
#include "observer/cli/words.h"
#include "observer/export/snapshot.h"

namespace scout::cli {

std::string explain_text(const obs::Finding& f, int64_t origin, const std::vector<obs::RankInfo>* ranks) {
  std::ostringstream out;
  out << "finding #" << f.id << ": " << obs::to_string(f.kind) << ", " << obs::to_string(f.verdict) << ", "
      << (f.open ? "open" : "closed") << "\n";
  if (!f.summary.empty()) out << "summary: " << f.summary << "\n";
  if (std::string cause = cause_words(f); !cause.empty()) out << "cause: " << cause << "\n";
  if (f.suspects.empty()) {
    // Why nobody is named (docs/findings.md): votes without a strict majority, or a failure the
    // records cannot pin on a rank (a stuck collective, a slow communicator).
    const bool vote = f.kind == obs::FindingKind::kSdc || f.kind == obs::FindingKind::kDesync;
    out << "suspects: none named"
        << (f.verdict != obs::Verdict::kInconclusive ? ""
            : vote                                   ? " (inconclusive: no strict majority)"
                                                     : " (inconclusive: see the evidence)")
        << "\n";
  } else {
    out << (f.suspects.size() == 1 ? "suspect:" : "suspects:") << "\n";
    for (const auto& su : f.suspects) {
      out << "  " << suspect_words(su);
      if (su.comm_rank >= 0) out << ", comm rank " << su.comm_rank;
      if (ranks)
        for (const auto& r : *ranks)
          if (r.global_rank == su.global_rank && r.pid == su.pid && r.state == "dead") out << "; its process is dead";
      out << "\n";
    }
  }
  if (f.peer) {
    out << "peer: " << suspect_words(*f.peer);
    if (f.peer->comm_rank >= 0) out << ", comm rank " << f.peer->comm_rank;
    out << "\n";
  }
  if (f.comm_hash != 0) {
    out << "communicator: " << comm_words(f) << " (" << obs::hex64(f.comm_hash);
    if (f.comm_nranks > 0) out << ", " << f.comm_nranks << " ranks";
    out << ")\n";
  }
  if (f.key) out << "operation: " << key_words(f) << "\n";
  out << "first seen: " << fmt_utc(f.first_seen_ns) << " (" << fmt_rel(f.first_seen_ns, origin) << ")\n";
  out << "last seen: " << fmt_utc(f.last_seen_ns) << " (" << fmt_rel(f.last_seen_ns, origin) << ")\n";
  out << "evidence:\n" << render_evidence(f, origin, "  ");
  return out.str();
}

int cmd_explain(store::StoreReader& rd, int64_t id, bool json, std::ostream& out) {
  std::optional<obs::Finding> f = rd.finding(id);
  if (!f) throw UsageError("no finding with id " + std::to_string(id) + " in " + rd.path());
  if (json) {
    out << obs::to_json(*f).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return kExitOk;
  }
  exporter::Snapshot s;
  s.job = rd.job();
  s.findings = {*f};
  const std::vector<obs::RankInfo> ranks = rd.ranks();
  out << explain_text(*f, s.origin_ns(), &ranks);
  return kExitOk;
}

}  // namespace scout::cli

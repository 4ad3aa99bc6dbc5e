#include "observer/cli/words.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "observer/cli/format.h"
#include "observer/model/evidence.h"

namespace scout::cli {

std::string suspect_words(const obs::Suspect& s) {
  std::string out = s.global_rank >= 0 ? "rank " + std::to_string(s.global_rank) : "rank ?";
  std::vector<std::string> parts;
  if (!s.host.empty()) parts.push_back(s.host);
  if (s.pid > 0) parts.push_back("pid " + std::to_string(s.pid));
  if (!s.gpu.empty()) parts.push_back("GPU " + s.gpu);
  if (!parts.empty()) {
    out += " (";
    for (size_t i = 0; i < parts.size(); ++i) out += (i ? ", " : "") + parts[i];
    out += ")";
  }
  return out;
}

std::string suspect_ranks(const std::vector<obs::Suspect>& v) {
  std::vector<int> ranks;
  for (const auto& s : v) ranks.push_back(s.global_rank);
  return ranks.empty() ? "-" : fmt_ranges(ranks);
}

std::string comm_words(const obs::Finding& f) {
  if (f.comm_hash == 0) return "-";
  return f.comm_name.empty() ? obs::hex64(f.comm_hash) : f.comm_name;
}

std::string key_words(const obs::Finding& f) {
  if (!f.key) return "-";
  return f.key->func + " #" + std::to_string(f.key->seq);
}

namespace {

std::string ms_words(double ms) { return fmt_duration(static_cast<int64_t>(std::llround(ms * 1e6))); }

// A straggler's cause read from its evidence; nullopt for other kinds or without `cause`.
std::optional<obs::StragglerEvidence> straggler_cause(const obs::Finding& f) {
  if (f.kind != obs::FindingKind::kStraggler) return std::nullopt;
  obs::StragglerEvidence e;
  if (!obs::read_evidence(f.evidence, &e) || !e.cause) return std::nullopt;
  return e;
}

// Its median lateness in the finding's communicator (else the largest of its communicators).
double late_ms(const obs::Finding& f, const obs::StragglerEvidence& e) {
  double most = 0;
  for (const auto& c : e.comms) {
    if (f.comm_hash != 0 && c.comm.hash == obs::hex64(f.comm_hash)) return c.median_late_ms;
    most = std::max(most, c.median_late_ms);
  }
  return most;
}

std::string gemm_times(const obs::EvReplayCause& r) {
  std::string t;
  for (double x : r.ms.value_or(std::vector<double>{})) t += (t.empty() ? "" : ", ") + ms_words(x);
  return t;
}

}  // namespace

std::string cause_words(const obs::Finding& f) {
  std::optional<obs::StragglerEvidence> e = straggler_cause(f);
  if (!e) return "";
  const std::string cycle = e->replay ? "replay cycle " + std::to_string(e->replay->cycle) : "replay";
  const std::string late = "it arrives " + ms_words(late_ms(f, *e)) + " late (median)";
  if (*e->cause == "gpu") {
    std::string s = "its GPU: " + cycle + " found its GEMM time an outlier";
    if (e->replay && e->replay->ms && e->replay->median_ms)
      s = "its GPU: " + cycle + " ran " + e->replay->recipe.value_or("a GEMM") + " in " + gemm_times(*e->replay) +
          " vs " + ms_words(*e->replay->median_ms) + " median";
    return s;
  }
  if (*e->cause == "host")
    return "the host, input pipeline or launch path: " + cycle +
           " measured its GPU's GEMM time and found it normal; " + late;
  return "not known yet: no replay cycle has measured its GPU since it began; " + late;
}

std::string cause_brief(const obs::Finding& f) {
  std::optional<obs::StragglerEvidence> e = straggler_cause(f);
  if (!e) return "";
  if (*e->cause == "gpu") {
    if (e->replay && e->replay->ms && !e->replay->ms->empty() && e->replay->median_ms)
      return "cause gpu: GEMM " + ms_words(e->replay->ms->front()) + " vs " + ms_words(*e->replay->median_ms) +
             " median";
    return "cause gpu";
  }
  if (*e->cause == "host") return "cause host: GEMM normal, " + ms_words(late_ms(f, *e)) + " late";
  return "cause unknown yet";
}

}  // namespace scout::cli

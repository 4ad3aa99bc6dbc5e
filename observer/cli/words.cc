#include "observer/cli/words.h"

#include <algorithm>
#include <cmath>
#include <map>
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

std::string comm_state_shown(const obs::CommInfo& c, const std::vector<obs::RankInfo>& ranks) {
  if (c.state != "active" || c.global_ranks.empty()) return c.state;
  std::map<int, std::string> rank_state;
  for (const auto& r : ranks) rank_state[r.global_rank] = r.state;
  bool dead = false;
  for (int g : c.global_ranks) {
    auto it = rank_state.find(g);
    if (it == rank_state.end() || it->second == "running") return c.state;
    dead = dead || it->second == "dead";
  }
  return dead ? "dead" : c.state;
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

// "27.6ms", "27.6ms and 27.4ms (2 rounds)", "a, b and c (3 rounds)": its time per round.
std::string gemm_times(const obs::EvReplayCause& r) {
  const std::vector<double> ms = r.ms.value_or(std::vector<double>{});
  std::string t;
  for (size_t i = 0; i < ms.size(); ++i) t += (i == 0 ? "" : i + 1 == ms.size() ? " and " : ", ") + ms_words(ms[i]);
  if (ms.size() > 1) t += " (" + std::to_string(ms.size()) + " rounds)";
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
  if (*e->cause == "host") {
    if (e->replay && e->replay->ms && e->replay->median_ms)
      return "the host, input pipeline or launch path: " + cycle + " ran " + e->replay->recipe.value_or("a GEMM") +
             " on its GPU in " + gemm_times(*e->replay) + " vs " + ms_words(*e->replay->median_ms) +
             " median (normal); " + late;
    return "the host, input pipeline or launch path: " + cycle + " measured its GPU's GEMM time and found it normal; " +
           late;
  }
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
  if (*e->cause == "host") {
    if (e->replay && e->replay->ms && !e->replay->ms->empty() && e->replay->median_ms)
      return "cause host: GEMM " + ms_words(e->replay->ms->front()) + " vs " + ms_words(*e->replay->median_ms) +
             " median, " + ms_words(late_ms(f, *e)) + " late";
    return "cause host: GEMM normal, " + ms_words(late_ms(f, *e)) + " late";
  }
  return "cause unknown yet";
}

}  // namespace scout::cli

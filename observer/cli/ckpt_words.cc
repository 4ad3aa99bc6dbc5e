#include "observer/cli/ckpt_words.h"

#include <algorithm>
#include <cstdlib>

#include "observer/ckpt/ckpt_store.h"
#include "observer/ckpt/trust.h"
#include "observer/cli/format.h"
#include "observer/store/reader.h"
#include "scout/config.h"

namespace scout::cli {
namespace {

bool parse_i64(const std::string& s, int64_t* v) {
  if (s.empty() || s.size() > 19 || s.find_first_not_of("0123456789") != std::string::npos) return false;
  *v = std::strtoll(s.c_str(), nullptr, 10);
  return true;
}

std::string cycle_words(const CandidateContext& x) { return fmt_duration(x.cycle_ns); }

// " (a drill sets SCOUT_CHECK_CYCLE_S=1)" while the cycle is longer than a drill's 1 s: the
// value that shortens it, never the current one.
std::string setting(const CandidateContext& x) {
  return x.cycle_ns > 1'000'000'000 ? " (a drill sets SCOUT_CHECK_CYCLE_S=1)" : "";
}

}  // namespace

CandidateContext candidate_context(const std::string& store_path, int64_t now_ns) {
  CandidateContext x;
  x.now_ns = now_ns;
  const config::Config cfg = config::load();
  x.cycle_ns = int64_t(cfg.check_cycle_s * 1e9);
  x.k = int(cfg.ckpt_k);
  try {
    auto st = ckpt::CkptStore::open_reader(store_path);
    int64_t v = 0;
    if (auto m = st->meta("cycle_ns"); m && parse_i64(*m, &v) && v > 0) x.cycle_ns = v;
    if (auto m = st->meta("k"); m && parse_i64(*m, &v) && v > 0 && v <= 1000) x.k = int(v);
    x.events = ckpt::known_finding_events(*st);
  } catch (const std::exception&) {}
  try {
    auto rd = store::StoreReader::open(store_path);
    const auto ranks = rd->ranks();
    x.job_ended = !ranks.empty() &&
                  std::none_of(ranks.begin(), ranks.end(), [](const obs::RankInfo& r) { return r.state == "running"; });
  } catch (const std::exception&) {}
  return x;
}

std::string finding_rejection(const ckpt::Checkpoint& c, const CandidateContext& x) {
  if (c.state != ckpt::State::kCandidate) return "";
  ckpt::Checkpoint copy = c;
  return ckpt::reject_on_findings(copy, x.events, x.now_ns, x.now_ns) ? copy.reason : "";
}

std::string candidate_reason(const ckpt::Checkpoint& c, const CandidateContext& x) {
  if (const std::string why = finding_rejection(c, x); !why.empty())
    return "a finding rejects it: " + why +
           (x.job_ended ? " (the job ended before a check cycle recorded it)"
                        : " (recorded when the check cycle after the finding ends)");
  const int have = int(c.cycles.size());
  const std::string of = std::to_string(have) + " of " + std::to_string(x.k) + " clean check cycles";
  if (x.job_ended) return "cannot verify: the job ended after " + of + " of " + cycle_words(x) + setting(x);
  const int64_t left = int64_t(std::max(1, x.k - have)) * x.cycle_ns;
  return "waiting: " + of + "; verifies in " + fmt_duration(left) + " at the earliest" + setting(x);
}

std::string candidates_lines(int rejected, int others, const CandidateContext& x, const std::string& list_hint) {
  std::string out;
  if (rejected > 0)
    out += "  candidates: " + std::to_string(rejected) + " a finding rejects: ckpt latest never names " +
           (rejected == 1 ? "it" : "them") + " (" + list_hint + " says which)\n";
  if (others <= 0) return out;
  const std::string them = others == 1 ? "it" : "them";
  out += "  candidates: " + std::to_string(others) + " ";
  if (x.job_ended)
    out += "cannot verify: the job ended before " + std::to_string(x.k) + " clean check cycles of " + cycle_words(x) +
           " followed " + them;
  else
    out += "waiting for " + std::to_string(x.k) + " clean check cycles of " + cycle_words(x) + " after " + them;
  return out + setting(x) + "\n";
}

std::string candidates_summary(int n, const CandidateContext& x) {
  return std::to_string(n) + " candidate(s) " +
         (x.job_ended ? "that cannot verify: the job ended" : "waiting for clean check cycles");
}

}  // namespace scout::cli

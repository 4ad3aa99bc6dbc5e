#include "observer/cli/ckpt_words.h"

#include <algorithm>
#include <cstdlib>

#include "observer/ckpt/ckpt_store.h"
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

std::string setting(const CandidateContext& x) {
  return "SCOUT_CHECK_CYCLE_S=" + fmt_fixed(double(x.cycle_ns) / 1e9, x.cycle_ns % 1'000'000'000 ? 1 : 0);
}

}  // namespace

CandidateContext candidate_context(const std::string& store_path) {
  CandidateContext x;
  const config::Config cfg = config::load();
  x.cycle_ns = int64_t(cfg.check_cycle_s * 1e9);
  x.k = int(cfg.ckpt_k);
  try {
    auto st = ckpt::CkptStore::open_reader(store_path);
    int64_t v = 0;
    if (auto m = st->meta("cycle_ns"); m && parse_i64(*m, &v) && v > 0) x.cycle_ns = v;
    if (auto m = st->meta("k"); m && parse_i64(*m, &v) && v > 0 && v <= 1000) x.k = int(v);
  } catch (const std::exception&) {
  }
  try {
    auto rd = store::StoreReader::open(store_path);
    const auto ranks = rd->ranks();
    x.job_ended = !ranks.empty() && std::none_of(ranks.begin(), ranks.end(),
                                                 [](const obs::RankInfo& r) { return r.state == "running"; });
  } catch (const std::exception&) {
  }
  return x;
}

std::string candidate_reason(const ckpt::Checkpoint& c, const CandidateContext& x) {
  const int have = int(c.cycles.size());
  const std::string of = std::to_string(have) + " of " + std::to_string(x.k) + " clean check cycles";
  if (x.job_ended)
    return "cannot verify: the job ended after " + of + " of " + cycle_words(x) + " (" + setting(x) +
           "; a drill sets 1)";
  const int64_t left = int64_t(std::max(1, x.k - have)) * x.cycle_ns;
  return "waiting: " + of + "; verifies in " + fmt_duration(left) + " at the earliest (" + setting(x) +
         " shortens it)";
}

std::string candidates_words(int n, const CandidateContext& x) {
  const std::string them = n == 1 ? "it" : "them";
  if (x.job_ended)
    return "cannot verify: the job ended before " + std::to_string(x.k) + " clean check cycles of " + cycle_words(x) +
           " followed " + them + " (" + setting(x) + " shortens the cycles; a drill sets 1)";
  return "waiting for " + std::to_string(x.k) + " clean check cycles of " + cycle_words(x) + " after " + them +
         " (" + setting(x) + " shortens the cycles)";
}

}  // namespace scout::cli

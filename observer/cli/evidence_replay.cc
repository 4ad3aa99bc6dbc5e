// Evidence in words for what replay found (docs/findings.md: sdc "Replay", slowlink class link
// with source "replay", a straggler's cause): the checks that named a rank, the slow pair, and
// the GEMM timing behind a straggler's cause.
#include "observer/cli/evidence_kinds.h"

namespace scout::cli::ev {
namespace {

// What a replay check tells, in words (docs/replay.md, "Verdicts").
std::string check_words(const std::string& check) {
  if (check == "gemm-vote") return "its GEMM output is outside the strict majority of the GPUs of its class";
  if (check == "gemm-self") return "two runs of the same GEMM on its GPU gave different bits";
  if (check == "link") return "a payload sent to it arrived changed";
  if (check == "coll") return "its collective result differs from the expected one while others match";
  return check;
}

}  // namespace

// A gemm-vote ({"groups": [{"value", "voters"}], "majority", "outcome"}, replay/vote.h): one line
// per value.
std::vector<std::string> replay_vote_lines(const nlohmann::json& votes) {
  const nlohmann::json* groups = votes.is_object() && votes.contains("groups") ? &votes["groups"] : nullptr;
  if (!groups && votes.is_object() && !votes.empty()) {
    // gemm-self {"round0": .., "round1": ..}; link and coll {"expected": .., "got": .., ...}
    std::string line;
    for (auto it = votes.begin(); it != votes.end(); ++it) {
      if (it.value().is_structured()) return {text(votes)};
      std::string key = it.key();
      if (key.rfind("round", 0) == 0 && key.size() > 5) key = "round " + key.substr(5);
      line += (line.empty() ? "" : "; ") + key + " " + str(it.value());
    }
    return {line};
  }
  if (!groups || !groups->is_array() || groups->empty()) return {text(votes)};
  const nlohmann::json majority = votes.value("majority", nlohmann::json());
  std::vector<std::string> out;
  for (const auto& g : *groups) {
    if (!g.is_object() || !g.contains("voters") || !g["voters"].is_array() || !g.contains("value"))
      return {text(votes)};
    const nlohmann::json& v = g["voters"];
    std::string s = ranks(v) + " (" + std::to_string(v.size()) + "): " + str(g["value"]);
    if (!majority.is_null() && g["value"] == majority) s += " (majority)";
    out.push_back(s);
  }
  if (majority.is_null()) out.push_back("no strict majority");
  return out;
}

void replay_sdc(const obs::Finding& f, const obs::ReplaySdcEvidence& e, EvidenceText& t) {
  std::vector<int> members;
  for (const auto& g : e.gpus) members.push_back(g.global_rank);
  t.line("source: replay cycle " + std::to_string(e.cycle) + " (trigger " + e.trigger + ") on " +
         plural(e.gpus.size(), "GPU", "GPUs") + (members.empty() ? std::string() : " (" + ranks(members) + ")") +
         (e.last_cycle ? ", the first to name the rank; named again up to cycle " + std::to_string(*e.last_cycle)
                       : std::string()));
  t.line("GPU: " + e.gpu);
  t.line(e.checks.size() == 1 ? std::string("the check that named the rank:")
                              : std::to_string(e.checks.size()) + " checks named the rank:");
  for (const auto& c : e.checks) {
    std::string s = c.check + " " + c.recipe + ": " + check_words(c.check);
    if (c.peer) s += " (from rank " + std::to_string(*c.peer) + ")";
    t.line(s, 1);
    for (const std::string& v : replay_vote_lines(c.votes)) t.line(v, 2);
  }
  t.line("participants:");
  for (const auto& g : e.gpus) t.line("rank " + std::to_string(g.global_rank) + ": " + g.gpu, 1);
  // check, recipe and votes are the first check's (docs/findings.md, sdc "Replay"), shown in the
  // list above; a finding whose list is empty or does not start with them keeps them on their own.
  const bool first_shown = !e.checks.empty() && e.checks[0].check == e.check && e.checks[0].recipe == e.recipe &&
                           e.checks[0].votes == e.votes;
  if (!first_shown) {
    t.leave("votes");
    t.leave("check");
    t.leave("recipe");
  }
  (void)f;
}

void replay_slowlink(const obs::Finding& f, const obs::ReplaySlowLinkEvidence& e, EvidenceText& t) {
  (void)f;
  t.line("class: " + e.cls + " (one slow pair, found by replay cycle " + std::to_string(e.cycle) +
         "'s link sweep: one end is the suspect, the other the peer)");
  std::string rs;
  for (const auto& r : e.recipes) rs += (rs.empty() ? "" : ", ") + r;
  t.line("slow directions: " + rs);
  t.line("time: " + ms(e.ms) + " for the transfer, vs " + ms(e.median_ms) + " (median of the cycle's pairs)");
  t.line("thresholds: slow at " + num(e.thresholds.min_ratio) + "x the median and at least " + ms(e.thresholds.min_ms) +
         " more");
}

void replay_cause(const obs::StragglerEvidence& e, EvidenceText& t) {
  if (!e.cause) return;
  const std::string cycle = e.replay ? "replay cycle " + std::to_string(e.replay->cycle) : "replay";
  if (*e.cause == "gpu" && e.replay) {
    std::string times;
    for (double x : e.replay->ms.value_or(std::vector<double>{})) times += (times.empty() ? "" : ", ") + ms(x);
    t.line("cause: gpu (" + cycle + " found its GPU slow in " + e.replay->recipe.value_or("a GEMM") + ": " + times +
           " vs " + ms(e.replay->median_ms.value_or(0)) + " median)");
  } else if (*e.cause == "host") {
    t.line("cause: host (" + cycle +
           " measured its GPU's GEMM time and found it normal: the delay is in the host, input pipeline or "
           "launch path)");
  } else {
    t.line("cause: " + *e.cause + " (no replay cycle has measured its GPU since it began)");
    if (e.replay) t.leave("replay");
  }
}

}  // namespace scout::cli::ev

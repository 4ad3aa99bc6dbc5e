// `scout replay list` and `scout replay show`: the replay cycles the observer kept in the store
// (table replay_cycles; docs/replay.md "Cycles in the store", docs/cli.md "scout replay list").
#include <fmt/format.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "observer/cli/common.h"
#include "observer/cli/evidence_kinds.h"
#include "observer/cli/format.h"

namespace scout::cli {
namespace {

const nlohmann::json& member(const nlohmann::json& j, const char* key) {
  static const nlohmann::json kNull;
  return j.is_object() && j.contains(key) ? j[key] : kNull;
}

size_t count_of(const nlohmann::json& j, const char* key) {
  const nlohmann::json& v = member(j, key);
  return v.is_array() ? v.size() : 0;
}

std::string text_of(const nlohmann::json& j, const char* key) {
  const nlohmann::json& v = member(j, key);
  return v.is_string() ? v.get<std::string>() : std::string();
}

int64_t int_of(const nlohmann::json& j, const char* key, int64_t fallback) {
  const nlohmann::json& v = member(j, key);
  return v.is_number_integer() ? v.get<int64_t>() : fallback;
}

}  // namespace

std::string found_text(const obs::ReplayCycleRecord& c, bool with_error) {
  const nlohmann::json& v = member(c.detail, "verdict");
  std::vector<std::string> parts;
  auto ranks_of = [&](const char* key) {
    std::vector<int> r;
    const nlohmann::json& a = member(v, key);
    if (a.is_array())
      for (const auto& e : a)
        if (e.is_object() && int_of(e, "global_rank", -1) >= 0) r.push_back(int_of(e, "global_rank", -1));
    return r;
  };
  if (auto r = ranks_of("sdc"); !r.empty()) parts.push_back("sdc on " + fmt_ranges(r));
  if (auto r = ranks_of("slow_gpus"); !r.empty()) parts.push_back("slow GPU " + fmt_ranges(r));
  const nlohmann::json& pairs = member(v, "slow_pairs");
  if (pairs.is_array())
    for (const auto& p : pairs) {
      const nlohmann::json& r = member(p, "ranks");
      if (r.is_array() && r.size() == 2 && r[0].is_number_integer() && r[1].is_number_integer())
        parts.push_back(fmt::format("slow link {}-{}", r[0].get<int>(), r[1].get<int>()));
    }
  std::string err = text_of(c.detail, "error");
  if (with_error && !err.empty()) parts.push_back(err);
  if (parts.empty()) return "-";
  std::string s;
  for (const std::string& p : parts) s += (s.empty() ? "" : "; ") + p;
  return s;
}

std::string outcome_text(const obs::ReplayCycleRecord& c) { return obs::outcome_word(c); }

namespace {

nlohmann::json cycle_json(const obs::ReplayCycleRecord& c, bool with_detail) {
  nlohmann::json j = {{"id", c.id},
                      {"cycle", c.cycle},
                      {"trigger", c.trigger},
                      {"started_ns", c.started_ns},
                      {"ended_ns", c.ended_ns},
                      {"outcome", c.outcome},
                      {"backend", c.backend},
                      {"recipes", count_of(c.detail, "recipes")},
                      {"participants", count_of(c.detail, "participants")},
                      {"found", found_text(c)}};
  if (with_detail) j["detail"] = c.detail;
  return j;
}

std::string or_dash(const std::string& s) { return s.empty() ? "-" : s; }

std::string plural_of(size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

std::string ms_of(const nlohmann::json& ns) {
  return ns.is_number() && ns.get<double>() >= 0 ? fmt_fixed(ns.get<double>() / 1e6, 3) : std::string("-");
}

// One row per sample: which GPU ran what, its fingerprint against the expected one, its time.
std::string samples_table(const nlohmann::json& samples) {
  Table t;
  t.headers = {"RECIPE", "RANK", "GPU", "ROUND", "STATUS", "FINGERPRINT", "EXPECTED", "MS", "PEER"};
  t.right_align = {false, true, false, true, false, false, false, true, true};
  for (const auto& s : samples) {
    if (!s.is_object()) continue;
    std::string status = text_of(s, "status");
    if (!text_of(s, "reason").empty()) status += " (" + text_of(s, "reason") + ")";
    t.rows.push_back({text_of(s, "recipe"), std::to_string(int_of(s, "global_rank", -1)), text_of(s, "gpu"),
                      std::to_string(int_of(s, "round", 0)), status, or_dash(text_of(s, "fp")),
                      or_dash(text_of(s, "expected_fp")), ms_of(member(s, "ns")),
                      int_of(s, "peer", -1) >= 0 ? std::to_string(int_of(s, "peer", -1)) : "-"});
  }
  return t.render("    ");
}

}  // namespace

int cmd_replay_list(store::StoreReader& rd, bool json, std::ostream& out) {
  std::vector<obs::ReplayCycleRecord> cycles = rd.replay_cycles();
  if (json) {
    for (const auto& c : cycles)
      out << cycle_json(c, false).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return kExitOk;
  }
  if (cycles.empty()) {
    out << "no replay cycles in this store (replay off, no GPU known to the observer yet, or the job ran too "
           "briefly; docs/replay.md)\n";
    return kExitOk;
  }
  const int64_t origin = cycles.front().started_ns;
  Table t;
  t.headers = {"ID", "CYCLE", "TRIGGER", "STARTED", "TOOK", "BACKEND", "OUTCOME", "RECIPES", "GPUS", "FOUND"};
  t.right_align = {true, true, false, false, true, false, false, true, true, false};
  for (const auto& c : cycles)
    t.rows.push_back({std::to_string(c.id), std::to_string(c.cycle), c.trigger, fmt_rel(c.started_ns, origin),
                      c.ended_ns >= c.started_ns ? fmt_duration(c.ended_ns - c.started_ns) : "-",
                      c.backend.empty() ? "-" : c.backend, outcome_text(c),
                      std::to_string(count_of(c.detail, "recipes")), std::to_string(count_of(c.detail, "participants")),
                      found_text(c)});
  out << cycles.size() << " replay cycle(s), the first at " << fmt_utc(origin) << " (STARTED is relative to it)\n";
  out << t.render();
  return kExitOk;
}

int cmd_replay_show(store::StoreReader& rd, const ReplayShowOptions& o, std::ostream& out) {
  for (const obs::ReplayCycleRecord& c : rd.replay_cycles())
    if (c.id == o.id) return print_replay_cycle(c, o.json, o.samples, o.selector, out);
  throw UsageError(fmt::format("no replay cycle with id {} in this store (scout replay list)", o.id));
}

int print_replay_cycle(const obs::ReplayCycleRecord& c, bool json, bool samples, const std::string& selector,
                       std::ostream& out) {
  if (json) {
    out << cycle_json(c, true).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return kExitOk;
  }
  // The summary: what it found, the error, the counts, the recipes that did not pass and the sdc
  // verdicts with their votes (docs/cli.md, "scout replay show").
  out << fmt::format("replay cycle {} (id {}): trigger {}, {}, backend {}\n", c.cycle, c.id, c.trigger, outcome_text(c),
                     c.backend.empty() ? "-" : c.backend);
  out << fmt::format("  started {}, took {}\n", fmt_utc(c.started_ns),
                     c.ended_ns >= c.started_ns ? fmt_duration(c.ended_ns - c.started_ns) : "-");
  out << "  found: " << found_text(c, false) << "\n";
  if (std::string err = text_of(c.detail, "error"); !err.empty()) out << "  error: " << err << "\n";
  const nlohmann::json& gpus = member(c.detail, "gpus");
  const nlohmann::json& verdict = member(c.detail, "verdict");
  const nlohmann::json& recipes = member(verdict, "recipes");
  std::map<std::string, int> by_outcome;
  std::vector<const nlohmann::json*> not_passed;
  if (recipes.is_array())
    for (const auto& r : recipes)
      if (r.is_object()) {
        by_outcome[text_of(r, "outcome")]++;
        if (text_of(r, "outcome") != "pass") not_passed.push_back(&r);
      }
  size_t ready = 0;
  if (gpus.is_array())
    for (const auto& g : gpus) ready += member(g, "ready") == true;
  std::string counts = "  recipes: " + std::to_string(count_of(c.detail, "recipes")) + " asked";
  if (!by_outcome.empty()) {
    std::string parts;
    for (const auto& [k, n] : by_outcome) parts += (parts.empty() ? "" : ", ") + std::to_string(n) + " " + k;
    counts += " (" + parts + ")";
  }
  counts += "; GPUs: " + std::to_string(count_of(c.detail, "participants"));
  if (gpus.is_array() && !gpus.empty())
    counts += ", " + std::to_string(ready) + " of " + std::to_string(gpus.size()) + " ready";
  out << counts << "\n";
  if (!samples && !not_passed.empty()) {
    Table t;
    t.headers = {"RECIPE", "OUTCOME", "REASON"};
    for (const nlohmann::json* r : not_passed)
      t.rows.push_back({text_of(*r, "recipe"), text_of(*r, "outcome"), or_dash(text_of(*r, "reason"))});
    out << "  recipes that did not pass:\n" << t.render("    ");
  }
  const nlohmann::json& sdc = member(verdict, "sdc");
  if (sdc.is_array())
    for (const auto& v : sdc)
      if (v.is_object()) {
        std::string votes;
        for (const std::string& l : ev::replay_vote_lines(member(v, "votes"))) votes += (votes.empty() ? "" : "; ") + l;
        out << fmt::format("  sdc: rank {} ({}) {} in {}{}: {}\n", int_of(v, "global_rank", -1), text_of(v, "gpu"),
                           text_of(v, "check"), text_of(v, "recipe"),
                           member(v, "peer").is_number_integer()
                               ? fmt::format(" from rank {}", member(v, "peer").get<int>())
                               : std::string(),
                           votes);
      }
  const nlohmann::json& all_samples = member(c.detail, "samples");
  if (!samples) {
    if ((gpus.is_array() && !gpus.empty()) || (recipes.is_array() && !recipes.empty()) ||
        (all_samples.is_array() && !all_samples.empty()))
      out << "  the GPUs, every recipe and " << plural_of(count_of(c.detail, "samples"), "sample", "samples") << ": "
          << program_name() << " replay show " << c.id << (selector.empty() ? "" : " " + selector) << " --samples\n";
    return kExitOk;
  }
  if (gpus.is_array() && !gpus.empty()) {
    Table t;
    t.headers = {"RANK", "GPU", "MODEL", "SMS", "LIBRARIES", "READY"};
    t.right_align = {true, false, false, true, false, false};
    for (const auto& g : gpus) {
      if (!g.is_object()) continue;
      std::string ok = member(g, "ready") == true ? "yes" : "no (" + text_of(g, "reason") + ")";
      t.rows.push_back({std::to_string(int_of(g, "global_rank", -1)), text_of(g, "gpu"), text_of(g, "model"),
                        std::to_string(int_of(g, "sm_count", 0)), text_of(g, "libs"), ok});
    }
    out << "  GPUs (readiness contract):\n" << t.render("    ");
  }
  if (recipes.is_array() && !recipes.empty()) {
    Table t;
    t.headers = {"RECIPE", "OUTCOME", "REASON"};
    for (const auto& r : recipes)
      if (r.is_object()) t.rows.push_back({text_of(r, "recipe"), text_of(r, "outcome"), or_dash(text_of(r, "reason"))});
    out << "  recipes:\n" << t.render("    ");
  }
  if (all_samples.is_array() && !all_samples.empty()) out << "  samples (times in ms):\n" << samples_table(all_samples);
  return kExitOk;
}

}  // namespace scout::cli

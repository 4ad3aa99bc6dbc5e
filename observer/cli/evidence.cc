#include "observer/cli/evidence.h"

#include <cmath>
#include <type_traits>

#include "observer/cli/evidence_kinds.h"
#include "observer/cli/format.h"

namespace scout::cli {
namespace {

// *_ns integers at or above this are wall-clock instants (after 2001-09-09); smaller ones are
// durations.
constexpr int64_t kInstantThresholdNs = 1000000000000000000;

bool ends_with(const std::string& s, const char* suffix) {
  std::string x(suffix);
  return s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
}

bool all_scalars(const nlohmann::json& v) {
  for (const auto& e : v) {
    if (!e.is_primitive()) return false;
  }
  return true;
}

std::string scalar_text(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "-";
  return v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// A number under a key ending in _ns or _ms, in words; "" when the key has no time unit.
std::string time_words(const std::string& key, const nlohmann::json& v, int64_t origin) {
  if (!v.is_number()) return "";
  if (ends_with(key, "_ns")) {
    int64_t ns = v.is_number_integer() ? v.get<int64_t>() : static_cast<int64_t>(v.get<double>());
    return ns >= kInstantThresholdNs ? fmt_rel(ns, origin) : fmt_duration(ns);
  }
  if (ends_with(key, "_ms")) return fmt_duration(static_cast<int64_t>(std::llround(v.get<double>() * 1e6)));
  return "";
}

std::string value_text(const std::string& key, const nlohmann::json& v, int64_t origin) {
  std::string s = scalar_text(v);
  std::string t = time_words(key, v, origin);
  if (!t.empty()) s += " (" + t + ")";
  return s;
}

// {"hash": "0x..", "name": "dp", ...} -> "dp (0x..)".
bool comm_text(const nlohmann::json& v, std::string* out) {
  if (!v.is_object() || !v.contains("hash")) return false;
  std::string hash = scalar_text(v["hash"]);
  std::string name = v.contains("name") ? scalar_text(v["name"]) : "";
  *out = name.empty() || name == "-" ? hash : name + " (" + hash + ")";
  return true;
}

// {"func": "AllReduce", "seq": 40} -> "AllReduce #40" (+ "(comm rank 0 -> 1)" for p2p).
bool op_text(const nlohmann::json& v, std::string* out) {
  if (!v.is_object() || !v.contains("func") || !v.contains("seq")) return false;
  *out = scalar_text(v["func"]) + " #" + scalar_text(v["seq"]);
  if (v.contains("src") && v.contains("dst")) {
    *out += " (comm rank " + scalar_text(v["src"]) + " -> " + scalar_text(v["dst"]) + ")";
  }
  return true;
}

// Lists of ranks (sorted, distinct integers under a key naming ranks) are compacted: "0-3,5".
std::string list_text(const std::string& key, const nlohmann::json& arr, int64_t origin) {
  if (arr.empty()) return "(none)";
  bool ints = key.find("rank") != std::string::npos;
  std::vector<int> v;
  for (const auto& e : arr) {
    ints = ints && e.is_number_integer() && std::llabs(e.get<int64_t>()) < 1000000000;
    if (ints) v.push_back(static_cast<int>(e.get<int64_t>()));
  }
  for (size_t i = 1; ints && i < v.size(); ++i) ints = v[i] > v[i - 1];
  if (ints && v.size() > 2) return fmt_ranges(v);
  std::string out;
  for (size_t i = 0; i < arr.size(); ++i) {
    std::string t = time_words(key, arr[i], origin);
    out += (i ? ", " : "") + (t.empty() ? scalar_text(arr[i]) : t);
  }
  return out;
}

// A vote group {"value": V, "ranks": [...]} -> "ranks 0-4,6-7 (7): V".
bool vote_text(const nlohmann::json& g, std::string* out) {
  if (!g.is_object() || !g.contains("ranks") || !g["ranks"].is_array() || !g.contains("value")) { return false; }
  const auto& ranks = g["ranks"];
  std::string value;
  if (g["value"].is_null()) {
    value = "(no operation)";
  } else if (!op_text(g["value"], &value)) {
    value = g["value"].is_primitive() ? scalar_text(g["value"])
                                      : g["value"].dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  *out = (ranks.size() == 1 ? "rank " : "ranks ") + list_text("ranks", ranks, 0) + " (" + std::to_string(ranks.size()) +
         "): " + value;
  return true;
}

// A wait-for edge {"rank": a, "waits_for": b, "comm": C, "op": O, "why": W}
//   -> "rank a waits for rank b in C O (W)".
bool edge_text(const nlohmann::json& e, std::string* out) {
  if (!e.is_object() || !e.contains("rank") || !e.contains("waits_for")) return false;
  *out = "rank " + scalar_text(e["rank"]) + " waits for rank " + scalar_text(e["waits_for"]);
  std::string c, o;
  if (e.contains("comm")) {
    if (!comm_text(e["comm"], &c)) c = scalar_text(e["comm"]);
    *out += " in " + c;
  }
  if (e.contains("op")) {
    if (!op_text(e["op"], &o)) o = scalar_text(e["op"]);
    *out += " " + o;
  }
  if (e.contains("why") && e["why"].is_string() && !e["why"].get<std::string>().empty()) {
    *out += " (" + e["why"].get<std::string>() + ")";
  }
  return true;
}

void render(const nlohmann::json& j, int64_t origin, const std::string& indent, std::string* out);

void render_entry(const std::string& key, const nlohmann::json& v, int64_t origin, const std::string& indent,
                  std::string* out) {
  std::string text;
  if ((key == "comm" && comm_text(v, &text)) || (key == "op" && op_text(v, &text))) {
    *out += indent + key + ": " + text + "\n";
    return;
  }
  if (v.is_array() && !v.empty() && !all_scalars(v)) {
    // Lists of votes or wait-for edges: one sentence per element.
    std::vector<std::string> lines;
    for (const auto& e : v) {
      if (!vote_text(e, &text) && !edge_text(e, &text)) break;
      lines.push_back(text);
    }
    if (lines.size() == v.size()) {
      *out += indent + key + ":\n";
      for (const auto& l : lines) *out += indent + "  " + l + "\n";
      return;
    }
  }
  if (v.is_primitive()) {
    *out += indent + key + ": " + value_text(key, v, origin) + "\n";
  } else if (v.is_array() && all_scalars(v)) {
    *out += indent + key + ": " + list_text(key, v, origin) + "\n";
  } else if (v.empty()) {
    *out += indent + key + ": (none)\n";
  } else {
    *out += indent + key + ":\n";
    render(v, origin, indent + "  ", out);
  }
}

void render(const nlohmann::json& j, int64_t origin, const std::string& indent, std::string* out) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) render_entry(it.key(), it.value(), origin, indent, out);
    return;
  }
  if (!j.is_array()) {
    *out += indent + scalar_text(j) + "\n";
    return;
  }
  for (const auto& e : j) {
    if (e.is_primitive()) {
      *out += indent + "- " + scalar_text(e) + "\n";
    } else if (e.is_object() && all_scalars(e)) {
      std::string line;
      for (auto it = e.begin(); it != e.end(); ++it) {
        line += (line.empty() ? "" : ", ") + it.key() + "=" + value_text(it.key(), it.value(), origin);
      }
      *out += indent + "- " + (line.empty() ? "(empty)" : line) + "\n";
    } else {
      // An object with nested parts: its first line after "- ", the rest aligned under it.
      std::string sub;
      render(e, origin, indent + "  ", &sub);
      if (sub.size() > indent.size() + 2) sub.replace(indent.size(), 2, "- ");
      *out += sub;
    }
  }
}

}  // namespace

std::string render_json_generic(const nlohmann::json& j, int64_t origin_ns, const std::string& indent) {
  std::string out;
  render(j, origin_ns, indent, &out);
  return out;
}

std::string render_generic_entry(const std::string& key, const nlohmann::json& value, int64_t origin_ns,
                                 const std::string& indent) {
  std::string out;
  render_entry(key, value, origin_ns, indent, &out);
  return out;
}

namespace {

// Renders f.evidence with `kind` when it reads as struct E (a hang also needs its roots), else
// generically.
template <class E>
std::string typed(const obs::Finding& f, void (*kind)(const obs::Finding&, const E&, ev::EvidenceText&),
                  int64_t origin_ns, const std::string& indent) {
  E e;
  bool ok = obs::read_evidence(f.evidence, &e);
  if constexpr (std::is_same_v<E, obs::HangEvidence>) ok = ok && e.root.has_value();
  if (!ok) return render_json_generic(f.evidence, origin_ns, indent);
  ev::EvidenceText t(f.evidence, obs::evidence_keys<E>(), origin_ns, indent);
  kind(f, e, t);
  return t.finish();
}

}  // namespace

std::string render_evidence(const obs::Finding& f, int64_t origin_ns, const std::string& indent) {
  const nlohmann::json& e = f.evidence;
  if (e.is_null() || (e.is_object() && e.empty())) return indent + "(no evidence recorded)\n";
  // Evidence of the detectors (docs/findings.md; cross-node findings are decided by the same
  // detectors on the leader); anything of another shape is rendered by shape.
  if (!e.is_object()) { return render_json_generic(e, origin_ns, indent); }
  using K = obs::FindingKind;
  const bool replay = e.contains("source") && e["source"] == "replay";
  if (replay && f.kind == K::kSdc) return typed<obs::ReplaySdcEvidence>(f, ev::replay_sdc, origin_ns, indent);
  if (replay && f.kind == K::kSlowLink)
    return typed<obs::ReplaySlowLinkEvidence>(f, ev::replay_slowlink, origin_ns, indent);
  switch (f.kind) {
    case K::kHang: return typed<obs::HangEvidence>(f, ev::hang, origin_ns, indent);
    case K::kDeadlock: return typed<obs::DeadlockEvidence>(f, ev::deadlock, origin_ns, indent);
    case K::kCrash: return typed<obs::CrashEvidence>(f, ev::crash, origin_ns, indent);
    case K::kDesync: return typed<obs::DesyncEvidence>(f, ev::desync, origin_ns, indent);
    case K::kSdc: return typed<obs::SdcEvidence>(f, ev::sdc, origin_ns, indent);
    case K::kNan: return typed<obs::NanEvidence>(f, ev::nan, origin_ns, indent);
    case K::kStraggler: return typed<obs::StragglerEvidence>(f, ev::straggler, origin_ns, indent);
    case K::kSlowLink: return typed<obs::SlowLinkEvidence>(f, ev::slowlink, origin_ns, indent);
    case K::kStall: return typed<obs::StallEvidence>(f, ev::stall, origin_ns, indent);
  }
  return render_json_generic(e, origin_ns, indent);
}

}  // namespace scout::cli

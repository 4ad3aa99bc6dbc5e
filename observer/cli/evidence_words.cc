#include "observer/cli/evidence_words.h"

#include <cmath>
#include <cstdio>
#include <vector>

#include "observer/cli/evidence.h"
#include "observer/cli/format.h"

namespace scout::cli::ev {
namespace {

const nlohmann::json kNull;

bool is_int(const nlohmann::json& v) { return v.is_number_integer() && std::llabs(v.get<int64_t>()) < (1ll << 31); }

}  // namespace

const nlohmann::json& at(const nlohmann::json& o, const char* key) {
  if (!o.is_object()) return kNull;
  auto it = o.find(key);
  return it == o.end() ? kNull : *it;
}

std::string str(const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : text(v); }

std::string text(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "-";
  return v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string comm(const nlohmann::json& c) {
  if (!c.is_object() || !c.contains("hash")) return text(c);
  std::string hash = text(c["hash"]);
  std::string name = c.contains("name") && c["name"].is_string() ? c["name"].get<std::string>() : "";
  return name.empty() ? hash : name + " (" + hash + ")";
}

std::string op(const nlohmann::json& o) {
  if (o.is_null()) return "none";
  if (!o.is_object() || !o.contains("func") || !o.contains("seq")) return text(o);
  std::string s = text(o["func"]) + " #" + text(o["seq"]);
  if (o.contains("src") && o.contains("dst")) { s += " (comm rank " + text(o["src"]) + " -> " + text(o["dst"]) + ")"; }
  return s;
}

std::string comm_op(const nlohmann::json& c, const nlohmann::json& o) { return comm(c) + " " + op(o); }

size_t count(const nlohmann::json& list) { return list.is_array() ? list.size() : 0; }

std::string rank_list(const nlohmann::json& list) {
  if (!list.is_array()) return text(list);
  if (list.empty()) return "-";
  std::vector<int> v;
  for (const auto& e : list) {
    if (!is_int(e)) return list.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    v.push_back(static_cast<int>(e.get<int64_t>()));
  }
  return fmt_ranges(v);
}

std::string ranks(const nlohmann::json& list) {
  if (!list.is_array()) return "rank " + text(list);
  if (list.empty()) return "no rank";
  return (list.size() == 1 ? "rank " : "ranks ") + rank_list(list);
}

std::string ms(const nlohmann::json& v) {
  if (!v.is_number()) return text(v);
  return fmt_duration(static_cast<int64_t>(std::llround(v.get<double>() * 1e6)));
}

std::string num(const nlohmann::json& v) {
  if (!v.is_number()) return text(v);
  if (v.is_number_integer()) return v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  double d = v.get<double>();
  char buf[64];
  std::snprintf(buf, sizeof(buf), std::fabs(d) >= 10 ? "%.1f" : "%.2f", d);
  std::string s = buf;
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s;
}

std::string plural(size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

std::string why(const std::string& w, const std::string& rank) {
  if (w == "absent") return rank + " never enqueued it";
  if (w == "not-started") return rank + " enqueued it but its GPU has not started it (its stream is busy elsewhere)";
  if (w == "dead") return rank + "'s process died before completing it";
  if (w == "mismatch") return rank + " is in a different collective";
  return rank + ": " + w;
}

std::string edge(const nlohmann::json& e) {
  if (!e.is_object() || !e.contains("rank") || !e.contains("waits_for")) return text(e);
  std::string other = "rank " + text(e["waits_for"]);
  std::string s = "rank " + text(e["rank"]) + " waits for " + other;
  if (e.contains("comm") || e.contains("op")) {
    s += " in " + comm_op(e.contains("comm") ? e["comm"] : kNull, e.contains("op") ? e["op"] : kNull);
  }
  if (e.contains("why") && e["why"].is_string()) s += ": " + why(e["why"].get<std::string>(), other);
  return s;
}

EvidenceText::EvidenceText(const nlohmann::json& evidence, const std::vector<std::string>& shown, int64_t origin_ns,
                           std::string indent)
    : ev_(evidence), shown_(shown.begin(), shown.end()), origin_(origin_ns), indent_(std::move(indent)) {}

void EvidenceText::line(const std::string& text, int depth) {
  out_ += indent_ + std::string(2 * static_cast<size_t>(depth), ' ') + text + "\n";
}

std::string EvidenceText::when(int64_t ns) const { return fmt_rel(ns, origin_); }

std::string EvidenceText::finish() {
  if (ev_.is_object()) {
    for (auto it = ev_.begin(); it != ev_.end(); ++it) {
      if (!shown_.count(it.key())) out_ += render_generic_entry(it.key(), it.value(), origin_, indent_);
    }
  }
  return out_;
}

}  // namespace scout::cli::ev

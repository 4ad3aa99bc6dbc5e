#include "observer/cli/evidence.h"

#include "observer/cli/format.h"

namespace scout::cli {
namespace {

// Times after 2001-09-09 in ns are wall-clock instants; smaller *_ns values are durations.
constexpr int64_t kInstantThresholdNs = 1000000000000000000;

bool is_scalar(const nlohmann::json& v) { return v.is_primitive(); }

bool all_scalars(const nlohmann::json& v) {
  for (const auto& e : v) {
    if (!is_scalar(e)) return false;
  }
  return true;
}

bool ends_with(const std::string& s, const char* suffix) {
  std::string x(suffix);
  return s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
}

std::string scalar_text(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "-";
  return v.dump();
}

// "1500000 (1.50ms)" for durations, "1735... (+12.000s)" for instants.
std::string value_text(const std::string& key, const nlohmann::json& v, int64_t origin) {
  std::string s = scalar_text(v);
  if (ends_with(key, "_ns") && v.is_number_integer()) {
    int64_t ns = v.get<int64_t>();
    if (ns >= kInstantThresholdNs) {
      s += " (" + fmt_rel(ns, origin) + ")";
    } else {
      s += " (" + fmt_duration(ns) + ")";
    }
  }
  return s;
}

// Lists under a key naming ranks ("ranks", "voters_ranks", ...) that are sorted and distinct are
// compacted ("0-3,5"); other lists (series) are printed in full.
std::string list_text(const std::string& key, const nlohmann::json& arr) {
  bool ints = key.find("rank") != std::string::npos && !arr.empty();
  for (const auto& e : arr) ints = ints && e.is_number_integer();
  if (ints && arr.size() > 2) {
    std::vector<int> v;
    bool fits = true;
    for (const auto& e : arr) {
      int64_t x = e.get<int64_t>();
      fits = fits && x > -1000000000 && x < 1000000000;
      v.push_back(static_cast<int>(x));
    }
    bool sorted = true;
    for (size_t i = 1; i < v.size(); ++i) sorted = sorted && v[i] > v[i - 1];
    if (fits && sorted) return fmt_ranges(v);
  }
  std::string out;
  for (size_t i = 0; i < arr.size(); ++i) out += (i ? ", " : "") + scalar_text(arr[i]);
  return out.empty() ? "(none)" : out;
}

void generic(const nlohmann::json& j, int64_t origin, const std::string& indent, std::string* out);

void generic_entry(const std::string& key, const nlohmann::json& v, int64_t origin,
                   const std::string& indent, std::string* out) {
  if (is_scalar(v)) {
    *out += indent + key + ": " + value_text(key, v, origin) + "\n";
  } else if (v.is_array() && all_scalars(v)) {
    *out += indent + key + ": " + list_text(key, v) + "\n";
  } else if (v.empty()) {
    *out += indent + key + ": (none)\n";
  } else {
    *out += indent + key + ":\n";
    generic(v, origin, indent + "  ", out);
  }
}

void generic(const nlohmann::json& j, int64_t origin, const std::string& indent, std::string* out) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) generic_entry(it.key(), it.value(), origin, indent, out);
  } else if (j.is_array()) {
    for (const auto& e : j) {
      if (e.is_object() && all_scalars(e)) {
        std::string line;
        for (auto it = e.begin(); it != e.end(); ++it) {
          line += (line.empty() ? "" : ", ") + it.key() + "=" + value_text(it.key(), it.value(), origin);
        }
        *out += indent + "- " + (line.empty() ? "(empty)" : line) + "\n";
      } else if (is_scalar(e)) {
        *out += indent + "- " + scalar_text(e) + "\n";
      } else {
        *out += indent + "-\n";
        generic(e, origin, indent + "  ", out);
      }
    }
  } else {
    *out += indent + scalar_text(j) + "\n";
  }
}

}  // namespace

std::string render_json_generic(const nlohmann::json& j, int64_t origin_ns, const std::string& indent) {
  std::string out;
  generic(j, origin_ns, indent, &out);
  return out;
}

std::string render_evidence(const obs::Finding& f, int64_t origin_ns, const std::string& indent) {
  if (f.evidence.is_null() || (f.evidence.is_object() && f.evidence.empty())) {
    return indent + "(no evidence recorded)\n";
  }
  return render_json_generic(f.evidence, origin_ns, indent);
}

}  // namespace scout::cli

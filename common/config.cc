// Implementation of the SCOUT_* registry (include/scout/config.h).
#include "scout/config.h"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

namespace scout::config {
namespace {

constexpr VarInfo kRegistry[] = {
#define SCOUT_VAR(field, name, type, def, min, max, section, doc) \
  {name, Type::type, def, double(min), double(max), section, doc},
#include "scout/config_vars.def"
#undef SCOUT_VAR
};

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t' || s[b] == '\n' || s[b] == '\r')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\n' || s[e - 1] == '\r')) --e;
  return std::string(s.substr(b, e - b));
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return s;
}

std::string fmt_number(double v) {
  if (v == std::floor(v) && std::fabs(v) < 9.007199254740992e15) { return std::to_string(static_cast<long long>(v)); }
  std::string s = std::to_string(v);
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

std::string range_text(const VarInfo& v) {
  switch (v.type) {
    case Type::Bool: return "0 or 1";
    case Type::Int:
    case Type::Size:
    case Type::Double: return fmt_number(v.min) + " .. " + fmt_number(v.max);
    case Type::String:
    case Type::Path: return "";
  }
  return "";
}

const char* type_name(Type t) {
  switch (t) {
    case Type::Bool: return "bool";
    case Type::Int: return "int";
    case Type::Size: return "size";
    case Type::Double: return "float";
    case Type::String: return "string";
    case Type::Path: return "path";
  }
  return "?";
}

}  // namespace

std::span<const VarInfo> registry() { return kRegistry; }

const VarInfo* find(std::string_view name) {
  for (const VarInfo& v : kRegistry) {
    if (name == v.name) return &v;
  }
  return nullptr;
}

bool parse_bool(std::string_view text, bool* out, std::string* error) {
  std::string t = lower(trim(text));
  if (t == "1" || t == "true" || t == "yes" || t == "on") {
    *out = true;
    return true;
  }
  if (t == "0" || t == "false" || t == "no" || t == "off") {
    *out = false;
    return true;
  }
  if (error) *error = "expected 0/1, true/false, yes/no or on/off";
  return false;
}

bool parse_int(std::string_view text, double min, double max, int64_t* out, std::string* error) {
  std::string t = trim(text);
  if (t.empty()) {
    if (error) *error = "empty";
    return false;
  }
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(t.c_str(), &end, 10);
  if (errno != 0 || end == t.c_str() || *end != '\0') {
    if (error) *error = "expected an integer";
    return false;
  }
  if (double(v) < min || double(v) > max) {
    if (error) *error = "out of range " + fmt_number(min) + " .. " + fmt_number(max);
    return false;
  }
  *out = v;
  return true;
}

bool parse_size(std::string_view text, double min, double max, uint64_t* out, std::string* error) {
  std::string t = trim(text);
  if (t.empty() || t[0] == '-' || t[0] == '+') {
    if (error) *error = "expected a byte count such as 4096, 64K, 16M or 1G";
    return false;
  }
  errno = 0;
  char* end = nullptr;
  unsigned long long v = std::strtoull(t.c_str(), &end, 10);
  if (errno != 0 || end == t.c_str()) {
    if (error) *error = "expected a byte count such as 4096, 64K, 16M or 1G";
    return false;
  }
  std::string suffix = lower(std::string(end));
  if (!suffix.empty() && suffix.back() == 'b') suffix.pop_back();  // accept "64MB", "64MiB"
  if (suffix.size() == 2 && suffix[1] == 'i') suffix.pop_back();
  int shift = 0;
  if (suffix.empty())
    shift = 0;
  else if (suffix == "k")
    shift = 10;
  else if (suffix == "m")
    shift = 20;
  else if (suffix == "g")
    shift = 30;
  else if (suffix == "t")
    shift = 40;
  else {
    if (error) *error = "unknown size suffix '" + std::string(end) + "' (use K, M, G or T)";
    return false;
  }
  if (shift > 0 && v > (std::numeric_limits<uint64_t>::max() >> shift)) {
    if (error) *error = "too large";
    return false;
  }
  uint64_t bytes = uint64_t(v) << shift;
  if (double(bytes) < min || double(bytes) > max) {
    if (error) *error = "out of range " + fmt_number(min) + " .. " + fmt_number(max) + " bytes";
    return false;
  }
  *out = bytes;
  return true;
}

bool parse_double(std::string_view text, double min, double max, double* out, std::string* error) {
  std::string t = trim(text);
  if (t.empty()) {
    if (error) *error = "empty";
    return false;
  }
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(t.c_str(), &end);
  if (errno != 0 || end == t.c_str() || *end != '\0' || !std::isfinite(v)) {
    if (error) *error = "expected a number";
    return false;
  }
  if (v < min || v > max) {
    if (error) *error = "out of range " + fmt_number(min) + " .. " + fmt_number(max);
    return false;
  }
  *out = v;
  return true;
}

namespace {

// Sets one field from text; returns false with *error on failure (field untouched).
template <typename T>
bool assign(Type type, const VarInfo& info, std::string_view text, T* field, std::string* error) {
  if constexpr (std::is_same_v<T, bool>) {
    return parse_bool(text, field, error);
  } else if constexpr (std::is_same_v<T, int64_t>) {
    return parse_int(text, info.min, info.max, field, error);
  } else if constexpr (std::is_same_v<T, uint64_t>) {
    return parse_size(text, info.min, info.max, field, error);
  } else if constexpr (std::is_same_v<T, double>) {
    return parse_double(text, info.min, info.max, field, error);
  } else {
    (void)type;
    *field = std::string(text);
    return true;
  }
}

template <typename T>
std::string value_text(const T& v) {
  if constexpr (std::is_same_v<T, bool>)
    return v ? "1" : "0";
  else if constexpr (std::is_same_v<T, std::string>)
    return v;
  else if constexpr (std::is_same_v<T, double>)
    return fmt_number(v);
  else
    return std::to_string(v);
}

}  // namespace

Config defaults() {
  Config c{};
  std::string ignored;
#define SCOUT_VAR(field, name, type, def, min, max, section, doc) \
  assign(Type::type, *find(name), def, &c.field, &ignored);
#include "scout/config_vars.def"
#undef SCOUT_VAR
  return c;
}

Config load(const EnvLookup& env, const WarnSink& warn) {
  Config c = defaults();
  auto lookup = [&](const char* name) -> const char* { return env ? env(name) : std::getenv(name); };
#define SCOUT_VAR(field, name, type, def, min, max, section, doc)                                                      \
  do {                                                                                                                 \
    const char* raw = lookup(name);                                                                                    \
    if (raw != nullptr && raw[0] != '\0') {                                                                            \
      std::string error;                                                                                               \
      if (!assign(Type::type, *find(name), raw, &c.field, &error) && warn) {                                           \
        warn(std::string(name) + "=\"" + raw + "\" ignored: " + error + "; using default " + (def[0] ? def : "\"\"")); \
      }                                                                                                                \
    }                                                                                                                  \
  } while (0);
#include "scout/config_vars.def"
#undef SCOUT_VAR
  return c;
}

std::string describe(const Config& cfg) {
  std::string out;
#define SCOUT_VAR(field, name, type, def, min, max, section, doc) \
  out += std::string(name) + "=" + value_text(cfg.field) + "\n";
#include "scout/config_vars.def"
#undef SCOUT_VAR
  return out;
}

std::string markdown_table() {
  std::string out =
      "| Variable | Type | Default | Range | Section | Meaning |\n"
      "|---|---|---|---|---|---|\n";
  for (const VarInfo& v : kRegistry) {
    std::string def = v.default_text[0] ? std::string("`") + v.default_text + "`" : "(empty)";
    std::string range = range_text(v);
    out += "| `" + std::string(v.name) + "` | " + type_name(v.type) + " | " + def + " | " + range + " | " + v.section +
           " | " + v.doc + " |\n";
  }
  return out;
}

std::string resolve_job_id(std::string_view configured, const EnvLookup& env) {
  if (!configured.empty()) return std::string(configured);
  for (const char* name : {"TORCHELASTIC_RUN_ID", "SLURM_JOB_ID"}) {
    const char* v = env ? env(name) : std::getenv(name);
    if (v != nullptr && v[0] != '\0') return v;
  }
  return "default";
}

std::string resolve_host(std::string_view configured) {
  if (!configured.empty()) return std::string(configured);
  char buf[256] = {};
  if (::gethostname(buf, sizeof(buf) - 1) == 0 && buf[0] != '\0') return buf;
  return "unknown-host";
}

}  // namespace scout::config

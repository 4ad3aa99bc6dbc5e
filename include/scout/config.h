// scout: one typed registry for every SCOUT_* environment variable.
//
// The variables are declared once, in include/scout/config_vars.def. This header turns that
// list into the Config struct (one typed field per variable), the parser, and the documentation
// table (docs/configuration.md is checked against markdown_table() by a test).
//
// Parsing never throws and never aborts: a bad value produces one message (through the sink the
// caller passes, e.g. NCCL's logger in the plugin) and the default is used.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>

namespace scout::config {

enum class Type { Bool, Int, Size, Double, String, Path };

// One registry entry. min/max apply to Int, Size and Double.
struct VarInfo {
  const char* name;  // "SCOUT_FP_BUDGET"
  Type type;
  const char* default_text;  // default as it would be written in the environment
  double min;
  double max;
  const char* section;  // "plugin", "observer" or "sim"
  const char* doc;      // one line
};

// Typed values of every variable. Bool -> bool, Int -> int64_t, Size -> uint64_t (bytes),
// Double -> double, String/Path -> std::string.
struct Config {
#define SCOUT_TYPE_Bool bool
#define SCOUT_TYPE_Int int64_t
#define SCOUT_TYPE_Size uint64_t
#define SCOUT_TYPE_Double double
#define SCOUT_TYPE_String std::string
#define SCOUT_TYPE_Path std::string
#define SCOUT_VAR(field, name, type, def, min, max, section, doc) SCOUT_TYPE_##type field;
#include "scout/config_vars.def"
#undef SCOUT_VAR
};

// Returns the environment value of `name` or nullptr if unset.
using EnvLookup = std::function<const char*(const char* name)>;
// Receives one human-readable message per rejected value.
using WarnSink = std::function<void(const std::string& message)>;

// All registry entries, in declaration order.
std::span<const VarInfo> registry();

// Looks up an entry by its NAME; nullptr if there is none.
const VarInfo* find(std::string_view name);

// A Config holding every default.
Config defaults();

// Reads every variable through `env` (getenv when empty). Unset or empty -> default. A value that
// does not parse or is out of range -> one message to `warn` naming the variable, the value and
// what is accepted, and the default is used. Never throws.
Config load(const EnvLookup& env = {}, const WarnSink& warn = {});

// Parses one value of the given type; on failure returns false and sets *error to the reason.
// Used by load() and by command-line tools that accept the same values as flags.
bool parse_bool(std::string_view text, bool* out, std::string* error);
bool parse_int(std::string_view text, double min, double max, int64_t* out, std::string* error);
bool parse_size(std::string_view text, double min, double max, uint64_t* out, std::string* error);
bool parse_double(std::string_view text, double min, double max, double* out, std::string* error);

// The job id every scout part files a job under (segments, stores): `configured` (SCOUT_JOB_ID)
// if not empty, else TORCHELASTIC_RUN_ID, else SLURM_JOB_ID, else "default" (rule of the
// SCOUT_JOB_ID entry in config_vars.def). `env` returns an environment value or nullptr (getenv
// when empty). The plugin and the observer must agree on it: this is the one implementation.
std::string resolve_job_id(std::string_view configured, const EnvLookup& env = {});
// The host name segments and findings carry: `configured` (SCOUT_HOST) if not empty, else
// gethostname(), else "unknown-host".
std::string resolve_host(std::string_view configured);

// "name=value" lines of every variable's effective value, for the one-time startup print.
std::string describe(const Config& cfg);

// The Markdown table of docs/configuration.md: | Variable | Type | Default | Range | Section | Meaning |
std::string markdown_table();

}  // namespace scout::config

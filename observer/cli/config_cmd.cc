// `scout config [--markdown] [--json]`: the effective SCOUT_* configuration, or the registry as
// the Markdown table of docs/configuration.md.
#include <cstdlib>
#include <iostream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "observer/cli/common.h"
#include "observer/cli/format.h"
#include "scout/config.h"

namespace scout::cli {

int cmd_config(bool markdown, bool json, std::ostream& out) {
  if (markdown) {
    out << config::markdown_table();
    return kExitOk;
  }
  std::set<std::string> rejected;
  std::vector<std::string> warnings;
  config::Config cfg = config::load({}, [&](const std::string& m) {
    warnings.push_back(m);
    // The loader's warnings start with NAME="value" (common/config.cc): match the whole
    // name, so SCOUT_FP_BUDGET's warning does not mark SCOUT_FP.
    for (const auto& v : config::registry()) {
      if (m.rfind(std::string(v.name) + "=\"", 0) == 0) rejected.insert(v.name);
    }
  });
  // describe() gives "NAME=value" lines in registry order.
  std::map<std::string, std::string> value;
  std::string text = config::describe(cfg);
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    std::string line = text.substr(pos, nl - pos);
    size_t eq = line.find('=');
    if (eq != std::string::npos) value[line.substr(0, eq)] = line.substr(eq + 1);
    pos = nl + 1;
  }
  auto source = [&](const char* name) -> std::string {
    const char* env = std::getenv(name);
    if (!env || !*env) return "default";
    return rejected.count(name) ? "default (environment value rejected)" : "environment";
  };
  for (const auto& w : warnings) std::cerr << "scout: " << w << "\n";
  if (json) {
    for (const auto& v : config::registry()) {
      out << nlohmann::json{{"name", v.name},
                            {"value", value[v.name]},
                            {"source", source(v.name)},
                            {"section", v.section}}
                 .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
          << "\n";
    }
    return kExitOk;
  }
  Table t;
  t.headers = {"VARIABLE", "VALUE", "SOURCE", "SECTION"};
  for (const auto& v : config::registry()) {
    std::string val = value[v.name];
    t.rows.push_back({v.name, val.empty() ? "(empty)" : val, source(v.name), v.section});
  }
  out << t.render();
  return kExitOk;
}

}  // namespace scout::cli

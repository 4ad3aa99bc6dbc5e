#include "test/support/prom_check.h"

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "test/support/tmpdir.h"

namespace scout::testing {

std::string check_exposition(const std::string& text) {
  static const std::regex kHelp(R"(^# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) (.+)$)");
  static const std::regex kType(R"(^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped)$)");
  static const std::regex kSample(R"(^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$)");
  static const std::regex kLabel(R"re(^([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"(,|$))re");
  std::set<std::string> helped, typed, finished, series;
  std::map<std::string, std::string> types;
  std::string current;
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    std::string where = "line " + std::to_string(n) + ": ";
    std::smatch m;
    if (line.rfind("# HELP ", 0) == 0) {
      if (!std::regex_match(line, m, kHelp)) return where + "bad HELP";
      if (!helped.insert(m[1]).second) return where + "second HELP for " + m[1].str();
      if (!current.empty() && current != m[1]) finished.insert(current);
      current = m[1];
      if (finished.count(current)) return where + "family " + current + " split";
    } else if (line.rfind("# TYPE ", 0) == 0) {
      if (!std::regex_match(line, m, kType)) return where + "bad TYPE";
      if (!typed.insert(m[1]).second) return where + "second TYPE for " + m[1].str();
      if (m[1] != current) return where + "TYPE not after its HELP";
      types[m[1]] = m[2];
    } else if (std::regex_match(line, m, kSample)) {
      std::string name = m[1];
      if (name != current || !typed.count(name)) return where + "sample of undeclared family " + name;
      if (types[name] == "counter" && (name.size() < 6 || name.substr(name.size() - 6) != "_total")) {
        return where + "counter without _total";
      }
      std::string labels = m[3];
      std::set<std::string> names;
      while (!labels.empty()) {
        std::smatch lm;
        if (!std::regex_search(labels, lm, kLabel)) return where + "bad label syntax: " + labels;
        if (!names.insert(lm[1]).second) return where + "label repeated";
        labels = lm.suffix();
      }
      try {
        size_t used = 0;
        std::stod(m[4].str(), &used);
        if (used != m[4].str().size()) return where + "bad value";
      } catch (...) { return where + "bad value"; }
      if (!series.insert(name + "{" + m[3].str() + "}").second) return where + "duplicate series";
    } else {
      return where + "unparsable: " + line;
    }
  }
  if (helped != typed) return "a family has HELP without TYPE or the reverse";
  return "";
}

std::string promtool_check(const std::string& text) {
  if (std::system("command -v promtool >/dev/null 2>&1") != 0) return "skip";
  TempDir dir;
  std::string file = dir.path() + "/scout.prom";
  std::ofstream(file) << text;
  std::string cmd = "promtool check metrics < " + file + " > " + dir.path() + "/promtool.log 2>&1";
  int st = std::system(cmd.c_str());
  std::ifstream log(dir.path() + "/promtool.log");
  std::stringstream ss;
  ss << log.rdbuf();
  if (WIFEXITED(st) && WEXITSTATUS(st) == 0 && ss.str().empty()) return "";
  return ss.str().empty() ? "promtool failed" : ss.str();
}

}  // namespace scout::testing

// libFuzzer target: the scout CLI's argument and name handling. The input's first byte picks a
// read-only subcommand (status, report, findings, explain, export to stdout, config, replay plan,
// ckpt list/latest/show); the rest, split at newlines, are its arguments. Any --store names the
// fixture store (test/fuzz/corpus/store/demo.db, copied to TMPDIR), --job resolves under a scratch
// SCOUT_STATE_DIR, and arguments that would write files or start programs (--out, run, clean,
// dump, hash) are dropped. scout::cli::main must then exit 0, 1 or 2; with 2, stderr is exactly
// one line "scout: ..."; stdout is valid UTF-8 whenever the arguments are. Each argument also goes
// through the name rules the CLI relies on: the store path of a job id stays one file directly
// under the job's own directory of the state directory, and the shell quoting of `store_selector`
// reads back as the argument. `make fuzz` runs it.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "common/paths.h"
#include "common/utf8.h"
#include "observer/cli/common.h"

namespace {

std::string g_fixture;    // the store every --store names
std::string g_state_dir;  // SCOUT_STATE_DIR: empty, so --job finds no store

// `s` read back as one POSIX shell word made of plain characters and '...' quotes (the form
// store_selector writes); false if it is not one.
bool unquote(const std::string& s, std::string* out) {
  out->clear();
  for (size_t i = 0; i < s.size();) {
    if (s[i] == '\'') {
      size_t j = s.find('\'', i + 1);
      if (j == std::string::npos) return false;
      out->append(s, i + 1, j - i - 1);
      i = j + 1;
    } else if (s[i] == '\\' && i + 1 < s.size()) {
      out->push_back(s[i + 1]);
      i += 2;
    } else {
      if (s[i] == ' ' || s[i] == '"' || s[i] == '$' || s[i] == '`' || s[i] == '\\') return false;
      out->push_back(s[i++]);
    }
  }
  return true;
}

void check_names(const std::string& a) {
  using namespace scout;
  std::string err;
  const std::string p = store::default_store_path(g_state_dir, a, 3, &err);
  if (p.empty()) {
    if (err.empty() || err.find('\n') != std::string::npos) std::abort();
  } else {
    // <state>/<encoded job>/node-3.db: exactly one directory level, never ".." or a '/' from the id.
    const std::string enc = shm::encode_component(a);
    if (p != g_state_dir + "/" + enc + "/node-3.db") std::abort();
    if (enc.find('/') != std::string::npos || enc == "." || enc == "..") std::abort();
  }
  if (a.find('\0') == std::string::npos) {
    cli::StoreOptions o;
    o.store = a;
    const std::string sel = cli::store_selector(o);
    std::string back;
    if (a.empty()) {
      if (!sel.empty()) std::abort();  // no --store: the store comes from the environment
    } else if (sel.rfind("--store ", 0) != 0 || !unquote(sel.substr(8), &back) || back != a) {
      std::abort();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* tmp = std::getenv("TMPDIR");
  const std::string dir = std::string(tmp && *tmp ? tmp : "/tmp") + "/scout-fuzz-cli." + std::to_string(::getpid());
  g_state_dir = dir + "/state";
  g_fixture = dir + "/demo.db";
  std::system(("mkdir -p '" + g_state_dir + "'").c_str());
  std::ifstream in(std::string(SCOUT_SOURCE_DIR) + "/test/fuzz/corpus/store/demo.db", std::ios::binary);
  std::ofstream(g_fixture, std::ios::binary) << in.rdbuf();
  ::setenv("SCOUT_STATE_DIR", g_state_dir.c_str(), 1);
  ::unsetenv("SCOUT_JOB_ID");
  ::unsetenv("TORCHELASTIC_RUN_ID");
  ::unsetenv("SLURM_JOB_ID");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<std::vector<std::string>> kCommands = {
      {"status"},         {"report"},       {"findings"},       {"explain"},      {"export"},          {"config"},
      {"replay", "plan"}, {"ckpt", "list"}, {"ckpt", "latest"}, {"ckpt", "show"}, {"status", "--json"}};
  if (size == 0) return 0;
  std::vector<std::string> args = {"scout"};
  for (const auto& c : kCommands[data[0] % kCommands.size()]) args.push_back(c);
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  bool utf8_args = true;
  for (size_t i = 0; i <= text.size() && args.size() < 24;) {
    size_t j = text.find('\n', i);
    if (j == std::string::npos) j = text.size();
    std::string a = text.substr(i, j - i);
    i = j + 1;
    check_names(a);
    if (a.rfind("--store", 0) == 0) a = "--store=" + g_fixture;
    if (a.find("--o") == 0 || a == "run" || a == "clean" || a == "dump" || a == "hash" || a == "-h" || a == "--help")
      continue;
    utf8_args = utf8_args && scout::utf8_valid(a);
    args.push_back(a);
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  std::ostringstream out, err;
  std::streambuf* old_out = std::cout.rdbuf(out.rdbuf());
  std::streambuf* old_err = std::cerr.rdbuf(err.rdbuf());
  const int rc = scout::cli::main(int(args.size()), argv.data());
  std::cout.rdbuf(old_out);
  std::cerr.rdbuf(old_err);

  if (rc != 0 && rc != 1 && rc != 2) std::abort();
  const std::string e = err.str();
  // A usage error is one line, "scout: ..." or "scout SUBCOMMAND: ..." (docs/cli.md, "Exit codes and errors").
  std::string sub = "scout";
  for (const auto& c : kCommands[data[0] % kCommands.size()])
    if (c.rfind("--", 0) != 0) sub += " " + c;
  if (rc == 2 && ((e.rfind("scout: ", 0) != 0 && e.rfind(sub + ": ", 0) != 0) || e.find('\n') != e.size() - 1))
    std::abort();
  if (utf8_args && !scout::utf8_valid(out.str())) std::abort();
  return 0;
}

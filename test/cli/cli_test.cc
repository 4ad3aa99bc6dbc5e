// The built CLI (build/bin/scout) against the deterministic demo store
// (test/support/cli_fixture.h): exact output of every subcommand compared with the golden files
// in test/fixtures/cli/, and the one-line errors with exit code 2.
//
// To regenerate the golden files after an intended change: `make update-golden`, then review
// `git diff test/fixtures/cli` (test/support/golden.h).
#include <sqlite3.h>
#include <sys/wait.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "observer/export/chrome_trace.h"
#include "observer/store/schema.h"
#include "observer/store/sqlite.h"
#include "test/support/cli_fixture.h"
#include "test/support/golden.h"
#include "test/support/tmpdir.h"

namespace {

using scout::testing::build_path;
using scout::testing::source_path;
using scout::testing::TempDir;

struct Result {
  int rc = -1;
  std::string out, err;
};

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Runs `build/bin/scout ARGS` through bash (ARGS is shell text) with `env` prepended.
Result scout(const std::string& dir, const std::string& args, const std::string& env = "") {
  std::string out = dir + "/stdout", err = dir + "/stderr";
  std::string cmd = env + " " + build_path("bin/scout") + " " + args + " >" + out + " 2>" + err;
  int st = std::system(cmd.c_str());
  Result r;
  r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) {
    s.replace(p, from.size(), to);
  }
  return s;
}

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = dir_.path() + "/state/demo/node-0.db";
    scout::testing::write_demo_store(store_);
  }

  // Compares `actual` (with the temp directory replaced by <DIR>) with the golden file.
  void golden(const std::string& name, const std::string& actual) {
    std::string text = replace_all(actual, dir_.path(), "<DIR>");
    scout::testing::expect_golden(source_path("test/fixtures/cli/" + name), text);
  }

  // Runs a subcommand on the demo store; it must succeed silently on stderr.
  std::string ok(const std::string& args) {
    Result r = scout(dir_.path(), args + " --store " + store_);
    EXPECT_EQ(r.rc, 0) << args << ": " << r.err;
    EXPECT_EQ(r.err, "") << args;
    return r.out;
  }

  // Runs a failing command: exit code 2 and exactly one line on stderr; returns that line.
  std::string fails(const std::string& args, const std::string& env = "") {
    Result r = scout(dir_.path(), args, env);
    EXPECT_EQ(r.rc, 2) << args;
    EXPECT_EQ(r.out, "") << args;
    EXPECT_FALSE(r.err.empty()) << args;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << args << ": not one line: " << r.err;
    return replace_all(r.err, dir_.path(), "<DIR>");
  }

  TempDir dir_;
  std::string store_;
};

TEST_F(Cli, Status) { golden("status.txt", ok("status")); }
TEST_F(Cli, StatusJson) { golden("status.json", ok("status --json")); }
TEST_F(Cli, Report) { golden("report.txt", ok("report")); }
TEST_F(Cli, ReportRankFilter) { golden("report_rank3.txt", ok("report --rank 3")); }
TEST_F(Cli, ReportCommFuncLast) {
  golden("report_world_last2.txt", ok("report --comm world --func allreduce --last 2"));
  // The same communicator by commHash.
  EXPECT_EQ(ok("report --comm 0x1111aaaa2222bbbb --func AllReduce --last 2"),
            ok("report --comm world --func allreduce --last 2"));
  EXPECT_EQ(ok("report --comm nosuch"), "no operations match (5 stored)\n");
}
TEST_F(Cli, ReportJson) { golden("report.jsonl", ok("report --json --rank 3")); }
TEST_F(Cli, Findings) { golden("findings.txt", ok("findings")); }
TEST_F(Cli, FindingsOpen) { golden("findings_open.txt", ok("findings --open")); }

// --json prints exactly the keys of obs::to_json, one object per line, ids in order.
TEST_F(Cli, FindingsJson) {
  std::string out = ok("findings --json");
  golden("findings.jsonl", out);
  std::istringstream lines(out);
  std::string line;
  int n = 0;
  const std::vector<std::string> keys = {"comm",         "evidence", "first_seen_ns", "id",      "key",      "kind",
                                         "last_seen_ns", "peer",     "status",        "summary", "suspects", "verdict"};
  while (std::getline(lines, line)) {
    auto j = nlohmann::json::parse(line);
    std::vector<std::string> got;
    for (auto it = j.begin(); it != j.end(); ++it) got.push_back(it.key());
    EXPECT_EQ(got, keys);
    EXPECT_EQ(j["id"], ++n);
    for (const auto& s : j["suspects"]) {
      EXPECT_TRUE(s.contains("global_rank") && s.contains("host") && s.contains("pid") && s.contains("gpu"));
    }
  }
  EXPECT_EQ(n, 3);
  EXPECT_EQ(ok("findings --open --json").find("\"straggler\""), std::string::npos);
}

TEST_F(Cli, ExplainEachFinding) {
  golden("explain_1.txt", ok("explain 1"));
  golden("explain_2.txt", ok("explain 2"));
  golden("explain_3.txt", ok("explain 3"));
  EXPECT_EQ(nlohmann::json::parse(ok("explain 1 --json"))["suspects"][0]["global_rank"], 5);
}

TEST_F(Cli, ExportJsonl) { golden("export.jsonl", ok("export --format jsonl")); }
TEST_F(Cli, ExportPrometheus) { golden("export.prom", ok("export --format prometheus")); }

TEST_F(Cli, ExportChromeTrace) {
  std::string out = ok("export --format chrome-trace");
  nlohmann::json trace = nlohmann::json::parse(out);
  EXPECT_EQ(scout::exporter::check_chrome_trace(trace), "");
  // Golden form: one event per line (reviewable), compared after parsing.
  std::string lines = "{\"traceEvents\": [\n";
  for (size_t i = 0; i < trace["traceEvents"].size(); ++i) {
    lines += trace["traceEvents"][i].dump() + (i + 1 < trace["traceEvents"].size() ? ",\n" : "\n");
  }
  nlohmann::json rest = trace;
  rest.erase("traceEvents");
  lines += "], \"rest\": " + rest.dump() + "}\n";
  golden("export.trace.json", lines);
  // One slice per rank timing that started (3 x 8 world + 2 tp0 + 1 dp3) and one per finding.
  int x = 0;
  for (const auto& e : trace["traceEvents"]) x += e["ph"] == "X";
  EXPECT_EQ(x, 27 + 3);
}

TEST_F(Cli, ExportToFileIsAtomicAndEqualToStdout) {
  std::string path = dir_.path() + "/out.prom";
  EXPECT_EQ(ok("export --format prometheus --out " + path), "");
  EXPECT_EQ(slurp(path), ok("export --format prometheus"));
}

TEST_F(Cli, JobFindsTheDefaultStore) {
  std::string env = "SCOUT_STATE_DIR=" + dir_.path() + "/state";
  Result r = scout(dir_.path(), "status --job demo", env);
  EXPECT_EQ(r.rc, 0) << r.err;
  // The same text; its hints name the store as the user did.
  EXPECT_EQ(r.out, replace_all(ok("status"), "--store " + store_, "--job demo"));
  EXPECT_NE(r.out.find("details: scout explain --job demo ID"), std::string::npos) << r.out;
  // SCOUT_JOB_ID names the job when --job is absent.
  r = scout(dir_.path(), "findings", env + " SCOUT_JOB_ID=demo");
  EXPECT_EQ(r.out, ok("findings"));
}

TEST_F(Cli, ConfigMarkdownIsTheDocsTable) {
  std::string out = scout(dir_.path(), "config --markdown").out;
  EXPECT_NE(slurp(source_path("docs/configuration.md")).find(out), std::string::npos);
  Result r = scout(dir_.path(), "config", "SCOUT_STORE_MAX_OPS=500 SCOUT_FP=1 SCOUT_FP_BUDGET=7");
  EXPECT_EQ(r.rc, 0);
  // The row of a variable, with runs of spaces squeezed.
  auto row = [&](const std::string& name) {
    std::istringstream lines(r.out);
    std::string line;
    while (std::getline(lines, line)) {
      if (line.rfind(name + " ", 0) != 0) continue;
      std::string squeezed;
      for (char c : line) {
        if (c != ' ' || (squeezed.size() && squeezed.back() != ' ')) squeezed += c;
      }
      return squeezed;
    }
    return std::string();
  };
  EXPECT_EQ(row("SCOUT_STORE_MAX_OPS"), "SCOUT_STORE_MAX_OPS 500 environment observer");
  EXPECT_EQ(row("SCOUT_FP_BUDGET"), "SCOUT_FP_BUDGET 0.01 default (environment value rejected) plugin");
  EXPECT_EQ(row("SCOUT_FP"), "SCOUT_FP 1 environment plugin");  // not marked by SCOUT_FP_BUDGET's warning
  EXPECT_EQ(row("SCOUT_STATE_DIR"), "SCOUT_STATE_DIR /tmp/scout default observer");
  EXPECT_EQ(r.err, "scout: SCOUT_FP_BUDGET=\"7\" ignored: out of range 0 .. 1; using default 0.01\n");
}

TEST_F(Cli, ConfigJsonAlsoPrintsTheWarnings) {
  Result r = scout(dir_.path(), "config --json", "SCOUT_FP_BUDGET=7");
  EXPECT_EQ(r.rc, 0);
  EXPECT_EQ(r.err, "scout: SCOUT_FP_BUDGET=\"7\" ignored: out of range 0 .. 1; using default 0.01\n");
  EXPECT_NE(
      r.out.find(
          R"j({"name":"SCOUT_FP_BUDGET","section":"plugin","source":"default (environment value rejected)","value":"0.01"})j"),
      std::string::npos)
      << r.out;
}

TEST_F(Cli, HashPrintsTheFingerprintOfAFile) {
  std::string empty = dir_.path() + "/empty";
  std::ofstream(empty).close();
  Result r = scout(dir_.path(), "hash " + empty);
  EXPECT_EQ(r.rc, 0);
  EXPECT_EQ(r.out.size(), 17u);  // 16 hex digits and a newline
  EXPECT_EQ(r.out.find_first_not_of("0123456789abcdef"), 16u);
  EXPECT_EQ(fails("hash " + dir_.path() + "/none"), "scout: <DIR>/none: No such file or directory\n");
}

TEST_F(Cli, ErrorsAreOneLineWithExitCode2) {
  EXPECT_EQ(fails("status --store " + dir_.path() + "/none.db"), "scout: no store at <DIR>/none.db\n");
  EXPECT_EQ(fails("status --job nojob", "SCOUT_STATE_DIR=" + dir_.path()),
            "scout: no store at <DIR>/nojob/node-0.db (give --store PATH, or --job ID of a job "
            "whose observer runs on this node)\n");
  std::string text = dir_.path() + "/text.db";
  std::ofstream(text) << "not a database, only text, long enough for a header of one hundred bytes"
                         " ........................................\n";
  EXPECT_EQ(fails("findings --store " + text), "scout: <DIR>/text.db is not a scout store (not an SQLite database)\n");
  {
    scout::store::Db db(store_, SQLITE_OPEN_READWRITE);
    db.exec("PRAGMA user_version = " + std::to_string(scout::store::kSchemaVersion + 1));
  }
  EXPECT_EQ(fails("status --store " + store_),
            "scout: store <DIR>/state/demo/node-0.db has schema version " +
                std::to_string(scout::store::kSchemaVersion + 1) + "; this scout reads up to version " +
                std::to_string(scout::store::kSchemaVersion) + " (use a newer scout)\n");
}

TEST_F(Cli, UnknownFindingAndBadFlags) {
  EXPECT_EQ(fails("explain 42 --store " + store_), "scout: no finding with id 42 in <DIR>/state/demo/node-0.db\n");
  EXPECT_EQ(fails("explain abc --store " + store_),
            "scout: id: finding id 'abc' is not a finding number (see scout findings) (scout --help)\n");
  EXPECT_EQ(fails("report --last 0 --store " + store_),
            "scout: --last: Value 0 not in range 1 to 1000000000 (scout --help)\n");
  EXPECT_EQ(fails("report --rank -1 --store " + store_),
            "scout: --rank: Value -1 not in range 0 to 1000000000 (scout --help)\n");
  EXPECT_EQ(fails("report --comm 0xzz --store " + store_),
            "scout: --comm 0xzz: not a commHash (0x + up to 16 hex digits)\n");
  EXPECT_EQ(fails("export --format xml --store " + store_),
            "scout: --format xml: expected jsonl, prometheus or chrome-trace\n");
  EXPECT_EQ(fails("status --bogus --store " + store_),
            "scout: The following argument was not expected: --bogus (scout --help)\n");
  EXPECT_EQ(fails("nosuch"), "scout: The following argument was not expected: nosuch (scout --help)\n");
  EXPECT_EQ(fails(""), "scout: no subcommand given (scout --help lists them)\n");
}

}  // namespace

// The built CLI (build/bin/scout) against the deterministic demo store
// (test/support/cli_fixture.h): exact output of every subcommand compared with the golden files
// in test/fixtures/cli/, and the one-line errors with exit code 2.
//
// To regenerate the golden files after an intended change: `make update-golden`, then review
// `git diff test/fixtures/cli` (test/support/golden.h).
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "common/paths.h"
#include "common/segment_writer.h"
#include "observer/ckpt/ckpt_store.h"
#include "observer/export/chrome_trace.h"
#include "observer/replay/request.h"
#include "observer/store/schema.h"
#include "observer/store/sqlite.h"
#include "observer/store/writer.h"
#include "test/support/cli_fixture.h"
#include "test/support/golden.h"
#include "test/support/subprocess.h"
#include "test/support/tmpdir.h"

namespace {

using Result = scout::testing::ShellResult;
using scout::testing::build_path;
using scout::testing::run_shell;
using scout::testing::slurp;
using scout::testing::source_path;
using scout::testing::TempDir;

// Runs `build/bin/scout ARGS` through bash (ARGS is shell text) with `env` prepended.
Result scout(const std::string& dir, const std::string& args, const std::string& env = "") {
  return run_shell(dir, env + " " + build_path("bin/scout") + " " + args);
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

  // Compares `actual` (with the temp directory replaced by <DIR>, and the path the test invokes
  // scout by, which hints repeat, by <SCOUT>) with the golden file.
  void golden(const std::string& name, const std::string& actual) {
    std::string text = replace_all(replace_all(actual, build_path("bin/scout"), "<SCOUT>"), dir_.path(), "<DIR>");
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
    return replace_all(replace_all(r.err, build_path("bin/scout"), "<SCOUT>"), dir_.path(), "<DIR>");
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
  EXPECT_EQ(ok("report --comm tp0 --func Broadcast"), "no operations match (5 stored)\n");
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

// The whole store: checkpoints, check cycles, certificates, replay cycles and GEMM capture
// follow the operations, and the lines before them are the demo store's export.jsonl.
TEST_F(Cli, ExportJsonlCarriesTheWholeStore) {
  const std::string before = ok("export --format jsonl");
  scout::testing::write_demo_history(store_);
  const std::string out = ok("export --format jsonl");
  golden("export_history.jsonl", out);
  ASSERT_GE(out.size(), before.size());
  EXPECT_EQ(out.substr(0, before.size()), before);
  std::map<std::string, int> types;
  std::istringstream rest(out.substr(before.size()));
  for (std::string line; std::getline(rest, line);) types[nlohmann::json::parse(line)["type"].get<std::string>()]++;
  EXPECT_EQ(types, (std::map<std::string, int>{{"checkpoint", 3},
                                               {"check_cycle", 3},
                                               {"certificate", 1},
                                               {"replay_cycle", 2},
                                               {"gemm_capture", 2},
                                               {"gemm_shape", 2}}));
}

// Checkpoint states and replay outcomes in the Prometheus file.
TEST_F(Cli, ExportPrometheusCarriesCheckpointsAndReplay) {
  scout::testing::write_demo_history(store_);
  golden("export_history.prom", ok("export --format prometheus"));
}

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
  EXPECT_NE(r.out.find("details: " + build_path("bin/scout") + " explain --job demo 1"), std::string::npos) << r.out;
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
            "whose observer runs on this node: <SCOUT> jobs lists them)\n");
  // Without --job (the environment's job, here "default"), as `scout report --comm nosuch` in a
  // directory with other jobs: the same pointer to `scout jobs`.
  EXPECT_EQ(fails("report --comm nosuch", "env -u SCOUT_JOB_ID -u TORCHELASTIC_RUN_ID -u SLURM_JOB_ID SCOUT_STATE_DIR=" +
                                              dir_.path() + "/state"),
            "scout: no store at <DIR>/state/default/node-0.db (give --store PATH, or --job ID of a job "
            "whose observer runs on this node: <SCOUT> jobs lists them)\n");
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
            "scout explain: id: finding id 'abc' is not a finding number (see <SCOUT> findings) (<SCOUT> explain "
            "--help)\n");
  EXPECT_EQ(fails("report --last 0 --store " + store_),
            "scout report: --last: Value 0 not in range 1 to 1000000000 (<SCOUT> report --help)\n");
  EXPECT_EQ(fails("report --rank -1 --store " + store_),
            "scout report: --rank: Value -1 not in range 0 to 1000000000 (<SCOUT> report --help)\n");
  EXPECT_EQ(fails("report --comm 0xzz --store " + store_),
            "scout: --comm 0xzz: not a commHash (0x + up to 16 hex digits)\n");
  EXPECT_EQ(fails("export --format xml --store " + store_),
            "scout: --format xml: expected jsonl, prometheus or chrome-trace\n");
  EXPECT_EQ(fails("status --bogus --store " + store_), "scout status: unknown flag '--bogus' (<SCOUT> status --help)\n");
  EXPECT_EQ(fails("nosuch"), "scout: unknown subcommand 'nosuch' (<SCOUT> --help)\n");
  EXPECT_EQ(fails(""), "scout: no subcommand given (<SCOUT> --help lists them)\n");
}

// A typo gets the nearest subcommand or flag; an argument that matches nothing says so.
TEST_F(Cli, UsageErrorsNameTheNearestSubcommandOrFlag) {
  EXPECT_EQ(fails("stauts"), "scout: unknown subcommand 'stauts'; did you mean 'status'? (<SCOUT> --help)\n");
  EXPECT_EQ(fails("reprot --store " + store_),
            "scout: unknown subcommand 'reprot'; did you mean 'report'? (<SCOUT> --help)\n");
  EXPECT_EQ(fails("status --jsn --store " + store_),
            "scout status: unknown flag '--jsn'; did you mean '--json'? (<SCOUT> status --help)\n");
  EXPECT_EQ(fails("report --comm=dp0 --jsno --store " + store_),
            "scout report: unknown flag '--jsno'; did you mean '--json'? (<SCOUT> report --help)\n");
  EXPECT_EQ(fails("report --node 1 --store " + store_),
            "scout report: unknown flag '--node'; did you mean '--node-rank'? (<SCOUT> report --help)\n");
  EXPECT_EQ(fails("ckpt lst --store " + store_),
            "scout ckpt: unknown subcommand 'lst'; did you mean 'list'? (<SCOUT> ckpt --help)\n");
  EXPECT_EQ(fails("replay shwo 1 --store " + store_),
            "scout replay: unknown subcommand 'shwo'; did you mean 'show'? (<SCOUT> replay --help)\n");
  EXPECT_EQ(fails("status extra --store " + store_), "scout status: unexpected argument 'extra' (<SCOUT> status --help)\n");
}

// scout run's COMMAND keeps its own flags only after `--`: the hint is the command to paste.
TEST_F(Cli, RunCommandFlagsReachingScoutGetTheDoubleDashHint) {
  EXPECT_EQ(fails("run build/bin/scout-sim --ranks 2"),
            "scout run: '--ranks' is not a flag of scout run; COMMAND's own flags go after '--': <SCOUT> run -- "
            "build/bin/scout-sim --ranks 2\n");
  EXPECT_EQ(fails("run --job demo torchrun --nproc-per-node 8 'my train.py'"),
            "scout run: '--nproc-per-node' is not a flag of scout run; COMMAND's own flags go after '--': <SCOUT> run "
            "--job demo -- torchrun --nproc-per-node 8 'my train.py'\n");
}

// `report --comm NAME` of a communicator the store does not have is exit 2 with the known names,
// not an empty table.
TEST_F(Cli, UnknownCommunicatorIsAUsageErrorWithTheKnownNames) {
  EXPECT_EQ(fails("report --comm nosuch --store " + store_),
            "scout: --comm nosuch: no such communicator in <DIR>/state/demo/node-0.db; known: dp3, tp0, world\n");
  EXPECT_EQ(fails("report --comm 0x1 --store " + store_),
            "scout: --comm 0x1: no such communicator in <DIR>/state/demo/node-0.db; known: dp3, tp0, world\n");
  EXPECT_FALSE(ok("report --comm world").empty());
  EXPECT_FALSE(ok("report --comm 0x1111aaaa2222bbbb").empty());
}

// Every subcommand's --help: a word for each value (no CLI11 type tags such as TEXT:FLOAT or
// "INT in [0 - 1000000000]"), and no flag listed under two names.
TEST_F(Cli, HelpShowsValueWordsAndOneNamePerFlag) {
  golden("help.txt", scout(dir_.path(), "--help").out);
  golden("help_run.txt", scout(dir_.path(), "run --help").out);
  golden("help_report.txt", scout(dir_.path(), "report --help").out);
  const std::vector<std::string> subs = {"status", "report", "findings", "explain", "export", "run",
                                         "dump", "clean", "ckpt", "ckpt list", "ckpt show", "ckpt latest",
                                         "hash", "config", "replay", "replay plan", "replay list",
                                         "replay show", "replay run", "jobs"};
  for (const std::string& sub : subs) {
    Result r = scout(dir_.path(), sub + " --help");
    EXPECT_EQ(r.rc, 0) << sub;
    for (const char* tag : {" TEXT", " INT", " FLOAT", " UINT", ":INT", ":FLOAT", " in [", "VALUE"}) {
      EXPECT_EQ(r.out.find(tag), std::string::npos) << sub << " --help shows '" << tag << "':\n" << r.out;
    }
    EXPECT_EQ(r.out.find("--node "), std::string::npos) << sub;
    std::istringstream lines(r.out);
    std::set<std::string> flags;
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("  --", 0) != 0) continue;
      const std::string flag = line.substr(2, line.find(' ', 2) - 2);
      EXPECT_TRUE(flags.insert(flag).second) << sub << ": " << flag << " twice";
    }
  }
}

// `scout jobs`: every job with a store in SCOUT_STATE_DIR, newest first, with what identifies it.
TEST_F(Cli, JobsListsTheStateDirectoryNewestFirst) {
  const std::string state = dir_.path() + "/state";
  scout::testing::write_demo_store(state + "/older/node-0.db");
  {
    scout::store::Db db(state + "/older/node-0.db", SQLITE_OPEN_READWRITE);
    db.exec("UPDATE job SET job = 'older', started_ns = started_ns - 86400000000000");
  }
  std::filesystem::create_directories(state + "/broken");
  std::ofstream(state + "/broken/node-1.db") << "not a store";
  std::filesystem::create_directories(state + "/empty");
  Result r = scout(dir_.path(), "jobs", "SCOUT_STATE_DIR=" + state);
  EXPECT_EQ(r.rc, 0) << r.err;
  golden("jobs.txt", r.out);
  r = scout(dir_.path(), "jobs --json --state-dir " + state);
  EXPECT_EQ(r.rc, 0) << r.err;
  golden("jobs.jsonl", r.out);
  r = scout(dir_.path(), "jobs", "SCOUT_STATE_DIR=" + dir_.path() + "/nothing");
  EXPECT_EQ(r.out, "no jobs in " + dir_.path() + "/nothing (SCOUT_STATE_DIR)\n");
}

// Hints are commands to paste: the path scout was invoked by, the store as it was named, and the
// number of the finding listed first.
TEST_F(Cli, HintsUseTheInvokedPathAndTheFindingNumber) {
  const std::string bindir = build_path("bin");
  const std::string tail = "details: %s explain --store " + store_ + " 1; per-collective table: %s report --store " +
                           store_ + "\n";
  auto expected = [&](const std::string& prog) {
    std::string t = tail;
    for (size_t p; (p = t.find("%s")) != std::string::npos;) t.replace(p, 2, prog);
    return t;
  };
  auto last_line = [](const std::string& out) {
    size_t b = out.rfind('\n', out.size() - 2);
    return out.substr(b == std::string::npos ? 0 : b + 1);
  };
  // Found on PATH: "scout".
  Result r = run_shell(dir_.path(), "PATH=" + bindir + ":$PATH; cd " + dir_.path() + " && scout status --store " + store_);
  EXPECT_EQ(last_line(r.out), expected("scout"));
  // A relative path, as typed.
  r = run_shell(dir_.path(), "cd " + bindir + "/.. && bin/scout status --store " + store_);
  EXPECT_EQ(last_line(r.out), expected("bin/scout"));
}

// A stand-in for the demo job's observer: every 50 ms it rewrites the job header (as
// scout-observer does at every pass) and, when `outcome` is not empty, takes a replay request and
// stores a cycle with that outcome answering it (trigger demand, started 20 s into the job).
class FakeObserver {
 public:
  FakeObserver(const std::string& store, const std::string& outcome)
      : thread_([this, store, outcome] { loop(store, outcome); }) {}
  ~FakeObserver() {
    stop_ = true;
    thread_.join();
  }

 private:
  void loop(const std::string& store, const std::string& outcome) {
    std::string err;
    auto w = scout::store::StoreWriter::open(store, {}, &err);
    ASSERT_TRUE(w) << err;
    scout::obs::JobInfo job = *scout::store::StoreReader::open(store)->job();
    const std::string prefix = scout::obs::replay_request_prefix(store);
    while (!stop_) {
      job.updated_ns += 1;
      w->put_job(job);
      if (!outcome.empty()) {
        if (std::optional<scout::obs::ReplayRequest> rq = scout::obs::take_replay_request(prefix, &err)) {
          scout::obs::ReplayCycleRecord c;
          c.cycle = 1;
          c.trigger = "demand";
          c.started_ns = scout::testing::kFixtureT0 + 20'000'000'000;
          c.ended_ns = c.started_ns + 1'250'000'000;
          c.outcome = outcome;
          c.backend = "emu";
          c.detail = {{"request", rq->id}};
          if (outcome == "inconclusive") c.detail["error"] = "none of the requested ranks runs on this node with a known GPU";
          w->put_replay_cycle(&c);
        }
      }
      w->flush();
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }

  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// `scout replay run` when no observer writes the store (the job is gone): exit 3 and one line
// within 2 s, the request withdrawn (no file left beside the store).
TEST_F(Cli, ReplayRunWithoutAnObserverFailsFastWithExit3) {
  const auto t0 = std::chrono::steady_clock::now();
  Result r = scout(dir_.path(), "replay run --store " + store_);
  const double took_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.rc, 3) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(replace_all(r.err, dir_.path(), "<DIR>"),
            "scout: no observer answered: <DIR>/state/demo/node-0.db was last written at 2025-01-01 00:00:12.500 UTC "
            "and nothing took the request within 1.50s (scout-observer of this job is not running on this node); "
            "request withdrawn\n");
  EXPECT_LE(took_s, 2.0) << "scout replay run took " << took_s << " s to say no observer answered";
  for (const auto& e : std::filesystem::directory_iterator(dir_.path() + "/state/demo"))
    EXPECT_EQ(e.path().filename().string().find(".replay-request."), std::string::npos) << e.path();
  // A job that never started has no store: a usage error.
  EXPECT_EQ(fails("replay run --store " + dir_.path() + "/none.db"),
            "scout: no store at <DIR>/none.db (is scout-observer running for this job on this node?)\n");
  EXPECT_EQ(fails("replay run --recipes gemm,disk --store " + store_),
            "scout: --recipes: 'disk' is not one of gemm, coll, link\n");
}

// An observer that runs but does not take the request (replay off) is no answer either: exit 3
// after --wait-s, not a verdict.
TEST_F(Cli, ReplayRunWithAnObserverThatDoesNotTakeTheRequestExits3) {
  FakeObserver live(store_, "");
  Result r = scout(dir_.path(), "replay run --wait-s 2 --store " + store_);
  EXPECT_EQ(r.rc, 3) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err,
            "scout: the observer is running but did not take the replay request within 2 s (is replay on, "
            "SCOUT_REPLAY=1? a cycle in flight is finished first: scout replay list); request withdrawn\n");
}

// The cycle's verdict decides the exit code: 1 when it found a failing GPU or link, 4 when it
// answered without a verdict; the cycle is printed as `scout replay show` prints it.
TEST_F(Cli, ReplayRunExitCodeSaysTheVerdict) {
  {
    FakeObserver obs(store_, "fail");
    Result r = scout(dir_.path(), "replay run --wait-s 20 --store " + store_);
    EXPECT_EQ(r.rc, 1) << r.err;
    EXPECT_EQ(r.err, "");
    EXPECT_EQ(r.out.substr(0, r.out.find('\n') + 1), "replay cycle 1 (id 1): trigger demand, fail, backend emu\n")
        << r.out;
  }
  {
    FakeObserver obs(store_, "inconclusive");
    Result r = scout(dir_.path(), "replay run --wait-s 20 --store " + store_);
    EXPECT_EQ(r.rc, 4) << r.err;
    EXPECT_EQ(r.err, "");
    EXPECT_EQ(r.out,
              "replay cycle 1 (id 2): trigger demand, inconclusive, backend emu\n"
              "  started 2025-01-01 00:00:20.000 UTC, took 1.25s\n"
              "  found: -\n"
              "  error: none of the requested ranks runs on this node with a known GPU\n"
              "  recipes: 0 asked; GPUs: 0\n");
  }
}

// `scout clean` also removes what scout-sim leaves beside the segments: the emulated GPUs' device
// files of jobs with no running writer, and temporaries whose writer is gone; those of a running
// job, a temporary being written and files that are not scout's stay.
TEST_F(Cli, CleanRemovesTheEmulatedDevicesOfJobsThatAreGone) {
  const std::string shm = dir_.path() + "/shm";
  std::filesystem::create_directories(shm);
  scout::shm::SegmentIdentity id;
  id.job = "live";
  id.host = "h";
  std::string err;
  auto live = scout::shm::SegmentWriter::create(shm, id, 1, 16, &err);
  ASSERT_TRUE(live) << err;
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(0);
  int st = 0;
  ::waitpid(child, &st, 0);
  const std::string gone = shm + "/scout-emugpu.gone.job.GPU-sim-node0-1.json";
  const std::string gone_tmp = gone + ".tmp." + std::to_string(child);
  const std::string writing = gone + ".tmp." + std::to_string(::getpid());
  const std::string kept = shm + "/scout-emugpu.live.GPU-sim-node0-0.json";
  const std::string other = shm + "/notes.txt";
  for (const std::string& p : {gone, gone_tmp, writing, kept, other}) std::ofstream(p) << "{}\n";
  Result r = scout(dir_.path(), "clean --dir " + shm);
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out, "removed " + gone + " (emulated-device state of GPU-sim-node0-1, job gone.job not running)\n" +
                       "removed " + gone_tmp + " (unfinished emulated-device state of GPU-sim-node0-1, pid " +
                       std::to_string(child) + " gone)\n" +
                       "scout clean: 0 segments and 2 emulated-device files removed (6B), 1 of running processes "
                       "kept, 0 left alone, in " +
                       shm + "\n");
  for (const std::string& p : {writing, kept, other, live->path()}) EXPECT_TRUE(std::filesystem::exists(p)) << p;
  EXPECT_FALSE(std::filesystem::exists(gone));
  EXPECT_FALSE(std::filesystem::exists(gone_tmp));
  // --job: only that job's files; the running one's stay.
  r = scout(dir_.path(), "clean --dir " + shm + " --job live");
  EXPECT_EQ(r.out, "scout clean: 0 segments removed (0B), 1 of running processes kept, 0 left alone, in " + shm + "\n");
  EXPECT_TRUE(std::filesystem::exists(kept));
}

// The cause on the first screen: a straggler's cause and the number that proves it on its status
// line, in its findings row and right under the summary of explain (gpu: replay's GEMM time vs
// the median; host: replay's GEMM time at the median and its lateness; unknown: its lateness).
TEST_F(Cli, StragglerCauseIsOnTheFirstScreen) {
  {
    std::string err;
    auto w = scout::store::StoreWriter::open(store_, {}, &err);
    ASSERT_TRUE(w) << err;
    scout::obs::Finding base = *scout::store::StoreReader::open(store_)->finding(2);
    const char* causes[] = {"gpu", "host", "unknown"};
    for (int i = 0; i < 3; ++i) {
      scout::obs::Finding f = base;
      f.id = 0;
      f.dedup_key = std::string("straggler-cause-") + causes[i];
      f.open = true;
      f.evidence["cause"] = causes[i];
      if (i == 0)
        f.evidence["replay"] = {{"cycle", 4}, {"recipe", "gemm:fp32:4096x4096x4096"}, {"ms", {27.608, 27.384}},
                                {"median_ms", 6.898}};
      if (i == 1)
        f.evidence["replay"] = {{"cycle", 5}, {"recipe", "gemm:fp32:4096x4096x4096"}, {"ms", {6.93, 6.911}},
                                {"median_ms", 6.898}};
      w->upsert_finding(&f);
    }
    ASSERT_TRUE(w->flush());
  }
  std::string text = "$ scout status\n" + ok("status") + "$ scout findings --open\n" + ok("findings --open");
  for (const char* id : {"4", "5", "6"}) {
    std::string e = ok(std::string("explain ") + id);
    text += std::string("$ scout explain ") + id + " (first 3 lines)\n";
    for (int n = 0, p = 0; n < 3; ++n) {
      size_t q = e.find('\n', p);
      text += e.substr(p, q + 1 - p);
      p = int(q + 1);
    }
  }
  golden("straggler_cause.txt", text);
  EXPECT_NE(text.find("     cause: its GPU: replay cycle 4 ran gemm:fp32:4096x4096x4096 in 27.6ms and 27.4ms (2 rounds) "
                      "vs 6.90ms median\n"),
            std::string::npos)
      << text;
  // The host case carries replay's numbers too: its GPU ran the GEMM at the median.
  EXPECT_NE(text.find("     cause: the host, input pipeline or launch path: replay cycle 5 ran gemm:fp32:4096x4096x4096 "
                      "on its GPU in 6.93ms and 6.91ms (2 rounds) vs 6.90ms median (normal); it arrives "),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("cause host: GEMM 6.93ms vs 6.90ms median, "), std::string::npos) << text;
}

// docs/cli.md's synopsis (its first code block) has a line for every subcommand `scout --help`
// lists, in the same order.
TEST_F(Cli, SynopsisListsEverySubcommand) {
  Result r = scout(dir_.path(), "--help");
  ASSERT_EQ(r.rc, 0) << r.err;
  std::vector<std::string> help;
  std::istringstream in(r.out.substr(r.out.find("Subcommands:\n") + 13));
  for (std::string l; std::getline(in, l);)
    if (l.size() > 2 && l[0] == ' ') help.push_back(l.substr(2, l.find(' ', 2) - 2));
  const std::string doc = slurp(source_path("docs/cli.md"));
  const size_t a = doc.find("```\n") + 4;
  std::istringstream block(doc.substr(a, doc.find("```", a) - a));
  std::vector<std::string> synopsis;
  for (std::string l; std::getline(block, l);) {
    const std::string name = l.substr(6, l.find(' ', 6) - 6);
    if (synopsis.empty() || synopsis.back() != name) synopsis.push_back(name);
  }
  EXPECT_EQ(synopsis, help);
}

// A candidate says why it has no verdict, and `ckpt list`, `ckpt latest` and `status` tell one
// story: one a known finding already rejects says so on every screen (the observer records that
// verdict only when a check cycle is judged; `ckpt latest` never names it); one no finding
// rejects says, while the job runs, how many clean check cycles it has, how long until it
// verifies at the earliest and the value that shortens the cycle (never the current one), and
// once every rank exited or died that it cannot verify (a state of its own, not "waiting").
TEST_F(Cli, CandidateSaysWhenItWouldVerifyOrThatItCannot) {
  scout::testing::write_demo_history(store_);
  {
    // The sdc finding #1 stopped at t0+10 s; candidate 4 completed after it at t0+100 s.
    std::string err;
    auto w = scout::store::StoreWriter::open(store_, {}, &err);
    ASSERT_TRUE(w) << err;
    scout::obs::Finding f = *scout::store::StoreReader::open(store_)->finding(1);
    f.open = false;
    f.last_seen_ns = scout::testing::kFixtureT0 + 10'000'000'000;
    w->upsert_finding(&f);
    ASSERT_TRUE(w->flush());
    auto ck = scout::ckpt::CkptStore::open_writer(store_);
    ck->begin();
    scout::ckpt::Checkpoint c;
    c.path = "/ckpt/iter_0000400";
    c.framework = "megatron";
    c.step = 400;
    c.completed_ns = scout::testing::kFixtureT0 + 100'000'000'000;
    c.discovered_ns = c.completed_ns;
    ck->put_checkpoint(&c);
    ck->commit();
  }
  auto checkpoint_lines = [](const std::string& status) {
    size_t a = status.find("checkpoints:");
    return a == std::string::npos ? status : status.substr(a, status.find("details:") - a);
  };
  auto latest = [&]() {
    Result r = scout(dir_.path(), "ckpt latest --store " + store_);
    return "$ scout ckpt latest (exit " + std::to_string(r.rc) + ")\n" + r.out + r.err;
  };
  std::string text = "$ scout ckpt list (job running)\n" + ok("ckpt list") + "$ scout status (job running)\n" +
                     checkpoint_lines(ok("status")) + latest();
  {
    std::string err;
    auto w = scout::store::StoreWriter::open(store_, {}, &err);
    ASSERT_TRUE(w) << err;
    std::vector<scout::obs::RankInfo> ranks = scout::store::StoreReader::open(store_)->ranks();
    for (auto& r : ranks)
      if (r.state == "running") r.state = "exited";
    w->put_ranks(ranks);
    ASSERT_TRUE(w->flush());
  }
  text += "$ scout ckpt list (job ended)\n" + ok("ckpt list") + "$ scout status (job ended)\n" +
          checkpoint_lines(ok("status")) + latest();
  golden("ckpt_candidates.txt", text);
  EXPECT_NE(text.find("candidate  a finding rejects it: sdc finding #1 (attributed) after it was written (the job "
                      "ended before a check cycle recorded it)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("candidate  waiting: 0 of 2 clean check cycles; verifies in 8.00s at the earliest (a drill "
                      "sets SCOUT_CHECK_CYCLE_S=1)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("candidate  cannot verify: the job ended after 0 of 2 clean check cycles of 4.00s (a drill "
                      "sets SCOUT_CHECK_CYCLE_S=1)\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("SCOUT_CHECK_CYCLE_S=4"), std::string::npos) << text;  // never the value already set
}

// One vocabulary once a job died: its communicators are never shown active when every member
// rank is gone (at least one dead), and explain says beside a suspect that its process is no
// longer running.
TEST_F(Cli, DeadJobShowsNoActiveCommunicatorAndExplainSaysTheProcessIsGone) {
  {
    std::string err;
    auto w = scout::store::StoreWriter::open(store_, {}, &err);
    ASSERT_TRUE(w) << err;
    std::vector<scout::obs::RankInfo> ranks = scout::store::StoreReader::open(store_)->ranks();
    for (auto& r : ranks) r.state = r.global_rank < 4 ? "dead" : "exited";
    w->put_ranks(ranks);
    ASSERT_TRUE(w->flush());
  }
  const std::string status = ok("status");
  const std::string comms = status.substr(status.find("communicators:"), status.find("findings:") - status.find("communicators:"));
  EXPECT_EQ(comms,
            "communicators: 3 (1 hung, 2 dead)\n"
            "  NAME   HASH                RANKS  NODES  STATE  OPS DONE  LAST PROGRESS  COMPLETED PER FUNCTION\n"
            "  dp3    0xd3d3d3d3d3d3d3d3      2      2  hung          7  3.60s ago      AllReduce=7\n"
            "  world  0x1111aaaa2222bbbb      8      2  dead         41  2.30s ago      AllReduce=41\n"
            "  tp0    0x7a0000000000a0a0      2      1  dead         24  300ms ago      ReduceScatter=12 AllGather=12\n");
  const std::string e = ok("explain 2");
  EXPECT_NE(e.find("suspect:\n  rank 3 (node0, pid 1003, GPU GPU-3), comm rank 3; its process is dead\n"),
            std::string::npos)
      << e;
}

}  // namespace

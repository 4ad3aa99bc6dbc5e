// The CLI on a store produced by a real run: `scout run` starts the real scout-observer around
// `scout-sim` (8 ranks, TP=2 PP=2, fixed seed, an SDC injected on rank 5 in the world
// Broadcast of step 10), then every subcommand is compared with small reviewed golden files in
// test/fixtures/cli/real/ after normalising what legitimately varies between runs (times,
// durations, pids, the temporary directory, the scout version), while what must not vary is
// exact: kinds, verdicts, suspects' global ranks, operation keys, fingerprints (data depend only
// on the seed), ops per communicator and function. The observer runs at its defaults; SDC does not
// depend on timing, and any other finding would show in the golden files.
//
// To regenerate the golden files after an intended change: `make update-golden`, then review
// `git diff test/fixtures/cli/real` (test/support/golden.h).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "observer/export/chrome_trace.h"
#include "test/support/golden.h"
#include "test/support/prom_check.h"
#include "test/support/subprocess.h"
#include "test/support/tmpdir.h"

namespace {

namespace fs = std::filesystem;
using scout::testing::build_path;
using scout::testing::ProcessResult;
using scout::testing::run_process;
using scout::testing::slurp;
using scout::testing::source_path;
using scout::testing::TempDir;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> v;
  std::istringstream in(text);
  std::string l;
  while (std::getline(in, l)) v.push_back(l);
  return v;
}

std::string regex_all(std::string s, const char* re, const char* to) {
  return std::regex_replace(s, std::regex(re), to);
}

// The job every test reads: run once for the whole suite.
struct Job {
  std::unique_ptr<TempDir> dir;
  std::map<std::string, std::string> env;
  ProcessResult run;  // scout run -- scout-sim ...
  std::string store;  // its store
  std::string truth;  // the sim's ground truth
};

Job* g_job = nullptr;

class RealRun : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    g_job = new Job;
    Job& j = *g_job;
    j.dir = std::make_unique<TempDir>();
    const std::string d = j.dir->path();
    fs::create_directories(d + "/shm");
    j.env = {{"SCOUT_SHM_DIR", d + "/shm"},
             {"SCOUT_STATE_DIR", d + "/state"},
             {"SCOUT_HOST", "node0"},
             // Hermetic: nothing from the caller's job or launcher.
             {"SCOUT_JOB_ID", ""},
             {"TORCHELASTIC_RUN_ID", ""},
             {"SLURM_JOB_ID", ""},
             {"NCCL_PROFILER_PLUGIN", ""},
             {"SCOUT_GPU", ""}};
    j.truth = d + "/truth.jsonl";
    j.run = run_process({build_path("bin/scout"),
                         "run",
                         "--job",
                         "golden",
                         "--keep-segments",
                         "--",
                         build_path("bin/scout-sim"),
                         "--ranks",
                         "8",
                         "--tp",
                         "2",
                         "--pp",
                         "2",
                         "--steps",
                         "12",
                         "--seed",
                         "7",
                         "--fault",
                         "sdc:rank=5,op=111",
                         "--truth",
                         j.truth},
                        j.env, 120);
    j.store = d + "/state/golden/node-0.db";
  }
  static void TearDownTestSuite() {
    delete g_job;
    g_job = nullptr;
  }

  // `scout ARGS --job golden`; must succeed silently on stderr.
  std::string scout(std::vector<std::string> args) {
    args.insert(args.begin(), build_path("bin/scout"));
    args.push_back("--job");
    args.push_back("golden");
    ProcessResult r = run_process(args, g_job->env, 60);
    EXPECT_EQ(r.exit_code, 0) << args[1] << ": " << r.err;
    EXPECT_EQ(r.err, "") << args[1];
    return r.out;
  }

  // Text output with what varies between runs replaced by placeholders.
  static std::string normalize(std::string s) {
    s = regex_all(s, g_job->dir->path().c_str(), "<DIR>");
    s = regex_all(s, build_path("bin/scout").c_str(), "<SCOUT>");  // hints name the path scout was run by
    s = regex_all(s, R"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC)", "<UTC>");
    s = regex_all(s, R"(\(observer [^,]+, up [^)]+\))", "(observer <VERSION>, up <DURATION>)");
    s = regex_all(s, R"(pid \d+)", "pid <PID>");
    s = regex_all(s, R"((\d+(\.\d+)?(ns|us|ms|s)|\d+m\d\ds|\d+h\d\dm) ago|\bnow\b)", "<AGO>");
    s = regex_all(s, R"([+-]\d+\.\d{3}s)", "<REL>");
    return regex_all(s, R"((\S) {2,})", "$1  ");  // column widths follow the values replaced above
  }

  // JSON with times (*_ns), pids and timing-derived values replaced.
  static nlohmann::json normalize(nlohmann::json j) {
    if (j.is_object()) {
      for (auto it = j.begin(); it != j.end(); ++it) {
        const std::string& k = it.key();
        bool timing = k == "pid" || k == "busbw_gbps" || k == "last_rank" ||
                      (k.size() > 3 && k.compare(k.size() - 3, 3, "_ns") == 0);
        if (timing && !it.value().is_null()) {
          it.value() = "<V>";
        } else {
          it.value() = normalize(it.value());
        }
      }
    } else if (j.is_array()) {
      for (auto& e : j) e = normalize(e);
    } else if (j.is_string()) {
      j = regex_all(j.get<std::string>(), R"(pid \d+)", "pid <PID>");
    }
    return j;
  }

  static void golden(const std::string& name, const std::string& actual) {
    scout::testing::expect_golden(source_path("test/fixtures/cli/real/" + name), actual);
  }
};

// The run itself: the sim completed, the injected fault is where the test expects it, and
// `scout run` printed the store's status, naming rank 5.
TEST_F(RealRun, RunCompletesAndItsStatusNamesTheInjectedRank) {
  const Job& j = *g_job;
  ASSERT_EQ(j.run.exit_code, 0) << j.run.err;
  auto truth = nlohmann::json::parse(slurp(j.truth));
  EXPECT_EQ(truth["kind"], "sdc");
  EXPECT_EQ(truth["global_rank"], 5);
  EXPECT_EQ(truth["comm"]["name"], "world");
  EXPECT_EQ(truth["key"], (nlohmann::json{{"func", "Broadcast"}, {"seq", 1}}));
  EXPECT_EQ(truth["step"], 10);
  EXPECT_EQ(j.run.err.substr(0, j.run.err.find('\n') + 1), "scout: job golden, store " + j.store + "\n");
  // stdout: the sim's two lines, then exactly `scout status --job golden`.
  auto out = lines_of(j.run.out);
  ASSERT_GT(out.size(), 2u);
  EXPECT_EQ(out[0].rfind("scout-sim: job golden: 8 ranks (tp 2, pp 2, dp 2, ep 1)", 0), 0u) << out[0];
  EXPECT_EQ(out[1].rfind("scout-sim: job golden: 8 ranks, 12/12 steps,", 0), 0u) << out[1];
  std::string status = j.run.out.substr(out[0].size() + out[1].size() + 2);
  EXPECT_EQ(status, scout({"status"}));
  golden("status.txt", normalize(status));
}

TEST_F(RealRun, ReportPerCommunicator) {
  // Rows are ordered by first GPU start, which only fixes the order within one communicator:
  // each report shows one. SPREAD, LAST, DURATION and BUSBW are timings: replaced by "~".
  std::string text;
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"report", "--comm", "world"},
           {"report", "--comm", "dp3", "--last", "4"},
           {"report", "--comm", "tp2", "--func", "allgather", "--last", "3", "--rank", "5"}}) {
    text += "$ scout";
    for (const auto& a : args) text += " " + a;
    text += "\n";
    for (const auto& line : lines_of(scout(args))) {
      std::istringstream in(line);
      std::vector<std::string> t;
      for (std::string w; in >> w;) t.push_back(w);
      if (t.size() >= 13 && t[0] != "COMM") {
        for (size_t i = 7; i <= 10; ++i) t[i] = "~";
        if (t.size() == 14) t[13] = "~";  // LATE rR
      }
      std::string joined;
      for (const auto& w : t) joined += (joined.empty() ? "" : " ") + w;
      text += joined + "\n";
    }
  }
  golden("report.txt", text);
}

TEST_F(RealRun, FindingsAndExplain) {
  std::string jsonl;
  for (const auto& line : lines_of(scout({"findings", "--json"}))) {
    jsonl += normalize(nlohmann::json::parse(line)).dump() + "\n";
  }
  golden("findings.jsonl", jsonl);
  auto f = nlohmann::json::parse(lines_of(scout({"findings", "--json"})).at(0));
  EXPECT_EQ(f["kind"], "sdc");
  EXPECT_EQ(f["verdict"], "attributed");
  EXPECT_EQ(f["suspects"].size(), 1u);
  EXPECT_EQ(f["suspects"][0]["global_rank"], 5);
  EXPECT_EQ(f["key"], (nlohmann::json{{"func", "Broadcast"}, {"seq", 1}}));
  EXPECT_EQ(f["comm"]["name"], "world");
  golden("findings.txt", normalize(scout({"findings"})));
  golden("explain_1.txt", normalize(scout({"explain", "1"})));
}

// The same segments read after the fact by `scout-observer --once` give the same findings.
TEST_F(RealRun, PostMortemObserverFindsTheSame) {
  const std::string pm = g_job->dir->path() + "/pm.db";
  ProcessResult r = run_process(
      {build_path("bin/scout-observer"), "--job", "golden", "--once", "--quiet", "--store", pm}, g_job->env, 60);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ProcessResult a = run_process({build_path("bin/scout"), "findings", "--json", "--store", pm}, g_job->env);
  std::string live, post;
  for (const auto& l : lines_of(scout({"findings", "--json"})))
    live += normalize(nlohmann::json::parse(l)).dump() + "\n";
  for (const auto& l : lines_of(a.out)) post += normalize(nlohmann::json::parse(l)).dump() + "\n";
  EXPECT_EQ(post, live);
}

// JSON lines: the whole store. Golden: a summary of what must not vary (header, ranks,
// communicators, findings, operations per communicator and function with their verdicts).
TEST_F(RealRun, ExportJsonl) {
  std::map<std::string, int> types;
  std::map<std::string, std::map<std::string, int>> ops;  // "comm func" -> field value -> count
  std::string ranks, comms, findings, header;
  for (const auto& line : lines_of(scout({"export", "--format", "jsonl"}))) {
    auto j = nlohmann::json::parse(line);
    std::string t = j["type"];
    types[t]++;
    if (t == "header") {
      header = "header: " + j["format"].get<std::string>() + " v" + j["version"].dump() + ", schema " +
               j["schema_version"].dump() + ", job " + j["job"]["job"].get<std::string>() + "\n";
    } else if (t == "rank") {
      ranks += "rank " + j["global_rank"].dump() + " " + j["host"].get<std::string>() + " " +
               j["gpu"].get<std::string>() + " " + j["state"].get<std::string>() + "\n";
    } else if (t == "comm") {
      comms += "comm " + j["name"].get<std::string>() + " " + j["hash"].get<std::string>() + " nranks " +
               j["nranks"].dump() + " ops_complete " + j["ops_complete"].dump() + " last_seq " + j["last_seq"].dump() +
               " " + j["state"].get<std::string>() + "\n";
    } else if (t == "finding") {
      findings += "finding " + j["id"].dump() + " " + j["kind"].get<std::string>() + " " +
                  j["verdict"].get<std::string>() + " suspects " + j["suspects"][0]["global_rank"].dump() + "\n";
    } else if (t == "op") {
      auto& o = ops[j["comm"]["name"].get<std::string>() + " " + j["func"].get<std::string>()];
      o["ops"]++;
      o["fp " + j["fp_verdict"].get<std::string>()]++;
      o["meta " + j["meta_verdict"].get<std::string>()]++;
      o["complete on " + j["ranks_complete"].dump() + " of " + j["nranks"].dump()]++;
      o["timings " + std::to_string(j["timings"].size())]++;
      o["bytes " + j["bytes"].dump()]++;
    }
  }
  std::string text = header;
  for (const auto& [t, n] : types) text += "lines " + t + ": " + std::to_string(n) + "\n";
  text += ranks + comms + findings;
  for (const auto& [k, m] : ops) {
    text += "ops " + k + ":";
    for (const auto& [field, n] : m) text += " [" + field + "] " + std::to_string(n);
    text += "\n";
  }
  golden("export_jsonl_summary.txt", text);
}

// Prometheus: passes the strict format check (and promtool when installed); golden of the
// families that do not depend on timing, every other family present.
TEST_F(RealRun, ExportPrometheus) {
  std::string prom = scout({"export", "--format", "prometheus"});
  EXPECT_EQ(scout::testing::check_exposition(prom), "");
  std::string pt = scout::testing::promtool_check(prom);
  if (pt != "skip") { EXPECT_EQ(pt, ""); }
  static const std::set<std::string> kStable = {"scout_info",
                                                "scout_ranks",
                                                "scout_rank_alive",
                                                "scout_comm_ops_complete",
                                                "scout_comm_state",
                                                "scout_findings_open",
                                                "scout_findings_closed",
                                                "scout_finding_suspect",
                                                "scout_collectives_stored",
                                                "scout_store_ops_dropped_total"};
  std::set<std::string> families;
  std::string text;
  for (const auto& line : lines_of(prom)) {
    if (line.rfind("# TYPE ", 0) == 0) {
      std::string fam = line.substr(7, line.find(' ', 7) - 7);
      families.insert(fam);
    }
    if (line.empty() || line[0] == '#') continue;
    std::string fam = line.substr(0, line.find_first_of("{ "));
    if (!kStable.count(fam)) continue;
    if (fam == "scout_comm_state" && line.substr(line.size() - 2) != " 1") continue;  // the current state only
    text += line + "\n";
  }
  for (const char* f : {"scout_last_update_timestamp_seconds", "scout_rank_lateness_seconds",
                        "scout_comm_last_progress_timestamp_seconds", "scout_collective_duration_seconds",
                        "scout_collective_duration_max_seconds", "scout_collective_arrival_spread_seconds",
                        "scout_bus_bandwidth_gbps"}) {
    EXPECT_TRUE(families.count(f)) << f;
  }
  golden("export_stable.prom", text);
}

// Chrome trace: passes the schema check; one track per rank with one slice per operation the
// rank took part in, one track per finding.
TEST_F(RealRun, ExportChromeTrace) {
  auto trace = nlohmann::json::parse(scout({"export", "--format", "chrome-trace"}));
  EXPECT_EQ(scout::exporter::check_chrome_trace(trace), "");
  std::map<std::string, int> slices;  // "pid/tid cat" -> count
  std::map<std::string, std::string> names;
  for (const auto& e : trace["traceEvents"]) {
    std::string track = e["pid"].dump() + "/" + e["tid"].dump();
    if (e["ph"] == "X") slices[track + " " + e["cat"].get<std::string>()]++;
    if (e["ph"] == "M" && e["name"] == "thread_name") names[track] = e["args"]["name"];
  }
  std::string text;
  for (const auto& [k, n] : slices) {
    std::string track = k.substr(0, k.find(' '));
    text += k + " " + std::to_string(n) + "  (" + names[track] + ")\n";
  }
  golden("trace_summary.txt", normalize(text));
}

// `scout dump` prints what build/bin/scout-dump prints (the same library), and one op line per
// operation the sim issued.
TEST_F(RealRun, DumpMatchesScoutDump) {
  const std::string shm = g_job->dir->path() + "/shm";
  std::string mine = scout({"dump"});  // --job golden, SCOUT_SHM_DIR
  ProcessResult theirs = run_process({build_path("bin/scout-dump"), "--job", "golden", "--dir", shm}, g_job->env);
  ASSERT_EQ(theirs.exit_code, 0) << theirs.err;
  // Lines may differ only in the owner's liveness read at dump time: both read dead owners.
  EXPECT_EQ(mine, theirs.out);
  std::map<std::string, int> types;
  for (const auto& l : lines_of(mine)) types[nlohmann::json::parse(l)["type"]]++;
  EXPECT_EQ(types["segment"], 8);
  EXPECT_EQ(types["comm"], 8 * 4);  // world, tp, dp, pp per rank
  EXPECT_EQ(types["gap"], 0);
  std::smatch m;
  std::string summary = lines_of(g_job->run.out).at(1);
  ASSERT_TRUE(std::regex_search(summary, m, std::regex(R"(, (\d+) ops,)"))) << summary;
  EXPECT_EQ(types["op"], std::stoi(m[1]));
  // Errors: one line each, exit code 2.
  ProcessResult bad = run_process({build_path("bin/scout"), "dump", shm + "/nosuch"}, g_job->env);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.out, "");
  EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1) << bad.err;
  bad = run_process({build_path("bin/scout"), "dump", "--job", "nojob"}, g_job->env);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(normalize(bad.err),
            "scout: no segment of job nojob in <DIR>/shm (give segment paths, or --job ID [--dir DIR])\n");
}

}  // namespace

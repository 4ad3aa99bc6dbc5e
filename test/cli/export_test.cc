// Export formats checked as formats: the Prometheus file passes `promtool check metrics` (Debian
// package prometheus) and, always, a strict parser of the text exposition format 0.0.4; the
// Chrome trace passes the schema check (exporter::check_chrome_trace), and the check itself
// rejects broken traces. Perfetto's trace_processor is not packaged for Debian 12, so the
// schema check stands in for it (docs/cli.md).
#include <sys/wait.h>

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "observer/export/chrome_trace.h"
#include "observer/export/prometheus.h"
#include "observer/export/snapshot.h"
#include "observer/model/replay_cycle.h"
#include "observer/store/reader.h"
#include "test/support/cli_fixture.h"
#include "test/support/prom_check.h"
#include "test/support/tmpdir.h"

namespace {

using scout::testing::check_exposition;
using scout::testing::TempDir;

scout::exporter::Snapshot demo_snapshot(const TempDir& dir) {
  std::string path = dir.path() + "/demo.db";
  scout::testing::write_demo_store(path);
  auto rd = scout::store::StoreReader::open(path);
  return scout::exporter::load_snapshot(*rd, true);
}

TEST(Prometheus, StrictParserAcceptsTheExport) {
  TempDir dir;
  std::ostringstream out;
  scout::exporter::write_prometheus(demo_snapshot(dir), out);
  EXPECT_EQ(check_exposition(out.str()), "");
}

// With checkpoints, check cycles and replay cycles in the store (their families have samples).
scout::exporter::Snapshot history_snapshot(const TempDir& dir) {
  std::string path = dir.path() + "/demo.db";
  scout::testing::write_demo_store(path);
  scout::testing::write_demo_history(path);
  auto rd = scout::store::StoreReader::open(path);
  return scout::exporter::load_snapshot(*rd, true, true);
}

TEST(Prometheus, StrictParserAcceptsTheExportWithCheckpointsAndReplay) {
  TempDir dir;
  std::ostringstream out;
  scout::exporter::write_prometheus(history_snapshot(dir), out);
  EXPECT_EQ(check_exposition(out.str()), "");
  EXPECT_NE(out.str().find("scout_checkpoints{job=\"demo\",state=\"verified\"} 1\n"), std::string::npos);
  EXPECT_NE(out.str().find("scout_replay_last_outcome{job=\"demo\",outcome=\"fail\"} 1\n"), std::string::npos);
}

// A cycle that passed but timed a GPU slow counts as "slow", as `scout replay list` says, so an
// alert can see a slow GPU found by replay.
TEST(Prometheus, ReplayCycleThatFoundASlowGpuIsCountedSlow) {
  TempDir dir;
  scout::exporter::Snapshot s = history_snapshot(dir);
  scout::obs::ReplayCycleRecord slow = s.replay_cycles.front();
  slow.cycle = 3;
  slow.outcome = "pass";
  slow.ended_ns += 20'000'000'000;
  slow.detail["verdict"] = {{"slow_gpus", {{{"global_rank", 5}, {"recipe", "gemm:fp32:4096x4096x4096"}}}}};
  s.replay_cycles.push_back(slow);
  EXPECT_EQ(scout::obs::outcome_word(slow), "slow");
  std::ostringstream out;
  scout::exporter::write_prometheus(s, out);
  EXPECT_EQ(check_exposition(out.str()), "");
  const std::string text = out.str();
  const size_t a = text.find("# HELP scout_replay_cycles_total");
  const size_t b = text.find("# HELP scout_replay_last_timestamp_seconds");
  ASSERT_NE(a, std::string::npos);
  ASSERT_NE(b, std::string::npos);
  EXPECT_EQ(text.substr(a, b - a),
            "# HELP scout_replay_cycles_total Replay cycles run, by outcome (pass, slow, fail, inconclusive).\n"
            "# TYPE scout_replay_cycles_total counter\n"
            "scout_replay_cycles_total{job=\"demo\",outcome=\"fail\"} 1\n"
            "scout_replay_cycles_total{job=\"demo\",outcome=\"inconclusive\"} 0\n"
            "scout_replay_cycles_total{job=\"demo\",outcome=\"pass\"} 1\n"
            "scout_replay_cycles_total{job=\"demo\",outcome=\"slow\"} 1\n"
            "# HELP scout_replay_last_outcome 1 for the outcome of the latest replay cycle, else 0.\n"
            "# TYPE scout_replay_last_outcome gauge\n"
            "scout_replay_last_outcome{job=\"demo\",outcome=\"fail\"} 0\n"
            "scout_replay_last_outcome{job=\"demo\",outcome=\"inconclusive\"} 0\n"
            "scout_replay_last_outcome{job=\"demo\",outcome=\"pass\"} 0\n"
            "scout_replay_last_outcome{job=\"demo\",outcome=\"slow\"} 1\n");
}

TEST(Prometheus, StrictParserRejectsBrokenFiles) {
  EXPECT_EQ(check_exposition("x 1\n"), "line 1: sample of undeclared family x");
  EXPECT_EQ(check_exposition("# HELP x h\n# TYPE x gauge\nx{a=\"b} 1\n"), "line 3: bad label syntax: a=\"b");
  EXPECT_EQ(check_exposition("# HELP x h\n# TYPE x gauge\nx 1\nx 2\n"), "line 4: duplicate series");
  EXPECT_EQ(check_exposition("# HELP x h\n# TYPE x gauge\nx one\n"), "line 3: bad value");
  EXPECT_EQ(check_exposition("# HELP x_c h\n# TYPE x_c counter\nx_c 1\n"), "line 3: counter without _total");
}

TEST(Prometheus, LabelValuesAreEscaped) {
  EXPECT_EQ(scout::exporter::prom_escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
  TempDir dir;
  scout::exporter::Snapshot s = demo_snapshot(dir);
  s.comms[0].name = "odd \"name\"\\\n";
  std::ostringstream out;
  scout::exporter::write_prometheus(s, out);
  EXPECT_EQ(check_exposition(out.str()), "");
  EXPECT_NE(out.str().find("comm=\"odd \\\"name\\\"\\\\\\n\""), std::string::npos);
}

TEST(Prometheus, PromtoolCheckMetrics) {
  TempDir dir;
  std::ostringstream out;
  scout::exporter::write_prometheus(history_snapshot(dir), out);
  std::string r = scout::testing::promtool_check(out.str());
  if (r == "skip") {
    GTEST_SKIP() << "promtool not installed (Debian package prometheus): only the strict parser "
                    "test checks the format";
  }
  EXPECT_EQ(r, "");  // passes, with no lint complaints either
}

TEST(ChromeTrace, ExportPassesTheSchemaCheck) {
  TempDir dir;
  nlohmann::json t = scout::exporter::chrome_trace(demo_snapshot(dir));
  EXPECT_EQ(scout::exporter::check_chrome_trace(t), "");
  // Round trip through text: what Perfetto would read.
  EXPECT_EQ(scout::exporter::check_chrome_trace(nlohmann::json::parse(t.dump())), "");
}

TEST(ChromeTrace, RunningOperationEndsAtTheLastUpdate) {
  TempDir dir;
  scout::exporter::Snapshot s = demo_snapshot(dir);
  nlohmann::json t = scout::exporter::chrome_trace(s);
  // dp3 AllReduce #7 on rank 3 started at T0+8.951s and never ended: its slice lasts until the
  // store's last update (T0+12.5s), 3.549 s.
  bool found = false;
  for (const auto& e : t["traceEvents"]) {
    if (e["ph"] == "X" && e["name"] == "AllReduce dp3") {
      found = true;
      EXPECT_EQ(e["tid"], 3);
      EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 3549000.0);
      EXPECT_EQ(e["args"]["complete"], false);
    }
  }
  EXPECT_TRUE(found);
}

TEST(ChromeTrace, SchemaCheckRejectsBrokenTraces) {
  using scout::exporter::check_chrome_trace;
  auto named = [](nlohmann::json events) {
    events.push_back(
        {{"name", "process_name"}, {"ph", "M"}, {"ts", 0}, {"pid", 1}, {"tid", 0}, {"args", {{"name", "h"}}}});
    events.push_back(
        {{"name", "thread_name"}, {"ph", "M"}, {"ts", 0}, {"pid", 1}, {"tid", 2}, {"args", {{"name", "rank 2"}}}});
    return nlohmann::json{{"traceEvents", events}};
  };
  nlohmann::json good = {{"name", "a"}, {"ph", "X"}, {"ts", 1}, {"dur", 2}, {"pid", 1}, {"tid", 2}};
  EXPECT_EQ(check_chrome_trace(named({good})), "");
  EXPECT_EQ(check_chrome_trace(nlohmann::json::array()), "top level is not an object");
  EXPECT_EQ(check_chrome_trace({{"events", 1}}), "no traceEvents array");
  nlohmann::json e = good;
  e["dur"] = -1;
  EXPECT_EQ(check_chrome_trace(named({e})), "event 0: X event without dur >= 0");
  e = good;
  e.erase("tid");
  EXPECT_EQ(check_chrome_trace(named({e})), "event 0: no integer tid");
  e = good;
  e["ts"] = "1";
  EXPECT_EQ(check_chrome_trace(named({e})), "event 0: no numeric ts");
  e = good;
  e["tid"] = 9;
  EXPECT_EQ(check_chrome_trace(named({e})), "track pid 1 tid 9 has no thread_name");
  e = good;
  e["pid"] = 4;
  EXPECT_EQ(check_chrome_trace(named({e})), "pid 4 has no process_name");
}

}  // namespace

// `scout report --html` on the deterministic demo store (test/support/cli_fixture.h) with two
// replay cycles and two checkpoints added: the page holds every part docs/cli.md lists (job,
// findings table, timeline, per-kind pictures, the words of `scout explain`, checkpoints, replay
// cycles), loads nothing from outside and runs only its own script (the policy's hash is the
// script's); hostile names from the store come out escaped; the straggler's lateness window read
// from the store; the command's flags and errors. The page in a real browser:
// test/cli/report_browser_test.sh.
#include <openssl/evp.h>
#include <sqlite3.h>

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>

#include "observer/ckpt/ckpt_store.h"
#include "observer/cli/common.h"
#include "observer/cli/html.h"
#include "observer/cli/report_html.h"
#include "observer/cli/report_pictures.h"
#include "observer/export/snapshot.h"
#include "observer/store/reader.h"
#include "observer/store/sqlite.h"
#include "observer/store/writer.h"
#include "test/support/cli_fixture.h"
#include "test/support/subprocess.h"
#include "test/support/tmpdir.h"

namespace {

using namespace scout;
using scout::testing::build_path;
using scout::testing::kFixtureT0;
using scout::testing::ProcessResult;
using scout::testing::run_process;
using scout::testing::TempDir;

constexpr int64_t kS = 1000000000;

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + what.size())) ++n;
  return n;
}

std::string sha256_b64(const std::string& s) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(s.data(), s.size(), md, &n, EVP_sha256(), nullptr);
  unsigned char b64[128];
  int len = EVP_EncodeBlock(b64, md, static_cast<int>(n));
  return std::string(reinterpret_cast<char*>(b64), size_t(len));
}

// The demo store plus a passing and a failing replay cycle and a verified and a rejected
// checkpoint.
class ReportHtml : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = dir_.path() + "/node-0.db";
    scout::testing::write_demo_store(db_);
    store::WriterOptions o;
    o.on_error = [](const std::string& m) { ADD_FAILURE() << m; };
    std::string err;
    auto w = store::StoreWriter::open(db_, o, &err);
    ASSERT_TRUE(w) << err;
    obs::ReplayCycleRecord a;
    a.cycle = 1;
    a.trigger = "periodic";
    a.started_ns = kFixtureT0 + 2 * kS;
    a.ended_ns = a.started_ns + 120000000;
    a.outcome = "pass";
    a.backend = "emu";
    a.detail = nlohmann::json::parse(R"({"participants":[{"global_rank":0},{"global_rank":1}],
      "recipes":["gemm:bf16:64x64x64","link:1->0"],"verdict":{"outcome":"pass","sdc":[],"slow_gpus":[],"slow_pairs":[]}})");
    w->put_replay_cycle(&a);
    obs::ReplayCycleRecord b = a;
    b.id = 0;
    b.cycle = 2;
    b.trigger = "sdc";
    b.started_ns = kFixtureT0 + 10 * kS + 600000000;
    b.ended_ns = b.started_ns + 40000000;
    b.outcome = "fail";
    b.detail = nlohmann::json::parse(R"({"participants":[{"global_rank":5}],"recipes":["gemm:bf16:64x64x64"],
      "verdict":{"outcome":"fail","sdc":[{"global_rank":5}],"slow_gpus":[],"slow_pairs":[]}})");
    w->put_replay_cycle(&b);
    ASSERT_TRUE(w->flush());
    w.reset();
    auto ck = ckpt::CkptStore::open_writer(db_);
    ckpt::Checkpoint c1;
    c1.path = "/ckpt/iter_0000010";
    c1.framework = "megatron";
    c1.step = 10;
    c1.completed_ns = kFixtureT0 + 5 * kS;
    c1.state = ckpt::State::kVerified;
    c1.reason = "2 consecutive clean check cycles";
    ckpt::Checkpoint c2 = c1;
    c2.path = "/ckpt/iter_0000020";
    c2.step = 20;
    c2.completed_ns = kFixtureT0 + 11 * kS;
    c2.state = ckpt::State::kRejected;
    c2.reason = "sdc finding #1 (attributed) after it was written";
    c2.finding_ids = {1};
    ck->begin();
    ck->put_checkpoint(&c1);
    ck->put_checkpoint(&c2);
    ck->commit();
  }
  std::string page() {
    auto rd = store::StoreReader::open(db_);
    return cli::report_html(*rd);
  }
  void sql(const std::string& text) {
    store::Db db(db_, SQLITE_OPEN_READWRITE);
    db.exec(text);
  }
  TempDir dir_;
  std::string db_;
};

TEST_F(ReportHtml, PageHoldsEveryPartOfTheJob) {
  const std::string p = page();
  EXPECT_EQ(p.rfind("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">", 0), 0u);
  EXPECT_NE(p.find("<title>scout report: job demo</title>"), std::string::npos);
  // Sections.
  for (const char* id : {"id=\"summary\"", "id=\"job\"", "id=\"findings\"", "id=\"timeline\"", "id=\"finding-1\"",
                         "id=\"finding-2\"", "id=\"finding-3\"", "id=\"checkpoints\"", "id=\"replay\""}) {
    EXPECT_EQ(count(p, id), 1u) << id;
  }
  // The words of `scout explain` for each finding and of `scout status`, escaped, exactly.
  auto rd = store::StoreReader::open(db_);
  exporter::Snapshot s = exporter::load_snapshot(*rd, false);
  ASSERT_EQ(s.findings.size(), 3u);
  for (const auto& f : s.findings) {
    EXPECT_NE(p.find("<pre>" + cli::html::esc(cli::explain_text(f, s.origin_ns())) + "</pre>"), std::string::npos)
        << f.id;
  }
  std::ostringstream status;
  cli::cmd_status(*rd, cli::StatusOptions{}, status);
  EXPECT_NE(p.find("<pre>" + cli::html::esc(status.str()) + "</pre>"), std::string::npos);
  // Findings table: one row per finding, linking to its section, suspects named.
  EXPECT_NE(p.find("<tr data-finding=\"1\"><td class=\"num\"><a href=\"#finding-1\">#1</a></td><td><span class=\"badge "
                   "kind-sdc\">sdc</span></td><td><span class=\"verdict attributed\">attributed</span></td><td "
                   "class=\"nowrap\"><span class=\"status open\">open</span></td><td class=\"strong\">5</td>"),
            std::string::npos);
  // Timeline: a bar per finding linking to it, the checkpoints and the replay cycles.
  for (const char* link :
       {"href=\"#finding-1\"><g class=\"tl-finding kind-sdc\" data-finding=\"1\">",
        "href=\"#finding-2\"><g class=\"tl-finding kind-straggler closed\" data-finding=\"2\">",
        "href=\"#finding-3\"><g class=\"tl-finding kind-hang\" data-finding=\"3\">",
        "href=\"#checkpoint-1\"><g class=\"tl-ckpt verified\">",
        "href=\"#checkpoint-2\"><g class=\"tl-ckpt rejected\">", "href=\"#replay-1\"><g class=\"tl-replay pass\">",
        "href=\"#replay-2\"><g class=\"tl-replay fail\">"}) {
    EXPECT_EQ(count(p, link), 1u) << link;
  }
  // sdc: one cell per rank, rank 5 alone against the majority of 7 (cells and legend swatches).
  EXPECT_EQ(count(p, "class=\"vote-maj\""), 8u);
  EXPECT_EQ(count(p, "class=\"vote-0\""), 2u);
  EXPECT_NE(p.find("<title>rank 5 (comm rank 5): 0x0badc0ffee000005</title>"), std::string::npos);
  EXPECT_NE(p.find(">7 holders (majority)</text>"), std::string::npos);
  // hang: the root box, rank 7, and the arrow from rank 3 labelled with dp3's AllReduce #7.
  EXPECT_NE(p.find("<g class=\"node root\">"), std::string::npos);
  EXPECT_NE(p.find("class=\"node-title\">rank 7</text>"), std::string::npos);
  EXPECT_NE(p.find("class=\"node-state\">never entered it (process dead)</text>"), std::string::npos);
  EXPECT_NE(p.find("class=\"edge\"><title>rank 3 waits for rank 7 in dp3 (0xd3d3d3d3d3d3d3d3) AllReduce #7: rank 7 "
                   "never enqueued it</title></path>"),
            std::string::npos);
  EXPECT_NE(p.find(">dp3 AllReduce #7</text>"), std::string::npos);
  // straggler: rank 3's line over the others', with the 1 ms threshold (min_ms, no late_ms).
  EXPECT_NE(p.find("class=\"ln-suspect\"><title>rank 3</title></polyline>"), std::string::npos);
  EXPECT_EQ(count(p, "class=\"ln-other\"><title>rank "), 7u);  // a line per other rank (and one in the legend)
  EXPECT_NE(p.find(">late threshold</text>"), std::string::npos);
  EXPECT_NE(p.find(">1.00ms</text>"), std::string::npos);
  EXPECT_NE(p.find("world (0x1111aaaa2222bbbb): lateness per rank over the last 2 collectives; rank 3 late in 2 of its "
                   "last 2, median 2.09ms"),
            std::string::npos);
  // Checkpoints and replay cycles with their verdicts; the rejected checkpoint links its finding.
  EXPECT_NE(p.find("<span class=\"badge ck-rejected\">rejected</span></td><td>megatron</td><td><code>/ckpt/"
                   "iter_0000020</code></td><td class=\"num\">+11.000s</td><td>sdc finding #1 (attributed) after it "
                   "was written <a href=\"#finding-1\">#1</a></td>"),
            std::string::npos);
  EXPECT_NE(p.find("<tr id=\"replay-2\"><td class=\"num\">2</td><td class=\"num\">2</td><td>sdc</td><td "
                   "class=\"num\">+10.600s</td><td class=\"num\">40.0ms</td><td>emu</td><td><span class=\"badge "
                   "fail\">fail</span></td><td class=\"num\">1</td><td class=\"num\">1</td><td>sdc on 5</td></tr>"),
            std::string::npos);
  EXPECT_NE(p.find("<div class=\"tile-label\">replay cycles</div><div class=\"tile-value\">2</div><div "
                   "class=\"tile-detail\">1 pass, 1 fail</div>"),
            std::string::npos);
}

TEST_F(ReportHtml, LoadsNothingAndRunsOnlyItsOwnScript) {
  const std::string p = page();
  const std::string script = cli::report_script();
  EXPECT_EQ(count(p, "<script"), 1u);
  EXPECT_NE(p.find("<script>" + script + "</script></body></html>\n"), std::string::npos);
  EXPECT_NE(p.find("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src "
                   "'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'; script-src 'sha256-" +
                   sha256_b64(script) + "'\">"),
            std::string::npos);
  // No address but the SVG namespace, no fetched resource of any kind.
  std::regex url(R"(https?://[^"' )<]*)");
  for (auto it = std::sregex_iterator(p.begin(), p.end(), url); it != std::sregex_iterator(); ++it) {
    EXPECT_EQ(it->str(), "http://www.w3.org/2000/svg");
  }
  for (const char* bad : {" src=", "<link", "@import", "<iframe", "<object", "<embed", "<img"}) {
    EXPECT_EQ(p.find(bad), std::string::npos) << bad;
  }
  std::regex css_url(R"(url\(([^)]*)\))");
  for (auto it = std::sregex_iterator(p.begin(), p.end(), css_url); it != std::sregex_iterator(); ++it) {
    EXPECT_EQ((*it)[1].str(), "#arrow");
  }
}

TEST_F(ReportHtml, HostileNamesAreEscapedEverywhere) {
  sql("UPDATE ranks SET host = '<img src=x onerror=alert(1)>', gpu = 'G''\"' WHERE global_rank = 5;"
      "UPDATE finding_suspects SET host = '<img src=x onerror=alert(1)>', gpu = 'G''\"' WHERE global_rank = 5;"
      "UPDATE comms SET name = '</script><script>alert(2)</script>' WHERE name = 'dp3';"
      "UPDATE findings SET comm_name = '</script><script>alert(2)</script>' WHERE comm_name = 'dp3';"
      "UPDATE findings SET summary = '\"><svg onload=alert(3)> & more', "
      "  evidence = json_set(evidence, '$.votes[1].value', '<b onmouseover=alert(4)>x</b>') WHERE kind = 'sdc';"
      "UPDATE findings SET evidence = json_set(evidence, '$.chain[0].comm.name', '<i>dp3</i>') WHERE kind = 'hang';"
      "UPDATE job SET job = '<u>demo</u>';");
  const std::string p = page();
  EXPECT_EQ(count(p, "<script"), 1u);
  for (const char* raw : {"<img", "<svg onload", "<b onmouseover", "<i>dp3", "<u>demo", "</script><script>alert"}) {
    EXPECT_EQ(p.find(raw), std::string::npos) << raw;
  }
  for (const char* escaped :
       {"&lt;img src=x onerror=alert(1)&gt;", "&lt;/script&gt;&lt;script&gt;alert(2)&lt;/script&gt;",
        "&quot;&gt;&lt;svg onload=alert(3)&gt; &amp; more", "&lt;b onmouseover=alert(4)&gt;x&lt;/b&gt;",
        "&lt;i&gt;dp3&lt;/i&gt; AllReduce #7", "job &lt;u&gt;demo&lt;/u&gt;", "GPU G&#39;&quot;"}) {
    EXPECT_NE(p.find(escaped), std::string::npos) << escaped;
  }
}

TEST_F(ReportHtml, LatenessWindowComesFromTheStoresTimings) {
  auto rd = store::StoreReader::open(db_);
  const uint64_t world = 0x1111aaaa2222bbbbULL;
  // Up to the straggler's last sighting (#39's end): #38 and #39, every rank's GPU start minus the
  // earliest.
  auto f = rd->finding(2);
  ASSERT_TRUE(f && f->kind == obs::FindingKind::kStraggler);
  cli::report::LatenessWindow w = cli::report::lateness_window(*rd, world, "world", f->last_seen_ns, 64);
  EXPECT_EQ(w.ops, (std::vector<std::string>{"AllReduce #38", "AllReduce #39"}));
  EXPECT_EQ(w.ranks, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  ASSERT_EQ(w.ms.size(), 8u);
  EXPECT_NEAR(w.ms[3][0], 2.1, 1e-9);
  EXPECT_NEAR(w.ms[3][1], 2.08, 1e-9);
  EXPECT_NEAR(w.ms[0][0], 0.0, 1e-9);
  EXPECT_NEAR(w.ms[0][1], 0.004, 1e-9);
  EXPECT_NEAR(w.ms[1][1], 0.0, 1e-9);
  // A window of one: the latest; nothing before the first operation.
  w = cli::report::lateness_window(*rd, world, "world", f->last_seen_ns, 1);
  EXPECT_EQ(w.ops, (std::vector<std::string>{"AllReduce #39"}));
  w = cli::report::lateness_window(*rd, world, "world", kFixtureT0, 64);
  EXPECT_TRUE(w.ops.empty());
  EXPECT_TRUE(w.ranks.empty());
}

TEST_F(ReportHtml, CommandWritesTheFileAndRefusesOtherFlags) {
  const std::string out = dir_.path() + "/r.html";
  ProcessResult r = run_process({build_path("bin/scout"), "report", "--store", db_, "--html", out}, {}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(out, std::ios::binary);
  std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(file, page());
  EXPECT_TRUE(std::regex_match(r.out, std::regex("report: " + out + R"( \([0-9.]+KiB; 3 findings\)\n)"))) << r.out;
  r = run_process({build_path("bin/scout"), "report", "--store", db_, "--html", "-"}, {}, 60);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, file);
  r = run_process({build_path("bin/scout"), "report", "--store", db_, "--html", out, "--comm", "world"}, {}, 60);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "scout: --html reports the whole job: it takes none of --comm, --rank, --func, --last, --json\n");
  r = run_process({build_path("bin/scout"), "report", "--store", db_, "--html", dir_.path() + "/no/such/dir/r.html"},
                  {}, 60);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("scout: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find(dir_.path() + "/no/such/dir/r.html"), std::string::npos) << r.err;
}

}  // namespace

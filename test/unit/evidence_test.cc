// Typed evidence (observer/model/evidence.h): every field of every struct is documented in
// docs/findings.md under its kind, and evidence the detectors wrote (one finding of every kind
// and class, test/fixtures/model/evidence_kinds.jsonl, taken from the explain_test scenarios)
// reads into its struct and serializes back to exactly the same JSON.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "observer/model/evidence.h"
#include "observer/model/finding.h"
#include "observer/model/finding_board.h"
#include "observer/replay/reporter.h"
#include "test/support/subprocess.h"
#include "test/support/tmpdir.h"

namespace {

using scout::testing::slurp;
namespace obs = scout::obs;
using obs::evidence_keys;

// The text of the section "## <title>" of docs/findings.md (up to the next "## ").
std::string section(const std::string& doc, const std::string& title) {
  std::string head = "\n## " + title + "\n";
  size_t a = doc.find(head);
  if (a == std::string::npos) return "";
  size_t b = doc.find("\n## ", a + head.size());
  return doc.substr(a, b == std::string::npos ? std::string::npos : b - a);
}

// Every identifier inside a `code span` of `text`.
std::set<std::string> code_words(const std::string& text) {
  std::set<std::string> out;
  static const std::regex span("`([^`]*)`");
  static const std::regex word("[A-Za-z_][A-Za-z0-9_]*");
  for (std::sregex_iterator it(text.begin(), text.end(), span), end; it != end; ++it) {
    std::string s = (*it)[1];
    for (std::sregex_iterator w(s.begin(), s.end(), word); w != end; ++w) out.insert(w->str());
  }
  return out;
}

struct DocCheck {
  std::string doc = slurp(scout::testing::source_path("docs/findings.md"));

  // Keys of struct T not documented in a code span of the section of `kind` (nested shapes may
  // also be documented under "Common fields").
  template <class T>
  std::vector<std::string> missing(const std::string& kind, bool nested) const {
    std::string text = section(doc, kind);
    if (nested) text += section(doc, "Common fields");
    std::set<std::string> words = code_words(text);
    std::vector<std::string> out;
    for (const std::string& k : evidence_keys<T>()) {
      if (!words.count(k)) out.push_back(k);
    }
    return out;
  }
};

using V = std::vector<std::string>;

TEST(Evidence, EveryFieldIsDocumentedUnderItsKind) {
  DocCheck d;
  ASSERT_FALSE(section(d.doc, "hang").empty());
  EXPECT_EQ(d.missing<obs::HangEvidence>("hang", false), V{});
  EXPECT_EQ(d.missing<obs::EvHangRoot>("hang", false), V{});
  EXPECT_EQ(d.missing<obs::EvWaitEdge>("hang", true), V{});
  EXPECT_EQ(d.missing<obs::EvCommState>("hang", true), V{});
  EXPECT_EQ(d.missing<obs::EvRankState>("hang", true), V{});
  EXPECT_EQ(d.missing<obs::EvComm>("hang", true), V{});
  EXPECT_EQ(d.missing<obs::EvOp>("hang", true), V{});
  EXPECT_EQ(d.missing<obs::EvVoteGroup<std::string>>("sdc", true), V{});

  EXPECT_EQ(d.missing<obs::EvStallNote>("hang", false), V{});
  EXPECT_EQ(d.missing<obs::StallEvidence>("stall", false), V{});
  EXPECT_EQ(d.missing<obs::EvStallRule>("stall", false), V{});

  EXPECT_EQ(d.missing<obs::DeadlockEvidence>("deadlock", false), V{});

  EXPECT_EQ(d.missing<obs::CrashEvidence>("crash", false), V{});
  EXPECT_EQ(d.missing<obs::EvOpenOp>("crash", false), V{});

  EXPECT_EQ(d.missing<obs::DesyncEvidence>("desync", false), V{});
  EXPECT_EQ(d.missing<obs::EvMetaValue>("desync", false), V{});
  EXPECT_EQ(d.missing<obs::EvSeqValue>("desync", false), V{});
  EXPECT_EQ(d.missing<obs::EvSeqAgreed>("desync", false), V{});

  EXPECT_EQ(d.missing<obs::SdcEvidence>("sdc", false), V{});
  EXPECT_EQ(d.missing<obs::EvEquivDisagreement>("sdc", false), V{});
  EXPECT_EQ(d.missing<obs::EvEquivVote>("sdc", false), V{});

  EXPECT_EQ(d.missing<obs::NanEvidence>("nan", false), V{});
  EXPECT_EQ(d.missing<obs::EvNanOrigin>("nan", false), V{});
  EXPECT_EQ(d.missing<obs::EvNanCarrier>("nan", false), V{});

  EXPECT_EQ(d.missing<obs::StragglerEvidence>("straggler", false), V{});
  EXPECT_EQ(d.missing<obs::EvStragglerComm>("straggler", false), V{});
  EXPECT_EQ(d.missing<obs::EvStragglerAggregate>("straggler", false), V{});
  EXPECT_EQ(d.missing<obs::EvStragglerThresholds>("straggler", false), V{});

  EXPECT_EQ(d.missing<obs::SlowLinkEvidence>("slowlink", false), V{});
  EXPECT_EQ(d.missing<obs::EvChannel>("slowlink", false), V{});
  EXPECT_EQ(d.missing<obs::EvSlowThresholds>("slowlink", false), V{});

  EXPECT_EQ(d.missing<obs::ReplaySdcEvidence>("sdc", false), V{});
  EXPECT_EQ(d.missing<obs::EvReplayCheck>("sdc", false), V{});
  EXPECT_EQ(d.missing<obs::EvReplayGpu>("sdc", false), V{});
  EXPECT_EQ(d.missing<obs::EvReplayCause>("straggler", false), V{});
  EXPECT_EQ(d.missing<obs::ReplaySlowLinkEvidence>("slowlink", false), V{});
  EXPECT_EQ(d.missing<obs::EvReplayThresholds>("slowlink", false), V{});
}

// A straggler's cause as the replay reporter writes it, for each cause replay decides: `replay`
// carries every key of EvReplayCause (docs/findings.md documents them for both), with the numbers
// of the cycle's verdict: the slow GEMM for "gpu", the GEMM it ran at the median for "host".
TEST(Evidence, StragglerCauseCarriesEveryDocumentedReplayKeyForGpuAndHost) {
  DocCheck d;
  ASSERT_EQ(d.missing<obs::EvReplayCause>("straggler", false), V{});
  std::string text = section(d.doc, "straggler");
  std::replace(text.begin(), text.end(), '\n', ' ');  // a sentence may wrap
  std::ifstream in(scout::testing::source_path("test/fixtures/model/evidence_kinds.jsonl"));
  obs::Finding base;
  for (std::string line; std::getline(in, line);) {
    obs::Finding f;
    std::string error;
    ASSERT_TRUE(obs::from_json(nlohmann::json::parse(line), &f, &error)) << error;
    if (f.kind == obs::FindingKind::kStraggler) base = f;
  }
  ASSERT_EQ(base.kind, obs::FindingKind::kStraggler);
  for (const std::string cause : {"gpu", "host"}) {
    // The straggler section names this cause and the keys its `replay` carries.
    EXPECT_NE(text.find("cause `\"" + cause + "\"`"), std::string::npos) << cause;
    obs::FindingBoard board;
    obs::Finding f = base;
    f.open = true;
    f.suspects = {f.suspects.at(0)};
    const int rank = f.suspects[0].global_rank;
    board.report(f);
    obs::CycleResult r;
    r.have_verdict = true;
    r.record.cycle = 9;
    r.record.started_ns = f.first_seen_ns + 1;
    scout::replay::SlowGpu timing{rank, "GPU-x", "gemm:fp32:4096x4096x4096", 6'898'000, {27'608'000, 27'384'000}};
    if (cause == "host") timing.ns = {6'930'000, 6'911'000};
    (cause == "gpu" ? r.verdict.slow_gpus : r.verdict.normal_gpus).push_back(timing);
    if (cause == "host") r.verdict.gpu_normal = {rank};
    obs::ReplayReporter rep(scout::replay::OutlierRule{});
    obs::Model m;
    rep.apply(m, board, r, {}, f.first_seen_ns + 2);
    rep.mark_stragglers(board);
    const obs::Finding* g = board.find(f.dedup_key);
    ASSERT_NE(g, nullptr);
    EXPECT_EQ(g->evidence["cause"], cause);
    const nlohmann::json& rp = g->evidence["replay"];
    std::vector<std::string> keys;
    for (const auto& [k, v] : rp.items()) keys.push_back(k);
    std::vector<std::string> want = obs::evidence_keys<obs::EvReplayCause>();
    std::sort(want.begin(), want.end());  // JSON objects list their keys sorted
    EXPECT_EQ(keys, want) << cause << ": " << rp.dump();
    EXPECT_EQ(rp["cycle"], 9);
    EXPECT_EQ(rp["recipe"], "gemm:fp32:4096x4096x4096");
    EXPECT_EQ(rp["median_ms"], 6.898);
    EXPECT_EQ(rp["ms"], cause == "gpu" ? nlohmann::json({27.608, 27.384}) : nlohmann::json({6.93, 6.911}));
  }
}

TEST(Evidence, DocCheckFailsOnAnUndocumentedKey) {
  // The check itself: a key that is nowhere in the section is reported.
  DocCheck d;
  d.doc = "# Findings\n\n## nan\n\n**Evidence**: `origin`, `ops_with_nonfinite`.\n";
  EXPECT_EQ(d.missing<obs::NanEvidence>("nan", false), V{"ranks_with_nonfinite"});
}

// Reads f's evidence into its kind's struct and writes it back.
nlohmann::json round_trip(const obs::Finding& f, std::string* error) {
  auto rt = [&](auto e) {
    if (!obs::read_evidence(f.evidence, &e, error)) return nlohmann::json();
    return obs::to_json(e);
  };
  using K = obs::FindingKind;
  switch (f.kind) {
    case K::kHang: return rt(obs::HangEvidence{});
    case K::kDeadlock: return rt(obs::DeadlockEvidence{});
    case K::kCrash: return rt(obs::CrashEvidence{});
    case K::kDesync: return rt(obs::DesyncEvidence{});
    case K::kSdc: return rt(obs::SdcEvidence{});
    case K::kNan: return rt(obs::NanEvidence{});
    case K::kStraggler: return rt(obs::StragglerEvidence{});
    case K::kSlowLink: return rt(obs::SlowLinkEvidence{});
    case K::kStall: return rt(obs::StallEvidence{});
  }
  return nlohmann::json();
}

TEST(Evidence, DetectorEvidenceReadsAndWritesBackUnchanged) {
  std::ifstream in(scout::testing::source_path("test/fixtures/model/evidence_kinds.jsonl"));
  std::set<std::string> kinds;
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    obs::Finding f;
    std::string error;
    ASSERT_TRUE(obs::from_json(nlohmann::json::parse(line), &f, &error)) << error;
    nlohmann::json back = round_trip(f, &error);
    EXPECT_EQ(back.dump(), f.evidence.dump()) << obs::to_string(f.kind) << ": " << error;
    kinds.insert(obs::to_string(f.kind));
    ++n;
  }
  EXPECT_EQ(n, 15);
  EXPECT_EQ(kinds.size(), std::size(obs::kAllFindingKinds));
}

TEST(Evidence, ReaderNamesWhatDoesNotFit) {
  obs::CrashEvidence c;
  std::string error;
  nlohmann::json j = obs::to_json(obs::CrashEvidence{});
  ASSERT_TRUE(obs::read_evidence(j, &c, &error)) << error;
  j.erase("host");
  EXPECT_FALSE(obs::read_evidence(j, &c, &error));
  EXPECT_EQ(error, "no key host");
  j = obs::to_json(obs::CrashEvidence{});
  j["pid"] = "x";
  EXPECT_FALSE(obs::read_evidence(j, &c, &error));
  EXPECT_EQ(error, "pid: expected a number");
  j = obs::to_json(obs::CrashEvidence{});
  j["chain"] = {{{"rank", 1}}};
  EXPECT_FALSE(obs::read_evidence(j, &c, &error));
  EXPECT_EQ(error, "chain: no key waits_for");
}

TEST(Evidence, OptionalKeysAbsentNullOrValue) {
  // majority of sdc: absent (equivalent communicators), null (no strict majority) or a value.
  obs::SdcEvidence e;
  e.check = "recv";
  e.op = obs::EvOp{"AllReduce", 4, std::nullopt, std::nullopt};
  EXPECT_EQ(obs::to_json(e).dump(), R"({"check":"recv","op":{"func":"AllReduce","seq":4}})");
  e.majority.emplace();
  EXPECT_EQ(obs::to_json(e).dump(), R"({"check":"recv","majority":null,"op":{"func":"AllReduce","seq":4}})");
  obs::SdcEvidence back;
  ASSERT_TRUE(obs::read_evidence(obs::to_json(e), &back));
  ASSERT_TRUE(back.majority.has_value());
  EXPECT_FALSE(back.majority->has_value());
  e.majority->emplace("0x00000000000000aa");
  e.op.src = 0;
  e.op.dst = 1;
  EXPECT_EQ(obs::to_json(e).dump(),
            R"({"check":"recv","majority":"0x00000000000000aa","op":{"dst":1,"func":"AllReduce","seq":4,"src":0}})");
  ASSERT_TRUE(obs::read_evidence(obs::to_json(e), &back));
  EXPECT_EQ(back.majority->value(), "0x00000000000000aa");
  EXPECT_EQ(back.op.dst, 1);
}

TEST(Evidence, FindingsCarryTheCurrentVersion) {
  obs::Finding f;
  EXPECT_EQ(f.evidence_version, obs::kEvidenceVersion);
  EXPECT_EQ(obs::kEvidenceVersion, 2);
}

// Replay's evidence: a check's votes keep their shape (any JSON), a check without a peer writes
// null, and the straggler's cause is optional (absent without replay).
TEST(Evidence, ReplayEvidenceReadsAndWritesBack) {
  obs::ReplaySdcEvidence e;
  e.source = "replay";
  e.cycle = 7;
  e.trigger = "periodic";
  e.check = "gemm-vote";
  e.recipe = "gemm:fp32:512x512x512";
  e.votes = {{"outcome", "attributed"}, {"groups", {{{"value", "0x01"}, {"voters", {0, 1, 3}}}}}};
  e.checks.push_back({"gemm-vote", e.recipe, e.votes, std::nullopt});
  e.checks.push_back({"link", "link:1->2", {{"expected", "0x02"}, {"got", "0x03"}}, 1});
  e.gpus = {{0, "GPU-a"}, {2, "GPU-c"}};
  e.gpu = "GPU-c";
  const nlohmann::json j = obs::to_json(e);
  EXPECT_EQ(j["checks"][0]["peer"], nullptr);
  EXPECT_EQ(j["checks"][1]["peer"], 1);
  EXPECT_EQ(j["votes"]["groups"][0]["voters"], nlohmann::json({0, 1, 3}));
  obs::ReplaySdcEvidence back;
  std::string err;
  ASSERT_TRUE(obs::read_evidence(j, &back, &err)) << err;
  EXPECT_EQ(obs::to_json(back), j);
  EXPECT_FALSE(obs::read_evidence(nlohmann::json{{"source", "replay"}}, &back, &err));
  EXPECT_EQ(err, "no key cycle");

  obs::StragglerEvidence s;
  EXPECT_FALSE(obs::to_json(s).contains("cause"));
  s.cause = "gpu";
  s.replay = obs::EvReplayCause{3, std::string("gemm:bf16:8x8x8"), std::vector<double>{3.0, 3.1}, 1.0};
  obs::StragglerEvidence sb;
  ASSERT_TRUE(obs::read_evidence(obs::to_json(s), &sb, &err)) << err;
  EXPECT_EQ(sb.cause, "gpu");
  EXPECT_EQ(sb.replay->ms, (std::vector<double>{3.0, 3.1}));
}

}  // namespace

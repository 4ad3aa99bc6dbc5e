// libFuzzer target: what the leader does with another observer's drill-down messages (observer/net/
// drill.h, observer/net/wait_summary.h, observer/net/vote_summary.h over wire.h). An input whose
// first byte is 2 (the wait summary's version) is a hang drill-down's merged wait summary, one whose
// first byte is 1 (the vote summary's) a digest drill-down's merged votes: each decoder must refuse
// it with one line or decode it; a decoded summary must encode to bytes that decode to the same
// encoding again and merge with itself (as the channel's tree merges) without growing; a wait
// summary is expanded and judged by the core's hang detector (obs::CoreJudge) twice and cleared,
// votes are expanded and every stream judged by the core's consensus. Any other input is one
// node's NodeReport (its findings): decode_report must refuse it with one line or decode it (one
// spelling per report), and the leader collects it from two nodes. None of it may crash, read out
// of bounds or allocate beyond what the message holds. `make fuzz` runs it.
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include "observer/cluster/core_judge.h"
#include "observer/net/drill.h"
#include "observer/net/vote_summary.h"
#include "observer/net/wait_summary.h"

namespace {

using namespace scout;

constexpr int64_t kNow = 2'000'000'000'000'000'000;

void one_summary(std::span<const uint8_t> in) {
  net::WaitSummary s;
  std::string err;
  const bool ok = net::decode_summary(in, &s, &err);
  if (!ok) {
    if (err.empty() || err.find('\n') != std::string::npos) std::abort();
    return;
  }
  const std::vector<uint8_t> once = net::encode_summary(s);
  net::WaitSummary again;
  if (!net::decode_summary(once, &again, &err)) std::abort();
  if (net::encode_summary(again) != once) std::abort();
  int bad = 0;
  const std::vector<uint8_t> merged = net::merge_encoded(once, once, &bad, &err);
  net::WaitSummary both;
  if (bad != 0 || !net::decode_summary(merged, &both, &err)) std::abort();
  if (both.members() > s.members()) std::abort();  // the same members twice are kept once
  (void)net::expand(both);
  obs::HangConfig hc;
  hc.timeout_ns = 1'000'000'000;
  obs::CoreJudge judge(hc);
  (void)judge.judge_waits(both, kNow);
  (void)judge.judge_waits(both, kNow + 10'000'000'000);
  (void)judge.all_clear(kNow + 20'000'000'000);
}

void one_votes(std::span<const uint8_t> in) {
  net::VoteSummary s;
  std::string err;
  if (!net::decode_votes(in, &s, &err)) {
    if (err.empty() || err.find('\n') != std::string::npos) std::abort();
    return;
  }
  const std::vector<uint8_t> once = net::encode_votes(s);
  net::VoteSummary again;
  if (!net::decode_votes(once, &again, &err)) std::abort();
  if (net::encode_votes(again) != once) std::abort();
  int bad = 0;
  const std::vector<uint8_t> merged = net::merge_encoded_votes(once, once, &bad, &err);
  net::VoteSummary both;
  if (bad != 0 || !net::decode_votes(merged, &both, &err)) std::abort();
  if (both.members() > s.members()) std::abort();  // the same members twice are kept once
  net::Identities ids;
  obs::CoreJudge judge(obs::HangConfig{});
  for (const net::DigestDrill& d : net::expand(both, &ids)) (void)judge.judge_digest(d, ids, kNow);
}

void one_report(std::span<const uint8_t> in) {
  net::NodeReport rep;
  std::string err;
  const bool ok = net::decode_report(in, &rep, &err);
  if (!ok && (err.empty() || err.find('\n') != std::string::npos)) std::abort();
  std::vector<net::Contribution> got = {{1, std::vector<uint8_t>(in.begin(), in.end())}};
  if (ok) {
    const std::vector<uint8_t> once = net::encode_report(rep);
    net::NodeReport again;
    if (!net::decode_report(once, &again, &err)) std::abort();
    if (net::encode_report(again) != once) std::abort();
    got.push_back({2, once});
  }
  net::LeaderInbox box = net::collect_reports(got);
  if (box.bad_reports != (ok ? 0 : 1)) std::abort();
  if (ok && box.findings.size() != 2 * rep.findings.size()) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> in(data, size);
  if (size > 0 && data[0] == 2) {
    one_summary(in);
  } else if (size > 0 && data[0] == 1) {
    one_votes(in);
  } else {
    one_report(in);
  }
  return 0;
}

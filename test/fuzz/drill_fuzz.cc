// libFuzzer target: what the leader does with another observer's drill-down messages (observer/net/
// drill.h, observer/net/wait_summary.h over wire.h). An input whose first byte is the wait
// summary's version (1) is a hang drill-down's merged wait summary: decode_summary must refuse it
// with one line or decode it; a decoded summary must encode to bytes that decode to the same
// encoding again, merge with itself (as the channel's tree merges), expand, and be judged by the
// core's hang detector (obs::CoreJudge) twice and cleared. Any other input is one node's
// NodeReport: decode_report must refuse it with one line or decode it (one spelling per report);
// the leader then merges it from two nodes (collect_reports) and judges every digest drill-down.
// None of it may crash, read out of bounds or allocate beyond what the message holds. `make fuzz`
// runs it.
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include "observer/cluster/core_judge.h"
#include "observer/net/drill.h"
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
  obs::HangConfig hc;
  hc.timeout_ns = 1'000'000'000;
  obs::CoreJudge judge(hc);
  for (const net::DigestDrill& d : box.digests) (void)judge.judge_digest(d, box.identities, kNow);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> in(data, size);
  if (size > 0 && data[0] == 1) {
    one_summary(in);
  } else {
    one_report(in);
  }
  return 0;
}

// libFuzzer target: what the leader does with another observer's drill-down message (observer/net/
// drill.h over wire.h): the input is one node's NodeReport bytes. decode_report must refuse it
// with one line or decode it; a decoded report must encode to bytes that decode to the same
// encoding again (the format has one spelling per report). The leader then merges it from two
// nodes (collect_reports) and judges every digest drill-down and wait snapshot with the core's
// detectors (obs::CoreJudge), as it would in a round: none of it may crash, read out of bounds or
// allocate beyond what the message holds. `make fuzz` runs it.
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include "observer/cluster/core_judge.h"
#include "observer/net/drill.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace scout;
  std::span<const uint8_t> in(data, size);
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
  const int64_t now = 2'000'000'000'000'000'000;
  for (const net::DigestDrill& d : box.digests) (void)judge.judge_digest(d, box.identities, now);
  if (!box.waits.empty()) {
    (void)judge.judge_waits(box.waits, now);
    (void)judge.judge_waits(box.waits, now + 10'000'000'000);
  }
  (void)judge.all_clear(now + 20'000'000'000);
  return 0;
}

// libFuzzer target: the leader's digest rounds (observer/net/digest.h) against a hostile peer.
// The leader (node-rank 0 of 2) runs DigestExchange::round on a synthetic job (test/support/
// net_workload.h: 2 nodes x 2 ranks, data-parallel communicators across them) over a Channel
// whose every receive is filled from the input: the peer's halves of the digest vector, the
// contributor count, report sizes and report bytes are whatever the input says, as from a peer
// that is corrupted or malicious. Rounds run until the input is used up (the channel then fails
// like a dead peer) or the settings check refuses the peer. Nothing may crash, read out of
// bounds or allocate beyond the channel's message limit. `make fuzz` runs it.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "observer/cluster/core_judge.h"
#include "observer/net/digest.h"
#include "test/support/net_workload.h"

namespace {

using namespace scout;

// Node-rank 0 of 2; node-rank 1 is the input.
class ScriptedPeer : public net::Channel {
 public:
  ScriptedPeer(const uint8_t* d, size_t n) : Channel(0, 2), d_(d), n_(n) {}
  void abort() override {}

 protected:
  void transfer(uint64_t, const SendSpec*, const RecvSpec* recv) override {
    if (!recv) return;
    if (pos_ >= n_) throw net::ChannelError("node-rank 1 is gone");
    const size_t take = std::min(recv->len, n_ - pos_);
    if (take) std::memcpy(recv->data, d_ + pos_, take);
    if (recv->len > take) std::memset(static_cast<uint8_t*>(recv->data) + take, 0, recv->len - take);
    pos_ += take == 0 ? 1 : take;
    if (recv->source) *recv->source = 1;
  }

 private:
  const uint8_t* d_;
  size_t n_;
  size_t pos_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  constexpr int64_t kSecond = 1'000'000'000;
  net::DigestConfig cfg;
  cfg.stream_slots = 8;  // small vectors: the input reaches the stream slots and beyond
  cfg.timing_slots = 4;
  cfg.max_range_ops = 64;
  cfg.stall_ns = 3 * kSecond;
  cfg.drill_repeat_rounds = 2;
  testing::NetWorkload job(2, 2, 2);
  job.corrupt_fp(0, 30);  // a disagreement of the leader's own, so drill-downs happen too
  testing::NetWorkload::Node view(&job, 0, 0);
  obs::CoreJudge judge(obs::HangConfig{cfg.stall_ns, kSecond, true});
  ScriptedPeer ch(data, size);
  net::DigestExchange ex(&ch, &judge, cfg);
  net::ClockEstimate clock;
  for (int r = 0; r < 8; ++r) {
    view.set_time((r + 1) * kSecond);
    try {
      (void)ex.round(view, (r + 1) * kSecond, clock, {});
    } catch (const net::ChannelError&) { break; } catch (const std::runtime_error&) {
      break;  // the peer's settings key differs: refused
    }
  }
  return 0;
}

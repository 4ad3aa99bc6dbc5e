#include "test/sim/tuning.h"

namespace scout::sim {

Tuning tune_coll(Func f, uint64_t bytes, int n_nodes) {
  Tuning t;
  t.n_channels = bytes < (32u << 10) ? 2 : bytes < (512u << 10) ? 3 : 4;
  if (bytes <= (16u << 10)) {
    t.proto = "LL";
    t.n_warps = 16;
  } else if (bytes <= (256u << 10)) {
    t.proto = "LL128";
    t.n_warps = 20;
  } else {
    t.proto = "SIMPLE";
    t.n_warps = 16;
  }
  t.algo = (f == Func::kAllReduce && n_nodes > 1 && bytes <= (64u << 10)) ? "TREE" : "RING";
  t.channel_base = 0;
  return t;
}

Tuning tune_p2p(uint64_t bytes, int from, int to, int nranks) {
  Tuning t;
  t.algo = "RING";
  t.proto = "SIMPLE";
  t.n_warps = 16;
  t.n_channels = bytes < (64u << 10) ? 1 : 2;
  int delta = nranks > 0 ? ((to - from) % nranks + nranks) % nranks : 0;
  t.channel_base = static_cast<uint8_t>((2 * delta) % 32);
  return t;
}

}  // namespace scout::sim

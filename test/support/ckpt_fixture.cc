#include "test/support/ckpt_fixture.h"

namespace scout::testing {

obs::JudgeOutput agreeing_op_at(int64_t t, uint64_t seq) {
  obs::JudgeOutput out;
  obs::OpSummary s;
  s.comm_hash = 0x11;
  s.comm_name = "tp0";
  s.nranks = 4;
  s.func = "AllReduce";
  s.seq = seq;
  s.bytes = 1000;
  s.ranks_reported = 4;
  s.first_arrival_ns = t;
  s.fp_verdict = "agree";
  out.summaries.push_back(s);
  return out;
}

ckpt::CertifierOptions certifier_options_for_test(const std::string& root, const std::string& cert_dir) {
  ckpt::CertifierOptions o;
  o.job = "j";
  o.watch.roots = {root};
  o.watch.inotify = false;
  o.watch.poll_ns = 0;
  o.cycle_ns = 1'000'000'000;
  o.k = 2;
  o.cert_dir = cert_dir;
  return o;
}

}  // namespace scout::testing

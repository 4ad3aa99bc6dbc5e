#include "replay/auto_backend.h"

namespace scout::replay {
namespace {
constexpr const char* kMixed = "an emulated and a real GPU cannot exchange data";

// Whether `members` hold emulated and real GPUs both.
bool mixed_gpus(const std::vector<Participant>& members) {
  bool emu = !members.empty() && is_emulated_gpu(members[0].gpu), mixed = false;
  for (const Participant& p : members) mixed |= is_emulated_gpu(p.gpu) != emu;
  return mixed;
}
}  // namespace

Backend& AutoBackend::pick(const std::string& gpu) {
  if (is_emulated_gpu(gpu)) return emu_;
  if (!cuda_) {
    libs_ = std::make_unique<cudalib::Libs>();
    cudalib::load_libs(libs_.get());
    cuda_ = std::make_unique<CudaBackend>(libs_.get(), limits_);
  }
  return *cuda_;
}

Sample AutoBackend::run_link(const Recipe& r, const Participant& src, const Participant& dst, int round) {
  if (is_emulated_gpu(src.gpu) != is_emulated_gpu(dst.gpu)) {
    Sample s = not_measured(sample_of(r, dst, round), SampleStatus::kSkipped, kMixed);
    s.peer = src.global_rank;
    return s;
  }
  return pick(dst.gpu).run_link(r, src, dst, round);
}

std::vector<Sample> AutoBackend::run_coll(const Recipe& r, const std::vector<Participant>& members, int round) {
  if (!mixed_gpus(members)) return pick(members.empty() ? "" : members[0].gpu).run_coll(r, members, round);
  std::vector<Sample> out;
  for (const Participant& p : members)
    out.push_back(not_measured(sample_of(r, p, round), SampleStatus::kSkipped, kMixed));
  return out;
}

std::vector<Sample> AutoBackend::run_coll_end(const Recipe& r, const std::vector<Participant>& members,
                                              const std::vector<int>& local, const std::string& uid,
                                              int64_t deadline_ns) {
  if (!mixed_gpus(members))
    return pick(members.empty() ? "" : members[0].gpu).run_coll_end(r, members, local, uid, deadline_ns);
  std::vector<Sample> out;
  for (int round = 0; round < r.rounds; ++round)
    for (int g : local)
      for (const Participant& p : members)
        if (p.global_rank == g) out.push_back(not_measured(sample_of(r, p, round), SampleStatus::kSkipped, kMixed));
  return out;
}

std::vector<Sample> AutoBackend::run_link_end(const Recipe& r, const Participant& self, const Participant& peer,
                                              bool sender, const std::string& uid, int64_t deadline_ns) {
  if (is_emulated_gpu(self.gpu) != is_emulated_gpu(peer.gpu)) {
    std::vector<Sample> out;
    for (int round = 0; round < (sender ? 1 : r.rounds); ++round) {
      Sample s = not_measured(sample_of(r, self, round), SampleStatus::kSkipped, kMixed);
      s.peer = sender ? -1 : peer.global_rank;
      out.push_back(s);
    }
    return out;
  }
  return pick(self.gpu).run_link_end(r, self, peer, sender, uid, deadline_ns);
}

}  // namespace scout::replay

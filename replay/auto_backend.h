// The backend scout-replay uses by default: emulated GPUs of scout-sim (emu_device.h,
// is_emulated_gpu) go to the emulated backend, every other GPU to the CUDA backend (loaded on
// first use). A recipe whose GPUs are of both kinds is skipped.
#pragma once

#include <memory>
#include <string>

#include "replay/backend.h"
#include "replay/cuda_backend.h"
#include "replay/emu_backend.h"

namespace scout::replay {

class AutoBackend : public Backend {
 public:
  AutoBackend(std::string dir, std::string job, BackendLimits limits)
      : emu_(std::move(dir), std::move(job)), limits_(limits) {}
  std::string name() const override { return "auto"; }
  GpuInfo describe(const Participant& p) override { return pick(p.gpu).describe(p); }
  Sample run_gemm(const Recipe& r, const Participant& p, int round) override {
    return pick(p.gpu).run_gemm(r, p, round);
  }
  Sample run_link(const Recipe& r, const Participant& src, const Participant& dst, int round) override;
  std::vector<Sample> run_coll(const Recipe& r, const std::vector<Participant>& members, int round) override;
  std::string link_unique_id(const Participant& self, std::string* error) override {
    return pick(self.gpu).link_unique_id(self, error);
  }
  std::vector<Sample> run_link_end(const Recipe& r, const Participant& self, const Participant& peer, bool sender,
                                   const std::string& uid, int64_t deadline_ns) override;
  std::vector<Sample> run_coll_end(const Recipe& r, const std::vector<Participant>& members,
                                   const std::vector<int>& local, const std::string& uid, int64_t deadline_ns) override;

 private:
  Backend& pick(const std::string& gpu);
  EmuBackend emu_;
  BackendLimits limits_;
  std::unique_ptr<cudalib::Libs> libs_;
  std::unique_ptr<CudaBackend> cuda_;
};

}  // namespace scout::replay

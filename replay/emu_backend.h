// The emulated replay backend (docs/replay.md, "Backends"): runs the recipes on the CPU "on"
// the emulated GPUs of a scout-sim job (emu_device.h), so every verdict path of replay is
// exercised without a GPU. Outputs are real computations, fingerprinted with scout's
// fingerprint; a GEMM is computed on a proxy of at most kEmuDim per dimension and a link or
// collective moves at most kEmuBytes, while times come from the emulated device's clock: the
// full shape's work at a fixed emulated rate, times the device's slow factor, plus link delays,
// with a +-1% deterministic jitter per (GPU, recipe, round).
#pragma once

#include <string>

#include "replay/backend.h"
#include "replay/emu_device.h"

namespace scout::replay {

constexpr int64_t kEmuDim = 48;             // GEMM proxy dimension cap
constexpr uint64_t kEmuBytes = 16 * 1024;   // link / collective payload cap
constexpr double kEmuGemmFlops16 = 400e12;  // emulated bf16/fp16 rate, FLOP/s
constexpr double kEmuGemmFlops32 = 200e12;  // emulated fp32 rate
constexpr double kEmuLinkBytesPerS = 25e9;  // emulated link bandwidth

class EmuBackend : public Backend {
 public:
  // Devices are read from emu_device_path(dir, job, gpu) at every run.
  EmuBackend(std::string dir, std::string job) : dir_(std::move(dir)), job_(std::move(job)) {}
  std::string name() const override { return "emu"; }
  GpuInfo describe(const Participant& p) override;
  Sample run_gemm(const Recipe& r, const Participant& p, int round) override;
  Sample run_link(const Recipe& r, const Participant& src, const Participant& dst, int round) override;
  std::vector<Sample> run_coll(const Recipe& r, const std::vector<Participant>& members, int round) override;
  // A random 128-byte id; the receiver's end accepts any id of that size (the emulated link
  // needs no connection: the payload comes from the seed, the delay and corruption from the
  // receiver's emulated device).
  std::string link_unique_id(const Participant& self, std::string* error) override;
  std::vector<Sample> run_link_end(const Recipe& r, const Participant& self, const Participant& peer, bool sender,
                                   const std::string& uid, int64_t deadline_ns) override;
  // Computes every member's result as run_coll does (each member's input from the seed, every
  // member's emulated device: a corrupted input, a corrupting ring link, slowness), and keeps
  // the local members' samples: scout-sim's emulated hosts share one directory of devices, so
  // every node computes the same collective. An id of another size fails every local sample.
  std::vector<Sample> run_coll_end(const Recipe& r, const std::vector<Participant>& members,
                                   const std::vector<int>& local, const std::string& uid, int64_t deadline_ns) override;

 private:
  EmuDeviceState device(const std::string& gpu) const;
  std::string dir_, job_;
};

}  // namespace scout::replay

// The emulated GPU of a scout-sim rank (docs/replay.md, "Backends"; docs/scout-sim.md,
// "Hardware faults"). scout-sim's persistent hardware faults (gpusdc, slowgpu, linksdc, linkdown,
// nicdown, and slowlink on links; kernelstall when the kernel stops) change the state of the
// emulated device of a rank when they start; the emulated replay backend runs recipes "on" that
// device, so a faulty device computes wrong GEMMs, runs slowly or receives corrupted messages in
// replay as it does in training; a link `down` delivers nothing and a `hung` device finishes no
// kernel (their recipes time out at their deadline). The
// observer never reads this state: only the emulated backend does, the way a real backend runs
// on the real GPU.
//
// One small JSON file per device, <dir>/scout-emugpu.<job>.<gpu>.json, written whole (temporary
// file + rename) by the rank that owns the device; a missing file is a healthy device.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace scout::replay {

struct EmuLinkState {
  bool flip = false;     // every message from that sender arrives with one bit flipped
  int64_t delay_ns = 0;  // and this much later
  bool down = false;     // nothing from that sender ever arrives (linkdown, nicdown)
};

struct EmuDeviceState {
  bool gemm_flip = false;                        // GEMM outputs (and computed inputs) carry a flipped bit
  double slow_factor = 1.0;                      // kernels take this many times longer
  bool hung = false;                             // no kernel finishes any more (kernelstall)
  std::map<std::string, EmuLinkState> links_in;  // by the sending GPU's id
};

// GPU ids scout-sim gives its ranks ("GPU-sim-node<i>-<local rank>", docs/scout-sim.md).
bool is_emulated_gpu(const std::string& gpu);

// <dir>/scout-emugpu.<job>.<gpu>.json
std::string emu_device_path(const std::string& dir, const std::string& job, const std::string& gpu);

// Parses a file name (no directory) of an emulated device, "scout-emugpu.<job>.<gpu>.json", or of
// its temporary while it is written, "scout-emugpu.<job>.<gpu>.json.tmp.<pid>" (*tmp_pid = pid;
// 0 for the device file). The GPU id is the part after the job's last dot (GPU ids have none).
// False when the name is neither.
bool parse_emu_device_name(const std::string& name, std::string* job, std::string* gpu, int* tmp_pid);

// Writes `s` to `path` atomically (through `path`.tmp.<pid>, renamed). False with *error.
bool write_emu_device(const std::string& path, const EmuDeviceState& s, std::string* error);

// Reads the state at `path`; a missing or unreadable file is a healthy device.
EmuDeviceState read_emu_device(const std::string& path);

}  // namespace scout::replay

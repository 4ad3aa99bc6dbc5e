// Which faults act on which operation of this rank (docs/scout-sim.md, "Faults"). Built from the
// resolved --fault specs (options.h); consulted by the API sequencer at each API call and by the
// emulated kernels. Pure lookups: the injection itself happens where the fault acts.
#pragma once

#include <cstdint>
#include <vector>

#include <functional>
#include <string>

#include "replay/emu_device.h"
#include "test/sim/layout.h"
#include "test/sim/options.h"

namespace scout::sim {

// What happens to rank R's operation `op` (rank-local index).
struct OpFaults {
  const FaultSpec* hang = nullptr;    // R stops before issuing op (never calls the API)
  const FaultSpec* crash = nullptr;   // R SIGKILLs itself once op's kernel started
  const FaultSpec* nan = nullptr;     // a NaN in op's send buffer
  const FaultSpec* desync = nullptr;  // R passes count - count/2 instead of count
  const FaultSpec* sdc = nullptr;     // one bit of R's receive buffer flipped after the reduction
  const FaultSpec* dtype = nullptr;   // R reports ncclInt32 instead of ncclFloat32 (same bytes)
  const FaultSpec* optype = nullptr;  // R calls another collective (AllReduce <-> AllGather)
  const FaultSpec* skip = nullptr;    // R does not make the call at all
  const FaultSpec* wronggroup = nullptr;    // R issues this pipeline Send on the world communicator
  const FaultSpec* enqueuestall = nullptr;  // R stays inside this API call (recorded, never enqueued)
  const FaultSpec* kernelstall = nullptr;   // R's kernel of this collective starts and never completes
  const FaultSpec* straggler = nullptr;
  int64_t straggle_ms = 0;  // R arrives this late in op's kernel
  bool any() const {
    return hang || crash || nan || desync || sdc || dtype || optype || skip || wronggroup || enqueuestall ||
           kernelstall || straggle_ms > 0;
  }
};

class FaultPlan {
 public:
  FaultPlan() = default;
  // `world`: the job's ranks (a nicdown cuts every rank off host K's ranks).
  FaultPlan(const std::vector<FaultSpec>& faults, int global_rank, int world = 0);

  // Faults acting on this rank's operation `op`.
  OpFaults at_op(uint64_t op) const;

  // Extra delay (ms) of a collective in communicator `comm` during `step`: the largest slowlink
  // whose two ranks are both members and whose step has come (0: none).
  int64_t slowlink_coll_ms(const CommSpec& comm, int64_t step) const;
  // Extra delay (ms) of a message between global ranks a and b during `step` (0: none).
  int64_t slowlink_p2p_ms(int a, int b, int64_t step) const;
  // The slowlink faults this rank is the `rank=` end of, active at `step`, whose other end is a
  // member of `comm` (for the ground-truth line R writes on its first delayed operation).
  std::vector<const FaultSpec*> slowlinks_of_mine(const CommSpec& comm, int64_t step) const;

  // p2porder: true when this rank posts `step`'s pipeline calls in reverse order, each outside a
  // group; *f gets the spec.
  bool p2p_reversed(int64_t step, const FaultSpec** f) const;
  // slownic: extra delay (ms) of a collective of `comm` during `step` (it spans hosts and holds a
  // rank of the slow host), and of a message between global ranks a and b (one of them on the
  // slow host, the other not); 0: none. *f (optional) gets the spec.
  int64_t slownic_coll_ms(const CommSpec& comm, int64_t step, const FaultSpec** f = nullptr) const;
  int64_t slownic_p2p_ms(int a, int b, int64_t step, const FaultSpec** f = nullptr) const;

  // linkdown / nicdown: true when the link between global ranks a and b delivers nothing during
  // `step` (a linkdown of that pair, or a nicdown of a host holding exactly one of them). *f
  // (optional) gets the spec.
  bool link_down(int a, int b, int64_t step, const FaultSpec** f = nullptr) const;

  // Seconds this rank sleeps before `step` (pause: step is a positive multiple of its every=K; the
  // longest such pause); 0: none. *f gets the spec.
  int64_t pause_s_before(int64_t step, const FaultSpec** f) const;
  // True when this rank runs one extra warm-up step before step 0 (extrastep); *f gets the spec.
  bool extra_step(const FaultSpec** f) const;
  // The nondet fault acting on collective reductions of `comm` at `step` (one of its members is
  // the fault's rank and its step has come), or nullptr.
  const FaultSpec* nondet_in(const CommSpec& comm, int64_t step) const;

  // Hardware faults (docs/scout-sim.md, "Hardware faults") of this rank's GPU at `step`:
  // gpusdc active (its computed send buffers carry a flipped bit), the slowgpu factor (1: none),
  // whether messages from global rank `sender` arrive corrupted (linksdc).
  bool gpusdc_at(int64_t step) const;
  double slow_factor_at(int64_t step) const;
  bool linksdc_from(int sender, int64_t step) const;
  // The hardware faults that change this rank's emulated device exactly at `step` (device update;
  // ground truth for those that are not `mirror` copies and name this rank).
  std::vector<const FaultSpec*> hardware_starting(int64_t step) const;
  // The emulated device state of this rank's GPU at `step` (replay/emu_device.h); `gpu_of`
  // gives the GPU id of a global rank (links are keyed by the sender's GPU).
  replay::EmuDeviceState device_at(int64_t step, const std::function<std::string(int)>& gpu_of) const;

 private:
  std::vector<FaultSpec> mine_;      // faults on this rank, except slowlink
  std::vector<FaultSpec> links_;     // every slowlink of the job
  std::vector<FaultSpec> nondet_;    // every nondet fault of the job (any member may reduce)
  std::vector<FaultSpec> nics_;      // every slownic fault of the job
  std::vector<FaultSpec> hw_links_;  // slowlinks with this rank at either end, as rank=me, peer=other
  std::vector<FaultSpec> downs_;     // every linkdown of the job
  std::vector<FaultSpec> nic_downs_;  // every nicdown of the job
  std::vector<FaultSpec> mirrors_;   // linkdowns whose peer is this rank, as rank=me, peer=other (mirror)
  int rank_ = -1;
  int world_ = 0;
};

}  // namespace scout::sim

// ProxyStep windows: for short sampled windows the plugin adds ProxyOp | ProxyStep to NCCL's
// activation mask, so NCCL's own IB and Socket transports report their network steps
// (docs/net-plugin.md, "ProxyStep timing"; docs/nccl-notes.md §2.2, §3.4).
//
// NCCL gives every init the address of its one process-wide mask and re-reads it (relaxed) at
// every API call (docs/nccl-notes.md §0.6), so a window opens and closes by writing that int:
// only the bits the window added are cleared again, every other bit stays as NCCL, scout's init
// or another party left it. Windows are switched from calls the plugin already gets (tick() at
// each CollApi/P2pApi start, or Coll/P2p start under the v4 ABI, which has no API events; an
// early close from the proxy thread that timed the last step allowed): no thread, no timer,
// nothing blocks. A window stays open SCOUT_PROXY_WINDOW_MS and
// the next opens window / SCOUT_PROXY_BUDGET after it opened (the first at the first API call);
// one closes early once SCOUT_PROXY_MAX_STEPS steps were timed in it.
//
// A *trace* (progress.h: the observer asks for one communicator's progress) keeps the same bits in
// the mask until its time is over, whether or not a window is open: the bits are on while a window
// is open or a trace is on, and only the bits scout added are cleared once neither is. Steps are
// timed only in windows; a trace records where its communicator's steps are.
//
// With *kept* bits (SCOUT_PROXY_PROGRESS=1, the default) the bits are on from the first init to
// the last finalize, windows or not: NCCL copies the activation mask into each task when the task
// is enqueued (the ProxyOp and ProxyStep gates test the sub-op's own copy, eActivationMask,
// v2.28.9-1:src/plugin/profiler.cc, ncclProfilerStartProxyOpEvent / ncclProfilerStart{Send,Recv}
// ProxyStepEvent), so a collective enqueued while the bits were off never reports its network
// steps, and a trace asked for once it is stuck comes too late for it (docs/plugin.md, "Tracing a
// stuck collective"). Windows then only decide which steps are timed.
#pragma once

#include <atomic>
#include <cstdint>

#include "scout/nccl_profiler_abi.h"
#include "scout/shm_format.h"

namespace scout::core {

// The bits a window adds to the activation mask.
constexpr int kProxyMaskBits = int(abi::kEvProxyOp | abi::kEvProxyStep);

class ProxyWindows {
 public:
  // Turns windows on with the link table header `hdr` (its proxy_* fields are written), windows
  // of `window_ns` ns, open at most `budget` (0..1] of wall time, closed early after `max_steps`
  // timed steps. Without a call (or with hdr null) windows stay off. Not thread-safe: process
  // setup only.
  // `keep`: the bits stay in the mask at all times (above), not only in windows and traces.
  void configure(shm::LinkTableHeader* hdr, int64_t window_ns, double budget, uint64_t max_steps, bool keep = false);
  bool enabled() const { return hdr_ != nullptr; }
  // The bits stay in the mask at all times: every ProxyOp and ProxyStep of this process arrives.
  bool keeps_bits() const { return keep_; }

  // Init: remembers NCCL's activation mask `mask` (the same int for every communicator) and
  // returns the bits an open window added (0 when none is open), which init keeps in the mask it
  // writes. Waits for a concurrent switch (microseconds); init thread only.
  int attach_mask(int* mask);

  // Hot path, at each API call: one relaxed load and a compare unless a window opens or closes
  // (or a trace ends) now. `now_ns`: CLOCK_REALTIME ns.
  void tick(int64_t now_ns) {
    if (now_ns >= next_ns_.load(std::memory_order_relaxed)) tick_slow(now_ns);
  }

  // Starts a trace until `until_ns` (replacing any trace on): the bits stay in the mask until then;
  // `flag` (the traced communicator's, or null) is set now and cleared when the trace ends; `hdr`'s
  // trace_state says kTraceActive, then kTraceExpired. False, changing nothing, when another thread
  // is switching at this moment (the caller retries at its next call) or windows are off.
  bool trace(int64_t now_ns, int64_t until_ns, std::atomic<uint8_t>* flag, shm::ProgressTableHeader* hdr);

  // The current window: (window number << 1) | 1 while one is open, even while none is.
  uint32_t current() const { return cur_.load(std::memory_order_acquire); }
  static bool is_open(uint32_t cur) { return (cur & 1u) != 0; }

  // One step was timed at `now_ns` in the window `cur` names: counts it (header proxy_steps) and
  // closes that window once it holds max_steps steps. Any thread; never blocks.
  void step_timed(uint32_t cur, int64_t now_ns);

  // Closes an open window (restores the mask) and opens no more: last finalize. The header
  // keeps proxy_state 1 (waiting) and its counters.
  void stop(int64_t now_ns);

 private:
  void tick_slow(int64_t now_ns);
  void open_window(int64_t now_ns);
  void close_window(int64_t now_ns);
  void end_trace();
  // Puts the bits in the mask (on) or takes back those scout added (off); switching thread only.
  void apply_bits(bool on);
  // next_ns_ = the next window switch or the trace's end, whichever comes first.
  void reschedule();

  shm::LinkTableHeader* hdr_ = nullptr;
  int* mask_ = nullptr;
  int64_t window_ns_ = 0, period_ns_ = 0;
  uint64_t max_steps_ = 0;
  bool keep_ = false;                // SCOUT_PROXY_PROGRESS: the bits are on until stop()
  int added_ = 0;                    // bits scout added to the mask while they are on (switching thread only)
  bool bits_on_ = false;             // a window is open or a trace is on (switching thread only)
  int64_t win_next_ns_ = INT64_MAX;  // the next window switch (switching thread only)
  int64_t trace_until_ = 0;          // the trace's end; 0: none (switching thread only)
  std::atomic<uint8_t>* trace_flag_ = nullptr;
  shm::ProgressTableHeader* trace_hdr_ = nullptr;
  std::atomic<uint64_t> steps_at_open_{0};  // header proxy_steps when the window opened
  std::atomic<int64_t> next_ns_{INT64_MAX};
  std::atomic<uint32_t> cur_{0};
  std::atomic<bool> switching_{false};  // one thread opens or closes at a time
};

}  // namespace scout::core

// Hangs, deadlocks and crashes (docs/observer.md#hangs).
//
// Each pass, every communicator whose members are all known is analysed (comm_waits.h). A
// communicator is stalled when some rank waits in it and it has shown no progress (no record
// enqueued, started, completed or fingerprinted) for longer than the hang timeout: time AND
// progress, so a slow communicator that keeps completing operations is never hung. The edges of
// stalled communicators form the wait-for graph across communicators (wait_graph.h):
//   - each cycle is a deadlock finding (suspects: the ranks of the cycle), unless a communicator
//     of the cycle shows a sequence desync at that frozen point (SequenceCheck::frozen);
//   - a stalled communicator whose ranks all started the operation and none can finish is a
//     "stuck" hang (inconclusive: scout cannot see which transfer never arrived), unless the
//     ranks disagree on the operation's metadata, which makes it a desync;
//   - a "mismatch" communicator is a desync finding (the majority's collective vs the others');
//   - every other root (a rank that others wait for and that waits for nobody) is a hang finding
//     naming it: it never entered the operation ("idle"), its GPU never started it
//     ("gpu-blocked"), or it is busy in a communicator that still progresses ("running").
//     Roots absent from the same operation share one finding; of the operations a root is missing
//     from, the finding names the first in the root's program order (program_order.h; where its
//     call history does not say, the one its peers enqueued first).
// A root whose process died without closing its segment is a crash finding instead. A dead
// process that peers wait for is reported as a crash without waiting for the hang timeout, once
// crash_grace has passed since it was first seen blocking them or since its last event (the
// latter lets an observer started after the fact decide at once). Hang and deadlock findings
// close when the communicators progress again. With a sequence check attached (set_sequence), a
// hang, deadlock, stuck or mismatch that involves a communicator with an open sequence desync is
// not reported: it is added to that desync's evidence (SequenceCheck::fold).
//
// Stalls (stall.h): a root reached only through communicators that have been without progress
// for longer than their learned stall threshold, but not yet the hang timeout, is a stall finding
// with the hang's dedup key; if it lasts to the timeout the same finding becomes the hang (kind
// hang, evidence `stall` saying when the root was first named). A stall that ends is remembered;
// a later one with the same signature (communicator, function, roots) is a repeat of a pause the
// job has shown before and is not reported while it lasts at most 1.5 times as long.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <unordered_map>

#include "observer/detect/comm_waits.h"
#include "observer/detect/sequence_check.h"
#include "observer/detect/stall.h"
#include "observer/detect/stuck_trace.h"
#include "observer/detect/wait_graph.h"
#include "observer/model/evidence.h"
#include "observer/model/finding_board.h"
#include "observer/model/model.h"

namespace scout::obs {

// A collective stuck this long (every member inside, none completing, no progress) has its
// members' progress sources opened (docs/observer.md, "Stuck collectives").
inline constexpr int64_t kTraceAfterNs = 1'000'000'000;

struct HangConfig {
  int64_t timeout_ns = 60'000'000'000;     // --hang-timeout / SCOUT_OBSERVER_HANG_TIMEOUT_S
  int64_t crash_grace_ns = 1'000'000'000;  // SCOUT_OBSERVER_CRASH_GRACE_MS
  // Observer network on (several nodes): a rank with an operation in flight in a communicator
  // whose members this observer does not all see is not named as a root here. It waits for
  // something on another node; the job-wide analysis on the leader, which sees every node's
  // waits, names the root instead (docs/observer-network.md, "Hangs across nodes").
  bool defer_cross_node = false;
  // Stall findings before the hang timeout, at each communicator's learned threshold (stall.h,
  // docs/observer.md "Stalls"). Off: hangs are named only at the timeout.
  bool stall = true;
};

class HangDetector {
 public:
  explicit HangDetector(HangConfig cfg) : cfg_(cfg) {}
  void pass(const Model& m, int64_t now_ns, FindingBoard& board);
  // Folds hangs into the sequence desyncs of `seq` (owned by the caller, outliving this); null:
  // none (every hang is reported as such).
  void set_sequence(SequenceCheck* seq) { seq_ = seq; }
  // CommInfo::state of communicator `c` of `m` after the last pass (docs/observer.md, "Hangs"):
  // "finalized"; the word of an open finding that holds it ("hung" for a hang or deadlock,
  // "stalled" for a stall; "hung" when both); "dead" (its member processes are all gone, at least
  // one dead without finalizing); "hung" (ranks wait, no progress past the timeout); "stalled"
  // (ranks wait, no progress for its stall threshold or half the timeout, whichever is shorter);
  // else "active".
  std::string comm_state(const Model& m, const Comm& c, int64_t now_ns) const;
  // True while peers wait for dead process `proc` and no crash finding names it yet (its
  // segment must not be reclaimed before the decision).
  bool holds_evidence(int proc) const { return blocking_since_.count(proc) && !crashed_.count(proc); }
  // Stall clocks given from outside, each replacing the learned clock of the communicator it names
  // in the next passes (the leader: the clock of the node with the largest threshold,
  // docs/observer-network.md "Hangs across nodes"); an empty map: learned clocks only.
  void set_stall_clocks(std::map<CommKey, StallClock> given) { given_ = std::move(given); }
  // The stall threshold (ns) of communicator `k`: its clock's, at most the hang timeout
  // (docs/observer.md, "Stalls").
  int64_t threshold_ns(const CommKey& k) const { return stall_threshold(k); }
  // Stuck collectives of the last pass whose progress sources should be opened now (stuck for at
  // least kTraceAfterNs; docs/observer.md, "Stuck collectives"): the pipeline asks their members'
  // plugins for a trace (Ingestor::request_trace) and says so with note_trace.
  const std::vector<CommKey>& trace_wanted() const { return trace_wanted_; }
  // The observer asked the members of `k` for a trace at `requested_ns` (shown in the evidence).
  void note_trace(const CommKey& k, int64_t requested_ns) { traces_[k] = requested_ns; }
  // After a pass over `m`: the earliest time (ns, on the clock of `m`) at which a communicator of
  // `m` that ranks wait in, not yet past its stall threshold, passes it before the hang timeout; 0
  // when none (docs/observer-network.md, "Hangs across nodes").
  int64_t stall_pending(const Model& m) const;

 private:
  struct ProcEdge {
    int from = -1, to = -1;  // procs
    const Comm* comm = nullptr;
    WaitEdge e;
  };
  struct Membership {
    const Comm* comm;
    int rank;
  };
  // One pass's wait-for graph across communicators: every wait edge (tagged by its index) and
  // whether its communicator is past the hang timeout (stalled) or only its stall threshold (soft).
  struct PassGraph {
    std::vector<ProcEdge> edges;
    std::vector<bool> stalled_edge, soft_edge;
    WaitGraph g;
  };
  // Roots grouped by the hang key of the operation they are missing from: key -> (primary edge, roots).
  using RootGroups = std::map<std::string, std::pair<int, std::vector<int>>>;
  // The phases of pass(), in order (docs/observer.md, "Hangs"):
  // the wait edges of every communicator whose members are known; waits_, stalled_, soft_ and the
  // stall clocks updated.
  PassGraph collect_waits(const Model& m, int64_t now_ns);
  // Deadlocks (cycles of stalled edges); wrong-communicator cycles are cut from pg.g, their rank
  // left a root. Returns the ranks on a deadlock.
  std::set<int> report_deadlocks(const Model& m, PassGraph& pg, int64_t now_ns, FindingBoard& board);
  // Stuck and mismatch communicators past their threshold (or folded into a sequence desync).
  void report_stalled_comms(const Model& m, const PassGraph& pg, int64_t now_ns, FindingBoard& board);
  // Ranks others wait for that wait for nobody: hangs, then stalls not already a hang.
  void report_roots(const Model& m, const PassGraph& pg, const std::set<int>& in_cycle, int64_t now_ns,
                    FindingBoard& board);
  RootGroups group_roots(const Model& m, const PassGraph& pg, const std::set<int>& roots,
                         const std::set<CommKey>& stalled_set, const FindingBoard& board) const;
  // Dead processes peers wait for, after the crash grace.
  void report_crashes(const Model& m, const PassGraph& pg, int64_t now_ns, FindingBoard& board);
  // Hangs and deadlocks whose communicators progressed close; ended stalls are remembered.
  void close_over(const Model& m, int64_t now_ns, FindingBoard& board);
  // An open finding kept without waiters (the job was killed while hung): each root's `process`
  // follows its process's state, so a root that died since is never shown running, and once every
  // root is dead the summary says "(the process has since exited)".
  void refresh_roots(const Model& m, const std::string& key, FindingBoard& board) const;
  // `stalled`: the communicators whose stuck / mismatch state makes a root "stuck" / "desync".
  // Reasons: dead, stuck, desync, wrong-comm, running, gpu-blocked, in-call, idle
  // (docs/findings.md, "hang").
  std::string root_reason(const Model& m, int proc, std::string* detail, const std::set<CommKey>& stalled) const;
  // The edges of the last pass (root_reason's wrong-comm detail).
  std::vector<ProcEdge> edges_;
  // True when `proc` has an operation in flight in a communicator with members not all known.
  static bool waits_elsewhere(const Model& m, int proc);
  std::vector<EvWaitEdge> chain(const Model& m, const std::vector<ProcEdge>& edges, const std::vector<int>& tags) const;
  std::vector<EvCommState> comm_states(const Model& m, const std::vector<const Comm*>& comms, int64_t now_ns) const;
  void report_deadlock(const Model& m, const std::vector<int>& cycle, const WaitGraph& g,
                       const std::vector<ProcEdge>& edges, int64_t now_ns, FindingBoard& board);
  // The stuck collective of `c` as a hang, or (stall) as a stall at its threshold; its desync when
  // the ranks inside it disagree on its arguments.
  void report_stuck(const Model& m, const Comm& c, const WaitGraph& g, const std::vector<ProcEdge>& edges,
                    int64_t now_ns, FindingBoard& board, bool stall = false);
  void report_mismatch(const Model& m, const Comm& c, const WaitGraph& g, const std::vector<ProcEdge>& edges,
                       int64_t now_ns, FindingBoard& board);
  // Hang (stall false) or stall finding naming `roots`, the ranks `primary` waits for.
  void report_root(const Model& m, const std::vector<int>& roots, const ProcEdge& primary, const WaitGraph& g,
                   const std::vector<ProcEdge>& edges, int64_t now_ns, FindingBoard& board, bool stall = false);
  int64_t stall_threshold(const CommKey& k) const;
  // A stall's signature: the roots, and where in the step they stopped (the communicator and
  // function of the first root's latest completed operation).
  StallSignature signature_of(const Model& m, const std::vector<int>& roots) const;
  // The communicator on the roots' chain past its threshold with the lowest one (`c` if none).
  const Comm* stall_trigger(const std::vector<int>& roots, const std::vector<ProcEdge>& edges, const Comm& c) const;
  // The summary of a hang or stall naming `roots` (`names`), by the first root's reason and detail.
  std::string root_summary(const Model& m, const std::vector<int>& roots, const std::string& names,
                           const std::string& reason, const std::string& detail, const std::string& op,
                           const std::string& waiters) const;
  void report_crash(const Model& m, int proc, const ProcEdge& primary, const WaitGraph& g,
                    const std::vector<ProcEdge>& edges, int64_t now_ns, FindingBoard& board);

  // The deadlock `cycle` as a sequence desync (folded into an open one, or found at this frozen
  // point); false when it is none.
  bool sequence_deadlock(const Model& m, const std::vector<int>& cycle, const WaitGraph& g,
                         const std::vector<ProcEdge>& edges, int64_t now_ns, FindingBoard& board);

  HangConfig cfg_;
  SequenceCheck* seq_ = nullptr;
  std::map<CommKey, CommWaits> waits_;
  std::set<CommKey> stalled_;  // past the hang timeout
  std::set<CommKey> soft_;     // past their stall threshold (or the timeout)
  std::map<CommKey, StallClock> clocks_;
  std::map<CommKey, StallClock> given_;    // set_stall_clocks
  std::map<CommKey, ColdBasis> bases_;     // this pass: what each cold clock's threshold rests on
  std::map<CommKey, int64_t> thresholds_;  // this pass: each communicator's stall threshold (ns)
  // A stall episode under a hang key, reported or suppressed as a repeat.
  struct Episode {
    StallSignature sig;
    int64_t start_ns = 0;  // the communicator's last progress when it began
    int64_t named_ns = 0;  // first reported (0: suppressed so far)
    double threshold_ms = 0;
    bool became_hang = false;
    bool seen = false;  // this pass
  };
  std::map<std::string, Episode> episodes_;
  StallMemory memory_;
  // The episode under stall/hang key `key` (signature `sig`, begun at `start_ns`, the
  // communicator's last progress), marked seen this pass. A hang (stall false) marks it
  // became_hang. A stall is named now (named_ns, threshold) unless it was already; null when it
  // repeats a remembered pause (StallMemory::is_repeat) and must not be reported.
  const Episode* note_episode(const std::string& key, const StallSignature& sig, int64_t start_ns, bool stall,
                              int64_t threshold_ns, int64_t now_ns);
  // The stall evidence of hang evidence `h` whose threshold (ns) came from communicator `trigger`.
  StallEvidence stall_evidence(const HangEvidence& h, const CommKey& trigger, const Episode& ep,
                               const StallSignature& sig, int64_t threshold_ns) const;
  // " (no progress for X s, beyond its stall threshold of Y s; a hang at Z s)".
  std::string stall_words(int64_t idle_ns, int64_t threshold_ns) const;
  std::unordered_map<int, std::vector<Membership>> member_of_;  // proc -> its communicators
  std::set<std::string> open_;                                  // hang/deadlock keys reported last pass
  std::set<std::string> reported_;                              // ... this pass
  // Communicators of each open hang/deadlock and their progress mark when it was first reported:
  // a hang closes only when one of them progressed, finalized or is gone, not when its waiters
  // merely stopped waiting (killed with the job).
  std::map<std::string, std::vector<std::pair<CommKey, int64_t>>> involved_;
  std::map<std::string, std::string> words_;  // each tracked finding's word: "hung" or "stalled"
  // Tracks `comms` under finding `key` (once) and its word now ("hung", "stalled").
  void track(const std::string& key, const std::vector<const Comm*>& comms, const char* word);
  // Two-rank cycles of absent point-to-point waits where exactly one of the two operations is the
  // first message of its pair in its communicator (docs/observer.md, "Hangs": wrong communicator):
  // proc in that operation -> (its edge, the edge of the peer waiting for it). Cleared each pass.
  std::map<int, std::pair<int, int>> wrong_comm_;
  // True when the cycle is such a pair; fills wrong_comm_.
  bool wrong_comm_cycle(const std::vector<int>& cycle, const WaitGraph& g, const std::vector<ProcEdge>& edges);
  std::map<int, int64_t> blocking_since_;  // dead proc -> first seen blocking peers
  std::vector<CommKey> trace_wanted_;      // this pass: stuck collectives to trace
  std::map<CommKey, int64_t> traces_;      // trace requests (note_trace), while their communicator is stuck
  std::set<int> crashed_;                  // procs with a crash finding
};

// Dedup key of the hang finding about operation `id` of `c`.
std::string hang_key(const Comm& c, const OpId& id);

}  // namespace scout::obs

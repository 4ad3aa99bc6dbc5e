// Checkpoint certification in the observer (docs/certification.md): after each pass it
//   1. adds the pass's judged collectives to the evidence of their check cycle;
//   2. notes sdc, nan and desync findings with the time their operation began;
//   3. picks up checkpoints whose marker appeared (observer/ckpt/watcher.h) as candidates;
//   4. judges every check cycle that ended at least `grace` ago and has no undecided operation
//      left and, with replay on, a finished replay cycle covering it (observer/ckpt/cycle.h;
//      after `stale` it is judged incomplete instead), and moves candidates (observer/ckpt/states.h);
//   5. issues a certificate for every verdict (observer/ckpt/certificate.h).
// State lives in the store (observer/ckpt/ckpt_store.h) and is reloaded at construction, so a
// restarted observer continues where the previous one stopped; cycles it did not watch from
// their start are incomplete.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "observer/ckpt/ckpt_store.h"
#include "observer/ckpt/cycle.h"
#include "observer/ckpt/replay_cycles.h"
#include "observer/ckpt/states.h"
#include "observer/ckpt/watcher.h"
#include "observer/detect/op_judge.h"
#include "observer/model/finding_board.h"
#include "observer/model/model.h"
#include "scout/config.h"

namespace scout::ckpt {

struct CertifierOptions {
  std::string job;
  WatchOptions watch;
  int64_t cycle_ns = 300'000'000'000;           // SCOUT_CHECK_CYCLE_S
  int k = 2;                                    // SCOUT_CKPT_K
  int64_t grace_ns = 500'000'000;               // wait after a cycle's end before judging it (records of
                                                // operations begun in it reach the observer)
  int64_t stale_ns = 30'000'000'000;            // an operation undecided this long after its cycle's end
                                                // makes the cycle incomplete instead of holding it
  std::string cert_dir;                         // certificates' JSON files
  bool write_beside = false;                    // --ckpt-write-certificate: also <checkpoint>/scout-certificate.json
  std::function<void(const std::string&)> log;  // one line per discovery and verdict
};

// Options from the SCOUT_* registry (SCOUT_CHECK_CYCLE_S, SCOUT_CKPT_K, SCOUT_CKPT_QUIET_S,
// SCOUT_CKPT_POLL_S) for job `job` whose store is `store_path`: certificates go to
// <directory of the store>/certificates; `dirs` are the watched roots.
CertifierOptions certifier_options(const config::Config& cfg, const std::string& job, const std::string& store_path,
                                   const std::vector<std::string>& dirs);

// Directory of the certificates of the store at `store_path`: <its directory>/certificates.
std::string certificate_dir(const std::string& store_path);

class Certifier {
 public:
  // Loads the state `store` holds (must outlive the certifier). `replay` may be null: replay off;
  // else (observer/ckpt/store_replay.h) every cycle needs its replay cycle to pass to be clean.
  Certifier(CertifierOptions o, CkptStore* store, ReplayCycles* replay = nullptr);

  // After an observer pass at wall time `now_ns`: `m` after judgement, `out` what the pass
  // judged, `board` the findings with their store ids. Store errors are logged, not thrown.
  void on_pass(const obs::Model& m, const obs::JudgeOutput& out, const obs::FindingBoard& board, int64_t now_ns);

  const std::vector<Checkpoint>& checkpoints() const { return ckpts_; }
  int64_t next_cycle() const { return next_cycle_; }

 private:
  void load();       // state from the store (construction, and after a pass the store rolled back)
  void undo_pass();  // after a failed pass: rollback, reload, remove the certificates it issued
  void note_ops(const obs::JudgeOutput& out, int64_t now_ns);
  bool note_findings(const obs::FindingBoard& board);
  void discover(int64_t now_ns);
  void judge_cycles(const obs::Model& m, int64_t now_ns);
  void decided(Checkpoint& c, int64_t now_ns);
  std::vector<FindingEvent> events() const;
  void say(const std::string& line) const {
    if (o_.log) o_.log(line);
  }

  CertifierOptions o_;
  CkptStore* store_;
  ReplayCycles* replay_;
  Watcher watcher_;
  std::vector<Checkpoint> ckpts_;
  std::map<int64_t, CycleVerdict> judged_;
  std::map<int64_t, CycleEvidence> evidence_;
  std::map<int64_t, FindingEvent> events_;
  std::map<std::tuple<uint64_t, std::string, uint64_t>, int64_t> op_time_;  // (comm, func, seq) -> ns
  int64_t next_cycle_ = -1;
  int64_t watch_start_ns_ = 0;
  int64_t cert_seq_ = 0;
  std::string prev_sha_;
  std::set<std::string> failures_;  // reasons of abandoned passes already said
  std::vector<int64_t> judged_now_;  // cycles judged in the pass under way
  int64_t failed_passes_ = 0;        // consecutive passes the store rolled back
};

}  // namespace scout::ckpt

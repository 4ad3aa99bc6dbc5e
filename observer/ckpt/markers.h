// Recognizing finished checkpoints on disk by the marker each framework writes last
// (docs/certification.md, "Discovery"). Pure file-system reads, no state of its own: the caller
// (observer/ckpt/watcher.h) keeps what it saw between scans.
//
// Rules per framework (the layouts of Megatron-LM megatron/training/checkpointing.py and
// megatron/core/dist_checkpointing/, DeepSpeed deepspeed/runtime/engine.py, PyTorch
// torch/distributed/checkpoint/filesystem.py, transformers trainer.py, NeMo
// nemo/lightning/pytorch/callbacks/model_checkpoint.py):
//   megatron   iter_NNNNNNN/ is complete when it holds metadata.json (torch_dist, written by rank 0
//              after every rank's shards and .metadata) or when latest_checkpointed_iteration.txt
//              beside it names NNNNNNN (legacy torch format). Step: NNNNNNN.
//   dcp        a directory holding .metadata (renamed into place by the coordinator after every
//              rank's write results were gathered). Step: the last number in its name.
//   deepspeed  global_stepN/ (or any tag) is complete when `latest` beside it names it. Step: N.
//   hf         checkpoint-N/ is complete when trainer_state.json (written last, by the main
//              process) parses. Step: its global_step, else N.
//   nemo       a directory whose name contains step=N, with no sibling `<name>-unfinished`, and,
//              when it has weights/, weights/metadata.json. Step: N.
//   generic    only with ScanOptions::generic (SCOUT_CKPT_GENERIC=1): any other directory, once
//              nothing in it changed for the quiet time. Step: the last number in its name, else -1.
// Only directories are checkpoints: a stray file (notes-20241201.txt) never is one. Entries of a
// known layout never fall back to the generic rule: a half-written iter_, global_step,
// checkpoint-, step= or .distcp directory waits for its marker however long it is quiet.
//
// Hostile roots: entries and markers are examined with lstat and opened with O_NONBLOCK and
// O_NOFOLLOW (common/safe_file.h): a symlink is never an entry and never followed (nothing out of
// the root is read), a FIFO or device is never opened, a marker is read only up to a cap. Names
// that are not valid UTF-8 or hold control characters are ignored (frameworks never write them;
// they are counted in ScanStats). At most ScanOptions::max_new entries not yet known are
// examined per scan (the newest by modification time), the rest counted.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace scout::ckpt {

// How a candidate entry was recognized.
struct Entry {
  std::string path;       // <root>/<name>
  std::string framework;  // "megatron", "dcp", "deepspeed", "hf", "nemo", "generic"
  int64_t step = -1;      // -1 unknown
  bool complete = false;  // marker present (generic: quiet for the quiet time)
  int64_t marker_ns = 0;  // mtime of the marker (generic: newest mtime in the entry), wall ns
  std::string marker;     // the file that proves completion ("" while incomplete)
};

// Bytes read at most from a marker that is parsed: trainer_state.json (HF keeps its log history
// in it) and, far smaller, Megatron's tracker and DeepSpeed's `latest`.
constexpr size_t kMaxStateBytes = 64u << 20;
constexpr size_t kMaxTrackerBytes = 4096;
// Entries not yet known examined per root and scan (ScanOptions::max_new default).
constexpr size_t kMaxNewEntriesPerRoot = 1024;

struct ScanOptions {
  int64_t quiet_ns = 60'000'000'000;           // generic rule's quiet time
  bool generic = false;                        // SCOUT_CKPT_GENERIC
  size_t max_new = kMaxNewEntriesPerRoot;      // entries not in `known` examined per scan
  const std::set<std::string>* known = nullptr;  // paths already reported: skipped unexamined
};

// What a scan left out, for the caller to say once.
struct ScanStats {
  int64_t bad_names = 0;      // names not valid UTF-8 or holding control characters
  int64_t not_dirs = 0;       // files, symlinks, FIFOs, devices at the top level (not checkpoints)
  int64_t over_cap = 0;       // entries beyond max_new this scan
  std::string bad_name_example;  // one of the bad names, raw (print it through printable())
};

// Scans the top level of checkpoint directory `root` at wall time `now_ns`. Returns every
// checkpoint-like directory (complete or not), sorted by name. Framework bookkeeping files
// (trackers, `latest`, `-unfinished` markers, certificates, temporary files) are not entries.
// A root that does not exist or cannot be read gives an empty list. Never throws (beyond
// std::bad_alloc), never blocks on a special file.
std::vector<Entry> scan_root(const std::string& root, int64_t now_ns, const ScanOptions& o = {},
                             ScanStats* stats = nullptr);

// The last run of decimal digits in `name` as a number, -1 if none or longer than 18 digits
// (e.g. "step-300" -> 300).
int64_t last_number(const std::string& name);

// True when `name` is valid UTF-8 without control characters (C0, DEL, C1): a name a framework
// could have written.
bool plausible_name(const std::string& name);

}  // namespace scout::ckpt

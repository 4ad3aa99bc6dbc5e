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
//   generic    any other entry, once nothing in it changed for the quiet time. Step: the last
//              number in its name, else -1.
// Entries of a known layout never fall back to the generic rule: a half-written iter_, global_step,
// checkpoint-, step= or .distcp directory waits for its marker however long it is quiet.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace scout::ckpt {

// How a candidate entry was recognized.
struct Entry {
  std::string path;       // absolute or as given: <root>/<name>
  std::string framework;  // "megatron", "dcp", "deepspeed", "hf", "nemo", "generic"
  int64_t step = -1;      // -1 unknown
  bool complete = false;  // marker present (generic: quiet for the quiet time)
  int64_t marker_ns = 0;  // mtime of the marker (generic: newest mtime in the entry), wall ns
  std::string marker;     // the file that proves completion ("" while incomplete)
};

// Scans the top level of checkpoint directory `root` at wall time `now_ns`. Returns every
// checkpoint-like entry (complete or not), sorted by name. Framework bookkeeping files (trackers,
// `latest`, `-unfinished` markers, certificates, temporary files) are not entries. A root that
// does not exist or cannot be read gives an empty list. `quiet_ns`: the generic rule's quiet time.
std::vector<Entry> scan_root(const std::string& root, int64_t now_ns, int64_t quiet_ns);

// The last run of decimal digits in `name` as a number, -1 if none (e.g. "step-300" -> 300).
int64_t last_number(const std::string& name);

}  // namespace scout::ckpt

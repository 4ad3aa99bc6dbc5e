// scout-sim's checkpoints: each rank writes its shard of iteration N the way the chosen framework
// lays it out, and global rank 0 writes the framework's completion marker last, once every
// rank's shard is whole (where the framework has a barrier or a gather first). Layouts and
// orders (docs/scout-sim.md, "Checkpoints"; docs/certification.md, "Discovery"):
//   megatron   iter_%07d/__<g>_0.distcp; rank 0: .metadata (tmp + rename), common.pt,
//              metadata.json, then latest_checkpointed_iteration.txt (plain write)
//   dcp        step-N/__<g>_0.distcp; rank 0: .metadata.tmp renamed to .metadata
//   deepspeed  global_stepN/zero_pp_rank_<dp>_mp_rank_<mp>_optim_states.pt (every rank),
//              mp_rank_<mp>_model_states.pt (DP rank 0); rank 0: `latest` = "global_stepN"
//              (mp: model-parallel rank, pp * TP + tp)
//   hf         checkpoint-N/rng_state_<g>.pth (every rank), model.safetensors, optimizer.pt,
//              scheduler.pt (rank 0); rank 0: trainer_state.json last
//   nemo       rank 0 first touches <name>-unfinished; then <name>/weights/__<g>_0.distcp,
//              weights/.metadata, weights/metadata.json, context/; rank 0 unlinks the marker
//              (name: sim--step=N-consumed_samples=S)
#pragma once

#include <cstdint>
#include <string>

namespace scout::sim {

constexpr uint64_t kCkptShardBytes = 64 * 1024;

// "megatron", "dcp", "deepspeed", "hf", "nemo"; false for anything else.
bool valid_ckpt_format(const std::string& f);

struct CkptRank {
  std::string dir, format;
  int global_rank = 0, ranks = 1;
  int mp = 0, mp_size = 1;  // model-parallel rank (pp * TP + tp) and TP * PP
  int dp = 0, dp_size = 1;  // data-parallel rank and DP
};

// Writes rank `r`'s part of the checkpoint of iteration `iter`. Rank 0 waits (up to 60 s) for
// every shard before writing the marker; without them it leaves the checkpoint unfinished and
// returns false. `abort_mid_write`: write half of this rank's shard, wait (up to 60 s) until every
// rank's shard is half-written, then kill the process (SIGKILL), as a job killed while saving.
bool write_checkpoint(const CkptRank& r, int64_t iter, bool abort_mid_write);

}  // namespace scout::sim

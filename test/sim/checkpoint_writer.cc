#include "test/sim/checkpoint_writer.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

namespace scout::sim {

namespace {

constexpr int kWaitMs = 60'000;

void mkdirs(const std::string& path) {
  for (size_t i = 1; i <= path.size(); ++i) {
    if (i == path.size() || path[i] == '/') ::mkdir(path.substr(0, i).c_str(), 0755);
  }
}

// Writes `bytes` of a deterministic pattern; with `half`, only the first half (fsync'd).
void write_file(const std::string& path, uint64_t bytes, bool half = false) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  std::vector<char> buf(bytes / 2, 's');
  for (int part = 0; part < (half ? 1 : 2); ++part) {
    const ssize_t n = ::write(fd, buf.data(), buf.size());
    (void)n;
  }
  if (half) ::fsync(fd);
  ::close(fd);
}

void write_text(const std::string& path, const std::string& text) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return;
  std::fputs(text.c_str(), f);
  std::fclose(f);
}

// Written to path.tmp and renamed into place (PyTorch's _FileSystemWriter.finish).
void write_renamed(const std::string& path, const std::string& text) {
  write_text(path + ".tmp", text);
  ::rename((path + ".tmp").c_str(), path.c_str());
}

// At least `bytes` long.
bool has_bytes(const std::string& path, uint64_t bytes) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && uint64_t(st.st_size) >= bytes;
}

bool exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// Waits (up to kWaitMs) until every one of `paths` has at least `bytes`; false on timeout. Rank 0
// waits for whole shards this way (the frameworks' barrier or gather before the marker).
bool wait_all(const std::vector<std::string>& paths, uint64_t bytes) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kWaitMs);
  for (const std::string& p : paths) {
    while (!has_bytes(p, bytes)) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  return true;
}

// Writes this rank's shard `mine`, of which every rank's are `all`. With `abort_mid_write`:
// half of it, then, once every rank's shard is half-written (or after kWaitMs), SIGKILL, as a job
// killed while saving. Waiting first matters: the launcher kills the other ranks as soon as one
// dies, which would otherwise leave later ranks (rank 0 among them) with no shard at all.
void write_shard(const std::string& mine, const std::vector<std::string>& all, bool abort_mid_write) {
  write_file(mine, kCkptShardBytes, abort_mid_write);
  if (!abort_mid_write) return;
  wait_all(all, kCkptShardBytes / 2);
  ::kill(::getpid(), SIGKILL);
}

std::string iter7(int64_t iter) {
  char b[32];
  std::snprintf(b, sizeof(b), "iter_%07lld", static_cast<long long>(iter));
  return b;
}

std::string two(int v) {
  char b[16];
  std::snprintf(b, sizeof(b), "%02d", v);
  return b;
}

}  // namespace

bool valid_ckpt_format(const std::string& f) {
  return f == "megatron" || f == "dcp" || f == "deepspeed" || f == "hf" || f == "nemo";
}

bool write_checkpoint(const CkptRank& r, int64_t iter, bool abort_mid_write) {
  const bool lead = r.global_rank == 0;
  const std::string it = std::to_string(iter);
  std::vector<std::string> shards;  // every rank's shard, indexed like `mine`
  std::string mine;
  auto shard_name = [&](int g) { return "__" + std::to_string(g) + "_0.distcp"; };
  auto by_rank = [&](const std::string& dir, auto name) {
    for (int g = 0; g < r.ranks; ++g) shards.push_back(dir + "/" + name(g));
    mine = shards[r.global_rank];
  };
  if (r.format == "megatron" || r.format == "dcp") {
    const std::string d = r.dir + "/" + (r.format == "megatron" ? iter7(iter) : "step-" + it);
    mkdirs(d);
    by_rank(d, shard_name);
    write_shard(mine, shards, abort_mid_write);
    if (!lead) return true;
    if (!wait_all(shards, kCkptShardBytes)) return false;
    write_renamed(d + "/.metadata", "sim dcp metadata " + it + "\n");
    if (r.format == "dcp") return true;
    write_text(d + "/common.pt", "sim common state\n");
    write_text(d + "/metadata.json", "{\"sharded_backend\": \"torch_dist\", \"sharded_backend_version\": 1}\n");
    write_text(r.dir + "/latest_checkpointed_iteration.txt", it);
    return true;
  }
  if (r.format == "deepspeed") {
    const std::string tag = "global_step" + it;
    const std::string d = r.dir + "/" + tag;
    mkdirs(d);
    auto optim = [&](int dp, int mp) {
      return d + "/zero_pp_rank_" + std::to_string(dp) + "_mp_rank_" + two(mp) + "_optim_states.pt";
    };
    for (int dp = 0; dp < r.dp_size; ++dp)
      for (int mp = 0; mp < r.mp_size; ++mp) shards.push_back(optim(dp, mp));
    mine = optim(r.dp, r.mp);
    if (r.dp == 0) write_file(d + "/mp_rank_" + two(r.mp) + "_model_states.pt", kCkptShardBytes);
    write_shard(mine, shards, abort_mid_write);
    if (!lead) return true;
    if (!wait_all(shards, kCkptShardBytes)) return false;
    write_text(r.dir + "/latest", tag);
    return true;
  }
  if (r.format == "hf") {
    const std::string d = r.dir + "/checkpoint-" + it;
    mkdirs(d);
    if (lead) {
      write_file(d + "/model.safetensors", kCkptShardBytes);
      write_file(d + "/optimizer.pt", kCkptShardBytes);
      write_text(d + "/scheduler.pt", "sim scheduler\n");
    }
    by_rank(d, [](int g) { return "rng_state_" + std::to_string(g) + ".pth"; });
    write_shard(mine, shards, abort_mid_write);
    if (!lead) return true;
    if (!wait_all(shards, kCkptShardBytes)) return false;
    write_text(d + "/trainer_state.json", "{\"global_step\": " + it + ", \"epoch\": 0.0, \"log_history\": []}\n");
    return true;
  }
  if (r.format == "nemo") {
    const std::string name = "sim--step=" + it + "-consumed_samples=" + std::to_string(iter * 8) + ".0";
    const std::string d = r.dir + "/" + name;
    const std::string marker = d + "-unfinished";
    if (lead) {
      mkdirs(r.dir);
      write_text(marker, "");
    } else {
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kWaitMs);
      while (!exists(marker)) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    }
    mkdirs(d + "/weights");
    by_rank(d + "/weights", shard_name);
    write_shard(mine, shards, abort_mid_write);
    if (!lead) return true;
    if (!wait_all(shards, kCkptShardBytes)) return false;
    write_renamed(d + "/weights/.metadata", "sim dcp metadata " + it + "\n");
    write_text(d + "/weights/metadata.json", "{\"sharded_backend\": \"torch_dist\", \"sharded_backend_version\": 1}\n");
    mkdirs(d + "/context");
    write_text(d + "/context/model.yaml", "sim: true\n");
    ::unlink(marker.c_str());
    return true;
  }
  return false;
}

}  // namespace scout::sim

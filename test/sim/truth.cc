#include "test/sim/truth.h"

#include <fcntl.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "test/sim/comm_hash.h"

namespace scout::sim {

std::string truth_json(const TruthEvent& e) {
  nlohmann::ordered_json j;
  j["kind"] = fault_kind_name(e.kind);
  j["global_rank"] = e.global_rank;
  j["peer"] = e.peer >= 0 ? nlohmann::ordered_json(e.peer) : nlohmann::ordered_json(nullptr);
  j["comm"] = {
      {"hash", hash_hex(e.comm_hash)}, {"name", e.comm_name}, {"nranks", e.comm_nranks}, {"rank", e.comm_rank}};
  nlohmann::ordered_json key = {{"func", func_name(e.func)}, {"seq", e.key}};
  if (e.key_peer >= 0) key["peer"] = e.key_peer;
  j["key"] = key;
  j["step"] = e.step;
  j["op"] = e.op;
  j["ms"] = e.ms;
  j["time_ns"] = e.time_ns;
  if (!e.detail.empty()) j["detail"] = nlohmann::ordered_json::parse("{" + e.detail + "}");
  return j.dump();
}

TruthWriter::TruthWriter(const std::string& path) {
  if (!path.empty()) fd_ = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
}

TruthWriter::~TruthWriter() {
  if (fd_ >= 0) ::close(fd_);
}

bool TruthWriter::write(const TruthEvent& e) {
  if (fd_ < 0) return false;
  std::string line = truth_json(e) + "\n";
  return ::write(fd_, line.data(), line.size()) == static_cast<ssize_t>(line.size());
}

}  // namespace scout::sim

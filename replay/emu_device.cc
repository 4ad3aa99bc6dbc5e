#include "replay/emu_device.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace scout::replay {

bool is_emulated_gpu(const std::string& gpu) { return gpu.rfind("GPU-sim-", 0) == 0; }

std::string emu_device_path(const std::string& dir, const std::string& job, const std::string& gpu) {
  return dir + "/scout-emugpu." + job + "." + gpu + ".json";
}

bool parse_emu_device_name(const std::string& name, std::string* job, std::string* gpu, int* tmp_pid) {
  static const std::string kPrefix = "scout-emugpu.", kSuffix = ".json", kTmp = ".json.tmp.";
  if (name.rfind(kPrefix, 0) != 0) return false;
  std::string rest = name.substr(kPrefix.size());
  int pid = 0;
  if (size_t t = rest.rfind(kTmp); t != std::string::npos) {
    const std::string digits = rest.substr(t + kTmp.size());
    if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos)
      return false;
    pid = std::stoi(digits);
    if (pid <= 0) return false;
    rest.resize(t);
  } else if (rest.size() > kSuffix.size() && rest.compare(rest.size() - kSuffix.size(), kSuffix.size(), kSuffix) == 0) {
    rest.resize(rest.size() - kSuffix.size());
  } else {
    return false;
  }
  const size_t dot = rest.rfind('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 == rest.size()) return false;
  if (job) *job = rest.substr(0, dot);
  if (gpu) *gpu = rest.substr(dot + 1);
  if (tmp_pid) *tmp_pid = pid;
  return true;
}

bool write_emu_device(const std::string& path, const EmuDeviceState& s, std::string* error) {
  nlohmann::json j = {{"gemm_flip", s.gemm_flip},
                      {"slow_factor", s.slow_factor},
                      {"hung", s.hung},
                      {"links_in", nlohmann::json::object()}};
  for (const auto& [peer, l] : s.links_in)
    j["links_in"][peer] = {{"flip", l.flip}, {"delay_ns", l.delay_ns}, {"down", l.down}};
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream f(tmp, std::ios::trunc);
    f << j.dump() << "\n";
    if (!f) {
      *error = "cannot write " + tmp;
      return false;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    *error = "cannot rename " + tmp + " to " + path;
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

EmuDeviceState read_emu_device(const std::string& path) {
  EmuDeviceState s;
  std::ifstream f(path);
  if (!f) return s;
  std::stringstream ss;
  ss << f.rdbuf();
  nlohmann::json j = nlohmann::json::parse(ss.str(), nullptr, false);
  if (!j.is_object()) return s;
  s.gemm_flip = j.value("gemm_flip", false);
  s.slow_factor = j.value("slow_factor", 1.0);
  if (s.slow_factor < 1.0) s.slow_factor = 1.0;
  s.hung = j.value("hung", false);
  if (j.contains("links_in") && j["links_in"].is_object())
    for (const auto& [peer, l] : j["links_in"].items()) {
      if (!l.is_object()) continue;
      s.links_in[peer] = {l.value("flip", false), l.value("delay_ns", int64_t(0)), l.value("down", false)};
    }
  return s;
}

}  // namespace scout::replay

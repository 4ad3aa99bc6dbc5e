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

bool write_emu_device(const std::string& path, const EmuDeviceState& s, std::string* error) {
  nlohmann::json j = {
      {"gemm_flip", s.gemm_flip}, {"slow_factor", s.slow_factor}, {"links_in", nlohmann::json::object()}};
  for (const auto& [peer, l] : s.links_in) j["links_in"][peer] = {{"flip", l.flip}, {"delay_ns", l.delay_ns}};
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
  if (j.contains("links_in") && j["links_in"].is_object())
    for (const auto& [peer, l] : j["links_in"].items()) {
      if (!l.is_object()) continue;
      s.links_in[peer] = {l.value("flip", false), l.value("delay_ns", int64_t(0))};
    }
  return s;
}

}  // namespace scout::replay

#include "test/support/settle.h"

#include <filesystem>
#include <thread>

#include "observer/store/reader.h"

namespace scout::testing {

std::vector<obs::Finding> stored_findings(const std::string& path) {
  if (!std::filesystem::exists(path)) return {};
  try {
    return store::StoreReader::open(path)->findings();
  } catch (const std::exception&) { return {}; }
}

std::map<std::string, uint64_t> stored_ops(const std::string& path) {
  std::map<std::string, uint64_t> out;
  if (!std::filesystem::exists(path)) return out;
  for (const auto& c : store::StoreReader::open(path)->comms()) out[c.name] = c.ops_complete;
  return out;
}

bool wait_then_settle(const std::function<bool()>& done, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  bool ok = done();
  while (!ok && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ok = done();
  }
  std::this_thread::sleep_for(kSettle);
  return ok;
}

bool wait_for_findings(const std::string& path, size_t n, std::chrono::milliseconds limit) {
  return wait_then_settle([&] { return stored_findings(path).size() >= n; }, limit);
}

}  // namespace scout::testing

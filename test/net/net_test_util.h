// Helpers for the observer-network tests: run one function per in-process endpoint, each on its
// own thread, and collect what failed.
#pragma once

#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "observer/net/inproc_channel.h"

namespace scout::net::testing {

// Runs fn(channel) on `net.size()` threads, one per endpoint. Returns one message per endpoint
// whose fn threw ("" for the others).
inline std::vector<std::string> run_endpoints(InprocNetwork& net, const std::function<void(Channel&)>& fn) {
  std::vector<std::string> errors(net.size());
  for (int r = 0; r < net.size(); ++r) net.endpoint(r).set_timeout(std::chrono::milliseconds(10000));
  std::vector<std::thread> threads;
  for (int r = 0; r < net.size(); ++r) {
    threads.emplace_back([&, r] {
      try {
        fn(net.endpoint(r));
      } catch (const std::exception& e) { errors[r] = e.what(); }
    });
  }
  for (auto& t : threads) t.join();
  return errors;
}

inline bool all_ok(const std::vector<std::string>& errors, std::string* first = nullptr) {
  for (size_t i = 0; i < errors.size(); ++i) {
    if (!errors[i].empty()) {
      if (first) *first = "endpoint " + std::to_string(i) + ": " + errors[i];
      return false;
    }
  }
  return true;
}

}  // namespace scout::net::testing

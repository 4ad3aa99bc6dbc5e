// Waiting for an end-to-end job's findings the same way in every test: poll until what the test
// waits for is in the store (or a limit passes), then keep the observers running for kSettle more,
// so that a false finding arriving after the expected ones is seen and fails the exact comparison.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "observer/model/finding.h"

namespace scout::testing {

// How long every end-to-end test keeps watching after its findings appeared: longer than the
// slowest time-based rule these tests configure (their hang timeouts of 1.5-5 s excepted, whose
// findings are what they wait for): a slow link or host confirmed after 2 s of suspicion
// (docs/observer.md, "Slow links") and 10 passes of the default 250 ms interval.
constexpr std::chrono::milliseconds kSettle{3000};

// The findings in the store at `path`; none while it does not exist or cannot be read yet.
std::vector<obs::Finding> stored_findings(const std::string& path);

// Operations complete on every rank per communicator name (CommInfo::ops_complete) in the store
// at `path`: what a healthy run's observer judged, so that "no finding" means it saw the job.
std::map<std::string, uint64_t> stored_ops(const std::string& path);

// Polls `done` every 100 ms until it returns true or `limit` passes, then sleeps kSettle. Returns
// whether `done` held.
bool wait_then_settle(const std::function<bool()>& done, std::chrono::milliseconds limit);

// wait_then_settle on the store at `path` until it holds at least `n` findings (n = 0: no wait,
// only the settle time).
bool wait_for_findings(const std::string& path, size_t n, std::chrono::milliseconds limit);

}  // namespace scout::testing

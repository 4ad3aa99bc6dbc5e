// Opening and closing the call recorder from the ABI layer (recording.h).
#include "plugin/abi/recording.h"

#include <pthread.h>

#include <atomic>
#include <cstdlib>
#include <string>

#include "plugin/core/log.h"
#include "plugin/core/process.h"
#include "plugin/record/recorder.h"

namespace scout::abi_hook {
std::atomic<rec::Recorder*> g_recorder{nullptr};

namespace {
pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
}  // namespace

void recording_on_init() {
  const char* prefix = std::getenv("SCOUT_RECORD_CALLS");
  if (prefix == nullptr || prefix[0] == '\0') return;
  pthread_mutex_lock(&g_mu);
  if (g_recorder.load(std::memory_order_relaxed) == nullptr) {
    std::string err;
    rec::Recorder* r = rec::Recorder::open(prefix, &err);
    if (r == nullptr) {
      core::log::warn("SCOUT_RECORD_CALLS: %s; not recording calls", err.c_str());
    } else {
      core::log::info("recording every profiler callback to %s", r->path().c_str());
      g_recorder.store(r, std::memory_order_release);
    }
  }
  pthread_mutex_unlock(&g_mu);
}

void recording_on_finalize() {
  if (g_recorder.load(std::memory_order_acquire) == nullptr || core::process() != nullptr) return;
  pthread_mutex_lock(&g_mu);
  rec::Recorder* r = g_recorder.exchange(nullptr, std::memory_order_acq_rel);
  pthread_mutex_unlock(&g_mu);
  if (r != nullptr) {
    std::lock_guard<std::mutex> lk(r->mutex());  // a callback still appending finishes first
    r->flush();
  }
  delete r;
}

}  // namespace scout::abi_hook

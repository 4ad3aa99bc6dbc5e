// The plugin's only thread-local state: one small struct per thread, in `__thread` storage
// (C-style TLS: no constructor, no destructor, no TLS wrapper call), so the .so can be
// dlclosed with threads still alive (docs/nccl-notes.md §1.2: no pthread key destructors). Everything in it
// is a cache that is validated before use: `salt` ties it to the current load cycle of the
// plugin (process.h), so a value left by an earlier load is never trusted.
#pragma once

#include <cstdint>

namespace scout::core {

struct ThreadBlock;

struct ThreadCache {
  uint32_t tid;        // Linux tid (0: not read yet)
  uint16_t salt;       // load cycle the two fields below belong to
  uint16_t last_ring;  // communicator whose KernelCh this thread delivered last (+1; 0: none)
  ThreadBlock* tb;     // this thread's API block (api_state.h), valid when salt matches
};

extern __thread ThreadCache t_cache;

// Linux tid of the calling thread (a system call the first time only).
uint32_t current_tid_slow();
inline uint32_t current_tid() {
  uint32_t t = t_cache.tid;
  return t != 0 ? t : current_tid_slow();
}

}  // namespace scout::core

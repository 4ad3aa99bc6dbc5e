// Memory fences of the seqlock-style protocols (ring records, API slots).
// ThreadSanitizer does not model std::atomic_thread_fence (gcc rejects it with -Werror=tsan);
// in TSAN builds these become compiler barriers, which is what the fences compile to on x86-64
// anyway (TSO). Everywhere else they are the real C++ fences.
#pragma once

#include <atomic>

namespace scout {

#if defined(__SANITIZE_THREAD__)
inline void release_fence() { std::atomic_signal_fence(std::memory_order_release); }
inline void acquire_fence() { std::atomic_signal_fence(std::memory_order_acquire); }
#else
inline void release_fence() { std::atomic_thread_fence(std::memory_order_release); }
inline void acquire_fence() { std::atomic_thread_fence(std::memory_order_acquire); }
#endif

}  // namespace scout

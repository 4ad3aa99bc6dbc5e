// Recording mode (SCOUT_RECORD_CALLS=PATH): writes every profiler callback of this process to
// PATH.<pid>.bin in the format of call_log_format.h, for replay in tests.
//
// Opt-in debugging aid with a documented cost: callbacks are serialised by one mutex held across
// the plugin's own handling and the append (so the file order is a valid global order), and
// entries are buffered in memory and written with write(2) in 256 KiB chunks. Never throws;
// an I/O error disables recording (said once through the logger) and the plugin keeps working.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

#include "scout/nccl_profiler_abi.h"

namespace scout::rec {

class Recorder {
 public:
  // Opens (append) PATH.<pid>.bin, writing the file header if the file is new. Returns nullptr
  // with *error on failure.
  static Recorder* open(const std::string& prefix, std::string* error);
  ~Recorder();  // flushes and closes
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  // Held by the ABI layer across one callback and its append.
  std::mutex& mutex() { return mu_; }

  // Appends one entry each; call with mutex() held. `abi` is 4, 5 or 6.
  void init(int abi, void* context_out, uint64_t comm_hash, const char* name, int nnodes, int nranks, int rank,
            int mask_in, int mask_out, int result);
  void start_v4(void* context, void* handle_out, const abi::DescrV4* d, int result);
  void start_v5(int abi, void* context, void* handle_out, const abi::DescrV5* d, int result);
  void start_v6(void* context, void* handle_out, const abi::DescrV6* d, int result);
  void stop(int abi, void* handle, int result);
  void state(int abi, void* handle, int state, const abi::StateArgs* args, int result);
  void finalize(int abi, void* context, int result);

  // Writes buffered entries to the file (call with mutex() held).
  void flush();
  bool ok() const { return fd_ >= 0; }
  const std::string& path() const { return path_; }

 private:
  Recorder() = default;
  uint32_t thread_index();
  uint32_t string_id(const char* s);
  void append(const void* p, size_t n);
  void header(void* entry_header, uint8_t kind, int abi, size_t size);

  std::mutex mu_;
  int fd_ = -1;
  std::string path_;
  int64_t start_ns_ = 0;
  static constexpr size_t kBufBytes = 256 * 1024;
  char* buf_ = nullptr;
  size_t used_ = 0;
  // Small open-addressed tables (recording is opt-in; sizes are generous and bounded).
  static constexpr uint32_t kMaxThreads = 1024;
  uint32_t tids_[kMaxThreads] = {};
  uint32_t n_tids_ = 0;
  static constexpr uint32_t kMaxStrings = 4096;
  const char* str_ptr_[kMaxStrings] = {};
  uint32_t n_strings_ = 0;
};

}  // namespace scout::rec

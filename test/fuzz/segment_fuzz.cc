// libFuzzer target: the observer's view of a hostile segment. The input is written to a file (mode
// 0600, fully allocated) and opened with SegmentReader, which must refuse it with one line or
// read every ring header and every record still in the ring without crashing, reading outside the
// file, or allocating beyond what the file holds. Records that read kOk must pass
// validate_record. `make fuzz` runs it (test/fuzz/run-fuzz.sh).
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "common/segment_reader.h"

namespace {

std::string scratch_path() {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir && *dir ? dir : "/tmp") + "/scout-fuzz-segment." + std::to_string(::getpid());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace scout::shm;
  static const std::string path = scratch_path();
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) std::abort();
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::write(fd, data + done, size - done);
    if (n <= 0) std::abort();
    done += size_t(n);
  }
  ::close(fd);
  std::string err;
  auto rd = SegmentReader::open(path, &err, TrustPolicy{});
  if (!rd) {
    if (err.empty() || err.find('\n') != std::string::npos) std::abort();  // one line, always
    return 0;
  }
  SegmentInfo info = rd->info();
  if (info.max_comms == 0 || info.max_comms > kMaxCommsLimit) std::abort();
  uint32_t n = rd->n_rings();
  for (uint32_t r = 0; r <= n && r < kMaxCommsLimit; ++r) {  // one past the end too
    CommSnapshot cs;
    if (!rd->comm(r, &cs)) continue;
    uint64_t from = cs.head > info.ring_capacity ? cs.head - info.ring_capacity : 0;
    for (uint64_t i = from; i < cs.head && i < from + 64; ++i) {
      RecordSnapshot rec;
      if (rd->read(r, i, &rec) == ReadStatus::kOk) {
        std::string why;
        if (!validate_record(rec, &why)) std::abort();
      }
    }
    RecordSnapshot rec;
    (void)rd->read(r, cs.head + 1, &rec);
    (void)rd->read(r, UINT64_MAX, &rec);
  }
  return 0;
}

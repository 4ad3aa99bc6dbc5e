// Writing a trace request into a segment's progress table (segment_control.h).
#include "common/segment_control.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/progress_reader.h"

namespace scout::shm {

uint64_t request_trace(const SegmentReader& rd, const TraceRequest& req, std::string* error, const TrustPolicy& trust) {
  auto fail = [&](const std::string& msg) -> uint64_t {
    if (error) *error = rd.path() + ": " + msg;
    return 0;
  };
  uint32_t capacity = 0;
  const ProgressTableHeader* t = progress_table(rd, &capacity);
  if (t == nullptr) return fail("no progress table (SCOUT_PROXY_TIMING=0?): cannot ask for a trace");
  const uint64_t offset = rd.offset_of(t);
  int fd = ::open(rd.path().c_str(), O_RDWR | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY);
  if (fd < 0) return fail(std::string("cannot open for the trace request: ") + std::strerror(errno));
  struct stat st;
  std::string why;
  if (::fstat(fd, &st) != 0 || !trusted_segment_file(st, trust, &why) || uint64_t(st.st_size) != rd.bytes()) {
    ::close(fd);
    return fail(why.empty() ? "not the segment read before: no trace request" : why);
  }
  const long page = ::sysconf(_SC_PAGESIZE);
  const uint64_t start = offset - offset % uint64_t(page);
  const uint64_t len = offset + sizeof(ProgressTableHeader) - start;
  void* mem = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, off_t(start));
  const int map_errno = errno;
  ::close(fd);
  if (mem == MAP_FAILED) return fail(std::string("cannot map the progress table: ") + std::strerror(map_errno));
  auto* h = reinterpret_cast<ProgressTableHeader*>(static_cast<char*>(mem) + (offset - start));
  h->request_comm_hash.store(req.comm_hash, std::memory_order_relaxed);
  h->request_nranks.store(req.nranks, std::memory_order_relaxed);
  h->request_until_ns.store(req.until_ns, std::memory_order_relaxed);
  const uint64_t seq = h->request_seq.load(std::memory_order_relaxed) + 1;
  h->request_seq.store(seq, std::memory_order_release);
  ::munmap(mem, len);
  return seq;
}

}  // namespace scout::shm

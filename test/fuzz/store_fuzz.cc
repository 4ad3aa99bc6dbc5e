// libFuzzer target: the CLI's view of a hostile or damaged store. The input is written to a file
// and read as `scout status/findings/export` read it (StoreReader, load_snapshot, every export
// and every finding's JSON). Each step may refuse with store::Error; none may crash, hang or
// produce JSON/Prometheus text that is not valid UTF-8. `make fuzz` runs it.
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>

#include "common/utf8.h"
#include "observer/export/chrome_trace.h"
#include "observer/export/jsonl.h"
#include "observer/export/prometheus.h"
#include "observer/export/snapshot.h"
#include "observer/store/reader.h"
#include "observer/store/sqlite.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const char* dir = std::getenv("TMPDIR");
  static const std::string path =
      std::string(dir && *dir ? dir : "/tmp") + "/scout-fuzz-store." + std::to_string(::getpid()) + ".db";
  ::unlink((path + "-wal").c_str());
  ::unlink((path + "-shm").c_str());
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) std::abort();
  if (size > 0 && ::write(fd, data, size) != ssize_t(size)) std::abort();
  ::close(fd);
  try {
    auto rd = scout::store::StoreReader::open(path);
    scout::exporter::Snapshot s = scout::exporter::load_snapshot(*rd, /*with_ops=*/true);
    std::ostringstream out;
    scout::exporter::write_jsonl(s, out);
    scout::exporter::write_prometheus(s, out);
    out << scout::exporter::chrome_trace(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (!scout::utf8_valid(out.str())) std::abort();
  } catch (const scout::store::Error&) {}
  return 0;
}

// libFuzzer target: certificates read back (observer/ckpt/certificate.h, trust.h). The input is a
// certificate file: it is checked as the chain's only link (verify_chain, against no hash and
// against its own stated one), as the certificate of a verified checkpoint (check_certificate_of,
// with a copy of it inside the checkpoint), and its `files` as a manifest. Nothing may crash or
// throw; an input that passes must really hash to its sha256. `make fuzz` runs it.
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "observer/ckpt/certificate.h"
#include "observer/ckpt/manifest.h"

namespace fs = std::filesystem;

namespace {
void write_file(const std::string& path, const uint8_t* data, size_t size) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) std::abort();
  if (size > 0 && ::write(fd, data, size) != ssize_t(size)) std::abort();
  ::close(fd);
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const char* tmp = std::getenv("TMPDIR");
  static const std::string base = std::string(tmp && *tmp ? tmp : "/tmp") + "/scout-fuzz-cert." + std::to_string(::getpid());
  std::error_code ec;
  fs::create_directories(base + "/certs", ec);
  fs::create_directories(base + "/ckpt", ec);
  const std::string file = scout::ckpt::certificate_file(base + "/certs", 1);
  write_file(file, data, size);
  write_file(base + "/ckpt/scout-certificate.json", data, size);
  scout::ckpt::ChainCheck c = scout::ckpt::verify_chain(base + "/certs", {});
  std::string err;
  const nlohmann::json doc = scout::ckpt::read_certificate(file, &err);
  if (c.intact) {
    if (!doc.is_object() || !doc.contains("sha256") || !doc["sha256"].is_string() ||
        scout::ckpt::certificate_hash(doc) != doc["sha256"].get<std::string>())
      std::abort();
    (void)scout::ckpt::verify_chain(base + "/certs", {doc["sha256"].get<std::string>()});
  }
  scout::ckpt::Checkpoint ck;
  ck.id = 1;
  ck.path = base + "/ckpt";
  ck.state = scout::ckpt::State::kVerified;
  if (!doc.is_discarded()) {
    (void)scout::ckpt::check_certificate_of(ck, doc, "x");
    if (doc.is_object() && doc.contains("files")) {
      const scout::ckpt::Manifest m = scout::ckpt::manifest_from_json(doc["files"]);
      (void)scout::ckpt::compare_manifest(ck.path, m);
    }
    (void)scout::ckpt::certificate_text(doc);
  }
  return 0;
}

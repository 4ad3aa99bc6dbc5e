#include "observer/ckpt/certificate.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "common/safe_file.h"
#include "common/utf8.h"
#include "observer/ckpt/sha256.h"

namespace scout::ckpt {

std::string certificate_hash(const nlohmann::json& doc) {
  nlohmann::json copy = doc;
  copy.erase("sha256");
  return sha256_hex(copy.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

std::string certificate_text(const nlohmann::json& doc) {
  return doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

nlohmann::json read_certificate(const std::string& path, std::string* error) {
  std::string text;
  if (!safe::read_regular(path, kMaxCertificateBytes, &text, error))
    return nlohmann::json(nlohmann::json::value_t::discarded);
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  if (doc.is_discarded() && error) *error = printable(path) + " is not valid JSON";
  return doc;
}

std::string check_certificate_of(const Checkpoint& c, const nlohmann::json& doc, const std::string& chain_sha256) {
  if (!doc.is_object() || !doc.contains("sha256") || !doc["sha256"].is_string())
    return "its certificate is not a certificate";
  const std::string stated = doc["sha256"].get<std::string>();
  if (certificate_hash(doc) != stated) return "its certificate was edited (content does not match its sha256)";
  if (stated != chain_sha256) return "its certificate differs from the one the chain recorded";
  const nlohmann::json ck = doc.value("checkpoint", nlohmann::json::object());
  if (!ck.is_object() || ck.value("path", std::string()) != utf8_clean(c.path))
    return "its certificate names another checkpoint";
  if (doc.value("verdict", std::string()) != to_string(c.state))
    return "its certificate's verdict is not '" + std::string(to_string(c.state)) + "'";
  const std::string beside = c.path + "/scout-certificate.json";
  if (safe::kind_of(beside) != safe::Kind::kMissing) {
    std::string err;
    const nlohmann::json copy = read_certificate(beside, &err);
    if (copy.is_discarded()) return "the certificate inside the checkpoint cannot be read: " + err;
    if (copy != doc)
      return "the certificate inside the checkpoint (" + printable(beside) + ") differs from the chain's";
  }
  return "";
}

nlohmann::json make_certificate(const std::string& job, int64_t seq, const Checkpoint& c,
                                const std::vector<CycleVerdict>& cycles, const std::string& prev_sha256,
                                int64_t issued_ns) {
  std::map<int, int64_t> voters;
  int64_t comparisons = 0;
  uint64_t bytes = 0;
  int covered = 0;
  std::vector<std::string> recipes, gpus;
  nlohmann::json cj = nlohmann::json::array();
  for (const CycleVerdict& v : cycles) {
    for (const auto& [n, k] : v.voters) voters[n] += k;
    comparisons += v.comparisons;
    bytes += v.bytes_fingerprinted;
    covered = std::max(covered, v.comms_covered);
    for (const auto& r : v.replay_recipes)
      if (std::find(recipes.begin(), recipes.end(), r) == recipes.end()) recipes.push_back(r);
    for (const auto& g : v.replay_gpus)
      if (std::find(gpus.begin(), gpus.end(), g) == gpus.end()) gpus.push_back(g);
    cj.push_back(to_json(v));
  }
  nlohmann::json doc = {
      {"format", "scout-certificate"},
      {"version", kCertificateVersion},
      {"job", utf8_clean(job)},
      {"seq", seq},
      {"checkpoint",
       {{"id", c.id},
        {"path", utf8_clean(c.path)},
        {"framework", utf8_clean(c.framework)},
        {"step", c.step},
        {"completed_ns", c.completed_ns}}},
      {"files", to_json(c.manifest)},
      {"verdict", to_string(c.state)},
      {"reason", utf8_clean(c.reason)},
      {"finding_ids", c.finding_ids},
      {"cycles", cj},
      {"comparisons", comparisons},
      {"communicators_covered", covered},
      {"voters_min", voters_min(voters)},
      {"voters_median", voters_median(voters)},
      {"bytes_fingerprinted", bytes},
      {"replay", {{"recipes", recipes}, {"gpus", gpus}}},
      {"issued_ns", issued_ns},
      {"prev_sha256", prev_sha256},
  };
  doc["sha256"] = certificate_hash(doc);
  return doc;
}

std::string certificate_file(const std::string& dir, int64_t seq) {
  char name[32];
  std::snprintf(name, sizeof(name), "/%06lld.json", static_cast<long long>(seq));
  return dir + name;
}

bool write_atomic(const std::string& path, const std::string& text, std::string* error) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  ::mkdir(dir.c_str(), 0700);
  const std::string tmp = path + ".tmp";
  ::unlink(tmp.c_str());  // a leftover, or a symlink planted there: never written through
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  auto fail = [&](const std::string& what) {
    *error = what + " " + printable(tmp) + ": " + std::strerror(errno);
    return false;
  };
  if (fd < 0) return fail("cannot create");
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      return fail("cannot write");
    }
    done += size_t(n);
  }
  if (::fsync(fd) != 0) {
    ::close(fd);
    return fail("cannot fsync");
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) return fail("cannot rename");
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return true;
}

ChainCheck verify_chain(const std::string& dir, const std::vector<std::string>& expected) {
  ChainCheck r;
  std::vector<std::string> names;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n.size() == 11 && n.substr(6) == ".json") names.push_back(n);
    }
    ::closedir(d);
  }
  std::sort(names.begin(), names.end());
  auto broken = [&](int64_t seq, const std::string& why) {
    r.intact = false;
    r.broken_seq = seq;
    r.problem = "certificate " + std::to_string(seq) + " (" + dir + "/" + certificate_file("", seq).substr(1) +
                ") breaks the chain: " + why;
    return r;
  };
  std::string prev;
  for (size_t i = 0; i < names.size(); ++i) {
    const int64_t seq = int64_t(i) + 1;
    if (names[i] != certificate_file("", seq).substr(1)) return broken(seq, "missing");
    std::string err;
    nlohmann::json doc = read_certificate(dir + "/" + names[i], &err);
    r.certificates++;
    if (!doc.is_object() || !doc.contains("sha256") || !doc["sha256"].is_string() || !doc.contains("prev_sha256") ||
        !doc["prev_sha256"].is_string())
      return broken(seq, "not a certificate (invalid JSON or no sha256/prev_sha256)");
    const std::string stated = doc["sha256"].get<std::string>();
    if (certificate_hash(doc) != stated) return broken(seq, "its content does not match its sha256 (edited)");
    if (doc["prev_sha256"].get<std::string>() != prev)
      return broken(seq, "its prev_sha256 does not match the sha256 of certificate " + std::to_string(seq - 1));
    if (!expected.empty() && (size_t(seq) > expected.size() || expected[seq - 1] != stated))
      return broken(seq, "its sha256 differs from the one the store recorded");
    prev = stated;
  }
  if (!expected.empty() && expected.size() > names.size())
    return broken(int64_t(names.size()) + 1,
                  "missing (the store recorded " + std::to_string(expected.size()) + " certificates)");
  return r;
}

}  // namespace scout::ckpt

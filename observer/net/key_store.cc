#include "observer/net/key_store.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#define HIREDIS_NESTED_INCLUDE 1
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/redis_store.h>

#include "observer/net/channel.h"

namespace scout::net {

void KeyStore::set_once(const std::string& key) {
  if (has(key)) return;
  try {
    store().set(key, std::vector<char>{'1'});
  } catch (const std::exception&) {
    if (!has(key)) throw;
  }
}

void KeyStore::put(const std::string& key, const std::string& value) {
  const std::vector<char> v(value.begin(), value.end());
  try {
    store().set(key, v);  // FileStore replaces the key's file (rename)
  } catch (const std::exception&) {
    erase(key);  // RedisStore sets only new keys (SETNX)
    store().set(key, v);
  }
}

std::string gloo_message_line(std::string s) {
  for (char& c : s) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

std::optional<std::string> KeyStore::get_if(const std::string& key) {
  if (!has(key)) return std::nullopt;
  std::vector<char> v = store().get(key);
  return std::string(v.begin(), v.end());
}

namespace {

class FileKeys : public gloo::rendezvous::FileStore, public KeyStore {
 public:
  explicit FileKeys(const std::string& dir) : FileStore(dir) {}
  gloo::rendezvous::Store& store() override { return *this; }
  bool has(const std::string& key) override { return check({key}); }
  void erase(const std::string& key) override { ::unlink(objectPath(key).c_str()); }
};

class RedisKeys : public gloo::rendezvous::RedisStore, public KeyStore {
 public:
  RedisKeys(const std::string& host, int port) : RedisStore(host, port) {}
  gloo::rendezvous::Store& store() override { return *this; }
  bool has(const std::string& key) override { return check({key}); }
  void erase(const std::string& key) override {
    void* reply = redisCommand(redis_, "DEL %b", key.data(), key.size());
    if (reply == nullptr) throw ChannelError(std::string("redis DEL failed: ") + redis_->errstr);
    freeReplyObject(reply);
  }
};

bool mkdirs(const std::string& dir) {
  std::string cur;
  for (size_t i = 0; i <= dir.size(); ++i) {
    if (i == dir.size() || (dir[i] == '/' && i > 0)) {
      cur = dir.substr(0, i);
      if (::mkdir(cur.c_str(), 0777) != 0 && errno != EEXIST) return false;
    }
  }
  struct stat st;
  return ::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

std::unique_ptr<KeyStore> open_key_store(const std::string& spec) {
  const std::string bad = "observer network: bad rendezvous '" + spec + "': expected file:DIR or redis:HOST:PORT";
  try {
    if (spec.rfind("file:", 0) == 0) {
      const std::string dir = spec.substr(5);
      if (dir.empty()) throw ChannelError(bad);
      if (!mkdirs(dir)) {
        throw RendezvousUnreachable("observer network: rendezvous directory " + dir +
                                    " cannot be created: " + std::strerror(errno));
      }
      return std::make_unique<FileKeys>(dir);
    }
    if (spec.rfind("redis:", 0) == 0) {
      const std::string rest = spec.substr(6);
      const size_t colon = rest.rfind(':');
      if (colon == std::string::npos || colon == 0 || colon + 1 == rest.size()) throw ChannelError(bad);
      const std::string host = rest.substr(0, colon), port_text = rest.substr(colon + 1);
      char* end = nullptr;
      errno = 0;
      const long port = std::strtol(port_text.c_str(), &end, 10);
      if (errno != 0 || *end != '\0' || port < 1 || port > 65535) throw ChannelError(bad);
      return std::make_unique<RedisKeys>(host, static_cast<int>(port));
    }
  } catch (const ChannelError&) { throw; } catch (const std::exception& e) {
    throw RendezvousUnreachable("observer network: rendezvous " + spec +
                                " unreachable: " + gloo_message_line(e.what()));
  }
  throw ChannelError(bad);
}

}  // namespace scout::net

// The observers' rendezvous store as a key-value store (docs/observer-network.md, "Rendezvous"):
// Gloo's FileStore ("file:DIR", a directory every node can reach) or RedisStore
// ("redis:HOST:PORT"), plus what Gloo's Store interface lacks: test for a key without waiting,
// read a key that exists, remove one. The channel forms over it; replay bootstraps its cross-node
// communicators through it (docs/replay.md, "Across nodes"), the way PyTorch hands NCCL's
// unique id to every rank through its c10d store.
//
// Errors: every call throws (ChannelError or a std::exception from Gloo) when the store does not
// answer; open_key_store throws ChannelError for a malformed spec and RendezvousUnreachable when
// the directory cannot be made or the Redis server cannot be reached.
#pragma once

#include <memory>
#include <optional>
#include <string>

namespace gloo::rendezvous {
class Store;
}

namespace scout::net {

class KeyStore {
 public:
  virtual ~KeyStore() = default;
  virtual gloo::rendezvous::Store& store() = 0;
  virtual bool has(const std::string& key) = 0;
  virtual void erase(const std::string& key) = 0;

  // Sets `key` unless it exists (a concurrent set by another observer is fine).
  void set_once(const std::string& key);
  // Sets `key` to `value` (bytes; overwrites).
  void put(const std::string& key, const std::string& value);
  // The value of `key`, nullopt when it does not exist (never waits for it).
  std::optional<std::string> get_if(const std::string& key);
};

// Gloo's enforce messages span lines ("[enforce fail at ...] ...\n..."): one line for ours.
std::string gloo_message_line(std::string s);

// Opens "file:DIR" (DIR created when missing) or "redis:HOST:PORT".
std::unique_ptr<KeyStore> open_key_store(const std::string& spec);

}  // namespace scout::net
